"""How many tokens a speculation round drafts and yields, when the engine ends a draft where the draft model is unsure.

llama-server drafts up to its cap (``--spec-draft-n-max``) and stops at the first token whose top probability is
below ``--spec-draft-p-min``; a fixed count per round (Leviathan et al. 2023) is the case p-min = 0. Stdlib only: the
engine modules name their gates with :class:`DraftGate` without loading the speed model.

The builds the published measurements ran (2025 to early 2026, before the speculative refactor; llama.cpp
@4227c9be4 as llama-cpp-python 0.3.16 vendors it, ``SpeedProfile.published_gate`` in engines/llamacpp.py):
--draft-max 16, --draft-min 0, --draft-p-min 0.75 (common/common.h:203-207), the unsure token drafted before the
test stops the draft (common/speculative.cpp:332-341), and llama-server counts drafted and accepted tokens of kept
drafts (tools/server/server.cpp:3699-3728); a draft shorter than --draft-min is not made (server.cpp:3683-3687).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class DraftGate:
    """How an engine ends a draft before its cap (the cap is the setup's draft-token count, llama-server's
    ``--spec-draft-n-max``): it stops where the draft model's top-token probability falls below ``p_min``; a draft
    shorter than ``n_min`` is thrown away (the round is a plain step); ``keeps_unsure``: the token that fails the
    gate is still drafted (llama.cpp builds of 2025, common/speculative.cpp pushes it before the test) or dropped
    (the builds before and after). The engine modules say which gate which release has (``SpeedProfile``)."""

    p_min: float
    n_min: int = 0
    keeps_unsure: bool = False


def tokens_per_round(alpha: float, gamma: int) -> float:
    """Leviathan's expected tokens per round: accepted drafts plus the target's own token."""
    if alpha >= 0.9999:
        return gamma + 1.0
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


# The draft's top-token probability p differs token to token. With a calibrated draft (it is right as often as it
# is sure: P(accepted | p) = p), α is the mean of p; p is taken as Beta(α ν, (1 - α) ν). ν from the one published
# run that reports the gate's effect (llama.cpp issue #25908, Qwen3-4B with Qwen3-0.6B, n_max 64): with p_min 0,
# 96 of 1378 drafted tokens accepted (α 0.82 per token); with p_min 0.75, accepted/drafted 0.90 and an accept length
# of 3.7-3.9. ν 0.6 gives both (0.90, 3.81): most tokens are near-certain, the rest near-guesses.
CONFIDENCE_SPREAD = 0.6


def _beta_tail(a: float, b: float, x: float) -> float:
    """P(p >= x) for p ~ Beta(a, b): 1 - the regularized incomplete beta (continued fraction, Lentz's method)."""
    if x <= 0.0:
        return 1.0
    if x >= 1.0:
        return 0.0
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast on this side only
        return 1.0 - _beta_tail(b, a, 1.0 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)) / a
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
    f = d
    for m in range(1, 200):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
            c = 1.0 + num / c
            c = c if abs(c) > 1e-300 else 1e-300
            f *= c * d
        if abs(c * d - 1.0) < 1e-10:
            break
    return 1.0 - front * f


def gate_rates(alpha: float, p_min: float, spread: float = CONFIDENCE_SPREAD) -> tuple[float, float]:
    """(q, a): the share of draft tokens sure enough to pass the gate, and the share that pass and are accepted."""
    alpha = min(max(alpha, 1e-4), 1 - 1e-4)
    if p_min <= 0.0:
        return 1.0, alpha
    a, b = alpha * spread, (1 - alpha) * spread
    return _beta_tail(a, b, p_min), alpha * _beta_tail(a + 1, b, p_min)


@dataclass(frozen=True)
class Round:
    """One speculation round in expectation: tokens it yields (accepted drafts and the target's own), draft passes,
    tokens drafted (what an engine counts as drafted), and the share of rounds verifying k tokens, by k."""

    tokens: float
    passes: float
    drafted: float
    verify: dict[int, float]
    # the share of rounds that verify a kept draft, and of those that reject a token, by the accepted count before it
    # (what an engine that cannot cut a recurrent state back pays for: a snapshot, then a restore and a replay)
    kept: float = 1.0
    rejected: tuple[tuple[int, float], ...] = ()


