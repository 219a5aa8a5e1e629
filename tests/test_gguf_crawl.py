"""GGUF-only repos through the crawl (hubsim + the real client): one header range-read per new LFS sha256,
facts of their own in the catalog, judged by llama.cpp's rule with HF repos (predicted) and each other."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time

import pytest
from click.testing import CliRunner
from crawlkit import crawl, set_meta
from ggufkit import write_vocab_gguf
from test_engines import make_spm

from indexer.answer.query import run_query
from indexer.answer.rule_inputs import side_from_catalog
from indexer.catalog.compute import compute
from indexer.catalog.db import upgrade
from indexer.cli import cli
from indexer.engines import verdicts
from indexer.gguf.predict import predict_gguf
from indexer.hubsim import HubServer

B, MB = 10**9, 1 << 20
EXTRA = tuple(f"<extra_{i}>" for i in range(20))
QUANTS = {"Big-7B-Q2_K.gguf": 40 * MB, "Big-7B-Q4_K_M.gguf": 64 * MB, "Big-7B-Q8_0.gguf": 96 * MB,
          "mmproj-Big-7B-f16.gguf": 8 * MB}


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("gguf-crawl")
    hub = root / "hub"
    for repo_id, kw, params in (("spm/Big-7B", {}, 7 * B), ("spm/Small-0.5B", {}, B // 2),
                                ("spm/Chat-0.4B", {"added": EXTRA}, B // 3)):
        make_spm(hub / repo_id, **kw)
        set_meta(hub, repo_id, params=params)
    big = predict_gguf(hub / "spm/Big-7B")
    small = predict_gguf(hub / "spm/Small-0.5B")
    # the quantizer's repo of Big-7B: three quants and a projector, padded to realistic sizes
    for name, size in QUANTS.items():
        path = write_vocab_gguf(hub / "quant/Big-7B-GGUF" / name, big, file_type=10)
        with open(path, "r+b") as f:
            f.truncate(size)
    set_meta(hub, "quant/Big-7B-GGUF", tags=["gguf", "base_model:quantized:spm/Big-7B"])
    # a byte-identical mirror: the same LFS sha256, no request
    shutil.copytree(hub / "quant/Big-7B-GGUF", hub / "mirror/Big-7B-GGUF")
    # a fine-tune's quant whose token 9 was renamed; a split small model; a draft GGUF of Small
    write_vocab_gguf(hub / "quant/Tuned-7B-GGUF" / "Tuned-7B-Q4_K_M.gguf", big, rename={9: "<|tool|>"})
    write_vocab_gguf(hub / "quant/Small-GGUF" / "Small-Q8_0.gguf", small, split_max_tensors=1, n_tensors=2)
    (hub / "quant/Broken-GGUF").mkdir(parents=True)
    (hub / "quant/Broken-GGUF" / "Broken-Q4_0.gguf").write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x01" * 64)
    db = str(root / "catalog.db")
    upgrade(db)
    with HubServer(str(hub)) as server:
        summary = crawl(db, server)
        counts = dict(server.counts)
    compute(db)
    return db, summary, counts, hub


def rows(db):
    with sqlite3.connect(db) as con:
        con.row_factory = sqlite3.Row
        return {r["repo_id"]: dict(r) for r in con.execute("SELECT * FROM repos")}


def test_gguf_repos_are_read_from_one_header(hub):
    db, summary, counts, _ = hub
    r = rows(db)
    big = r["quant/Big-7B-GGUF"]
    assert big["status"] == "ok" and big["tokenizer_id"] is None and big["file_set_id"] is not None
    assert "Big-7B-Q2_K.gguf" in big["reason"] and "smallest of 3 GGUF model files" in big["reason"]
    mirror = r["mirror/Big-7B-GGUF"]
    assert mirror["file_set_id"] == big["file_set_id"] and mirror["status"] == "ok"
    # whichever of the two came first read the header; the other cost no request
    assert sum("already read: no request" in x["reason"] for x in (big, mirror)) == 1
    assert r["quant/Small-GGUF"]["status"] == "ok" and "shard 1 of 2" in r["quant/Small-GGUF"]["reason"]
    broken = r["quant/Broken-GGUF"]
    assert broken["status"] == "malformed" and "not a valid GGUF file" in broken["reason"]
    g = summary["gguf"]
    assert g["headers_read"] == 4 and g["already_known"] == 1  # Big, Tuned, Small, Broken; the mirror free
    assert g["range_requests"] == 4  # one range each: every section here is small
    # never a whole file: the padded quants alone are over 200 MB
    assert summary["bytes_downloaded"] < 4 * 8 * MB + 2 * MB


def test_gguf_repos_get_llamacpp_verdicts_from_their_own_facts(hub):
    db, *_ = hub
    sides = {r: side_from_catalog(r, db=db) for r in ("spm/Big-7B", "spm/Small-0.5B", "quant/Big-7B-GGUF",
                                                      "quant/Tuned-7B-GGUF", "quant/Small-GGUF")}
    assert sides["quant/Big-7B-GGUF"].gguf_file == "quant/Big-7B-GGUF:Q2_K"
    v = verdicts(sides["quant/Big-7B-GGUF"], sides["quant/Small-GGUF"])
    assert v["llama.cpp"].outcome == "works" and v["lmstudio"].outcome == "works"
    assert v["sglang"].outcome == "refused" and v["sglang"].reasons[0].startswith("not judged")
    tuned = verdicts(sides["quant/Big-7B-GGUF"], sides["quant/Tuned-7B-GGUF"])["llama.cpp"]
    assert tuned.outcome == "no_speculation" and "token 9 text differs" in tuned.reasons[0]
    mixed = verdicts(sides["spm/Big-7B"], sides["quant/Small-GGUF"])["llama.cpp"]
    assert mixed.outcome == "works" and any("predicted" in x for x in mixed.reasons)


def test_query_and_check_treat_gguf_repos_alike(hub):
    db, *_ = hub
    result = run_query("quant/Big-7B-GGUF", engine="llama.cpp", db=db)
    drafts = {d["repo_id"]: d for d in result["drafts"]}
    assert {"quant/Small-GGUF", "spm/Small-0.5B"} <= set(drafts) and "quant/Tuned-7B-GGUF" not in drafts
    assert drafts["quant/Small-GGUF"]["launch"] == ("llama-server -hf quant/Big-7B-GGUF:Q2_K -hfd "
                                                     "quant/Small-GGUF:Q8_0 --spec-type draft-simple")
    assert "note" not in result["target"] or "base" not in (result["target"]["note"] or "")  # its own facts
    hf = {d["repo_id"] for d in run_query("spm/Big-7B", engine="llama.cpp", db=db)["drafts"]}
    assert {"quant/Small-GGUF", "spm/Small-0.5B"} <= hf
    sg = run_query("quant/Big-7B-GGUF", engine="sglang", db=db)
    assert sg["drafts"] == [] and "not judged" in sg["refused"]
    res = CliRunner().invoke(cli, ["check", "--db", db, "quant/Big-7B-GGUF", "quant/Tuned-7B-GGUF",
                                   "--engine", "llama.cpp", "--json"])
    assert res.exit_code == 1
    out = json.loads(res.stdout)
    assert out["details"]["gguf"]["target"]["source"] == "read"
    assert out["launch"]["llama.cpp"].startswith("llama-server -hf quant/Big-7B-GGUF:Q2_K -hfd quant/Tuned")


def test_a_second_crawl_reads_nothing(hub):
    db, _, _, hub_dir = hub
    before = rows(db)
    with sqlite3.connect(db) as con:
        con.execute("UPDATE repos SET sha = 'x' || substr(sha, 2) WHERE repo_id LIKE 'quant/%'")
    # the sha256s read (or found malformed) are in the catalog: re-resolving changed repos reads no byte of them
    with HubServer(str(hub_dir)) as server:
        summary = crawl(db, server)
        cdn = server.counts["cdn_get"]
    assert summary["gguf"]["range_requests"] == 0 and summary["gguf"]["already_known"] == 4 and cdn == 0
    after = rows(db)
    for rid in ("quant/Big-7B-GGUF", "quant/Tuned-7B-GGUF", "quant/Small-GGUF", "quant/Broken-GGUF"):
        assert after[rid]["status"] == before[rid]["status"]
        assert after[rid]["file_set_id"] == before[rid]["file_set_id"]


def test_read_range_is_one_pinned_206_through_the_cdn(hub):
    from indexer.hub.client import HubClient

    db, _, _, hub_dir = hub
    path = hub_dir / "quant/Big-7B-GGUF" / "Big-7B-Q8_0.gguf"
    data = path.read_bytes()[:5000]
    with HubServer(str(hub_dir)) as server, HubClient(server.endpoint, token=False, retries=1) as client:
        sha = client.model_info("quant/Big-7B-GGUF").sha
        before = dict(server.counts)
        got = client.read_range("quant/Big-7B-GGUF", sha, "Big-7B-Q8_0.gguf", 1000, 5000)
        for _ in range(200):  # the server counts a body once it is written, just after the client has it
            if server.counts["bytes_sent"] != before["bytes_sent"]:
                break
            time.sleep(0.01)
        after = dict(server.counts)
        log = [e for e in server.request_log if "Big-7B-Q8_0" in e[1] or "/cdn/" in e[1]]
    assert got == data[1000:5000]
    assert after["resolve_get"] - before["resolve_get"] == 1 and after["cdn_get"] - before["cdn_get"] == 1
    assert after["bytes_sent"] - before["bytes_sent"] == 4000  # the range, not the 96 MB file
    assert [status for _, _, status in log[-2:]] == [302, 206]
    assert f"/resolve/{sha}/" in log[-2][1]  # pinned to the listed commit


def test_gguf_repos_on_postgresql(hub, pg_url, tmp_path, monkeypatch):
    """The same crawl into PostgreSQL: the GGUF file sets, engine facts and classes answer alike."""
    pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")
    _, _, _, hub_dir = hub
    monkeypatch.chdir(tmp_path)  # a server catalog keeps blobs and token lists under ./data
    monkeypatch.setenv("INDEXER_TOKENS", str(tmp_path / "tokens"))
    upgrade(pg_url)
    with HubServer(str(hub_dir)) as server:
        summary = crawl(pg_url, server)
    assert summary["gguf"]["headers_read"] == 4 and summary["statuses"]["ok"] >= 6
    compute(pg_url)
    drafts = {d["repo_id"] for d in run_query("quant/Big-7B-GGUF", engine="llama.cpp", db=pg_url)["drafts"]}
    assert {"quant/Small-GGUF", "spm/Small-0.5B"} <= drafts and "quant/Tuned-7B-GGUF" not in drafts
    tuned = verdicts(side_from_catalog("quant/Big-7B-GGUF", db=pg_url),
                     side_from_catalog("quant/Tuned-7B-GGUF", db=pg_url))["llama.cpp"]
    assert tuned.outcome == "no_speculation"


def test_a_gguf_repo_whose_listing_lost_its_siblings_is_read_from_the_tree(tmp_path):
    """HUB-API §0.1.11: a listing's siblings may come back empty or cut short. GGUF names cannot be asked of
    paths-info, so a repo whose siblings show no weights at all is listed once (the tree) and read as usual; a
    repo whose siblings show GGUF files and no tokenizer is listed by the tree in place of paths-info (its siblings
    may be cut short: the tree counts every quant), one call either way; a repo whose siblings show other weights
    but no tokenizer costs no tree call and stays no_tokenizer."""
    hub = tmp_path / "hub"
    make_spm(hub / "spm/Big-7B")
    big = predict_gguf(hub / "spm/Big-7B")
    write_vocab_gguf(hub / "quant/Lost-7B-GGUF" / "Lost-7B-Q4_K_M.gguf", big)
    set_meta(hub, "quant/Lost-7B-GGUF", listing_siblings="empty")
    write_vocab_gguf(hub / "quant/Cut-7B-GGUF" / "Cut-7B-Q8_0.gguf", big, rename={9: "<|cut|>"})
    set_meta(hub, "quant/Cut-7B-GGUF", listing_siblings=1)  # cut to one entry: its GGUF, still a weight
    (hub / "plain/weights-only").mkdir(parents=True)
    (hub / "plain/weights-only" / "model.safetensors").write_bytes(b"\0" * 64)
    db = str(tmp_path / "c.db")
    upgrade(db)
    with HubServer(str(hub), lossy_siblings=0) as server:
        summary = crawl(db, server)
        tree_calls = sum(n for k, n in server.counts.items() if "tree" in str(k))
    r = rows(db)
    for repo, name in (("quant/Lost-7B-GGUF", "Lost-7B-Q4_K_M.gguf"), ("quant/Cut-7B-GGUF", "Cut-7B-Q8_0.gguf")):
        assert r[repo]["status"] == "ok" and name in r[repo]["reason"], r[repo]
    assert r["plain/weights-only"]["status"] == "no_tokenizer"
    # two tree listings: the repo that lost every sibling (after its paths-info) and the cut one (instead of
    # paths-info); weights-only shows weights, so its absent tokenizer is paths-info's word alone
    assert summary["gguf"]["headers_read"] == 2 and tree_calls == 2, (summary["gguf"], dict(server.counts))
    assert server.counts["paths_info"] == 3, dict(server.counts)  # Big-7B, Lost-7B-GGUF, weights-only
