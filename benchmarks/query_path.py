"""Query-path benchmark: ``indexer query`` and ``indexer check`` against a bare ``python -c pass``, same run.

Issue 24 asks that a query costs at most 3x Python's own start-up and a check of two catalog repos at most 4x.
Each command runs as a fresh process of the tree's console-script entry (``[project.scripts] indexer`` of its
pyproject.toml), alternating with ``python -c pass`` from the same venv and environment, so a noisy neighbour
slows both alike. The script prints, per command:

* the median wall time, and its ratio to the median of ``python -c pass`` (the target; ``query --method all``,
  which answers for every engine, is reported without one);
* how many of our modules and how many modules in all the process loads, and whether SQLAlchemy is among them;
* with ``--base REV``: the median of that commit's tree too, and whether both trees print the same answer
  (stdout, stderr and exit status; they must).

Bytecode: an installed package has its modules compiled, so the children run with a bytecode cache in a
temporary directory (``PYTHONPYCACHEPREFIX``; ``PYTHONDONTWRITEBYTECODE`` is dropped), warmed by one run of
each command. ``--no-bytecode`` keeps the environment as it is (every run compiles what it imports).

The catalog is ``indexer demo --no-serve``'s, built once by this tree, unless ``--db`` names one (e.g. the
1,000,000-repo catalog of benchmarks/scale.py, with ``--target``/``--draft`` naming two of its repos).

    python benchmarks/query_path.py [--base f696405] [--runs 15]
    python benchmarks/query_path.py --db /tmp/scale/scale.db --target Qwen/Qwen2.5-7B-Instruct \\
        --draft meta-llama/Llama-3.1-8B
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

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
TARGET, DRAFT = "lumen-ai/Lumen-7B-Instruct", "lumen-ai/Lumen-0.5B-Instruct"
LIMITS = {"query": 3.0, "check": 4.0}  # issue 24: x python -c pass
# Reported without a target: one answer per engine (seven rankings of the target's class) and every head list.
UNTARGETED = {"query --method all"}

# Runs the console-script entry in-process, then reports what it loaded on stderr (one line, after the command's
# own output). ENTRY is "module:function", as in [project.scripts].
PROBE = """
import os, sys
module, _, func = os.environ["INDEXER_ENTRY"].partition(":")
sys.argv[0] = "indexer"
try:
    getattr(__import__(module, fromlist=[func]), func)()
except SystemExit as e:
    code = e.code
else:
    code = 0
ours = [m for m in sys.modules if m == "indexer" or m.startswith("indexer.")]
sys.stderr.write("LOADED %d %d %d %s\\n" % (len(ours), len(sys.modules), "sqlalchemy" in sys.modules, code))
"""


def export(rev: str, into: Path) -> Path:
    """The base tree: ``git archive REV`` unpacked (the package and its pyproject.toml)."""
    archive = into / "base.tar"
    with open(archive, "wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", rev, "indexer", "pyproject.toml"], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python 3.10.12+ / 3.11.4+
        tar.extractall(into / "base", **safe)
    return into / "base"


def entry(tree: Path) -> str:
    """The tree's console script, ``module:function``."""
    return tomllib.loads((tree / "pyproject.toml").read_text())["project"]["scripts"]["indexer"]


