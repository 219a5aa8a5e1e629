"""Extract an engine's tables from a release's unpacked source into indexer/engines/data/<engine>/<release>.json.

    python scripts/extract_tables.py ENGINE RELEASE SOURCE_DIR [--read-from WHAT] [--out DIR]

ENGINE is vllm, sglang, transformers, mlx or llamacpp (RELEASE: its commit); docs/engines.md says how to get and
unpack each release's source. Then review the diff (``git diff indexer/engines/data``): the engine modules read these
files. Exit 2 when the tree lacks what the extractor reads.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from indexer.engines.extract import EXTRACTORS, SourceError, extract

DATA = Path(__file__).resolve().parents[1] / "indexer" / "engines" / "data"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python scripts/extract_tables.py", description=__doc__.split("\n\n")[0])
    p.add_argument("engine", choices=sorted(EXTRACTORS))
    p.add_argument("release")
    p.add_argument("source_dir", type=Path)
    p.add_argument("--read-from", default="", help="what the tree was unpacked from (the wheel or sdist name)")
    p.add_argument("--out", type=Path, default=DATA)
    args = p.parse_args(argv)
    try:
        data = extract(args.engine, args.source_dir, args.release, args.read_from)
    except SourceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    path = args.out / args.engine / f"{args.release}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    counts = ", ".join(f"{k} {len(v.get('values') or {}) if isinstance(v, dict) and 'values' in v else len(v)}"
                       for k, v in data["tables"].items())
    print(f"{path}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
