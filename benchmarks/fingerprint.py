"""Fast path vs. reference (AutoTokenizer.from_pretrained + get_vocab()) over the real corpus.

Both run in this one process, over every directory of ../shared/corpus/models; transformers
is imported before timing so neither side pays for it. Prints per-directory times, the
totals and the speedup ratio, and fails if any fingerprint differs.

    python benchmarks/fingerprint.py [MODELS_DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

DEFAULT_MODELS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "models"
TARGET_RATIO = 20.0


def best_of(fn, repeat):
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="?", default=str(DEFAULT_MODELS))
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs per directory and path")
    args = ap.parse_args()
    dirs = sorted(p for p in Path(args.models).iterdir() if p.is_dir())
    if not dirs:
        print(f"no model directories under {args.models}", file=sys.stderr)
        return 2

    import transformers  # noqa: F401  (warm import, outside the timings)

    from indexer.fingerprint import fingerprint_dir

    fingerprint_dir(dirs[0], reference=True)  # warm transformers' lazy modules
    total_fast = total_ref = 0.0
    mismatches = fallbacks = 0
    print(f"{'directory':55} {'fast s':>8} {'ref s':>8} {'ratio':>7}  path")
    for d in dirs:
        tf, fast = best_of(lambda d=d: fingerprint_dir(d), args.repeat)
        tr, ref = best_of(lambda d=d: fingerprint_dir(d, reference=True), args.repeat)
        total_fast += tf
        total_ref += tr
        same = fast.vocab_sha256 == ref.vocab_sha256 and fast.base_vocab_sha256 == ref.base_vocab_sha256
        mismatches += not same
        fallbacks += fast.method != "fast"
        print(f"{d.name[:55]:55} {tf:8.4f} {tr:8.4f} {tr / tf:7.1f}  {fast.method}{'' if same else '  MISMATCH'}")
    ratio = total_ref / total_fast
    print(f"\ndirectories: {len(dirs)}, fast path used: {len(dirs) - fallbacks}, fell back: {fallbacks}")
    print(f"identical fingerprints: {len(dirs) - mismatches}/{len(dirs)}")
    print(f"total fast {total_fast:.3f} s, reference {total_ref:.3f} s")
    print(f"speedup ratio (reference / fast): {ratio:.1f}x   target >= {TARGET_RATIO:.0f}x "
          f"{'MET' if ratio >= TARGET_RATIO else 'NOT MET'}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
