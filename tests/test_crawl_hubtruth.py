"""Issue 16: what the real Hub holds (lossy siblings, gated originals, one GET per blob, cheap nights),
end to end through the real huggingface_hub client against indexer.hubsim."""

from __future__ import annotations

import json
import os
import sqlite3
import time

import pytest
from crawlkit import copy_repo, crawl, repos, set_meta, write_repo
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import GatedRepoError

from indexer.hub.client import HubClient
from indexer.hubsim import HubServer


def test_lossy_siblings_never_make_no_tokenizer(tmp_path, catalog):
    hub_dir = tmp_path / "hub"
    write_repo(hub_dir, "org/control")
    copy_repo(hub_dir, "org/control", "org/empty-siblings")
    copy_repo(hub_dir, "org/control", "org/short-siblings")
    (hub_dir / "org/no-tok").mkdir(parents=True)
    (hub_dir / "org/no-tok/config.json").write_text('{"model_type": "llama"}')
    set_meta(hub_dir, "org/empty-siblings", listing_siblings="empty")
    set_meta(hub_dir, "org/short-siblings", listing_siblings=1)  # only config.json survives
    with HubServer(str(hub_dir), lossy_siblings=0.0) as hub:
        listed = {m.id: [s.rfilename for s in m.siblings]
                  for m in HfApi(endpoint=hub.endpoint, token=False).list_models(expand=["siblings"])}
        assert listed["org/empty-siblings"] == [] and listed["org/short-siblings"] == ["config.json"]
        assert "tokenizer.json" in listed["org/control"]
        summary = crawl(catalog, hub)
        assert hub.counts["paths_info"] == 4  # one call per repo, whatever the listing showed
    rows = repos(catalog)
    assert {k: v["status"] for k, v in rows.items()} == {
        "org/control": "ok", "org/empty-siblings": "ok", "org/short-siblings": "ok", "org/no-tok": "no_tokenizer"}
    assert rows["org/empty-siblings"]["fs_key"] == rows["org/short-siblings"]["fs_key"] == rows["org/control"]["fs_key"]
    assert summary["statuses"] == {"no_tokenizer": 1, "ok": 3}


def test_hub_wide_lossy_share_is_stable_and_crawl_is_unaffected(tmp_path, catalog):
    hub_dir = tmp_path / "hub"
    write_repo(hub_dir, "org/base")
    for i in range(30):
        copy_repo(hub_dir, "org/base", f"u{i}/ft")
    with HubServer(str(hub_dir), lossy_siblings=0.5) as hub:
        api = HfApi(endpoint=hub.endpoint, token=False)
        first = {m.id: len(m.siblings) for m in api.list_models(expand=["siblings"])}
        again = {m.id: len(m.siblings) for m in api.list_models(expand=["siblings"])}
        assert first == again and 0 < sum(n < 3 for n in first.values()) < 31
        crawl(catalog, hub)
    assert {v["status"] for v in repos(catalog).values()} == {"ok"}


def _resolves(hub, repo_id: str) -> list:
    return [r for r in hub.request_log if f"/{repo_id}/resolve/" in r[1]]


def _api_calls_for(hub, repo_id: str) -> list:
    return [r for r in hub.request_log if f"/api/models/{repo_id}/" in r[1]]


@pytest.fixture
def gated_hub(tmp_path):
    """A gated original listed before its public mirror, and a gated repo no public repo copies (yet)."""
    hub_dir = tmp_path / "hub"
    write_repo(hub_dir, "meta/Orig-8B", words=["<unk>", "<s>", "</s>"] + [f"m{i}" for i in range(40)])
    copy_repo(hub_dir, "meta/Orig-8B", "bob/orig-mirror")
    write_repo(hub_dir, "meta/Lonely-1B", words=["<unk>", "<s>", "</s>"] + [f"l{i}" for i in range(40)])
    set_meta(hub_dir, "meta/Orig-8B", gated="manual", lastModified="2025-06-02T00:00:00.000Z",
             gated_access=["hf_granted"])
    set_meta(hub_dir, "bob/orig-mirror", lastModified="2025-06-01T00:00:00.000Z")
    set_meta(hub_dir, "meta/Lonely-1B", gated="auto", lastModified="2025-06-03T00:00:00.000Z",
             gated_access=["hf_granted"])
    return hub_dir


