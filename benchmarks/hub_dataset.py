"""Hub dataset benchmark: the published snapshot's size, a pull on the imitation, an unchanged pull.

On scale catalogs (``benchmarks/scale.py``'s generator, then ``compute``) of two sizes it measures:

- the snapshot's size (compacted ``catalog.sqlite``, the Parquet tables, and the whole commit) per 1,000 repos,
  and extrapolates it to 300,000 and 2,000,000 repos from the marginal size between the two catalogs;
- the wall time of ``indexer pull`` of the larger snapshot from the Hub imitation (download through
  huggingface_hub, sha256, integrity check, atomic swap) against copying the same bytes locally
  (``shutil.copyfile`` + fsync), median of alternating runs, as a ratio;
- an unchanged pull: its requests (target <= 2) and the snapshot bytes sent (target 0).

The scale catalogs have no token store (their tokenizers are synthetic), so ``tokens.tar`` is measured on the
demo catalog only and reported per distinct vocabulary.

    python benchmarks/hub_dataset.py --repos 20000
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

from scale import generate  # noqa: E402

from indexer.catalog.compute import compute  # noqa: E402
from indexer.hubsim import HubServer  # noqa: E402
from indexer.jobs.hubpublish import build, publish_to_hub  # noqa: E402
from indexer.jobs.pull import pull  # noqa: E402

TOKEN = "bench-write-token"


def commit_sizes(db: Path, out: Path) -> dict:
    """Bytes of each part of the commit ``publish --to-hub`` would make for ``db``."""
    out.mkdir(parents=True, exist_ok=True)
    m = build(str(db), out)
    parquet = sum((out / p["path"]).stat().st_size for p in m["parquet"].values())
    return {"repos": m["counts"]["repos"], "snapshot": m["snapshot"]["bytes"], "parquet": parquet,
            "total": m["snapshot"]["bytes"] + parquet + (out / "manifest.json").stat().st_size}


def copy_time(src: Path, dest: Path) -> float:
    """Copying the same bytes locally, made durable as pull makes its file durable."""
    t0 = time.perf_counter()
    shutil.copyfile(src, dest)
    with open(dest, "rb") as f:
        os.fsync(f.fileno())
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repos", type=int, default=20_000, help="Repos of the larger catalog (the smaller: 1/4).")
    ap.add_argument("--runs", type=int, default=3, help="Alternating pull/copy runs (median reported).")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="indexer-hub-bench-"))
    ok = True
    try:
        sizes = {}
        for n in (max(1000, args.repos // 4), args.repos):
            db = work / f"scale-{n}.db"
            generate(db, n, seed=n)
            os.environ["INDEXER_TOKENS"] = str(work / "tokens")
            compute(str(db))
            sizes[n] = commit_sizes(db, work / f"out-{n}")
        (n1, a), (n2, b) = sorted(sizes.items())
        print(f"{'repos':>10} {'snapshot':>12} {'parquet':>12} {'commit':>12}  (bytes)")
        for n, s in sorted(sizes.items()):
            print(f"{n:>10} {s['snapshot']:>12} {s['parquet']:>12} {s['total']:>12}")
        for key in ("snapshot", "total"):
            per = (b[key] - a[key]) / (n2 - n1)  # marginal bytes per repo
            fixed = b[key] - per * n2
            print(f"{key:8} per 1,000 repos: {per * 1000 / 1e6:.3f} MB (marginal; fixed part {fixed / 1e6:.3f} MB); "
                  f"300,000 repos: {(fixed + per * 300_000) / 1e6:.0f} MB; "
                  f"2,000,000 repos: {(fixed + per * 2_000_000) / 1e9:.2f} GB")

        big = work / f"scale-{n2}.db"
        with HubServer(str(_mk(work / "hub" / "models")), tokens={TOKEN: "write"}) as hub:
            publish_to_hub(str(big), "bench/catalog", endpoint=hub.endpoint, token=TOKEN)
            snap = work / f"out-{n2}" / "catalog.sqlite"
            pulls, copies, parts = [], [], []
            for i in range(args.runs):
                dest = work / f"pulled-{i}" / "catalog.db"
                t0 = time.perf_counter()
                done = pull(str(dest), repo="bench/catalog", endpoint=hub.endpoint, token=TOKEN, progress=False)
                pulls.append(time.perf_counter() - t0)
                assert done["status"] == "pulled"
                parts.append(done["seconds"])
                copies.append(copy_time(snap, work / f"copy-{i}.db"))
            p, c = statistics.median(pulls), statistics.median(copies)
            print(f"pull of {b['snapshot']} bytes from the imitation: {p:.3f} s; local copy of the same bytes: "
                  f"{c:.3f} s; ratio {p / c:.1f}x (median of {args.runs} alternating runs)")
            print("  of which (median): " + ", ".join(f"{k} {statistics.median(x[k] for x in parts):.3f} s"
                                                    for k in parts[0]))
            hub.reset_counts()
            done = pull(str(work / "pulled-0" / "catalog.db"), repo="bench/catalog", endpoint=hub.endpoint,
                        token=TOKEN, progress=False)
            requests, sent = len(hub.request_log), hub.counts["bytes_sent"]
            passed = done["status"] == "unchanged" and requests <= 2 and sent == 0
            ok &= passed
            print(f"unchanged pull: {requests} request(s), {sent} snapshot bytes sent "
                  f"(target <= 2 requests, 0 bytes): {'PASS' if passed else 'FAIL'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


def _mk(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


if __name__ == "__main__":
    main()