def env_for(tree: Path, cache: Path | None) -> dict:
    """The children's environment: the tree first on the path; a bytecode cache unless ``cache`` is None."""
    env = dict(os.environ, PYTHONPATH=str(tree), INDEXER_ENTRY=entry(tree))
    if cache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def run(env: dict, args: list[str], cwd: Path) -> tuple[float, str, str]:
    """One fresh process of the CLI: (seconds, its answer with its exit status, what it loaded)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    lines = proc.stderr.splitlines(True)
    loaded = [line for line in lines if line.startswith("LOADED ")]
    answer = proc.stdout + "".join(line for line in lines if not line.startswith("LOADED "))
    status = loaded[-1].split()[-1] if loaded else "?"
    return seconds, f"{answer}[exit {status}]", loaded[-1] if loaded else "LOADED ? ? ? ?"


def bare(env: dict, cwd: Path) -> float:
    """One ``python -c pass`` in the same environment."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, cwd=cwd, check=True)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", help="Also run this commit's tree and compare the answers (any git revision).")
    ap.add_argument("--runs", type=int, default=15, help="Runs per tree and command (median reported).")
    ap.add_argument("--db", help="An existing computed catalog (default: build the demo catalog).")
    ap.add_argument("--target", default=TARGET, help=f"The query's target and check's TARGET (default {TARGET}).")
    ap.add_argument("--draft", default=DRAFT, help=f"check's DRAFT (default {DRAFT}).")
    ap.add_argument("--no-bytecode", action="store_true", help="No bytecode cache: every run compiles.")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="indexer-query-path-") as tmp:
        tmp = Path(tmp)
        cache = None if args.no_bytecode else tmp / "pycache"
        db = args.db
        if db is None:
            demo = subprocess.run([sys.executable, "-c", "from indexer.cli import cli; cli()", "demo", "--no-serve"],
                                  cwd=tmp, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                                  text=True)
            if demo.returncode != 0:
                print(f"the demo catalog could not be built: {demo.stderr.strip()[-300:]}", file=sys.stderr)
                return 1
            db = str(tmp / "data" / "demo.db")
        commands = {
            "query": ["query", "--target", args.target, "--db", db],
            "query --json": ["query", "--target", args.target, "--json", "--db", db],
            "query --method all": ["query", "--target", args.target, "--method", "all", "--db", db],
            "check": ["check", args.target, args.draft, "--db", db],
            "check --json": ["check", args.target, args.draft, "--json", "--db", db],
        }
        trees = {"this": env_for(ROOT, cache)}
        if args.base:
            trees["base"] = env_for(export(args.base, tmp), cache)
        for env in trees.values():  # warm the bytecode cache (and the OS's file cache)
            for cmd in commands.values():
                run(env, cmd, tmp)
        print(f"entry: this tree {trees['this']['INDEXER_ENTRY']}"
              + (f", base {trees['base']['INDEXER_ENTRY']}" if args.base else "")
              + f"; bytecode {'not cached' if cache is None else 'cached'}; {args.runs} runs each; catalog {db}")
        ok, same_everywhere = True, True
        for name, cmd in commands.items():
            times: dict[str, list[float]] = {t: [] for t in (*trees, "pass")}
            answers, loaded = {}, {}
            for _ in range(args.runs):  # alternate, so a noisy neighbour slows all alike
                times["pass"].append(bare(trees["this"], tmp))
                for t, env in trees.items():
                    seconds, answers[t], loaded[t] = run(env, cmd, tmp)
                    times[t].append(seconds)
            med = {t: statistics.median(v) for t, v in times.items()}
            ratio = med["this"] / med["pass"]
            line = (f"{name:<20} python -c pass {med['pass'] * 1000:5.1f} ms  this {med['this'] * 1000:6.1f} ms  "
                    f"ratio {ratio:4.2f} ")
            if name in UNTARGETED:
                line += "(no target: every engine's answer)"
            else:
                limit = LIMITS[name.split()[0]]
                ok &= ratio <= limit
                line += f"(target <= {limit:g}: {'met' if ratio <= limit else 'MISSED'})"
            if args.base:
                same = answers["base"] == answers["this"]
                same_everywhere &= same
                line += (f"  base {med['base'] * 1000:6.1f} ms ({med['base'] / med['pass']:4.2f}x)  "
                         f"{'same answer' if same else 'ANSWERS DIFFER'}")
            print(line)
            for t in trees:
                ours, total, sa = loaded[t].split()[1:4]
                print(f"{'':<20} {t:<4} loads {ours} of our modules, {total} in all, SQLAlchemy "
                      f"{'yes' if sa == '1' else 'no'}; {answers[t].rsplit('[', 1)[-1].rstrip(']')}")
        ok &= same_everywhere
        print(("TARGETS MET" if ok else "TARGETS MISSED")
              + (f"; answers {'identical' if same_everywhere else 'DIFFER'} between the trees" if args.base else ""))
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
