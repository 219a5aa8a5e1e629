"""Query-path benchmark: ``indexer query`` and ``indexer check`` against a bare ``python -c pass``, as users install.

A query and a check of two catalog repos should each cost at most 4x Python's own start-up, measured as a
user installs the package. So the script builds a fresh venv as the README
does (``python3 -m venv --upgrade-deps``: the newest pip; ``--pip pip==23.2.1`` for an older one, whose console
script imports ``re`` before ours) with ``pip install .`` of the tree (no editable install: its import hook runs at
every Python start and slows the baseline as much as the command), cached per content of the tree under
``~/.cache/indexer-bench-venvs/<hash>`` (``$INDEXER_BENCH_VENVS``), and runs the venv's own ``indexer`` console
script, alternating with that venv's ``python -c pass`` in the same environment, so a noisy neighbour slows both
alike. It prints which kind of install and which console script it measured, then, per command:

* the median wall time, and its ratio to the median of ``python -c pass`` (the target; ``query --method all``,
  which answers for every engine, is reported without one); beside it the same ratio of CPU time (the child's
  user + system time), which a busy machine disturbs less;
* how many of our modules and how many modules in all the process loads, and whether click and SQLAlchemy are
  among them;
* with ``--base REV``: the median of that commit's tree too (its own venv), and whether both trees print the
  same answer (stdout, stderr and exit status; they must);
* with ``--importtime``: where the time above a bare Python goes (``python -X importtime``, the median of the
  runs per module, self time summed by group: our modules, the engines, click, sqlite3, json, the rest).

``--venv DIR`` measures an existing venv instead (e.g. the development one, to compare an editable install).

The catalog is ``indexer demo --no-serve``'s, built by the venv, unless ``--db`` names one (e.g. the
1,000,000-repo catalog of benchmarks/scale.py, with ``--target``/``--draft`` naming two of its repos).

    python benchmarks/query_path.py [--base f696405] [--runs 15] [--importtime]
    python benchmarks/query_path.py --db /tmp/scale/scale.db --target Qwen/Qwen2.5-7B-Instruct \\
        --draft meta-llama/Llama-3.1-8B
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET, DRAFT = "lumen-ai/Lumen-7B-Instruct", "lumen-ai/Lumen-0.5B-Instruct"
LIMITS = {"query": 4.0, "check": 4.0}  # x python -c pass
# Reported without a target: one answer per engine (seven rankings of the target's class) and every head list.
UNTARGETED = {"query --method all"}
# What `pip install .` builds the package from (pyproject.toml's readme is README.md).
PACKAGED = ("indexer", "pyproject.toml", "README.md")
VENVS = Path(os.environ.get("INDEXER_BENCH_VENVS") or Path.home() / ".cache" / "indexer-bench-venvs")
KEEP_VENVS = 6  # the newest venvs kept in the cache (each holds every dependency)

# Runs the console-script entry in-process, then reports what it loaded on stderr (one line, after the command's
# own output). ENTRY is "module:function", as in [project.scripts].
# A process that leaves by os._exit reports just before.
PROBE = """
import os, sys
module, _, func = os.environ["INDEXER_ENTRY"].partition(":")
sys.argv[0] = "indexer"
def report(code):
    ours = [m for m in sys.modules if m == "indexer" or m.startswith("indexer.")]
    sys.stderr.write("LOADED %d %d %d %d %s\\n" % (len(ours), len(sys.modules), "click" in sys.modules,
                                                  "sqlalchemy" in sys.modules, code))
    sys.stderr.flush()
exit_now = os._exit
os._exit = lambda code: (report(code), exit_now(code))
try:
    getattr(__import__(module, fromlist=[func]), func)()
except SystemExit as e:
    code = e.code
else:
    code = 0