def test_hubsim_gated_repos_are_browsable_but_resolve_refuses(gated_hub, tmp_path):
    with HubServer(str(gated_hub)) as hub:
        anon = HfApi(endpoint=hub.endpoint, token=False)
        files = anon.get_paths_info("meta/Orig-8B", ["tokenizer.json", "config.json"])
        assert {f.path for f in files} == {"tokenizer.json", "config.json"}
        assert "tokenizer.json" in {f.path for f in anon.list_repo_tree("meta/Orig-8B")}
        kw = dict(endpoint=hub.endpoint, cache_dir=tmp_path / "c")
        with pytest.raises(GatedRepoError) as e401:
            hf_hub_download("meta/Orig-8B", "config.json", token=False, **kw)
        with pytest.raises(GatedRepoError) as e403:
            hf_hub_download("meta/Orig-8B", "config.json", token="hf_other", **kw)
        assert (e401.value.response.status_code, e403.value.response.status_code) == (401, 403)
        assert hf_hub_download("meta/Orig-8B", "config.json", token="hf_granted", **kw)


def test_gated_original_answered_from_its_public_copy_anonymously(gated_hub, catalog):
    with HubServer(str(gated_hub), page_size=1) as hub:  # the gated original is listed first
        summary = crawl(catalog, hub, workers=1)
        paths_info = [p.split("/")[3:5] for _, p, _ in hub.request_log if p.endswith("/paths-info/" + p[-40:])]
        assert paths_info.index(["meta", "Orig-8B"]) < paths_info.index(["bob", "orig-mirror"])  # listed first
        assert not _resolves(hub, "meta/Orig-8B") and not _resolves(hub, "meta/Lonely-1B")
        assert len(_api_calls_for(hub, "meta/Orig-8B")) == 1  # its paths-info
    rows = repos(catalog)
    orig, mirror, lonely = rows["meta/Orig-8B"], rows["bob/orig-mirror"], rows["meta/Lonely-1B"]
    assert orig["status"] == "ok" and "bob/orig-mirror" in orig["reason"] and "nothing downloaded" in orig["reason"]
    assert orig["fs_key"] == mirror["fs_key"] and orig["vocab_sha"] == mirror["vocab_sha"]
    assert orig["config_blob"] == mirror["config_blob"] and orig["model_type"] == "llama"
    assert lonely["status"] == "gated" and "no token" in lonely["reason"]
    # its config.json and tokenizer_config.json are byte-identical to the others' (held): only the rest is named
    assert lonely["reason"].endswith("not held from any public copy: tokenizer.json")
    assert summary["from_copies"] == 1 and summary["statuses"] == {"gated": 1, "ok": 2}


def test_gated_repo_settles_when_a_public_copy_appears_later(gated_hub, catalog):
    with HubServer(str(gated_hub)) as hub:
        crawl(catalog, hub)
        assert repos(catalog)["meta/Lonely-1B"]["status"] == "gated"
        copy_repo(gated_hub, "meta/Lonely-1B", "zed/lonely-copy")
        hub.reload()
        hub.reset_counts()
        summary = crawl(catalog, hub)
        assert summary["new"] == 1 and summary["settled"] == 1 and summary["from_copies"] == 1
        assert not _api_calls_for(hub, "meta/Lonely-1B") and not _resolves(hub, "meta/Lonely-1B")
        hub.reset_counts()
        again = crawl(catalog, hub)  # settled for good: nothing waits any more
        assert again["settled"] == 0 and again["unchanged"] == again["listed"] and hub.counts["paths_info"] == 0
    row = repos(catalog)["meta/Lonely-1B"]
    assert row["status"] == "ok" and "zed/lonely-copy" in row["reason"]
    con = sqlite3.connect(catalog)
    assert con.execute("select count(*) from blob_waits").fetchone() == (0,)


def test_gated_repo_with_tokens_with_and_without_access(gated_hub, catalog):
    with HubServer(str(gated_hub)) as hub:
        crawl(catalog, hub, token="hf_other", search="Lonely")
        row = repos(catalog)["meta/Lonely-1B"]
        assert row["status"] == "gated" and "the token has no access" in row["reason"]
        assert {s for _, _, s in _resolves(hub, "meta/Lonely-1B")} == {403}
        crawl(catalog, hub, token="hf_granted", search="Lonely", full=True)  # access granted since: --full
    row = repos(catalog)["meta/Lonely-1B"]
    assert row["status"] == "ok" and not row["reason"]


