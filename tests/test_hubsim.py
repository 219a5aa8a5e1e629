"""The Hub imitation against the real, unmodified huggingface_hub client (in-process, endpoint= passed)."""

from __future__ import annotations

import hashlib
import http.client
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import MODELS as CORPUS
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from indexer.hubsim import HubServer, generate_synthetic_hub, git_blob_sha1

ROOT = Path(__file__).resolve().parents[1]


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


@pytest.fixture
def hub_dir(tmp_path) -> Path:
    root = tmp_path / "hub"
    cfg = json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 32000})
    _write(root / "org/alpha/config.json", cfg)
    _write(root / "org/alpha/tokenizer_config.json", '{"eos_token": "</s>", "bos_token": "<s>"}')
    _write(root / "org/alpha/README.md", "# alpha\n")
    _write(root / "org/alpha/sub/extra.txt", "extra\n")
    _write(root / "org/beta/config.json", cfg)
    _write(root / "org/beta/tokenizer.json", json.dumps({"model": {"vocab": {"a": 0}}}) * 50)
    _write(root / "org/beta/.hubmeta.json", json.dumps({"params": 7_000_000_000, "downloads": 5}))
    _write(root / "org/gated/config.json", cfg)
    _write(root / "org/huge/config.json", cfg)
    _write(root / "org/huge/tokenizer.json", "{}")
    _write(root / "org/secret/config.json", cfg)
    _write(root / "other__gamma__sub/config.json", "{not json")
    meta = {
        "org/alpha": {"downloads": 100, "likes": 3, "baseModels": "org/beta", "tags": ["text-generation"]},
        "org/gated": {"gated": "manual", "downloads": 50},
        "org/huge": {"fake_sizes": {"tokenizer.json": 200_000_000}},
        "org/secret": {"private": True},
    }
    _write(root / "hub.json", json.dumps(meta))
    return root


@pytest.fixture
def hub(hub_dir):
    with HubServer(hub_dir, page_size=2) as server:
        yield server


@pytest.fixture
def api(hub):
    return HfApi(endpoint=hub.endpoint, token=False)


def _download(hub, tmp_path, repo_id, filename, revision="main"):
    return hf_hub_download(
        repo_id, filename, revision=revision, endpoint=hub.endpoint, cache_dir=tmp_path / "cache", token=False
    )


# -- listing / info -----------------------------------------------------------------------------------
def test_list_models_expand_paginates(hub, api):
    expand = ["sha", "lastModified", "createdAt", "siblings", "safetensors", "downloads", "gated",
              "config", "tags"]
    models = {m.id: m for m in api.list_models(expand=expand)}
    assert set(models) == {"org/alpha", "org/beta", "org/gated", "org/huge", "other/gamma__sub"}  # no private
    assert hub.counts["list"] == 3 and hub.counts["api"] == 3
    pages = [p for m, p, s in hub.request_log]
    assert all("expand=sha" in p and "expand=tags" in p for p in pages)
    assert "cursor=2" in pages[1] and "cursor=4" in pages[2]

    alpha, beta = models["org/alpha"], models["org/beta"]
    assert alpha.sha == hub.repos["org/alpha"].sha and len(alpha.sha) == 40
    assert alpha.last_modified.tzinfo is not None
    assert alpha.base_models is None  # a listing cannot expand baseModels: the tags carry them
    assert alpha.tags[-2:] == ["base_model:org/beta", "base_model:finetune:org/beta"]
    assert alpha.config == {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                            "tokenizer_config": {"bos_token": "<s>", "eos_token": "</s>"}}
    assert [s.rfilename for s in alpha.siblings] == ["README.md", "config.json", "sub/extra.txt",
                                                     "tokenizer_config.json"]
    assert alpha.safetensors is None and beta.safetensors.total == 7_000_000_000
    assert models["org/gated"].gated == "manual" and alpha.gated is False
    assert models["other/gamma__sub"].config is None  # unparseable config.json: no digest
    assert alpha.likes is None  # not expanded: only _id, id and the requested fields
    assert alpha._id


