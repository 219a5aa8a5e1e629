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
