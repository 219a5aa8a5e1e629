"""Calibrate the speed model's few factors on published measurements, and score it against them.

The measurements are ``speedups/measurements.json`` of the project's shared data (one row per published single-
stream measurement: target, draft, engine, hardware, quantizations, task, speed-up, acceptance). Calibration runs in
two stages, each small enough to read:

1. acceptance: a least-squares line in logit(α) over the rows that report an acceptance, converted to a per-token α
   with the engines' own metric definitions (llama.cpp and LM Studio count accepted/drafted; Spec-Bench's τ is
   tokens per round, inverted with Leviathan's E(α, γ));
2. cost: the runtime factors (bandwidth share, per-layer and per-round overheads, verify arithmetic by kernel
   family) by Nelder-Mead on the squared log error of the speed-up, each factor pulled gently towards its prior
   so that a factor the rows cannot see keeps its first-principles value.

Not on the query path: ``indexer check`` only reads ``model.CALIBRATION``.
"""

from __future__ import annotations

import copy
import json
import math
import re
import statistics
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from . import hardware as hw
from . import model, quant
from .gate import DraftGate, per_token_alpha
from .model import EAGER, GGML, MLX


class Case:
    """One measurement made ready for the model: shapes, setup, relation, measured speed-up and per-token α.

    ``speed_of(engine, quant)`` says how the row's engine ran weights of that quantization (``engines.speed_profile``:
    the engines sit above this layer): its ``runtime``, ``max_draft_tokens`` (the cap of a row that names no draft
    length: llama-server stops a draft where the draft model is unsure, so the best length up to its cap stands for
    what ran) and ``default_draft_tokens`` (the fixed count an engine drafts when none is set, MLX; else None)."""

    def __init__(self, row: dict, target: model.Shape, draft: model.Shape, relation: str, speed_of: Callable):
        self.row = row
        self.target, self.draft, self.relation = target, draft, relation
        tq = quant.lookup(row["quant"])
        dq = quant.lookup(row["draft_quant"]) if row.get("draft_quant") else tq
        profile = speed_of(row["engine"], tq)
        gate = row_gate(row, profile)
        cap = row.get("draft_tokens") or (gate and profile.published_draft_tokens) or profile.max_draft_tokens
        fixed = cap if gate else profile.default_draft_tokens if not row.get("draft_tokens") else None
        self.setup = model.Setup(hw.lookup(row["hardware"]), profile.runtime, tq, dq, task=row.get("task") or "chat",
                                 max_draft_tokens=int(fixed or cap), draft_tokens=fixed, gate=gate,
                                 copies_state=profile.copies_state)
        self.speedup = float(row["speedup"])
        self.baseline = row.get("tok_s_baseline")  # the target's own decode speed, where the source gives it
        self.alpha = measured_alpha(row, int(fixed or cap), gate, fixed=bool(fixed))
        self.source = row["source"].split("/blob/")[0].split("/tree/")[0].split("/issues/")[0].split("/pull/")[0]
        self.hardware = self.setup.device.name


_FLAG = re.compile(r"--(?:spec-)?draft-(p-min|min|n-min)\s+([0-9.]+)")


def row_gate(row: dict, profile) -> DraftGate | None:
    """How the row's run ended its drafts: the gate of the builds that published measurements ran
    (``profile.published_gate``), with the p-min and minimum the row's flags set; None for an engine that drafts
    its full count, a row whose flags are the release's spelling (--spec-draft-*) or a row measured on the release
    (``ran_release``: `indexer measure` reads the release from the server): the release's own drafting."""
    gate = profile.published_gate
    flags = str((row.get("raw") or {}).get("num_draft_tokens") or "")
    if gate is None or "--spec-draft-" in flags or row.get("ran_release"):
        return None
    for name, value in _FLAG.findall(flags):
        gate = replace(gate, p_min=float(value)) if name == "p-min" else replace(gate, n_min=int(value))
    return gate


def measured_alpha(row: dict, gamma: int, gate: DraftGate | None = None, *, fixed: bool = False) -> float | None:
    """A per-token α from the row's acceptance and its definition (``formulas`` of the measurements file): tokens
    per round inverted with Leviathan's E(α, γ); accepted / drafted of a run that drafted a known count a round
    (``fixed``, or up to its cap under ``gate``) inverted through that round (``gate.per_token_alpha``: a round that
    stops at its first rejection drafts tokens after it, so accepted / drafted is below α); else taken as α."""
    a, definition = row.get("acceptance"), (row.get("acceptance_def") or "").lower()
    if a is None:
        return None
    if "tau" in definition or "mean accepted tokens" in definition:  # tokens per round incl. the bonus token
        g = gamma or 5
        lo, hi = 0.0, 0.999
        for _ in range(50):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if model.tokens_per_round(mid, g) < a else (lo, mid)
        return lo
    if (gate is not None or fixed) and float(a) < 0.98:
        found = per_token_alpha(float(a), gamma, gate)
        return None if found is None else min(found, 0.98)
    return min(float(a), 0.98)


