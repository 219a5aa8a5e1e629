"""Engine facts through the crawl path (hubsim + the real client), without ../shared: compute derives the
GGUF vocabulary once per (file set, config blob), llama.cpp's cross-signature pairs, LM Studio's vision
targets and vLLM's ambiguity, and query --all agrees with check for every pair and engine."""

from __future__ import annotations

import itertools
import json
import sqlite3

import pytest
from click.testing import CliRunner
from crawlkit import crawl, set_meta
from test_engines import SPM_WORDS, make_spm

from indexer.answer.query import QueryError, run_query
from indexer.answer.rule_inputs import side_from_catalog
from indexer.catalog.compute import compute
from indexer.catalog.db import upgrade
from indexer.catalog.tokenstore import TokenStore, default_root
from indexer.cli import cli
from indexer.engines import ENGINES, verdicts
from indexer.hubsim import HubServer

B = 10**9
EXTRA = tuple(f"<extra_{i}>" for i in range(100))
REPOS = {  # repo id -> (make_spm keyword arguments, params)
    "spm/Big-7B": ({}, 7 * B),
    "spm/Small-0.5B": ({}, B // 2),
    "spm/Chat-0.4B": ({"added": EXTRA}, B // 3),  # 100 more tokens: llama.cpp only (within 128)
    "spm/Far-0.3B": ({"added": (*EXTRA, *(f"<far_{i}>" for i in range(40)))}, B // 4),  # 140 more: no_speculation
    "spm/Eos-0.2B": ({"added": ("<|eot|>",), "tokenizer_config": {"eos_token": "<|eot|>"}}, B // 5),
    "spm/Vision-7B": ({"config": {"vision_config": {"hidden_size": 8}}}, 7 * B),
    "spm/Ambiguous-0.1B": ({"config": {"decoder": {"vocab_size": len(SPM_WORDS), "num_attention_heads": 4},
                                       "text_config": {"vocab_size": len(SPM_WORDS), "num_attention_heads": 4}}},
                           B // 10),
}


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    root = tmp_path_factory.mktemp("engines-hub")
    hub = root / "hub"
    for repo_id, (kw, params) in REPOS.items():
        make_spm(hub / repo_id, **kw)
        set_meta(hub, repo_id, params=params)
    db = str(root / "catalog.db")
    upgrade(db)
    with HubServer(str(hub)) as server:
        crawl(db, server)
    stats = compute(db)
    return db, stats


def test_engine_facts_are_derived_once_and_tokens_stored(catalog):
    db, stats = catalog
    with sqlite3.connect(db) as conn:
        distinct = conn.execute("SELECT count(*) FROM (SELECT DISTINCT file_set_id, config_blob FROM repos)").fetchone()
    # Big-7B and Small-0.5B have the same files: one derivation for both.
    assert distinct[0] == len(REPOS) - 1
    assert stats["engine_facts"]["derived"] == distinct[0] and stats["engine_facts"]["blobs_missing"] == 0
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT gguf_converted, gguf_n_vocab, gguf_tokens_sha256, has_vision_config, "
                            "text_config_error FROM engine_facts").fetchall()
    store = TokenStore(default_root(db))
    assert all(conv and store.has_tokens(sha) for conv, _, sha, _, _ in rows)
    assert sorted({n for _, n, _, _, _ in rows}) == [len(SPM_WORDS), len(SPM_WORDS) + 1, len(SPM_WORDS) + 100,
                                                     len(SPM_WORDS) + 140]
    assert sum(vis for *_, vis, _ in rows) == 1 and sum(bool(e) for *_, e in rows) == 1
    again = compute(db)
    assert again["engine_facts"]["derived"] == 0 and again["llamacpp_pairs"]["computed"] == 0


def test_llamacpp_pairs_across_signatures(catalog):
    db, stats = catalog
    assert stats["llamacpp_pairs"]["compatible"] >= 2  # Big <-> Chat (100 apart), both directions
    drafts = {d["repo_id"] for d in run_query("spm/Big-7B", engine="llama.cpp", db=db)["drafts"]}
    assert {"spm/Small-0.5B", "spm/Chat-0.4B", "spm/Eos-0.2B"} <= drafts and "spm/Far-0.3B" not in drafts
    misses = run_query("spm/Big-7B", engine="llama.cpp", db=db, near_misses=True)["near_misses"]
    far = next(m for m in misses if m["repo_id"] == "spm/Far-0.3B")
    assert far["outcome"] == "no_speculation" and "difference 140" in far["reason"]
    sglang = {d["repo_id"] for d in run_query("spm/Big-7B", db=db)["drafts"]}
    assert "spm/Chat-0.4B" not in sglang and "spm/Small-0.5B" in sglang


def test_lmstudio_vision_target_gets_no_drafts(catalog):
    db, _ = catalog
    result = run_query("spm/Vision-7B", engine="lmstudio", db=db)
    assert result["drafts"] == [] and "vision_config" in result["refused"]
    assert run_query("spm/Vision-7B", engine="mlx", db=db)["drafts"]
    text = CliRunner().invoke(cli, ["query", "--db", db, "--target", "spm/Vision-7B", "--engine", "lmstudio"]).output
    assert "no drafts: the target's config.json has vision_config" in text


def test_vllm_ambiguous_target_is_explained(catalog):
    db, _ = catalog
    result = run_query("spm/Ambiguous-0.1B", engine="vllm", db=db)  # an answer: vLLM refuses the target itself
    assert result["drafts"] == [] and "get_text_config() is ambiguous" in result["refused"]
    res = CliRunner().invoke(cli, ["check", "--db", db, "spm/Ambiguous-0.1B", "spm/Small-0.5B", "--json",
                                   "--engine", "vllm"])
    assert res.exit_code == 1
    assert json.loads(res.stdout)["verdicts"]["vllm"]["outcome"] == "refused"


def test_query_all_equals_check_for_every_pair_and_engine(catalog):
    db, _ = catalog
    sides = {r: side_from_catalog(r, db=db) for r in REPOS}
    for engine in ENGINES:
        for t in REPOS:
            works = {d for d in REPOS if d != t and verdicts(sides[t], sides[d])[engine].compatible}
            try:
                drafts = run_query(t, engine=engine, all_members=True, db=db)["drafts"]
                listed = {d["repo_id"] for d in drafts if d["outcome"] == "works"}
                degraded = {d["repo_id"] for d in drafts if d["outcome"] == "degraded"}
                assert degraded == {d for d in REPOS if d != t
                                    and verdicts(sides[t], sides[d])[engine].outcome == "degraded"}, (engine, t)
            except QueryError:
                listed = set()
            assert listed == works, (engine, t)
    for t, d in itertools.permutations(["spm/Big-7B", "spm/Chat-0.4B"], 2):
        res = CliRunner().invoke(cli, ["check", "--db", db, t, d, "--engine", "llama.cpp"])
        assert res.exit_code == 0, res.output


def test_llamacpp_pair_evaluations_are_bounded_per_run(catalog):
    from indexer.catalog.compute import compute_llamacpp_pairs
    from indexer.catalog.db import open_catalog

    db, _ = catalog
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT count(*) FROM llamacpp_pairs").fetchone()[0]
        conn.execute("DELETE FROM llamacpp_pairs")
    engine = open_catalog(db)
    try:
        with engine.begin() as conn:
            first = compute_llamacpp_pairs(conn, db, limit=1)
    finally:
        engine.dispose()
    assert first["computed"] == 1 and first["more_left"]
    assert compute(db)["llamacpp_pairs"]["computed"] == before - 1  # the next run does the rest
