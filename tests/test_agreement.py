"""How far two vocabularies agree: small tokenizers built here, and the corpus oracle."""

from __future__ import annotations

import json

import pytest
from conftest import CORPUS, MODELS
from tokfactory import make_text_model

from indexer.answer.localdir import side_from_dir
from indexer.catalog.tokenstore import TokenStore
from indexer.engines.rules import check_pair
from indexer.vocab import agreement as agr
from indexer.vocab.tokenbox import TokenizerBox

CHAT = ["<|begin|>", "<|reserved_0|>", "<|reserved_1|>", "<|eot|>", "<|reserved_2|>"]
STARTERS = ("sglang", "vllm", "transformers", "mlx", "lmstudio")  # engines that never compare token lists


def pair(tmp_path, target_kw, draft_kw):
    t = side_from_dir(make_text_model(tmp_path / "t", **target_kw))
    d = side_from_dir(make_text_model(tmp_path / "d", **draft_kw))
    return check_pair(t, d)


def outcomes(r) -> set[str]:
    return {r["verdicts"][e]["outcome"] for e in STARTERS}


def test_thresholds_live_in_one_place():
    assert (agr.WORKS_AT, agr.DEGRADED_AT) == (0.99, 0.5)
    assert [agr.grade(x) for x in (1.0, 0.99, 0.989, 0.5, 0.499, 0.0)] == \
        ["works", "works", "degraded", "degraded", "useless", "useless"]


def test_renamed_reserved_token_works_and_names_it(tmp_path):
    # Llama 3.0 -> 3.1: a reserved token gets a name; every id of text keeps its meaning.
    r = pair(tmp_path, {"added": CHAT}, {"added": CHAT, "rename": {601: "<|python_tag|>"}})
    assert outcomes(r) == {"works"}
    a = r["agreement"]
    assert (a["ids_differ"], a["only_target"], a["only_draft"], a["text_agreement"]) == (1, 0, 0, 1.0)
    assert a["examples"] == [{"id": 601, "target": "<|reserved_0|>", "draft": "<|python_tag|>"}]
    assert "1 token differ" in r["verdicts"]["sglang"]["reasons"][0]
    assert "drafting one of the differing tokens is rejected" in r["verdicts"]["vllm"]["reasons"][0]
    assert all(r["verdicts"][e]["compatible"] for e in STARTERS)


def test_renamed_eos_is_warned(tmp_path):
    r = pair(tmp_path, {"added": CHAT, "eos": "<|eot|>"}, {"added": CHAT, "rename": {603: "<|eom|>"}})
    assert outcomes(r) == {"works"}
    assert r["agreement"]["warnings"] == ["the target's eos token '<|eot|>' (id 603) means '<|eom|>' in the draft"]
    assert any(x.startswith("warning: the target's eos token") for x in r["verdicts"]["sglang"]["reasons"])


@pytest.mark.parametrize("side", ["target", "draft"])
def test_appended_added_tokens_on_either_side_work(tmp_path, side):
    more, fewer = {"added": CHAT + ["<think>", "</think>"]}, {"added": CHAT, "vocab_size": 607}
    r = pair(tmp_path, more, fewer) if side == "target" else pair(tmp_path, {**fewer, "vocab_size": 607}, more)
    assert outcomes(r) == {"works"}
    a = r["agreement"]
    assert (a["only_target"], a["only_draft"]) == ((2, 0) if side == "target" else (0, 2))
    assert a["text_agreement"] == 1.0 and a["ids_differ"] == 0
    assert (len(a["warnings"]) == 2) == (side == "target")  # the target's own special tokens are missing


def test_swapped_chat_token_ids_work_with_a_warning(tmp_path):
    r = pair(tmp_path, {"added": CHAT}, {"added": CHAT, "swap": ("<|begin|>", "<|eot|>")})
    assert outcomes(r) == {"works"}
    assert r["agreement"]["ids_differ"] == 2 and len(r["agreement"]["warnings"]) == 2
    assert r["fixes"]["sglang"] is None and "copy the target's tokenizer files" not in json.dumps(r)


