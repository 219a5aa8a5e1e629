"""The catalog's front door: open a migrated catalog, and every catalog helper under one name.

The pieces, each importable from here (callers across the layers use ``indexer.catalog.db``):
``dburl`` (``--db`` into a URL, SQLite file facts), ``dberrors`` (one-line :class:`CatalogError` words
for driver failures), ``connect`` (engines, the ``--db`` preflight) and ``migrate`` (Alembic upgrades,
atomic first build, locks). None imports SQLAlchemy at module level, so the light ``indexer query``
path (stdlib ``sqlite3``) can use the same URL resolution and error words.
"""

from __future__ import annotations

from sqlalchemy import inspect
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import sessionmaker

from ..errors import CatalogError
from .connect import immediate_transactions, make_engine, preflight
from .dberrors import as_catalog_error, explain, is_db_error, is_write_conflict
from .dburl import (
    DEFAULT_BUSY_TIMEOUT,
    DEFAULT_DB,
    DEFAULT_DEMO_DB,
    DRIVER_MODULES,
    POSTGRES_FIX,
    SCHEME_ALIASES,
    SUPPORTED,
    busy_timeout,
    check_driver,
    check_folder,
    check_sqlite_file,
    db_arg,
    missing_driver,
    missing_hint,
    read_only_uri,
    readonly_url,
    resolve_url,
    safe_url,
    sqlite_file,
    sqlite_path,
    writable,
)
from .migrate import alembic_config, current_revision, migration_lock, upgrade, upgrade_lock
from .reader import NOT_GATED

__all__ = [
    "CatalogError", "NOT_GATED", "insert_or_skip", "open_catalog", "session_factory",
    "immediate_transactions", "make_engine", "preflight",
    "as_catalog_error", "explain", "is_db_error", "is_write_conflict",
    "DEFAULT_BUSY_TIMEOUT", "DEFAULT_DB", "DEFAULT_DEMO_DB", "DRIVER_MODULES", "POSTGRES_FIX", "SCHEME_ALIASES",
    "SUPPORTED", "busy_timeout", "check_driver", "check_folder", "check_sqlite_file", "db_arg", "missing_driver",
    "missing_hint", "read_only_uri", "readonly_url", "resolve_url", "safe_url", "sqlite_file", "sqlite_path",
    "writable",
    "alembic_config", "current_revision", "migration_lock", "upgrade", "upgrade_lock",
]



def open_catalog(db: str | None = None, *, create: bool = False):
    """Engine for an existing, migrated catalog (or migrate it first when ``create``)."""
    if create:
        upgrade(db)
    url = resolve_url(db)
    path = sqlite_path(url)
    if path is not None and not path.exists():
        raise CatalogError(f"catalog {path} does not exist; run `indexer db upgrade --db {path}` first"
                           + missing_hint(path))
    engine = make_engine(db)
    try:
        migrated = inspect(engine).has_table("repos")
    except Exception as e:  # noqa: BLE001 - translated below, or re-raised if not the database's
        engine.dispose()
        raise as_catalog_error(e, url) from None
    if not migrated:
        engine.dispose()
        raise CatalogError(f"catalog {db_arg(url)} is not migrated; run `indexer db upgrade --db {db_arg(url)}`")
    return engine


def session_factory(engine):
    """ORM sessions on ``engine`` whose objects stay readable after commit (the crawl reads them on)."""
    return sessionmaker(engine, expire_on_commit=False)


def insert_or_skip(session, model, **values) -> bool:
    """Insert a row keyed by its content unless another transaction has (or just committed) it: True when this
    one inserted it. Two crawls that meet the same blob, file set or tokenizer both write it; the second insert is
    skipped, not an error, and the caller reads the row by its key (on PostgreSQL the insert first waits for the
    other transaction: https://www.postgresql.org/docs/current/sql-insert.html#SQL-ON-CONFLICT; SQLite 3.24+:
    https://www.sqlite.org/lang_upsert.html)."""
    table = model.__table__
    if session.bind.dialect.name != "postgresql":
        return session.execute(sqlite_insert(table).values(**values).on_conflict_do_nothing()).rowcount == 1

    key = next(iter(table.primary_key.columns))  # RETURNING: psycopg's rowcount does not tell here (-1)
    statement = pg_insert(table).values(**values).on_conflict_do_nothing().returning(key)
    return session.execute(statement).first() is not None
