"""GGUF benchmarks: predict_gguf per corpus directory (default), or reading GGUF headers over HTTP (--headers).

Prediction: for each directory of ../shared/corpus/models (or the directories given), the baseline is reading
and parsing every JSON file the converter reads (tokenizer.json, tokenizer_config.json, special_tokens_map.json,
added_tokens.json, config.json, vocab.json) with orjson, plus reading tokenizer.model and merges.txt as bytes.
Both are timed in the same run (best of ``--repeat``), and the ratio is printed per directory and in total.

    python benchmarks/gguf.py [--repeat 3] [DIR ...]

Headers (``--headers``): GGUF-only repos served by hubsim (LFS, 302 to its CDN, 206 ranges), one per
vocabulary: the corpus directories' predicted vocabularies written as GGUF files with their real merges (BPE) or
scores (SPM), plus synthetic vocabularies of 10 and 20 MiB, each file padded to ``--pad-mb`` (sparse). The crawl's
reader (indexer/gguf/hub.py over HubClient.read_range) reads each header once; printed per repo, next to the
targets: bytes read / key/value section size (target <= 1.2, plus one range's slack of 8 MiB), range requests
(target <= 2 below 16 MiB), and the header parse time against reading the same bytes from a local file (best of
``--repeat``).

    python benchmarks/gguf.py --headers [--pad-mb 256] [--repeat 3] [DIR ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
# this file is named gguf.py: its own directory must not shadow the gguf package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from indexer.gguf.predict import predict_gguf  # noqa: E402

JSON_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
              "config.json", "vocab.json", "generation_config.json")
RAW_FILES = ("tokenizer.model", "merges.txt")


def parse_only(directory: Path) -> None:
    for name in JSON_FILES:
        if (directory / name).is_file():
            orjson.loads((directory / name).read_bytes())
    for name in RAW_FILES:
        if (directory / name).is_file():
            (directory / name).read_bytes()


def best(fn, directory: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(directory)
        times.append(time.perf_counter() - t)
    return min(times)


def _merges(directory: Path) -> list[str] | None:
    """The BPE merges of tokenizer.json (as 'a b' strings), for a realistic key/value section."""
    path = directory / "tokenizer.json"
    if not path.is_file():
        return None
    model = orjson.loads(path.read_bytes()).get("model") or {}
    merges = model.get("merges") or []
    return [m if isinstance(m, str) else " ".join(m) for m in merges] or None


def _synthetic(n: int):
    from indexer.gguf.predict import GGUFVocab

    toks = tuple(["<unk>", "<s>", "</s>"] + [f"tok_{i:07d}_{'x' * (i % 13)}" for i in range(3, n)])
    return GGUFVocab(True, None, "bpe", n, False, False, 11, 11, "qwen2", toks)


def headers(dirs: list[Path], pad_mb: int, repeat: int) -> None:
    import tempfile

    from indexer.gguf.header import parse_header
    from indexer.gguf.hub import GGUFHeaderReader
    from indexer.hub.client import HubClient
    from indexer.hubsim import HubServer
    from indexer.hubsim.gguf_repos import write_vocab_gguf

    cases = []  # (repo id, vocab, merges)
    for d in dirs:
        v = predict_gguf(d)
        if v.converted:
            cases.append((f"bench/{d.name[:60]}-GGUF", v, _merges(d) if v.vocab_type == "bpe" else None))
    for n, mib in ((200_000, 10), (400_000, 20)):
        v = _synthetic(n)
        cases.append((f"bench/synthetic-{mib}MiB-GGUF", v, [f"t{i} o{i}" for i in range(n)]))
    with tempfile.TemporaryDirectory(prefix="gguf-bench-") as tmp:
        hub = Path(tmp) / "hub"
        for rid, v, merges in cases:
            kw = {"merges": merges} if merges else ({"merges": ["a b"]} if v.vocab_type == "bpe" else {})
            path = write_vocab_gguf(hub / rid / "model-Q4_K_M.gguf", v, **kw)
            os.truncate(path, max(path.stat().st_size, pad_mb << 20))
        print(f"{'GGUF repo':58} {'kv bytes':>10} {'read':>10} {'ratio':>6} {'req':>4} {'parse':>8} {'read':>8} "
              f"{'x':>5}  target")
        tot = {"kv": 0, "read": 0, "req": 0, "parse": 0.0, "io": 0.0}
        worst = 0.0
        with HubServer(str(hub)) as server, HubClient(server.endpoint, token=False) as client:
            for rid, _, _ in cases:
                reader = GGUFHeaderReader(client)
                info = {p.name: (p.stat().st_size, None) for p in (hub / rid).iterdir()}
                sha = client.model_info(rid).sha
                r = reader.read(rid, sha, info)
                sent = r.bytes_read  # what the client received (hubsim's bytes_sent total is checked below)
                kv = r.file.kv_bytes
                local = hub / rid / "model-Q4_K_M.gguf"
                parse = io = float("inf")
                for _ in range(repeat):
                    t = time.perf_counter()
                    with open(local, "rb") as f:
                        data = f.read(r.bytes_read)
                    io = min(io, time.perf_counter() - t)
                    t = time.perf_counter()
                    parse_header(data, local.stat().st_size)
                    parse = min(parse, time.perf_counter() - t)
                ok = (r.bytes_read <= 1.2 * kv + (8 << 20)) and (r.requests <= 2 or kv >= 16 << 20)
                worst = max(worst, (r.bytes_read - (8 << 20)) / kv)
                print(f"{rid[6:64]:58} {kv:10d} {sent:10d} {sent / kv:6.2f} {r.requests:4d} {parse * 1000:6.1f}ms "
                      f"{io * 1000:6.1f}ms {parse / io:5.1f}  {'ok' if ok else 'MISSED'}")
                for k, val in (("kv", kv), ("read", sent), ("req", r.requests), ("parse", parse), ("io", io)):
                    tot[k] += val
            time.sleep(0.2)  # hubsim counts a body just after the client has it
            served = server.counts["bytes_sent"]
        n = len(cases)
        print(f"{'total (' + str(n) + ' repos)':58} {tot['kv']:10d} {tot['read']:10d} {tot['read'] / tot['kv']:6.2f} "
              f"{tot['req'] / n:4.1f} {tot['parse'] * 1000:6.1f}ms {tot['io'] * 1000:6.1f}ms "
              f"{tot['parse'] / tot['io']:5.1f}")
        print(f"files padded to {pad_mb} MiB: whole files would be {n * pad_mb} MiB; hubsim sent "
              f"{served / (1 << 20):.1f} MiB of them. Worst (bytes read - one 8 MiB range) / kv size: {worst:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--headers", action="store_true", help="benchmark reading GGUF headers over HTTP ranges")
    ap.add_argument("--pad-mb", type=int, default=256, help="--headers: size each GGUF file is padded to")
    args = ap.parse_args()
    dirs = args.dirs or sorted((ROOT.parent / "shared" / "corpus" / "models").iterdir())
    if args.headers:
        headers(dirs, args.pad_mb, args.repeat)
        return
    if not dirs:
        raise SystemExit("error: no directories (give some, or provide ../shared/corpus)")
    predict_gguf(dirs[0])  # import tokenizers/sentencepiece once, outside the timings
    total_p = total_b = 0.0
    print(f"{'directory':60} {'predict_gguf':>12} {'orjson parse':>12} {'ratio':>7}  result")
    for d in dirs:
        p = best(predict_gguf, d, args.repeat)
        b = best(parse_only, d, args.repeat)
        v = predict_gguf(d)
        total_p, total_b = total_p + p, total_b + b
        result = f"{v.vocab_type} n_vocab={v.n_vocab}" if v.converted else f"refused: {v.error[:40]}"
        print(f"{d.name[:60]:60} {p * 1000:10.1f}ms {b * 1000:10.1f}ms {p / b:7.1f}  {result}")
    print(f"{'total (' + str(len(dirs)) + ' directories)':60} {total_p * 1000:10.1f}ms {total_b * 1000:10.1f}ms "
          f"{total_p / total_b:7.1f}")
    print(f"mean predict_gguf per directory: {total_p / len(dirs) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
