"""What ``indexer query`` and ``indexer check`` load: none of the heavy packages (the tokenizer libraries, torch,
the Hub client, SQLAlchemy, datasette, pyarrow). They are imported where a crawl, a live answer, the site or a
publish needs them, never on the way to an answer the catalog gives."""

from __future__ import annotations

import subprocess
import sys

import pytest

TARGET, DRAFT = "lumen-ai/Lumen-7B-Instruct", "lumen-ai/Lumen-0.5B-Instruct"

HEAVY = ("transformers", "tokenizers", "torch", "huggingface_hub", "sqlalchemy", "alembic", "datasette", "pyarrow",
         "numpy", "httpx", "tqdm", "gguf")

PROBE = (
    "import sys\n"
    "from indexer.cli import cli\n"
    "try:\n"
    "    cli(sys.argv[1:], prog_name='indexer')\n"
    "except SystemExit:\n"
    "    pass\n"
    "sys.stderr.write('LOADED ' + ' '.join(sorted(sys.modules)) + '\\n')\n"
)


@pytest.mark.parametrize("args", [
    ["query", "--target", TARGET],
    ["query", "--target", TARGET, "--json", "--near-misses", "--engine", "llama.cpp"],
    ["query", "--target", TARGET, "--method", "all"],
    ["check", TARGET, DRAFT],
    ["check", TARGET, "lumen-ai/Lumen-0.5B-Instruct-GGUF", "--json"],
])
def test_an_answer_loads_no_heavy_package(demo_catalog, args):
    proc = subprocess.run([sys.executable, "-c", PROBE, *args, "--db", str(demo_catalog)], capture_output=True,
                          text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    loaded = proc.stderr.rsplit("LOADED ", 1)[1].split()
    assert "indexer.answer.query" in loaded
    assert not [m for m in loaded if m.split(".")[0] in HEAVY], loaded


# ------------------------------------------------------------------ patterns read without `re` (issue 31)
# A current pip's console script imports no `re` (pip 25.2+, _internal/operations/install/wheel.py PipScriptMaker),
# so the query path reads these patterns with string operations; each is held to its pattern on random text.

def _texts(alphabet: list[str], n: int, seed: int, longest: int = 8) -> list[str]:
    import random

    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest))) for _ in range(n)]


def test_copy_stem_is_the_suffix_pattern():
    import re

    from indexer.answer import ranking

    words = ["-", "_", ".", "gguf", "GGUF", "awq", "q4", "q4_k_m", "Q8", "4bit", "12bit", "bit", "f16", "bf16", "mlx",
             "int4", "fp8", "x", "7b", "Qwen2.5", "\u0663", "q\u0663\u00e9", "/", "instruct"]
    ids = _texts(words, 20_000, 7) + ["Qwen/Qwen2.5-7B-Instruct-GGUF", "a/b-q4_k_m.gguf", "m-4bit-mlx", "-gguf", "x"]
    wrong = [i for i in ids if ranking._stem(i) != re.sub(ranking.COPY_SUFFIXES, "", i.split("/")[-1].lower())]
    assert not wrong, wrong[:10]
    assert sum(ranking._stem(i) != i.split("/")[-1].lower() for i in ids) > 1000  # both outcomes are reached


def test_gguf_quant_is_the_quant_pattern():
    import re

    from indexer.answer import speedup

    texts = _texts(['"quant": "', '"', "Q4_K_M", "x", " ", '"source": "read"', "\n", ", "], 20_000, 8)
    for text in texts:
        m = re.search(r'"quant": "([^"]+)"', text)
        assert speedup._quant_value(text) == (m.group(1) if m else None), text


def test_hardware_key_and_quant_names_are_their_patterns():
    import re

    from indexer.speed import hardware, quant

    for text in _texts(["H100", " ", "-", "sxm", "RTX", "_", "\u00e9", "4090", "!!", "\u0130", "M4 Max"], 20_000, 9):
        assert hardware._key(text) == re.sub(r"[^a-z0-9]+", " ", text.lower()).strip(), text
    prefixes = ["MOSTLY_", "ALL_", "GGML_TYPE_", "LLAMA_FTYPE_MOSTLY_", "LLAMA_FTYPE_ALL_", "Q4_K", "_M", "UD-", "F16"]
    for text in _texts(prefixes, 20_000, 10, 4):
        s = next((text[len(p):] for p in quant._PREFIXES if text.startswith(p)), text)
        assert s == re.sub(r"^(MOSTLY_|ALL_|GGML_TYPE_|LLAMA_FTYPE_MOSTLY_|LLAMA_FTYPE_ALL_)", "", text), text
    names = [q.name for q in quant._TABLE] + _texts(["UD-", "Q", "4", "_K", "_M", "_XL", "_", "k", "\u0663", "Q4_K"],
                                                    20_000, 11, 5)
    for name in names:
        m = re.match(quant._BLOCK, name)
        assert quant.block(quant.Quant(name, 4.0, quant._TABLE[0].family)) == (m.group(1) if m else name), name
