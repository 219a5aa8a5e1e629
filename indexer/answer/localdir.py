"""A model directory or GGUF file on disk, read as the rules read a catalog repo: its tokenizer fingerprint, config
facts, predicted GGUF vocabulary and reference-text counts; and the facts ``indexer fingerprint`` prints.

These readers are crawl-time code (tokenizers, transformers, the GGUF predictor, the tokenizer box): the answer
path imports this module only for a local side (:func:`indexer.answer.sides.resolve_side`)."""

from __future__ import annotations

from pathlib import Path

from ..engines import Side
from ..files import DEFAULT_MAX_FILE_BYTES, InputError, check_dir
from ..gguf.file import read_gguf
from ..gguf.predict import predict_gguf_facts
from ..vocab.archconfig import ArchFacts
from ..vocab.fingerprint import fingerprint_dir, transformers_version
from ..vocab.modelconfig import read_config
from ..vocab.tokenbox import FAILED, TokenizerBox, TokenizerFailed
from .lookup import local_gguf_arg


def boxed_counts(directory: Path) -> dict[int, int] | None:
    """The directory's id counts over the reference text, counted in a tokenizer box (vocab/tokenbox.py: the files
    are the user's, and may be anyone's). A tokenizer that transformers cannot load leaves the grade to ids (None,
    and the verdict says so); one that fails on the text is one InputError line."""
    try:
        with TokenizerBox() as box:
            return box.count_text(str(directory))
    except TokenizerFailed as e:
        if not e.loading:
            raise InputError("malformed", f"{directory}: {FAILED}: {e.reason}") from None
        return None


def read_dir(path: str) -> tuple:
    """(directory, config facts, fingerprint) of a local model directory."""
    directory = check_dir(path)
    return directory, read_config(directory), fingerprint_dir(directory)


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
        count_text=lambda: boxed_counts(directory),  # taken when a pair needs them
    )


def side_from_gguf(path: Path, name: str | None = None) -> Side:
    """A local GGUF file as the rules see it: its own vocabulary facts, no HF config or tokenizer."""
    f = read_gguf(path)
    return Side(name=name or str(path), vocab_size=None, vocab_size_transformers=None, tok=None,
                gguf=f.vocab, gguf_file=str(path), arch=ArchFacts.from_dict(f.arch))


def local_facts(directory: str, *, reference: bool = False,
                max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> tuple[dict, bool]:
    """``indexer fingerprint``: a local model directory's tokenizer and config facts, or (True) what llama.cpp
    reads from a GGUF file's key/value section (indexer/gguf/file.py). Errors name the directory once."""
    gguf_path = local_gguf_arg(directory)
    if gguf_path is not None:
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
