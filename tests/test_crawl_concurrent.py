"""Two first crawls at once: rows keyed by content are shared, and neither crawl fails on them.

Each crawl ends with ``indexer compute`` (no ``--no-compute``), so both derive the engine facts, pair caches and
classes of one new SQLite catalog at about the same time, and both write blobs, file sets and tokenizers that
the other one writes too. On PostgreSQL the same races are tests/test_pg.py's.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time

import pytest
from crawlkit import hermetic_env, write_repo

from indexer.hubsim import HubServer

WORDS = 4000  # a vocabulary big enough that deriving its engine facts takes a while (the window of the race)
CLI = [sys.executable, "-c", "from indexer.cli import cli; cli()"]


def _shared_hub(hub_dir, n: int, sets: int) -> None:
    """``n`` repos over ``sets`` tokenizers: every file set (and so every engine-facts row) is in several repos."""
    for i in range(n):
        words = [f"w{i % sets}x{j}" for j in range(WORDS)]
        write_repo(hub_dir, f"org/m-{i:02d}", words=["<unk>", "<s>", "</s>", *words])


def _crawls(hub, db, tmp_path, count: int = 2) -> list[tuple[int, str, str]]:
    env = hermetic_env(tmp_path)
    env["INDEXER_TOKENS"] = str(tmp_path / "tokens")
    procs = [subprocess.Popen(CLI + ["crawl", "--author", "org", "--endpoint", hub.endpoint, "--db", str(db),
                                     "--quiet", "--json", "--workers", "2"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(count)]
    outs = [p.communicate(timeout=240) for p in procs]
    return [(p.returncode, out, err) for p, (out, err) in zip(procs, outs)]


def test_two_first_crawls_with_compute_share_content_keyed_rows(tmp_path):
    hub_dir = tmp_path / "hub"
    n, sets = 24, 12
    _shared_hub(hub_dir, n, sets)
    db = tmp_path / "c.db"
    with HubServer(str(hub_dir), page_size=6) as hub:
        # slow metadata calls: both crawls are still listing when the other one writes, and end together
        hub.add_fault("POST", r"/paths-info/", kind="slow", delay=0.1, times=None)
        results = _crawls(hub, db, tmp_path)
    for code, out, err in results:
        assert code == 0 and "Traceback" not in err and "error" not in err.lower(), err
        summary = json.loads(out)
        assert summary["failed"] == 0 and "compute" in summary, summary
    con = sqlite3.connect(db)
    try:
        q = con.execute
        assert q("SELECT count(*), count(DISTINCT repo_id) FROM repos").fetchone() == (n, n)
        assert q("SELECT status, count(*) FROM repos GROUP BY status").fetchall() == [("ok", n)]
        assert q("SELECT count(*) FROM tokenizers").fetchone()[0] == sets
        assert q("SELECT count(*) FROM file_sets").fetchone()[0] == sets
        assert q("SELECT count(*), count(DISTINCT file_set_id || '/' || config_blob) FROM engine_facts").fetchone() \
            == (sets, sets)
        assert q("SELECT count(*), count(DISTINCT blob_id) FROM blobs").fetchone()[0] >= sets
        # the classes are whole: every ok repo is a member once per engine
        assert q("SELECT count(*) FROM repo_classes WHERE engine = 'sglang'").fetchone()[0] == n
        assert sorted(r[0] for r in q("SELECT status FROM crawl_runs")) == ["ok", "ok"]
    finally:
        con.close()


def _has_open(pid: int, path) -> bool:
    """Has process ``pid`` opened ``path`` (Linux /proc)?"""
    try:
        return any(os.path.realpath(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


@pytest.fixture(params=["sqlite", "postgresql"])
def any_catalog(request, tmp_path) -> str:
    """A new SQLite file, or a fresh PostgreSQL database (INDEXER_TEST_PG): the guarantee holds on both."""
    if request.param == "sqlite":
        if not os.path.isdir("/proc/self/fd"):
            pytest.skip("watches /proc for the computes' open catalog")
        return str((tmp_path / "c.db").resolve())
    return request.getfixturevalue("pg_url")


class WriteLock:
    """A third writer that holds back every write to the catalog while reads go on, until ``release``:
    SQLite's write lock (WAL readers are not blocked); on PostgreSQL a SHARE lock on ``engine_facts``
    (inserts wait, selects do not: https://www.postgresql.org/docs/current/explicit-locking.html)."""

    def __init__(self, db: str):
        self.db = db
        if "://" in db:
            import sqlalchemy as sa

            self.engine = sa.create_engine(db)
            self.conn = self.engine.connect()
            self.conn.exec_driver_sql("LOCK TABLE engine_facts IN SHARE MODE")
        else:
            self.conn = sqlite3.connect(db, isolation_level=None)
            self.conn.execute("BEGIN IMMEDIATE")  # every write waits (busy timeout)

    def both_waiting(self, procs) -> bool:
        """Have both computes read what is pending, and do they wait to write it?"""
        if "://" not in self.db:  # both opened the catalog: their first read follows at once
            return all(_has_open(p.pid, self.db) for p in procs)
        import sqlalchemy as sa

        with sa.create_engine(self.db).connect() as probe:
            return probe.exec_driver_sql(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE 'INSERT INTO engine_facts%%'").scalar() == len(procs)

    def release(self) -> None:
        if "://" in self.db:
            self.conn.rollback()
            self.conn.close()
            self.engine.dispose()
        else:
            self.conn.execute("ROLLBACK")
            self.conn.close()


def test_two_computes_that_read_the_same_pending_rows_both_finish(any_catalog, tmp_path):
    """The race made certain: a third writer holds back the catalog's writes while both computes read what is
    pending (engine facts, agreements, classes) and wait to write it; then it lets them go together."""
    db = any_catalog
    hub_dir = tmp_path / "hub"
    n, sets = 12, 6
    _shared_hub(hub_dir, n, sets)
    env = {**hermetic_env(tmp_path), "INDEXER_TOKENS": str(tmp_path / "tokens")}
    with HubServer(str(hub_dir)) as hub:
        crawl = subprocess.run(CLI + ["crawl", "--author", "org", "--endpoint", hub.endpoint, "--db", db, "--quiet",
                                      "--no-compute"], env=env, cwd=tmp_path, capture_output=True, text=True,
                               timeout=240)
    assert crawl.returncode == 0, crawl.stderr
    lock = WriteLock(db)
    procs = [subprocess.Popen(CLI + ["compute", "--json", "--db", db], env=env, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        deadline = time.monotonic() + 60
        while not lock.both_waiting(procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)
    finally:
        lock.release()
    outs = [p.communicate(timeout=240) for p in procs]
    for p, (_out, err) in zip(procs, outs):
        assert p.returncode == 0 and "Traceback" not in err, err
    stats = [json.loads(out) for out, _ in outs]
    assert sum(s["engine_facts"]["derived"] for s in stats) >= sets  # both derived them: the race was run
    import sqlalchemy as sa

    engine = sa.create_engine(db if "://" in db else f"sqlite:///{db}")
    with engine.connect() as conn:
        q = conn.exec_driver_sql
        assert q("SELECT count(*) FROM engine_facts").scalar() == sets
        assert q("SELECT count(*) FROM repo_classes WHERE engine = 'sglang'").scalar() == n
        assert q("SELECT count(*) FROM compat_classes").scalar() \
            == q("SELECT count(DISTINCT engine || class_key) FROM compat_classes").scalar()
        assert q("SELECT sum(repo_count) FROM tokenizers").scalar() == n
        assert q("SELECT count(*) FROM meta WHERE key = 'compute_repos'").scalar() == 1
    engine.dispose()