def test_list_models_filters_and_sort(api):
    assert [m.id for m in api.list_models(author="org", search="ALP")] == ["org/alpha"]
    by_downloads = [m.id for m in api.list_models(sort="downloads", limit=3)]
    assert by_downloads == ["org/alpha", "org/gated", "org/beta"]
    assert {m.id for m in api.list_models(filter="text-generation", gated=True)} == {"org/gated"}
    full = next(iter(api.list_models(author="other", full=True)))
    assert full.sha and full.siblings[0].rfilename == "config.json"


def test_model_info_blobs_and_revisions(hub, api, hub_dir):
    info = api.model_info("org/beta", files_metadata=True)
    sib = {s.rfilename: s for s in info.siblings}
    cfg = (hub_dir / "org/beta/config.json").read_bytes()
    assert sib["config.json"].blob_id == git_blob_sha1(cfg) and sib["config.json"].size == len(cfg)
    tok = (hub_dir / "org/beta/tokenizer.json").read_bytes()
    assert sib["tokenizer.json"].lfs.sha256 == hashlib.sha256(tok).hexdigest()
    assert sib["tokenizer.json"].size == len(tok)
    assert api.model_info("org/beta", revision=info.sha).sha == info.sha
    assert api.model_info("org/alpha", expand=["sha"]).downloads is None
    assert api.model_info("org/gated").gated == "manual"  # gated repos stay visible
    with pytest.raises(RevisionNotFoundError):
        api.model_info("org/beta", revision="refs/pr/1")
    with pytest.raises(RepositoryNotFoundError):
        api.model_info("org/nope")
    with pytest.raises(RepositoryNotFoundError):
        api.model_info("org/secret")  # private: invisible without auth
    assert hub.counts["model_info"] == 7


def test_paths_info_and_tree(hub, api):
    infos = api.get_paths_info("org/alpha", ["config.json", "sub", "missing.json", "../hub.json"])
    assert [(type(i).__name__, i.path) for i in infos] == [("RepoFile", "config.json"), ("RepoFolder", "sub")]
    huge = api.get_paths_info("org/huge", ["tokenizer.json"])[0]
    assert huge.size == 200_000_000 and huge.lfs.size == 200_000_000  # fake size for size-cap tests
    tree = list(api.list_repo_tree("org/alpha", recursive=True))
    assert [e.path for e in tree] == ["README.md", "config.json", "sub", "sub/extra.txt",
                                      "tokenizer_config.json"]
    assert [e.path for e in api.list_repo_tree("org/alpha", path_in_repo="sub")] == ["sub/extra.txt"]
    assert hub.counts["paths_info"] == 2 and hub.counts["tree"] == 4  # 3 pages of 2 + 1


# -- downloads ----------------------------------------------------------------------------------------
def test_download_regular_lfs_and_pinned(hub, api, hub_dir, tmp_path):
    path = _download(hub, tmp_path, "org/alpha", "config.json")
    assert Path(path).read_bytes() == (hub_dir / "org/alpha/config.json").read_bytes()
    assert (hub.counts["resolve_head"], hub.counts["resolve_get"], hub.counts["cdn_get"]) == (1, 1, 0)

    hub.reset_counts()
    tok = (hub_dir / "org/beta/tokenizer.json").read_bytes()
    sha = hub.repos["org/beta"].sha
    path = _download(hub, tmp_path, "org/beta", "tokenizer.json", revision=sha)
    assert Path(path).read_bytes() == tok
    assert Path(path).resolve().name == hashlib.sha256(tok).hexdigest()  # blob named by X-Linked-Etag
    # Xet headers on the HEAD + HF_HUB_DISABLE_XET: the client GETs the /resolve URL again and follows
    # its redirect (file_download.py:1818), as against huggingface.co
    assert [(m, s) for m, _, s in hub.request_log] == [("HEAD", 302), ("GET", 302), ("GET", 200)]
    assert (hub.counts["resolve_head"], hub.counts["resolve_get"], hub.counts["cdn_get"]) == (1, 1, 1)
    assert hub.counts["bytes_sent"] == len(tok)

    hub.reset_counts()
    assert _download(hub, tmp_path, "org/beta", "tokenizer.json", revision=sha) == path
    assert hub.request_log == []  # pinned + cached: zero requests


