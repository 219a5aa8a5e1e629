"""Hard time limits and fast failure for every Hub request (issue 18).

huggingface_hub retries on its own: ``http_backoff`` up to 5 retries with sleeps of 1..8 s
(``utils/_http.py:469-569``), ``http_get`` resumes a broken download 5 times (``file_download.py:468-475``),
and its httpx2 client has no timeout at all (``utils/_http.py:341-349``). Our own ``_with_retries`` wraps
that again. So a per-request timeout alone cannot bound a call: one stalled file cost 6 x 6 x 60 s.

This module bounds the whole call instead. ``Guard.call()`` opens a *call* (one ``model_info``, one
``paths_info``, one download, one listing page) with an overall budget; every HTTP request the client
sends inside it, retries included, passes ``GuardedTransport``, which

* clamps the request's connect/read/write/pool timeouts to what is left of the call and of the run
  (``--max-minutes``), and checks it again between body chunks;
* refuses to send once the call's time is spent (``CallTimedOut``: the repo is recorded ``error``,
  transient), the run's time is spent (``BudgetExhausted``: the repo is queued for the next run), the run
  was interrupted (``Cancelled``), or the Hub has refused connections for a while (``HubUnreachable``:
  the run ends at once with one line).

None of these subclass httpx2's exceptions, so the client does not retry them
(``_DEFAULT_RETRY_ON_EXCEPTIONS``, ``utils/_http.py:461-465``). Time spent waiting for our own rate-limit
pacing, or for a 429's announced reset, is not the call's fault and does not count against it.
"""

from __future__ import annotations

import contextvars
import threading
import time
from contextlib import contextmanager

import httpx2

from ..errors import CallTimedOut, Cancelled, HubUnreachable
from .pacing import BudgetExhausted

DEFAULT_CALL_SECONDS = 120.0
# Connection failures (refused, unresolvable, connect timeout) with no success in between for this long
# mean the Hub cannot be reached: the run stops instead of retrying every repo.
UNREACHABLE_AFTER_SECONDS = 2.0
UNREACHABLE_AFTER_FAILURES = 2
PATIENT = (UNREACHABLE_AFTER_SECONDS, UNREACHABLE_AFTER_FAILURES)  # (seconds, failures): a crawl, unattended
# An answer someone waits for (answer/live.py) says so at the first failed connection instead.
INTERACTIVE = (0.0, 1)


_CALL: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("indexer_hub_call", default=None)


class Guard:
    """One HubClient's limits: the per-call budget, the run's deadline, cancellation, reachability."""

    def __init__(self, endpoint: str, call_seconds: float = DEFAULT_CALL_SECONDS,
                 unreachable_after: tuple[float, int] = PATIENT):
        self.endpoint = endpoint
        self.call_seconds = float(call_seconds)
        self.unreachable_after = unreachable_after  # (seconds, failures) of failed connections: unreachable
        self.run_deadline: float | None = None  # monotonic
        self.cancelled = threading.Event()
        self._lock = threading.Lock()
        self._failing_since: float | None = None
        self._failures = 0
        self.unreachable: str | None = None

    @contextmanager
    def call(self, what: str):
        """Everything the client sends inside this block shares one overall budget."""
        from huggingface_hub import constants

        if constants.HF_HUB_OFFLINE:  # the client refuses every request (utils/_http.py:293-296): say so once
            raise HubUnreachable(f"HF_HUB_OFFLINE is set, so huggingface_hub sends no request to {self.endpoint}; "
                                 "unset it to crawl")
        token = _CALL.set(_Call(self, what))
        try:
            yield
        finally:
            _CALL.reset(token)

    def cancel(self) -> None:
        """Stop every request not yet sent (Ctrl-C, SIGTERM); calls in flight raise Cancelled."""
        self.cancelled.set()

    def connect_failed(self, exc: BaseException) -> None:
        """Note a failed connection; raises HubUnreachable once they have gone on long enough."""
        with self._lock:
            now = time.monotonic()
            if self._failing_since is None:
                self._failing_since = now
            self._failures += 1
            seconds, failures = self.unreachable_after
            if self._failures >= failures and now - self._failing_since >= seconds:
                reason = str(exc).strip() or type(exc).__name__
                self.unreachable = f"the Hub at {self.endpoint} cannot be reached ({reason})"
            if self.unreachable:
                raise HubUnreachable(self.unreachable) from exc

    def connected(self) -> None:
        """A connection succeeded: the count of failures toward HubUnreachable starts over."""
        with self._lock:
            self._failing_since, self._failures = None, 0