def test_one_verified_get_per_blob_identified_as_indexer(tmp_path, catalog):
    from indexer import __version__

    hub_dir = tmp_path / "hub"
    write_repo(hub_dir, "org/base")
    for i in range(5):
        copy_repo(hub_dir, "org/base", f"u{i}/ft")
    write_repo(hub_dir, "org/liar", words=["<unk>", "<s>", "</s>"] + [f"z{i}" for i in range(20)])
    write_repo(hub_dir, "org/liar2", words=["<unk>", "<s>", "</s>"] + [f"x{i}" for i in range(21)])
    with HubServer(str(hub_dir)) as hub:
        # the Hub's file changes under its announced blob id (same size): the GET's bytes fail the check
        tok = hub_dir / "org/liar/tokenizer.json"  # LFS: checked against paths-info's sha256
        tok.write_bytes(tok.read_bytes().replace(b'"z1"', b'"y1"', 1))
        cfg = hub_dir / "org/liar2/config.json"  # a regular file: checked against its git blob sha1
        cfg.write_bytes(cfg.read_bytes().replace(b"llama", b"llamb", 1))
        summary = crawl(catalog, hub)
        blobs = len({fe.oid for r in hub.repos.values() for fe in r.files.values()})
        assert hub.counts["resolve_head"] == 0
        # one GET per distinct blob (5 copies share 3 blobs); liar2 stops at its bad config.json (asked first)
        assert hub.counts["resolve_get"] == blobs - 1
        assert hub.counts["cdn_get"] == 2  # the LFS tokenizer.json of each distinct tokenizer, via the redirect
        assert {ua.split(";")[0] for ua in hub.user_agents} == {f"indexer/{__version__}"}
        assert not any("agent-harnesses" in p for _, p, _ in hub.request_log)  # telemetry off
        assert not any("torch/" in ua or "agent/" in ua for ua in hub.user_agents)
    rows = repos(catalog)
    assert rows["org/liar"]["status"] == "error" and "!= LFS oid" in rows["org/liar"]["reason"]
    assert rows["org/liar2"]["status"] == "error" and "does not match blob id" in rows["org/liar2"]["reason"]
    assert summary["statuses"] == {"error": 2, "ok": 6}


def _dated_hub(tmp_path, n=12):
    """``n`` repos modified a day apart (newest first: u0), plus one image-text-to-text repo."""
    hub_dir = tmp_path / "hub"
    write_repo(hub_dir, "org/base")
    set_meta(hub_dir, "org/base", lastModified="2025-01-01T00:00:00.000Z")
    for i in range(n - 1):
        copy_repo(hub_dir, "org/base", f"u{i}/ft")
        set_meta(hub_dir, f"u{i}/ft", lastModified=f"2025-02-{28 - i:02d}T00:00:00.000Z")
    set_meta(hub_dir, "u5/ft", pipeline_tag="image-text-to-text")
    return hub_dir


def _cursor_rows(catalog):
    con = sqlite3.connect(catalog)
    try:
        return {s: (hw, json.loads(r or "[]")) for s, hw, r in
                con.execute("select scope, high_water, resumes from scope_cursors")}
    finally:
        con.close()


def test_hubsim_dates_are_distinct_and_sorted_listings_page_by_keyset(tmp_path):
    hub_dir = tmp_path / "hub"
    write_repo(hub_dir, "org/base")
    for i in range(6):
        copy_repo(hub_dir, "org/base", f"u{i}/ft")  # copies share their files' times
    with HubServer(str(hub_dir), page_size=3) as hub:
        client = HubClient(hub.endpoint, token=False)
        first, nxt = client.list_page(client.listing_url(sort="lastModified"))
        assert len({r.last_modified for r in hub.repos.values()}) == 7
        assert len({r.created_at for r in hub.repos.values()}) == 7
        assert [x.last_modified for x in first] == sorted((x.last_modified for x in first), reverse=True)
        # a repo of a later page changes: it moves to the top, the pages below do not shift
        moved = next(r for r in sorted(hub.repos) if r not in {x.id for x in first})
        edited = hub_dir / moved / "config.json"
        edited.write_text('{"model_type": "llama", "edited": 1}')
        os.utime(edited, (time.time() + 10, time.time() + 10))  # a later commit
        hub.reload()
        rest = []
        while nxt:
            page, nxt = client.list_page(nxt)
            rest += [x.id for x in page]
        client.close()
    seen = [x.id for x in first] + rest
    assert len(seen) == len(set(seen)) == 6 and moved not in seen  # nothing repeated, only the mover skipped


def test_unchanged_night_costs_one_listing_page_per_scope(tmp_path, catalog):
    hub_dir = _dated_hub(tmp_path)
    with HubServer(str(hub_dir), page_size=3) as hub:
        first = crawl(catalog, hub)
        assert first["scopes"]["pipeline_tag=text-generation"] | {"saw_everything": True} == {
            "listed": 11, "kept": 11, "pages": 4, "complete": True, "saw_everything": True}
        hub.reset_counts()
        again = crawl(catalog, hub)
        assert hub.counts["list"] == 2 and hub.counts["api"] == 2  # one page per scope, nothing else
        assert again["unchanged"] == again["listed"] and again["status"] == "ok"
        assert {k: v["pages"] for k, v in again["scopes"].items()} == {
            "pipeline_tag=text-generation": 1, "pipeline_tag=image-text-to-text": 1}
        # one repo gets a new commit: still one page per scope, and only that repo is resolved
        (hub_dir / "u9/ft/config.json").write_text('{"model_type": "llama", "vocab_size": 123, "x": 1}')
        set_meta(hub_dir, "u9/ft", lastModified="2025-03-05T00:00:00.000Z")
        hub.reload()
        hub.reset_counts()
        third = crawl(catalog, hub)
        assert third["changed"] == 1 and hub.counts["list"] == 2 and hub.counts["paths_info"] == 1
    assert all(not resumes for _, resumes in _cursor_rows(catalog).values())


