"""Query-path benchmark: this tree against an earlier commit, on the same demo catalog, in the same run.

Issue 15 asks that the interactive path stays as light as it was. For each command (``query``,
``query --method all``, ``check``) the two trees are run alternately, a fresh process each time, from one
venv (``PYTHONPATH`` picks the tree), and the script prints:

* the median wall time of each tree and their ratio (this tree / the base; target <= 1.05);
* how many of our modules and how many modules in all each one loads, and whether SQLAlchemy is among them;
* whether the two trees print the same answer (they must).

The base tree is ``git archive REV`` into a temporary directory; the catalog is ``indexer demo --no-serve``'s,
built once by this tree (the schema is the same at both commits when no migration was added between them).

    python benchmarks/query_path.py --base f696405 [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET, BIG, SMALL = "lumen-ai/Lumen-70B-Instruct", "lumen-ai/Lumen-7B-Instruct", "lumen-ai/Lumen-0.5B-Instruct"

# Runs the CLI in-process, then reports what it loaded on stderr (one line, after the command's own output).
PROBE = """
import sys
from indexer.cli import cli
try:
    cli(args=sys.argv[1:], prog_name="indexer")
except SystemExit:
    pass
ours = [m for m in sys.modules if m == "indexer" or m.startswith("indexer.")]
sys.stderr.write("LOADED %d %d %d\\n" % (len(ours), len(sys.modules), "sqlalchemy" in sys.modules))
"""


def export(rev: str, into: Path) -> Path:
    """The base tree: ``git archive REV`` unpacked (only the package is needed)."""
    archive = into / "base.tar"
    with open(archive, "wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", rev, "indexer"], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python 3.10.12+ / 3.11.4+
        tar.extractall(into / "base", **safe)
    return into / "base"


def run(tree: Path, args: list[str], cwd: Path) -> tuple[float, str, str]:
    """One fresh process of the CLI on ``tree``: (seconds, its answer, what it loaded)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    loaded = [line for line in proc.stderr.splitlines() if line.startswith("LOADED ")]
    answer = proc.stdout + "".join(line for line in proc.stderr.splitlines(True) if not line.startswith("LOADED "))
    return seconds, answer, loaded[-1] if loaded else "LOADED ? ? ?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="The commit to compare with (any git revision).")
    ap.add_argument("--runs", type=int, default=15, help="Runs per tree and command (median reported).")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="indexer-query-path-") as tmp:
        tmp = Path(tmp)
        base = export(args.base, tmp)
        demo = subprocess.run([sys.executable, "-c", "from indexer.cli import cli; cli()", "demo", "--no-serve"],
                              cwd=tmp, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True)
        if demo.returncode != 0:
            print(f"the demo catalog could not be built: {demo.stderr.strip()[-300:]}", file=sys.stderr)
            return 1
        db = str(tmp / "data" / "demo.db")
        commands = {
            "query": ["query", "--target", TARGET, "--db", db],
            "query --method all": ["query", "--target", TARGET, "--method", "all", "--db", db],
            "check": ["check", BIG, SMALL, "--db", db],
        }
        trees = {"base": base, "this": ROOT}
        worst, same_everywhere = 0.0, True
        for name, cmd in commands.items():
            times: dict[str, list[float]] = {t: [] for t in trees}
            answers, loaded = {}, {}
            for _ in range(args.runs):
                for t, tree in trees.items():  # alternate, so a noisy neighbour slows both alike
                    seconds, answers[t], loaded[t] = run(tree, cmd, tmp)
                    times[t].append(seconds)
            med = {t: statistics.median(v) for t, v in times.items()}
            ratio = med["this"] / med["base"]
            worst = max(worst, ratio)
            same = answers["base"] == answers["this"]
            same_everywhere &= same
            print(f"{name:<20} base {med['base'] * 1000:6.0f} ms  this {med['this'] * 1000:6.0f} ms  "
                  f"ratio {ratio:.3f}  {'same answer' if same else 'ANSWERS DIFFER'}")
            for t in trees:
                ours, total, sa = loaded[t].split()[1:]
                print(f"{'':<20} {t:<4} loads {ours} of our modules, {total} in all, SQLAlchemy "
                      f"{'yes' if sa == '1' else 'no'}")
        ok = worst <= 1.05 and same_everywhere
        print(f"worst ratio {worst:.3f} (target <= 1.05); answers {'identical' if same_everywhere else 'DIFFER'}: "
              f"{'TARGET MET' if ok else 'TARGET MISSED'}")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