def load_cases(path: Path, shapes: dict, relation_of, speed_of: Callable) -> list[Case]:
    """The usable rows of ``path`` whose two models ``shapes`` knows (``relation_of(target, draft)``), each run as
    ``speed_of(engine, quant)`` says (:class:`Case`)."""
    rows = json.loads(Path(path).read_text())["rows"]
    cases = []
    for r in rows:
        if not r.get("usable") or r.get("target") not in shapes or r.get("draft") not in shapes:
            continue
        if not r.get("hardware") or not r.get("quant") or r.get("speedup") is None:
            continue
        if "+" in str((r.get("raw") or {}).get("hardware") or ""):  # a draft on a second device: not modelled
            continue
        cases.append(Case(r, shapes[r["target"]], shapes[r["draft"]], relation_of(r["target"], r["draft"]),
                          speed_of))
    return cases


def predict(case: Case, cal: dict, *, measured: bool = False) -> float:
    """The model's speed-up for a case, with the measured α when asked and known, else the estimated one."""
    if measured and case.alpha is not None:
        return model.best_speedup(case.target, case.draft, case.alpha, case.setup, cal)[0]
    return model.estimate(case.target, case.draft, case.setup, relation=case.relation, cal=cal).estimate


# ---- stage 1: acceptance ------------------------------------------------------------------------------------------

def fit_acceptance(cases: list[Case], cal: dict) -> dict:
    """base, per_ln_size and quant_penalty by least squares in logit(α); task and relation offsets stay priors."""
    a = cal["accept"]
    xs, ys = [], []
    for c in cases:
        if c.alpha is None or c.alpha >= 0.98:
            continue
        s = c.setup
        known = a["task"][s.task] + a["relation"][c.relation]
        pen = model.quant_penalty(s.draft_quant) + model.quant_penalty(s.target_quant)
        xs.append((1.0, math.log(c.draft.params / 1e9), -pen))
        ys.append(model._logit(c.alpha) - known)
    if len(xs) < 3:
        return cal
    # normal equations, 3 x 3, with a small ridge towards the priors
    prior = (a["base"], a["per_ln_size"], a["quant_penalty"])
    lam = 0.5
    m = [[sum(x[i] * x[j] for x in xs) + (lam if i == j else 0) for j in range(3)] for i in range(3)]
    v = [sum(x[i] * y for x, y in zip(xs, ys)) + lam * prior[i] for i in range(3)]
    sol = _solve3(m, v)
    out = copy.deepcopy(cal)
    out["accept"]["base"], out["accept"]["per_ln_size"], out["accept"]["quant_penalty"] = (round(s, 3) for s in sol)
    resid = [y - sum(b * xi for b, xi in zip(sol, x)) for x, y in zip(xs, ys)]
    out["accept"]["spread"] = round(max(0.3, math.sqrt(sum(r * r for r in resid) / len(resid))), 3)
    return out


def _solve3(m, v):
    """Gaussian elimination for a 3 x 3 system."""
    m = [row[:] + [b] for row, b in zip(m, v)]
    n = 3
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(m[r][i]))
        m[i], m[p] = m[p], m[i]
        for r in range(n):
            if r != i:
                f = m[r][i] / m[i][i]
                m[r] = [a - f * b for a, b in zip(m[r], m[i])]
    return [m[i][n] / m[i][i] for i in range(n)]


# ---- stage 2: cost ------------------------------------------------------------------------------------------------

# (path into CALIBRATION) of each cost factor the rows can inform; the rest keep their first-principles priors.
COST_FACTORS = (
    ("eta", hw.APPLE), ("tau", (GGML, hw.APPLE)), ("overhead", (GGML, hw.APPLE)), ("overhead", (GGML, hw.NVIDIA)),
    ("kappa", quant.Q8), ("kappa", quant.KQUANT), ("kappa", quant.LEGACY), ("kappa", quant.FLOAT),
    ("tau", (MLX, hw.APPLE)), ("overhead", (MLX, hw.APPLE)), ("kappa", quant.AFFINE),
    ("kappa_scale", hw.NVIDIA), ("tau", (GGML, hw.NVIDIA)), ("tau", (EAGER, hw.NVIDIA)),
)
PRIOR_WEIGHT = 0.02


