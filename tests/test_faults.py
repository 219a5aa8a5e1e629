"""A crawl survives its night: stalled answers, an unreachable Hub, a time box, signals.

End to end through the CLI in a subprocess, against the Hub imitation on 127.0.0.1. Every wait is
bounded by ``timeout=``; nothing asserts wall-clock time.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time

import pytest
from crawlkit import CLI, hermetic_env, run_cli, six_repo_hub, write_repo

from indexer.hubsim import HubServer


@pytest.fixture
def hub_dir(tmp_path):
    return six_repo_hub(tmp_path)


def run(args, tmp_path, timeout=60, **kw):
    return run_cli(args, tmp_path, timeout, **kw)


def rows(db) -> dict[str, tuple]:
    con = sqlite3.connect(db)
    try:
        return {r[0]: (r[1], r[2]) for r in con.execute("select repo_id, status, reason from repos")}
    finally:
        con.close()


def runs(db) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute("select status, errors from crawl_runs order by id").fetchall()
    finally:
        con.close()


def closed_port() -> int:
    """A 127.0.0.1 port nobody listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_a_stalled_file_is_a_transient_error_and_the_crawl_goes_on(hub_dir, tmp_path):
    db = tmp_path / "c.db"
    with HubServer(str(hub_dir)) as hub:
        # accepted and never answered (until the server stops)
        hub.add_fault("GET", r"/meta-llama/model-2/resolve/.*/tokenizer.json", kind="stall", delay=None, times=None)
        proc = run(["crawl", "--author", "meta-llama", "--endpoint", hub.endpoint, "--db", str(db), "--quiet",
                    "--no-compute", "--request-timeout", "2", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = rows(db)
    status, reason = got["meta-llama/model-2"]
    assert status == "error" and "transient" in reason and "no complete answer within 2 s" in reason
    assert all(got[f"meta-llama/model-{i}"][0] == "ok" for i in (0, 1, 3, 4, 5)), got
    assert "Retrying" not in proc.stderr and "Traceback" not in proc.stderr  # client chatter: the log only


def test_an_unreachable_hub_ends_the_run_with_one_line(tmp_path):
    db = tmp_path / "c.db"
    proc = run(["crawl", "--all", "--endpoint", f"http://127.0.0.1:{closed_port()}", "--db", str(db), "--quiet",
                "--no-compute"], tmp_path, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "cannot be reached" in proc.stderr and "Retrying" not in proc.stderr
    assert runs(db)[-1][0] == "failed"


def test_a_live_answer_gives_up_at_the_first_refused_connection(tmp_path):
    """Someone waits for a live answer: no two seconds of retries against a Hub that refuses connections, where the
    crawl retries (it is unattended, and one blip must not end a night's run)."""
    from indexer.errors import HubUnreachable
    from indexer.hub.guard import INTERACTIVE, Guard

    refused = ConnectionRefusedError(111, "Connection refused")
    Guard("http://127.0.0.1:9").connect_failed(refused)  # the crawl's guard: the first failure is retried
    with pytest.raises(HubUnreachable, match="cannot be reached"):
        Guard("http://127.0.0.1:9", unreachable_after=INTERACTIVE).connect_failed(refused)
    from indexer.answer.live import Live

    live = Live(str(tmp_path / "c.db"), endpoint=f"http://127.0.0.1:{closed_port()}")
    try:
        assert live.client.guard.unreachable_after == INTERACTIVE
    finally:
        live.close()
    proc = run(["query", "--target", "nobody/none", "--db", str(tmp_path / "c.db")], tmp_path)  # HF_ENDPOINT: closed
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr  # no catalog, and no Hub
    assert "cannot be reached" in proc.stderr


def test_verbose_shows_the_client_retries(tmp_path):
    proc = run(["crawl", "--all", "--endpoint", f"http://127.0.0.1:{closed_port()}", "--db", str(tmp_path / "c.db"),
                "--quiet", "--no-compute", "--verbose"], tmp_path, timeout=60)
    assert proc.returncode == 1
    assert "listing page: ConnectError; retry 1 of 5" in proc.stderr  # the crawl's own retry notes, on request


def _fsize(limit: int):
    import resource

    def preexec():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return preexec


def test_a_failed_write_fails_the_crawl_and_loses_nothing(hub_dir, tmp_path):
    """Writes past a file-size limit fail with EFBIG, as on a full disk: the run fails in one line."""
    from indexer.catalog.db import upgrade

    db = tmp_path / "c.db"
    upgrade(str(db))
    args = ["crawl", "--author", "meta-llama", "--db", str(db), "--quiet", "--no-compute", "--workers", "1"]
    with HubServer(str(hub_dir)) as hub:
        args += ["--endpoint", hub.endpoint]
        proc = run(args, tmp_path, preexec_fn=_fsize(db.stat().st_size + 48 * 1024))
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert proc.stderr.count("\n") == 1 and "a " in proc.stderr and "write failed" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
        kept = rows(db)
        assert kept and all(status == "ok" for status, _ in kept.values())  # no repo blamed for the disk
        again = run(args, tmp_path)
        assert again.returncode == 0, again.stderr
    final = rows(db)
    assert len(final) == 6 and all(s == "ok" for s, _ in final.values())
    assert set(kept) <= set(final)


def test_a_failed_write_stops_the_nightly_before_compute_and_publish(hub_dir, tmp_path):
    from indexer.catalog.db import upgrade

    db = tmp_path / "c.db"
    upgrade(str(db))
    report, outdir = tmp_path / "report.json", tmp_path / "site"
    with HubServer(str(hub_dir)) as hub:
        proc = run(["nightly", "--db", str(db), "--endpoint", hub.endpoint, "--families", "Llama",
                    "--report", str(report), "--publish-dir", str(outdir)], tmp_path,
                   preexec_fn=_fsize(db.stat().st_size + 48 * 1024))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rep = json.loads(report.read_text())
    assert rep["status"] == "failed" and "write failed" in rep["error"]
    assert "compute" not in rep["steps"] and not outdir.exists()


def _queue(db) -> list[str]:
    con = sqlite3.connect(db)
    try:
        return [r[0] for r in con.execute("select repo_id from crawl_queue")]
    finally:
        con.close()


def test_max_minutes_is_a_hard_box(hub_dir, tmp_path):
    """A request stalled past --max-minutes is abandoned and its repo queued; the next run finishes it."""
    db = tmp_path / "c.db"
    args = ["crawl", "--author", "meta-llama", "--db", str(db), "--quiet", "--no-compute"]
    with HubServer(str(hub_dir)) as hub:
        args += ["--endpoint", hub.endpoint]
        hub.add_fault("GET", r"/meta-llama/model-2/resolve/.*/tokenizer.json", kind="stall", delay=None, times=None)
        proc = run(args + ["--max-minutes", "0.05"], tmp_path)  # 3 s; the call alone may take 120 s
        assert proc.returncode == 0, proc.stderr
        assert runs(db)[-1][0] == "partial"
        assert "meta-llama/model-2" not in rows(db) and _queue(db) == ["meta-llama/model-2"]
        hub.clear_faults()
        again = run(args, tmp_path)
    assert again.returncode == 0, again.stderr
    assert rows(db)["meta-llama/model-2"][0] == "ok" and _queue(db) == []


def _wait_for(predicate, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _ok_count(db) -> int:
    try:
        return sum(1 for s, _ in rows(db).values() if s == "ok")
    except sqlite3.Error:
        return 0


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_crawl_stops_on_a_signal_with_a_stalled_request_in_flight(hub_dir, tmp_path, sig, code):
    db = tmp_path / "c.db"
    with HubServer(str(hub_dir)) as hub:
        hub.add_fault("GET", r"/meta-llama/model-2/resolve/.*/tokenizer.json", kind="stall", delay=None, times=None)
        proc = subprocess.Popen(CLI + ["crawl", "--author", "meta-llama", "--endpoint", hub.endpoint, "--db", str(db),
                                       "--quiet", "--no-compute"], env=hermetic_env(tmp_path),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert _wait_for(lambda: _ok_count(db) == 5), "the other repos were not crawled"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)  # not the 120 s the stalled call may take
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert runs(db)[-1][0] == "interrupted"


def test_nightly_stops_on_sigterm_and_writes_its_report(hub_dir, tmp_path):
    db, report = tmp_path / "c.db", tmp_path / "report.json"
    with HubServer(str(hub_dir)) as hub:
        hub.add_fault("GET", r"/meta-llama/model-2/resolve/.*/tokenizer.json", kind="stall", delay=None, times=None)
        proc = subprocess.Popen(CLI + ["nightly", "--db", str(db), "--endpoint", hub.endpoint, "--families", "Llama",
                                       "--report", str(report), "--publish-dir", ""], env=hermetic_env(tmp_path),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert _wait_for(lambda: _ok_count(db) == 5), "the other repos were not crawled"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 143, err
    assert "interrupted" in out + err and "Traceback" not in err
    rep = json.loads(report.read_text())
    assert rep["status"] == "interrupted" and rep["steps"]["crawl"]["status"] == "interrupted"
    assert "compute" not in rep["steps"]
    assert runs(db)[-1][0] == "interrupted"


def test_the_lock_message_names_the_real_holder(tmp_path):
    """A child that inherited the nightly lock outlives the parent whose PID the file records."""
    import os

    db = tmp_path / "c.db"
    script = ("import os, sys, time\n"
              "from indexer.jobs.nightly import exclusive_lock\n"
              "with exclusive_lock(__import__('pathlib').Path(sys.argv[1])):\n"
              "    pid = os.fork()\n"
              "    if pid == 0:\n"
              "        null = os.open(os.devnull, os.O_RDWR); os.dup2(null, 1); os.dup2(null, 2)\n"
              "        time.sleep(30); os._exit(0)\n"
              "    print(os.getpid(), pid, flush=True); os._exit(0)\n")
    lock = tmp_path / "c.db.lock"
    parent = subprocess.run([sys.executable, "-c", script, str(lock)], capture_output=True, text=True, timeout=30)
    parent_pid, child = map(int, parent.stdout.split())
    try:
        proc = run(["nightly", "--db", str(db), "--publish-dir", ""], tmp_path, timeout=30)
        assert proc.returncode == 75, proc.stderr
        assert f"(pid {child}; the file still says 'pid {parent_pid} since" in proc.stderr
    finally:
        os.kill(child, signal.SIGKILL)


def test_two_crawls_at_once_split_the_work(tmp_path):
    """Concurrent crawls of one catalog claim repos through the crawl queue: each repo is fetched once.
    The catalog is new: both crawls create it at once (the upgrade lock serialises them)."""
    hub_dir = tmp_path / "hub"
    n = 24
    for i in range(n):
        write_repo(hub_dir, f"org/m-{i}", words=[f"v{i}y{j}" for j in range(30)])
    db = tmp_path / "c.db"
    with HubServer(str(hub_dir), page_size=6) as hub:
        hub.add_fault("POST", r"/paths-info/", kind="slow", delay=0.15, times=None)  # the crawls overlap
        procs = [subprocess.Popen(CLI + ["crawl", "--author", "org", "--endpoint", hub.endpoint, "--db", str(db),
                                         "--quiet", "--no-compute", "--json", "--workers", "2"],
                                  env=hermetic_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(2)]
        outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    summaries = [json.loads(out) for out, _ in outs]
    assert sum(s["new"] for s in summaries) == n, summaries
    assert all(s["new"] + s["unchanged"] + s["elsewhere"] == n for s in summaries), summaries
    final = rows(db)
    assert len(final) == n and all(s == "ok" for s, _ in final.values())
    assert _queue(db) == [] and [r[0] for r in runs(db)] == ["ok", "ok"]


def test_a_failed_download_write_fails_the_crawl(tmp_path):
    """A repo whose files cannot be written (EFBIG, as ENOSPC) is the run's failure, not the repo's."""
    from indexer.catalog.db import upgrade

    hub_dir = tmp_path / "hub"
    write_repo(hub_dir, "big/model", words=[f"tok{j}" for j in range(40000)])
    db = tmp_path / "c.db"
    upgrade(str(db))
    limit = db.stat().st_size + 48 * 1024  # no file may grow past the empty catalog and 48 KiB
    assert (hub_dir / "big/model/tokenizer.json").stat().st_size > 2 * limit  # its download cannot be written
    with HubServer(str(hub_dir)) as hub:
        proc = run(["crawl", "--author", "big", "--endpoint", hub.endpoint, "--db", str(db), "--quiet",
                    "--no-compute"], tmp_path, preexec_fn=_fsize(limit))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # the blob store or, its xz copy being small, the token store or catalog behind it: one line either way
    assert re.fullmatch(r"error: a write failed (fetching|writing) big/model: File too large \(EFBIG\)\n",
                        proc.stderr), proc.stderr
    assert rows(db) == {}  # the repo is not blamed: it is crawled on the next run


def test_nightly_with_an_unreachable_hub_fails_fast_in_one_line(tmp_path):
    report = tmp_path / "r.json"
    proc = run(["nightly", "--db", str(tmp_path / "c.db"), "--endpoint", f"http://127.0.0.1:{closed_port()}",
                "--report", str(report), "--publish-dir", ""], tmp_path)
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    assert proc.stdout.count("\n") == 1 and "cannot be reached" in proc.stdout
    rep = json.loads(report.read_text())
    assert rep["status"] == "failed" and "compute" not in rep["steps"]


def test_hf_hub_offline_ends_a_crawl_with_one_line(tmp_path):
    env = {**hermetic_env(tmp_path), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(CLI + ["crawl", "--all", "--endpoint", f"http://127.0.0.1:{closed_port()}", "--db",
                                 str(tmp_path / "c.db"), "--quiet", "--no-compute"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: HF_HUB_OFFLINE is set") and proc.stderr.count("\n") == 1, proc.stderr


def test_an_unreachable_proxy_ends_the_run_with_one_line(hub_dir, tmp_path):
    """Requests through an HTTP(S)_PROXY transport are guarded too (a proxy that refuses connections)."""
    port = closed_port()
    env = {**hermetic_env(tmp_path), "HTTP_PROXY": f"http://127.0.0.1:{port}", "NO_PROXY": ""}
    with HubServer(str(hub_dir)) as hub:
        proc = subprocess.run(CLI + ["crawl", "--author", "meta-llama", "--endpoint", hub.endpoint, "--db",
                                     str(tmp_path / "c.db"), "--quiet", "--no-compute"],
                              env=env, capture_output=True, text=True, timeout=60)
        assert hub.counts.get("list", 0) == 0  # nothing got past the proxy
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and "cannot be reached" in proc.stderr, proc.stderr
