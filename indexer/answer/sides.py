"""Build rule inputs (:class:`rules.Side`) from a local directory or from a catalog repo."""

from __future__ import annotations

from pathlib import Path

from ..engines import Side
from ..errors import IndexerError
from ..files import DEFAULT_MAX_FILE_BYTES, InputError, check_dir
from ..vocab.fingerprint import fingerprint_dir
from ..vocab.modelconfig import read_config
from .lookup import looks_like_dir  # noqa: F401  (re-exported: query imports it without this module's weight)


def side_from_dir(path: str | Path, *, reference: bool = False, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Side:
    from ..gguf.predict import predict_gguf_facts  # deferred: a check of catalog repos needs no converter

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
        gguf=gguf,
        gguf_missing=missing,
        source_dir=str(directory),  # the reference-text counts are taken here when a pair needs them
    )


def local_gguf_arg(arg: str) -> Path | None:
    """The .gguf a local argument names: a .gguf file, or a directory with one GGUF model and no tokenizer
    files (a directory with tokenizer files is an HF model directory). Raises InputError when ambiguous."""
    from ..gguf.file import local_gguf
    from ..vocab.fingerprint import has_tokenizer

    p = Path(arg).expanduser()
    if p.is_dir() and has_tokenizer(p):
        return None
    if arg.lower().endswith(".gguf") and not p.is_file():
        raise InputError("error", f"{arg}: no such file")
    return local_gguf(p)


def side_from_gguf(path: Path, name: str | None = None) -> Side:
    """A local GGUF file as the rules see it: its own vocabulary facts, no HF config or tokenizer."""
    from ..gguf.file import read_gguf

    f = read_gguf(path)
    return Side(name=name or str(path), vocab_size=None, vocab_size_transformers=None, tok=None,
                gguf=f.vocab, gguf_file=str(path))


def is_local(arg: str) -> bool:
    """A local path (directory or .gguf file), never a catalog repo id."""
    return looks_like_dir(arg) or arg.lower().endswith(".gguf")


def resolve_side(arg: str, *, db: str | None = None, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Side:
    """A local directory or .gguf file, or a repo id looked up in the catalog."""
    if is_local(arg):
        gguf_path = local_gguf_arg(arg)
        if gguf_path is not None:
            return side_from_gguf(gguf_path, arg if arg.lower().endswith(".gguf") else str(gguf_path))
        return side_from_dir(arg, max_file_bytes=max_file_bytes)
    from .rule_inputs import side_from_catalog

    return side_from_catalog(arg, db=db)


def check(target: str, draft: str, *, db: str | None = None, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
          local_dirs: bool = True) -> dict:
    """``indexer check TARGET DRAFT --json``: the one function the CLI and the site both call.

    It dispatches: a DRAFT that is a speculator head in the catalog is explained against TARGET
    (``headquery.explain_head``, ``kind`` "head"); anything else gets the draft-model verdicts per engine.
    ``local_dirs=False`` (the site) takes both as repo ids only (``validate.target``): a web visitor must
    never make the server read its own filesystem. Raises the library's :class:`~indexer.errors.IndexerError`
    (BadInput, InputError, RepoNotFound, ...) with the side that failed named in its message.
    """
    if local_dirs:
        return _check(target, draft, db, max_file_bytes)
    from .lookup import repo_ids_only
    from .validate import target as valid_target

    target, draft = valid_target(target, "target", local_dirs=False), valid_target(draft, "draft", local_dirs=False)
    with repo_ids_only():
        return _check(target, draft, db, max_file_bytes)


def works_on(result: dict, engine: str) -> bool:
    """Does the :func:`check` answer (a head's or a draft model's) say the pair works on ``engine``?"""
    if result.get("kind") == "head":
        verdict = result["engines"].get(engine)
        return verdict is not None and verdict["fits"]
    return result["verdicts"][engine]["compatible"]


def _check(target: str, draft: str, db: str | None, max_file_bytes: int) -> dict:
    from ..engines.rules import check_pair
    from .headquery import explain_head

    if not looks_like_dir(draft):
        head = explain_head(db, target, draft)
        if head is not None:
            return head
    sides = []
    for role, arg in (("target", target), ("draft", draft)):
        try:
            sides.append(resolve_side(arg, db=db, max_file_bytes=max_file_bytes))
        except IndexerError as e:  # InputError, RepoNotFound, CatalogError: same type, the side named
            if e.message.startswith(f"{role} "):
                msg = e.message
            elif e.message.startswith(f"{Path(arg)}: "):  # the message already names the directory
                msg = f"{role} {e.message}"
            else:
                msg = f"{role} {arg}: {e.message}"
            raise e.reworded(msg) from None
    return check_pair(*sides)
