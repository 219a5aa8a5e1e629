"""indexer publish --to-hub / nightly --to-hub: one commit to a Hub dataset through the real huggingface_hub client,
against the imitation's dataset repos and upload protocol (hubsim/upload.py), and every refusal it answers."""

from __future__ import annotations

import json
import sqlite3
import tarfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from hubkit import (
    ORG,
    READ,
    WRITE,
    copy_catalog,
    dataset_hub,
    publish,
    remote_files,
    remote_json,
    run,
    sha256,
    touch_catalog,
)

from indexer.catalog.snapshot import known_revisions
from indexer.jobs.demo import build_demo_hub


@pytest.fixture
def db(demo_catalog, tmp_path) -> Path:
    return copy_catalog(demo_catalog, tmp_path / "cat")


@pytest.fixture
def hub(tmp_path):
    with dataset_hub(tmp_path / "hub") as server:
        yield server


def _one_line_error(code, out, err, expect_code=2):
    assert code == expect_code, (out, err)
    lines = [x for x in err.splitlines() if x.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _counts(path: Path) -> dict:
    con = sqlite3.connect(path)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                           "AND name NOT LIKE 'sqlite_%'")]
        return {n: con.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}
    finally:
        con.close()


def test_one_commit_holds_snapshot_tokens_manifest_parquet_and_card(db, hub, monkeypatch):
    code, out, err = publish(db, hub, monkeypatch)
    assert code == 0, err
    done = json.loads(out)
    assert done["status"] == "published" and hub.counts["commits"] == 1
    files = remote_files(hub)
    assert {"catalog.sqlite", "tokens.tar", "manifest.json", "README.md", "data/repos.parquet",
            "data/tokenizers.parquet", "data/classes.parquet", "data/drafts.parquet", "data/measurements.parquet",
            "data/gguf_files.parquet", ".gitattributes"} == set(files)
    # the server chose LFS for the binary files, regular for the text ones, and tracked the new LFS path
    assert files["catalog.sqlite"].lfs and files["tokens.tar"].lfs and files["data/repos.parquet"].lfs
    assert not files["manifest.json"].lfs and not files["README.md"].lfs
    assert "catalog.sqlite filter=lfs" in Path(files[".gitattributes"].abs_path).read_text()

    snap = Path(files["catalog.sqlite"].abs_path)
    m = remote_json(hub, "manifest.json")
    assert m["snapshot"] == {"path": "catalog.sqlite", "bytes": snap.stat().st_size, "sha256": sha256(snap)}
    assert m["schema_revision"] == known_revisions()[-1]
    assert m["counts"] == _counts(snap) and m["counts"]["repos"] == _counts(db)["repos"] > 0
    con = sqlite3.connect(db)
    marks = {s: h.replace(" ", "T") for s, h in con.execute("SELECT scope, high_water FROM scope_cursors "
                                                              "WHERE high_water IS NOT NULL")}
    con.close()
    assert marks and m["high_water"] == marks and m["data_as_of"]
    assert m["indexer_version"] and m["created_at"].endswith("Z")

    tar = Path(files["tokens.tar"].abs_path)
    assert m["tokens"]["sha256"] == sha256(tar)
    with tarfile.open(tar) as t:
        names = sorted(t.getnames())
    assert names == sorted(p.relative_to(db.parent / "tokens").as_posix() for p in (db.parent / "tokens").glob("*/*.z"))

    repos = pq.read_table(files["data/repos.parquet"].abs_path)
    assert repos.num_rows == m["counts"]["repos"] and "repo_id" in repos.column_names
    assert pq.read_table(files["data/tokenizers.parquet"].abs_path).num_rows == m["counts"]["tokenizers"]
    assert pq.read_table(files["data/classes.parquet"].abs_path).num_rows == m["counts"]["repo_classes"]
    # every GGUF repo's model files, by repo id, as the catalog holds them (the demo's 7B: Q4_K_M and Q8_0)
    gguf = pq.read_table(files["data/gguf_files.parquet"].abs_path).to_pylist()
    con = sqlite3.connect(snap)
    held = [dict(zip(("repo_id", "path", "quant", "parts", "size"), r, strict=True)) for r in con.execute(
        "SELECT r.repo_id, g.path, g.quant, g.parts, g.size FROM gguf_files g JOIN repos r ON r.id = g.repo_pk "
        "ORDER BY r.repo_id, g.path")]
    con.close()
    assert gguf == held and len(gguf) == m["counts"]["gguf_files"] == m["parquet"]["gguf_files"]["rows"]
    assert {(g["path"], g["quant"]) for g in gguf if g["repo_id"] == "lumen-ai/Lumen-7B-Instruct-GGUF"} == {
        ("Lumen-7B-Instruct-Q4_K_M.gguf", "Q4_K_M"), ("Lumen-7B-Instruct-Q8_0.gguf", "Q8_0")}
    # drafts: exactly what `indexer query --json` answers, per engine, for the targets it lists
    from click.testing import CliRunner

    from indexer.cli import cli

    drafts = pq.read_table(files["data/drafts.parquet"].abs_path).to_pylist()
    assert drafts and m["parquet"]["drafts"]["rows"] == len(drafts)
    for target, engine in sorted({(d["target"], d["engine"]) for d in drafts})[:12]:
        res = CliRunner().invoke(cli, ["query", "--db", str(db), "--target", target, "--engine", engine, "--limit",
                                       "5", "--json"])
        want = [d["repo_id"] for d in json.loads(res.stdout)["drafts"]]
        got = [d["draft"] for d in sorted(drafts, key=lambda d: d["rank"])
               if (d["target"], d["engine"]) == (target, engine)]
        assert got == want, (target, engine)

    card = Path(files["README.md"].abs_path).read_text()
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["license"] and "speculative-decoding" in meta["tags"]
    assert {c["data_files"] for c in meta["configs"]} == {"data/repos.parquet", "data/tokenizers.parquet",
                                                          "data/drafts.parquet", "data/classes.parquet",
                                                          "data/measurements.parquet", "data/gguf_files.parquet"}
    assert "`gguf_files` every model file of each GGUF repo" in card
    assert all(c["data_files"] in files for c in meta["configs"])
    # the token is never written: not in any published file, nor in the catalog
    for fe in files.values():
        assert WRITE.encode() not in Path(fe.abs_path).read_bytes()
    assert WRITE.encode() not in db.read_bytes()


