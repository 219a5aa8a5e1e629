"""Creating and upgrading a catalog's schema with the Alembic scripts in ``catalog/migrations/``.

A new SQLite catalog is built whole beside its path and renamed into place, an existing one migrates one
transaction per revision, and concurrent upgrades wait for each other (a file lock for SQLite, an
advisory lock for PostgreSQL). Importable from ``indexer.catalog.db``.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext

from ..errors import CatalogError
from ..files import fsync_dir
from ..lockfile import lock_holder
from ..resources import MIGRATIONS_DIR
from .connect import preflight
from .dberrors import as_catalog_error
from .dburl import busy_timeout, sqlite_path
from .models import Base


def alembic_config(url: str):
    """Alembic's Config for ``url``, pointed at the migrations shipped inside the package."""
    if not (MIGRATIONS_DIR / "env.py").exists():
        raise CatalogError(f"migrations not found at {MIGRATIONS_DIR}; reinstall the package (`pip install .`)")
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(db: str | None = None, revision: str = "head") -> str:
    """Create or upgrade the catalog schema; returns the URL that was migrated.

    Never leaves a catalog part-way: a new SQLite catalog is built in a temporary file
    beside it and renamed into place; an existing one is migrated one whole transaction per revision
    (migrations/env.py). Concurrent upgrades of one catalog wait for each other (``migration_lock``
    and, for SQLite files, ``upgrade_lock``), so two crawls started at once on a new path do not race.
    """
    url = preflight(db, write=True, creates=True)  # upgrading creates: the folder too
    path = sqlite_path(url)
    try:
        if path is None:
            command.upgrade(alembic_config(url), revision)
            return url
        path.parent.mkdir(parents=True, exist_ok=True)
        with upgrade_lock(path):
            _remove_stale_builds(path)
            if _holds_nothing(path):
                _build_new(path, revision)
            else:
                command.upgrade(alembic_config(url), revision)
    except Exception as e:  # noqa: BLE001 - translated below, or re-raised if not the database's
        raise as_catalog_error(e, url) from None
    return url


NEW_SUFFIX = ".new"


def _holds_nothing(path: Path) -> bool:
    """A missing or empty file, or one an interrupted first migration left behind by an older version
    (only catalog tables, no recorded revision, no rows): built anew, since there is nothing to keep.
    Any other SQLite file is left to the migration, which refuses what it cannot upgrade."""
    if not path.exists() or path.stat().st_size == 0:
        return True

    ours = set(Base.metadata.tables) | {"alembic_version"}

    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                                "AND name NOT LIKE 'sqlite_%'")]
            if not set(tables) <= ours:
                return False
            if "alembic_version" in tables and con.execute("SELECT 1 FROM alembic_version").fetchone():
                return False
            return not any(con.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchone() for t in tables)
        finally:
            con.close()
    except sqlite3.Error:
        return False  # let the migration report what is wrong with it


def _build_new(path: Path, revision: str) -> None:
    """Migrate a fresh SQLite file beside ``path``, then rename it into place (atomic on POSIX)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}{NEW_SUFFIX}")
    os.close(os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644))  # the umask applies, as for a new file
    try:
        command.upgrade(alembic_config(f"sqlite:///{tmp}"), revision)
        _to_wal(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    finally:
        for leftover in (tmp, *_sidecars(tmp)):
            leftover.unlink(missing_ok=True)


def _to_wal(path: Path) -> None:
    """Put a new catalog in WAL mode before anyone else opens it: "the WAL journaling mode is persistent; after
    being set it stays in effect across multiple database connections" (https://www.sqlite.org/pragma.html
    #pragma_journal_mode). Two crawls started at once on a new catalog then never race to switch it, a change
    that needs the database to itself (one of them failed with "database is locked")."""
    con = sqlite3.connect(path)
    try:
        con.execute("PRAGMA journal_mode=WAL")
    finally:
        con.close()  # the last connection to close checkpoints and removes the -wal file


def _sidecars(path: Path) -> list[Path]:
    return [path.with_name(path.name + s) for s in ("-journal", "-wal", "-shm")]


def _remove_stale_builds(path: Path) -> None:
    """Temporary builds of a killed upgrade (we hold the upgrade lock: nobody else is building)."""
    for stale in path.parent.glob(f".{path.name}.*{NEW_SUFFIX}*"):
        stale.unlink(missing_ok=True)


@contextmanager
def upgrade_lock(path: Path):
    """An exclusive flock on ``<catalog>.upgrade-lock`` for the whole upgrade; waits up to the busy timeout.

    A separate file from the nightly's ``<catalog>.lock`` (flock locks of one process on two
    descriptors of the same file conflict). The kernel drops it when the process dies.
    """
    lock = path.with_name(path.name + ".upgrade-lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        give_up = time.monotonic() + max(busy_timeout(), 1.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= give_up:

                    holder = lock_holder(lock, os.pread(fd, 200, 0).decode(errors="replace").strip())
                    raise CatalogError(f"catalog {path} is being upgraded by another process ({holder}); try "
                                       "again when it has finished") from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


# PostgreSQL: one advisory lock key for catalog migrations (an arbitrary constant, "idx18").
PG_MIGRATION_LOCK = 0x69647831


@contextmanager
def migration_lock(connection):
    """Hold a session-level advisory lock on a PostgreSQL catalog while it migrates, so concurrent
    upgrades wait (https://www.postgresql.org/docs/current/explicit-locking.html#ADVISORY-LOCKS).
    SQLite files are serialised by ``upgrade_lock`` instead."""
    if connection.dialect.name != "postgresql":
        yield
        return
    connection.exec_driver_sql(f"SELECT pg_advisory_lock({PG_MIGRATION_LOCK})")
    connection.commit()
    try:
        yield
    finally:
        if connection.in_transaction():
            connection.rollback()
        connection.exec_driver_sql(f"SELECT pg_advisory_unlock({PG_MIGRATION_LOCK})")
        connection.commit()


def current_revision(engine) -> str | None:
    """The Alembic revision a catalog is at (None before its first migration), to check an upgrade."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
