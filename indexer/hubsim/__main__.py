"""``python -m indexer.hubsim DIR --port P [--cdn-port Q]``: serve a hub directory until interrupted.

``--synthetic N OUTDIR`` first generates a synthetic hub of N repos into OUTDIR and serves that.
The first line printed is the endpoint URL (for ``HF_ENDPOINT``). The real-Hub behaviours are on by
default with the anonymous tier's quotas (500 API / 3,000 resolver calls per 300 s window);
``--api-quota``, ``--resolver-quota`` and ``--window`` scale them, ``--no-rate-limits`` and ``--no-xet``
turn them off. ``--stall PATH_REGEX`` accepts matching requests and never answers them.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

from .server import HubServer
from .synthetic import generate_synthetic_hub


def main(argv: list[str] | None = None) -> int:
    """Serve a hub directory until interrupted (for the demo and for trying a crawl by hand)."""
    p = argparse.ArgumentParser(prog="python -m indexer.hubsim", description=__doc__)
    p.add_argument("dir", nargs="?", help="hub directory (owner/name/... or owner__name/...)")
    p.add_argument("--port", type=int, default=0, help="hub port (default: ephemeral)")
    p.add_argument("--cdn-port", type=int, default=0, help="port of the LFS 'CDN' (default: ephemeral)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--page-size", type=int, default=100)
    p.add_argument("--lfs-threshold", type=int, default=1 << 20)
    p.add_argument("--auto-reload", action="store_true", help="rescan the tree on each first list page")
    p.add_argument("--synthetic", nargs=2, metavar=("N", "OUTDIR"), help="generate N repos into OUTDIR first")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--base-dir", action="append", default=None, help="real model dir used as a base (repeat)")
    p.add_argument("--generate-only", action="store_true", help="with --synthetic: do not serve")
    p.add_argument("--api-quota", type=int, default=None, help="api bucket quota per window (default 500)")
    p.add_argument("--resolver-quota", type=int, default=None, help="resolvers quota per window (default 3000)")
    p.add_argument("--window", type=float, default=300.0, help="rate-limit window in seconds")
    p.add_argument("--no-rate-limits", action="store_true", help="neither announce nor enforce quotas")
    p.add_argument("--lossy-siblings", type=float, default=None,
                   help="share of repos whose listing shows empty or truncated siblings (default 0.05)")
    p.add_argument("--no-xet", action="store_true", help="no Xet headers on LFS files")
    p.add_argument("--datasets", metavar="DIR", default=None,
                   help="keep dataset repos in DIR, and serve those already there (default: a temp dir, removed)")
    p.add_argument("--stall", action="append", default=[], metavar="PATH_REGEX",
                   help="accept requests whose path matches and never answer (repeatable; a fault test aid)")
    args = p.parse_args(argv)

    root = args.dir
    if args.synthetic:
        n, root = int(args.synthetic[0]), args.synthetic[1]
        summary = generate_synthetic_hub(root, n, seed=args.seed, base_dirs=args.base_dir)
        print(json.dumps({k: v for k, v in summary.items() if k != "bases"}), file=sys.stderr)
        if args.generate_only:
            return 0
    if not root:
        p.error("a hub DIR (or --synthetic N OUTDIR) is required")

    def _stop(_signum, _frame):
        raise KeyboardInterrupt  # SIGTERM as Ctrl-C: hub.stop() removes its temporary dataset folder

    signal.signal(signal.SIGTERM, _stop)
    hub = HubServer(
        root,
        page_size=args.page_size,
        lfs_threshold=args.lfs_threshold,
        host=args.host,
        port=args.port,
        cdn_port=args.cdn_port,
        auto_reload=args.auto_reload,
        xet=not args.no_xet,
        rate_limits=not args.no_rate_limits,
        api_quota=args.api_quota,
        resolver_quota=args.resolver_quota,
        window=args.window,
        dataset_dir=args.datasets,
        **({} if args.lossy_siblings is None else {"lossy_siblings": args.lossy_siblings}),
    )
    try:
        hub.start()
        for regex in args.stall:
            hub.add_fault("*", regex, kind="stall", delay=None, times=None)
        print(hub.endpoint, flush=True)
        print(f"serving {len(hub.repos)} repos from {root}; cdn {hub.cdn_endpoint}", file=sys.stderr, flush=True)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        hub.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