def test_code_tokenizer_with_whitespace_tokens_is_degraded(tmp_path):
    spaces = ["    ", "        ", "            ", "\n    ", "\n        "]
    r = pair(tmp_path, {"plain_added": spaces}, {"vocab_size": 605})
    assert outcomes(r) == {"degraded"}
    a = r["agreement"]
    assert agr.DEGRADED_AT <= a["text_agreement"] < agr.WORKS_AT and a["ids_agreement"] > 0.99
    assert all(r["verdicts"][e]["accepted"] and not r["verdicts"][e]["compatible"] for e in STARTERS)
    assert f"{a['text_agreement']:.1%}" in r["verdicts"]["sglang"]["reasons"][0]
    # The other direction: the target never emits the whitespace ids, so the draft's extra ids cost nothing.
    back = check_pair(side_from_dir(tmp_path / "d"), side_from_dir(tmp_path / "t"))
    assert back["agreement"]["text_agreement"] == 1.0 and back["verdicts"]["sglang"]["outcome"] == "works"


def test_unrelated_vocabulary_of_the_same_size_is_useless(tmp_path):
    r = pair(tmp_path, {}, {"shuffle": 7})
    assert outcomes(r) == {"useless"}
    assert r["agreement"]["text_agreement"] < 0.05 and r["agreement"]["ids_common"] == r["agreement"]["ids_target"]
    assert r["fixes"]["sglang"] is None  # SGLang has no TLI (PR #22883 is open)
    assert r["fixes"]["vllm"] is None  # nor has vLLM since 0.34.0; 0.33.0 had use_heterogeneous_vocab
    old = check_pair(side_from_dir(tmp_path / "t"), side_from_dir(tmp_path / "d"), {"vllm": "0.33.0"})
    assert "use_heterogeneous_vocab" in old["fixes"]["vllm"]


def test_counts_are_stored_per_vocabulary_and_stale_text_is_ignored(tmp_path):
    path = make_text_model(tmp_path / "m")
    store = TokenStore(tmp_path / "tokens")
    sha = "ab" * 32
    with TokenizerBox() as box:
        assert box.store_counts(store, sha, path) is None
        # transformers cannot load it: nothing stored, no reason (the grade rests on ids)
        assert box.store_counts(store, "cd" * 32, tmp_path / "missing") is None
    counts = store.get_counts(sha, agr.reference_sha256())
    assert counts == agr.count_text(path) and sum(counts.values()) > 10_000
    assert store.get_counts(sha, "0" * 64) is None  # counted over another text: stale
    assert store.get_counts("cd" * 32, agr.reference_sha256()) is None


def test_without_counts_the_grade_rests_on_ids_and_says_so():
    t = {"a": 0, "b": 1, "c": 2}
    a = agr.agreement(t, {"a": 0, "b": 1, "x": 2})
    assert a["basis"] == "ids" and a["text_agreement"] is None and a["ids_agreement"] == pytest.approx(2 / 3)
    assert a["class"] == "degraded" and "text agreement unknown" in agr.summary(a)
    assert agr.agreement(t, dict(t))["class"] == "identical"
    assert agr.invert({"a": 0, "b": 0}) == {0: frozenset({"a", "b"})}


def test_reference_text_is_shipped_with_its_provenance():
    parts = agr.reference_parts()
    assert len(parts) == len(agr.REFERENCE_PARTS) and 100_000 < sum(len(p.encode()) for p in parts) < 400_000
    from importlib import resources

    readme = (resources.files("indexer.vocab") / "reference_text" / "README.md").read_text()
    for name in agr.REFERENCE_PARTS:
        assert f"`{name}`" in readme
    assert "GPL-3+" in readme and "PSF" in readme
    assert any("def " in p for p in parts) and any("\u4e00" <= ch <= "\u9fff" for ch in parts[2])


def test_the_reference_text_s_hash_is_the_text_s():
    """reference_sha256() is a constant (no text read on the query path): it must name the shipped text."""
    import hashlib

    h = hashlib.sha256()
    for part in agr.reference_parts():
        h.update(part.encode("utf-8") + b"\0")
    assert agr.reference_sha256() == agr.REFERENCE_SHA256 == h.hexdigest()


