"""GGUF key/value sections of many tiny keys: reading time per MB must not grow with the section's size.

A hostile GGUF can hold millions of one-byte values under short keys. The crawl reads the section in HTTP ranges
(indexer/gguf/header.py ``read_kv_section``: a first range of 8 MiB, then extensions), so the parser must go on
from where the last prefix ended instead of parsing the prefix again on each extension.

The parser is timed without its key-count cap (``DEFAULT_MAX_KV_PAIRS``, which refuses such a section at its
head). For each size (keys ``k0000000``.., uint8 values: 21 bytes a pair) this prints, from the same run:

* ``once``: one ``parse_header`` of the whole section (the floor);
* ``read``: ``read_kv_section`` from an in-memory file (ranges as the crawl asks for them), and its reads;
* ``reparse``: reading as it was before the parser resumed (each extension the projection plus 1/32, each
  prefix parsed again from byte 0), only up to ``--reparse-max`` keys, as it is slow;

then s/MB per column and the ratio of the largest to the smallest size (linear: the ratio of their sizes).

    python benchmarks/gguf_header.py [--keys 100000,400000,800000] [--repeat 3] [--reparse-max 400000]
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from indexer.gguf.header import FIRST_READ, TAIL, parse_header, read_kv_section  # noqa: E402


def many_keys(n: int) -> bytes:
    """A GGUF v3 header of ``n`` uint8 values under 8-byte keys (``k`` and 7 hex digits), no tensors."""
    out = [struct.pack("<IIQQ", 0x46554747, 3, 0, n)]
    pair = struct.Struct("<Q8sIB")
    out += [pair.pack(8, b"k%07x" % i, 0, 1) for i in range(n)]
    return b"".join(out)


def reparse(data: bytes, first: int = FIRST_READ) -> int:
    """Reading as it was before the parser resumed: each range the projection plus 1/32 and a tail, each prefix
    parsed from byte 0; returns the reads."""
    size, want, reads = len(data), min(first, len(data)), 0
    while True:
        reads += 1
        h = parse_header(data[:want], size, max_pairs=None)
        if h.status != "need_more":
            return reads
        want = min(size, h.need + h.need // 32 + TAIL)


def best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", default="100000,400000,800000", help="comma-separated key counts")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reparse-max", type=int, default=400_000, help="largest count timed with re-parsing")
    args = ap.parse_args(argv)
    counts = [int(x) for x in args.keys.split(",")]
    print(f"{'keys':>10} {'MB':>7} {'once s':>8} {'read s':>8} {'reads':>5} {'reparse s':>10} {'reads':>5} "
          f"{'once s/MB':>9} {'read s/MB':>9} {'reparse s/MB':>12}")
    rows = []
    for n in counts:
        data = many_keys(n)
        mb = len(data) / 1e6
        t_once, h = best(lambda d=data: parse_header(d, len(d), max_pairs=None), args.repeat)
        assert h.ok and len(h.values) == n, h.reason
        t_read, r = best(lambda d=data: read_kv_section(lambda a, b: d[a:b], len(d), max_pairs=None),
                           args.repeat)
        assert r.header.ok
        t_re, re_reads = (best(lambda d=data: reparse(d), 1) if n <= args.reparse_max else (float("nan"), 0))
        rows.append((n, mb, t_once, t_read, t_re))
        print(f"{n:>10} {mb:>7.1f} {t_once:>8.3f} {t_read:>8.3f} {r.requests:>5} {t_re:>10.3f} {re_reads:>5} "
              f"{t_once / mb:>9.4f} {t_read / mb:>9.4f} {t_re / mb:>12.4f}")
    if len(rows) > 1:
        (n0, mb0, o0, r0, p0), (n1, mb1, o1, r1, _) = rows[0], rows[-1]
        print(f"{n1} vs {n0} keys: size x{mb1 / mb0:.2f}; time x{o1 / o0:.2f} (once), x{r1 / r0:.2f} (read); "
              f"read / once at {n1}: {r1 / o1:.2f}")
        timed = [row for row in rows if row[4] == row[4]]  # reparse timed (not NaN)
        if len(timed) > 1:
            (n0, mb0, _, r0, p0), (n1, mb1, _, r1, p1) = timed[0], timed[-1]
            print(f"reparse, {n1} vs {n0} keys: size x{mb1 / mb0:.2f}, time x{p1 / p0:.2f}; "
                  f"reparse / read at {n1}: {p1 / r1:.2f}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
