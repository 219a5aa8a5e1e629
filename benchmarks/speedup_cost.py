"""What the expected speed-up costs a query: `run_query` with the estimate against the same call without it.

Both run in this process on the demo catalog (built into a temp dir unless --db names one), alternating, after a
warm-up; the baseline is the same ranking with the setup-and-estimate stage (``answer.estimate.add``) replaced by
launch commands by name (no estimate, no facts read). Prints
the medians and their ratio.

``--cli``: the same comparison as a user meets it, ``indexer query`` as a process (the console entry, both variants
importing the same modules first; the baseline patches that stage away before the command runs), alternating,
with the spread of the runs themselves (the median absolute deviation over the median): the target is no measurable
change, a difference smaller than that spread.

    python benchmarks/speedup_cost.py [--db data/demo.db] [--runs 40] [--cli]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from indexer.answer import estimate as stage
from indexer.answer.query import run_query
from indexer.answer.setup import launch

TARGET = "lumen-ai/Lumen-7B-Instruct"


def plain(cat, s, judged, speed) -> None:
    """The baseline's stage 3: each draft launched by name, nothing estimated."""
    for j in judged:
        j.launch = launch(s.name, s.target.gguf_file or s.t["repo_id"], j.member.repo_id)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", help="a catalog (default: the demo catalog, built in a temp dir)")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--cli", action="store_true", help="time `indexer query` processes instead of in-process calls")
    args = ap.parse_args()
    db = args.db
    if db is None:
        from indexer.jobs.demo import build_demo_catalog

        db = str(Path(tempfile.mkdtemp()) / "demo.db")
        build_demo_catalog(db, log=lambda _m: None)
    if args.cli:
        return cli(db, args.runs)
    with_estimate = stage.add
    without = {"speedup": [], "plain": []}
    for engine in ("sglang", "llama.cpp", "mlx"):
        run_query(TARGET, engine=engine, db=db)  # warm-up
    for i in range(args.runs):
        for kind in (("speedup", "plain") if i % 2 else ("plain", "speedup")):
            stage.add = with_estimate if kind == "speedup" else plain
            start = time.perf_counter()
            for engine in ("sglang", "llama.cpp", "mlx"):
                run_query(TARGET, engine=engine, db=db)
            without[kind].append(time.perf_counter() - start)
    stage.add = with_estimate
    a, b = statistics.median(without["speedup"]), statistics.median(without["plain"])
    print(f"run_query x3 engines, median of {args.runs}: with the estimate {a * 1e3:.1f} ms, without {b * 1e3:.1f} ms, "
          f"ratio {a / b:.3f}")
    return 0


ENTRY = ("import sys; from indexer.answer import estimate as stage; {patch}from indexer.cli import main; "
         "sys.argv = ['indexer', *sys.argv[1:]]; main()")


def cli(db: str, runs: int) -> int:
    """``indexer query`` as a process, with and without the estimate, alternating."""
    import subprocess

    argv = ["query", "--target", TARGET, "--db", db]
    variants = {"speedup": ENTRY.format(patch=""),
                "plain": ENTRY.format(patch="sys.path.insert(0, 'benchmarks'); from speedup_cost import plain; "
                                            "stage.add = plain; ")}
    times: dict[str, list[float]] = {"speedup": [], "plain": []}
    for _ in range(2):  # warm-up
        for code in variants.values():
            subprocess.run([sys.executable, "-c", code, *argv], check=True, capture_output=True)
    for i in range(runs):
        for kind in (("speedup", "plain") if i % 2 else ("plain", "speedup")):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", variants[kind], *argv], check=True, capture_output=True)
            times[kind].append(time.perf_counter() - start)
    a, b = statistics.median(times["speedup"]), statistics.median(times["plain"])
    spread = statistics.median(abs(t - b) for t in times["plain"]) / b
    print(f"indexer query as a process, median of {runs}: with the estimate {a * 1e3:.1f} ms, without "
          f"{b * 1e3:.1f} ms, ratio {a / b:.3f}; the runs' own spread {spread:.3f} "
          f"({'no measurable change' if abs(a / b - 1) < spread else 'a measurable change'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