report(code)
"""
# What kind of install a venv's `indexer` is: pip's direct_url.json (PEP 610) says "editable" for `pip install -e`.
KIND = """
import importlib.metadata, json, indexer
url = importlib.metadata.distribution("indexer").read_text("direct_url.json")
editable = bool(url) and json.loads(url).get("dir_info", {}).get("editable", False)
print(("editable install (pip install -e)" if editable else "pip install . (not editable)") + " of " + indexer.__file__)
"""


def packaged_files(tree: Path) -> list[Path]:
    """The files of ``tree`` that ``pip install .`` packages (caches and build leftovers excluded)."""
    files = []
    for name in PACKAGED:
        top = tree / name
        for path in sorted(top.rglob("*")) if top.is_dir() else [top]:
            if path.is_file() and "__pycache__" not in path.parts and not path.name.endswith((".pyc", ".egg-info")):
                files.append(path)
    return files


def tree_hash(tree: Path) -> str:
    """A hash of the packaged files' names and contents: the venv cache's key."""
    h = hashlib.sha256()
    for path in packaged_files(tree):
        h.update(str(path.relative_to(tree)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def user_venv(tree: Path, tmp: Path, pip_spec: str | None = None) -> tuple[Path, str]:
    """A venv as the README makes one (``python3 -m venv --upgrade-deps``: the newest pip, whose console scripts
    import no ``re``, pip 25.2+), or with ``pip_spec`` (``pip==23.2.1``: the pip of an older Python, whose
    scripts do), and ``pip install .`` of ``tree`` (a copy of its packaged files); cached by :func:`tree_hash` and
    the pip asked for.

    Built where it stays (a venv's scripts name its interpreter by path); ``.built`` marks it complete."""
    venv = VENVS / (tree_hash(tree) + "-" + hashlib.sha256((pip_spec or "newest pip").encode()).hexdigest()[:8])
    if (venv / ".built").exists():
        os.utime(venv)
        return venv, "cached"
    src = tmp / f"src-{venv.name}"
    for path in packaged_files(tree):
        (src / path.relative_to(tree)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, src / path.relative_to(tree))
    shutil.rmtree(venv, ignore_errors=True)
    VENVS.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--upgrade-deps", str(venv)], check=True, capture_output=True)
    if pip_spec:
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", pip_spec], check=True)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(src)], capture_output=True, text=True)
    if pip.returncode:
        shutil.rmtree(venv, ignore_errors=True)
        sys.exit(f"pip install . failed: {pip.stderr.strip()[-500:]}")
    (venv / ".built").touch()
    for old in sorted((p for p in VENVS.iterdir() if (p / ".built").exists()),
                      key=lambda p: p.stat().st_mtime, reverse=True)[KEEP_VENVS:]:
        shutil.rmtree(old, ignore_errors=True)
    return venv, "built now"


def script_kind(venv: Path) -> str:
    """Which pip wrote the console script, and whether the script imports ``re`` before our code (pip < 25.2)."""
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "--version"], capture_output=True, text=True)
    lines = (venv / "bin" / "indexer").read_text().splitlines()
    imports_re = any(line.strip() == "import re" for line in lines)
    return (f"console script by pip {(pip.stdout.split() or ['?', '?'])[1]}: "
            + ("imports re before indexer (pip < 25.2)" if imports_re else "imports only sys before indexer"))


def export(rev: str, into: Path) -> Path:
    """The base tree: ``git archive REV`` of the packaged files, unpacked."""
    archive = into / "base.tar"
    with open(archive, "wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", rev, *PACKAGED], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python 3.10.12+ / 3.11.4+
        tar.extractall(into / "base", **safe)
    return into / "base"


def env_for(venv: Path) -> dict:
    """The children's environment: nothing that changes where Python finds modules or their bytecode (the venv's
    own, compiled by pip); INDEXER_ENTRY is the venv's console script, ``module:function``, for PROBE."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE", "PYTHONHOME", "VIRTUAL_ENV")}
    ask = "import importlib.metadata as m; print(m.distribution('indexer').entry_points['indexer'].value)"
    env["INDEXER_ENTRY"] = subprocess.run([str(venv / "bin" / "python"), "-c", ask], env=env, capture_output=True,
                                          text=True, check=True).stdout.strip()
    return env


def timed(cmd: list[str], env: dict, cwd: Path) -> tuple[tuple[float, float], subprocess.CompletedProcess]:
    """Run ``cmd``: ((wall seconds, CPU seconds of the child), the finished process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime), proc


def run(venv: Path, env: dict, args: list[str], cwd: Path) -> tuple[tuple[float, float], str]:
    """One fresh process of the venv's console script: ((wall, CPU seconds), its answer with its exit status)."""
    seconds, proc = timed([str(venv / "bin" / "indexer"), *args], env, cwd)
    return seconds, f"{proc.stdout}{proc.stderr}[exit {proc.returncode}]"


