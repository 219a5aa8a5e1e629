"""How well the expected speed-up of speculator heads (EAGLE-3) matches the shared head measurements.

The ``heads`` of ../shared/speedups/measurements.json are EAGLE-3 heads measured in SGLang (SpecForge's SpecBundle,
H200, chains of 3 steps, batch 8 and batch 1) and the EAGLE-3 paper's throughput at batch 2 to 64 (SGLang on an
H100, vLLM on an A100). The model is indexer.speed.model.estimate_head at each row's batch and draft length.
Rows whose target does not fit on one device of its kind (Qwen3-235B, Kimi-K2, Llama-4-Scout, ...) are left
out and counted: they ran tensor-parallel over several GPUs, which the model does not describe.

Printed, on the same rows in the same run:
- the model with the head's acceptance held out: α per task fitted on the other targets' heads (leave one target
  out), so a row never sees its own accept length;
- the model given each row's measured accept length (the cost model alone);
- Leviathan's formula at the same α (a free verify pass and no overhead).
``--fit`` prints HEAD_ACCEPT["eagle3"] fitted on every row that reports an accept length.

    python benchmarks/speedup_heads.py [--fit]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speedup_models import SHAPES  # noqa: E402

from indexer.speed import calibrate as cal  # noqa: E402
from indexer.speed import hardware as hw  # noqa: E402
from indexer.speed import model, quant  # noqa: E402

MEASUREMENTS = Path(__file__).resolve().parents[1].parent / "shared" / "speedups" / "measurements.json"
TASKS = {"mtbench": "chat", "mt-bench": "chat", "mt-bench throughput": "chat", "humaneval": "code",
         "gsm8k": "reasoning"}
RUNTIME = model.SERVING  # SGLang and vLLM

# Targets of the head rows that fit on one H200/H100/A100 (config.json of each on the Hub).
# Qwen3-30B-A3B(-Instruct-2507) and Qwen3-Coder-30B-A3B: 48 layers, hidden 2048, 128 experts, 8 per token,
# 4 KV heads of 128. Qwen3-Next-80B-A3B: 48 layers (12 full attention with 2 KV heads of 256, the rest Gated
# DeltaNet), hidden 2048, 512 experts, 10 per token.
_QWEN3_30B = model.Shape(params=int(30.5e9), active=int(3.3e9), layers=48, hidden=2048, vocab=151936, tied=False,
                         experts=128, experts_per_token=8, kv_per_token=2 * 48 * 4 * 128)
TARGETS = {
    "Qwen3-30B-A3B-Instruct-2507": (_QWEN3_30B, "bf16"),
    "Qwen3-Coder-30B-A3B-Instruct": (_QWEN3_30B, "bf16"),
    "Qwen3-Next-80B-A3B-Instruct-FP8": (model.Shape(params=int(80e9), active=int(3.9e9), layers=48, hidden=2048,
                                                    vocab=151936, tied=False, experts=512, experts_per_token=10,
                                                    kv_per_token=2 * 12 * 2 * 256), "fp8"),
    "Llama-3.1-8B-Instruct": (SHAPES["meta-llama/Llama-3.1-8B-Instruct"], "bf16"),
    "meta-llama/Llama-3.1-8B-Instruct": (SHAPES["meta-llama/Llama-3.1-8B-Instruct"], "bf16"),
}
# The EAGLE-3 head of each: one decoder layer whose attention reads 2 x hidden (the embedding and the fused hidden
# states), a dense MLP, the fusion fc over 3 target layers and an lm_head over a 32,000-token draft vocabulary.
HEAD_MLP = {2048: 6144, 4096: 14336}


def eagle3_head(target: model.Shape) -> model.Shape:
    h = target.hidden
    heads, kv, hd = h // 128, 8 if h >= 4096 else 4, 128
    attn = 2 * h * heads * hd + 2 * (2 * h * kv * hd) + heads * hd * h
    params = attn + 3 * h * HEAD_MLP[h] + 3 * h * h + 32000 * h
    return model.Shape(params=params, layers=1, hidden=h, tied=True)


class HeadCase:
    def __init__(self, row: dict):
        self.row = row
        self.target, tq = TARGETS[row["target"]]
        self.head = eagle3_head(self.target)
        gamma = row.get("steps") or _chain(row.get("num_draft_tokens"))
        device = hw.lookup(row["hw_key"])
        self.task = TASKS[row["task"].lower()]
        self.setup = model.Setup(device, RUNTIME, quant.lookup(tq), quant.lookup(tq), task=self.task,
                                 draft_tokens=gamma, max_draft_tokens=gamma, batch=int(row["batch_size"]))
        self.gamma = gamma
        self.speedup = float(row["speedup"])
        self.accept = row.get("accept_length")
        self.alpha = _invert(self.accept, gamma) if self.accept else None


def _chain(text) -> int:
    digits = [int(t) for t in str(text).split() if t.isdigit()]
    return digits[0] if digits else 3


def _invert(tokens: float, gamma: int) -> float:
    lo, hi = 0.0, 0.9999
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if model.tokens_per_round(mid, gamma) < tokens else (lo, mid)
    return lo


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def fit(cases: list[HeadCase]) -> dict:
    """Mean logit α per task over the rows with an accept length; prose is chat with the draft models' offset."""
    by_task: dict[str, list[float]] = {}
    for c in cases:
        if c.alpha is not None:
            by_task.setdefault(c.task, []).append(_logit(c.alpha))
    out = {t: round(sum(v) / len(v), 3) for t, v in by_task.items()}
    if "chat" in out:
        prose = model.PRIORS["accept"]["task"]
        out["prose"] = round(out["chat"] + prose["prose"] - prose["chat"], 3)
    return out


