"""How well the expected speed-up matches published measurements, against DraftFinder's formula and plain Leviathan.

Runs on ../shared/speedups/measurements.json (the usable single-stream rows whose models benchmarks/speedup_models.py
knows). Every figure of the model is on rows it was not calibrated on, calibrated from the first-principles priors
(indexer.speed.model.PRIORS) in this run:
- same hardware: 4-fold cross-validation over the M4 Max sweep (calibrate on the other folds and every other row);
- other hardware and engines: calibrate on the M4 Max rows alone, score every other row;
- leave one source out: calibrate without a source, score its rows; pooled over sources; and on the rows that
  report an acceptance, once more with that acceptance given (what `indexer measure` feeds back for a pair).
DraftFinder and Leviathan are computed on the same rows in the same run (they need no calibration; both use the
model's estimated acceptance, so the comparison is of the cost model). Prints the figures and PASS/FAIL against the
targets. ``--fit`` prints a calibration on every row (the values of model.CALIBRATION).

    python benchmarks/speedup.py [--fit [--write]] [--iterations N] [--catalog DB]
"""

from __future__ import annotations

import argparse
import pprint
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speedup_models import SHAPES, relation_of  # noqa: E402

from indexer.engines import speed_profile  # noqa: E402
from indexer.speed import calibrate as cal  # noqa: E402
from indexer.speed import model  # noqa: E402

MEASUREMENTS = Path(__file__).resolve().parents[1].parent / "shared" / "speedups" / "measurements.json"
SWEEP_DEVICE = "M4 Max"
TARGETS = {"same_class": 0.90, "same_error": 0.15, "other_class": 0.75, "other_error": 0.30}


def held_out(cases, train_idx, test_idx, iterations):
    c = cal.calibrate([cases[i] for i in train_idx], model.PRIORS, iterations)
    return {i: cal.predict(cases[i], c) for i in test_idx}


def line(name, cases, idx, preds, measured=False):
    rows = [cases[i] for i in idx]
    m = cal.score(rows, [preds[i] for i in idx])
    lev = cal.score(rows, [cal.leviathan(cases[i], measured=measured) for i in idx])
    df = cal.score(rows, [cal.draftfinder(cases[i]) for i in idx])
    print(f"{name:<34} rows {m['rows']:>4}  class right {m['class_right']:.0%}  "
          f"median |ln err| {m['median_ln_error']:.3f}"
          f"   | Leviathan {lev['class_right']:.0%} {lev['median_ln_error']:.3f}"
          f" | DraftFinder {df['class_right']:.0%} {df['median_ln_error']:.3f}")
    return m, lev, df


NAMES = {"apple": "hw.APPLE", "nvidia": "hw.NVIDIA", "amd": "hw.AMD", "cpu": "hw.CPU", "ggml": "GGML", "mlx": "MLX",
         "serving": "SERVING", "eager": "EAGER", "float": "FLOAT", "q8": "Q8", "kquant": "KQUANT", "legacy": "LEGACY",
         "iquant": "IQUANT", "affine": "AFFINE", "fp8": "FP8", "int4": "INT4", "sibling": "SIBLING", "family": "FAMILY",
         "other": "OTHER"}


def _literal(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_literal(v) for v in value) + ")"
    if isinstance(value, str):
        return NAMES.get(value, repr(value))
    return repr(value)


