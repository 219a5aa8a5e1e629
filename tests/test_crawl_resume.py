"""A crawl killed with SIGKILL and rerun gives the same catalog as one uninterrupted crawl."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from crawlkit import crawl, hermetic_env, snapshot

from indexer.catalog.db import upgrade
from indexer.hubsim import HubServer, generate_synthetic_hub

N_REPOS = 150


def _count(db) -> int:
    try:
        con = sqlite3.connect(db, timeout=5)
        try:
            return con.execute("select count(*) from repos").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_resume_after_sigkill(tmp_path):
    hub_dir = tmp_path / "hub"
    generate_synthetic_hub(hub_dir, N_REPOS, seed=3)
    killed, reference = tmp_path / "a" / "c.db", tmp_path / "b" / "c.db"
    upgrade(str(killed))
    upgrade(str(reference))
    env = hermetic_env(tmp_path)
    with HubServer(str(hub_dir), page_size=25) as hub:
        cmd = [sys.executable, "-c", "from indexer.cli import cli; cli()", "crawl", "--all", "--endpoint",
               hub.endpoint, "--db", str(killed), "--workers", "2", "--quiet", "--no-compute"]
        hub.add_fault("POST", r"/paths-info/", kind="slow", delay=0.03, times=None)
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _count(killed) < 40 and proc.poll() is None:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        done = _count(killed)
        assert proc.returncode == -signal.SIGKILL
        assert 40 <= done < N_REPOS, done
        hub.clear_faults()

        rerun = subprocess.run(cmd + ["--json"], env=env, capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr
        crawl(str(reference), hub)

    con = sqlite3.connect(killed)
    assert con.execute("pragma integrity_check").fetchone() == ("ok",)
    assert con.execute("select count(*), count(distinct repo_id) from repos").fetchone() == (N_REPOS, N_REPOS)
    runs = con.execute("select status, unchanged from crawl_runs order by id").fetchall()
    con.close()
    assert [s for s, _ in runs] == ["interrupted", "ok"] and runs[1][1] >= done - 8
    assert snapshot(str(killed)) == snapshot(str(reference))