def test_listing_that_fails_part_way_resumes_from_its_cursor(tmp_path, catalog, no_client_sleep):
    hub_dir = _dated_hub(tmp_path)
    with HubServer(str(hub_dir), page_size=3) as hub:
        hub.fail_deep_listings(6)  # the third page and below answer 504, retries included
        first = crawl(catalog, hub)
        assert first["status"] == "partial" and first["listed"] == 6 + 1
        assert any("504" in e["reason"] for e in first["errors"])
        (hw, resumes), = [v for k, v in _cursor_rows(catalog).items() if "text-generation" in k]
        assert hw.startswith("2025-02-28") and len(resumes) == 1 and "cursor=" in resumes[0]["url"]
        hub.fail_deep_listings(None)
        hub.reset_counts()
        second = crawl(catalog, hub)
        # head pass: 1 page (stops at the high-water mark); the resumed pass: the 2 pages left
        assert second["scopes"]["pipeline_tag=text-generation"]["pages"] == 1 + 2
        assert second["new"] == 5 and second["status"] == "ok"
    assert len(repos(catalog)) == 12
    assert all(not resumes for _, resumes in _cursor_rows(catalog).values())


def test_gone_only_after_a_full_listing(tmp_path, catalog):
    hub_dir = _dated_hub(tmp_path)
    with HubServer(str(hub_dir), page_size=3) as hub:
        crawl(catalog, hub)
        hub.delete_repo("org/base")  # the oldest: below every later high-water mark
        summary = crawl(catalog, hub)
        assert summary["gone"] == 0 and repos(catalog)["org/base"]["status"] == "ok"
        summary = crawl(catalog, hub, full_listing=True)
        assert summary["gone"] == 1 and summary["scopes"]["pipeline_tag=text-generation"]["saw_everything"]
    assert repos(catalog)["org/base"]["status"] == "gone"


def test_scopes_keep_only_repos_that_can_hold_a_causal_lm(tmp_path, catalog):
    hub_dir = tmp_path / "hub"
    for name, meta in (("lm", {}), ("vlm", {"pipeline_tag": "image-text-to-text"}),
                       ("bare", {"pipeline_tag": None}),
                       ("vit", {"pipeline_tag": "image-classification", "library_name": "timm"}),
                       ("emb", {"pipeline_tag": None, "library_name": "sentence-transformers"})):
        write_repo(hub_dir, f"goo/{name}")
        set_meta(hub_dir, f"goo/{name}", **meta)
    with HubServer(str(hub_dir)) as hub:
        summary = crawl(catalog, hub, all=False, author="goo")
    assert summary["scopes"]["author=goo"]["listed"] == 5 and summary["scopes"]["author=goo"]["kept"] == 3
    assert set(repos(catalog)) == {"goo/lm", "goo/vlm", "goo/bare"}


def test_the_real_client_pages_a_sorted_listing_by_keyset(tmp_path, no_client_sleep):
    hub_dir = _dated_hub(tmp_path)
    with HubServer(str(hub_dir), page_size=5) as hub:
        api = HfApi(endpoint=hub.endpoint, token=False)
        ids = [m.id for m in api.list_models(sort="last_modified", expand=["lastModified"])]
        dates = [m.last_modified for m in api.list_models(sort="last_modified", expand=["lastModified"])]
        assert len(ids) == len(set(ids)) == 12 and dates == sorted(dates, reverse=True)
        assert hub.counts["list"] == 2 * 3
        assert all("cursor=" in p for m, p, s in hub.request_log if "cursor" in p)
        hub.fail_deep_listings(5, times=1)
        assert len(list(api.list_models(sort="last_modified"))) == 12  # the client's own retry got through
        assert any(s == 504 for _, _, s in hub.request_log)


def test_a_waiting_gated_repo_that_turns_private_is_never_published(gated_hub, catalog):
    with HubServer(str(gated_hub)) as hub:
        crawl(catalog, hub)
        set_meta(gated_hub, "meta/Lonely-1B", private=True)
        copy_repo(gated_hub, "meta/Lonely-1B", "zed/lonely-copy")  # its blobs now arrive
        hub.reload()
        summary = crawl(catalog, hub, token="hf_other")
        assert summary["private"] == 1 and summary["settled"] == 0
    row = repos(catalog)["meta/Lonely-1B"]
    assert row["status"] == "gone" and "private" in row["reason"]
