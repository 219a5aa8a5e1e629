"""Fixed-window rate limits per bucket, as the real Hub announces and enforces them.

Hub docs "Rate limits" (2025, HUB-API.md §0.1.4): fixed 5-minute windows per bucket, ``api`` (every
``/api/`` call, listings included) and ``resolvers`` (every URL with ``/resolve/``); quotas per window
api / resolvers: anonymous (per IP) 500 / 3,000, free account 1,000 / 5,000. Every response carries
``RateLimit: "<bucket>";r=<remaining>;t=<seconds to reset>`` and
``RateLimit-Policy: "fixed window";"<bucket>";q=<quota>;w=<window>``; a refused call gets 429 with
``Retry-After``. The header syntax is what huggingface_hub parses (``utils/_http.py:85-141``).

A window starts with a key's first call after the previous window ended. The key is the token when
one is sent, else the client's address.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

ANONYMOUS = {"api": 500, "resolvers": 3000}
FREE = {"api": 1000, "resolvers": 5000}
WINDOW = 300.0


@dataclass
class Verdict:
    """One call's outcome in its bucket, with what the Hub announces about it."""

    bucket: str
    allowed: bool
    remaining: int
    reset: int  # whole seconds, rounded up
    quota: int
    window: float

    def headers(self) -> dict:
        """``RateLimit`` and ``RateLimit-Policy`` (and ``Retry-After`` when refused), as the Hub sends them."""
        h = {
            "RateLimit": f'"{self.bucket}";r={self.remaining};t={self.reset}',
            "RateLimit-Policy": f'"fixed window";"{self.bucket}";q={self.quota};w={self.window:g}',
        }
        if not self.allowed:
            h["Retry-After"] = str(self.reset)
        return h


class RateLimits:
    """The quotas of every key and bucket, counted in fixed windows."""

    def __init__(self, anonymous: dict | None = None, with_token: dict | None = None, window: float = WINDOW):
        self.anonymous = {**ANONYMOUS, **(anonymous or {})}
        self.with_token = {**FREE, **(with_token or {})}
        self.window = float(window)
        self._state: dict[tuple[str, str], list] = {}  # (key, bucket) -> [window end, used]
        self._lock = threading.Lock()
        self.refused = {"api": 0, "resolvers": 0}

    @staticmethod
    def bucket_of(raw_path: str) -> str | None:
        """The bucket a path counts against (``api`` or ``resolvers``), or None when it is not limited."""
        if raw_path.startswith("/api/"):
            return None if raw_path.startswith("/api/agent-harnesses") else "api"
        if "/resolve/" in raw_path:
            return "resolvers"
        return None

    def check(self, raw_path: str, key: str, has_token: bool) -> Verdict | None:
        """Count one call of ``key`` and say whether it is allowed (None: the path is not limited)."""
        bucket = self.bucket_of(raw_path)
        if bucket is None:
            return None
        quota = (self.with_token if has_token else self.anonymous)[bucket]
        now = time.monotonic()
        with self._lock:
            state = self._state.setdefault((key, bucket), [0.0, 0])
            if now >= state[0]:
                state[0], state[1] = now + self.window, 0
            allowed = state[1] < quota
            if allowed:
                state[1] += 1
            else:
                self.refused[bucket] += 1
            reset = max(1, math.ceil(round(state[0] - now, 6)))  # (now + w) - now can exceed w by one ulp
            return Verdict(bucket, allowed, quota - state[1], reset, quota, self.window)
