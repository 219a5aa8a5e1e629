"""Catalog failures in words: whatever goes wrong with a catalog becomes a :class:`CatalogError` whose
message is one line that names the fix; :func:`explain` is the single place that maps driver exceptions
to it. Importable from ``indexer.catalog.db``; SQLAlchemy is imported when an error needs it (:mod:`indexer.deferred`).
"""

from __future__ import annotations

from .. import deferred
from ..errors import CatalogError
from .dburl import DRIVER_MODULES, REBUILD, SUPPORTED, db_arg, missing_driver, safe_url, sqlite_path


def is_db_error(exc: BaseException) -> bool:
    """An exception raised by the database layer (SQLAlchemy, sqlite3, psycopg), not by our logic."""
    mod = type(exc).__module__ or ""
    return isinstance(exc, CatalogError) or mod.split(".")[0] in ("sqlalchemy", "sqlite3", "psycopg", "psycopg2")


def is_write_conflict(exc: BaseException) -> bool:
    """A write that lost a race with another writer and succeeds when retried: a unique key that
    another transaction committed first, a deadlock victim (PostgreSQL SQLSTATE 40P01) or a
    serialization failure (40001) (https://www.postgresql.org/docs/current/errcodes-appendix.html)."""
    exc_types = deferred.sqlalchemy.exc
    if isinstance(exc, exc_types.IntegrityError):
        return "unique" in str(exc.orig).lower()
    if isinstance(exc, exc_types.DBAPIError):
        code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
        return code in ("40P01", "40001")
    return False


def as_catalog_error(exc: BaseException, url: str | None) -> BaseException:
    """``exc`` as a CatalogError when it comes from the database layer; else ``exc`` unchanged."""
    if isinstance(exc, CatalogError):
        return exc
    if isinstance(exc, ImportError) and url and (exc.name or "").split(".")[0] in DRIVER_MODULES:
        return CatalogError(missing_driver(url, exc))
    if not is_db_error(exc):
        return exc
    return CatalogError(explain(exc, url))


def _driver_message(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip()
    return text.splitlines()[0].strip() if text else type(orig).__name__


def explain(exc: BaseException, url: str | None) -> str:
    """One line for a driver exception: what is wrong with which catalog, and the fix."""
    name = f"catalog {safe_url(url)}" if url else "the catalog"
    path = sqlite_path(url) if url else None
    if path is not None:
        name = f"catalog {path}"
    cls = type(exc).__name__
    if cls == "NoSuchModuleError":
        return f"{name}: unknown database scheme; give {SUPPORTED}"
    if cls == "ArgumentError":
        return f"{name} is not a database URL; give {SUPPORTED}"
    msg = _driver_message(exc)
    low = msg.lower()
    arg = db_arg(url) if url else "CATALOG"
    rebuild = REBUILD
    if "readonly database" in low or "read-only" in low or "read only" in low:
        return (f"{name} is read-only; this command writes it: fix the permissions or copy the catalog "
                "somewhere writable")
    if "database or disk is full" in low or "disk i/o error" in low:  # SQLITE_FULL / SQLITE_IOERR
        why = ("the disk is full" if "full" in low
               else "a write failed (disk I/O error: a full disk, a file-size limit or a failing device)")
        return f"{name}: {why}; nothing committed was lost: free space or fix the device, then run again"
    if "database is locked" in low or "database table is locked" in low:
        return (f"{name} is locked by another writer (a crawl, compute or nightly still running?); "
                "try again when it has finished")
    if "file is not a database" in low or "not a database" in low:
        return (f"{name} is not a SQLite database; point --db at a catalog file or a new path, or delete it, "
                f"then {rebuild}")
    if "malformed" in low:  # SQLITE_CORRUPT: "database disk image is malformed"
        return f"{name} is damaged (database disk image is malformed): delete it, then {rebuild}"
    if "unable to open database file" in low:
        return f"{name} cannot be opened (missing directory or no permission to read it)"
    if "no such table" in low or ("relation" in low and "does not exist" in low):
        return f"{name} is not migrated; run `indexer db upgrade --db {arg}`"
    if "password authentication failed" in low or "authentication failed" in low:
        return f"{name}: the server refused the credentials ({msg}); check the user and password in --db"
    if "database" in low and "does not exist" in low:
        return f"{name}: {msg}; create it first (e.g. `createdb NAME`) or fix the name in --db"
    if any(s in low for s in ("connection refused", "could not connect", "connection failed",
                              "no such file or directory", "name or service not known", "timeout expired",
                              "could not translate host name", "server closed the connection")):
        return (f"{name} is unreachable ({msg}); start the database server or fix the host and port in --db")
    if "permission denied" in low or "must be owner" in low:  # PostgreSQL SQLSTATE 42501 / 42P... privileges
        return (f"{name}: the --db user may not do this ({msg}); use the catalog's owner, or grant this user "
                "write access")
    return f"{name}: {cls}: {msg}"
