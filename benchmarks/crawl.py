"""Crawl benchmark (DESIGN §5): a synthetic hub of N repos served by hubsim on 127.0.0.1.

1. cold crawl of every repo;
2. 1% of the repos get a new commit (config.json edited) and the hub is recrawled;
3. nothing changes and the hub is recrawled once more.

Each figure is printed next to its target: ≤ 2 API calls per new or changed repo, 0 per unchanged repo
beyond listing pages, bytes downloaded ≤ 1.1 × bytes of the distinct blobs recorded in the catalog.
The hub runs in a separate process (``python -m indexer.hubsim --auto-reload``) so the crawler is measured
alone; the rate limiter is given budgets large enough not to pace a local benchmark.

    python benchmarks/crawl.py [--repos 5000] [--workers 8] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _env(tmp: Path) -> None:
    os.environ.update(HF_HOME=str(tmp / "hf-home"), HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_XET="1",
                      HF_HUB_DISABLE_PROGRESS_BARS="1", TOKENIZERS_PARALLELISM="false",
                      TRANSFORMERS_VERBOSITY="error")
    for var in ("HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT", "INDEXER_TOKENS"):
        os.environ.pop(var, None)


def _serve(hub_dir: Path, page_size: int):
    proc = subprocess.Popen(
        [sys.executable, "-m", "indexer.hubsim", str(hub_dir), "--auto-reload", "--page-size", str(page_size)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    endpoint = proc.stdout.readline().strip()
    if not endpoint.startswith("http://127.0.0.1:"):
        proc.kill()
        raise SystemExit(f"hubsim did not start: {endpoint!r}")
    return proc, endpoint


def _distinct_blob_bytes(db: Path) -> tuple[int, int]:
    con = sqlite3.connect(db)
    try:
        return con.execute("select count(*), coalesce(sum(size), 0) from blobs").fetchone()
    finally:
        con.close()


def _report(title: str, s: dict, db: Path, prev_blob_bytes: int = 0) -> dict:
    n_blobs, blob_bytes = _distinct_blob_bytes(db)
    touched = s["new"] + s["changed"]
    beyond_list = s["api_calls"] - s["list_calls"]
    new_bytes = blob_bytes - prev_blob_bytes
    ratio = s["bytes_downloaded"] / new_bytes if new_bytes else (0.0 if not s["bytes_downloaded"] else float("inf"))
    rows = [
        ("repos listed", s["listed"], ""),
        ("new / changed / unchanged", f"{s['new']} / {s['changed']} / {s['unchanged']}", ""),
        ("statuses", json.dumps(s["statuses"]), ""),
        ("listing pages (API calls)", s["list_calls"], ""),
    ]
    if touched:
        api_per = beyond_list / touched
        api_all = s["api_calls"] / touched
        rows += [
            ("API calls per new/changed repo (beyond listing)", f"{api_per:.3f}",
             f"target <= 2   {'OK' if api_per <= 2 else 'FAIL'}"),
            ("API calls per new/changed repo (listing included)", f"{api_all:.3f}",
             f"target <= 2   {'OK' if api_all <= 2 else 'FAIL'}"),
            ("resolver calls per new/changed repo", f"{s['resolver_calls'] / touched:.3f}",
             "(one HEAD per never-seen blob)"),
        ]
    if s["unchanged"] and not touched:
        per_unchanged = beyond_list / s["unchanged"]
        rows.append(("API calls per unchanged repo (beyond listing)", f"{per_unchanged:.3f}",
                     f"target 0   {'OK' if per_unchanged == 0 else 'FAIL'}"))
        rows.append(("resolver calls per unchanged repo", f"{s['resolver_calls'] / s['unchanged']:.3f}",
                     f"target 0   {'OK' if s['resolver_calls'] == 0 else 'FAIL'}"))
    rows += [
        ("bytes downloaded", s["bytes_downloaded"], ""),
        ("bytes of distinct blobs new in this run", f"{new_bytes} ({n_blobs} blobs in the catalog)", ""),
        ("bytes downloaded / bytes of distinct blobs", f"{ratio:.4f}",
         f"target <= 1.1   {'OK' if ratio <= 1.1 else 'FAIL'}"),
        ("file sets fingerprinted", s["file_sets_fingerprinted"], "(once per distinct tokenizer file set)"),
        ("wall time", f"{s['seconds']:.2f} s", ""),
        ("repos/s", f"{s['listed'] / s['seconds']:.1f}", ""),
    ]
    print(f"\n== {title}")
    for name, value, target in rows:
        print(f"  {name:52} {value!s:>28}   {target}")
    if s["errors"]:
        print(f"  first errors: {s['errors'][:3]}")
    return {"blob_bytes": blob_bytes}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repos", type=int, default=5000)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--page-size", type=int, default=1000, help="hubsim listing page size (the Hub's is 1000)")
    p.add_argument("--change", type=float, default=0.01, help="fraction of repos given a new commit")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--keep", help="work in this directory and keep it")
    args = p.parse_args(argv)

    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-crawl-"))
    tmp.mkdir(parents=True, exist_ok=True)
    _env(tmp)
    from indexer.crawl import Crawler, CrawlOptions
    from indexer.db import upgrade
    from indexer.hubsim import generate_synthetic_hub

    hub_dir, db = tmp / "hub", tmp / "catalog" / "catalog.db"
    if db.parent.exists():
        shutil.rmtree(db.parent)
    t = time.monotonic()
    info = generate_synthetic_hub(hub_dir, args.repos, seed=args.seed)
    print(f"synthetic hub: {info['n_repos']} repos, {info['n_distinct_blobs']} distinct blobs "
          f"({info['distinct_bytes']} bytes) in {time.monotonic() - t:.1f} s; kinds {info['kinds']}")
    upgrade(str(db))
    proc, endpoint = _serve(hub_dir, args.page_size)
    try:
        def run():
            opts = CrawlOptions(all=True, endpoint=endpoint, quiet=True, workers=args.workers,
                                api_budget=10**9, resolver_budget=10**9)
            return Crawler(str(db), opts).run()

        s1 = run()
        r1 = _report(f"cold crawl of {args.repos} repos", s1, db)

        rng = random.Random(args.seed + 1)
        meta = json.loads((hub_dir / "hub.json").read_text())
        changed = rng.sample(sorted(meta), max(1, int(len(meta) * args.change)))
        for rid in changed:
            cfg = hub_dir / rid / "config.json"
            data = json.loads(cfg.read_text()) if cfg.exists() else {}
            if not isinstance(data, dict):
                data = {}
            data["benchmark_edit"] = rng.random()
            tmpf = cfg.with_suffix(".tmp")
            tmpf.write_text(json.dumps(data))  # a new inode: hard-linked copies elsewhere keep their content
            os.replace(tmpf, cfg)
        s2 = run()
        r2 = _report(f"recrawl after {len(changed)} repos ({args.change:.0%}) got a new commit", s2, db,
                     r1["blob_bytes"])
        s3 = run()
        _report("recrawl with nothing changed", s3, db, r2["blob_bytes"])
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
