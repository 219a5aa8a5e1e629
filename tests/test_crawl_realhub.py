"""The crawler against the imitation with its real-Hub behaviours on, through the real client."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from crawlkit import crawl, hermetic_env, repos, set_meta, snapshot, write_repo

from indexer.catalog.blobstore import MAGIC, BlobStore
from indexer.cli import cli
from indexer.crawl.loop import CrawlFailed
from indexer.hub.client import HubClient, least_seconds
from indexer.hub.listed import base_models_from_tags
from indexer.hubsim import HubServer


@pytest.fixture
def small(tmp_path):
    """Twelve repos; every other one a fine-tune of the first (same tokenizer, own config)."""
    hub = tmp_path / "hub"
    write_repo(hub, "org/base")
    for i in range(11):
        d = write_repo(hub, f"user{i}/ft-{i}", config={"model_type": "llama", "vocab_size": 123, "seed": i})
        assert d.is_dir()
        set_meta(hub, f"user{i}/ft-{i}", baseModels=["org/base"], baseRelation="quantized" if i % 2 else "finetune")
    return hub


def test_base_models_come_from_the_tags_with_their_relation(small, catalog):
    with HubServer(str(small)) as hub:
        summary = crawl(catalog, hub)
        lists = [p for m, p, s in hub.request_log if p.startswith("/api/models?")]
    assert summary["statuses"] == {"ok": 12}
    assert lists and all("sort=lastModified" in p and "baseModels" not in p for p in lists)
    rows = repos(catalog)
    assert json.loads(rows["user1/ft-1"]["base_models"]) == ["org/base"]
    assert json.loads(rows["user1/ft-1"]["base_model_relations"]) == {"org/base": "quantized"}
    assert json.loads(rows["user2/ft-2"]["base_model_relations"]) == {"org/base": "finetune"}
    assert json.loads(rows["org/base"]["base_models"]) is None
    tags = ["base_model:a/b", "base_model:merge:a/b", "base_model:c/d", "base_model:adapter:c/d", "x"]
    assert base_models_from_tags(tags) == (["a/b", "c/d"], {"a/b": "merge", "c/d": "adapter"})


def test_lfs_file_behind_xet_headers_downloads_over_plain_http(small, catalog, tmp_path):
    with HubServer(str(small)) as hub:
        crawl(catalog, hub, all=False, search="org/base")
        paths = [p for m, p, s in hub.request_log]
        gets = [s for m, p, s in hub.request_log if m == "GET" and p.endswith("/tokenizer.json")]
        assert hub.counts["resolve_head"] == 0 and hub.counts["cdn_get"] == 1
    assert repos(catalog)["org/base"]["status"] == "ok"
    assert gets == [302] and not any("xet-read-token" in p for p in paths)  # one GET, LFS redirect followed
    # one blob store, compressed; the client's temporary cache is gone
    store = tmp_path / "blobs"
    assert all(p.read_bytes()[:4] == MAGIC for p in store.iterdir())
    assert not any(p.is_file() for p in (tmp_path / "cache").rglob("*"))


def test_every_entry_point_disables_xet_before_huggingface_hub_is_imported(tmp_path):
    env = hermetic_env(tmp_path)
    env.pop("HF_HUB_DISABLE_XET", None)
    code = ("import {mod}; from huggingface_hub import constants; "
            "print(constants.HF_HUB_DISABLE_XET)")
    for mod in ("indexer.crawl.loop", "indexer.cli", "indexer.jobs.nightly"):
        out = subprocess.run([sys.executable, "-c", code.format(mod=mod)], env=env, capture_output=True,
                             text=True, timeout=60)
        assert out.stdout.strip() == "True", (mod, out.stderr)


def test_pacing_learns_the_announced_quota_and_never_gets_a_429(small, catalog):
    with HubServer(str(small), page_size=4, api_quota=6, resolver_quota=8, window=1) as hub:
        t = time.monotonic()
        summary = crawl(catalog, hub, workers=4)
        wall = time.monotonic() - t
        refused = dict(hub.limits.refused)
    assert summary["statuses"] == {"ok": 12}
    assert summary["quota"]["api"] == {"quota": 6, "window": 1.0, "learned": True}
    assert summary["quota"]["resolvers"]["quota"] == 8
    assert refused == {"api": 0, "resolvers": 0} and summary["rate_limited"] == {"api": 0, "resolvers": 0}
    calls = summary["api_calls"]
    assert calls >= 12 + 4 and wall >= least_seconds(calls, 6, 1.0)  # the quota did pace the run


def test_tier_defaults_before_anything_is_announced():
    with HubClient("http://127.0.0.1:9", token=False) as anon, HubClient("http://127.0.0.1:9", token="hf_x") as tok:
        assert (anon.buckets["api"].quota, anon.buckets["resolvers"].quota) == (500, 3000)
        assert (tok.buckets["api"].quota, tok.buckets["resolvers"].quota) == (1000, 5000)
    with HubClient("http://127.0.0.1:9", token=False, api_budget=7) as fixed:
        fixed.buckets["api"].observe(99, 300, 500, 300, fixed.buckets["api"].window_id)
        assert fixed.buckets["api"].quota == 7  # --api-budget overrides the announcement


def test_a_429_on_the_resolve_get_is_waited_out_not_an_error(small, catalog, no_client_sleep):
    with HubServer(str(small)) as hub:
        # seven 429s in a row: each holds the resolvers bucket until the announced reset, then one more GET
        hub.add_fault("GET", r"/org/base/resolve/.*/tokenizer_config.json", status=429,
                      headers={"Retry-After": "0"}, times=7)
        summary = crawl(catalog, hub, all=False, search="org/base")
        assert not hub.faults
    assert repos(catalog)["org/base"]["status"] == "ok", repos(catalog)["org/base"]["reason"]
    assert summary["rate_limited"]["resolvers"] == 7 and summary["failed"] == 0


def test_a_stalled_answer_is_a_retry_not_a_hung_worker(small, catalog, no_client_sleep):
    with HubServer(str(small)) as hub:
        hub.add_fault("POST", r"/api/models/org/base/paths-info", kind="stall", delay=30)
        hub.add_fault("GET", r"^/api/models$", kind="stall", delay=30)
        t = time.monotonic()
        summary = crawl(catalog, hub, all=False, search="org/base", read_timeout=0.5)
        assert time.monotonic() - t < 20
    assert summary["statuses"] == {"ok": 1} and summary["client_retries"] >= 1


def test_a_failing_listing_is_recorded_and_the_other_scopes_go_on(small, catalog, no_client_sleep):
    set_meta(small, "user3/ft-3", pipeline_tag="image-text-to-text")
    with HubServer(str(small)) as hub:
        hub.add_fault("GET", r"^/api/models$", status=504, times=None, query_regex="pipeline_tag=text-generation")
        summary = crawl(catalog, hub)
    assert summary["status"] == "partial" and summary["listed"] == 1
    assert any("listing pipeline_tag=text-generation failed" in e["reason"] for e in summary["errors"])
    assert set(repos(catalog)) == {"user3/ft-3"}
    with HubServer(str(small)) as hub:
        hub.add_fault("GET", r"^/api/models$", status=504, times=None)
        with pytest.raises(CrawlFailed):
            crawl(catalog, hub)
        result = CliRunner().invoke(cli, ["crawl", "--all", "--endpoint", hub.endpoint, "--db", catalog,
                                          "--quiet", "--no-compute"])
        assert result.exit_code == 1 and "every listing failed" in result.stderr


def test_deleted_and_renamed_repos_become_gone_and_come_back(small, catalog, tmp_path):
    with HubServer(str(small)) as hub:
        crawl(catalog, hub)
        hub.delete_repo("user0/ft-0")
        hub.rename_repo("user1/ft-1", "user1/renamed")
        summary = crawl(catalog, hub)
        assert summary["gone"] == 2 and summary["new"] == 1
        rows = repos(catalog)
        assert rows["user0/ft-0"]["status"] == "gone" and rows["user1/ft-1"]["status"] == "gone"
        assert rows["user1/renamed"]["status"] == "ok"
        # the old id redirects, as on the Hub
        assert HubClient(hub.endpoint, token=False).model_info("user1/ft-1").id == "user1/renamed"
        hub.rename_repo("user1/renamed", "user1/ft-1")
        summary = crawl(catalog, hub)
        assert summary["changed"] == 1 and summary["gone"] == 1
    rows = repos(catalog)
    assert rows["user1/ft-1"]["status"] == "ok" and rows["user1/renamed"]["status"] == "gone"
    from indexer.catalog.compute import compute

    compute(catalog)
    con = sqlite3.connect(catalog)
    classed = {r for (r,) in con.execute("select r.repo_id from repo_classes c join repos r on r.id = c.repo_pk")}
    assert classed and not classed & {"user0/ft-0", "user1/renamed"}


def test_private_repos_are_listed_with_a_token_but_never_written(small, catalog):
    set_meta(small, "user4/ft-4", private=True)
    with HubServer(str(small)) as hub:
        summary = crawl(catalog, hub)
        assert summary["listed"] == 11 and summary["private"] == 0
        summary = crawl(catalog, hub, token="hf_fake")
        assert summary["private"] == 1
    assert "user4/ft-4" not in repos(catalog)


def test_time_boxed_runs_converge_unresolved_first(small, catalog, tmp_path):
    reference = str(tmp_path / "ref.db")
    with HubServer(str(small), page_size=100) as hub:
        crawl(reference, hub)
        runner = CliRunner()
        common = ["crawl", "--all", "--endpoint", hub.endpoint, "--db", catalog, "--quiet", "--no-compute",
                  "--json", "--workers", "1"]
        first = runner.invoke(cli, [*common, "--max-api-calls", "5"])
        assert first.exit_code == 0, first.output
        data = json.loads(first.stdout)
        assert data["status"] == "partial" and data["unresolved"] > 0 and data["api_calls"] <= 6
        con = sqlite3.connect(catalog)
        queued = {r for (r,) in con.execute("select repo_id from crawl_queue")}
        assert len(queued) == data["unresolved"]
        assert con.execute("select status, unresolved from crawl_runs").fetchone() == ("partial", len(queued))
        con.close()
        hub.reset_counts()
        second = json.loads(runner.invoke(cli, common).stdout)
        assert second["status"] == "ok" and second["resumed"] == len(queued) and second["unresolved"] == 0
        first_paths = [p for m, p, s in hub.request_log if "/paths-info/" in p][: len(queued)]
        assert {p.split("/")[3] + "/" + p.split("/")[4] for p in first_paths} == queued  # queue first
    assert snapshot(catalog) == snapshot(reference)
    con = sqlite3.connect(catalog)
    assert con.execute("select count(*) from crawl_queue").fetchone() == (0,)


def test_max_minutes_stops_starting_repos(small, catalog):
    with HubServer(str(small), api_quota=3, window=30) as hub:
        t = time.monotonic()
        summary = crawl(catalog, hub, max_minutes=0.02)  # 1.2 s, then the 30 s window would block
        assert time.monotonic() - t < 10
    assert summary["status"] == "partial" and summary["stopped"] and summary["unresolved"] + summary["new"] <= 12


def test_crawl_exits_nonzero_when_every_repo_failed(small, catalog):
    with HubServer(str(small)) as hub:
        hub.add_fault("GET", r"/api/models/org/base$", status=401, times=None)  # 401 without X-Error-Code
        result = CliRunner().invoke(cli, ["crawl", "--model", "org/base", "--endpoint", hub.endpoint, "--db",
                                          catalog, "--quiet", "--no-compute"])
        assert result.exit_code == 1 and "every repo failed" in result.stderr, result.output
        result = CliRunner().invoke(cli, ["crawl", "--model", "no/such-repo", "--endpoint", hub.endpoint, "--db",
                                          catalog, "--quiet", "--no-compute"])
        assert result.exit_code == 1


def test_blob_store_roundtrip_and_plain_legacy_blobs(tmp_path):
    store = BlobStore(tmp_path / "b")
    data = b'{"a": 1}' * 1000
    store.put("a" * 40, data)
    assert store.read("a" * 40) == data and store.size("a" * 40) == len(data)
    assert store.stored_bytes("a" * 40) < len(data) / 5
    (tmp_path / "b" / ("c" * 40)).write_bytes(b"plain")
    assert store.read("c" * 40) == b"plain" and store.size("c" * 40) == 5
    out = store.export({"x.json": "a" * 40, "y.txt": "c" * 40}, tmp_path / "e")
    assert (out / "x.json").read_bytes() == data and (out / "y.txt").read_bytes() == b"plain"
    with pytest.raises(KeyError):
        store.read("d" * 40)


def test_config_facts_flow_onto_same_named_columns_generically(small, catalog, monkeypatch):
    """A ConfigFacts field with a Repo column of the same name lands there without a crawler change."""
    from indexer.vocab.modelconfig import ConfigFacts

    real = ConfigFacts.to_dict
    monkeypatch.setattr(ConfigFacts, "to_dict", lambda self: {**real(self), "params": 4242, "not_a_column": 1})
    with HubServer(str(small)) as hub:
        crawl(catalog, hub, all=False, search="org/base")
    row = repos(catalog)["org/base"]
    assert row["params"] == 4242 and row["model_type"] == "llama" and row["vocab_size"] == 123
