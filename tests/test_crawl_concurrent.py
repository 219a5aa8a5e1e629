"""Two first crawls at once (issue 24 part 2): rows keyed by content are shared, and neither crawl fails on them.

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


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="watches /proc for the computes' open catalog")
def test_two_computes_that_read_the_same_pending_rows_both_finish(tmp_path):
    """The race made certain: a third writer holds the catalog's write lock while both computes read what is
    pending (engine facts, agreements, classes) and wait to write it; then it lets them go, one after the other."""
    hub_dir = tmp_path / "hub"
    n, sets = 12, 6
    _shared_hub(hub_dir, n, sets)
    db = (tmp_path / "c.db").resolve()
    env = {**hermetic_env(tmp_path), "INDEXER_TOKENS": str(tmp_path / "tokens")}
    with HubServer(str(hub_dir)) as hub:
        crawl = subprocess.run(CLI + ["crawl", "--author", "org", "--endpoint", hub.endpoint, "--db", str(db),
                                      "--quiet", "--no-compute"], env=env, capture_output=True, text=True, timeout=240)
    assert crawl.returncode == 0, crawl.stderr
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # every write waits (busy timeout); reads go on (WAL)
    procs = [subprocess.Popen(CLI + ["compute", "--json", "--db", str(db)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        deadline = time.monotonic() + 60
        while not all(_has_open(p.pid, db) for p in procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # both have opened the catalog: their first reads follow at once, then they wait to write
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    outs = [p.communicate(timeout=240) for p in procs]
    for p, (_out, err) in zip(procs, outs):
        assert p.returncode == 0 and "Traceback" not in err, err
    stats = [json.loads(out) for out, _ in outs]
    assert sum(s["engine_facts"]["derived"] for s in stats) >= sets  # both derived them: the race was run
    con = sqlite3.connect(db)
    try:
        q = con.execute
        assert q("SELECT count(*) FROM engine_facts").fetchone()[0] == sets
        assert q("SELECT count(*) FROM repo_classes WHERE engine = 'sglang'").fetchone()[0] == n
        assert q("SELECT count(*), count(DISTINCT engine || class_key) FROM compat_classes").fetchone()[0] \
            == q("SELECT count(DISTINCT engine || class_key) FROM compat_classes").fetchone()[0]
        assert q("SELECT sum(repo_count) FROM tokenizers").fetchone()[0] == n
    finally:
        con.close()
