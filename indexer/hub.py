"""All Hugging Face Hub access (DESIGN §3): listing, paths-info, pinned downloads, pacing.

* The endpoint comes from ``--endpoint`` / ``$HF_ENDPOINT``; the token from ``$HF_TOKEN`` or the
  stored login (huggingface_hub's own lookup). The token is never logged or stored.
* Every HTTP request the client sends is seen by one event hook installed on huggingface_hub's
  shared ``httpx`` client: it counts the request (``/api/...`` = API call, ``/resolve/`` = resolver
  call) and takes a token from the matching bucket first, so the crawler paces itself within the
  Hub's budgets per 5 minutes (default 1000 API calls, 5000 resolver calls) — including the
  client's own retries.
* ``model_info`` and ``get_paths_info`` are not retried by the client: we retry them on 429/5xx and
  transport errors with exponential backoff, honouring ``Retry-After`` and ``RateLimit: ...;t=N``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

LIST_EXPAND = [
    "sha", "lastModified", "createdAt", "downloads", "likes", "pipeline_tag", "library_name", "tags",
    "gated", "disabled", "safetensors", "siblings", "baseModels", "config",
]
WINDOW_SECONDS = 300.0
DEFAULT_API_BUDGET = 1000
DEFAULT_RESOLVER_BUDGET = 5000
RETRY_STATUSES = (408, 429, 500, 502, 503, 504)
_HEX = re.compile(r"^[0-9a-f]{40}$|^[0-9a-f]{64}$")
_SHA = re.compile(r"^[0-9a-f]{40}$")


class TransientError(Exception):
    """A failure worth retrying on a later run (rate limit, server error, network)."""


class UnsafeName(ValueError):
    """A Hub-provided name that must never become a local path."""


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


class TokenBucket:
    """``budget`` tokens per ``window`` seconds, refilled continuously; ``acquire`` blocks."""

    def __init__(self, budget: int, window: float = WINDOW_SECONDS):
        self.capacity = float(max(1, budget))
        self.rate = self.capacity / window
        self.tokens = self.capacity
        self.stamp = time.monotonic()
        self.lock = threading.Lock()
        self.waited = 0.0
        self.blocked_until = 0.0

    def block_for(self, seconds: float) -> None:
        """The server said "wait": hold every caller of this bucket back for ``seconds``."""
        with self.lock:
            self.blocked_until = max(self.blocked_until, time.monotonic() + seconds)

    def acquire(self) -> None:
        while True:
            with self.lock:
                now = time.monotonic()
                self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
                self.stamp = now
                wait = self.blocked_until - now
                if wait <= 0 and self.tokens >= 1:
                    self.tokens -= 1
                    return
                if wait <= 0:
                    wait = (1 - self.tokens) / self.rate
            wait = min(wait, 5.0)
            self.waited += wait
            time.sleep(wait)


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
        import httpx2
        from huggingface_hub.utils import _http

        def factory():
            return httpx2.Client(
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


def _server_wait(exc) -> float | None:
    """Seconds the server asked us to wait (Retry-After: N, or RateLimit ...;r=0;t=N)."""
    resp = getattr(exc, "response", None)
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


@dataclass
class Downloaded:
    blob_id: str
    path: Path
    size: int
    sha256: str


class HubClient:
    """The crawler's only door to the Hub."""

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        token: str | bool | None = None,
        cache_dir: str | os.PathLike | None = None,
        api_budget: int = DEFAULT_API_BUDGET,
        resolver_budget: int = DEFAULT_RESOLVER_BUDGET,
        retries: int = 5,
        base_delay: float = 1.0,
        max_delay: float = 60.0,
    ):
        from huggingface_hub import HfApi

        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
        self._token = token  # None: huggingface_hub's own lookup (HF_TOKEN, stored login)
        self.api = HfApi(endpoint=self.endpoint, token=token)
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.api_bucket = TokenBucket(api_budget)
        self.resolver_bucket = TokenBucket(resolver_budget)
        self.retries, self.base_delay, self.max_delay = retries, base_delay, max_delay
        self.lock = threading.Lock()
        self.api_calls = 0
        self.list_calls = 0
        self.resolver_calls = 0
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
        if self._token is False:
            return False
        if self._token:
            return True
        try:
            from huggingface_hub import get_token

            return bool(get_token())
        except Exception:
            return False

    # -- accounting --------------------------------------------------------------------------------
    def _mine(self, url) -> bool:
        return str(url).startswith(self.endpoint + "/")

    def _on_request(self, request) -> None:
        url = str(request.url)
        if not self._mine(url):
            if request.method == "GET":  # a CDN / redirect target: not a Hub API or resolver call
                with self.lock:
                    self.other_calls += 1
            return
        path = url[len(self.endpoint):].split("?", 1)[0]
        if path.startswith("/api/"):
            if path.startswith("/api/agent-harnesses"):
                return
            self.api_bucket.acquire()
            with self.lock:
                self.api_calls += 1
                if path == "/api/models":
                    self.list_calls += 1
        elif "/resolve/" in path:
            self.resolver_bucket.acquire()
            with self.lock:
                self.resolver_calls += 1

    def _on_response(self, response) -> None:
        request = response.request
        if request.method == "GET" and response.status_code in (200, 206):
            path = str(request.url)
            if "/api/" not in path:
                try:
                    n = int(response.headers.get("Content-Length") or 0)
                except ValueError:
                    n = 0
                with self.lock:
                    self.bytes_downloaded += n
        if response.status_code == 429:
            wait = _server_wait(response)
            if wait:
                path = str(request.url)
                (self.api_bucket if "/api/" in path else self.resolver_bucket).block_for(min(wait, 300))

    def counts(self) -> dict:
        with self.lock:
            return {
                "api_calls": self.api_calls,
                "list_calls": self.list_calls,
                "resolver_calls": self.resolver_calls,
                "bytes_downloaded": self.bytes_downloaded,
                "retries": self.retried,
            }

    # -- retries -----------------------------------------------------------------------------------
    def _with_retries(self, what: str, fn):
        """Call ``fn`` and retry 429/5xx/transport errors; other errors propagate unchanged."""
        import httpx2
        from huggingface_hub.errors import HfHubHTTPError

        delay = self.base_delay
        for attempt in range(self.retries + 1):
            try:
                return fn()
            except HfHubHTTPError as e:
                status = _status_of(e)
                if status not in RETRY_STATUSES or attempt >= self.retries:
                    if status in RETRY_STATUSES:
                        raise TransientError(f"{what}: HTTP {status} after {attempt + 1} tries") from e
                    raise
                wait = _server_wait(e)
            except (httpx2.TransportError, json.JSONDecodeError) as e:
                if attempt >= self.retries:
                    raise TransientError(f"{what}: {type(e).__name__}: {str(e)[:200]}") from e
                wait = None
            sleep = min(self.max_delay, wait if wait is not None else delay)
            with self.lock:
                self.retried += 1
            time.sleep(sleep)
            delay = min(self.max_delay, delay * 2)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- calls -------------------------------------------------------------------------------------
    def list_models(self, *, author=None, search=None, limit=None) -> Iterator:
        """ModelInfo items (with LIST_EXPAND); the client pages and retries 429/5xx itself."""
        return self.api.list_models(author=author, search=search, limit=limit, expand=list(LIST_EXPAND))

    def model_info(self, repo_id: str):
        return self._with_retries(
            f"model_info {repo_id}", lambda: self.api.model_info(repo_id, expand=list(LIST_EXPAND))
        )

    def paths_info(self, repo_id: str, sha: str, paths) -> list:
        """RepoFile/RepoFolder entries for those of ``paths`` that exist at commit ``sha``."""
        return self._with_retries(
            f"paths_info {repo_id}", lambda: self.api.get_paths_info(repo_id, list(paths), revision=sha)
        )

    def download(self, repo_id: str, sha: str, filename: str, blob_id: str, dest_dir: Path,
                 *, lfs_sha256: str | None = None) -> Downloaded:
        """Fetch one file pinned to ``sha`` and put it at ``dest_dir/<blob_id>`` (atomically).

        The content is checked against ``blob_id`` (git sha1) or the LFS sha256.
        """
        safe_name(filename)
        safe_blob_id(blob_id)
        if self.cache_dir is None:
            raise ValueError("HubClient needs a cache_dir to download")
        local = self.api.hf_hub_download(repo_id, filename, revision=sha, cache_dir=str(self.cache_dir))
        real = Path(os.path.realpath(local))
        h256, h1 = hashlib.sha256(), hashlib.sha1()
        size = real.stat().st_size
        h1.update(b"blob %d\0" % size)
        with open(real, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h256.update(chunk)
                h1.update(chunk)
        sha256 = h256.hexdigest()
        if lfs_sha256 and sha256 != lfs_sha256:
            real.unlink(missing_ok=True)
            raise TransientError(f"{filename}: content sha256 {sha256[:12]} != LFS oid {lfs_sha256[:12]}")
        if not lfs_sha256 and h1.hexdigest() != blob_id:
            real.unlink(missing_ok=True)
            raise TransientError(f"{filename}: content does not match blob id {blob_id[:12]}")
        dest_dir.mkdir(parents=True, exist_ok=True)
        dest = dest_dir / blob_id
        if not dest.exists():
            fd, tmp = tempfile.mkstemp(dir=dest_dir, prefix=f".{blob_id}.", suffix=".tmp")
            os.close(fd)
            try:
                os.unlink(tmp)
                try:
                    os.link(real, tmp)
                except OSError:
                    shutil.copyfile(real, tmp)
                os.replace(tmp, dest)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        return Downloaded(blob_id, dest, size, sha256)
