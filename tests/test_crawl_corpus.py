"""End to end: crawl the real corpus served by hubsim; fingerprints and SGLang verdicts match the oracle."""

from __future__ import annotations

import itertools

from conftest import MODELS, needs_corpus
from crawlkit import crawl, repos

from indexer.hubsim import HubServer
from indexer.hubsim.repos import split_flat_name


@needs_corpus
def test_corpus_crawl_matches_oracle(catalog, oracle):
    with HubServer(str(MODELS)) as hub:
        summary = crawl(catalog, hub)
    rows = repos(catalog)
    ids = {name: "/".join(split_flat_name(name)) for name in oracle["models"]}
    assert summary["listed"] == len(rows) >= len(ids)
    for name, facts in oracle["models"].items():
        row = rows[ids[name]]
        assert row["status"] == "ok", (name, row["reason"])
        assert row["vocab_sha"] == facts["vocab_sha256"], name
        assert row["vocab_size_transformers"] == facts["vocab_size"], name

    def sglang_ok(t, d):
        return t["vocab_size"] == d["vocab_size"] and t["vocab_sha"] == d["vocab_sha"]

    names = sorted(oracle["models"])
    ours = {(t, d) for t, d in itertools.permutations(names, 2) if sglang_ok(rows[ids[t]], rows[ids[d]])}
    assert ours == {tuple(p) for p in oracle["pairs"]["compatible"]}