def test_nothing_changed_makes_no_commit_and_uploads_nothing(db, hub, monkeypatch):
    assert publish(db, hub, monkeypatch)[0] == 0
    head = hub.datasets.repos[f"{ORG}/catalog"].head.oid
    uploads = hub.counts["lfs_uploads"]
    code, out, err = publish(db, hub, monkeypatch)
    assert code == 0, err
    assert json.loads(out)["status"] == "unchanged"
    assert hub.counts["commits"] == 1 and hub.counts["lfs_uploads"] == uploads
    assert hub.datasets.repos[f"{ORG}/catalog"].head.oid == head


def test_a_changed_catalog_is_a_second_commit_uploading_only_what_changed(db, hub, monkeypatch):
    assert publish(db, hub, monkeypatch)[0] == 0
    uploads = hub.counts["lfs_uploads"]
    touch_catalog(db)
    code, out, err = publish(db, hub, monkeypatch)
    assert code == 0 and json.loads(out)["status"] == "published", err
    assert hub.counts["commits"] == 2
    # the token store did not change: its object is already stored, so the batch gives it no upload action
    new = hub.counts["lfs_uploads"] - uploads
    assert 1 <= new < uploads
    assert remote_json(hub, "manifest.json")["snapshot"]["sha256"] == json.loads(out)["manifest"]["snapshot"]["sha256"]


