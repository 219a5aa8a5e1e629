"""Schema changes are atomic: a `db upgrade` killed at any statement, or stopped by a full
disk, never leaves a catalog part-way; the next upgrade always succeeds.

The upgrade runs in a real subprocess through the CLI. Kills are real SIGKILLs the process sends itself
just before its Nth SQL statement (a listener on every SQLAlchemy engine, installed by the test's
launcher, not by the indexer), so each kill point is deterministic. A full disk is RLIMIT_FSIZE:
every write past the limit fails with EFBIG (Python ignores SIGXFSZ), like ENOSPC does.
"""

from __future__ import annotations

import os
import resource
import sqlite3
import subprocess
import sys
import textwrap

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from indexer.catalog.db import current_revision, make_engine, upgrade
from indexer.cli import cli

LAUNCHER = textwrap.dedent("""
    import os, signal, sys
    from sqlalchemy import event
    from sqlalchemy.engine import Engine
    n = {"left": int(os.environ["KILL_AT"])}

    @event.listens_for(Engine, "before_cursor_execute")
    def _kill(*_a):
        n["left"] -= 1
        if n["left"] == 0:
            os.kill(os.getpid(), signal.SIGKILL)

    from indexer.cli import cli
    cli(sys.argv[1:])
""")


def _upgrade_proc(db: str, env_extra: dict | None = None, fsize: int | None = None):
    env = {**os.environ, **(env_extra or {})}
    env.setdefault("KILL_AT", "0")  # 0: never
    preexec = None
    if fsize is not None:
        def preexec():
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    return subprocess.run([sys.executable, "-c", LAUNCHER, "db", "upgrade", "--db", db], env=env,
                          capture_output=True, text=True, timeout=60, preexec_fn=preexec)


def _head() -> str:
    from alembic.script import ScriptDirectory

    from indexer.catalog.db import alembic_config

    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def _state(path) -> tuple[str | None, set[str]]:
    """(revision, tables) read with plain sqlite3; a missing file is (None, set())."""
    if not path.exists():
        return None, set()
    con = sqlite3.connect(path)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        rev = con.execute("SELECT version_num FROM alembic_version").fetchone() if "alembic_version" in tables else None
    finally:
        con.close()
    return (rev[0] if rev else None), tables


def _assert_recovers(path) -> None:
    result = CliRunner().invoke(cli, ["db", "upgrade", "--db", str(path)])
    assert result.exit_code == 0, result.output
    assert current_revision(make_engine(str(path))) == _head()
    leftovers = [p.name for p in path.parent.iterdir() if p.name.endswith(".new") or ".new-" in p.name]
    assert leftovers == []


def _statements(db: str) -> int:
    """How many SQL statements a whole upgrade of ``db`` runs (counted in-process, same code path)."""
    count = [0]

    def bump(*_a):
        count[0] += 1

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", bump)
    try:
        upgrade(db)
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", bump)
    return count[0]


@pytest.fixture(scope="module")
def counts(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("count")
    new = _statements(str(d / "new.db"))
    upgrade(str(d / "old.db"), "0003")
    return {"new": new, "old": _statements(str(d / "old.db"))}


def _points(total: int, n: int = 6) -> list[int]:
    return sorted({max(1, total * i // n) for i in range(1, n)} | {1, total})


@pytest.mark.parametrize("share", [0.05, 0.3, 0.6, 0.95])
def test_kill_while_creating_a_new_catalog(tmp_path, counts, share):
    path = tmp_path / "catalog.db"
    at = max(1, int(counts["new"] * share))
    proc = _upgrade_proc(str(path), {"KILL_AT": str(at)})
    assert proc.returncode == -9, proc.stderr
    assert not path.exists()  # the new catalog appears whole, or not at all
    _assert_recovers(path)


@pytest.mark.parametrize("share", [0.1, 0.3, 0.5, 0.7, 0.85, 0.99])
def test_kill_while_upgrading_an_existing_catalog(tmp_path, counts, share):
    path = tmp_path / "catalog.db"
    upgrade(str(path), "0003")
    rev_before, tables_before = _state(path)
    at = max(1, int(counts["old"] * share))
    proc = _upgrade_proc(str(path), {"KILL_AT": str(at)})
    assert proc.returncode == -9, proc.stderr
    rev, tables = _state(path)
    # every revision is whole: the tables are exactly those of the recorded revision
    reference = tmp_path / "reference.db"
    upgrade(str(reference), rev)
    assert tables == _state(reference)[1]
    assert rev >= rev_before and tables >= tables_before
    _assert_recovers(path)


@pytest.mark.parametrize("limit_kib", [4, 48, 120, 200])
def test_full_disk_while_creating(tmp_path, limit_kib):
    path = tmp_path / "catalog.db"
    proc = _upgrade_proc(str(path), fsize=limit_kib * 1024)
    if proc.returncode != 0:  # refused in one line, and nothing half-made is left
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
        assert not path.exists()
    _assert_recovers(path)


@pytest.mark.parametrize("share", [0.05, 0.5])
def test_full_disk_while_upgrading(tmp_path, share):
    path = tmp_path / "catalog.db"
    upgrade(str(path), "0001")
    proc = _upgrade_proc(str(path), fsize=int(path.stat().st_size * share))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1
    rev, tables = _state(path)
    reference = tmp_path / "reference.db"
    upgrade(str(reference), rev)
    assert tables == _state(reference)[1]
    _assert_recovers(path)


def test_concurrent_upgrades_of_a_new_file_wait_for_each_other(tmp_path):
    path = tmp_path / "catalog.db"
    procs = [subprocess.Popen([sys.executable, "-c", LAUNCHER, "db", "upgrade", "--db", str(path)],
                              env={**os.environ, "KILL_AT": "0"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(3)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    assert current_revision(make_engine(str(path))) == _head()


def test_a_first_migration_left_half_done_by_an_older_version_is_rebuilt(tmp_path):
    """Issue 18's bricked file: tables of an interrupted first migration and an empty alembic_version."""
    path = tmp_path / "catalog.db"
    upgrade(str(path))
    con = sqlite3.connect(path)
    con.execute("DELETE FROM alembic_version")
    con.execute("DROP TABLE crawl_queue")
    con.commit()
    con.close()
    _assert_recovers(path)
    assert "crawl_queue" in _state(path)[1]


def test_an_upgrade_that_waits_too_long_names_the_holder(tmp_path):
    import fcntl

    path = tmp_path / "catalog.db"
    fd = os.open(tmp_path / "catalog.db.upgrade-lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
        proc = _upgrade_proc(str(path), {"INDEXER_BUSY_TIMEOUT": "1"})
    finally:
        os.close(fd)
    assert proc.returncode == 2
    assert f"is being upgraded by another process (pid {os.getpid()})" in proc.stderr
    assert not path.exists()
