"""Build rule inputs (:class:`rules.Side`) from a local directory or from a catalog repo."""

from __future__ import annotations

from pathlib import Path

from .engines import Side
from .files import DEFAULT_MAX_FILE_BYTES, InputError, check_dir
from .fingerprint import fingerprint_dir
from .lookup import looks_like_dir  # noqa: F401  (re-exported: query imports it without this module's weight)
from .modelconfig import read_config


def side_from_dir(path: str | Path, *, reference: bool = False, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Side:
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


def predict_gguf_facts(directory: Path, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES):
    """(GGUFVocab, None), or (None, why) when the prediction itself is unavailable."""
    try:
        from .gguf import predict_gguf
    except ImportError as e:
        return None, f"the GGUF prediction (indexer.gguf) is not available: {e}"
    try:
        return predict_gguf(directory, max_file_bytes=max_file_bytes), None
    except InputError as e:
        return None, f"the GGUF prediction cannot read the files: {e.message}"
    except Exception as e:  # noqa: BLE001 - one engine's prediction must not abort the other verdicts
        return None, f"the GGUF prediction failed: {type(e).__name__}: {e}"


def resolve_side(arg: str, *, db: str | None = None, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Side:
    """A local directory, or a repo id looked up in the catalog."""
    if looks_like_dir(arg):
        return side_from_dir(arg, max_file_bytes=max_file_bytes)
    from .catalog import side_from_catalog

    return side_from_catalog(arg, db=db)


def check(target: str, draft: str, *, db: str | None = None, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
          local_dirs: bool = True) -> dict:
    """``indexer check TARGET DRAFT --json``: the one function the CLI and the site both call.

    ``local_dirs=False`` (the site) refuses directory arguments: a web visitor must never make the
    server read its own filesystem. Raises :class:`InputError` naming the side that failed.
    """
    from .rules import check_pair

    sides = []
    for role, arg in (("target", target), ("draft", draft)):
        if not local_dirs and looks_like_dir(arg):
            raise InputError("error", f"{role} {arg!r}: give a Hub repo id (owner/name), not a path")
        try:
            sides.append(resolve_side(arg, db=db, max_file_bytes=max_file_bytes))
        except InputError as e:
            if e.message.startswith(f"{role} "):
                msg = e.message
            elif e.message.startswith(f"{Path(arg)}: "):  # the message already names the directory
                msg = f"{role} {e.message}"
            else:
                msg = f"{role} {arg}: {e.message}"
            raise InputError(e.status, msg) from None
    return check_pair(*sides)
