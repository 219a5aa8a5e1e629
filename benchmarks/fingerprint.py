"""Fast path vs. the baseline AutoTokenizer.from_pretrained + get_vocab() over the real corpus.

All run in this one process, over every directory of ../shared/corpus/models; transformers
is imported and warmed before timing so no side pays for it. Per directory it times:

* fast: ``fingerprint_dir(d)``, everything the catalog stores (both fingerprints, added and
  special tokens, ...);
* baseline: ``AutoTokenizer.from_pretrained(d, trust_remote_code=False).get_vocab()`` alone,
  the baseline the README's targets use (no hashing at all, so the ratio is conservative);
* reference: ``fingerprint_dir(d, reference=True)``, the fallback path, for parity.

Prints per-directory times, totals and the speedup ratio; exits 1 if any fingerprint differs.

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
    from transformers import AutoTokenizer

    from indexer.vocab.fingerprint import fingerprint_dir

    def baseline(d):
        return AutoTokenizer.from_pretrained(str(d), trust_remote_code=False).get_vocab()

    fingerprint_dir(dirs[0], reference=True)  # warm transformers' lazy modules
    total_fast = total_base = total_ref = 0.0
    mismatches = fallbacks = 0
    print(f"{'directory':55} {'fast s':>8} {'base s':>8} {'ref s':>8} {'ratio':>7}  path")
    for d in dirs:
        tf, fast = best_of(lambda d=d: fingerprint_dir(d), args.repeat)
        tb, _ = best_of(lambda d=d: baseline(d), args.repeat)
        tr, ref = best_of(lambda d=d: fingerprint_dir(d, reference=True), args.repeat)
        total_fast, total_base, total_ref = total_fast + tf, total_base + tb, total_ref + tr
        same = fast.vocab_sha256 == ref.vocab_sha256 and fast.base_vocab_sha256 == ref.base_vocab_sha256
        mismatches += not same
        fallbacks += fast.method != "fast"
        print(f"{d.name[:55]:55} {tf:8.4f} {tb:8.4f} {tr:8.4f} {tb / tf:7.1f}  "
              f"{fast.method}{'' if same else '  MISMATCH'}")
    ratio = total_base / total_fast
    print(f"\ndirectories: {len(dirs)}, fast path used: {len(dirs) - fallbacks}, fell back: {fallbacks}")
    print(f"identical fingerprints (fast vs reference): {len(dirs) - mismatches}/{len(dirs)}")
    print(f"total fast {total_fast:.3f} s, baseline {total_base:.3f} s, reference path {total_ref:.3f} s")
    print(f"speedup ratio (baseline / fast): {ratio:.1f}x   target >= {TARGET_RATIO:.0f}x "
          f"{'MET' if ratio >= TARGET_RATIO else 'NOT MET'}")
    print(f"speedup ratio (reference path / fast): {total_ref / total_fast:.1f}x")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