def predict(c: HeadCase, accept: dict, measured: bool = False) -> float:
    if measured:  # the head runs at the target's precision: setup's draft quantization is the target's
        return model.best_speedup(c.target, c.head, c.alpha, c.setup)[0]
    return model.estimate_head(c.target, c.head, c.setup, method="eagle3", accept={"eagle3": accept}).estimate


def leviathan(c: HeadCase, accept: dict) -> float:
    a = 1 / (1 + math.exp(-accept[c.task]))
    ratio = c.head.params / (c.target.active or c.target.params)
    return model.tokens_per_round(a, c.gamma) / (c.gamma * ratio + 1)


def report(name: str, cases: list[HeadCase], preds: list[float]) -> None:
    errs = sorted(abs(math.log(p / c.speedup)) for c, p in zip(cases, preds, strict=True))
    right = sum(cal.speed_class(p) == cal.speed_class(c.speedup) for c, p in zip(cases, preds, strict=True))
    mid = len(errs) // 2
    median = errs[mid] if len(errs) % 2 else (errs[mid - 1] + errs[mid]) / 2
    print(f"{name:<44} rows {len(cases):>3}  class right {right / len(cases):.0%}  median |ln err| {median:.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="print HEAD_ACCEPT['eagle3'] fitted on every row")
    ap.add_argument("--measurements", type=Path, default=MEASUREMENTS)
    args = ap.parse_args()
    if not args.measurements.exists():
        print(f"error: {args.measurements} is absent (the shared measurements sit beside the checkout)")
        return 2
    rows = json.loads(args.measurements.read_text())["heads"]
    usable = [r for r in rows if r.get("target") in TARGETS and r.get("speedup") and r.get("hw_key")]
    cases = [HeadCase(r) for r in usable]
    print(f"{len(rows)} head rows: {len(cases)} on one device; {len(rows) - len(cases)} left out (tensor-parallel "
          f"targets: {', '.join(sorted({r['target'] for r in rows if r not in usable}))})")
    if args.fit:
        print("HEAD_ACCEPT['eagle3'] =", fit(cases))
        return 0
    held = []
    for c in cases:  # leave the row's target out of the acceptance fit
        others = fit([o for o in cases if o.row["target"] != c.row["target"]])
        held.append((c, predict(c, others), leviathan(c, others)))
    for label, subset in (("all", cases), ("batch 1", [c for c in cases if c.setup.batch == 1]),
                          ("batch 2-64 (throughput)", [c for c in cases if c.setup.batch > 1])):
        if not subset:
            continue
        picked = [h for h in held if h[0] in subset]
        print(f"-- {label}")
        report("  model, α held out (leave one target out)", subset, [h[1] for h in picked])
        report("  Leviathan at the same α", subset, [h[2] for h in picked])
        measured = [c for c in subset if c.alpha is not None]
        if measured:
            report("  model given the measured accept length", measured, [predict(c, {}, True) for c in measured])
    print("\nper row: target, task, batch, γ, measured, model (α held out), Leviathan")
    for c, p, lev in held:
        print(f"  {c.row['target'][:34]:<34} {c.task:<9} b{c.setup.batch:<3} γ{c.gamma}  {c.speedup:5.2f}  "
              f"{p:5.2f}  {lev:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
