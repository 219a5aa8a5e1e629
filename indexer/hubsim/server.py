"""A local HTTP imitation of the Hugging Face Hub that the unmodified ``huggingface_hub`` client accepts.

See docs/hub-api.md (the project's copy of HUB-API.md): section 8 is the route table implemented here,
section 0.1 the real-Hub behaviours reproduced, each on by default as on huggingface.co:

* ``expand`` validated per endpoint (a listing refuses baseModels, childrenModelCount, usedStorage: 400);
* ``base_model:<id>`` and ``base_model:<relation>:<id>`` tags on derived repos;
* Xet headers on the ``/resolve`` HEAD of LFS files and ``xetHash`` in paths-info/tree entries, with no
  Xet CAS behind them: ``xet-read-token`` answers 404, so only the plain HTTP fallback works;
* fixed-window quotas per bucket (``ratelimit.py``), announced on every response, enforced with 429;
* private repos listed (and served) only with a token; gated repos browsable, their ``/resolve`` refused
  (401 ``GatedRepo`` anonymous, 403 with a token not in ``gated_access``);
* renamed repos (``renamed_from`` in the metadata): the old id answers a same-origin 307 to the new one;
* lossy listings (§0.1.11): ``listing_siblings`` in a repo's metadata (``"empty"`` or how many entries
  survive) empties or truncates its ``siblings`` in listings only, as the Hub's cache sometimes does;
  ``lossy_siblings`` (a share of repos, picked by a hash of the id) does it hub-wide;
* faults: statuses (e.g. a listing that keeps answering 504), resets, truncation, slow and stalled answers;
  ``fail_deep_listings``: 504 on listing pages past a depth (huggingface_hub #2460);
* sorted listings page by keyset on (key, ``_id``) with opaque cursors (§0.1.13).

Two servers run: the hub itself and a "CDN" on another port that LFS downloads are redirected to
(a different origin, so the client does not follow the redirect on its HEAD).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

from .ratelimit import WINDOW, RateLimits
from .repos import FileEntry, Repo, RepoStore

COUNTER_KINDS = (
    "api",
    "list",
    "model_info",
    "paths_info",
    "tree",
    "resolve_head",
    "resolve_get",
    "cdn_get",
    "bytes_sent",
)
# Share of repos whose listing loses siblings by default: the Hub does it now and then (§0.1.11).
LOSSY_SIBLINGS = 0.05
FAULT_KINDS = ("status", "reset", "truncate", "slow", "stall", "malformed_json")
# ExpandModelProperty_T (huggingface_hub hf_api.py:159-191): what /api/models/{id} accepts.
EXPAND_MODEL = (
    "author", "baseModels", "cardData", "childrenModelCount", "config", "createdAt", "disabled", "downloads",
    "downloadsAllTime", "evalResults", "gated", "gguf", "inference", "inferenceProviderMapping", "lastModified",
    "library_name", "likes", "mask_token", "model-index", "pipeline_tag", "private", "resourceGroup",
    "safetensors", "sha", "siblings", "spaces", "tags", "transformersInfo", "trendingScore", "usedStorage",
    "widgetData",
)
# A listing refuses these (huggingface_hub PR #3182: "only accepted when using the /api/models/repo_id
# endpoint"); the 2.4.0 list_models docstring leaves them out (hf_api.py:2380).
LIST_REFUSED_EXPAND = ("baseModels", "childrenModelCount", "usedStorage")
EXPAND_LIST = tuple(e for e in EXPAND_MODEL if e not in LIST_REFUSED_EXPAND)
SORT_KEYS = {
    "downloads": lambda r: r.meta.get("downloads", 0),
    "likes": lambda r: r.meta.get("likes", 0),
    "lastModified": lambda r: r.last_modified,
    "createdAt": lambda r: r.created_at,
    "trendingScore": lambda r: r.meta.get("trendingScore", 0),
}
DEFAULT_LIST_FIELDS = (
    "likes",
    "trendingScore",
    "private",
    "downloads",
    "tags",
    "pipeline_tag",
    "library_name",
    "createdAt",
    "modelId",
)
FULL_LIST_FIELDS = ("author", "sha", "lastModified", "gated", "disabled", "siblings")
MODEL_INFO_FIELDS = (
    "private",
    "pipeline_tag",
    "library_name",
    "tags",
    "downloads",
    "likes",
    "modelId",
    "author",
    "sha",
    "lastModified",
    "gated",
    "disabled",
    "config",
    "cardData",
    "transformersInfo",
    "siblings",
    "spaces",
    "safetensors",
    "baseModels",
    "createdAt",
    "usedStorage",
)
TOKENIZER_CONFIG_DIGEST_KEYS = ("bos_token", "eos_token", "pad_token", "unk_token", "chat_template")


@dataclass
class Fault:
    method: str  # "*" matches any method
    path_regex: str
    kind: str = "status"
    status: int = 429
    headers: dict = field(default_factory=dict)
    times: int | None = 1  # None: never used up
    delay: float | None = 1.0  # for kind="slow" / "stall"; a stall with None never answers (until stop)
    hits: int = 0
    query_regex: str | None = None  # also match the raw query string (e.g. one listing's author)

    def matches(self, method: str, raw_path: str, raw_query: str = "") -> bool:
        if self.method not in ("*", method):
            return False
        if self.query_regex is not None and not (
                re.search(self.query_regex, raw_query) or re.search(self.query_regex, unquote(raw_query))):
            return False
        return bool(re.search(self.path_regex, raw_path) or re.search(self.path_regex, unquote(raw_path)))


class HttpError(Exception):
    """An error answer with the Hub's ``X-Error-Code`` convention (the client maps it to exceptions)."""

    def __init__(self, status: int, code: str | None, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = headers or {}


@dataclass
class Response:
    status: int = 200
    headers: dict = field(default_factory=dict)
    body: bytes = b""
    file: FileEntry | None = None  # stream this file instead of ``body``
    file_range: tuple[int, int] | None = None  # inclusive byte range of ``file``


def _json_response(obj, status: int = 200, headers: dict | None = None) -> Response:
    body = json.dumps(obj).encode()
    return Response(status, {"Content-Type": "application/json", **(headers or {})}, body)


def _validate_expand(values, allowed) -> None:
    """The Hub's answer to an ``expand`` value the endpoint does not serve (HUB-API §0.1.1)."""
    for value in values:
        if value not in allowed:
            raise HttpError(400, None, f'"expand" must be one of [{", ".join(allowed)}]')


def _token_of(headers) -> str | None:
    auth = (headers.get("Authorization") or "") if headers is not None else ""
    if not auth.lower().startswith("bearer "):
        return None
    return auth[7:].strip() or None


def _base_models(meta: dict) -> dict:
    """Metadata ``baseModels`` (id, list of ids, or the Hub's dict) in the real Hub's shape."""
    base = meta["baseModels"]
    if isinstance(base, dict):
        return base
    ids = [base] if isinstance(base, str) else list(base)
    return {"relation": meta.get("baseRelation", "finetune"), "models": [{"id": i} for i in ids]}


def _clean_repo_path(path: str) -> str:
    """Reject anything that could escape the repo: absolute paths, ``..``, ``.``, empty segments, NUL."""
    if not path or path.startswith("/") or "\\" in path or "\0" in path:
        raise HttpError(400, None, f"Invalid path: {path!r}")
    if any(seg in ("", ".", "..") for seg in path.split("/")):
        raise HttpError(400, None, f"Invalid path: {path!r}")
    return path


def _cursor(query: dict) -> int:
    value = (query.get("cursor") or ["0"])[-1] or "0"
    if not value.isdigit():
        raise HttpError(400, None, f"Invalid cursor: {value!r}")
    return int(value)


def _keyset_cursor(key, id_: str) -> str:
    """An opaque cursor after (sort key, _id), as the Hub's keyset pagination hands out."""
    return base64.urlsafe_b64encode(json.dumps([key, id_]).encode()).decode()


def _keyset_start(repos: list, raw: str, sort, id_of) -> int:
    """Index of the first repo after the cursor's (key, _id) in (key descending, _id ascending) order: a
    repo modified since the cursor was handed out moves above it instead of shifting the pages below."""
    if not raw:
        return 0
    try:
        key, id_ = json.loads(base64.urlsafe_b64decode(raw.encode()))
    except (ValueError, TypeError):
        raise HttpError(400, None, f"Invalid cursor: {raw!r}") from None
    for i, r in enumerate(repos):
        k = sort(r)
        if k < key or (k == key and id_of(r) > id_):
            return i
    return len(repos)


def _parse_range(header: str, size: int) -> tuple[int, int] | None:
    """``bytes=a-b`` / ``bytes=a-`` / ``bytes=-n`` -> inclusive (start, end); None if unusable."""
    m = re.fullmatch(r"\s*bytes=(\d*)-(\d*)\s*", header or "")
    if not m or (not m.group(1) and not m.group(2)):
        return None
    if m.group(1):
        start = int(m.group(1))
        end = int(m.group(2)) if m.group(2) else size - 1
    else:
        start, end = max(0, size - int(m.group(2))), size - 1
    end = min(end, size - 1)
    if start > end:
        raise HttpError(416, None, "Range not satisfiable", {"Content-Range": f"bytes */{size}"})
    return start, end


class HubServer:
    """Serves a hub directory on 127.0.0.1 (ephemeral ports by default) in daemon threads.

    ``counts`` (a Counter, see COUNTER_KINDS), ``request_log`` [(method, path, status)],
    ``add_fault(...)`` for fault injection, ``reload()`` after changing files on disk.
    """

    def __init__(
        self,
        root: str,
        page_size: int = 100,
        lfs_threshold: int = 1 << 20,
        host: str = "127.0.0.1",
        port: int = 0,
        cdn_port: int = 0,
        tree_page_size: int | None = None,
        auto_reload: bool = False,
        xet: bool = True,
        rate_limits: bool = True,
        api_quota: int | None = None,
        resolver_quota: int | None = None,
        window: float = WINDOW,
        token_api_quota: int | None = None,
        token_resolver_quota: int | None = None,
        lossy_siblings: float = LOSSY_SIBLINGS,
    ):
        self.lossy_siblings = lossy_siblings
        self.deep_listing_504: tuple[int, int | None] | None = None  # see fail_deep_listings
        self.store = RepoStore(root, lfs_threshold=lfs_threshold)
        self.page_size = page_size
        self.tree_page_size = tree_page_size or page_size
        self.auto_reload = auto_reload
        self.xet = xet
        self.limits = None
        if rate_limits:
            anon = {k: v for k, v in (("api", api_quota), ("resolvers", resolver_quota)) if v}
            tok = {k: v for k, v in (("api", token_api_quota), ("resolvers", token_resolver_quota)) if v}
            self.limits = RateLimits(anon, tok, window)
        self._stopping = threading.Event()
        self.host, self._port, self._cdn_port = host, port, cdn_port
        self.counts: Counter = Counter({k: 0 for k in COUNTER_KINDS})
        self.request_log: list[tuple[str, str, int]] = []
        self.user_agents: Counter = Counter()  # User-Agent header -> requests (the client identifies itself)
        self.faults: list[Fault] = []
        self._lock = threading.Lock()
        self._json_cache: dict[str, object] = {}
        self._servers: list[ThreadingHTTPServer] = []
        self._threads: list[threading.Thread] = []

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> HubServer:
        if self._servers:
            return self
        for role, port in (("hub", self._port), ("cdn", self._cdn_port)):
            srv = _Server((self.host, port), _Handler)
            srv.hub, srv.role = self, role
            t = threading.Thread(target=srv.serve_forever, args=(0.05,), name=f"hubsim-{role}", daemon=True)
            t.start()
            self._servers.append(srv)
            self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases stalled handlers
        for srv in self._servers:
            srv.shutdown()
            srv.server_close()
            srv.close_connections()  # unblock handler threads waiting on idle keep-alive connections
        for t in self._threads:
            t.join(timeout=5)
        self._servers, self._threads = [], []

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._servers[0].server_address[1]

    @property
    def cdn_port(self) -> int:
        return self._servers[1].server_address[1]

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def cdn_endpoint(self) -> str:
        return f"http://{self.host}:{self.cdn_port}"

    @property
    def repos(self) -> dict[str, Repo]:
        return self.store.repos

    # -- test helpers ----------------------------------------------------------------------------
    def reload(self) -> None:
        """Rescan the tree (new files, changed contents and metadata give new shas)."""
        self.store.load()

    def reset_counts(self) -> None:
        """Zero every counter and clear ``request_log``."""
        with self._lock:
            self.counts.clear()
            self.counts.update({k: 0 for k in COUNTER_KINDS})
            self.request_log.clear()
            self.user_agents.clear()

    def add_fault(
        self,
        method: str,
        path_regex: str,
        status: int = 429,
        headers: dict | None = None,
        times: int | None = 1,
        kind: str = "status",
        delay: float | None = 1.0,
        query_regex: str | None = None,
    ) -> Fault:
        """Queue a fault for requests whose method and path (and query, if given) match; first match wins.

        ``stall``: the request is accepted and read, then the connection stays open and nothing is sent for
        ``delay`` seconds, or never (``delay=None``) until the server stops.
        """
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; expected one of {FAULT_KINDS}")
        fault = Fault(method.upper(), path_regex, kind, status, dict(headers or {}), times, delay,
                      query_regex=query_regex)
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self.faults.clear()

    def rename_repo(self, old: str, new: str) -> None:
        """Move a repo to a new id on disk; the old id then redirects (as on the Hub)."""
        self.store.rename(old, new)

    def delete_repo(self, repo_id: str) -> None:
        self.store.delete(repo_id)

    def _take_fault(self, method: str, raw_path: str, raw_query: str = "") -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.matches(method, raw_path, raw_query):
                    fault.hits += 1
                    if fault.times is not None:
                        fault.times -= 1
                        if fault.times <= 0:
                            self.faults.remove(fault)
                    return fault
        return None

    def _count(self, kind: str, n: int = 1) -> None:
        with self._lock:
            self.counts[kind] += n

    def _log(self, method: str, path: str, status: int) -> None:
        with self._lock:
            self.request_log.append((method, path, status))

    # -- routing ---------------------------------------------------------------------------------
    @staticmethod
    def classify(method: str, raw_path: str, role: str) -> list[str]:
        """Counter kinds of a request; faulted requests count too (they cost the real Hub's budget)."""
        segs = raw_path.split("/")[1:]
        if role == "cdn":
            return ["cdn_get"] if method == "GET" else []
        if segs[:1] != ["api"]:
            if len(segs) >= 5 and segs[2] == "resolve":
                return ["resolve_head" if method == "HEAD" else "resolve_get"]
            return []
        if segs[1:2] == ["agent-harnesses"]:
            return []
        if segs[1:] == ["models"]:
            return ["api", "list"]
        if segs[1:2] == ["models"] and len(segs) >= 4:
            rest = segs[4:]
            if not rest or rest[0] == "revision":
                return ["api", "model_info"]
            if rest[0] in ("paths-info", "tree"):
                return ["api", rest[0].replace("-", "_")]
        return ["api"]

    def route(self, method: str, raw_path: str, query: dict, body: bytes, headers, role: str) -> Response:
        segs = [unquote(s) for s in raw_path.split("/")[1:]]
        if role == "cdn":
            return self._cdn(method, segs, headers)
        if segs[:2] == ["api", "agent-harnesses"]:
            return _json_response({"standardEnvVars": [], "harnesses": {}})
        moved = self._moved(raw_path)
        if moved is not None:
            return Response(307, {"Location": moved})
        if segs and segs[0] == "api":
            return self._api(method, segs[1:], query, body, headers)
        if len(segs) >= 5 and segs[2] == "resolve" and method in ("GET", "HEAD"):
            return self._resolve(method, segs[0] + "/" + segs[1], segs[3], "/".join(segs[4:]), headers)
        raise HttpError(404, None, "Not Found")

    def _moved(self, raw_path: str) -> str | None:
        """Same-origin relative Location for a renamed repo's old id (HUB-API 6.3: followed by the client)."""
        parts = raw_path.split("/")
        at = 3 if parts[1:3] == ["api", "models"] else 1
        if len(parts) < at + 2:
            return None
        old = unquote(parts[at]) + "/" + unquote(parts[at + 1])
        new = self.store.redirects.get(old)
        if new is None or old in self.store.repos:
            return None
        return "/".join(parts[:at] + [quote(p) for p in new.split("/")] + parts[at + 2:])

    def _api(self, method, segs, query, body, headers) -> Response:
        if segs == ["whoami-v2"]:
            return _json_response({"type": "user", "name": "hubsim"})
        if segs[:1] != ["models"]:
            raise HttpError(404, None, "Not Found")
        if len(segs) == 1 and method == "GET":
            return self._list_models(query, headers)
        if len(segs) < 3:
            raise HttpError(404, None, "Not Found")
        repo_id, rest = f"{segs[1]}/{segs[2]}", segs[3:]
        if method == "GET" and not rest:
            return self._model_info(repo_id, "main", query, headers)
        if method == "GET" and len(rest) == 2 and rest[0] == "revision":
            return self._model_info(repo_id, rest[1], query, headers)
        if method == "POST" and len(rest) == 2 and rest[0] == "paths-info":
            return self._paths_info(repo_id, rest[1], body, headers)
        if method == "GET" and len(rest) >= 2 and rest[0] == "tree":
            return self._tree(repo_id, rest[1], "/".join(rest[2:]), query, headers)
        if method == "GET" and len(rest) == 2 and rest[0] == "xet-read-token":
            self._repo(repo_id, headers)
            # No Xet CAS here: a client that tries Xet fails; HF_HUB_DISABLE_XET=1 falls back to HTTP.
            raise HttpError(404, None, "Xet storage is not available on this hub")
        raise HttpError(404, None, "Not Found")

    # -- repo lookup -----------------------------------------------------------------------------
    def _repo(self, repo_id: str, headers=None) -> Repo:
        repo = self.store.repos.get(repo_id)
        if repo is None or (repo.private and _token_of(headers) is None):
            raise HttpError(
                401,
                "RepoNotFound",
                "Repository not found",
                {"WWW-Authenticate": 'Bearer realm="Authentication required", charset="UTF-8"'},
            )
        return repo

    @staticmethod
    def _check_gate(repo: Repo, headers) -> None:
        """``/resolve`` of a gated repo (HUB-API §0.1.8, §0.1.10): 401 GatedRepo without a token, 403 GatedRepo
        with a token that was not granted access (metadata ``gated_access``: the tokens that were). Listing,
        model info, tree and paths-info stay open, as on the Hub."""
        token = _token_of(headers)
        if token is None:
            raise HttpError(401, "GatedRepo", f"Access to model {repo.id} is restricted. You must have access to "
                            "it and be authenticated to access it. Please log in.")
        if token not in (repo.meta.get("gated_access") or ()):
            raise HttpError(403, "GatedRepo", f"Access to model {repo.id} is restricted and you are not in the "
                            f"authorized list. Visit https://huggingface.co/{repo.id} to ask for access.")

    @staticmethod
    def _check_revision(repo: Repo, rev: str) -> None:
        if rev not in ("main", repo.sha):
            raise HttpError(404, "RevisionNotFound", f"Invalid rev id: {rev}")

    # -- model JSON ------------------------------------------------------------------------------
    def _config_digest(self, repo: Repo) -> dict | None:
        """What the real Hub serves as ``config``: a digest of config.json (+ tokenizer_config bits)."""
        cfg = self._read_json(repo, "config.json")
        if not isinstance(cfg, dict):
            return None
        digest = {k: cfg[k] for k in ("architectures", "model_type", "auto_map") if k in cfg}
        tok = self._read_json(repo, "tokenizer_config.json")
        if isinstance(tok, dict):
            sub = {k: tok[k] for k in TOKENIZER_CONFIG_DIGEST_KEYS if k in tok}
            if sub:
                digest["tokenizer_config"] = sub
        return digest

    def _read_json(self, repo: Repo, path: str):
        """Parsed JSON file of a repo (None if absent/invalid), cached by content id."""
        fe = repo.files.get(path)
        if fe is None:
            return None
        if fe.blob_sha1 not in self._json_cache:
            try:
                with open(fe.abs_path, encoding="utf-8") as f:
                    self._json_cache[fe.blob_sha1] = json.load(f)
            except (OSError, ValueError):
                self._json_cache[fe.blob_sha1] = None
        return self._json_cache[fe.blob_sha1]

    def _field(self, repo: Repo, name: str, blobs: bool = False):
        """One ModelInfo field; KeyError when the repo has no value for it (the key is then omitted)."""
        m = repo.meta
        simple = {
            "id": lambda: repo.id,
            "modelId": lambda: repo.id,
            "_id": lambda: m.get("_id") or hashlib.sha1(repo.id.encode()).hexdigest()[:24],
            "author": lambda: m.get("author", repo.owner),
            "sha": lambda: repo.sha,
            "lastModified": lambda: repo.last_modified,
            "createdAt": lambda: repo.created_at,
            "downloads": lambda: m.get("downloads", 0),
            "downloadsAllTime": lambda: m.get("downloadsAllTime", m.get("downloads", 0)),
            "likes": lambda: m.get("likes", 0),
            "trendingScore": lambda: m.get("trendingScore", 0),
            "private": lambda: repo.private,
            "disabled": lambda: repo.disabled,
            "gated": lambda: repo.gated,
            "pipeline_tag": lambda: m.get("pipeline_tag", "text-generation"),
            "library_name": lambda: m.get("library_name", "transformers"),
            "tags": lambda: self._tags(repo),
            "spaces": lambda: [],
            "usedStorage": lambda: sum(fe.reported_size for fe in repo.files.values()),
            "siblings": lambda: [self._sibling(fe, blobs) for fe in repo.files.values()],
            "cardData": lambda: self._card_data(repo),
            "childrenModelCount": lambda: sum(
                1 for r in self.store.repos.values()
                if r.meta.get("baseModels") and repo.id in [x["id"] for x in _base_models(r.meta)["models"]]),
        }
        if name in simple:
            return simple[name]()
        if name == "config":
            digest = self._config_digest(repo)
            if digest is None:
                raise KeyError(name)
            return digest
        if name == "safetensors" and m.get("params"):
            n = int(m["params"])
            return {"parameters": {m.get("dtype", "BF16"): n}, "total": n}
        if name == "baseModels" and m.get("baseModels"):
            return _base_models(m)
        if name == "transformersInfo" and m.get("library_name", "transformers") == "transformers":
            return {
                "auto_model": "AutoModelForCausalLM",
                "pipeline_tag": m.get("pipeline_tag", "text-generation"),
                "processor": "AutoTokenizer",
            }
        raise KeyError(name)

    @staticmethod
    def _tags(repo: Repo) -> list[str]:
        """The repo's tags plus ``base_model:<id>`` and ``base_model:<relation>:<id>`` for each base model
        its card declares (HUB-API §0.1.2), as the Hub adds them."""
        tags = list(repo.meta.get("tags", ["transformers", "text-generation"]))
        if repo.meta.get("baseModels"):
            base = _base_models(repo.meta)
            for m in base["models"]:
                for tag in (f"base_model:{m['id']}", f"base_model:{base['relation']}:{m['id']}"):
                    if tag not in tags:
                        tags.append(tag)
        return tags

    @staticmethod
    def _card_data(repo: Repo) -> dict:
        card = dict(repo.meta.get("cardData") or {})
        if repo.meta.get("baseModels") and "base_model" not in card:
            ids = [x["id"] for x in _base_models(repo.meta)["models"]]
            card["base_model"] = ids[0] if len(ids) == 1 else ids
        return card

    @staticmethod
    def _sibling(fe: FileEntry, blobs: bool) -> dict:
        sib = {"rfilename": fe.path}
        if blobs:
            sib.update(blobId=fe.oid, size=fe.reported_size)
            if fe.lfs:
                sib["lfs"] = {"sha256": fe.sha256, "size": fe.reported_size, "pointerSize": fe.pointer_size}
        return sib

    def _model_json(self, repo: Repo, fields, blobs: bool = False, listing: bool = False) -> dict:
        out = {"_id": self._field(repo, "_id"), "id": repo.id}
        for name in fields:
            try:
                out[name] = self._field(repo, name, blobs)
            except KeyError:
                pass
        if listing and "siblings" in out:
            out["siblings"] = self._listing_siblings(repo, out["siblings"])
        return out

    def _listing_siblings(self, repo: Repo, siblings: list) -> list:
        """A listing's ``siblings`` as the Hub's cache sometimes serves them (HUB-API §0.1.11: empty or
        truncated; huggingface_hub PR #3241, #3565): per repo from ``listing_siblings``, else for a
        ``lossy_siblings`` share of repos, chosen by a hash of id and sha (stable across pages)."""
        lossy = repo.meta.get("listing_siblings")
        if lossy is None and self.lossy_siblings > 0:
            h = int(hashlib.sha1(f"{repo.id}@{repo.sha}".encode()).hexdigest()[:8], 16)
            if h / 0xFFFFFFFF < self.lossy_siblings:
                lossy = "empty" if h % 2 else max(0, len(siblings) // 3)
        if lossy is None:
            return siblings
        return [] if lossy == "empty" else siblings[: int(lossy)]

    # -- endpoints -------------------------------------------------------------------------------
    def _list_models(self, query: dict, headers) -> Response:
        raw_cursor = (query.get("cursor") or [""])[-1]
        _validate_expand(query.get("expand", []), EXPAND_LIST)
        if self.auto_reload and not raw_cursor:
            self.reload()
        with_token = _token_of(headers) is not None
        repos = [r for r in self.store.repos.values() if with_token or not r.private]
        q1 = {k: v[-1] for k, v in query.items()}
        if "author" in q1:
            repos = [r for r in repos if r.owner.lower() == q1["author"].lower()]
        if "search" in q1:
            repos = [r for r in repos if q1["search"].lower() in r.id.lower()]
        if "pipeline_tag" in q1:
            repos = [r for r in repos if self._field(r, "pipeline_tag") == q1["pipeline_tag"]]
        for f in query.get("filter", []):
            repos = [r for r in repos if f in self._tags_for_filter(r)]
        if "gated" in q1:
            want = q1["gated"].lower() == "true"
            repos = [r for r in repos if bool(r.gated) == want]
        sort = SORT_KEYS.get(q1.get("sort", ""))
        if sort is not None:  # descending, ties by _id (HUB-API §0.1.13)
            repos.sort(key=lambda r: self._field(r, "_id"))
            repos.sort(key=sort, reverse=True)
            cursor = _keyset_start(repos, raw_cursor, sort, lambda r: self._field(r, "_id"))
        else:
            cursor = _cursor(query)
        size = self.page_size
        if q1.get("limit", "").isdigit() and int(q1["limit"]) > 0:
            size = min(size, int(q1["limit"]))
        if self.deep_listing_504 is not None and cursor >= self.deep_listing_504[0]:
            self._deep_fault()
        page = repos[cursor : cursor + size]

        if "expand" in query:
            fields = query["expand"]
        else:
            fields = list(DEFAULT_LIST_FIELDS)
            if q1.get("full", "").lower() == "true":
                fields += FULL_LIST_FIELDS
            if q1.get("config", "").lower() == "true":
                fields.append("config")
            if q1.get("cardData", "").lower() == "true":
                fields.append("cardData")
        items = [self._model_json(r, fields, listing=True) for r in page]
        link = {}
        if cursor + size < len(repos):
            last = page[-1]
            nxt = (_keyset_cursor(sort(last), self._field(last, "_id")) if sort is not None
                   else str(cursor + size))
            link["Link"] = self._next_link(headers, "/api/models", query, nxt)
        return _json_response(items, headers=link)

    def fail_deep_listings(self, depth: int, times: int | None = None) -> None:
        """Listing pages that start ``depth`` or more items deep answer 504 (``times`` times; None: until
        cleared with ``fail_deep_listings(None)``), as the Hub does on deep filtered listings (§0.1.5)."""
        with self._lock:
            self.deep_listing_504 = None if depth is None else (depth, times)

    def _deep_fault(self) -> None:
        with self._lock:
            depth, times = self.deep_listing_504
            if times is not None:
                self.deep_listing_504 = (depth, times - 1) if times > 1 else None
        raise HttpError(504, None, "Gateway Time-out")

    def _tags_for_filter(self, repo: Repo) -> set:
        return {*self._field(repo, "tags"), *(self._field(repo, k) for k in ("pipeline_tag", "library_name"))}

    def _next_link(self, headers, path: str, query: dict, cursor) -> str:
        """Absolute URL repeating every original parameter: the client follows it verbatim."""
        host = headers.get("Host") or f"{self.host}:{self.port}"
        params = [(k, v) for k, vals in query.items() if k != "cursor" for v in vals]
        params.append(("cursor", str(cursor)))
        return f'<http://{host}{quote(path)}?{urlencode(params)}>; rel="next"'

    def _model_info(self, repo_id: str, rev: str, query: dict, headers) -> Response:
        _validate_expand(query.get("expand", []), EXPAND_MODEL)
        repo = self._repo(repo_id, headers)
        self._check_revision(repo, rev)
        blobs = (query.get("blobs") or ["false"])[-1].lower() == "true"
        fields = query.get("expand") or MODEL_INFO_FIELDS
        return _json_response(self._model_json(repo, fields, blobs=blobs))

    def _entry(self, repo: Repo, path: str, expand: bool) -> dict | None:
        if path in repo.files:
            fe = repo.files[path]
            out = {"type": "file", "oid": fe.oid, "size": fe.reported_size, "path": path}
            if fe.lfs:
                out["lfs"] = {"oid": fe.sha256, "size": fe.reported_size, "pointerSize": fe.pointer_size}
                if self.xet:
                    out["xetHash"] = _xet_hash(fe)
        elif path in repo.dirs:
            out = {"type": "directory", "oid": repo.dirs[path], "size": 0, "path": path}
        else:
            return None
        if expand:
            out["lastCommit"] = {"id": repo.sha, "title": "Upload folder", "date": repo.last_modified}
        return out

    def _paths_info(self, repo_id: str, rev: str, body: bytes, headers) -> Response:
        repo = self._repo(repo_id, headers)
        self._check_revision(repo, rev)
        form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        expand = (form.get("expand") or ["false"])[-1].lower() == "true"
        out, seen = [], set()
        for p in form.get("paths", []):
            p = p.strip("/")
            if p in seen:
                continue
            seen.add(p)
            entry = self._entry(repo, p, expand)
            if entry is not None:
                out.append(entry)
        return _json_response(out)

    def _tree(self, repo_id: str, rev: str, path: str, query: dict, headers) -> Response:
        repo = self._repo(repo_id, headers)
        self._check_revision(repo, rev)
        path = path.strip("/")
        if path:
            _clean_repo_path(path)
            if path not in repo.dirs:
                raise HttpError(404, "EntryNotFound", f"{path} does not exist", {"X-Repo-Commit": repo.sha})
        recursive = (query.get("recursive") or ["false"])[-1].lower() == "true"
        expand = (query.get("expand") or ["false"])[-1].lower() == "true"
        prefix = path + "/" if path else ""
        names = sorted(
            p
            for p in [*repo.dirs, *repo.files]
            if p.startswith(prefix) and (recursive or "/" not in p[len(prefix) :])
        )
        cursor = _cursor(query)
        size = self.tree_page_size
        items = [self._entry(repo, p, expand) for p in names[cursor : cursor + size]]
        link = {}
        if cursor + size < len(names):
            raw = f"/api/models/{repo.id}/tree/{quote(rev, safe='')}"
            raw += f"/{quote(path, safe='')}" if path else ""
            link["Link"] = self._next_link(headers, raw, query, cursor + size)
        return _json_response(items, headers=link)

    def _resolve(self, method: str, repo_id: str, rev: str, path: str, headers) -> Response:
        _clean_repo_path(path)
        repo = self._repo(repo_id, headers)
        if repo.gated:
            self._check_gate(repo, headers)
        if repo.disabled:
            raise HttpError(403, None, "Access to this resource is disabled.")
        self._check_revision(repo, rev)
        fe = repo.files.get(path)
        if fe is None:
            raise HttpError(404, "EntryNotFound", "Entry not found", {"X-Repo-Commit": repo.sha})
        common = {"X-Repo-Commit": repo.sha, "Accept-Ranges": "bytes"}
        if fe.lfs:
            location = f"{self.cdn_endpoint}/cdn/{fe.sha256}?repo={quote(repo.id)}&file={quote(path)}"
            lfs = {
                **common,
                "Location": location,
                "X-Linked-Etag": f'"{fe.sha256}"',
                "X-Linked-Size": str(fe.size),
                "ETag": f'"{fe.oid}"',
            }
            if self.xet:  # HUB-API §0.1.3: what huggingface.co sends for a file stored in Xet
                host = headers.get("Host") or f"{self.host}:{self.port}"
                lfs["X-Xet-Hash"] = _xet_hash(fe)
                lfs["Link"] = (f'<http://{host}/api/models/{quote(repo.id)}/xet-read-token/{repo.sha}>; '
                               'rel="xet-auth"')
            return Response(302, lfs)
        resp = Response(200, {**common, "ETag": f'"{fe.blob_sha1}"'})
        resp.headers["Content-Type"] = "application/octet-stream"
        return self._file_response(resp, fe, method, headers)

    def _file_response(self, resp: Response, fe: FileEntry, method: str, headers) -> Response:
        resp.file = fe
        if method == "GET" and headers.get("Range"):
            rng = _parse_range(headers["Range"], fe.size)
            if rng:
                resp.status, resp.file_range = 206, rng
                resp.headers["Content-Range"] = f"bytes {rng[0]}-{rng[1]}/{fe.size}"
        return resp

    def _cdn(self, method: str, segs: list[str], headers) -> Response:
        if method not in ("GET", "HEAD") or len(segs) != 2 or segs[0] != "cdn":
            raise HttpError(404, None, "Not Found")
        fe = self.store.by_sha256.get(segs[1])
        if fe is None:
            raise HttpError(404, None, "Not Found")
        resp = Response(200, {"ETag": f'"{fe.sha256}"', "Content-Type": "application/octet-stream"})
        return self._file_response(resp, fe, method, headers)


def _xet_hash(fe: FileEntry) -> str:
    """A stand-in Xet content hash (64 hex); real ones are Merkle hashes of the file's chunks."""
    return hashlib.sha256(b"xet:" + fe.sha256.encode()).hexdigest()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # a crawler's thread pool opens many connections at once
    hub: HubServer
    role: str

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.active: set[socket.socket] = set()
        self.active_lock = threading.Lock()

    def process_request_thread(self, request, client_address):
        with self.active_lock:
            self.active.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.active_lock:
                self.active.discard(request)

    def close_connections(self) -> None:
        with self.active_lock:
            conns = list(self.active)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "hubsim/1"
    server: _Server

    def log_message(self, format, *args):  # noqa: A002 - silence per-request stderr logging
        pass

    def do_GET(self):
        self._handle("GET")

    def do_HEAD(self):
        self._handle("HEAD")

    def do_POST(self):
        self._handle("POST")

    def _handle(self, method: str) -> None:
        hub = self.server.hub
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        split = urlsplit(self.path)
        raw_path, query = split.path, parse_qs(split.query, keep_blank_values=True)
        for kind in hub.classify(method, raw_path, self.server.role):
            hub._count(kind)
        with hub._lock:
            hub.user_agents[self.headers.get("User-Agent") or ""] += 1
        verdict = None
        if hub.limits is not None and self.server.role == "hub":
            token = _token_of(self.headers)
            verdict = hub.limits.check(raw_path, token or self.client_address[0], token is not None)
        if verdict is not None and not verdict.allowed:
            resp = self._error_response(HttpError(429, None, f"rate limit of the {verdict.bucket} bucket reached"))
            resp.headers.update(verdict.headers())
            hub._log(method, self.path, resp.status)
            self._send(method, resp, None)
            return
        fault = hub._take_fault(method, raw_path, split.query)
        if fault and fault.kind == "stall":  # connection open, not a byte sent
            hub._log(method, self.path, 0)
            hub._stopping.wait(fault.delay)
            self.close_connection = True
            return
        if fault and fault.kind == "slow":
            time.sleep(fault.delay)
        if fault and fault.kind == "status":
            resp = self._error_response(HttpError(fault.status, None, f"injected {fault.status}"))
            resp.headers.update(fault.headers)
        else:
            try:
                resp = hub.route(method, raw_path, query, body, self.headers, self.server.role)
            except HttpError as e:
                resp = self._error_response(e)
            except Exception as e:  # a bug in the fake must not hang the client: answer 500
                resp = self._error_response(HttpError(500, None, f"hubsim error: {e!r}"))
            if fault and fault.kind == "malformed_json" and raw_path.startswith("/api/"):
                resp.body, resp.file = b'{"oops": this is not json', None
                resp.headers["Content-Type"] = "application/json"
        if verdict is not None:  # on every answer; an injected fault's own headers win
            for k, v in verdict.headers().items():
                resp.headers.setdefault(k, v)
        hub._log(method, self.path, resp.status)
        self._send(method, resp, fault.kind if fault else None)

    @staticmethod
    def _error_response(e: HttpError) -> Response:
        headers = {"X-Error-Message": e.message, **e.headers}
        if e.code:
            headers["X-Error-Code"] = e.code
        return _json_response({"error": e.message}, status=e.status, headers=headers)

    def _send(self, method: str, resp: Response, fault_kind: str | None) -> None:
        if resp.file is not None:
            start, end = resp.file_range or (0, resp.file.size - 1)
            length = max(0, end - start + 1)
        else:
            length = len(resp.body)
        declared = length + 1024 if fault_kind == "truncate" else length
        self.send_response(resp.status)
        for k, v in resp.headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(declared))
        self.end_headers()
        if method == "HEAD":
            if fault_kind in ("reset", "truncate"):
                self._abort(rst=fault_kind == "reset")
            return
        limit = length // 2 if fault_kind == "reset" else length
        sent = self._write_body(resp, limit)
        if resp.file is not None:
            self.server.hub._count("bytes_sent", sent)
        if fault_kind in ("reset", "truncate"):
            self._abort(rst=fault_kind == "reset")

    def _write_body(self, resp: Response, limit: int) -> int:
        if resp.file is None:
            self.wfile.write(resp.body[:limit])
            return limit
        start = resp.file_range[0] if resp.file_range else 0
        sent = 0
        with open(resp.file.abs_path, "rb") as f:
            f.seek(start)
            while sent < limit:
                chunk = f.read(min(1 << 16, limit - sent))
                if not chunk:
                    break
                self.wfile.write(chunk)
                sent += len(chunk)
        return sent

    def _abort(self, rst: bool) -> None:
        """Drop the connection mid-response: RST for ``reset``, a plain close for ``truncate``."""
        self.close_connection = True
        try:
            self.wfile.flush()
            if rst:  # linger 0 turns close() into a TCP RST
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
            else:
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