# ---------------------------------------------------------------- the corpus oracle


@pytest.fixture(scope="module")
def oracle_agreement():
    path = CORPUS / "oracle-agreement.json"
    if not path.is_file():
        pytest.skip("../shared/corpus is absent")
    return json.loads(path.read_text())


def test_counts_and_classes_equal_the_oracle_for_every_pair(oracle_agreement):
    from indexer.vocab.fingerprint import fingerprint_dir

    fps, counts = {}, {}
    for name in {n for p in oracle_agreement["pairs"] for n in (p["target"], p["draft"])}:
        fps[name] = fingerprint_dir(MODELS / name)
    near = 0
    for p in oracle_agreement["pairs"]:
        t, d = fps[p["target"]], fps[p["draft"]]
        if p["target"] not in counts:
            counts[p["target"]] = agr.count_text(MODELS / p["target"])
        a = agr.agreement(t.vocab, d.vocab, counts[p["target"]], agr.special_ids(t.to_dict()))
        key = (p["target"], p["draft"])
        assert a["identical"] == p["identical"], key
        assert (a["ids_common"], a["ids_differ"], a["only_target"], a["only_draft"]) == \
            (p["ids_common"], p["ids_differ"], p["only_target"], p["only_draft"]), key
        th = oracle_agreement["thresholds"]
        if p["identical"] or abs(p["text_agree"] - th["works"]) > 0.03 and abs(p["text_agree"] - th["degraded"]) > 0.03:
            assert a["class"] == p["cls"], (key, a["text_agreement"], p["text_agree"])
        else:  # measured on another text: within 0.03 of a threshold either neighbouring class is right
            near = "works" if abs(p["text_agree"] - th["works"]) <= 0.03 else "degraded"
            assert a["class"] in ({"works", "degraded"} if near == "works" else {"degraded", "useless"}), key


# ---------------------------------------------------------------- crawl, compute, query, check: one answer

SPACES = ["    ", "        ", "            ", "\n    ", "\n        "]
HUB = {  # repo id -> (make_text_model keyword arguments, params)
    "code/Coder-7B": ({"plain_added": SPACES}, 7 * 10**9),  # text falls on its whitespace tokens
    "code/Coder-0.5B": ({"plain_added": SPACES}, 5 * 10**8),  # the same tokenizer
    "base/Base-0.5B": ({"vocab_size": 605}, 4 * 10**8),  # same base vocabulary, no whitespace tokens: degraded
    "chat/Chat-0.3B": ({"added": CHAT}, 3 * 10**8),  # same base and size, other added tokens
    "odd/Shuffled-0.2B": ({"shuffle": 3, "vocab_size": 605}, 2 * 10**8),  # unrelated, same size: useless
}


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    from crawlkit import crawl, set_meta

    from indexer.catalog.compute import compute
    from indexer.catalog.db import upgrade
    from indexer.hubsim import HubServer

    root = tmp_path_factory.mktemp("agreement-hub")
    for repo_id, (kw, params) in HUB.items():
        make_text_model(root / "hub" / repo_id, **kw)
        set_meta(root / "hub", repo_id, params=params)
    db = str(root / "catalog.db")
    upgrade(db)
    with HubServer(str(root / "hub")) as server:
        crawl(db, server)
    return db, compute(db)


def test_counts_are_taken_at_crawl_time_and_compute_measures_what_the_base_rule_cannot(crawled):
    import sqlite3

    from indexer.catalog.tokenstore import default_root

    db, stats = crawled
    store = TokenStore(default_root(db))
    with sqlite3.connect(db) as conn:
        toks = dict(conn.execute("SELECT vocab_sha256, agrees_by_base FROM tokenizers"))
        rows = conn.execute("SELECT grade, basis FROM tokenizer_agreement").fetchall()
    assert len(toks) == 4 and all(store.get_counts(sha, agr.reference_sha256()) for sha in toks)
    assert sorted(toks.values()) == [0, 1, 1, 1]  # only the code tokenizer's text falls on added tokens
    assert stats["agreement"]["measured"] == len(rows) == 2  # the code target against its two same-base drafts
    assert sorted(rows) == [("degraded", "text"), ("degraded", "text")]


