"""Opening a catalog: SQLAlchemy engines with the SQLite settings every writer needs (WAL, busy timeout,
BEGIN IMMEDIATE), read-only where the file cannot be written, and the ``--db`` preflight that refuses a bad
catalog before a command starts. Importable from ``indexer.catalog.db``.
"""

from __future__ import annotations

import os
import sqlite3
import time
from urllib.parse import quote

from .. import deferred
from ..errors import CatalogError
from .dberrors import as_catalog_error
from .dburl import (
    busy_timeout,
    check_folder,
    check_sqlite_file,
    read_only_uri,
    resolve_url,
    sqlite_file,
    sqlite_path,
    writable,
)


def _sqlite_pragmas(dbapi_conn, _record):
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout={int(busy_timeout() * 1000)}")
    _switch_to_wal(cur)
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _switch_to_wal(cur) -> None:
    """``PRAGMA journal_mode=WAL``, retried while another connection holds the file.

    Switching a rollback-journal catalog to WAL needs the database to itself, and SQLite reports "database is
    locked" at once, without waiting out the busy timeout, when another process opens it at that moment (two
    crawls started together on a catalog an older version made: 7 of 120 trials of four processes failed, none
    with the retry). The mode is persistent (https://www.sqlite.org/pragma.html#pragma_journal_mode), so this
    happens once per catalog; new catalogs are made in WAL mode (``migrate``)."""
    give_up = time.monotonic() + busy_timeout()
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e).lower() or time.monotonic() >= give_up:
                raise
            time.sleep(0.05)


def immediate_transactions(engine) -> None:
    """Make every transaction of a SQLite ``engine`` take the write lock when it begins (BEGIN IMMEDIATE).

    A deferred transaction that reads and then writes cannot wait for a concurrent writer in WAL mode: its
    upgrade to a write lock fails at once with SQLITE_BUSY when another connection committed since it
    began (https://www.sqlite.org/lang_transaction.html, "BEGIN IMMEDIATE"; https://www.sqlite.org/wal.html).
    Beginning with the write lock makes the busy timeout apply, so concurrent crawls queue instead of
    failing. The pysqlite recipe of SQLAlchemy's SQLite dialect docs ("Serializable isolation / Savepoints /
    Transactional DDL"): let the driver stop issuing BEGIN, and emit it from the ``begin`` event.
    """
    event = deferred.sqlalchemy.event
    if engine.dialect.name != "sqlite":
        return

    @event.listens_for(engine, "connect")
    def _no_driver_begin(dbapi_conn, _record):
        dbapi_conn.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin_immediate(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _sqlite_read_pragmas(dbapi_conn, _record):
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout={int(busy_timeout() * 1000)}")
    cur.close()


def make_engine(db: str | None = None, *, read_only: bool = False):
    """A SQLAlchemy engine; a SQLite file we cannot write is opened read-only (queries still answer)."""
    create_engine, event = deferred.sqlalchemy.create_engine, deferred.sqlalchemy.event
    url = resolve_url(db)
    path = sqlite_path(url)
    ro_uri = read_only_uri(path) if path is not None and path.exists() else None
    if read_only and path is not None and path.exists() and ro_uri is None:
        ro_uri = f"file:{quote(str(path))}?mode=ro"
    if ro_uri is not None:
        engine = create_engine(f"sqlite:///{ro_uri}&uri=true", future=True)
        event.listen(engine, "connect", _sqlite_read_pragmas)
        return engine
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CatalogError(f"catalog {path}: cannot create its directory ({e.strerror})") from None
    engine = create_engine(url, future=True)
    if url.startswith("sqlite") and "mode=ro" not in url:  # read-only: never switch the file to WAL
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def preflight(db: str | None = None, *, write: bool = False, connect: bool = True, creates: bool = False) -> str:
    """Check ``--db`` before a command starts: scheme and driver; a SQLite file's folder unless the command
    ``creates`` catalogs; then (``connect``) that a database server answers; for writers also that the
    SQLite file can be written and that no other writer holds it.

    Returns the resolved URL; raises CatalogError with the fix.
    """
    url = resolve_url(db)
    path = sqlite_file(url)  # a str: no pathlib on the query path
    if path is not None and os.path.exists(path):
        check_sqlite_file(path)
    if not creates:
        check_folder(db, path)
    if not write:
        if connect and path is None and not url.startswith("sqlite"):
            engine = make_engine(url)
            try:
                engine.connect().close()
            except Exception as e:  # noqa: BLE001 - translated below, or re-raised if not the database's

                raise as_catalog_error(e, url) from None
            finally:
                engine.dispose()
        return url
    if path is not None:
        if not writable(path):
            raise CatalogError(f"catalog {path} is read-only (the file or its directory is not writable); this "
                               "command writes it: fix the permissions or copy the catalog somewhere writable")
        if not os.path.exists(path):
            return url
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            if path is not None:  # take and drop the write lock: a busy catalog is reported now
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                conn.exec_driver_sql("ROLLBACK")
    except Exception as e:  # noqa: BLE001 - translated below, or re-raised if not the database's

        raise as_catalog_error(e, url) from None
    finally:
        engine.dispose()
    return url
