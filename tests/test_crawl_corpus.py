"""End to end over the real corpus served by hubsim: crawl, compute, query, check vs. oracle.json."""

from __future__ import annotations

import itertools
import json

import pytest
from click.testing import CliRunner
from conftest import needs_corpus, works_on_sglang
from crawlkit import repos
from test_engines_oracle import config_context

from indexer.answer.rule_inputs import side_from_catalog
from indexer.cli import cli
from indexer.engines.rules import sglang
from indexer.hubsim.repos import split_flat_name

pytestmark = needs_corpus


@pytest.fixture(scope="module")
def crawled(corpus_crawl, oracle):
    c = corpus_crawl  # every real-Hub behaviour on, as by default: anonymous quotas, Xet headers, expand validation
    assert c["xet"] and c["limits"] is not None and c["limits"].anonymous == {"api": 500, "resolvers": 3000}
    ids = {name: "/".join(split_flat_name(name)) for name in oracle["models"]}
    return c["db"], c["summary"], ids, c["recrawl"], c["recrawl_counts"]


def test_corpus_crawl_matches_oracle(crawled, oracle):
    db, summary, ids, recrawl, counts = crawled
    rows = repos(db)
    assert summary["listed"] == len(rows) >= len(ids)
    for name, facts in oracle["models"].items():
        row = rows[ids[name]]
        assert row["status"] == "ok", (name, row["reason"])
        assert row["vocab_sha"] == facts["vocab_sha256"], name
        assert row["vocab_size_transformers"] == facts["vocab_size"], name
    assert summary["rate_limited"] == {"api": 0, "resolvers": 0}
    # an unchanged recrawl costs nothing beyond listing pages
    assert recrawl["unchanged"] == summary["listed"] and recrawl["new"] == recrawl["changed"] == 0
    assert counts["api"] == counts["list"] and counts["resolve_head"] + counts["resolve_get"] == 0

    def sglang_ok(t, d):
        return t["vocab_size"] == d["vocab_size"] and t["vocab_sha"] == d["vocab_sha"]

    names = sorted(oracle["models"])
    ours = {(t, d) for t, d in itertools.permutations(names, 2) if sglang_ok(rows[ids[t]], rows[ids[d]])}
    assert ours == {tuple(p) for p in oracle["pairs"]["compatible"]}


def shorter_context(t: str, d: str) -> bool:
    """SGLang refuses a draft whose config states a shorter context than the target's (its
    architecture row; tests/test_engines_oracle.py checks the row fires exactly there)."""
    return (config_context(t) or 2048) > (config_context(d) or 2048)


def test_query_all_returns_exactly_the_oracle_compatible_drafts(crawled, oracle):
    db, _, ids, _, _ = crawled
    compatible: dict[str, set] = {name: set() for name in oracle["models"]}
    for t, d in works_on_sglang(oracle):
        if not shorter_context(t, d):  # the vocabulary oracle's pairs, less those SGLang's context check refuses
            compatible[t].add(ids[d])
    runner = CliRunner()
    for name in oracle["models"]:
        result = runner.invoke(cli, ["query", "--db", db, "--target", ids[name], "--all", "--json"])
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["engine"] == "sglang"
        assert {d["repo_id"] for d in data["drafts"]} == compatible[name], name


def test_check_by_repo_id_agrees_with_oracle_on_every_pair(crawled, oracle):
    db, _, ids, _, _ = crawled
    sides = {name: side_from_catalog(ids[name], db=db) for name in oracle["models"]}
    works = works_on_sglang(oracle)
    assert len(works) > len(oracle["pairs"]["compatible"])
    for t, d in itertools.permutations(sorted(sides), 2):
        assert sglang(sides[t], sides[d]).compatible == ((t, d) in works), (t, d)
    t, d = next(p for p in oracle["pairs"]["compatible"] if not shorter_context(*p))
    result = CliRunner().invoke(cli, ["check", "--db", db, ids[t], ids[d], "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["verdicts"]["sglang"]["compatible"]
    t, d = next(p for p in oracle["pairs"]["mapping_mismatch"] if tuple(p) not in works)
    result = CliRunner().invoke(cli, ["check", "--db", db, ids[t], ids[d], "--verbose"])
    assert result.exit_code == 1 and "USELESS" in result.stdout and "slower than none" in result.stdout
