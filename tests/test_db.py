"""The catalog schema: migrations create it, and they match the ORM models."""

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from click.testing import CliRunner

from indexer.catalog.db import CatalogError, current_revision, make_engine, resolve_url
from indexer.catalog.models import Base
from indexer.cli import cli


def test_migrations_and_models_do_not_drift(catalog):
    engine = sa.create_engine(resolve_url(catalog))
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


def test_db_upgrade_command_creates_and_is_idempotent(tmp_path):
    path = tmp_path / "sub" / "c.db"
    for _ in range(2):
        result = CliRunner().invoke(cli, ["db", "upgrade", "--db", str(path)])
        assert result.exit_code == 0, result.output
    assert path.exists()
    assert current_revision(make_engine(str(path))) is not None
    tables = sa.inspect(make_engine(str(path))).get_table_names()
    assert {"repos", "tokenizers", "file_sets", "blobs", "crawl_runs"} <= set(tables)


def test_db_option_env_and_urls(tmp_path, monkeypatch):
    monkeypatch.setenv("INDEXER_DB", str(tmp_path / "env.db"))
    assert resolve_url(None) == f"sqlite:///{tmp_path / 'env.db'}"
    assert resolve_url("sqlite:///x.db") == "sqlite:///x.db"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        with pytest.raises(CatalogError, match=r"pip install 'indexer\[postgres\]'"):
            resolve_url("postgresql://u@h/db")
    else:  # the postgres extra's driver, whatever SQLAlchemy's default for postgresql:// is
        assert resolve_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
        assert resolve_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    result = CliRunner().invoke(cli, ["db", "upgrade"])
    assert result.exit_code == 0 and (tmp_path / "env.db").exists()


def test_tokenstore_roundtrip(tmp_path):
    from tokfactory import make_model

    from indexer.catalog.tokenstore import TokenStore
    from indexer.vocab.fingerprint import fingerprint_dir

    fp = fingerprint_dir(make_model(tmp_path / "m"))
    store = TokenStore(tmp_path / "tokens")
    assert store.put_fingerprint(fp) is True
    assert store.put_fingerprint(fp) is False
    assert store.get(fp.vocab_sha256) == fp.vocab


def test_safe_url_masks_passwords():
    from indexer.catalog.db import safe_url

    assert safe_url("postgresql+psycopg://u:s3cret@h:5432/db") == "postgresql://u:***@h:5432/db"  # alias: not shown
    assert safe_url("sqlite:////tmp/x.db") == "sqlite:////tmp/x.db"


def test_write_conflict_and_explain_on_real_sqlite_errors(catalog):
    from sqlalchemy.exc import IntegrityError, OperationalError

    from indexer.catalog.db import explain, is_write_conflict

    engine = make_engine(catalog)
    insert = sa.text("INSERT INTO blobs (blob_id, sha256, size, first_seen_at) VALUES ('b', 's', 1, '2026-01-01')")
    with engine.begin() as conn:
        conn.execute(insert)
    with pytest.raises(IntegrityError) as dup, engine.begin() as conn:
        conn.execute(insert)
    assert is_write_conflict(dup.value)
    with pytest.raises(OperationalError) as missing, engine.connect() as conn:
        conn.exec_driver_sql("SELECT * FROM no_such_table")
    assert not is_write_conflict(missing.value)
    assert explain(missing.value, resolve_url(catalog)) == (
        f"catalog {catalog} is not migrated; run `indexer db upgrade --db {catalog}`")
    engine.dispose()


def test_a_new_catalog_is_made_in_wal_mode(tmp_path):
    """Concurrent writers never have to switch a new catalog's journal mode (that switch needs the file alone)."""
    import sqlite3

    from indexer.catalog.db import upgrade

    path = tmp_path / "c.db"
    upgrade(str(path))
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)


def _write_once(path: str, barrier, results) -> None:
    from indexer.catalog.db import make_engine

    barrier.wait()
    try:
        engine = make_engine(path)
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE IF NOT EXISTS t (x)")
            conn.exec_driver_sql("INSERT INTO t VALUES (1)")
        engine.dispose()
        results.put("ok")
    except Exception as e:  # noqa: BLE001 - reported to the test
        results.put(repr(e))


def test_writers_switching_an_old_catalog_to_wal_at_once_all_succeed(tmp_path):
    """A rollback-journal catalog (as older versions made them) opened by four writers at the same moment:
    SQLite refuses all but one switch to WAL at once with "database is locked"; every writer must get through."""
    import multiprocessing
    import sqlite3

    ctx = multiprocessing.get_context("fork")
    for trial in range(12):
        path = tmp_path / f"old{trial}.db"
        sqlite3.connect(path).execute("CREATE TABLE a (x)").connection.close()
        assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone() == ("delete",)
        barrier, results = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_write_once, args=(str(path), barrier, results)) for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert [results.get(timeout=5) for _ in procs] == ["ok"] * 4, f"trial {trial}"
        assert sqlite3.connect(path).execute("SELECT count(*) FROM t").fetchone() == (4,)
