"""The crawler against the real huggingface_hub client and indexer.hubsim on 127.0.0.1."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from crawlkit import copy_repo, crawl, repos, set_meta, write_repo

from indexer.catalog.blobstore import BlobStore
from indexer.catalog.compute import compute
from indexer.cli import cli
from indexer.crawl.families import family_of, load_families
from indexer.crawl.loop import Crawler, CrawlInterrupted, CrawlOptions, file_set_key
from indexer.errors import UnsafeName
from indexer.hub.client import FixedWindow, HubClient, safe_blob_id, safe_name
from indexer.hubsim import HubServer


@pytest.fixture
def mini(tmp_path):
    """One repo per status, plus a chat fine-tune sharing the base's tokenizer."""
    hub = tmp_path / "hub"
    write_repo(hub, "Qwen/Qwen-Tiny")
    copy_repo(hub, "Qwen/Qwen-Tiny", "alice/tiny-instruct")
    cfg = json.loads((hub / "alice/tiny-instruct/config.json").read_text())
    (hub / "alice/tiny-instruct/config.json").write_text(json.dumps({**cfg, "_name_or_path": "x"}))
    set_meta(hub, "alice/tiny-instruct", baseModels=["Qwen/Qwen-Tiny"], params=123456,
             tags=["transformers", "conversational"])
    (hub / "bob/config-only").mkdir(parents=True)
    (hub / "bob/config-only/config.json").write_text('{"model_type": "llama", "vocab_size": 10}')
    write_repo(hub, "carol/gated-model", words=["<unk>", "<s>", "</s>"] + [f"c{i}" for i in range(30)])
    set_meta(hub, "carol/gated-model", gated="manual")
    write_repo(hub, "dave/remote", tokenizer_config={
        "tokenizer_class": "MyCustomTokenizer",
        "auto_map": {"AutoTokenizer": ["tok.MyCustomTokenizer", None]}})
    (hub / "dave/remote/tok.py").write_text("raise SystemExit('remote code must never run')\n")
    write_repo(hub, "erin/huge")
    set_meta(hub, "erin/huge", fake_sizes={"tokenizer.json": 200_000_000})
    broken = write_repo(hub, "frank/broken")
    data = (broken / "tokenizer.json").read_bytes()
    (broken / "tokenizer.json").write_bytes(data[: len(data) // 2])
    write_repo(hub, "grace/flaky", words=["<unk>", "<s>", "</s>"] + [f"g{i}" for i in range(40)])
    return hub


def test_every_status(mini, catalog):
    with HubServer(str(mini), page_size=3) as hub:
        hub.add_fault("POST", r"/api/models/grace/flaky/paths-info", status=500, times=None)
        summary = crawl(catalog, hub, retries=2)
    rows = repos(catalog)
    assert len(rows) == 8 and summary["listed"] == 8 and summary["new"] == 8
    status = {k: v["status"] for k, v in rows.items()}
    assert status == {
        "Qwen/Qwen-Tiny": "ok", "alice/tiny-instruct": "ok", "bob/config-only": "no_tokenizer",
        "carol/gated-model": "gated", "dave/remote": "needs_remote_code", "erin/huge": "too_large",
        "frank/broken": "malformed", "grace/flaky": "error",
    }
    assert set(status.values()) == {"ok", "no_tokenizer", "gated", "needs_remote_code", "too_large",
                                    "malformed", "error"}
    for v in rows.values():
        assert v["status"] == "ok" or v["reason"], v
    assert "HTTP 500" in rows["grace/flaky"]["reason"]
    assert "over the" in rows["erin/huge"]["reason"]
    # The reason names the code, never a placeholder or the scratch directory the files were read from.
    assert rows["dave/remote"]["reason"] == ("tokenizer needs remote code, which is never run "
                                             "(tokenizer_config.json auto_map: tok.MyCustomTokenizer)")
    assert not any("<" in (v["reason"] or "") or "indexer-write-" in (v["reason"] or "") for v in rows.values())

    base, ft = rows["Qwen/Qwen-Tiny"], rows["alice/tiny-instruct"]
    assert base["family"] == "Qwen" and ft["family"] == "Qwen"  # by author, then by base model
    assert ft["tokenizer_id"] == base["tokenizer_id"] and ft["file_set_id"] == base["file_set_id"]
    assert ft["config_blob"] != base["config_blob"]
    assert json.loads(ft["base_models"]) == ["Qwen/Qwen-Tiny"] and ft["params"] == 123456  # from the tags
    assert json.loads(ft["base_model_relations"]) == {"Qwen/Qwen-Tiny": "finetune"}
    assert ft["is_chat"] == 1 and base["is_chat"] == 0
    assert base["model_type"] == "llama" and base["vocab_size"] == base["vocab_size_transformers"] == 123
    assert len(base["sha"]) == 40 and base["author"] == "Qwen" and base["first_seen_at"]
    assert rows["carol/gated-model"]["gated"] == "manual"

    con = sqlite3.connect(catalog)
    q = "select repo_count from tokenizers where id = ?"
    assert con.execute(q, (base["tokenizer_id"],)).fetchone() == (0,)  # compute owns repo_count
    compute(catalog)
    assert con.execute(q, (base["tokenizer_id"],)).fetchone() == (2,)
    run = con.execute("select status, listed, new, failed, api_calls, resolver_calls, bytes_downloaded, "
                      "errors from crawl_runs").fetchall()
    assert len(run) == 1 and run[0][0] == "ok" and run[0][1:4] == (8, 8, 1)
    assert run[0][4] > 0 and run[0][5] > 0 and run[0][6] > 0 and "grace/flaky" in run[0][7]
    (tv,) = con.execute("select transformers_version from tokenizers limit 1").fetchone()
    assert tv

    # The error row is retried on the next run (same sha); the others cost nothing.
    with HubServer(str(mini), page_size=3) as hub:
        summary = crawl(catalog, hub)
        assert summary["changed"] == 1 and summary["unchanged"] == 7
        assert hub.counts["paths_info"] == 1
    assert repos(catalog)["grace/flaky"]["status"] == "ok"


def test_gated_with_token_hits_gated_repo_error(mini, catalog):
    with HubServer(str(mini)) as hub:
        crawl(catalog, hub, token="hf_fake", search="gated")
        assert hub.counts["resolve_get"] >= 1  # it tried, and the Hub refused
    row = repos(catalog)["carol/gated-model"]
    assert row["status"] == "gated" and "no access" in row["reason"]


def test_retries_on_paths_info_and_model_info(mini, catalog):
    with HubServer(str(mini)) as hub:
        pi = r"/api/models/Qwen/Qwen-Tiny/paths-info"
        hub.add_fault("POST", pi, status=429, headers={"Retry-After": "0"})
        hub.add_fault("POST", pi, status=500)
        hub.add_fault("POST", pi, status=502)
        hub.add_fault("POST", pi, status=503)
        hub.add_fault("POST", pi, kind="reset")
        hub.add_fault("POST", r"/api/models/alice/.*/paths-info", kind="malformed_json")
        hub.add_fault("GET", r"/api/models/dave/remote$", status=503)
        hub.add_fault("GET", r"/api/models/dave/remote$", status=429, headers={"RateLimit": '"api";r=0;t=0'})
        ids = ("Qwen/Qwen-Tiny", "alice/tiny-instruct", "dave/remote")
        summary = crawl(catalog, hub, all=False, models=ids, retries=6)
        assert hub.counts["paths_info"] == 3 + 6  # five faults on one repo, one on another
        assert hub.counts["model_info"] == 3 + 2
        assert not hub.faults
    assert summary["client_retries"] == 8 and summary["failed"] == 0
    rows = repos(catalog)
    assert rows["Qwen/Qwen-Tiny"]["status"] == "ok" and rows["alice/tiny-instruct"]["status"] == "ok"
    assert rows["dave/remote"]["status"] == "needs_remote_code"


@pytest.mark.parametrize("kind", ["truncate", "reset", "status"])
def test_broken_download_gives_error_then_rerun_fixes_it(mini, catalog, no_client_sleep, kind):
    with HubServer(str(mini)) as hub:
        # tokenizer_config.json is a regular (non-LFS) file served by the hub itself. Every repo's
        # download fails: repos share this blob, and any one of them may be the one to fetch it.
        hub.add_fault("GET", r"/resolve/.*/tokenizer_config.json", kind=kind, status=502, times=None)
        crawl(catalog, hub, search="Qwen-Tiny")
        row = repos(catalog)["Qwen/Qwen-Tiny"]
        assert row["status"] == "error" and row["reason"].startswith("transient"), row["reason"]
        hub.clear_faults()
        hub.reset_counts()
        summary = crawl(catalog, hub, search="Qwen-Tiny")
        assert summary["changed"] >= 1
    assert repos(catalog)["Qwen/Qwen-Tiny"]["status"] == "ok"


def test_pagination_and_limit(mini, catalog):
    with HubServer(str(mini), page_size=2) as hub:
        summary = crawl(catalog, hub, limit=3)
        assert summary["listed"] == 3 and hub.counts["list"] == 2
        hub.reset_counts()
        summary = crawl(catalog, hub)
        # --all: 4 pages of text-generation repos, 1 (empty) of image-text-to-text
        assert summary["listed"] == 8 and summary["unchanged"] == 3 and hub.counts["list"] == 5
    assert len(repos(catalog)) == 8


def test_incremental_recrawl(mini, catalog):
    with HubServer(str(mini), page_size=4) as hub:
        crawl(catalog, hub)
        before = repos(catalog)
        hub.reset_counts()
        summary = crawl(catalog, hub)
        assert summary["unchanged"] == 8 and summary["new"] == summary["changed"] == 0
        assert dict(hub.counts) | {"list": 0, "api": 0} == {k: 0 for k in hub.counts}
        assert hub.counts["api"] == hub.counts["list"] == 3  # 2 pages of text-generation + 1 empty
        assert summary["api_calls"] == 3 and summary["resolver_calls"] == 0

        # One repo changes its tokenizer: only its paths-info and its new blob are fetched.
        write_repo(mini, "alice/tiny-instruct", added=["<|im_start|>", "<|im_end|>"])
        hub.reload()
        hub.reset_counts()
        summary = crawl(catalog, hub)
        assert summary["changed"] == 1 and summary["unchanged"] == 7
        assert hub.counts["paths_info"] == 1 and hub.counts["model_info"] == 0
        assert hub.counts["api"] == 3 + 1
        # tokenizer.json (LFS: one GET /resolve → CDN, no HEAD) and config.json changed;
        # tokenizer_config.json is shared
        assert (hub.counts["resolve_head"], hub.counts["resolve_get"], hub.counts["cdn_get"]) == (0, 2, 1)
    after = repos(catalog)
    assert after["alice/tiny-instruct"]["sha"] != before["alice/tiny-instruct"]["sha"]
    assert after["alice/tiny-instruct"]["tokenizer_id"] != before["alice/tiny-instruct"]["tokenizer_id"]
    compute(catalog)
    con = sqlite3.connect(catalog)
    counts = dict(con.execute("select id, repo_count from tokenizers").fetchall())
    assert counts[before["Qwen/Qwen-Tiny"]["tokenizer_id"]] == 1
    assert counts[after["alice/tiny-instruct"]["tokenizer_id"]] == 1

    with HubServer(str(mini)) as hub:  # --full re-resolves everything but downloads nothing new
        summary = crawl(catalog, hub, full=True)
        assert summary["changed"] == 8 and hub.counts["resolve_get"] + hub.counts["cdn_get"] == 0


def test_shared_blob_downloaded_once(tmp_path, catalog):
    hub_dir = tmp_path / "hub"
    write_repo(hub_dir, "base/model")
    for i in range(50):
        d = copy_repo(hub_dir, "base/model", f"user{i}/ft-{i}")
        (d / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": 123, "seed": i}))
    with HubServer(str(hub_dir), page_size=20) as hub:
        crawler = Crawler(catalog, CrawlOptions(all=True, endpoint=hub.endpoint, quiet=True, workers=8))
        summary = crawler.run()
        assert summary["statuses"] == {"ok": 51}
        # 51 config blobs + tokenizer.json once (GET /resolve → CDN) + tokenizer_config.json once
        assert hub.counts["cdn_get"] == 1
        assert hub.counts["resolve_get"] == 51 + 1 + 1  # one GET per new blob, never a HEAD
        assert hub.counts["resolve_head"] == 0
        assert hub.counts["paths_info"] == 51
    assert crawler.writer.fingerprinted == 1
    compute(catalog)
    con = sqlite3.connect(catalog)
    assert con.execute("select count(*), max(repo_count) from tokenizers").fetchone() == (1, 51)
    assert con.execute("select count(*) from file_sets").fetchone() == (1,)
    assert con.execute("select count(*) from blobs").fetchone() == (53,)
    assert len(list((tmp_path / "blobs").iterdir())) == 53


def test_unsafe_names_are_refused():
    for bad in ("../x", "a/../../x", "/etc/passwd", "a\\b", "C:x", "", ".", "a//b", "~/.ssh/id"):
        with pytest.raises(UnsafeName):
            safe_name(bad)
    assert safe_name("tokenizer.json") == "tokenizer.json"
    for bad in ("../../" + "a" * 40, "A" * 40, "g" * 40, "a" * 39):
        with pytest.raises(UnsafeName):
            safe_blob_id(bad)
    with HubClient("http://127.0.0.1:9", scratch_dir="/tmp/x") as client, pytest.raises(UnsafeName):
        client.download("a/b", "0" * 40, "../evil", "a" * 40, BlobStore(Path("/tmp/x")))


def test_path_traversal_from_the_hub_is_ignored_or_refused(mini, catalog, tmp_path, monkeypatch):
    from huggingface_hub.hf_api import RepoFile

    real = HubClient.paths_info

    def evil(self, repo_id, sha, paths):
        out = real(self, repo_id, sha, paths)
        extra = [RepoFile(path="../../evil.json", size=3, oid="b" * 40),
                 RepoFile(path="/abs/tokenizer.json", size=3, oid="c" * 40)]
        if repo_id == "frank/broken":
            out = [RepoFile(path=f.path, size=f.size, oid="../../" + f.blob_id) for f in out]
        return out + extra

    monkeypatch.setattr(HubClient, "paths_info", evil)
    with HubServer(str(mini)) as hub:
        crawl(catalog, hub)
    rows = repos(catalog)
    assert rows["Qwen/Qwen-Tiny"]["status"] == "ok"  # names it did not ask for are ignored
    assert rows["frank/broken"]["status"] == "error" and "refused Hub data" in rows["frank/broken"]["reason"]
    assert not (tmp_path / "evil.json").exists() and not (tmp_path.parent / "evil.json").exists()
    assert all(len(p.name) == 40 and "." not in p.name for p in (tmp_path / "blobs").iterdir())


def test_interrupt_marks_run_interrupted(mini, catalog, monkeypatch):
    calls = {"n": 0}
    real = Crawler._finish

    def finish(self, *a, **kw):
        calls["n"] += 1
        if calls["n"] % 3 == 0:
            raise KeyboardInterrupt
        return real(self, *a, **kw)

    monkeypatch.setattr(Crawler, "_finish", finish)
    with HubServer(str(mini)) as hub:
        with pytest.raises(CrawlInterrupted) as exc:
            crawl(catalog, hub, workers=1)
        assert exc.value.summary["status"] == "interrupted"
        result = CliRunner().invoke(cli, ["crawl", "--all", "--endpoint", hub.endpoint, "--db", catalog,
                                          "--quiet", "--no-compute", "--workers", "1"])
        assert result.exit_code == 130, result.output
    con = sqlite3.connect(catalog)
    assert [s for (s,) in con.execute("select status from crawl_runs order by id")] == ["interrupted"] * 2


def test_cli_crawl_json(mini, catalog):
    with HubServer(str(mini)) as hub:
        common = ["--endpoint", hub.endpoint, "--db", catalog, "--no-compute", "--quiet"]
        result = CliRunner().invoke(cli, ["crawl", "--author", "Qwen", "--json", *common])
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["listed"] == 1 and data["statuses"] == {"ok": 1} and data["api_calls"] == 2
        result = CliRunner().invoke(cli, ["crawl", "--family", "Qwen", *common])
        assert result.exit_code == 0 and "unchanged 1" in result.stdout, result.output
    assert CliRunner().invoke(cli, ["crawl", "--db", catalog]).exit_code == 2
    bad = CliRunner().invoke(cli, ["crawl", "--family", "Nope", "--db", catalog, "--endpoint", "http://127.0.0.1:9"])
    assert bad.exit_code == 2 and "unknown family" in bad.stderr


def test_fixed_window_never_spends_more_than_the_quota_in_a_window():
    bucket = FixedWindow("api", 4, window=0.4)
    t = time.monotonic()
    stamps = []
    for _ in range(9):
        bucket.acquire()
        stamps.append(time.monotonic() - t)
    assert stamps[3] < 0.2 and 0.4 <= stamps[4] < 0.6 and 0.8 <= stamps[8] < 1.5
    for start in stamps:  # a token bucket would allow 8 calls in the first 0.4 s; a fixed window 4
        assert sum(start <= x < start + 0.399 for x in stamps) <= 4


def test_families():
    fams = load_families()
    names = {f.name for f in fams}
    assert {"Qwen", "Llama", "Mistral", "Gemma", "Phi", "DeepSeek", "SmolLM", "Pythia", "TinyLlama", "Falcon",
            "OLMo", "Granite"} <= names
    assert family_of("meta-llama/Llama-3.1-8B") == "Llama"
    assert family_of("someone/my-finetune", ["mistralai/Mistral-7B-v0.1"]) == "Mistral"
    assert family_of("someone/TinyLlama-1.1B-sft") == "TinyLlama"
    assert family_of("someone/qwen2.5-7b-dpo") == "Qwen"
    assert family_of("someone/unrelated") is None
    assert file_set_key({"b": "2", "a": "1"}) == file_set_key({"a": "1", "b": "2"})


def test_first_crawl_creates_the_catalog(mini, tmp_path):
    db = tmp_path / "fresh" / "catalog.db"
    with HubServer(str(mini)) as hub:
        result = CliRunner().invoke(cli, ["crawl", "--search", "Qwen-Tiny", "--endpoint", hub.endpoint,
                                          "--db", str(db), "--quiet", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["statuses"]["ok"] >= 1
    assert repos(str(db))["Qwen/Qwen-Tiny"]["status"] == "ok"