def test_read_only_token_is_refused_before_anything_is_uploaded(db, hub, monkeypatch):
    assert publish(db, hub, monkeypatch)[0] == 0
    touch_catalog(db)
    uploads, commits = hub.counts["lfs_uploads"], hub.counts["commits"]
    line = _one_line_error(*publish(db, hub, monkeypatch, f"{ORG}/catalog", READ))
    assert "403" in line and "write token" in line
    assert hub.counts["lfs_uploads"] == uploads and hub.counts["commits"] == commits
    assert READ not in line
    # a repo the read-only token would have to create: refused at create_repo, nothing created
    line = _one_line_error(*publish(db, hub, monkeypatch, f"{ORG}/other", READ))
    assert "403" in line and f"{ORG}/other" not in hub.datasets.repos


def test_no_token_missing_namespace_and_mistyped_repo_are_one_line_each(db, hub, monkeypatch):
    line = _one_line_error(*publish(db, hub, monkeypatch, f"{ORG}/catalog", None))
    assert "HF_TOKEN" in line and hub.request_log == []
    line = _one_line_error(*publish(db, hub, monkeypatch, "someone-else/catalog", WRITE))
    assert "403" in line and "someone-else/catalog" not in hub.datasets.repos
    for bad in ("org/cat alog", "org", "a/b/c", "org/..x"):
        _one_line_error(*publish(db, hub, monkeypatch, bad, WRITE))
    assert hub.counts["lfs_uploads"] == 0 and hub.counts["commits"] == 0


def test_a_stale_parent_is_412_from_the_imitation(db, hub, monkeypatch):
    """The imitation's own 412: a commit whose parent is no longer the head (no injected fault)."""
    from indexer.hub.dataset import DatasetRepo, StaleParent

    assert publish(db, hub, monkeypatch)[0] == 0
    repo = DatasetRepo(f"{ORG}/catalog", endpoint=hub.endpoint, token=WRITE)
    parent = repo.info().sha
    other = db.parent / "note.txt"
    other.write_text("another writer\n")
    repo.commit({"note.txt": other}, parent, "another writer")
    with pytest.raises(StaleParent, match="updated since you opened"):
        repo.commit({"note2.txt": other}, parent, "stale")


def test_412_is_read_again_and_retried_once(db, hub, monkeypatch):
    assert publish(db, hub, monkeypatch)[0] == 0
    touch_catalog(db)
    hub.add_fault("POST", r"/api/datasets/org/catalog/commit/main", status=412, times=1)
    start = len(hub.request_log)
    code, out, err = publish(db, hub, monkeypatch)
    assert code == 0 and json.loads(out)["status"] == "published", err
    statuses = [s for m, p, s in hub.request_log[start:] if m == "POST" and p.endswith("/commit/main")]
    assert statuses == [412, 200]
    # twice in a row: one line, exit 2, the remote untouched
    touch_catalog(db, 2)
    hub.add_fault("POST", r"/api/datasets/org/catalog/commit/main", status=412, times=2)
    line = _one_line_error(*publish(db, hub, monkeypatch))
    assert "412" in line and hub.counts["commits"] == 2


def test_a_newer_snapshot_is_never_replaced_by_an_older_one(db, hub, monkeypatch, tmp_path):
    older = copy_catalog(db, tmp_path / "older")
    touch_catalog(db, 60)  # db now holds data an hour newer
    assert publish(db, hub, monkeypatch)[0] == 0
    newer_sha = remote_json(hub, "manifest.json")["snapshot"]["sha256"]
    line = _one_line_error(*publish(older, hub, monkeypatch))
    assert "newer data" in line
    assert remote_json(hub, "manifest.json")["snapshot"]["sha256"] == newer_sha and hub.counts["commits"] == 1


def test_commit_quota_429_is_waited_out_and_retried(db, tmp_path, monkeypatch):
    with dataset_hub(tmp_path / "hub", commit_quota=(1, 2.0)) as hub:
        assert publish(db, hub, monkeypatch)[0] == 0
        touch_catalog(db)
        code, out, err = publish(db, hub, monkeypatch)
        assert code == 0 and json.loads(out)["status"] == "published", err
        statuses = [s for m, p, s in hub.request_log if m == "POST" and p.endswith("/commit/main")]
        assert statuses[0] == 200 and 429 in statuses and statuses[-1] == 200
        assert hub.counts["commits"] == 2


