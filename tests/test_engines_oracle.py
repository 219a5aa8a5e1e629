"""Every engine's verdict for every ordered pair of ../shared/corpus equals oracle-engines.json, through
local directories and through catalog repo ids after a crawl of the corpus; query --all agrees with check."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CORPUS, MODELS, needs_corpus

from indexer.answer.query import QueryError, run_query
from indexer.answer.rule_inputs import side_from_catalog
from indexer.catalog.compute import compute
from indexer.cli import cli
from indexer.engines import ENGINES, Verdict
from indexer.engines import verdicts as engine_verdicts
from indexer.hubsim.repos import split_flat_name

pytestmark = needs_corpus

# (engine, verdict field) -> the oracle's pair list; "works" (compatible) is accepted with agreeing
# vocabularies (oracle-agreement.json), except on llama.cpp.
ACCEPTED = {"sglang": "sglang_launches", "vllm": "vllm", "transformers": "transformers", "llama.cpp": "llama.cpp",
            "mlx": "mlx", "lmstudio": "lmstudio"}
COMPATIBLE = {"sglang": "sglang", "transformers": "transformers_same_tokenizer", "llama.cpp": "llama.cpp"}
GGUF_FACTS = ("converted", "vocab_type_name", "n_vocab", "add_bos", "add_eos", "bos", "eos")


@pytest.fixture(scope="module")
def engines_oracle() -> dict:
    return json.loads((CORPUS / "oracle-engines.json").read_text())


def expected(engines_oracle: dict) -> dict:
    """(engine, field) -> set of ordered pairs where it is true."""
    pairs = engines_oracle["pairs"]
    models = engines_oracle["models"]
    out = {(e, "accepted"): {tuple(p) for p in pairs[o]["accept"]} for e, o in ACCEPTED.items()}
    # A started pair works when its vocabularies agree (oracle-agreement.json's class); llama.cpp keeps
    # its own rule (every token text from id 5 equal).
    agree = json.loads((CORPUS / "oracle-agreement.json").read_text())["pairs"]
    agreeing = {(p["target"], p["draft"]) for p in agree if p["cls"] in ("identical", "works")}
    for e in ACCEPTED:  # the oracle's engines (Ollama is not among them: see test_ollama_refuses_every_corpus_pair)
        if e == "llama.cpp":
            out[(e, "compatible")] = {tuple(p) for p in pairs[COMPATIBLE[e]]["accept"]}
        else:
            out[(e, "compatible")] = out[(e, "accepted")] & agreeing
            assert {(t, d) for t, d in out[(e, "accepted")]
                    if models[t]["vocab_sha256"] == models[d]["vocab_sha256"]} <= out[(e, "compatible")]
    return out


def vocabulary_verdict(v: Verdict) -> Verdict:
    """The verdict of the vocabulary rule alone: what the oracle measured (its ``rules``: the pair rules are
    vocabulary-level; the architecture rows come on top, tested in test_arch.py and below)."""
    return Verdict(v.vocabulary or v.outcome, v.reasons)


# The releases the oracle's engine rules were read at (the verdicts at the old pins stay the oracle's).
OLD_PINS = {"transformers": "5.24.0", "vllm": "0.33.0", "mlx": "d78bf58e"}



_VERDICTS: dict = {}  # (sides, target, draft, releases) -> every engine's verdict: each pair is judged once a run


def verdicts(t, d, releases: dict | None = None) -> dict[str, Verdict]:
    """:func:`indexer.engines.verdicts` of a pair of the module's sides, memoised (the tests read, never change,
    the verdicts; several tests walk all 552 pairs, at and before the pins)."""
    key = (id(t), id(d), tuple(sorted((releases or {}).items())))
    if key not in _VERDICTS:
        _VERDICTS[key] = (t, d, engine_verdicts(t, d, releases))  # t and d kept: their ids stay theirs
    return _VERDICTS[key][2]


def agreement(sides: dict, engines_oracle: dict, releases: dict | None = None) -> dict:
    """(engine, field) -> list of disagreeing pairs, over every ordered pair."""
    want = expected(engines_oracle)
    bad: dict = {key: [] for key in want}
    for t, d in itertools.permutations(sorted(sides), 2):
        got = verdicts(sides[t], sides[d], releases)
        for (engine, field), pairs in want.items():
            if getattr(vocabulary_verdict(got[engine]), field) != ((t, d) in pairs):
                bad[(engine, field)].append((t, d, got[engine].reasons))
    return bad


def config_context(name: str) -> int | None:
    """A corpus model's context length read plainly from its config.json (its text_config when it has one):
    max_position_embeddings (GPT-2's n_positions) times a linear rope factor; None when neither is stated."""
    c = json.loads((MODELS / name / "config.json").read_text())
    c = c.get("text_config") or c
    n = c.get("max_position_embeddings") or c.get("n_positions")
    rope = c.get("rope_scaling") or {}
    return int(n * (rope.get("factor") or 1)) if n and rope.get("type", rope.get("rope_type")) in (None, "linear",
                                                                                            "default", "mrope") \
        else n


def assert_architecture_rows(sides: dict, releases: dict | None = None) -> None:
    """On the corpus (plain text models), the only row that changes an outcome is SGLang's shorter draft context,
    exactly for the pairs whose draft states a shorter context than the target; every changed verdict names it."""
    changed = {}
    for t, d in itertools.permutations(sorted(sides), 2):
        for engine, v in verdicts(sides[t], sides[d], releases).items():
            if v.vocabulary is not None and v.vocabulary != v.outcome:
                changed[(engine, t, d)] = v
                assert v.reasons[0].endswith("standalone_worker_v2.py:86-93)"), (engine, t, d, v.reasons)
    want = {("sglang", t, d) for t, d in itertools.permutations(sorted(sides), 2)
            if ENGINES["sglang"].rule(sides[t], sides[d]).outcome != "refused"  # the vocabulary rule alone
            and (config_context(t) or 2048) > (config_context(d) or 2048)}
    assert set(changed) == want


def assert_gguf_facts(sides: dict, engines_oracle: dict) -> None:
    for name, side in sides.items():
        want = engines_oracle["models"][name]["gguf"]
        g = side.gguf
        assert g is not None, (name, side.gguf_missing)
        got = {"converted": g.converted, "vocab_type_name": g.vocab_type, "n_vocab": g.n_vocab,
               "add_bos": g.add_bos, "add_eos": g.add_eos, "bos": g.bos, "eos": g.eos}
        if not want["converted"]:
            assert not g.converted and g.error, name
            continue
        assert got == {k: want[k] for k in GGUF_FACTS}, name
        assert g.tokens_sha256() == want["tokens_sha256"], name


@pytest.fixture(scope="module")
def local_sides(engines_oracle, corpus_sides):
    return {name: corpus_sides[name] for name in engines_oracle["models"]}


def test_every_pair_and_engine_equals_the_oracle_from_local_directories(local_sides, engines_oracle):
    assert_architecture_rows(local_sides)
    n = len(local_sides) * (len(local_sides) - 1)
    assert n == 552
    bad = agreement(local_sides, engines_oracle)
    assert {key: len(v) for key, v in bad.items() if v} == {}, {k: v[:3] for k, v in bad.items() if v}
    assert_gguf_facts(local_sides, engines_oracle)


def test_the_old_pins_give_the_oracle_s_verdicts(local_sides, engines_oracle):
    """--engine-version at the releases the oracle was made at: every pair and engine as before."""
    assert_architecture_rows(local_sides, OLD_PINS)
    bad = agreement(local_sides, engines_oracle, OLD_PINS)
    assert {key: len(v) for key, v in bad.items() if v} == {}, {k: v[:3] for k, v in bad.items() if v}
    for t, d in itertools.permutations(sorted(local_sides), 2):
        old, new = verdicts(local_sides[t], local_sides[d], OLD_PINS), verdicts(local_sides[t], local_sides[d])
        for engine, release in OLD_PINS.items():
            assert old[engine].version == release and new[engine].version == ENGINES[engine].releases[-1]
            assert old[engine].outcome == new[engine].outcome, (engine, t, d)  # plain text models: no row differs


def test_ollama_refuses_every_corpus_pair(local_sides):
    """Ollama launches every non-DFlash DRAFT as draft-mtp (llm/llama_server.go:826-835): none of the corpus's plain
    models is an MTP or DFlash drafter, so no pair runs."""
    for t, d in itertools.permutations(sorted(local_sides), 2):
        v = verdicts(local_sides[t], local_sides[d])["ollama"]
        assert v.outcome == "refused" and "draft-mtp" in v.reasons[0], (t, d)


def test_mlx_model_type_support_equals_the_oracle(local_sides, engines_oracle):
    from indexer.engines import mlx_model_type_supported

    for name, side in local_sides.items():
        assert mlx_model_type_supported(side.model_type) == engines_oracle["models"][name]["mlx_model_type_supported"]
    t, d = "Alikhan13r__falcon-180B-chat", "Alikhan13r__falcon-180B-chat"
    v = verdicts(local_sides[t], local_sides[d])["mlx"]
    assert v.outcome == "works" and "Model type falcon not supported." in " ".join(v.reasons)


def test_oracle_totals_are_the_issue_numbers(engines_oracle):
    counts = {k: len(v) for k, v in expected(engines_oracle).items()}
    # 32 identical mappings + 16 started pairs that differ yet agree on every token of text
    assert counts[("sglang", "compatible")] == 48 and counts[("sglang", "accepted")] == 64
    assert counts[("vllm", "accepted")] == 64 and counts[("transformers", "compatible")] == 48
    assert counts[("llama.cpp", "accepted")] == 60 and counts[("mlx", "accepted")] == 146


# ---------------------------------------------------------------- through the catalog


@pytest.fixture(scope="module")
def crawled(corpus_crawl, engines_oracle):
    ids = {name: "/".join(split_flat_name(name)) for name in engines_oracle["models"]}
    return corpus_crawl["db"], corpus_crawl["compute"], ids


def test_compute_derives_the_engine_facts_once(crawled, tmp_path):
    from hubkit import copy_catalog

    db, stats, _ = crawled
    assert stats["engine_facts"]["derived"] > 0 and stats["engine_facts"]["blobs_missing"] == 0
    assert stats["llamacpp_pairs"]["compatible"] > 0
    again = compute(str(copy_catalog(Path(db), tmp_path)))  # the shared catalog stays as it is
    assert again["engine_facts"]["derived"] == 0 and again["llamacpp_pairs"]["computed"] == 0


@pytest.fixture(scope="module")
def catalog_sides(crawled, engines_oracle):
    db, _, ids = crawled
    return {name: side_from_catalog(ids[name], db=db) for name in engines_oracle["models"]}


def test_every_pair_and_engine_equals_the_oracle_through_catalog_repo_ids(catalog_sides, engines_oracle):
    sides = catalog_sides
    assert_architecture_rows(sides)  # the facts came through the catalog (engine_facts.arch)
    bad = agreement(sides, engines_oracle)
    assert {key: len(v) for key, v in bad.items() if v} == {}, {k: v[:3] for k, v in bad.items() if v}
    assert_gguf_facts(sides, engines_oracle)


def test_query_all_equals_check_for_every_target_and_engine(crawled, catalog_sides, engines_oracle):
    """One answer everywhere: the drafts `query --all` lists are exactly those `check` says work."""
    db, _, ids = crawled
    names = sorted(engines_oracle["models"])
    sides = catalog_sides
    got = {(t, d): verdicts(sides[t], sides[d]) for t, d in itertools.permutations(names, 2)}
    for engine in ENGINES:
        for t in names:
            works = {ids[d] for d in names if d != t and got[(t, d)][engine].compatible}
            try:
                drafts = run_query(ids[t], engine=engine, all_members=True, db=db)["drafts"]
                listed = {d["repo_id"] for d in drafts if d["outcome"] == "works"}
                degraded = {d["repo_id"] for d in drafts if d["outcome"] == "degraded"}
                assert degraded == {ids[d] for d in names if d != t
                                    and got[(t, d)][engine].outcome == "degraded"}, (engine, t)
            except QueryError as e:  # no class for this engine: check must agree that nothing works
                assert works == set() and "class" in e.message, (engine, t, e.message)
                continue
            assert listed == works, (engine, t)
    # The CLI is the same function: one target per engine through `indexer query --all --json`.
    t = "gmars__CodeFuse-CodeLlama-34B"
    for engine in ENGINES:
        res = CliRunner().invoke(cli, ["query", "--db", db, "--target", ids[t], "--engine", engine, "--all", "--json"])
        assert res.exit_code == 0, res.output
        works = {ids[d] for d in names if d != t and got[(t, d)][engine].compatible}
        assert {d["repo_id"] for d in json.loads(res.stdout)["drafts"] if d["outcome"] == "works"} == works, engine


def test_check_by_repo_id_exits_on_the_chosen_engine(crawled, engines_oracle):
    db, _, ids = crawled
    t, d = next(p for p in engines_oracle["llama.cpp_vs_same_tokenizer"]["llama.cpp_accepts_only"])
    runner = CliRunner()
    res = runner.invoke(cli, ["check", "--db", db, ids[t], ids[d], "--json"])
    assert res.exit_code == 1  # SGLang: different size or mapping
    data = json.loads(res.stdout)
    assert data["verdicts"]["llama.cpp"] == {**data["verdicts"]["llama.cpp"], "outcome": "works", "accepted": True}
    assert runner.invoke(cli, ["check", "--db", db, ids[t], ids[d], "--engine", "llama.cpp"]).exit_code == 0
