"""Hard time limits and fast failure for every Hub request.

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

Every Hub API answer (a path under ``/api/``: listings, model info, paths-info, trees, dataset info) is also
cut at ``MAX_ANSWER_BYTES`` *decoded* (``AnswerRefused``): the client reads these answers whole
(``response.json()``), so a 1 MB gzip bomb would otherwise inflate to a GiB in memory, and an endless body
would buffer bandwidth x timeout. They are asked for in gzip or deflate only, and counted as they inflate.
File bodies have their own caps (``client.download``, ``client.read_range``).

None of these subclass httpx2's exceptions, so the client does not retry them
(``_DEFAULT_RETRY_ON_EXCEPTIONS``, ``utils/_http.py:461-465``). Time spent waiting for our own rate-limit
pacing, or for a 429's announced reset, is not the call's fault and does not count against it.
"""

from __future__ import annotations

import contextvars
import threading
import time
import zlib
from contextlib import contextmanager

import httpx2
from huggingface_hub import constants

from ..errors import AnswerRefused, CallTimedOut, Cancelled, HubUnreachable
from . import DEFAULT_CALL_SECONDS
from .pacing import BudgetExhausted

# One API answer, decoded. A listing page of 1,000 items with every field the crawl expands is a few MB.
MAX_ANSWER_BYTES = 32 * 1024 * 1024
ANSWER_ENCODINGS = "gzip, deflate"  # what an API request accepts: the encodings counted below
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


class _Inflated:
    """Counts the decoded size of a body as it arrives, in bounded pieces, without keeping it: the client decodes
    the same bytes again (httpx2 ``_decoders.py``, 1 MiB at a time), so nothing it buffers is past the cap."""

    def __init__(self, encoding: str, cap: int, what: str):
        self.cap, self.what, self.size = cap, what, 0
        self.encoding, self.first = encoding, True
        if encoding in ("", "identity"):
            self.inflate = None
        elif encoding == "gzip":
            self.inflate = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif encoding == "deflate":
            self.inflate = zlib.decompressobj()  # zlib-wrapped; a raw stream is tried on the first chunk
        else:
            raise AnswerRefused(f"{what}: the answer is in content encoding {encoding!r}, not one asked for "
                                 f"({ANSWER_ENCODINGS}); not read")

    def add(self, chunk: bytes) -> None:
        """Count one raw chunk's decoded size; raises AnswerRefused past the cap."""
        if self.inflate is None:
            self._count(len(chunk))
            return
        try:
            self._inflate(chunk)
        except zlib.error:
            if self.encoding == "deflate" and self.first:  # a raw deflate stream, as httpx2's decoder falls back
                self.inflate = zlib.decompressobj(-zlib.MAX_WBITS)
                self.first = False
                return self.add(chunk)
            self.inflate = None  # not decodable: the client's decoder says so; count what arrives
        self.first = False

    def _inflate(self, data: bytes) -> None:
        inflate = self.inflate
        assert inflate is not None  # called only once the stream decodes
        while data:
            out = inflate.decompress(data, 1 << 20)
            self._count(len(out))
            data = inflate.unconsumed_tail
            if not out:
                break

    def _count(self, n: int) -> None:
        self.size += n
        if self.size > self.cap:
            raise AnswerRefused(f"{self.what}: the answer is over the {self.cap}-byte cap (decoded); not read")


def _answer_cap(request) -> int | None:
    """The decoded size an answer to ``request`` may have: ``MAX_ANSWER_BYTES`` for a Hub API call."""
    return MAX_ANSWER_BYTES if request.url.path.startswith("/api/") else None


class _GuardedStream(httpx2.SyncByteStream):
    """A response body that stops when the call's time is spent, however slowly it trickles, and (an API answer)
    when it would inflate past its cap."""

    def __init__(self, inner, call: _Call | None, inflated: _Inflated | None):
        self.inner, self.call, self.inflated = inner, call, inflated

    def __iter__(self):
        for chunk in self.inner:
            if self.call is not None:
                self.call.seconds_left()
            if self.inflated is not None:
                self.inflated.add(chunk)
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
        cap = _answer_cap(request)
        if cap is not None:
            request.headers["Accept-Encoding"] = ANSWER_ENCODINGS
        if call is None:
            response = self.inner.handle_request(request)
        else:
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
        inflated = None
        if cap is not None:
            what = call.what if call is not None else f"{request.method} {request.url.path}"
            encoding = response.headers.get("Content-Encoding", "").strip().lower()
            try:
                inflated = _Inflated(encoding, cap, what)
            except AnswerRefused:
                response.close()
                raise
        if call is not None or inflated is not None:
            response.stream = _GuardedStream(response.stream, call, inflated)
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