def test_nightly_to_hub_publishes_and_never_a_private_repo(tmp_path, monkeypatch):
    """A private repo listed because the crawl has a token never enters the catalog, so never the dataset."""
    hub_dir = tmp_path / "hub" / "models"
    build_demo_hub(hub_dir)
    meta = json.loads((hub_dir / "hub.json").read_text())
    private = "lumen-ai/Lumen-1.5B-Instruct"
    meta[private]["private"] = True
    (hub_dir / "hub.json").write_text(json.dumps(meta))
    monkeypatch.setenv("INDEXER_FAMILIES", str(hub_dir / "families.toml"))
    with dataset_hub(tmp_path / "hub") as hub:
        db = tmp_path / "cat" / "catalog.db"
        code, out, err = run(["nightly", "--db", str(db), "--endpoint", hub.endpoint, "--publish-dir", "",
                              "--to-hub", f"{ORG}/catalog", "--report", str(tmp_path / "report.json")], monkeypatch)
        report = json.loads((tmp_path / "report.json").read_text())
        assert code == 0, (out, err, report.get("error"))
        assert report["steps"]["publish_hub"]["result"]["status"] == "published"
        assert f"{ORG}/catalog" in out
        files = remote_files(hub)
        snap = sqlite3.connect(files["catalog.sqlite"].abs_path)
        ids = {r[0] for r in snap.execute("SELECT repo_id FROM repos")}
        snap.close()
        assert ids and private not in ids
        assert private not in pq.read_table(files["data/repos.parquet"].abs_path).column("repo_id").to_pylist()
        with tarfile.open(files["tokens.tar"].abs_path) as t:
            for member in t:
                assert private.encode() not in t.extractfile(member).read()
        assert WRITE not in (tmp_path / "report.json").read_text()


def test_the_imitation_refuses_what_the_hub_refuses(hub):
    """Regular file over 10 MiB (400, the Hub's words), an lfsFile never uploaded, no token (401), missing repo
    (404 RepoNotFound): sent with the real client where it can send them, else as the client would."""
    import base64

    import httpx
    from huggingface_hub import HfApi

    api = HfApi(endpoint=hub.endpoint, token=WRITE)
    api.create_repo(f"{ORG}/raw", repo_type="dataset")
    head = api.dataset_info(f"{ORG}/raw").sha
    url = f"{hub.endpoint}/api/datasets/{ORG}/raw/commit/main"
    auth = {"Authorization": f"Bearer {WRITE}", "Content-Type": "application/x-ndjson"}

    def commit(*ops):
        lines = [{"key": "header", "value": {"summary": "x", "parentCommit": head}}, *ops]
        return httpx.post(url, content="\n".join(json.dumps(x) for x in lines), headers=auth)

    big = base64.b64encode(b"x" * ((10 << 20) + 1)).decode()
    r = commit({"key": "file", "value": {"path": "big.txt", "content": big, "encoding": "base64"}})
    assert r.status_code == 400 and "larger than 10 MiB" in r.headers["X-Error-Message"]
    r = commit({"key": "lfsFile", "value": {"path": "x.bin", "algo": "sha256", "oid": "0" * 64, "size": 3}})
    assert r.status_code == 400 and "LFS pointer" in r.json()["error"]
    assert httpx.post(url, content=b"", headers={"Content-Type": "application/x-ndjson"}).status_code == 401
    r = httpx.post(f"{hub.endpoint}/api/datasets/{ORG}/missing/preupload/main", json={"files": []},
                   headers={"Authorization": f"Bearer {WRITE}"})
    assert r.status_code == 404 and r.headers["X-Error-Code"] == "RepoNotFound"
    # preupload: the server decides; shouldIgnore is always there; an existing path carries its oid
    sample = {"a.parquet": b"PAR1", "b.db": b"SQLite format 3\0", ".gitattributes": b""}
    r = httpx.post(f"{hub.endpoint}/api/datasets/{ORG}/raw/preupload/main", headers=auth,
                   json={"files": [{"path": p, "size": 10, "sample": base64.b64encode(b).decode()}
                                   for p, b in sample.items()]})
    files = {f["path"]: f for f in r.json()["files"]}
    assert all("shouldIgnore" in f for f in files.values())
    assert files[".gitattributes"]["uploadMode"] == "regular" and len(files[".gitattributes"]["oid"]) == 40
    assert files["a.parquet"]["uploadMode"] == "lfs" and files["b.db"]["uploadMode"] == "lfs"
    # 409 carries the url, as create_repo(exist_ok=True) needs
    r = httpx.post(f"{hub.endpoint}/api/repos/create", headers={"Authorization": f"Bearer {WRITE}"},
                   json={"name": "raw", "organization": ORG, "type": "dataset"})
    assert r.status_code == 409 and r.json()["url"].endswith(f"/datasets/{ORG}/raw")
    # private=True (older clients) and visibility (2.4.0) both make a private repo
    for name, body in (("p1", {"private": True}), ("p2", {"visibility": "private"})):
        httpx.post(f"{hub.endpoint}/api/repos/create", headers={"Authorization": f"Bearer {WRITE}"},
                   json={"name": name, "organization": ORG, "type": "dataset", **body})
        assert hub.datasets.repos[f"{ORG}/{name}"].private
        assert httpx.get(f"{hub.endpoint}/api/datasets/{ORG}/{name}").status_code == 401


