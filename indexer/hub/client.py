"""All Hugging Face Hub access (docs/hub-api.md): listing, paths-info, pinned downloads, pacing.

What the real Hub does that the client hides (docs/hub-api.md, from HUB-API.md §0.1), and how we cope:

* A listing refuses ``expand=baseModels`` (and ``childrenModelCount``, ``usedStorage``) with 400; only
  ``/api/models/{id}`` serves them (huggingface_hub PR #3182). ``LIST_EXPAND`` holds only what a listing
  accepts; base models come from the ``base_model:<relation>:<id>`` tags instead (``base_models_from_tags``).
* Rate limits are fixed windows per bucket (``api``: every ``/api/`` call; ``resolvers``: every ``/resolve/``
  URL), announced on every response as ``RateLimit: "api";r=R;t=T`` and
  ``RateLimit-Policy: "fixed window";"api";q=Q;w=W`` (Hub docs "Rate limits"; parsed with the client's own
  ``parse_ratelimit_headers``, huggingface_hub ``utils/_http.py:85-141``). ``pacing.FixedWindow`` learns the quota
  and window from the first response of its bucket, follows ``r``/``t`` afterwards and never sends more
  than the quota inside one window; a 429 holds the whole bucket until the announced reset.
* The client builds its ``httpx2`` session with ``timeout=None`` (``utils/_http.py:341-349``): our
  request hook fills every missing timeout (connect 10 s, read 60 s), so a stalled answer is a retry.
* ``model_info`` and ``get_paths_info`` are not retried by the client (``hf_api.py:3145-3217``,
  ``:4270-4344``): ``_with_retries`` retries them on 429 (after the reset), 5xx and transport errors.
* Every ``/resolve`` request counts against the resolvers quota and as a download in the Hub's statistics
  (HUB-API §0.1.12): ``download`` sends one GET per blob (no HEAD; paths-info already gave its id and size).
* Downloads go through plain HTTP: ``indexer/__init__.py`` sets ``HF_HUB_DISABLE_XET=1`` before
  huggingface_hub is imported, and ``HubClient`` re-asserts it on ``constants`` for processes that imported
  huggingface_hub first (``is_xet_available`` reads ``constants.HF_HUB_DISABLE_XET`` at call time,
  ``utils/_runtime.py:157-162``).

The token comes from ``$HF_TOKEN`` or the stored login (huggingface_hub's own lookup); it is never
logged or stored.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .. import __version__
from ..errors import TransientError, UnsafeName
from .guard import (
    DEFAULT_CALL_SECONDS,
    CallTimedOut,
    Cancelled,
    Guard,
    HubUnreachable,
    excuse,
    guarded_client,
    sleep_within_call,
)
from .pacing import TIER_QUOTAS, BudgetExhausted, FixedWindow, least_seconds

__all__ = ["BudgetExhausted", "Cancelled", "FixedWindow", "HubClient", "HubUnreachable", "Listed", "least_seconds"]

# What GET /api/models accepts in ``expand``: ExpandModelProperty_T (hf_api.py:159-191) minus
# baseModels, childrenModelCount and usedStorage, which only /api/models/{id} serves (PR #3182).
LIST_EXPAND = [
    "sha", "lastModified", "createdAt", "downloads", "likes", "pipeline_tag", "library_name", "tags",
    "gated", "disabled", "private", "safetensors", "siblings", "config",
]
# A stable order for listings read over hours: the client maps "created_at" to sort=createdAt
# (hf_api.py:2468-2477); new repos do not shift the pages still to be read.
LIST_SORT = "created_at"
# ``--all``: the pipelines whose repos can be speculative-decoding targets or drafts
# (image-text-to-text repos have text towers that serve as targets too).
ALL_PIPELINES = ("text-generation", "image-text-to-text")
BASE_MODEL_RELATIONS = ("finetune", "quantized", "adapter", "merge")

# The user agent: huggingface_hub's own mechanism, ``HfApi(library_name=, library_version=)`` (hf_api.py:2162-2171)
# makes ``_http_user_agent`` start with "indexer/<version>" instead of "unknown/None" (utils/_headers.py:176-179).
LIBRARY_NAME = "indexer"
MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024  # files.DEFAULT_MAX_FILE_BYTES; callers pass their own cap
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 60.0
RETRY_STATUSES = (408, 429, 500, 502, 503, 504)
MAX_RATE_LIMIT_WAITS = 30  # 429s waited out for one call before it counts as transient
log = logging.getLogger(__name__)
_HEX = re.compile(r"^[0-9a-f]{40}$|^[0-9a-f]{64}$")
_SHA = re.compile(r"^[0-9a-f]{40}$")


def safe_name(name: str) -> str:
    """Validate a Hub-provided file name before it is used as (part of) a local path."""
    if not isinstance(name, str) or not name or len(name) > 255:
        raise UnsafeName(f"bad file name {name!r}")
    if name.startswith(("/", "~")) or "\\" in name or "\0" in name or re.match(r"^[A-Za-z]:", name):
        raise UnsafeName(f"unsafe file name {name!r}")
    if any(part in ("", ".", "..") for part in name.split("/")):
        raise UnsafeName(f"unsafe file name {name!r}")
    return name


def safe_blob_id(blob_id: str) -> str:
    if not isinstance(blob_id, str) or not _HEX.match(blob_id):
        raise UnsafeName(f"bad blob id {blob_id!r}")
    return blob_id


def is_commit_sha(sha) -> bool:
    return isinstance(sha, str) and bool(_SHA.match(sha))


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def base_models_from_tags(tags) -> tuple[list[str] | None, dict[str, str] | None]:
    """(ids, {id: relation}) from ``base_model:<id>`` / ``base_model:<relation>:<id>`` tags.

    The Hub adds both tags for every base model a card declares (HUB-API §0.2); the first id is the
    primary parent. A bare ``base_model:<id>`` without a relation tag keeps relation None.
    """
    ids: list[str] = []
    relations: dict[str, str] = {}
    for tag in tags or ():
        if not isinstance(tag, str) or not tag.startswith("base_model:"):
            continue
        rest = tag[len("base_model:"):]
        relation, sep, rid = rest.partition(":")
        if sep and relation in BASE_MODEL_RELATIONS:
            relations[rid] = relation
        else:
            rid = rest
        if rid and "/" in rid and rid not in ids:
            ids.append(rid)
    if not ids:
        return None, None
    return ids, {i: relations.get(i) for i in ids}


def _utc(dt) -> str | None:
    if dt is None:
        return None
    if dt.tzinfo is not None:
        dt = dt.astimezone(timezone.utc).replace(tzinfo=None)
    return dt.isoformat()


@dataclass
class Listed:
    """What a listing item (or model_info) says about a repo: everything the crawl needs, JSON-able,
    so an unresolved repo can be queued in the catalog and resumed without asking the Hub again."""

    id: str
    sha: str | None = None
    author: str | None = None
    created_at: str | None = None  # naive UTC ISO
    last_modified: str | None = None
    pipeline_tag: str | None = None
    library_name: str | None = None
    tags: list[str] | None = None
    gated: str | None = None
    disabled: bool = False
    private: bool = False
    downloads: int | None = None
    likes: int | None = None
    params: int | None = None
    siblings: list[str] | None = None
    config: dict = field(default_factory=dict)

    @classmethod
    def from_info(cls, info) -> Listed:
        st = getattr(info, "safetensors", None)
        sibs = getattr(info, "siblings", None)
        cfg = getattr(info, "config", None)
        gated = getattr(info, "gated", None)
        return cls(
            id=info.id,
            sha=getattr(info, "sha", None),
            author=getattr(info, "author", None),
            created_at=_utc(getattr(info, "created_at", None)),
            last_modified=_utc(getattr(info, "last_modified", None)),
            pipeline_tag=getattr(info, "pipeline_tag", None),
            library_name=getattr(info, "library_name", None),
            tags=list(info.tags) if getattr(info, "tags", None) is not None else None,
            gated=str(gated) if gated else None,
            disabled=bool(getattr(info, "disabled", False)),
            private=bool(getattr(info, "private", False)),
            downloads=getattr(info, "downloads", None),
            likes=getattr(info, "likes", None),
            params=getattr(st, "total", None) if st else None,
            siblings=[s.rfilename for s in sibs] if sibs is not None else None,
            config=cfg if isinstance(cfg, dict) else {},
        )

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Listed:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})

    @staticmethod
    def when(value: str | None) -> datetime | None:
        return datetime.fromisoformat(value) if value else None


# -- one hook on huggingface_hub's shared client, dispatching to the live HubClients ------------------
_OBSERVERS: list[HubClient] = []
_OBS_LOCK = threading.Lock()
_HOOK_INSTALLED = False


def _on_request(request) -> None:
    for obs in list(_OBSERVERS):
        obs._on_request(request)


def _on_response(response) -> None:
    for obs in list(_OBSERVERS):
        obs._on_response(response)


def _install_hook() -> None:
    global _HOOK_INSTALLED
    with _OBS_LOCK:
        if _HOOK_INSTALLED:
            return
        from huggingface_hub.utils import _http

        def factory():  # the client's own factory (utils/_http.py:341-349), our two hooks, our deadlines
            return guarded_client(
                event_hooks={
                    "request": [_http.hf_request_event_hook, _on_request],
                    "response": [_on_response],
                },
                follow_redirects=True,
                timeout=None,
            )

        _http.set_client_factory(factory)
        _HOOK_INSTALLED = True


def _status_of(exc) -> int | None:
    resp = getattr(exc, "response", None)
    return getattr(resp, "status_code", None)


def _server_wait(obj) -> float | None:
    """Seconds the server asked us to wait (Retry-After: N, or RateLimit ...;r=0;t=N), from an HTTP
    error or a response."""
    resp = getattr(obj, "response", None) if not hasattr(obj, "status_code") else obj
    headers = getattr(resp, "headers", None)
    if not headers:
        return None
    ra = headers.get("Retry-After")
    if ra and ra.strip().isdigit():
        return float(ra.strip())
    rl = headers.get("RateLimit")
    if rl:
        m_r = re.search(r"\br=(\d+)", rl)
        m_t = re.search(r"\bt=(\d+)", rl)
        if m_t and (m_r is None or m_r.group(1) == "0"):
            return float(m_t.group(1))
    return None


def _cause_chain(exc):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


@dataclass
class Downloaded:
    blob_id: str
    size: int
    sha256: str


class HubClient:
    """The crawler's only door to the Hub."""

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        token: str | bool | None = None,
        scratch_dir: str | os.PathLike | None = None,
        api_budget: int | None = None,
        resolver_budget: int | None = None,
        retries: int = 5,
        base_delay: float = 1.0,
        max_delay: float = 60.0,
        connect_timeout: float = CONNECT_TIMEOUT,
        read_timeout: float = READ_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_SECONDS,
    ):
        from huggingface_hub import HfApi, constants

        constants.HF_HUB_DISABLE_XET = True  # see indexer/__init__.py: plain HTTP, counted, no CAS
        # No telemetry (indexer/__init__.py sets HF_HUB_DISABLE_TELEMETRY=1 before the import): read at call
        # time in _http_user_agent (utils/_headers.py:183-189), it skips detect_agent's unpaced
        # GET /api/agent-harnesses (utils/_detect_agent.py:189-204) and keeps torch/agent out of the user agent.
        constants.HF_HUB_DISABLE_TELEMETRY = True
        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
        self._token = token  # None: huggingface_hub's own lookup (HF_TOKEN, stored login)
        self._has_token: bool | None = None
        self.api = HfApi(endpoint=self.endpoint, token=token, library_name=LIBRARY_NAME, library_version=__version__)
        self.scratch_dir = Path(scratch_dir) if scratch_dir else None
        tier = TIER_QUOTAS["free" if self.has_token else "anonymous"]
        self.buckets = {
            "api": FixedWindow("api", api_budget or tier[0], fixed=api_budget is not None),
            "resolvers": FixedWindow("resolvers", resolver_budget or tier[1], fixed=resolver_budget is not None),
        }
        self.timeouts = {"connect": connect_timeout, "read": read_timeout, "write": read_timeout,
                         "pool": read_timeout}
        self.retries, self.base_delay, self.max_delay = retries, base_delay, max_delay
        self.guard = Guard(self.endpoint, call_timeout)  # every call's overall deadline (indexer/hub/guard.py)
        self.lock = threading.Lock()
        self.list_calls = 0
        self.other_calls = 0
        self.bytes_downloaded = 0
        self.retried = 0
        _install_hook()
        with _OBS_LOCK:
            _OBSERVERS.append(self)

    def close(self) -> None:
        with _OBS_LOCK:
            if self in _OBSERVERS:
                _OBSERVERS.remove(self)

    def __enter__(self) -> HubClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def has_token(self) -> bool:
        """Whether requests carry a token (looked up once: huggingface_hub's own lookup order)."""
        if self._has_token is None:
            if self._token is False:
                self._has_token = False
            elif self._token:
                self._has_token = True
            else:
                try:
                    from huggingface_hub import get_token

                    self._has_token = bool(get_token())
                except Exception:
                    self._has_token = False
        return self._has_token

    def set_budget(self, *, deadline: float | None = None, max_api_calls: int | None = None) -> None:
        """Make every bucket refuse calls past ``deadline`` (monotonic) / the API-call cap."""
        for b in self.buckets.values():
            b.deadline = deadline
        self.guard.run_deadline = deadline
        self.buckets["api"].max_calls = max_api_calls

    # -- accounting and pacing (runs inside the client's httpx2 event hooks) -------------------------
    def _bucket_of(self, url: str) -> str | None:
        if not url.startswith(self.endpoint + "/"):
            return None  # a CDN / redirect target: not a Hub API or resolver call
        path = url[len(self.endpoint):].split("?", 1)[0]
        if path.startswith("/api/"):
            return None if path.startswith("/api/agent-harnesses") else "api"
        if "/resolve/" in path:
            return "resolvers"
        return None

    def _on_request(self, request) -> None:
        timeout = dict(request.extensions.get("timeout") or {})
        request.extensions["timeout"] = {k: timeout.get(k) or v for k, v in self.timeouts.items()}
        url = str(request.url)
        bucket = self._bucket_of(url)
        if bucket is None:
            if request.method == "GET":
                with self.lock:
                    self.other_calls += 1
            return
        paced = time.monotonic()
        request.extensions["indexer_window"] = (id(self), self.buckets[bucket].acquire())
        excuse(time.monotonic() - paced)  # our own pacing is not the Hub's slowness
        if bucket == "api" and url[len(self.endpoint):].split("?", 1)[0] == "/api/models":
            with self.lock:
                self.list_calls += 1

    def _on_response(self, response) -> None:
        from huggingface_hub.utils._http import parse_ratelimit_headers

        request = response.request
        url = str(request.url)
        if request.method == "GET" and response.status_code in (200, 206) and "/api/" not in url:
            try:
                n = int(response.headers.get("Content-Length") or 0)
            except ValueError:
                n = 0
            with self.lock:
                self.bytes_downloaded += n
        bucket = self._bucket_of(url)
        if bucket is None:
            return
        tag = request.extensions.get("indexer_window")
        window_id = tag[1] if tag and tag[0] == id(self) else None
        info = parse_ratelimit_headers(response.headers)
        hold = None
        if response.status_code == 429:
            # Retry-After, else the reset when the bucket is empty (the client's own reading,
            # utils/_http.py:534-535 and :85-141), else a second
            hold = _server_wait(response)
            hold = 1.0 if hold is None else hold
            excuse(hold + 1.0)  # the client sleeps the reset + 1 s (utils/_http.py:559-561)
        if info is None:
            if hold is not None:
                self.buckets[bucket].observe(0, hold, None, None, None, hold)
            return
        if info.resource_type in self.buckets:
            bucket = info.resource_type
        self.buckets[bucket].observe(info.remaining, float(info.reset_in_seconds), info.limit, info.window_seconds,
                                     window_id, hold)

    @property
    def api_calls(self) -> int:
        return self.buckets["api"].calls

    @property
    def resolver_calls(self) -> int:
        return self.buckets["resolvers"].calls

    def counts(self) -> dict:
        with self.lock:
            api, res = self.buckets["api"], self.buckets["resolvers"]
            return {
                "api_calls": api.calls,
                "list_calls": self.list_calls,
                "resolver_calls": res.calls,
                "bytes_downloaded": self.bytes_downloaded,
                "retries": self.retried,
                "rate_limited": {"api": api.limited, "resolvers": res.limited},
                "quota": {b.name: {"quota": b.quota, "window": b.window, "learned": b.learned}
                          for b in (api, res)},
                "pacing_wait_seconds": round(api.waited + res.waited, 3),
            }

    # -- retries -----------------------------------------------------------------------------------
    def _retryable(self, exc) -> tuple[bool, int | None]:
        """(retry?, status) for an exception of a call, looking through the client's wrappers."""
        import httpx2
        from huggingface_hub.errors import HfHubHTTPError

        for e in _cause_chain(exc):
            if isinstance(e, (BudgetExhausted, HubUnreachable, Cancelled, CallTimedOut)):
                raise e  # the run's limits: never retried here (indexer/hub/guard.py)
            if isinstance(e, HfHubHTTPError) and _status_of(e) is not None:
                status = _status_of(e)
                return status in RETRY_STATUSES, status
            if isinstance(e, (httpx2.TransportError, json.JSONDecodeError)):
                return True, None
        return False, None

    def _with_retries(self, what: str, fn):
        """Call ``fn`` under one overall deadline (``hubguard``); 429s are waited out (the bucket holds
        until the reset), 5xx and transport errors retried with backoff; other errors propagate."""
        with self.guard.call(what):
            try:
                return self._retry_loop(what, fn)
            except CallTimedOut as e:
                raise TransientError(str(e)) from e

    def _retry_loop(self, what: str, fn):
        delay, failures, waits = self.base_delay, 0, 0
        while True:
            try:
                return fn()
            except (BudgetExhausted, HubUnreachable, Cancelled):
                raise
            except Exception as e:
                retry, status = self._retryable(e)
                if not retry:
                    raise
                if status == 429 and waits < MAX_RATE_LIMIT_WAITS:
                    waits += 1  # the bucket now holds until the announced reset: just go again
                    with self.lock:
                        self.retried += 1
                    continue
                failures += 1
                why = f"HTTP {status}" if status else type(e).__name__
                if failures > self.retries:
                    raise TransientError(f"{what}: {why} after {failures} tries") from e
                wait = _server_wait(e)
                with self.lock:
                    self.retried += 1
                log.info("%s: %s; retry %d of %d", what, why, failures, self.retries)
                sleep_within_call(min(self.max_delay, wait if wait is not None else delay))
                delay = min(self.max_delay, delay * 2)

    # -- calls -------------------------------------------------------------------------------------
    def list_models(self, *, author=None, search=None, pipeline_tag=None, limit=None) -> Iterator[Listed]:
        """Listed items in a stable order (``LIST_SORT``); the client pages and retries 429/5xx itself."""
        items = iter(self.api.list_models(author=author, search=search, pipeline_tag=pipeline_tag, limit=limit,
                                          sort=LIST_SORT, expand=list(LIST_EXPAND)))
        while True:
            with self.guard.call("listing page"):  # each page, with the client's retries, has one deadline
                try:
                    info = next(items)
                except CallTimedOut as e:
                    raise TransientError(str(e)) from e
                except StopIteration:
                    return
            yield Listed.from_info(info)

    def listing_url(self, *, author=None, search=None, pipeline_tag=None, sort: str = "lastModified") -> str:
        """The first page of a listing, built as ``HfApi.list_models`` builds it (hf_api.py:2440-2490): the
        Hub sorts descending (``direction`` is gone, HUB-API §0.1.13) and pages by keyset on (key, _id)."""
        from urllib.parse import urlencode

        params = [(k, v) for k, v in (("author", author), ("search", search), ("pipeline_tag", pipeline_tag),
                                      ("sort", sort)) if v]
        params += [("expand", e) for e in LIST_EXPAND]
        return f"{self.endpoint}/api/models?{urlencode(params)}"

    def list_page(self, url: str) -> tuple[list[Listed], str | None]:
        """One listing page and the next page's URL (``Link: rel="next"``, followed verbatim as the client's
        ``_paginate_pages`` does, utils/_pagination.py:40-53), through the client's session and its
        ``http_backoff`` (408, 429, 5xx and timeouts retried 5 times, 1-8 s apart, utils/_http.py:572-650)."""
        from huggingface_hub.hf_api import ModelInfo
        from huggingface_hub.utils import build_hf_headers, hf_raise_for_status, http_backoff

        headers = build_hf_headers(token=self._token, library_name=LIBRARY_NAME, library_version=__version__)

        with self.guard.call("listing page"):  # the page, with the client's retries, has one deadline
            try:
                r = http_backoff("GET", url, headers=headers)
            except CallTimedOut as e:
                raise TransientError(str(e)) from e
        hf_raise_for_status(r)
        page, next_url = r.json(), r.links.get("next", {}).get("url")
        if not isinstance(page, list):
            raise TransientError(f"listing page is not a list: {str(page)[:100]}")
        items = []
        for item in page:
            item.setdefault("siblings", None)  # as list_models does (hf_api.py:2496-2497)
            items.append(Listed.from_info(ModelInfo(**item)))
        return items, next_url

    def model_info(self, repo_id: str) -> Listed:
        return Listed.from_info(self._with_retries(
            f"model_info {repo_id}", lambda: self.api.model_info(repo_id, expand=list(LIST_EXPAND))))

    def paths_info(self, repo_id: str, sha: str, paths) -> list:
        """RepoFile/RepoFolder entries for those of ``paths`` that exist at commit ``sha``."""
        return self._with_retries(
            f"paths_info {repo_id}", lambda: self.api.get_paths_info(repo_id, list(paths), revision=sha)
        )

    def list_files(self, repo_id: str, sha: str, limit: int = 10_000) -> list:
        """The repo's files at commit ``sha`` (RepoFile entries with size, blob id and LFS sha256), from the
        tree listing ``snapshot_download`` trusts where a listing's ``siblings`` may be lossy (HUB-API §0.1.11;
        hf_api.py ``list_repo_tree``, paged by the client). Capped at ``limit`` entries."""
        from itertools import islice

        return self._with_retries(f"tree {repo_id}", lambda: list(islice(
            self.api.list_repo_tree(repo_id, revision=sha, recursive=True), limit)))

    def download(self, repo_id: str, sha: str, filename: str, blob_id: str, store, *,
                 lfs_sha256: str | None = None, size: int | None = None,
                 max_bytes: int | None = None) -> Downloaded:
        """Fetch one file pinned to ``sha`` into ``store`` (a BlobStore) under ``blob_id``: one request.

        ``hf_hub_download`` sends a HEAD and then a GET (file_download.py:1068, ``_hf_hub_download_to_cache_dir``);
        both count against the resolvers quota and as downloads in the Hub's statistics (HUB-API §0.1.12).
        paths-info already gave the blob id, size and LFS sha256, so a single GET of the commit-pinned
        ``/resolve`` URL (``hf_hub_url``) through the client's own session and backoff
        (``utils/_http.py`` ``http_stream_backoff``, ``get_session``: our hooks pace it and set timeouts)
        follows the LFS redirect and is checked against the git blob sha1 or the LFS sha256.
        At most ``max_bytes`` (or the announced ``size``) are read: a lying body is cut off.
        """
        safe_name(filename)
        safe_blob_id(blob_id)
        limit = max_bytes or MAX_DOWNLOAD_BYTES
        if size:
            limit = min(limit, size)
        data = self._with_retries(f"download {repo_id}/{filename}",
                                  lambda: self._get_blob(repo_id, sha, filename, limit))
        sha256 = hashlib.sha256(data).hexdigest()
        if lfs_sha256 and sha256 != lfs_sha256:
            raise TransientError(f"{filename}: content sha256 {sha256[:12]} != LFS oid {lfs_sha256[:12]}")
        if not lfs_sha256 and git_blob_sha1(data) != blob_id:
            raise TransientError(f"{filename}: content does not match blob id {blob_id[:12]}")
        store.put(blob_id, data)
        return Downloaded(blob_id, len(data), sha256)


    def read_range(self, repo_id: str, sha: str, filename: str, start: int, end: int) -> bytes:
        """Bytes [start, end) of a file pinned to commit ``sha``: one GET with ``Range``, as the client's own
        ``HfFileSystemFile._fetch_range`` reads (hf_file_system.py:1575-1583). The Hub redirects an LFS file to
        its CDN, which answers 206 with ``Content-Range``; a server that ignores the range (200) is read only up
        to ``end`` and the connection closed, so a whole multi-GB file is never pulled."""
        from huggingface_hub import hf_hub_url
        from huggingface_hub.utils import get_session, hf_raise_for_status

        safe_name(filename)
        if not 0 <= start < end:
            raise ValueError(f"bad range [{start}, {end})")
        url = hf_hub_url(repo_id, filename, revision=sha, endpoint=self.endpoint)
        headers = {**self.api._build_hf_headers(), "Range": f"bytes={start}-{end - 1}"}

        def get() -> bytes:
            with get_session().stream("GET", url, headers=headers) as r:
                if r.status_code >= 400:
                    r.read()
                    hf_raise_for_status(r)
                skip = 0
                if r.status_code == 206:
                    got = re.match(r"bytes (\d+)-", r.headers.get("Content-Range", ""))
                    if not got or int(got.group(1)) != start:
                        raise TransientError(f"{filename}: answer to Range {start}-{end - 1} starts elsewhere "
                                             f"({r.headers.get('Content-Range')!r})")
                else:
                    skip = start  # 200: the whole file from byte 0
                data = bytearray()
                for chunk in r.iter_bytes():
                    data += chunk
                    if len(data) >= skip + (end - start):
                        break
                return bytes(data[skip:skip + (end - start)])

        return self._with_retries(f"read {repo_id}/{filename} bytes {start}-{end - 1}", get)

    def _get_blob(self, repo_id: str, sha: str, filename: str, limit: int) -> bytes:
        from huggingface_hub import hf_hub_url
        from huggingface_hub.utils import build_hf_headers, hf_raise_for_status, http_stream_backoff

        url = hf_hub_url(repo_id, filename, revision=sha, endpoint=self.endpoint)
        headers = build_hf_headers(token=self._token, library_name=LIBRARY_NAME, library_version=__version__)
        # our _with_retries retries (429 after the announced reset, 5xx, transport errors): none here
        with http_stream_backoff("GET", url, headers=headers, retry_on_exceptions=(),
                                 retry_on_status_codes=()) as response:
            hf_raise_for_status(response)
            buf = bytearray()
            for chunk in response.iter_bytes(1 << 20):
                buf += chunk
                if len(buf) > limit:
                    raise TransientError(f"{filename}: more than the {limit} bytes announced or allowed")
        return bytes(buf)
