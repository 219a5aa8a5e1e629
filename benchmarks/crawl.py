"""Crawl benchmark: the crawler against hubsim with its real-Hub behaviours and quotas on.

A synthetic hub of N repos is built from the real corpus files (../shared/corpus/models as base repos,
their fine-tunes reusing the real tokenizers; small generated ones for the long tail), served by
``python -m indexer.hubsim`` in its own process with Xet headers, expand validation and fixed-window
quotas scaled down from the anonymous tier (default 20 API calls and 120 resolver calls per 5 s;
the Hub's are 500 / 3,000 per 300 s). Three crawls:

1. cold crawl of every repo;
2. 1% of the repos get a new commit (config.json edited), recrawl;
3. nothing changes, recrawl.

Printed, each next to its target:
* pacing efficiency = least time the quota allows for the calls made / wall time (target >= 0.9);
* 429 answers per bucket (target <= 1 per bucket per run);
* API calls per new repo beyond listing pages (target <= 1.0), per unchanged repo (target 0);
* resolver calls per new repo; ``/resolve`` requests per new blob (target <= 1.05: one GET, no HEAD);
* listing pages per scope on the unchanged recrawl (target 1: each scope stops at its high-water mark);
* share of gated repos fingerprinted without any download (from identical public copies);
* bytes on disk of the blob store / raw bytes of the distinct blobs (target <= 0.4), per blob and per
  repo, extrapolated to 500,000 repos;
* the first crawl of every text-generation repo re-estimated at the anonymous / free / PRO quotas from
  the cold crawl's calls per repo.

    python benchmarks/crawl.py [--repos 300] [--api-quota 20] [--resolver-quota 120] [--window 5]
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

ROOT = Path(__file__).resolve().parents[1]
CORPUS_MODELS = ROOT.parent / "shared" / "corpus" / "models"
EXTRAPOLATE_REPOS = 500_000


def _env(tmp: Path) -> None:
    os.environ.update(HF_HOME=str(tmp / "hf-home"), HF_HUB_DISABLE_TELEMETRY="1",
                      HF_HUB_DISABLE_PROGRESS_BARS="1", TOKENIZERS_PARALLELISM="false",
                      TRANSFORMERS_VERBOSITY="error")
    # HF_HUB_DISABLE_XET is not set here on purpose: the product sets it itself (indexer/__init__.py).
    for var in ("HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT", "INDEXER_TOKENS",
                "HF_HUB_DISABLE_XET"):
        os.environ.pop(var, None)


def _serve(hub_dir: Path, args):
    cmd = [sys.executable, "-m", "indexer.hubsim", str(hub_dir), "--auto-reload", "--page-size", str(args.page_size),
           "--api-quota", str(args.api_quota), "--resolver-quota", str(args.resolver_quota),
           "--window", str(args.window)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    endpoint = proc.stdout.readline().strip()
    if not endpoint.startswith("http://127.0.0.1:"):
        proc.kill()
        raise SystemExit(f"hubsim did not start: {endpoint!r}")
    return proc, endpoint


def _blob_bytes(db: Path, store: Path) -> tuple[int, int, int]:
    """(distinct blobs, their raw bytes, bytes the blob store takes on disk)."""
    con = sqlite3.connect(db)
    try:
        n, raw = con.execute("select count(*), coalesce(sum(size), 0) from blobs").fetchone()
    finally:
        con.close()
    disk = sum(p.stat().st_size for p in store.iterdir() if p.is_file()) if store.exists() else 0
    return n, raw, disk


def _ok(cond: bool) -> str:
    return "OK" if cond else "FAIL"


TEXT_GENERATION_REPOS = 300_000  # order of magnitude of pipeline_tag=text-generation on the Hub (README)
HUB_PAGE = 1000  # items per listing page on the Hub
TIERS = {"anonymous": (500, 3000), "free": (1000, 5000), "PRO": (2500, 12000)}  # per 300 s, HUB-API §0.1.4


def _estimate(s: dict) -> None:
    """Hours for a first crawl of every text-generation repo, bound by the slower bucket per tier."""
    touched = max(1, s["new"] + s["changed"])
    api_per_repo = (s["api_calls"] - s["list_calls"]) / touched
    res_per_repo = s["resolver_calls"] / touched
    n = TEXT_GENERATION_REPOS
    api = n * api_per_repo + n / HUB_PAGE
    res = n * res_per_repo
    print(f"\n== first crawl of {n:,} text-generation repos, from the cold crawl's {api_per_repo:.3f} API "
          f"and {res_per_repo:.3f} resolver calls per repo: {api:,.0f} API + {res:,.0f} resolver calls")
    for tier, (qa, qr) in TIERS.items():
        hours = max(api / qa, res / qr) * 300 / 3600
        bound = "api" if api / qa >= res / qr else "resolvers"
        print(f"  {tier:10} {qa:>6,} / {qr:>6,} per 5 min   {hours:6.1f} h   (bound by {bound})")


def _report(title: str, s: dict, args, db: Path, store: Path, cache: Path, new_blobs: int = 0) -> None:
    from indexer.hub.client import least_seconds

    touched = s["new"] + s["changed"]
    beyond_list = s["api_calls"] - s["list_calls"]
    least = max(least_seconds(s["api_calls"], args.api_quota, args.window),
                least_seconds(s["resolver_calls"], args.resolver_quota, args.window))
    eff = least / s["seconds"] if s["seconds"] else 0.0
    n_blobs, raw, disk = _blob_bytes(db, store)
    cache_files = sum(1 for p in cache.rglob("*") if p.is_file()) if cache.exists() else 0
    rows = [
        ("repos listed", s["listed"], ""),
        ("new / changed / unchanged", f"{s['new']} / {s['changed']} / {s['unchanged']}", ""),
        ("statuses", json.dumps(s["statuses"]), ""),
        ("API calls (listing pages)", f"{s['api_calls']} ({s['list_calls']})", ""),
        ("resolver calls", s["resolver_calls"], ""),
        ("quota learned (api, resolvers)",
         f"{s['quota']['api']['quota']}/{s['quota']['api']['window']:g}s, "
         f"{s['quota']['resolvers']['quota']}/{s['quota']['resolvers']['window']:g}s", ""),
        ("least time the quota allows", f"{least:.1f} s", ""),
        ("wall time", f"{s['seconds']:.1f} s", ""),
    ]
    if least >= 2 * args.window:
        rows.append(("pacing efficiency (least time / wall time)", f"{eff:.3f}", f"target >= 0.9   {_ok(eff >= 0.9)}"))
    else:
        rows.append(("pacing efficiency", "n/a", "(fewer calls than two windows)"))
    r429 = s["rate_limited"]
    rows.append(("429 answers (api / resolvers)", f"{r429['api']} / {r429['resolvers']}",
                 f"target <= 1 per bucket   {_ok(max(r429.values()) <= 1)}"))
    if touched:
        per_new = beyond_list / touched
        rows += [
            ("API calls per new/changed repo (beyond listing)", f"{per_new:.3f}",
             f"target <= 1.0   {_ok(per_new <= 1.0)}"),
            ("resolver calls per new/changed repo", f"{s['resolver_calls'] / touched:.3f}",
             "(one GET per never-seen blob)"),
        ]
    if new_blobs:
        per_blob = s["resolver_calls"] / new_blobs
        rows.append(("/resolve requests per new blob", f"{per_blob:.3f}", f"target <= 1.05   {_ok(per_blob <= 1.05)}"))
    gated_seen = s.get("from_copies", 0) + s["statuses"].get("gated", 0)
    if gated_seen:
        rows.append(("gated repos fingerprinted without download", f"{s['from_copies']} / {gated_seen} "
                     f"({s['from_copies'] / gated_seen:.0%})", "(every blob already held from public copies)"))
    scopes = s.get("scopes") or {}
    if scopes and not touched:
        pages = s["list_calls"] / len(scopes)
        rows.append(("listing pages per scope", f"{pages:.2f}", f"target 1   {_ok(pages <= 1.0)}"))
    if s["unchanged"] and not touched:
        per_unchanged = beyond_list / s["unchanged"]
        rows += [
            ("API calls per unchanged repo (beyond listing)", f"{per_unchanged:.3f}",
             f"target 0   {_ok(per_unchanged == 0)}"),
            ("resolver calls per unchanged repo", f"{s['resolver_calls'] / s['unchanged']:.3f}",
             f"target 0   {_ok(s['resolver_calls'] == 0)}"),
        ]
    ratio = disk / raw if raw else 0.0
    con = sqlite3.connect(db)
    n_repos = max(1, con.execute("select count(*) from repos").fetchone()[0])  # a recrawl lists only what changed
    con.close()
    rows += [
        ("distinct blobs in the catalog (raw bytes)", f"{n_blobs} ({raw})", ""),
        ("blob store on disk", f"{disk} bytes", ""),
        ("disk / raw bytes of the distinct blobs", f"{ratio:.3f}", f"target <= 0.4   {_ok(ratio <= 0.4)}"),
        ("bytes on disk per distinct blob", f"{disk / max(1, n_blobs):.0f}", ""),
        ("bytes on disk per repo", f"{disk / n_repos:.0f}", ""),
        (f"extrapolated to {EXTRAPOLATE_REPOS:,} repos", f"{disk / n_repos * EXTRAPOLATE_REPOS / 1e9:.2f} GB",
         f"(raw {raw / n_repos * EXTRAPOLATE_REPOS / 1e9:.2f} GB)"),
        ("files left in the client's download cache", cache_files, f"target 0   {_ok(cache_files == 0)}"),
        ("bytes downloaded", s["bytes_downloaded"], ""),
        ("file sets fingerprinted", s["file_sets_fingerprinted"], ""),
    ]
    print(f"\n== {title}")
    for name, value, target in rows:
        print(f"  {name:50} {value!s:>30}   {target}")
    if s["errors"]:
        print(f"  first errors: {s['errors'][:3]}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repos", type=int, default=300)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--page-size", type=int, default=1000, help="hubsim listing page size (the Hub's is 1000)")
    p.add_argument("--api-quota", type=int, default=20)
    p.add_argument("--resolver-quota", type=int, default=120)
    p.add_argument("--window", type=float, default=5.0)
    p.add_argument("--change", type=float, default=0.01, help="fraction of repos given a new commit")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--keep", help="work in this directory and keep it")
    args = p.parse_args(argv)
    if not CORPUS_MODELS.is_dir():
        raise SystemExit(f"error: {CORPUS_MODELS} is absent (the benchmark builds its hub from the real corpus)")

    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-crawl-"))
    tmp.mkdir(parents=True, exist_ok=True)
    _env(tmp)
    from indexer.catalog.db import upgrade
    from indexer.crawl.loop import Crawler, CrawlOptions
    from indexer.hubsim import generate_synthetic_hub
    from indexer.hubsim.repos import hub_date

    hub_dir, db = tmp / "hub", tmp / "catalog" / "catalog.db"
    store, cache = db.parent / "blobs", db.parent / "cache"
    if db.parent.exists():
        shutil.rmtree(db.parent)
    t = time.monotonic()
    bases = sorted(d for d in CORPUS_MODELS.iterdir() if d.is_dir())
    info = generate_synthetic_hub(hub_dir, args.repos, seed=args.seed, base_dirs=bases)
    print(f"synthetic hub: {info['n_repos']} repos on {len(bases)} real corpus bases, {info['n_distinct_blobs']} "
          f"distinct blobs ({info['distinct_bytes']} bytes) in {time.monotonic() - t:.1f} s; kinds {info['kinds']}")
    print(f"quotas: {args.api_quota} API / {args.resolver_quota} resolver calls per {args.window:g} s "
          "(announced in RateLimit-Policy, enforced with 429); Xet headers on LFS files; anonymous client")
    upgrade(str(db))
    proc, endpoint = _serve(hub_dir, args)
    try:
        def run(title):
            before = _blob_bytes(db, store)[0]
            opts = CrawlOptions(all=True, endpoint=endpoint, quiet=True, workers=args.workers, token=False)
            summary = Crawler(str(db), opts).run()
            _report(title, summary, args, db, store, cache, _blob_bytes(db, store)[0] - before)
            return summary

        _estimate(run(f"cold crawl of {args.repos} repos"))
        rng = random.Random(args.seed + 1)
        meta = json.loads((hub_dir / "hub.json").read_text())
        changed = rng.sample(sorted(meta), max(1, int(len(meta) * args.change)))
        for rid in changed:
            cfg = hub_dir / rid / "config.json"
            data = json.loads(cfg.read_text()) if cfg.exists() else {}
            data = data if isinstance(data, dict) else {}
            data["benchmark_edit"] = rng.random()
            tmpf = cfg.with_suffix(".tmp")
            tmpf.write_text(json.dumps(data))  # a new inode: hard-linked copies elsewhere keep their content
            os.replace(tmpf, cfg)
            meta[rid]["lastModified"] = hub_date(time.time())  # a commit moves the repo to the listing's top
        (hub_dir / "hub.json").write_text(json.dumps(meta))
        run(f"recrawl after {len(changed)} repos ({args.change:.0%}) got a new commit")
        run("recrawl with nothing changed")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