def test_download_errors(hub, tmp_path):
    with pytest.raises(GatedRepoError):
        _download(hub, tmp_path, "org/gated", "config.json")
    with pytest.raises(RemoteEntryNotFoundError):
        _download(hub, tmp_path, "org/alpha", "missing.json")
    with pytest.raises(RepositoryNotFoundError) as exc:
        _download(hub, tmp_path, "org/nope", "config.json")
    assert not isinstance(exc.value, GatedRepoError)
    with pytest.raises(RevisionNotFoundError):
        _download(hub, tmp_path, "org/alpha", "config.json", revision="0" * 40)
    assert hub.request_log[-1][2] == 404
    assert ("HEAD", "/org/alpha/resolve/main/missing.json", 404) in hub.request_log


def test_range_and_path_traversal(hub):
    conn = http.client.HTTPConnection("127.0.0.1", hub.port, timeout=5)

    def get(path, headers=None):
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read(), r

    status, body, r = get("/org/alpha/resolve/main/sub/extra.txt", {"Range": "bytes=2-"})
    assert (status, body, r.getheader("Content-Range")) == (206, b"tra\n", "bytes 2-5/6")
    for bad in ("/org/alpha/resolve/main/../../hub.json", "/org/alpha/resolve/main/%2e%2e/%2e%2e/hub.json",
                "/org/alpha/resolve/main/sub/..%2F..%2F..%2Fhub.json", "/org/alpha/resolve/main//etc/passwd"):
        status, body, _ = get(bad)
        assert status == 400 and b"meta" not in body, bad
    status, _, r = get("/org/alpha/resolve/main/.hubmeta.json")
    assert status == 404 and r.getheader("X-Error-Code") == "EntryNotFound"
    status, body, _ = get("/api/agent-harnesses")
    assert json.loads(body) == {"standardEnvVars": [], "harnesses": {}}
    assert hub.counts["api"] == 0
    conn.close()


def test_reload_picks_up_changes(hub, api, hub_dir):
    old = api.model_info("org/alpha").sha
    cfg = hub_dir / "org/alpha/config.json"
    cfg.unlink()  # replace, never write in place: synthetic hubs hard-link identical files
    cfg.write_text('{"model_type": "mistral"}')
    hub.reload()
    info = api.model_info("org/alpha")
    assert info.sha != old and info.config["model_type"] == "mistral"
    assert api.get_paths_info("org/alpha", "config.json")[0].blob_id == git_blob_sha1(cfg.read_bytes())


# -- faults -------------------------------------------------------------------------------------------
def test_429_on_list_is_retried(hub, api, no_client_sleep):
    hub.add_fault("GET", r"^/api/models$", status=429, headers={"Retry-After": "1"})
    assert len(list(api.list_models())) == 5
    assert no_client_sleep == [2.0]  # Retry-After N -> N+1 s
    assert [s for _, _, s in hub.request_log] == [429, 200, 200, 200]
    assert hub.counts["list"] == 4


def test_503_on_paths_info_not_retried(hub, api):
    hub.add_fault("POST", r"/paths-info/", status=503)
    with pytest.raises(HfHubHTTPError) as exc:
        api.get_paths_info("org/alpha", ["config.json"])
    assert exc.value.response.status_code == 503
    assert api.get_paths_info("org/alpha", ["config.json"])  # fault used up