def _get(cal, key):
    return cal[key[0]][key[1]]


def _set(cal, key, value):
    cal[key[0]][key[1]] = value


def describes(case: Case) -> bool:
    """Whether the fit may set factors from the row: not for a target with recurrent-state layers (linear attention,
    state-space), whose rounds pay state copies no factor is fitted to and whose verify the model charges like
    attention layers' (docs/speed.md, "Hybrid and recurrent targets"). Such rows are still scored, on no fit's
    rows: taken as attention targets, two hybrid-MoE rows measured at 0.46-0.48x dragged the K-quant verify cost
    and the NVIDIA int8 scale (the only K-quant and NVIDIA rows beside a few others) to several times their values."""
    return not case.target.state_layers


def fit_cost(cases: list[Case], cal: dict, iterations: int = 800, fixed: set | frozenset = frozenset()) -> dict:
    """The cost factors that minimise the mean squared log error of the speed-up (measured α where reported) over
    the rows whose verify the model describes; ``fixed``: factors the decode speeds already set."""
    cases = [c for c in cases if describes(c)]
    factors = [k for k in COST_FACTORS if _informed(k, cases) and k not in fixed]
    prior = [math.log(max(_get(cal, k), 1e-3)) for k in factors]
    work = copy.deepcopy(cal)

    weights = _source_weights(cases)

    def loss(x):
        for k, v in zip(factors, x):
            _set(work, k, math.exp(v))
        if work["eta"][hw.APPLE] > 1:
            return 1e9
        err = sum(w * math.log(predict(c, work, measured=True) / c.speedup) ** 2 for c, w in zip(cases, weights))
        return err + PRIOR_WEIGHT * sum((a - b) ** 2 for a, b in zip(x, prior))

    best = nelder_mead(loss, prior, iterations)
    out = copy.deepcopy(cal)
    for k, v in zip(factors, best):
        _set(out, k, round(math.exp(v), 3))
    return out


def _source_weights(cases: list[Case]) -> list[float]:
    """A source weighs as the square root of its rows (one sweep of 348 rows must not drown ten other devices, nor
    one row weigh as much as a sweep); weights sum to one."""
    count: dict[str, int] = {}
    for c in cases:
        count[c.source] = count.get(c.source, 0) + 1
    raw = [1 / math.sqrt(count[c.source]) for c in cases]
    return [w / sum(raw) for w in raw]


def _informed(key, cases) -> bool:
    """Whether any case exercises the factor (a factor no row sees keeps its prior)."""
    name, sub = key
    for c in cases:
        s = c.setup
        if name == "eta" and s.device.kind == sub:
            return True
        if name in ("tau", "overhead") and (s.runtime, s.device.kind) == sub:
            return True
        if name == "kappa" and sub in (s.target_quant.family, s.draft_quant.family):
            return True
        if name == "kappa_scale" and s.device.kind == sub:
            return True
    return False


