"""Catalog access: URL resolution, engine creation and Alembic upgrades.

Every command takes ``--db``: a file path or any SQLAlchemy URL (default
``data/catalog.db``, env ``INDEXER_DB``).
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import create_engine, event, inspect
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

DEFAULT_DB = "data/catalog.db"
PROJECT_ROOT = Path(__file__).resolve().parent.parent
MIGRATIONS_DIR = PROJECT_ROOT / "migrations"


class CatalogError(Exception):
    """The catalog is missing, not migrated, or unreachable."""


def resolve_url(db: str | None = None) -> str:
    """Turn ``--db`` (path or URL; falls back to $INDEXER_DB, then data/catalog.db) into a URL."""
    db = db or os.environ.get("INDEXER_DB") or DEFAULT_DB
    if "://" in db:
        return db
    return f"sqlite:///{Path(db).expanduser().resolve()}"


def sqlite_path(url: str) -> Path | None:
    """The file behind a sqlite URL, or None for other databases / in-memory.

    ``sqlite:///file:PATH?mode=ro&uri=true`` (a read-only URI, as the site uses) names PATH.
    """
    if not url.startswith("sqlite:///"):
        return None
    path = url[len("sqlite:///") :]
    if path.startswith("file:"):
        path = path[len("file:") :].split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def readonly_url(path: str | Path) -> str:
    """A SQLAlchemy URL that opens a SQLite file read-only: no journal-mode switch, no -wal beside it."""
    return f"sqlite:///file:{Path(path).resolve()}?mode=ro&uri=true"


def _sqlite_pragmas(dbapi_conn, _record):
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def make_engine(db: str | None = None) -> Engine:
    url = resolve_url(db)
    path = sqlite_path(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, future=True)
    if url.startswith("sqlite") and "mode=ro" not in url:  # read-only: never switch the file to WAL
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def alembic_config(url: str):
    from alembic.config import Config

    if not (MIGRATIONS_DIR / "env.py").exists():
        raise CatalogError(f"migrations not found at {MIGRATIONS_DIR} (install with `pip install -e .`)")
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(db: str | None = None, revision: str = "head") -> str:
    """Create or upgrade the catalog schema; returns the URL that was migrated."""
    from alembic import command

    url = resolve_url(db)
    path = sqlite_path(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    command.upgrade(alembic_config(url), revision)
    return url


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def open_catalog(db: str | None = None, *, create: bool = False) -> Engine:
    """Engine for an existing, migrated catalog (or migrate it first when ``create``)."""
    if create:
        upgrade(db)
    url = resolve_url(db)
    path = sqlite_path(url)
    if path is not None and not path.exists():
        raise CatalogError(f"catalog {path} does not exist; run `indexer db upgrade --db {path}` first")
    engine = make_engine(db)
    if not inspect(engine).has_table("repos"):
        raise CatalogError(f"catalog {url} is not migrated; run `indexer db upgrade`")
    return engine


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)
