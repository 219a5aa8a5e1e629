"""Rule inputs (:class:`rules.Side`) for one argument: a catalog repo (``rule_inputs``), or a local directory or
GGUF file (``localdir``, whose readers are crawl-time code: loaded only when a side is local)."""

from __future__ import annotations

from .. import deferred
from ..catalog.reader import Reader
from ..engines import Side
from ..files import DEFAULT_MAX_FILE_BYTES
from .lookup import local_gguf_arg, looks_like_dir
from .rule_inputs import side_from_catalog


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
            return deferred.localdir.side_from_gguf(gguf_path, arg if arg.lower().endswith(".gguf") else str(gguf_path))
        return deferred.localdir.side_from_dir(arg, max_file_bytes=max_file_bytes)

    return side_from_catalog(arg, db=db, reader=reader)
