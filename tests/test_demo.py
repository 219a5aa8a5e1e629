"""indexer demo --no-serve: offline demo hub → Hub imitation → crawl → compute → catalog."""

from __future__ import annotations

import json
import re
import sqlite3

from click.testing import CliRunner

from indexer.answer.query import run_query
from indexer.cli import cli
from indexer.jobs.demo import DEMO_DRAFT_MISMATCH, DEMO_GATED, DEMO_GATED_COPY, DEMO_TARGET, REPOS, build_demo_hub


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
    tries = [line.split()[1:] for line in res.output.splitlines() if line.startswith("  indexer ")]
    for args in tries:  # the suggested first commands give a clean answer (the check one exited 1)
        if args[0] in ("query", "check"):
            tried = CliRunner().invoke(cli, args)
            assert tried.exit_code == 0, (args, tried.output)
    con = sqlite3.connect(db)
    statuses = dict(con.execute("SELECT repo_id, status FROM repos"))
    assert len(statuses) == len(REPOS)
    assert statuses[DEMO_GATED] == "ok" and statuses["corvid-labs/Corvid-70B-Instruct"] == "gated"
    reason = con.execute("SELECT reason FROM repos WHERE repo_id = ?", (DEMO_GATED,)).fetchone()[0]
    assert DEMO_GATED_COPY in reason and f"gated {DEMO_GATED}: ok" in res.output
    # GGUF-only repos: their own facts, read from one GGUF header each
    assert statuses["lumen-ai/Lumen-7B-Instruct-GGUF"] == "ok"
    reason = con.execute("SELECT reason FROM repos WHERE repo_id = 'lumen-ai/Lumen-7B-Instruct-GGUF'").fetchone()[0]
    assert "Lumen-7B-Instruct-Q4_K_M.gguf" in reason and "smallest of 2 GGUF model files" in reason
    assert con.execute("SELECT count(*) FROM compat_classes").fetchone()[0] > 0
    con.close()

    res = CliRunner().invoke(cli, ["query", "--db", str(db), "--target", DEMO_TARGET, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    drafts = [d["repo_id"] for d in out["drafts"]]
    # Ranked by the expected speed-up: the same mapping, the fine-tune of another author, then the base model whose
    # vocabulary agrees (it lacks the chat tokens, flagged; a base draft for a chat target accepts less); the
    # target's own base (its size) is no draft.
    assert drafts == ["lumen-ai/Lumen-0.5B-Instruct", "quietfox/Lumen-0.5B-Instruct-sft", "lumen-ai/Lumen-0.5B"]
    base = out["drafts"][2]
    assert base["outcome"] == "works" and base["agreement"]["only_draft"] + base["agreement"]["only_target"] == 2
    assert DEMO_DRAFT_MISMATCH not in drafts

    # the gated original is a target like any other: its facts came from its public copy
    res = CliRunner().invoke(cli, ["query", "--db", str(db), "--target", DEMO_GATED, "--json"])
    assert res.exit_code == 0 and DEMO_TARGET in [d["repo_id"] for d in json.loads(res.output)["drafts"]]

    res = CliRunner().invoke(cli, ["check", "--db", str(db), DEMO_TARGET, DEMO_DRAFT_MISMATCH, "--json"])
    verdicts = {e: v["compatible"] for e, v in json.loads(res.output)["verdicts"].items()}
    # Same tokenizer, config vocab_size padded (576 vs 640): the size rules refuse; the Lumen family's
    # byte-fallback tokenizers convert to GGUF (llama-hf path) with equal token lists, so llama.cpp drafts.
    assert verdicts == {"sglang": False, "vllm": False, "transformers": False, "llama.cpp": True, "mlx": True,
                        "lmstudio": True, "ollama": False}  # Ollama runs no draft model
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
    assert "new 0, changed 0" in res.output and "failed 0" in res.output
    crawled = next(line for line in res.output.splitlines() if line.startswith("crawled: "))
    assert " (modified since the last crawl), " in crawled  # a short listing says why it is short
    assert crawled.endswith(f"catalog: {len(REPOS)} repos, statuses: gated 1, ok {len(REPOS) - 1}")

    # llama.cpp with GGUF repos: the draft's quant works, the fine-tune's quant (a renamed chat token) does not
    res = CliRunner().invoke(cli, ["query", "--db", str(db), "--target", "lumen-ai/Lumen-7B-Instruct-GGUF",
                                   "--engine", "llama.cpp", "--all", "--json"])
    out = json.loads(res.output)
    drafts = {d["repo_id"]: d for d in out["drafts"]}
    assert "lumen-ai/Lumen-0.5B-Instruct-GGUF" in drafts and "quietfox/Lumen-0.5B-Instruct-sft-GGUF" not in drafts
    best = drafts["lumen-ai/Lumen-0.5B-Instruct-GGUF"]
    assert best["launch"] == (  # the draft tokens the estimate assumed
        "llama-server -hf lumen-ai/Lumen-7B-Instruct-GGUF:Q4_K_M -hfd lumen-ai/Lumen-0.5B-Instruct-GGUF:Q8_0 "
        f"--spec-type draft-simple --spec-draft-n-max {best['speedup']['draft_tokens']}")
    misses = run_query("lumen-ai/Lumen-7B-Instruct-GGUF", engine="llama.cpp", db=str(db), near_misses=True)
    sft = next(m for m in misses["near_misses"] if m["repo_id"] == "quietfox/Lumen-0.5B-Instruct-sft-GGUF")
    assert sft["outcome"] == "no_speculation" and "converted from the target's tokenizer" in sft["fix"]
    res = CliRunner().invoke(cli, ["check", "--db", str(db), "lumen-ai/Lumen-7B-Instruct-GGUF",
                                   "quietfox/Lumen-0.5B-Instruct-sft-GGUF", "--engine", "llama.cpp", "--json"])
    assert res.exit_code == 1
    assert "text differs" in json.loads(res.output)["verdicts"]["llama.cpp"]["reasons"][0]


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
        run.wait_for("repos ")
        printed = run.lines[len(before):]
        # one block of URLs: the readiness probe is a TCP connect, so no access-log line lands among them
        assert len(printed) == 4 and all(line.startswith("  ") and "http://" in line for line in printed), printed
        assert not any("GET /" in line for line in run.lines)
        for line in printed[1:]:
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
        assert code in (0, 143)  # 143 (SIGTERM) when it landed before datasette started, 0 after
        assert port_closed(hub_port) and run.session_processes() == []
        assert list((tmp_path / "tmp").iterdir()) == []  # the demo hub's temp dir is gone
    finally:
        run.close()


def test_demo_works_offline_and_a_plain_query_points_to_its_catalog(tmp_path, monkeypatch):
    """HF_HUB_OFFLINE=1 (read by huggingface_hub at import into constants.HF_HUB_OFFLINE) does not stop the
    demo, which talks only to its own 127.0.0.1 hub; afterwards `indexer query` without --db names it."""
    from huggingface_hub import constants

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    res = CliRunner().invoke(cli, ["demo", "--no-serve"])
    assert res.exit_code == 0, res.output
    assert constants.HF_HUB_OFFLINE is True  # lifted for the demo crawl only
    statuses = re.search(r"statuses: ((?:[a-z_]+ \d+, )*[a-z_]+ \d+)\n", res.output)  # words, not a dict
    assert statuses and "{" not in res.output, res.output
    assert sum(int(part.split()[1]) for part in statuses[1].split(", ")) == len(REPOS)
    res = CliRunner().invoke(cli, ["query", "--target", DEMO_TARGET])
    assert res.exit_code == 2
    assert "the demo catalog is data/demo.db: add --db data/demo.db" in res.output


def test_serve_on_an_address_of_another_machine_says_so(catalog):
    # 192.0.2.1 is TEST-NET-1 (RFC 5737): never a local address; binding fails locally, nothing is sent
    res = CliRunner().invoke(cli, ["serve", "--db", catalog, "--host", "192.0.2.1", "--port", "8765"])
    assert res.exit_code == 2
    assert "not an address of this machine" in res.output and "another server" not in res.output


def test_the_demo_keeps_its_hub_dataset_beside_the_catalog_so_pull_can_be_repeated(demo_catalog, tmp_path):
    """Issue 30: the demo published to the imitation's dataset demo/catalog and deleted it when it stopped, so
    `indexer pull --from demo/catalog` could not be tried. Its datasets stay in demo-datasets/ beside the
    catalog, and `python -m indexer.hubsim DIR --datasets DIR` serves them, as often as asked."""
    import os
    import subprocess
    import sys

    from indexer.jobs.demo import DEMO_DATASET, demo_datasets_dir

    datasets = demo_datasets_dir(str(demo_catalog))
    assert datasets == demo_catalog.parent / "demo-datasets" and datasets.is_dir()
    hub = subprocess.Popen([sys.executable, "-m", "indexer.hubsim", str(demo_catalog.parent / "demo-hub"),
                            "--datasets", str(datasets), "--port", "0"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
    try:
        endpoint = hub.stdout.readline().strip()
        dest = tmp_path / "pulled" / "catalog.db"
        dest.parent.mkdir()
        for want in ("pulled", "unchanged"):
            res = CliRunner().invoke(cli, ["pull", "--from", DEMO_DATASET, "--db", str(dest), "--endpoint", endpoint,
                                           "--json"], env={**os.environ, "HF_TOKEN": ""})
            assert res.exit_code == 0, res.output
            assert json.loads(res.output)["status"] == want
    finally:
        hub.terminate()
        hub.wait(timeout=10)
    assert datasets.is_dir()  # the imitation left the folder it was given
    res = CliRunner().invoke(cli, ["query", "--db", str(dest), "--target", DEMO_TARGET, "--offline"])
    assert res.exit_code == 0 and "lumen-ai/Lumen-0.5B-Instruct" in res.output
