"""indexer demo --no-serve: offline demo hub → Hub imitation → crawl → compute → catalog."""

from __future__ import annotations

import json
import sqlite3

from click.testing import CliRunner

from indexer.cli import cli
from indexer.demo import DEMO_DRAFT_MISMATCH, DEMO_TARGET, REPOS, build_demo_hub


def test_demo_hub_has_the_tricky_cases(tmp_path):
    meta = build_demo_hub(tmp_path / "hub")
    assert len(meta) == len(REPOS)
    t = json.loads((tmp_path / "hub" / DEMO_TARGET / "tokenizer.json").read_text())
    assert {a["content"] for a in t["added_tokens"]} >= {"<|im_start|>", "<|im_end|>"}
    cfg = json.loads((tmp_path / "hub" / DEMO_DRAFT_MISMATCH / "config.json").read_text())
    assert cfg["vocab_size"] == 640
    assert not (tmp_path / "hub" / "lumen-ai/Lumen-7B-Instruct-GGUF" / "tokenizer.json").exists()


def test_demo_builds_a_catalog_offline(tmp_path):
    db = tmp_path / "demo.db"
    res = CliRunner().invoke(cli, ["demo", "--no-serve", "--db", str(db)])
    assert res.exit_code == 0, res.output
    assert f"indexer query --db {db} --target {DEMO_TARGET}" in res.output
    con = sqlite3.connect(db)
    statuses = dict(con.execute("SELECT repo_id, status FROM repos"))
    assert len(statuses) == len(REPOS)
    assert statuses["lumen-ai/Lumen-70B-Instruct"] == "gated"
    assert statuses["lumen-ai/Lumen-7B-Instruct-GGUF"] == "no_tokenizer"
    assert con.execute("SELECT count(*) FROM compat_classes").fetchone()[0] > 0
    con.close()

    res = CliRunner().invoke(cli, ["query", "--db", str(db), "--target", DEMO_TARGET, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    drafts = [d["repo_id"] for d in out["drafts"]]
    # The same mapping, then the base models whose vocabularies agree (they lack the chat tokens), flagged.
    assert drafts == ["lumen-ai/Lumen-0.5B-Instruct", "quietfox/Lumen-0.5B-Instruct-sft", "lumen-ai/Lumen-0.5B",
                      "lumen-ai/Lumen-7B"]
    base = out["drafts"][2]
    assert base["outcome"] == "works" and base["agreement"]["only_draft"] + base["agreement"]["only_target"] == 2
    assert DEMO_DRAFT_MISMATCH not in drafts

    res = CliRunner().invoke(cli, ["check", "--db", str(db), DEMO_TARGET, DEMO_DRAFT_MISMATCH, "--json"])
    verdicts = {e: v["compatible"] for e, v in json.loads(res.output)["verdicts"].items()}
    # Same tokenizer, config vocab_size padded (576 vs 640): the size rules refuse; the Lumen family's
    # byte-fallback tokenizers convert to GGUF (llama-hf path) with equal token lists, so llama.cpp drafts.
    assert verdicts == {"sglang": False, "vllm": False, "transformers": False, "llama.cpp": True, "mlx": True,
                        "lmstudio": True}
    assert res.exit_code == 1
    # The byte-level families have no known BPE pre-tokenizer: convert_hf_to_gguf.py refuses them.
    res = CliRunner().invoke(cli, ["check", "--db", str(db), DEMO_TARGET, "corvid-labs/Corvid-1B", "--json"])
    llama = json.loads(res.output)["verdicts"]["llama.cpp"]
    assert llama["outcome"] == "refused" and "pre-tokenizer was not recognized" in llama["reasons"][0]

    res = CliRunner().invoke(cli, ["check", "--db", str(db), "lumen-ai/Lumen-7B", "corvid-labs/Corvid-1B",
                                   "--json"])
    reasons = json.loads(res.output)["verdicts"]["transformers"]["reasons"]
    assert any("output stays correct" in r for r in reasons)

    # Rerun: incremental, same catalog.
    res = CliRunner().invoke(cli, ["demo", "--no-serve", "--db", str(db)])
    assert res.exit_code == 0, res.output
    assert "unchanged 13" in res.output


def test_demo_reports_a_busy_port_before_building_anything(tmp_path):
    import socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        res = CliRunner().invoke(cli, ["demo", "--db", str(tmp_path / "demo.db"), "--port", str(port)])
    assert res.exit_code == 2 and res.output.startswith("error: cannot listen on")
    assert "demo hub" not in res.output and "http://" not in res.output
    assert not (tmp_path / "demo.db").exists()


def test_demo_prints_urls_that_answer_and_sigint_cleans_up(tmp_path):
    import os
    import signal
    import urllib.request

    from sample_catalog import CliProcess, free_port, port_closed

    port = free_port()
    run = CliProcess(["demo", "--db", str(tmp_path / "demo.db"), "--port", str(port)], tmp_path / "tmp")
    try:
        run.wait_for("home ")
        before = run.lines[:-1]
        assert not any(line.startswith("  ") and "http://" in line for line in before)  # no URL of ours before
        assert any("GET /-/versions.json" in line for line in before)  # ... datasette answered the probe
        for _ in range(3):
            line = run.wait_for("http://")
            url = line.split()[-1]
            with urllib.request.urlopen(url, timeout=10) as r:  # every printed URL answers at once
                assert r.status == 200, url
        os.kill(run.proc.pid, signal.SIGINT)
        assert run.proc.wait(timeout=30) == 0
        assert port_closed(port) and run.session_processes() == []
        assert list((tmp_path / "tmp").iterdir()) == []
    finally:
        run.close()


def test_sigterm_during_the_demo_crawl_stops_the_hub_imitation(tmp_path):
    import os
    import signal

    from sample_catalog import CliProcess, free_port, port_closed

    run = CliProcess(["demo", "--db", str(tmp_path / "demo.db"), "--port", str(free_port())], tmp_path / "tmp")
    try:
        line = run.wait_for("Hub imitation serving at")
        hub_port = int(line.rsplit(":", 1)[1])
        os.kill(run.proc.pid, signal.SIGTERM)
        code = run.proc.wait(timeout=30)
        assert code in (0, 130)  # 130 when it landed before datasette started, 0 after
        assert port_closed(hub_port) and run.session_processes() == []
        assert list((tmp_path / "tmp").iterdir()) == []  # the demo hub's temp dir is gone
    finally:
        run.close()
