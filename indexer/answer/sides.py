"""Build rule inputs (:class:`rules.Side`) from a local directory or GGUF file, or from a catalog repo
(``rule_inputs``); and the facts ``indexer fingerprint`` prints for a local directory."""

from __future__ import annotations

from pathlib import Path

from ..catalog.reader import Reader
from ..engines import Side
from ..files import DEFAULT_MAX_FILE_BYTES, InputError, check_dir
from ..gguf.predict import predict_gguf_facts
from ..vocab.archconfig import ArchFacts
from ..vocab.fingerprint import fingerprint_dir, transformers_version
from ..vocab.modelconfig import read_config
from .lookup import local_gguf_arg, looks_like_dir
from .rule_inputs import side_from_catalog


def side_from_dir(path: str | Path, *, reference: bool = False, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Side:
    """A local model directory as the rules see it: its fingerprint, config vocab sizes and predicted GGUF."""

    directory = check_dir(path)
    config = read_config(directory, max_file_bytes)
    if config.auto_map and not (directory / "tokenizer_config.json").is_file():
        raise InputError("needs_remote_code", f"{directory}: config.json has auto_map and no tokenizer config")
    fp = fingerprint_dir(directory, reference=reference, max_file_bytes=max_file_bytes)
    gguf, missing = predict_gguf_facts(directory, max_file_bytes)
    return Side(
        name=str(path),
        vocab_size=config.vocab_size,
        vocab_size_transformers=config.vocab_size_transformers,
        tok=fp.to_dict(),
        vocab=fp.vocab,
        vllm_vocab_size=config.vllm_vocab_size,
        text_config_error=config.text_config_error,
        has_vision_config=config.has_vision_config,
        model_type=config.model_type,
        arch=config.arch,
        gguf=gguf,
        gguf_missing=missing,
        source_dir=str(directory),  # the reference-text counts are taken here when a pair needs them
    )


def side_from_gguf(path: Path, name: str | None = None) -> Side:
    """A local GGUF file as the rules see it: its own vocabulary facts, no HF config or tokenizer."""
    from ..gguf.file import read_gguf

    f = read_gguf(path)
    return Side(name=name or str(path), vocab_size=None, vocab_size_transformers=None, tok=None,
                gguf=f.vocab, gguf_file=str(path), arch=ArchFacts.from_dict(f.arch))


def is_local(arg: str) -> bool:
    """A local path (directory or .gguf file), never a catalog repo id."""
    return looks_like_dir(arg) or arg.lower().endswith(".gguf")


def resolve_side(arg: str, *, db: str | None = None, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
                 reader: Reader | None = None) -> Side:
    """A local directory or .gguf file, or a repo id looked up in the catalog (the request's ``reader``, or one
    opened on ``db``)."""
    if is_local(arg):
        gguf_path = local_gguf_arg(arg)
        if gguf_path is not None:
            return side_from_gguf(gguf_path, arg if arg.lower().endswith(".gguf") else str(gguf_path))
        return side_from_dir(arg, max_file_bytes=max_file_bytes)

    return side_from_catalog(arg, db=db, reader=reader)


def local_facts(directory: str, *, reference: bool = False,
                max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> tuple[dict, bool]:
    """``indexer fingerprint``: a local model directory's tokenizer and config facts, or (True) what llama.cpp
    reads from a GGUF file's key/value section (indexer/gguf/file.py). Errors name the directory once."""


    gguf_path = local_gguf_arg(directory)
    if gguf_path is not None:
        from ..gguf.file import read_gguf

        facts = read_gguf(gguf_path).to_dict()
        return {"file": str(gguf_path), **{k: v for k, v in facts.items() if k != "file"}}, True
    try:
        fp = fingerprint_dir(directory, reference=reference, max_file_bytes=max_file_bytes)
        config = read_config(directory, max_file_bytes) if (Path(directory) / "config.json").is_file() else None
    except InputError as e:  # every error names the directory (once), as `check` names the side
        raise e.reworded(e.message if e.message.startswith(f"{Path(directory)}: ")
                         else f"{directory}: {e.message}") from None
    facts = fp.to_dict()
    # The engines' text-config vocab sizes at top level too: they decide most verdicts.
    facts["vocab_size"] = config.vocab_size if config else None
    facts["vocab_size_transformers"] = config.vocab_size_transformers if config else None
    facts["config"] = config.to_dict() if config else None
    if reference or fp.method == "reference":
        facts["transformers_version"] = transformers_version()
    return facts, False
