"""Issue 16: what the real Hub holds (lossy siblings, gated originals, one GET per blob, cheap nights),
end to end through the real huggingface_hub client against indexer.hubsim."""

from __future__ import annotations

from crawlkit import copy_repo, crawl, repos, set_meta, write_repo
from huggingface_hub import HfApi

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