def test_query_lists_works_then_degraded_and_agrees_with_check(crawled):
    from indexer.answer.query import render, run_query
    from indexer.answer.rule_inputs import side_from_catalog
    from indexer.engines import verdicts

    db, _ = crawled
    sides = {r: side_from_catalog(r, db=db) for r in HUB}
    for engine in STARTERS:
        for t in HUB:
            drafts = run_query(t, engine=engine, all_members=True, db=db)["drafts"]
            got = {d["repo_id"]: d["outcome"] for d in drafts}
            want = {d: verdicts(sides[t], sides[d])[engine].outcome for d in HUB if d != t}
            assert got == {d: o for d, o in want.items() if o in ("works", "degraded")}, (engine, t)
    result = run_query("code/Coder-7B", db=db, near_misses=True)
    assert [d["outcome"] for d in result["drafts"]] == ["works", "degraded", "degraded"]
    assert result["drafts"][1]["agreement"]["text_agreement"] < agr.WORKS_AT
    # a shuffled vocabulary no fix makes agree on SGLang is no near miss; vLLM 0.33's TLI fixes it
    assert result["near_misses"] == []
    tli = run_query("code/Coder-7B", db=db, near_misses=True, engine="vllm", release="0.33.0")
    assert [m["repo_id"] for m in tli["near_misses"]] == ["odd/Shuffled-0.2B"]
    text = render(result, near_misses=True)
    assert "DEGRADED: " in text and "agree" in text
    chat = run_query("base/Base-0.5B", db=db, all_members=True)["drafts"]
    flagged = next(d for d in chat if d["repo_id"] == "chat/Chat-0.3B")
    assert flagged["outcome"] == "works" and flagged["agreement"]["only_draft"] == 5


def test_query_and_check_give_one_agreement_object(crawled):
    from indexer.answer.query import run_query
    from indexer.answer.rule_inputs import side_from_catalog
    from indexer.engines import pair_agreement

    db, _ = crawled
    sides = {r: side_from_catalog(r, db=db) for r in HUB}
    seen = 0
    for t in HUB:
        for d in run_query(t, all_members=True, db=db)["drafts"]:
            if d["agreement"] is None:
                continue
            want = pair_agreement(sides[t], sides[d["repo_id"]])
            keys = ("class", "text_agreement", "differing_ids", "only_target", "only_draft")
            assert {k: d["agreement"][k] for k in keys} == {k: want[k] for k in keys}, (t, d["repo_id"])
            seen += 1
    assert seen >= 4


def test_a_catalog_crawled_before_counts_is_counted_by_compute(crawled, tmp_path):
    """An old catalog (no counts in the token store, flags never measured) answers, and compute counts it
    from the blob store: the same flags as a fresh crawl."""
    import shutil
    import sqlite3
    from pathlib import Path

    from indexer.catalog.compute import compute

    db, _ = crawled
    old = tmp_path / "old"
    shutil.copytree(Path(db).parent, old)
    old_db = str(old / Path(db).name)
    for path in (old / "tokens").rglob("*.counts.z"):
        path.unlink()
    with sqlite3.connect(old_db) as conn:
        fresh = dict(conn.execute("SELECT id, agrees_by_base FROM tokenizers"))
        conn.execute("UPDATE tokenizers SET agrees_by_base = NULL, agreement_basis = NULL")
        conn.execute("DELETE FROM tokenizer_agreement")
    from indexer.answer.rule_inputs import side_from_catalog

    side = side_from_catalog("code/Coder-7B", db=old_db)
    assert side.counts is None  # check still answers, by ids
    stats = compute(old_db)["agreement"]
    assert stats["recounted"] == 4 and stats["flagged"] == 4
    with sqlite3.connect(old_db) as conn:
        assert dict(conn.execute("SELECT id, agrees_by_base FROM tokenizers")) == fresh
        assert {b for (b,) in conn.execute("SELECT agreement_basis FROM tokenizers")} == {"text"}
    assert side_from_catalog("code/Coder-7B", db=old_db).counts