def test_reset_and_truncate_faults(hub, api, hub_dir, tmp_path, no_client_sleep):
    hub.add_fault("GET", r"^/api/models/org/alpha$", kind="reset")
    with pytest.raises(Exception):  # noqa: B017 - any transport error is fine
        api.model_info("org/alpha")
    hub.add_fault("GET", r"^/api/models/org/alpha$", kind="truncate")
    with pytest.raises(Exception):  # noqa: B017
        api.model_info("org/alpha")
    hub.add_fault("GET", r"^/api/models/org/alpha$", kind="malformed_json")
    with pytest.raises(ValueError):
        api.model_info("org/alpha")
    assert api.model_info("org/alpha").id == "org/alpha"

    # reset = TCP RST mid-body: the download GET fails (httpx ReadError is not retried by the client).
    hub.add_fault("GET", r"/resolve/", kind="reset")
    with pytest.raises(Exception):  # noqa: B017
        _download(hub, tmp_path, "org/alpha", "config.json")
    # truncate = short body + close: the client retries the GET (1 s sleep, patched) and succeeds.
    hub.add_fault("GET", r"/resolve/", kind="truncate")
    path = _download(hub, tmp_path, "org/alpha", "config.json")
    assert Path(path).read_bytes() == (hub_dir / "org/alpha/config.json").read_bytes()
    assert no_client_sleep == [1]
    # ... and fails once the client's resume attempts are exhausted.
    hub.add_fault("GET", r"/resolve/", kind="truncate", times=None)
    with pytest.raises(Exception):  # noqa: B017
        _download(hub, tmp_path, "org/alpha", "README.md")
    assert len(no_client_sleep) == 1 + 5


def test_slow_fault_and_fault_order(hub, api):
    hub.add_fault("GET", r"^/api/models/", kind="slow", delay=0.3)
    hub.add_fault("*", r"^/api/models/", status=500)
    t0 = time.monotonic()
    assert api.model_info("org/alpha").id == "org/alpha"
    assert time.monotonic() - t0 >= 0.3
    with pytest.raises(HfHubHTTPError):
        api.model_info("org/alpha")
    assert hub.faults == []


# -- synthetic hub ------------------------------------------------------------------------------------
def _tree_digest(root: Path) -> dict:
    files = (p for p in root.rglob("*") if p.is_file())
    return {str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest() for p in files}


def test_synthetic_hub_is_deterministic_and_deduplicated(tmp_path):
    a = generate_synthetic_hub(tmp_path / "a", 150, seed=7)
    b = generate_synthetic_hub(tmp_path / "b", 150, seed=7)
    assert a == b and a["n_repos"] == 150
    assert _tree_digest(tmp_path / "a") == _tree_digest(tmp_path / "b")
    assert generate_synthetic_hub(tmp_path / "c", 150, seed=8) != a

    with HubServer(tmp_path / "a") as hub:
        repos = hub.repos
        assert len(repos) == 150 and len({r.sha for r in repos.values()}) == 150
        n_files = sum(len(r.files) for r in repos.values())
        assert a["n_distinct_blobs"] < n_files / 2
        tok_blobs = [r.files["tokenizer.json"].oid for r in repos.values() if "tokenizer.json" in r.files]
        assert max(tok_blobs.count(x) for x in set(tok_blobs)) >= 10  # a base tokenizer shared by fine-tunes
        meta = json.loads((tmp_path / "a/hub.json").read_text())
        base = a["bases"][0]
        assert any(m.get("synthetic_base") == base for m in meta.values())
        api = HfApi(endpoint=hub.endpoint, token=False)
        expand = ["safetensors", "tags"]
        models = list(api.list_models(sort="downloads", expand=expand, limit=200))
        assert len(models) == 150 and all(m.safetensors.total > 0 for m in models)
        chat = [m for m in models if meta[m.id]["synthetic_kind"] == "chat"]
        assert chat and all("conversational" in m.tags for m in chat)

    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tmp_path / "a" / base / "tokenizer.json"))
    cfg = json.loads((tmp_path / "a" / base / "config.json").read_text())
    assert tok.get_vocab_size() == cfg["vocab_size"]
    assert a["kinds"]["base"] == len(a["bases"]) and a["kinds"].get("unique", 0) > 0


@pytest.mark.skipif(not CORPUS.is_dir(), reason="corpus not available")
def test_synthetic_hub_from_real_base_dirs(tmp_path):
    dirs = [CORPUS / "Josue1855__vicuna", CORPUS / "kamgueblondin__testGPT"]
    dirs = [d for d in dirs if d.is_dir()] or sorted(CORPUS.iterdir())[:2]
    summary = generate_synthetic_hub(tmp_path / "h", 40, seed=1, base_dirs=dirs)
    assert summary["bases"][0] == dirs[0].name.replace("__", "/", 1)
    with HubServer(tmp_path / "h") as hub:
        base = hub.repos[summary["bases"][0]]
        for fn, fe in base.files.items():
            assert fe.blob_sha1 == git_blob_sha1((dirs[0] / fn).read_bytes())
        assert any(r.meta.get("synthetic_base") == base.id for r in hub.repos.values())


