"""What the expected speed-up costs a query: `run_query` with the estimate against the same call without it.

Both run in this process on the demo catalog (built into a temp dir unless --db names one), alternating, after a
warm-up; the baseline is the same ranking with ``Query._speedup`` answering None (no estimate, no facts read). Prints
the medians and their ratio; the target is no measurable change (a ratio within the run's own noise, about 1.05).

    python benchmarks/speedup_cost.py [--db data/demo.db] [--runs 40]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from indexer.answer import ranking
from indexer.answer.query import run_query

TARGET = "lumen-ai/Lumen-7B-Instruct"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", help="a catalog (default: the demo catalog, built in a temp dir)")
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    db = args.db
    if db is None:
        from indexer.demo import build_demo_catalog

        db = str(Path(tempfile.mkdtemp()) / "demo.db")
        build_demo_catalog(db, log=lambda _m: None)
    with_estimate = ranking.Query._speedup
    without = {"speedup": [], "plain": []}
    for engine in ("sglang", "llama.cpp", "mlx"):
        run_query(TARGET, engine=engine, db=db)  # warm-up
    for i in range(args.runs):
        for kind in (("speedup", "plain") if i % 2 else ("plain", "speedup")):
            ranking.Query._speedup = with_estimate if kind == "speedup" else (lambda self, r, e: None)
            start = time.perf_counter()
            for engine in ("sglang", "llama.cpp", "mlx"):
                run_query(TARGET, engine=engine, db=db)
            without[kind].append(time.perf_counter() - start)
    ranking.Query._speedup = with_estimate
    a, b = statistics.median(without["speedup"]), statistics.median(without["plain"])
    print(f"run_query x3 engines, median of {args.runs}: with the estimate {a * 1e3:.1f} ms, without {b * 1e3:.1f} ms, "
          f"ratio {a / b:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