@lru_cache(maxsize=65536)  # a calibration asks the same rounds thousands of times (α is fixed while the costs move)
def round_of(alpha: float, n: int, gate: DraftGate | None, spread: float = CONFIDENCE_SPREAD) -> Round:
    """A round that drafts up to ``n`` tokens under ``gate`` (tokens i.i.d.: a token passes the gate with q, passes
    and is accepted with a; the accepted prefix ends at the first rejected token, the draft at the first unsure one
    or at n). No gate: n tokens every round, Leviathan's round."""
    if gate is None or (gate.p_min <= 0.0 and gate.n_min <= n):
        rejected = tuple((i, alpha ** i * (1 - alpha)) for i in range(n))
        return Round(tokens_per_round(alpha, n), float(n), float(n), {n + 1: 1.0}, 1.0 if n else 0.0, rejected)
    m = gate.n_min
    if m > n:  # a cap below the minimum: the server does not draft (tools/server/server.cpp:3683-3687 @4227c9be4)
        return Round(1.0, 0.0, 0.0, {1: 1.0}, 0.0)
    q, a = gate_rates(alpha, gate.p_min, spread)
    first = 1 if gate.keeps_unsure else 0  # the shortest draft: the unsure token kept, or nothing
    lengths = {}
    for length in range(first, n + 1):  # P(L = length)
        stays = q ** (length - first)
        lengths[length] = stays * (1 - q) if length < n else stays
    accepted = 0.0  # E[accepted tokens of rounds whose draft is kept (L >= n_min)]
    for i in range(1, n + 1):
        if gate.keeps_unsure:  # tokens 1..i-1 passed and were accepted, token i accepted (and passed if L must grow)
            accepted += a ** (i - 1) * alpha if m <= i else a ** i * q ** (m - 1 - i)
        else:
            accepted += a ** i * q ** max(0, m - i)
    verify: dict[int, float] = {}
    passes = drafted = 0.0
    for length, p in lengths.items():
        kept = length >= m
        verify[length + 1 if kept else 1] = verify.get(length + 1 if kept else 1, 0.0) + p
        drafted += p * length * kept
        # the draft runs one pass a drafted token, and one more for the token it gave up on (dropped, or a full cap)
        passes += p * (length if gate.keeps_unsure or length == n else length + 1)
    kept_share, rejected = _rejections(alpha, n, gate, q, a, lengths)
    return Round(1.0 + accepted, passes, drafted, verify, kept_share, rejected)


def _rejections(alpha: float, n: int, gate: DraftGate, q: float, a: float,
                lengths: dict[int, float]) -> tuple[float, tuple[tuple[int, float], ...]]:
    """The share of rounds with a kept draft, and of rounds that reject a drafted token after i accepted ones, by i.
    A sure token (it passed the gate) is accepted with a / q, the unsure one a draft ends on with (α - a) / (1 - q),
    a token drafted at the cap without a test with α."""
    sure = min(1.0, a / q) if q > 0 else 0.0
    unsure = min(1.0, max(0.0, (alpha - a) / (1 - q))) if q < 1 else alpha
    kept_share, by_count = 0.0, [0.0] * n
    for length, p in lengths.items():
        if length < max(gate.n_min, 1):
            continue
        kept_share += p
        last = (unsure if length < n else alpha) if gate.keeps_unsure else sure
        prefix = p
        for i in range(length):  # token i + 1 rejected after i accepted
            accept = last if i == length - 1 else sure
            by_count[i] += prefix * (1 - accept)
            prefix *= accept
    return kept_share, tuple((i, r) for i, r in enumerate(by_count) if r > 0)


def drafted_acceptance(alpha: float, n: int, gate: DraftGate | None) -> float:
    """What llama-server reports as its acceptance rate (accepted / drafted tokens) for a per-token α."""
    r = round_of(alpha, n, gate)
    return (r.tokens - 1.0) / r.drafted if r.drafted else 0.0


def per_token_alpha(reported: float, n: int, gate: DraftGate | None) -> float | None:
    """The per-token α whose accepted / drafted under ``gate`` is ``reported`` (bisection: it grows with α); None
    where it does not tell α: a gate that drops the unsure token keeps only sure tokens, whose acceptance is about the
    same at any α (#25908: 0.90 at n_max 8, 16 and 64)."""
    if gate is not None and gate.p_min > 0.0 and not gate.keeps_unsure:
        return None
    lo, hi = 0.0, 0.999
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if drafted_acceptance(mid, n, gate) < reported else (lo, mid)
    return lo