def write_calibration(fitted: dict) -> None:
    """Replace the CALIBRATION literal of indexer/speed/model.py with ``fitted`` (one line per factor group)."""
    path = Path(model.__file__)
    text = path.read_text()
    start = text.index("CALIBRATION = {")
    end = text.index("\n}\n", start) + 3
    lines = ["CALIBRATION = {"]
    for key, value in fitted.items():
        one = f"    {key!r}: {_literal(value)},".replace("'", '"')
        if len(one) <= 120 or not isinstance(value, dict):
            lines.append(one)
        else:  # one entry a line
            lines.append(f'    "{key}": {{')
            lines += [f"        {_literal(k)}: {_literal(v)},".replace("'", '"') for k, v in value.items()]
            lines.append("    },")
    lines.append("}\n")
    path.write_text(text[:start] + "\n".join(lines) + text[end:])
    print(f"wrote {path}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="print a calibration on every row and stop")
    ap.add_argument("--write", action="store_true", help="with --fit: write it into indexer/speed/model.py")
    ap.add_argument("--iterations", type=int, default=800)
    ap.add_argument("--measurements", type=Path, default=MEASUREMENTS)
    ap.add_argument("--catalog", metavar="DB",
                    help="also the catalog's measurements (indexer measure) that name a device and a release: they "
                         "refine the factors of the devices and runtimes they ran on (one source, 'indexer measure')")
    args = ap.parse_args()
    if not args.measurements.exists():
        print(f"error: {args.measurements} is absent (the shared measurements sit beside the checkout)")
        return 2
    cases = cal.load_cases(args.measurements, SHAPES, relation_of, speed_profile)
    if args.catalog:
        from indexer.measure.calibration import cases as measured_cases

        added = measured_cases(args.catalog)
        print(f"{len(added)} measurements from {args.catalog}")
        cases += added
    if args.fit:
        fitted = cal.calibrate(cases, model.PRIORS, args.iterations)
        pprint.pprint(fitted, width=118, sort_dicts=False)
        if args.write:
            write_calibration(fitted)
        return 0
    t0 = time.time()
    sweep = [i for i, c in enumerate(cases) if c.hardware == SWEEP_DEVICE]
    others = [i for i, c in enumerate(cases) if c.hardware != SWEEP_DEVICE]
    print(f"{len(cases)} usable rows with known models: {len(sweep)} on {SWEEP_DEVICE}, {len(others)} on "
          f"{len({cases[i].hardware for i in others})} other devices")
    preds = {}
    folds = [sweep[k::4] for k in range(4)]
    for fold in folds:
        train = [i for i in range(len(cases)) if i not in set(fold)]
        preds.update(held_out(cases, train, fold, args.iterations))
    same, _, _ = line(f"same hardware ({SWEEP_DEVICE}, 4-fold)", cases, sweep, preds)
    preds_other = held_out(cases, sweep, others, args.iterations)
    other, lev_o, df_o = line("other hardware and engines", cases, others, preds_other)
    for device in sorted({cases[i].hardware for i in others}):
        line(f"  {device}", cases, [i for i in others if cases[i].hardware == device], preds_other)
    loso, loso_fed = {}, {}
    for source in sorted({c.source for c in cases}):
        test = [i for i, c in enumerate(cases) if c.source == source]
        c = cal.calibrate([cases[i] for i in range(len(cases)) if i not in set(test)], model.PRIORS, args.iterations)
        for i in test:
            loso[i] = cal.predict(cases[i], c)
            # fed back: the row's own measured acceptance stands for `indexer measure` run on that pair and text
            # (its α known, its speed not); the cost factors stay those calibrated without the row's source
            loso_fed[i] = cal.predict(cases[i], c, measured=True)
    every = list(range(len(cases)))
    _, lev_all, df_all = line("leave one source out (all rows)", cases, every, loso)
    loso_m = cal.score(cases, [loso[i] for i in every])
    hybrid = [i for i in every if not cal.describes(cases[i])]  # scored, never in a fit
    line("  rows of hybrid targets (no fit sees them)", cases, hybrid, loso)
    for i in hybrid:
        print(f"    {cases[i].row['id']}: measured {cases[i].speedup:.2f}, estimated {loso[i]:.2f}")
    with_alpha = [i for i in every if cases[i].alpha is not None]
    line("  rows that report an acceptance", cases, with_alpha, loso)
    line("  the same, their α measured (fed back)", cases, with_alpha, loso_fed, measured=True)  # Leviathan too
    checks = [
        ("same hardware class right", same["class_right"] >= TARGETS["same_class"]),
        ("same hardware median |ln err|", same["median_ln_error"] <= TARGETS["same_error"]),
        ("other hardware class right", other["class_right"] >= TARGETS["other_class"]),
        ("other hardware median |ln err|", other["median_ln_error"] <= TARGETS["other_error"]),
        ("smaller error than Leviathan and DraftFinder (LOSO)",
         loso_m["median_ln_error"] < min(lev_all["median_ln_error"], df_all["median_ln_error"])),
    ]
    for name, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    print(f"({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