def probe(venv: Path, env: dict, args: list[str], cwd: Path) -> str:
    """What the command loads (the PROBE line), run once in the venv, untimed."""
    proc = subprocess.run([str(venv / "bin" / "python"), "-c", PROBE, *args], env=env, cwd=cwd, capture_output=True,
                          text=True)
    loaded = [line for line in proc.stderr.splitlines() if line.startswith("LOADED ")]
    return loaded[-1] if loaded else "LOADED ? ? ? ? ?"


def bare(venv: Path, env: dict, cwd: Path) -> tuple[float, float]:
    """One ``python -c pass`` of the venv, in the same environment: (wall, CPU seconds)."""
    seconds, proc = timed([str(venv / "bin" / "python"), "-c", "pass"], env, cwd)
    proc.check_returncode()
    return seconds


def import_times(cmd: list[str], env: dict, cwd: Path) -> list[tuple[str, int, int]]:
    """``-X importtime``'s rows of one run: (module, self us, indentation level), in its order (children first)."""
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, name = line.split(":", 1)[1].split("|")
        rows.append((name.strip(), int(self_us), (len(name) - len(name.lstrip())) // 2))
    return rows


# Groups of the breakdown: a module counts in the group of its nearest importer named here (itself included),
# so what sqlite3 pulls in (datetime, ...) is sqlite3's share; our modules are ours unless they are engines.
# re (with enum, functools, collections) is the console script's own first import (pip's wrapper: re.sub on argv[0]).
GROUPS = ("re", "click", "sqlite3", "_sqlite3", "json", "_json", "pathlib", "hashlib", "dataclasses", "inspect",
          "orjson")


def group_of(chain: list[str]) -> str:
    """The group of the last module of ``chain`` (its importers first)."""
    for name in reversed(chain):
        top = name.split(".")[0]
        if top in GROUPS:
            return top.lstrip("_")
    name = chain[-1]
    if name.startswith("indexer.engines"):
        return "ours: engines"
    if name == "indexer" or name.startswith("indexer."):
        return "ours: the rest"
    return "other"


def breakdown(venv: Path, env: dict, args: list[str], cwd: Path, runs: int) -> list[str]:
    """Where the time above ``python -c pass`` goes, by group, medians of ``runs`` runs of ``-X importtime``."""
    python = str(venv / "bin" / "python")
    base = {name for name, _, _ in import_times([python, "-X", "importtime", "-c", "pass"], env, cwd)}
    per_module: dict[str, list[int]] = {}
    groups: dict[str, str] = {}
    for _ in range(runs):
        stack: list[tuple[str, int]] = []
        rows = import_times([python, "-X", "importtime", str(venv / "bin" / "indexer"), *args], env, cwd)
        # importtime prints a module after the modules it imported: walk it backwards to know each one's importers.
        for name, self_us, level in reversed(rows):
            while stack and stack[-1][1] >= level:
                stack.pop()
            stack.append((name, level))
            if name in base:
                continue
            per_module.setdefault(name, []).append(self_us)
            groups[name] = group_of([n for n, _ in stack])
    totals: dict[str, float] = {}
    others: dict[str, float] = {}
    for name, times in per_module.items():
        med = statistics.median(times + [0] * (runs - len(times)))
        totals[groups[name]] = totals.get(groups[name], 0) + med
        if groups[name] == "other":
            others[name.split(".")[0]] = others.get(name.split(".")[0], 0) + med
    total = sum(totals.values())
    lines = [f"import time above python -c pass (median self time of {runs} runs of -X importtime): "
             f"{total / 1000:.1f} ms in {len(per_module)} modules"]
    for name, us in sorted(totals.items(), key=lambda kv: -kv[1]):
        count = sum(1 for m in per_module if groups[m] == name)
        lines.append(f"    {name:<16} {us / 1000:6.1f} ms  {count:3d} modules")
    top = ", ".join(f"{n} {us / 1000:.1f}" for n, us in sorted(others.items(), key=lambda kv: -kv[1])[:8])
    lines.append(f"    (other, by package, ms: {top})")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", help="Also run this commit's tree and compare the answers (any git revision).")
    ap.add_argument("--runs", type=int, default=15, help="Runs per tree and command (median reported).")
    ap.add_argument("--db", help="An existing computed catalog (default: build the demo catalog).")
    ap.add_argument("--target", default=TARGET, help=f"The query's target and check's TARGET (default {TARGET}).")
    ap.add_argument("--draft", default=DRAFT, help=f"check's DRAFT (default {DRAFT}).")
    ap.add_argument("--venv", help="Measure this existing venv instead of a fresh `pip install .` of the tree.")
    ap.add_argument("--pip", metavar="SPEC",
                    help="Install with this pip (e.g. pip==23.2.1, Python 3.11's own, whose console script imports "
                         "re first) instead of the newest, as the README's `python3 -m venv --upgrade-deps` gets.")
    ap.add_argument("--importtime", action="store_true",
                    help="Also print where the time above python -c pass goes (-X importtime, by group).")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="indexer-query-path-") as tmp:
        tmp = Path(tmp)
        if args.venv:
            venvs = {"this": (Path(args.venv).absolute(), "given")}
        else:
            venvs = {"this": user_venv(ROOT, tmp, args.pip)}
        if args.base:
            venvs["base"] = user_venv(export(args.base, tmp), tmp, args.pip)
        envs = {t: env_for(venv) for t, (venv, _) in venvs.items()}
        for t, (venv, how) in venvs.items():
            kind = subprocess.run([str(venv / "bin" / "python"), "-c", KIND], env=envs[t], cwd=tmp,
                                  capture_output=True, text=True)
            print(f"{t}: venv {venv} ({how}): {kind.stdout.strip() or kind.stderr.strip()[-200:]}")
            print(f"{t}: {script_kind(venv)}")
        this_venv = venvs["this"][0]
        db = args.db
        if db is None:
            demo = subprocess.run([str(this_venv / "bin" / "indexer"), "demo", "--no-serve"], cwd=tmp,
                                  env=envs["this"], capture_output=True, text=True)
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
        for t, (venv, _) in venvs.items():  # warm the OS's file cache: two runs of each
            for cmd in commands.values():
                for _ in range(2):
                    run(venv, envs[t], cmd, tmp)
        print(f"console script: this tree {envs['this']['INDEXER_ENTRY']}"
              + (f", base {envs['base']['INDEXER_ENTRY']}" if args.base else "")
              + f"; {args.runs} alternating runs each, medians; catalog {db}")
        ok, same_everywhere = True, True
        for name, cmd in commands.items():
            times: dict[str, list[tuple[float, float]]] = {t: [] for t in (*venvs, "pass")}
            answers = {}
            for _ in range(args.runs):  # alternate, so a noisy neighbour slows all alike
                times["pass"].append(bare(this_venv, envs["this"], tmp))
                for t, (venv, _) in venvs.items():
                    seconds, answers[t] = run(venv, envs[t], cmd, tmp)
                    times[t].append(seconds)
            med = {t: statistics.median(w for w, _ in v) for t, v in times.items()}
            cpu = {t: statistics.median(c for _, c in v) for t, v in times.items()}
            ratio = med["this"] / med["pass"]
            line = (f"{name:<20} python -c pass {med['pass'] * 1000:5.1f} ms  this {med['this'] * 1000:6.1f} ms  "
                    f"ratio {ratio:4.2f} (CPU {cpu['this'] / cpu['pass']:4.2f}) ")
            if name in UNTARGETED:
                line += "(no target: every engine's answer)"
            else:
                limit = LIMITS[name.split()[0]]
                ok &= ratio <= limit
                line += f"(target <= {limit:g}: {'met' if ratio <= limit else 'MISSED'})"
            if args.base:
                same = answers["base"] == answers["this"]
                same_everywhere &= same
                line += (f"  base {med['base'] * 1000:6.1f} ms ({med['base'] / med['pass']:4.2f}x, "
                         f"CPU {cpu['base'] / cpu['pass']:4.2f}x)  "
                         f"{'same answer' if same else 'ANSWERS DIFFER'}")
            print(line, flush=True)
            for t, (venv, _) in venvs.items():
                ours, total, click, sa, code = probe(venv, envs[t], cmd, tmp).split()[1:6]
                print(f"{'':<20} {t:<4} loads {ours} of our modules, {total} in all, click "
                      f"{'yes' if click == '1' else 'no'}, SQLAlchemy {'yes' if sa == '1' else 'no'}; exit {code}")
            if args.importtime and name not in UNTARGETED:
                for t, (venv, _) in venvs.items():
                    for text in breakdown(venv, envs[t], cmd, tmp, args.runs):
                        print(f"{'':<20} {t:<4} {text}")
        ok &= same_everywhere
        print(("TARGETS MET" if ok else "TARGETS MISSED")
              + (f"; answers {'identical' if same_everywhere else 'DIFFER'} between the trees" if args.base else ""))
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
