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
    assert set(drafts) == {"lumen-ai/Lumen-0.5B-Instruct", "quietfox/Lumen-0.5B-Instruct-sft"}
    assert DEMO_DRAFT_MISMATCH not in drafts

    res = CliRunner().invoke(cli, ["check", "--db", str(db), DEMO_TARGET, DEMO_DRAFT_MISMATCH, "--json"])
    verdicts = {e: v["compatible"] for e, v in json.loads(res.output)["verdicts"].items()}
    # The demo's tiny byte-level BPEs have no known pre-tokenizer: convert_hf_to_gguf.py refuses them.
    assert verdicts == {"sglang": False, "vllm": False, "transformers": False, "llama.cpp": False, "mlx": True,
                        "lmstudio": True}
    assert res.exit_code == 1

    res = CliRunner().invoke(cli, ["check", "--db", str(db), "lumen-ai/Lumen-7B", "corvid-labs/Corvid-1B",
                                   "--json"])
    reasons = json.loads(res.output)["verdicts"]["transformers"]["reasons"]
    assert any("output stays correct" in r for r in reasons)

    # Rerun: incremental, same catalog.
    res = CliRunner().invoke(cli, ["demo", "--no-serve", "--db", str(db)])
    assert res.exit_code == 0, res.output
    assert "unchanged 13" in res.output