def test_xet_is_off_before_huggingface_hub_is_imported():
    """constants.py:343 reads HF_HUB_DISABLE_XET at import; with Xet on and no Xet server the upload fails with no
    fallback (docs/hub-upload.md §2.8). Importing the publish and pull modules first must leave it off."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_XET"}
    code = ("import indexer.jobs.hubpublish, indexer.jobs.pull\n"
            "from huggingface_hub import constants\n"
            "from huggingface_hub.utils._runtime import is_xet_available\n"
            "print(constants.HF_HUB_DISABLE_XET, is_xet_available())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False"]


def test_publish_shows_one_bar_on_a_terminal_and_none_in_a_log(demo_catalog, tmp_path):
    """Issue 30: the client's six bars (one per LFS file and one over them) went, escape codes and all, into a
    non-terminal log. Now: none in a log; one bar, ours, on a terminal."""
    import os
    import pty
    import subprocess
    import sys

    from hubkit import ORG, WRITE, copy_catalog, dataset_hub, touch_catalog

    db = copy_catalog(demo_catalog, tmp_path / "cat")
    env = {**os.environ, "HF_TOKEN": WRITE}
    env.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    with dataset_hub(tmp_path / "hub") as hub:
        cmd = [sys.executable, "-c", "from indexer.cli import cli; cli()", "publish", "--to-hub", f"{ORG}/catalog",
               "--db", str(db), "--endpoint", hub.endpoint]
        log = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        assert log.returncode == 0, log.stderr
        assert "\x1b" not in log.stderr and "\r" not in log.stderr and "%|" not in log.stderr, log.stderr
        touch_catalog(db)  # new data: the next publish uploads again
        parent, child = pty.openpty()
        import fcntl
        import struct
        import termios

        fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal 100 columns wide
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=child, env=env)
        os.close(child)
        seen = b""
        while True:
            try:
                chunk = os.read(parent, 65536)
            except OSError:  # the child closed its side
                break
            if not chunk:
                break
            seen += chunk
        assert proc.wait(timeout=300) == 0, seen
        os.close(parent)
    text = seen.decode("utf-8", "replace")
    assert "upload" in text and "%|" in text  # our bar
    assert "LFS files" not in text and "catalog.sqlite:" not in text and "tokens.tar:" not in text  # not theirs