def nelder_mead(f, x0: list[float], iterations: int, step: float = 0.3) -> list[float]:
    """A plain Nelder-Mead simplex search (no SciPy on the install path)."""
    n = len(x0)
    simplex = [list(x0)] + [[x + (step if i == j else 0) for j, x in enumerate(x0)] for i in range(n)]
    values = [f(p) for p in simplex]
    for _ in range(iterations):
        order = sorted(range(n + 1), key=values.__getitem__)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        centroid = [sum(p[j] for p in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        refl = [c + (c - w) for c, w in zip(centroid, worst)]
        fr = f(refl)
        if fr < values[0]:
            exp = [c + 2 * (c - w) for c, w in zip(centroid, worst)]
            fe = f(exp)
            simplex[-1], values[-1] = (exp, fe) if fe < fr else (refl, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = refl, fr
        else:
            con = [c + 0.5 * (w - c) for c, w in zip(centroid, worst)]
            fc = f(con)
            if fc < values[-1]:
                simplex[-1], values[-1] = con, fc
            else:
                simplex = [simplex[0]] + [[b + 0.5 * (p - b) for p, b in zip(pt, simplex[0])] for pt in simplex[1:]]
                values = [values[0]] + [f(p) for p in simplex[1:]]
    return simplex[min(range(n + 1), key=values.__getitem__)]


def calibrate(cases: list[Case], cal: dict = model.PRIORS, iterations: int = 800) -> dict:
    """The decode speeds first (bandwidth share, unpacking), acceptance (it needs no cost), then the cost factors."""
    decoded = fit_decode(cases, cal)
    return fit_cost(cases, fit_acceptance(cases, decoded), iterations, fixed=_decode_informed(cases))


# ---- stage 0: decode speed ----------------------------------------------------------------------------------------

def _decode_informed(cases: list[Case]) -> set:
    return {("eta", c.setup.device.kind) for c in cases if c.baseline and describes(c)}


def fit_decode(cases: list[Case], cal: dict) -> dict:
    """η per device kind from float targets' decode speeds (nothing to unpack), then each quantization's
    unpacking cost from its targets' decode speeds: the time above the bytes, in FP32 operations per weight."""
    out = copy.deepcopy(cal)
    out.setdefault("unpack", {})
    rows = [c for c in cases if c.baseline and describes(c)]
    for kind in {c.setup.device.kind for c in rows}:
        plain = [c for c in rows if c.setup.device.kind == kind and c.setup.target_quant.family == quant.FLOAT]
        shares = []
        for c in plain:
            assert c.baseline  # rows holds only cases with a baseline
            p = model._Pass(c.target, c.setup.target_quant, c.setup, out)
            t_bytes = p.seconds(1) - p.layer_seconds  # the bytes, the KV cache's included: both move with η
            shares.append(out["eta"][kind] * t_bytes / max(1 / c.baseline - p.layer_seconds, 1e-6))
        if shares:
            out["eta"][kind] = round(min(0.98, statistics.median(shares)), 3)
    by_quant: dict[str, list[float]] = {}
    for c in rows:
        q, d = c.setup.target_quant, c.setup.device
        if q.family == quant.FLOAT:
            continue
        p = model._Pass(c.target, q, c.setup, {**out, "unpack": {}})
        assert c.baseline  # rows holds only cases with a baseline
        extra = 1 / c.baseline - p.seconds(1)
        ops = max(0.0, extra) * d.tflops * 1e12 / (p.read(c.setup.batch) * out["kappa_scale"][d.kind])
        by_quant.setdefault(quant.block(q), []).append(ops)
    for name, values in by_quant.items():
        out["unpack"][name] = round(statistics.median(values), 2)
    return out


# ---- scoring ------------------------------------------------------------------------------------------------------

def speed_class(s: float) -> str:
    """faster (>= 1.10x), slower (< 0.90x), else the same."""
    return "faster" if s >= 1.10 else "slower" if s < 0.90 else "same"


def score(cases: list[Case], predictions: list[float]) -> dict:
    """Share of rows whose class is right, and the median |ln(estimate / measured)|."""
    if not cases:
        return {"rows": 0, "class_right": None, "median_ln_error": None}
    errs = [abs(math.log(p / c.speedup)) for c, p in zip(cases, predictions)]
    right = sum(speed_class(p) == speed_class(c.speedup) for c, p in zip(cases, predictions))
    return {"rows": len(cases), "class_right": round(right / len(cases), 3),
            "median_ln_error": round(statistics.median(errs), 3)}


def leviathan(case: Case, *, measured: bool = False) -> float:
    """Leviathan et al.'s S(α, γ, c) with c the ratio of parameter bytes, best γ, a free verify and no overhead;
    ``measured``: at the row's measured α where it has one (as the model is given it), else the estimated."""
    s = case.setup
    alpha = model.acceptance(case.draft.params, case.relation, s.task, s.target_quant, s.draft_quant)[0]
    if measured and case.alpha is not None:
        alpha = case.alpha
    c = (case.draft.params * s.draft_quant.bpw) / (case.target.params * s.target_quant.bpw)
    return max(model.tokens_per_round(alpha, g) / (g * c + 1) for g in range(1, s.max_draft_tokens + 1))


def draftfinder(case: Case) -> float:
    """DraftFinder's heuristic (ms1963/DraftFinder src/draftfinder.py @ c7dbae4, as the measurements file states it)."""
    s = case.setup
    a = 0.75 + (0.15 if case.relation != model.OTHER else 0) + 0.05
    ratio = case.draft.params / case.target.params
    a += 0.05 if 1 / 50 <= ratio <= 1 / 5 else (-0.10 if ratio > 1 / 3 else -0.35 if ratio < 1 / 100 else -0.05)
    a -= 0.05 if s.draft_quant.bpw < 6 else 0.02 if s.draft_quant.bpw < 10 else 0
    a = min(0.95, max(0.40, a))
    k = 4
    lat = ((case.draft.params * s.draft_quant.bpw) / (case.target.params * s.target_quant.bpw)) ** 0.65
    return max(1.0, min(1 + k * 0.8, (1 + a * k) / (1 + k * lat)))
