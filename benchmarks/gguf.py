"""predict_gguf benchmark: time per corpus directory, against just parsing its files with orjson.

For each directory of ../shared/corpus/models (or the directories given), the baseline is reading and parsing
every JSON file the converter reads (tokenizer.json, tokenizer_config.json, special_tokens_map.json,
added_tokens.json, config.json, vocab.json) with orjson, plus reading tokenizer.model and merges.txt as bytes.
Both are timed in the same run (best of ``--repeat``), and the ratio is printed per directory and in total.

    python benchmarks/gguf.py [--repeat 3] [DIR ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from indexer.gguf import predict_gguf  # noqa: E402

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    dirs = args.dirs or sorted((ROOT.parent / "shared" / "corpus" / "models").iterdir())
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
