"""Failed writes are the run's failure, never a repo's (no false success).

A full disk, an I/O error or a read-only filesystem stops every later write too, so recording it as one
repo's ``error`` and going on would end the run ``ok`` with nothing kept, and a nightly would publish.
``storage_failure`` recognises such an exception, wherever it was wrapped (the client wraps download
errors, SQLAlchemy wraps sqlite3's); the crawl then stops with ``WriteFailed``: one line naming the cause.
What was committed before stays committed; the next run resumes.
"""

from __future__ import annotations

import errno

from ..errors import WriteFailed

# ENOSPC / EDQUOT: no space or quota; EFBIG: a file-size limit (RLIMIT_FSIZE); EIO: the device;
# EROFS: a read-only filesystem.
STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS}
# What SQLite says for the same causes (https://www.sqlite.org/rescode.html: SQLITE_FULL, SQLITE_IOERR,
# SQLITE_READONLY).
SQLITE_MESSAGES = {
    "database or disk is full": "the disk is full",
    "disk i/o error": "disk I/O error (a full disk, a file-size limit or a failing device)",
    "attempt to write a readonly database": "it is read-only",
}


def storage_failure(exc: BaseException | None, doing: str | None = None) -> str | None:
    """One line naming the cause when ``exc`` (or anything it wraps) is a failed write, else None;
    ``doing`` says what the run was doing ("fetching org/name")."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, WriteFailed):
            return str(exc)
        if isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS:
            where = f" writing {exc.filename}" if exc.filename else (f" {doing}" if doing else "")
            return f"a write failed{where}: {exc.strerror or 'error'} ({errno.errorcode.get(exc.errno, exc.errno)})"
        text = str(getattr(exc, "orig", None) or exc).lower()
        if type(exc).__module__.split(".")[0] in ("sqlite3", "sqlalchemy") and any(m in text for m in SQLITE_MESSAGES):
            cause = next(v for m, v in SQLITE_MESSAGES.items() if m in text)
            return f"a catalog write failed{f' {doing}' if doing else ''}: {cause}"
        exc = exc.__cause__ or exc.__context__
    return None


def raise_if_write_failed(exc: BaseException, doing: str | None = None) -> None:
    """Re-raise ``exc`` as WriteFailed when it is a failed write (call from a broad ``except``)."""
    why = storage_failure(exc, doing)
    if why is not None:
        raise WriteFailed(why) from exc
