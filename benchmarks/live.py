"""Live answers benchmark: requests and wall time of answers for repos the catalog lacks.

On the Hub imitation serving the demo hub (indexer/jobs/demo.py: 15 repos, three families, GGUF-only and gated repos),
each command a subprocess of the real CLI (process start included), requests read from the imitation's counters:

1. ``indexer check T D`` of two unseen repos on no catalog at all: API calls against the target (<= 4) and
   downloads against the blobs the two repos hold (one GET per unseen blob), then the same check again (0), and
   its time as a ratio against the route without live answers (``crawl --model T --model D``, then ``check``);
2. ``indexer query --target T --live`` on an empty catalog: requests (<= 60, the default budget) and wall time
   (<= 5 s), and as a ratio against ``indexer query`` of the same target from the catalog that answer left;
3. the scoped compute a live answer runs (catalog/compute_scoped.py) against the full ``indexer compute`` on a
   synthetic catalog of ``--repos`` repos (benchmarks/scale.py's generator), one repo added: the ratio, and
   whether both give the same ranked answer.

    python benchmarks/live.py [--repos 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# `python benchmarks/live.py` puts this directory first on sys.path, where benchmarks/gguf.py would shadow the
# gguf package the demo hub is written with.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

TARGET = "lumen-ai/Lumen-7B-Instruct"
DRAFT = "lumen-ai/Lumen-0.5B-Instruct"


def indexer_cmd() -> list[str]:
    return [str(Path(sys.executable).parent / "indexer")]


def line(name: str, value, unit: str, target: str = "", extra: str = "") -> None:
    print(f"{name:58} {value:>10} {unit:9} {target:14} {extra}")


def requests(counts) -> int:
    return counts["api"] + counts["resolve_get"] + counts["resolve_head"]


def run(cmd: list[str], env: dict, cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    proc = subprocess.run(indexer_cmd() + cmd, env=env, cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - t, proc


def hub_part(work: Path) -> None:
    from indexer.files import WANTED_FILES
    from indexer.hubsim import HubServer
    from indexer.jobs.demo import build_demo_hub

    hub_dir = work / "hub"
    build_demo_hub(hub_dir)
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE")}
    env.update(HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_PROGRESS_BARS="1",
               HF_HOME=str(work / "hf-home"), INDEXER_FAMILIES=str(hub_dir / "families.toml"),
               PYTHONPATH=str(HERE.parent))
    with HubServer(str(hub_dir)) as hub:
        env["HF_ENDPOINT"] = hub.endpoint
        blobs = {f.oid for rid in (TARGET, DRAFT) for n, f in hub.repos[rid].files.items() if n in WANTED_FILES}
        (work / "check").mkdir()
        hub.reset_counts()
        secs, proc = run(["check", "--db", "catalog.db", TARGET, DRAFT], env, work / "check")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        c = dict(hub.counts)
        print(f"live check of two unseen repos ({TARGET}, {DRAFT}), no catalog:")
        line("  API calls (model_info + paths-info, each repo)", c["api"], "calls", "<= 4")
        line("  downloads", c["resolve_get"] + c["resolve_head"], "GETs", f"== {len(blobs)}",
             "(one per unseen blob: the two repos hold that many distinct wanted blobs)")
        line("  wall time (process start included)", f"{secs:.2f}", "s")
        hub.reset_counts()
        secs2, proc = run(["check", "--db", "catalog.db", TARGET, DRAFT], env, work / "check")
        line("  asked again: requests", requests(hub.counts), "requests", "== 0", f"({secs2:.2f} s)")
        (work / "crawled").mkdir()  # the route before live answers: crawl the two repos (and compute), then check
        hub.reset_counts()
        c1, proc = run(["crawl", "--model", TARGET, "--model", DRAFT, "--db", "catalog.db", "--endpoint", hub.endpoint,
                        "--quiet"], env, work / "crawled")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        c2, proc = run(["check", "--db", "catalog.db", TARGET, DRAFT], env, work / "crawled")
        line("  ratio against `crawl --model T --model D` then `check`", f"{secs / (c1 + c2):.2f}", "x", "",
             f"({c1 + c2:.2f} s, {requests(hub.counts)} requests, measured in this run)")

        (work / "query").mkdir()
        hub.reset_counts()
        secs, proc = run(["query", "--db", "catalog.db", "--target", TARGET, "--live", "--json"], env, work / "query")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        out = json.loads(proc.stdout)
        c = dict(hub.counts)
        print(f"query --live {TARGET} on an empty catalog:")
        line("  requests (API calls + downloads)", requests(c), "requests", "<= 60",
             f"(api {c['api']}: {c['list']} listings, {c['model_info']} model_info, {c['paths_info']} paths-info; "
             f"{c['resolve_get']} GETs)")
        line("  wall time (process start included)", f"{secs:.2f}", "s", "<= 5")
        line("  drafts answered", len(out["drafts"]), "drafts", "",
             f"(fetched {len(out['live']['fetched'])} repos; skipped {out['live'].get('skipped')})")
        hub.reset_counts()
        base, proc = run(["query", "--db", "catalog.db", "--target", TARGET, "--json"], env, work / "query")
        line("  ratio against the same query answered from the catalog", f"{secs / base:.1f}", "x", "",
             f"({base:.2f} s, {requests(hub.counts)} requests)")
        (work / "query-crawled").mkdir()  # the same repos by the route before live answers: crawl, then query
        models = [a for rid in out["live"]["fetched"] for a in ("--model", rid)]
        c1, proc = run(["crawl", *models, "--db", "catalog.db", "--endpoint", hub.endpoint, "--quiet"], env,
                       work / "query-crawled")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        c2, proc = run(["query", "--db", "catalog.db", "--target", TARGET, "--json"], env, work / "query-crawled")
        same = json.loads(proc.stdout)["drafts"] == out["drafts"]
        line("  ratio against `crawl --model` of the repos it fetched, then `query`", f"{secs / (c1 + c2):.2f}", "x",
             "", f"({c1 + c2:.2f} s measured in this run; the same drafts: {same})")
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def scale_part(work: Path, n: int) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("scale_bench", HERE / "scale.py")
    scale = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scale)
    generate = scale.generate
    from indexer.answer.query import run_query
    from indexer.catalog.compute import compute
    from indexer.catalog.compute_scoped import compute_repos

    db = work / "scale.db"
    targets = generate(db, n)
    compute(str(db))
    con = sqlite3.connect(db)
    con.execute("INSERT INTO repos (repo_id, author, status, tokenizer_id, vocab_size, vocab_size_transformers, "
                "params, downloads, disabled, is_chat, family, base_models) VALUES ('Qwen/live-added-0.5B', 'Qwen', "
                "'ok', 1, 152064, 152064, 500000000, 123456789, 0, 1, 'qwen2.5', ?)", (json.dumps([targets[0]]),))
    con.commit()
    con.close()
    t = time.perf_counter()
    compute_repos(str(db), ["Qwen/live-added-0.5B"])
    scoped = time.perf_counter() - t
    live_answer = run_query(targets[0], db=str(db), limit=5)
    t = time.perf_counter()
    compute(str(db))
    full = time.perf_counter() - t
    full_answer = run_query(targets[0], db=str(db), limit=5)
    print(f"compute after one repo is added, on a synthetic catalog of {n} repos:")
    line("  scoped (catalog/compute_scoped.py)", f"{scoped:.3f}", "s")
    line("  full `indexer compute`", f"{full:.3f}", "s")
    line("  ratio full / scoped", f"{full / scoped:.0f}", "x", "",
         f"(same ranked answer for {targets[0]}: {live_answer == full_answer}; the new repo ranked first: "
         f"{live_answer['drafts'][0]['repo_id'] == 'Qwen/live-added-0.5B'})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repos", type=int, default=100_000, help="Repos of the synthetic catalog (0: skip that part).")
    ap.add_argument("--dir", help="Where to work (default: a temporary directory).")
    args = ap.parse_args()
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="indexer-live-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_DISABLE_XET", "1")
    try:
        hub_part(work)
        if args.repos:
            scale_part(work, args.repos)
    finally:
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