class _Call:
    def __init__(self, guard: Guard, what: str):
        self.guard, self.what = guard, what
        self.started = time.monotonic()
        self.excused = 0.0  # seconds spent in pacing waits and announced 429 resets

    def seconds_left(self) -> float:
        """What is left of the call and of the run; raises when nothing may be sent any more."""
        g = self.guard
        if g.cancelled.is_set():
            raise Cancelled("interrupted")
        if g.unreachable:
            raise HubUnreachable(g.unreachable)
        now = time.monotonic()
        if g.run_deadline is not None and now >= g.run_deadline:
            raise BudgetExhausted("the run's time is up")
        left = g.call_seconds - (now - self.started - self.excused)
        if left <= 0:
            raise CallTimedOut(f"{self.what}: no complete answer within {g.call_seconds:g} s")
        if g.run_deadline is not None:
            left = min(left, g.run_deadline - now)
        return left


def current_call() -> _Call | None:
    """The call this thread's requests are in, or None outside ``Guard.call()``."""
    return _CALL.get()


def excuse(seconds: float) -> None:
    """Do not count ``seconds`` (a pacing wait, a 429's reset) against the current call."""
    call = _CALL.get()
    if call is not None and seconds > 0:
        call.excused += seconds


def sleep_within_call(seconds: float) -> None:
    """A retry's back-off: refused when it would outlast the call, cut short by an interrupt."""
    call = _CALL.get()
    if call is not None and seconds >= call.seconds_left():
        raise CallTimedOut(f"{call.what}: no complete answer within {call.guard.call_seconds:g} s")
    if call is not None and call.guard.cancelled.wait(seconds):
        raise Cancelled("interrupted")
    if call is None:
        time.sleep(seconds)


class _DeadlineStream(httpx2.SyncByteStream):
    """A response body that stops when the call's time is spent, however slowly it trickles."""

    def __init__(self, inner, call: _Call):
        self.inner, self.call = inner, call

    def __iter__(self):
        for chunk in self.inner:
            self.call.seconds_left()
            yield chunk

    def close(self) -> None:
        self.inner.close()


class GuardedTransport(httpx2.BaseTransport):
    """An httpx2 transport bounded by the current call (requests outside a call pass unchanged)."""

    def __init__(self, inner: httpx2.BaseTransport | None = None):
        self.inner = inner or httpx2.HTTPTransport()

    def close(self) -> None:
        """Close the wrapped transport when the client closes (httpx2 2.16 ``_transports/base.py:56``)."""
        self.inner.close()

    def handle_request(self, request):
        """Send with timeouts clamped to the call's time left (httpx2 2.16 ``_transports/base.py:23``)."""
        call = _CALL.get()
        if call is None:
            return self.inner.handle_request(request)
        left = call.seconds_left()
        timeout = dict(request.extensions.get("timeout") or {})
        request.extensions["timeout"] = {k: min(timeout.get(k) or left, left)
                                         for k in ("connect", "read", "write", "pool")}
        try:
            response = self.inner.handle_request(request)
        except (httpx2.ConnectError, httpx2.ConnectTimeout) as e:
            call.guard.connect_failed(e)
            raise
        call.guard.connected()
        response.stream = _DeadlineStream(response.stream, call)
        return response


def guarded_client(**kwargs) -> httpx2.Client:
    """An httpx2 client whose every transport is guarded: the default one and the proxy transports it
    mounts from ``HTTP(S)_PROXY`` / ``ALL_PROXY``. Passing ``transport=`` would switch those proxies off
    (httpx2 ``_client.py:653``, ``allow_env_proxies = trust_env and transport is None``), so the client is
    built as usual and its transports wrapped afterwards (``_client.py:655-682``; no public way exists)."""
    client = httpx2.Client(**kwargs)
    client._transport = GuardedTransport(client._transport)
    mounts = getattr(client, "_mounts", None)
    if isinstance(mounts, dict):
        for pattern, transport in mounts.items():
            if transport is not None and not isinstance(transport, GuardedTransport):
                mounts[pattern] = GuardedTransport(transport)
    return client
