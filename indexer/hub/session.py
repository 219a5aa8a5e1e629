"""The session under every Hub call: huggingface_hub's shared client with our hooks, pacing, timeouts and
retries (docs/hub-api.md). :class:`HubSession` is the base of ``client.HubClient``, which makes the calls.

What the real Hub does that the client hides (docs/hub-api.md, from HUB-API.md §0.1), and how we cope:

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
* Downloads go through plain HTTP: ``indexer/__init__.py`` sets ``HF_HUB_DISABLE_XET=1`` before
  huggingface_hub is imported, and ``HubSession`` re-asserts it on ``constants`` for processes that imported
  huggingface_hub first (``is_xet_available`` reads ``constants.HF_HUB_DISABLE_XET`` at call time,
  ``utils/_runtime.py:157-162``).

The token comes from ``$HF_TOKEN`` or the stored login (huggingface_hub's own lookup); it is never
logged or stored.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from pathlib import Path

import httpx2
from huggingface_hub import HfApi, constants, get_token
from huggingface_hub.errors import HfHubHTTPError
from huggingface_hub.utils import _http
from huggingface_hub.utils._http import parse_ratelimit_headers

from .. import __version__
from ..errors import TransientError
from . import DEFAULT_CALL_SECONDS
from .guard import (
    PATIENT,
    CallTimedOut,
    Cancelled,
    Guard,
    HubUnreachable,
    excuse,
    guarded_client,
    sleep_within_call,
)
from .pacing import TIER_QUOTAS, BudgetExhausted, FixedWindow

# The user agent: huggingface_hub's own mechanism, ``HfApi(library_name=, library_version=)`` (hf_api.py:2162-2171)
# makes ``_http_user_agent`` start with "indexer/<version>" instead of "unknown/None" (utils/_headers.py:176-179).
LIBRARY_NAME = "indexer"
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 60.0
RETRY_STATUSES = (408, 429, 500, 502, 503, 504)
MAX_RATE_LIMIT_WAITS = 30  # 429s waited out for one call before it counts as transient
log = logging.getLogger("indexer.hub.client")  # the name `-v` prints for retries (as before the split)


# -- one hook on huggingface_hub's shared client, dispatching to the live sessions ---------------------
_OBSERVERS: list[HubSession | RequestCounter] = []
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


class RequestCounter:
    """Counts every HTTP request huggingface_hub's client sends while it is entered (a redirect followed is one
    more): what ``pull`` says it spent, as ``check`` and ``query`` say theirs."""

    def __init__(self):
        self.requests = 0
        self._lock = threading.Lock()

    def _on_request(self, _request) -> None:
        with self._lock:
            self.requests += 1

    def _on_response(self, _response) -> None:
        pass

    def __enter__(self) -> RequestCounter:
        _install_hook()
        with _OBS_LOCK:
            _OBSERVERS.append(self)
        return self

    def __exit__(self, *exc) -> None:
        with _OBS_LOCK:
            _OBSERVERS.remove(self)


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


class HubSession:
    """One Hub endpoint's session: token, paced buckets, timeouts, deadlines and retries for every call."""

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
        unreachable_after: tuple[float, int] = PATIENT,
    ):
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
        # every call's overall deadline, and when failed connections mean the Hub is down (indexer/hub/guard.py)
        self.guard = Guard(self.endpoint, call_timeout, unreachable_after)
        self.lock = threading.Lock()
        self.list_calls = 0
        self.other_calls = 0
        self.bytes_downloaded = 0
        self.retried = 0
        _install_hook()
        with _OBS_LOCK:
            _OBSERVERS.append(self)

    def close(self) -> None:
        """Stop observing the shared client's requests (the hook stays; it dispatches to live sessions)."""
        with _OBS_LOCK:
            if self in _OBSERVERS:
                _OBSERVERS.remove(self)

    def __enter__(self) -> HubSession:
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
        """Calls counted against the ``api`` bucket (what ``--max-api-calls`` caps)."""
        return self.buckets["api"].calls

    @property
    def resolver_calls(self) -> int:
        """``/resolve`` requests: each counts as a download in the Hub's statistics."""
        return self.buckets["resolvers"].calls

    def counts(self) -> dict:
        """What this session cost: calls per bucket, bytes, retries, rate limits, learned quotas, pacing waits."""
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
