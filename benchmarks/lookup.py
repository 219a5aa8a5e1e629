"""Lookup benchmark: `indexer query --target` typed as a person types it, on a synthetic catalog.

Builds the 1,000,000-repo catalog of benchmarks/scale.py (or reuses one given with --db, already
computed), then times `indexer query` as a subprocess (wall time including process start, median of
--queries calls) for the exact id, the id in other letter case, a Hub URL, a bare name, and a
misspelling (which fails with "did you mean"). Prints each against the limit (0.1 s) and as a ratio
to the exact-id query and to `python -c pass`, all measured in this run.

    python benchmarks/lookup.py --repos 1000000
    python benchmarks/lookup.py --db /tmp/scale.db    # a catalog scale.py (or this script) generated
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale  # noqa: E402

from indexer.answer.lookup import RepoNotFound, find_repo_id  # noqa: E402

LIMIT_S = 0.1
TARGET = "Qwen/Qwen2.5-7B-Instruct"
CASES = [
    ("exact id", TARGET, 0),
    ("other case", TARGET.lower(), 0),
    ("Hub URL", f"https://huggingface.co/{TARGET}/tree/main", 0),
    ("bare name", TARGET.split("/")[1], None),  # 0, or 3 when several orgs have that name
    ("misspelt (did you mean)", "Qwen/Qwen2.5-7B-Instrct", 3),
]


def median_wall(cmd: list[str], n: int, env: dict, code: int | None) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(n):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        times.append(time.perf_counter() - t0)
        if code is not None and p.returncode != code:
            sys.exit(f"{cmd} exited {p.returncode}, expected {code}: {p.stderr}")
        out = (p.stdout or p.stderr).splitlines()[0] if (p.stdout or p.stderr) else ""
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repos", type=int, default=1_000_000)
    ap.add_argument("--db", help="A computed catalog from scale.generate (skips generation).")
    ap.add_argument("--queries", type=int, default=7)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="indexer-lookup-"))
    env = dict(os.environ, INDEXER_TOKENS=str(work / "tokens"))
    db = Path(args.db) if args.db else work / "scale.db"
    if not args.db:
        scale.generate(db, args.repos)
        subprocess.run([*scale.indexer_cmd(), "compute", "--db", str(db)], check=True, env=env,
                       capture_output=True)
    base, _ = median_wall([sys.executable, "-c", "pass"], args.queries, env, 0)
    print(f"baseline `python -c pass`: {base * 1000:.1f} ms (median of {args.queries})")
    ok, exact = True, None
    for label, typed, code in CASES:
        wall, first = median_wall([*scale.indexer_cmd(), "query", "--target", typed, "--db", str(db), "--limit", "5"],
                                  args.queries, env, code)
        exact = exact or wall
        passed = wall <= LIMIT_S
        ok &= passed
        print(f"query {label:24} {wall:7.3f} s  limit {LIMIT_S} s: {'PASS' if passed else 'FAIL'}  "
              f"({wall / exact:.2f}x exact id, {wall / base:.1f}x python startup)  {first[:90]}")
    print(f"\nin-process lookup alone (indexer.answer.lookup.find_repo_id, median of {args.queries}):")
    con = sqlite3.connect(db)
    rows = lambda sql, params: con.execute(sql, params).fetchall()  # noqa: E731
    for label, typed, _ in CASES:
        times = []
        for _ in range(args.queries):
            t0 = time.perf_counter()
            try:
                find_repo_id(rows, typed)
            except RepoNotFound:
                pass
            times.append(time.perf_counter() - t0)
        print(f"lookup {label:24} {statistics.median(times) * 1000:7.2f} ms")
    con.close()
    print("ALL WITHIN LIMIT" if ok else "SOME OVER LIMIT")


if __name__ == "__main__":
    main()