def test_cli_serves_directory(hub_dir, tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "indexer.hubsim", str(hub_dir), "--port", "0", "--page-size", "10"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        endpoint = proc.stdout.readline().strip()
        assert endpoint.startswith("http://127.0.0.1:")
        assert len(list(HfApi(endpoint=endpoint, token=False).list_models())) == 5
    finally:
        proc.terminate()
        proc.wait(timeout=5)
    out = subprocess.run(
        [sys.executable, "-m", "indexer.hubsim", "--synthetic", "20", str(tmp_path / "s"), "--generate-only"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0 and json.loads(out.stderr)["n_repos"] == 20


# -- what the real Hub does that the client does not show (HUB-API §0.1) -------------------------------
@pytest.mark.parametrize("field", ["baseModels", "childrenModelCount", "usedStorage", "nonsense"])
def test_listing_refuses_expand_values_only_model_info_serves(hub, api, field):
    from huggingface_hub.errors import BadRequestError

    with pytest.raises(BadRequestError, match='"expand" must be one of'):
        list(api.list_models(expand=["sha", field]))
    assert hub.counts["list"] == 1  # a 400 is not retried: one bad value kills a crawl on page 1
    if field != "nonsense":
        info = api.model_info("org/alpha", expand=[field])
        assert getattr(info, {"baseModels": "base_models", "childrenModelCount": "children_model_count",
                              "usedStorage": "used_storage"}[field]) is not None
    else:
        with pytest.raises(BadRequestError):
            api.model_info("org/alpha", expand=[field])


def test_lfs_files_carry_xet_headers_and_there_is_no_cas(hub, api, tmp_path, monkeypatch):
    sha = hub.repos["org/beta"].sha
    conn = http.client.HTTPConnection("127.0.0.1", hub.port, timeout=5)
    conn.request("HEAD", f"/org/beta/resolve/{sha}/tokenizer.json")
    resp = conn.getresponse()
    resp.read()
    assert resp.status == 302 and len(resp.getheader("X-Xet-Hash")) == 64
    assert f"/api/models/org/beta/xet-read-token/{sha}>" in resp.getheader("Link")
    assert 'rel="xet-auth"' in resp.getheader("Link") and resp.getheader("X-Linked-Etag")
    conn.request("HEAD", f"/org/alpha/resolve/{sha}/config.json")  # regular files: no Xet
    plain = conn.getresponse()
    plain.read()
    assert plain.getheader("X-Xet-Hash") is None
    (entry,) = api.get_paths_info("org/beta", ["tokenizer.json"], revision=sha)
    assert entry.xet_hash == resp.getheader("X-Xet-Hash")
    # A client that does use Xet (hf_xet is installed) asks for a read token, gets 404, and fails.
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", False)
    with pytest.raises(HfHubHTTPError):
        _download(hub, tmp_path, "org/beta", "tokenizer.json", revision=sha)
    assert any("xet-read-token" in p for m, p, s in hub.request_log)


def test_quotas_are_announced_on_every_response_and_enforced(hub_dir):
    with HubServer(hub_dir) as hub:  # defaults: the anonymous tier
        conn = http.client.HTTPConnection("127.0.0.1", hub.port, timeout=5)
        conn.request("GET", "/api/models/org/alpha")
        r = conn.getresponse()
        r.read()
        assert r.getheader("RateLimit") == '"api";r=499;t=300'
        assert r.getheader("RateLimit-Policy") == '"fixed window";"api";q=500;w=300'
        conn.request("HEAD", f"/org/alpha/resolve/{hub.repos['org/alpha'].sha}/config.json",
                     headers={"Authorization": "Bearer hf_x"})
        r = conn.getresponse()
        r.read()
        assert r.getheader("RateLimit-Policy") == '"fixed window";"resolvers";q=5000;w=300'  # free tier
    with HubServer(hub_dir, api_quota=2, window=2) as hub:
        api = HfApi(endpoint=hub.endpoint, token=False)
        api.model_info("org/alpha")
        api.model_info("org/beta")
        with pytest.raises(HfHubHTTPError) as exc:
            api.model_info("org/alpha")
        resp = exc.value.response
        assert resp.status_code == 429 and resp.headers["Retry-After"] in ("1", "2")
        assert resp.headers["RateLimit"].startswith('"api";r=0;t=')
        time.sleep(2.05)
        assert api.model_info("org/alpha").id == "org/alpha"  # a new window
        assert hub.limits.refused == {"api": 1, "resolvers": 0}


def test_private_repos_only_with_a_token(hub, api):
    assert "org/secret" not in {m.id for m in api.list_models()}
    with_token = HfApi(endpoint=hub.endpoint, token="hf_fake")
    listed = {m.id: m for m in with_token.list_models(expand=["private"])}
    assert listed["org/secret"].private is True and listed["org/alpha"].private is False
    assert with_token.model_info("org/secret").id == "org/secret"
    with pytest.raises(RepositoryNotFoundError):
        api.model_info("org/secret")


def test_renamed_repo_redirects_and_deleted_repo_disappears(hub, api, tmp_path):
    hub.rename_repo("org/alpha", "org/alpha-v2")
    hub.delete_repo("org/huge")
    ids = {m.id for m in api.list_models()}
    assert "org/alpha-v2" in ids and "org/alpha" not in ids and "org/huge" not in ids
    assert api.model_info("org/alpha").id == "org/alpha-v2"
    path = _download(hub, tmp_path, "org/alpha", "config.json")  # HEAD follows the same-origin 307
    assert Path(path).read_bytes() == Path(hub.repos["org/alpha-v2"].files["config.json"].abs_path).read_bytes()
    assert ("HEAD", "/org/alpha/resolve/main/config.json", 307) in hub.request_log
    with pytest.raises(RepositoryNotFoundError):
        api.model_info("org/huge")


def test_stalled_answer_sends_nothing(hub):
    import socket

    hub.add_fault("GET", r"^/api/models$", kind="stall", delay=5)
    sock = socket.create_connection(("127.0.0.1", hub.port), timeout=0.5)
    sock.sendall(b"GET /api/models HTTP/1.1\r\nHost: x\r\n\r\n")
    with pytest.raises(TimeoutError):
        sock.recv(1)
    sock.close()


def test_listing_that_keeps_failing_with_504(hub, api, no_client_sleep):
    hub.add_fault("GET", r"^/api/models$", status=504, times=None)
    with pytest.raises(HfHubHTTPError) as exc:
        list(api.list_models())
    assert exc.value.response.status_code == 504 and hub.counts["list"] == 6  # 1 + the client's 5 retries
    assert no_client_sleep == [1, 2, 4, 8, 8]


def test_cli_stall_accepts_and_never_answers(tmp_path):
    import socket
    import subprocess
    import sys

    from tokfactory import make_model

    make_model(tmp_path / "hub" / "org" / "m")
    proc = subprocess.Popen([sys.executable, "-m", "indexer.hubsim", str(tmp_path / "hub"), "--stall", r"/resolve/"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = int(proc.stdout.readline().strip().rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"GET /org/m/resolve/main/config.json HTTP/1.1\r\nHost: x\r\n\r\n")
            with pytest.raises(TimeoutError):
                sock.recv(1)
        with socket.create_connection(("127.0.0.1", port), timeout=5.0) as sock:  # other paths still answer
            sock.sendall(b"GET /api/models/org/m HTTP/1.1\r\nHost: x\r\n\r\n")
            assert sock.recv(12) == b"HTTP/1.1 200"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_cli_stopped_with_sigterm_removes_its_dataset_folder(hub_dir, tmp_path):
    """Issue 30: SIGINT removed the imitation's temporary /tmp/hubsim-datasets-* folder, SIGTERM left it."""
    import os

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "indexer.hubsim", str(hub_dir), "--port", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "TMPDIR": str(tmp)})
    try:
        assert proc.stdout.readline().startswith("http://127.0.0.1:")
        assert [p.name[:16] for p in tmp.iterdir()] == ["hubsim-datasets-"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert list(tmp.iterdir()) == []
