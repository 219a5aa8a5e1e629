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

This module holds the server's state, its test helpers and the route table; the rest is split by concern:
``wire.py`` (HTTP: requests, rate limits and injected faults applied, answers sent), ``api.py`` (listing,
model info, paths-info, tree), ``modelinfo.py`` (the ModelInfo JSON), ``resolve.py`` (``/resolve`` and the
CDN: LFS and Xet headers, ranges), ``ratelimit.py`` (quotas).
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import threading
from collections import Counter
from urllib.parse import quote, unquote

from .api import ApiEndpoints
from .datasets import DatasetStore
from .modelinfo import ModelJson
from .ratelimit import WINDOW, RateLimits
from .repos import Repo, RepoStore
from .resolve import FileServing
from .upload import DatasetEndpoints
from .wire import FAULT_KINDS, Fault, Handler, HttpError, Response, Server, json_response

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
    "commits",
    "lfs_uploads",
)
# Share of repos whose listing loses siblings by default: the Hub does it now and then (§0.1.11).
LOSSY_SIBLINGS = 0.05


class HubServer(ApiEndpoints, FileServing, ModelJson, DatasetEndpoints):
    """Serves a hub directory on 127.0.0.1 (ephemeral ports by default) in daemon threads.

    ``counts`` (a Counter, see COUNTER_KINDS), ``request_log`` [(method, path, status)],
    ``add_fault(...)`` for fault injection, ``reload()`` after changing files on disk.

    Dataset repos (``upload.py``) live under ``dataset_dir`` (a temp dir removed at ``stop`` by default).
    ``tokens`` maps a token to ``"write"`` or ``"read"`` for them (None: any token writes);
    ``dataset_namespaces`` are the namespaces a write token may create and write in (None: any);
    ``commit_quota=(N, seconds)``: at most N commits per token in each fixed window, then 429.
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
        dataset_dir: str | None = None,
        tokens: dict[str, str] | None = None,
        dataset_namespaces=None,
        commit_quota: tuple[int, float] | None = None,
    ):
        self.lossy_siblings = lossy_siblings
        self._own_dataset_dir = None if dataset_dir else tempfile.mkdtemp(prefix="hubsim-datasets-")
        self.datasets = DatasetStore(dataset_dir or str(self._own_dataset_dir))
        if tokens is not None and any(role not in ("read", "write") for role in tokens.values()):
            raise ValueError("tokens maps a token to 'read' or 'write'")
        self.tokens = dict(tokens) if tokens is not None else None
        self.dataset_namespaces = set(dataset_namespaces) if dataset_namespaces is not None else None
        self.commit_quota = commit_quota
        self._commit_windows: dict = {}
        self.upload_secret = secrets.token_bytes(16)
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
        self._servers: list[Server] = []
        self._threads: list[threading.Thread] = []

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> HubServer:
        """Start the hub and CDN servers in daemon threads (idempotent)."""
        if self._servers:
            return self
        for role, port in (("hub", self._port), ("cdn", self._cdn_port)):
            srv = Server((self.host, port), Handler)
            srv.hub, srv.role = self, role
            t = threading.Thread(target=srv.serve_forever, args=(0.05,), name=f"hubsim-{role}", daemon=True)
            t.start()
            self._servers.append(srv)
            self._threads.append(t)
        return self

    def stop(self) -> None:
        """Stop both servers and release stalled requests and idle keep-alive connections."""
        self._stopping.set()  # releases stalled handlers
        for srv in self._servers:
            srv.shutdown()
            srv.server_close()
            srv.close_connections()  # unblock handler threads waiting on idle keep-alive connections
        for t in self._threads:
            t.join(timeout=5)
        self._servers, self._threads = [], []
        if self._own_dataset_dir and os.path.isdir(self._own_dataset_dir):
            shutil.rmtree(self._own_dataset_dir, ignore_errors=True)

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The hub's port (ephemeral unless one was asked for)."""
        return self._servers[0].server_address[1]

    @property
    def cdn_port(self) -> int:
        """The CDN's port: another origin than the hub's."""
        return self._servers[1].server_address[1]

    @property
    def endpoint(self) -> str:
        """The hub's base URL: what a client gets as ``HF_ENDPOINT``."""
        return f"http://{self.host}:{self.port}"

    @property
    def cdn_endpoint(self) -> str:
        """The CDN's base URL, another origin, where LFS files are redirected."""
        return f"http://{self.host}:{self.cdn_port}"

    @property
    def repos(self) -> dict[str, Repo]:
        """The repos served, by id, as last loaded from disk."""
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
        size: int = 1 << 30,
    ) -> Fault:
        """Queue a fault for requests whose method and path (and query, if given) match; first match wins.

        ``stall``: the request is accepted and read, then the connection stays open and nothing is sent for
        ``delay`` seconds, or never (``delay=None``) until the server stops.
        ``gzip_bomb``: a 200 JSON answer in gzip that inflates to ``size`` bytes. ``endless``: a 200 whose body
        never ends. Both are what a hostile or broken server can send to a client that reads answers whole.
        """
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; expected one of {FAULT_KINDS}")
        fault = Fault(method.upper(), path_regex, kind, status, dict(headers or {}), times, delay,
                      query_regex=query_regex, size=size)
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        """Drop every queued fault."""
        with self._lock:
            self.faults.clear()

    def fail_deep_listings(self, depth: int, times: int | None = None) -> None:
        """Listing pages that start ``depth`` or more items deep answer 504 (``times`` times; None: until
        cleared with ``fail_deep_listings(None)``), as the Hub does on deep filtered listings (§0.1.5)."""
        with self._lock:
            self.deep_listing_504 = None if depth is None else (depth, times)

    def rename_repo(self, old: str, new: str) -> None:
        """Move a repo to a new id on disk; the old id then redirects (as on the Hub)."""
        self.store.rename(old, new)

    def delete_repo(self, repo_id: str) -> None:
        """Remove a repo on disk: it is gone from listings and answers RepoNotFound, as a deleted repo does."""
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
            return ["cdn_get"] if method == "GET" else ["lfs_uploads"] if method == "PUT" else []
        if segs[:1] == ["datasets"] and len(segs) >= 6 and segs[3] == "resolve":
            return ["resolve_head" if method == "HEAD" else "resolve_get"]
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
        """The answer to one request (the route table of docs/hub-api.md §8); errors raise :class:`HttpError`."""
        segs = [unquote(s) for s in raw_path.split("/")[1:]]
        if role == "cdn":
            if method == "PUT" and segs[:1] == ["lfs-upload"]:
                return self._cdn_upload(segs, query, body)
            return self._cdn(method, segs, headers)
        if segs[:2] == ["api", "agent-harnesses"]:
            return json_response({"standardEnvVars": [], "harnesses": {}})
        moved = self._moved(raw_path)
        if moved is not None:
            return Response(307, {"Location": moved})
        if segs[:2] in (["api", "datasets"], ["api", "repos"], ["api", "validate-yaml"]):
            return self._dataset_api(method, segs[1:], query, body, headers)
        if segs[:1] == ["datasets"]:
            return self._dataset_git(method, segs, query, body, headers)
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
            return json_response({"type": "user", "name": "hubsim"})
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
