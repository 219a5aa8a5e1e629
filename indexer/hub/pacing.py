"""Client-side pacing at the Hub's own rate limits: one fixed window per bucket.

Hub docs "Rate limits" (2025, docs/hub-api.md §0.1.4): fixed 5-minute windows per bucket (``api``,
``resolvers``); quotas per window api / resolvers: anonymous 500 / 3,000, free account 1,000 / 5,000.
A token bucket that starts full and refills continuously can spend two quotas inside one fixed window
(a full bucket at the window's end, then the refill), so the crawler counts per window instead.
"""

from __future__ import annotations

import math
import threading
import time

from ..errors import BudgetExhausted

WINDOW_SECONDS = 300.0
TIER_QUOTAS = {"anonymous": (500, 3000), "free": (1000, 5000)}


class FixedWindow:
    """Client side of one fixed-window bucket: at most ``quota`` calls per ``window`` seconds.

    A window starts with the first call after the previous one ended (the imitation's model; a server
    whose answer disagrees by more than a second is followed instead). The server's ``RateLimit``
    remaining can only lower our count (other clients of the same quota); its reset moves ours.
    ``acquire`` blocks until a call may go out, or raises BudgetExhausted when that would pass the
    run's deadline or its call cap.
    """

    def __init__(self, name: str, quota: int, window: float = WINDOW_SECONDS, *, fixed: bool = False):
        self.name = name
        self.quota, self.window = max(1, int(quota)), float(window)
        self.fixed = fixed  # an explicit --*-budget: announced quotas do not replace it
        self.learned = False
        self.remaining = self.quota
        self.reset_at: float | None = None  # monotonic end of the current window
        self.window_id = 0
        self.calls = 0
        self.limited = 0  # 429s received
        self.waited = 0.0
        self.max_calls: int | None = None
        self.deadline: float | None = None  # monotonic
        self.held_until = 0.0  # after a 429: nothing goes out before this
        self.answered = False  # has the current window had an answer yet?
        self.cond = threading.Condition()

    def acquire(self) -> int:
        """Take one call from the current window; returns the window's id."""
        with self.cond:
            while True:
                now = time.monotonic()
                if self.max_calls is not None and self.calls >= self.max_calls:
                    raise BudgetExhausted(f"{self.name} call budget of {self.max_calls} spent")
                if now >= self.held_until:
                    if self.reset_at is None or now >= self.reset_at:
                        self.window_id += 1
                        self.remaining, self.reset_at = self.quota, now + self.window
                        self.answered = False
                    if self.remaining > 0:
                        self.remaining -= 1
                        self.calls += 1
                        return self.window_id
                    wait = self.reset_at - now
                else:
                    wait = self.held_until - now
                if self.deadline is not None and now + wait > self.deadline:
                    if now < self.held_until:
                        raise BudgetExhausted(f"the Hub asked to wait {math.ceil(wait)} s (429 on the {self.name} "
                                              "bucket), past the run's deadline")
                    raise BudgetExhausted(f"{self.name} quota spent and the run's time is up")
                self.cond.wait(min(wait, 1.0))
                self.waited += time.monotonic() - now

    def observe(self, remaining: int, reset_in: float, quota: int | None, window: float | None,
                window_id: int | None, hold: float | None = None) -> None:
        """Apply a response's ``RateLimit`` / ``RateLimit-Policy`` to this bucket; ``hold`` (a 429)
        keeps every call of the bucket back for that many seconds."""
        limited = hold is not None
        hold = hold or 0.0
        with self.cond:
            now = time.monotonic()
            if quota and window and not self.fixed:
                if not self.learned or (quota, float(window)) != (self.quota, self.window):
                    if not self.learned and window_id == self.window_id:
                        # first announcement: re-base this window's count on the real quota
                        used = self.quota - self.remaining
                        self.remaining = max(0, int(quota) - used)
                    self.quota, self.window = int(quota), float(window)
                self.learned = True
            if limited:
                self.limited += 1
                self.held_until = max(self.held_until, now + hold)
            if window_id == self.window_id:  # an answer about an earlier window says nothing about this one
                server_reset = now + reset_in  # t is whole seconds: the true reset is at most 1 s earlier
                if not self.answered:
                    # The server opened its window between our send and this answer: count from the answer,
                    # so our window does not end before the server's; follow the server when it disagrees
                    # by more than t's rounding (e.g. windows aligned to the clock).
                    self.answered = True
                    self.reset_at = now + self.window
                    if abs(server_reset - self.reset_at) > 1.0:
                        self.reset_at = server_reset
                elif self.reset_at is not None and server_reset < self.reset_at - 1.0:
                    self.reset_at = server_reset  # later answers may only end the window sooner
                self.remaining = min(self.remaining, max(0, int(remaining)))
            self.cond.notify_all()


def least_seconds(calls: int, quota: int, window: float) -> float:
    """The least wall time a fixed-window quota allows for ``calls`` calls (the first window is free)."""
    if calls <= 0:
        return 0.0
    return (math.ceil(calls / quota) - 1) * window
