"""The console script's fast path (indexer/fastcli.py, issue 24): light, and indistinguishable from the click CLI.

* What ``indexer query`` and ``indexer check`` load beyond a bare ``python -c pass`` is listed here, module by
  module: a module the query path does not use fails the test (click, the Hub client, SQLAlchemy, ...). It is
  measured as in a venv made with ``pip install .`` (issue 31): the development venv's editable install loads
  its import hook, with pathlib and re, at every start, which would hide them.
* Every answer and every error (stdout, stderr, exit status) is byte for byte what the click CLI prints.
* fastcli's table of options is cli.py's: a changed default, spelling or choice fails here; a new option in
  cli.py is only slower (fastcli hands argv with an option it does not know to click).
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import click
import pytest

from indexer import fastcli
from indexer.cli import cli

TARGET, DRAFT = "lumen-ai/Lumen-7B-Instruct", "lumen-ai/Lumen-0.5B-Instruct"
FAST = "import sys; sys.argv[0] = 'indexer'; from indexer.fastcli import main; sys.exit(main())"
CLICK = "import sys; sys.argv[0] = 'indexer'; from indexer.cli import cli; sys.exit(cli())"

# Our modules on the fast path of `query` (every --method) and of `check` with two catalog repo ids.
OURS = {
    "indexer", "indexer.fastcli", "indexer.errors", "indexer.files", "indexer.jsontext",
    "indexer.engines", "indexer.engines.base", "indexer.engines.headrules", "indexer.engines.sglang",
    "indexer.engines.vllm", "indexer.engines.transformers", "indexer.engines.llamacpp", "indexer.engines.mlx",
    "indexer.engines.lmstudio", "indexer.gguf", "indexer.vocab", "indexer.vocab.agreement",
    "indexer.catalog", "indexer.catalog.connect", "indexer.catalog.dberrors", "indexer.catalog.dburl",
    "indexer.catalog.reader",
    "indexer.answer", "indexer.answer.validate", "indexer.answer.query", "indexer.answer.ranking",
    "indexer.answer.target", "indexer.answer.render", "indexer.answer.lookup", "indexer.vocab.params",
    "indexer.vocab.textconfig", "indexer.record",
    # the architecture rows beside the vocabulary (issue 23): Ollama, the rule tables, the config facts they read
    "indexer.engines.ollama", "indexer.engines.archrules", "indexer.vocab.archconfig", "indexer.answer.archrank",
    "indexer.answer.summary",
    # --method other than draft: the head rules
    "indexer.answer.headquery", "indexer.engines.heads", "indexer.engines.headfacts", "indexer.vocab.modelconfig",
    # check: the two sides from the catalog, their token lists, the engines' verdicts, the GGUF vocabularies
    "indexer.answer.sides", "indexer.answer.rule_inputs", "indexer.catalog.tokenstore", "indexer.engines.rules",
    "indexer.vocab.fingerprint", "indexer.vocab.tokenizer_files", "indexer.vocab.hf_tables",
    "indexer.vocab.canonical", "indexer.gguf.predict",  # GGUFVocab only: not the converter (convert, hf, ...)
    # the expected speed-up (issue 28): plain data and arithmetic
    "indexer.answer.speedup", "indexer.speed", "indexer.speed.facts", "indexer.speed.hardware",
    "indexer.speed.model", "indexer.speed.quant",
}
# Everything else it may load beyond `python -c pass` and the console script's `import sys` (a name stands for its
# submodules too): the standard library it uses (threading: the fingerprint code's lock around transformers loads;
# zlib: the token store; fnmatch: the tokenizer file patterns; gc, built in: fastcli turns the collector off).
# Not orjson: its import loads dataclasses, inspect, uuid and platform (16 ms), so vocab/canonical.py imports it
# on first use. Not the sqlite3 package around _sqlite3: it imports datetime for adapters no read uses. Not
# pathlib (with urllib.parse, ipaddress, fnmatch) nor hashlib (OpenSSL): each costs about half of a bare Python's
# start in a `pip install .` venv (issue 31). Not contextlib (1 ms): answer/lookup.py's one context manager is a class.
# functools, collections, operator, keyword, reprlib, types, itertools: what _sqlite3 itself imports (3.11+: its
# statement cache is functools.lru_cache). json (with re and enum) only where `check` reads token lists.
OTHERS = tuple("""
__future__ _json _sqlite3 math contextvars _contextvars collections _collections functools _functools operator
_operator keyword reprlib types
itertools zlib weakref _weakrefset threading fnmatch gc json re _sre enum copyreg
""".split())
# What `query` does not load either, unlike `check`: json with re and enum (8 ms; pip 25.2+'s console script imports
# no re, so a query that loads neither saves it all; indexer/jsontext.py reads and writes its JSON); contextvars (the
# site's ContextVar, made on its first repo_ids_only).
QUERY_FORBIDDEN = ("fnmatch", "threading", "zlib", "json", "re", "enum", "contextvars")
# Never on the query path: what issue 24 found there, and what a query must not need.
FORBIDDEN = ("click", "httpx", "httpx2", "huggingface_hub", "sqlalchemy", "importlib.metadata", "importlib.resources",
             "tqdm", "transformers", "tokenizers", "alembic", "gguf", "numpy", "requests", "indexer.cli",
             "indexer.cli_support", "indexer.hub", "pathlib", "hashlib", "urllib", "ipaddress",
             "indexer.catalog.db", "indexer.catalog.migrate", "indexer.resources")


def allowed(module: str) -> bool:
    if module.split(".")[0] == "indexer":
        return module in OURS
    return any(module == p or module.startswith(p + ".") for p in OTHERS)


@pytest.fixture(scope="module")
def demo(demo_catalog) -> str:
    return str(demo_catalog)


def run(code: str, *args: str, env: dict | None = None) -> tuple[str, str, int]:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    return proc.stdout, proc.stderr, proc.returncode


# As the console script runs in a venv of `pip install .`: `python -S` (no site, so no editable-install hook) with
# the checkout and site-packages on the path; os (site's) and sys (the console script's own import: pip 25.2+ writes
# no `import re`, pip/_internal/operations/install/wheel.py PipScriptMaker) loaded before the count starts. An
# answer leaves by os._exit (fastcli.leave): the count is written just before.
PROBE = (
    "import os, sys\n"
    "before = set(sys.modules)\n"
    "sys.argv = ['indexer', *sys.argv[1:]]\n"
    "def report():\n"
    "    sys.stderr.write('LOADED ' + ' '.join(sorted(set(sys.modules) - before)) + '\\n')\n"
    "    sys.stderr.flush()\n"
    "exit_now = os._exit\n"
    "os._exit = lambda code: (report(), exit_now(code))\n"
    "from indexer.fastcli import main\n"
    "try:\n"
    "    main()\n"
    "except SystemExit:\n"
    "    pass\n"
    "report()\n"
)


@pytest.mark.parametrize("args", [
    ["query", "--target", TARGET],
    ["query", "--target", TARGET, "--json", "--near-misses", "--engine", "llama.cpp"],
    ["query", "--target", TARGET, "--method", "all"],
    ["check", TARGET, DRAFT],
    ["check", TARGET, "lumen-ai/Lumen-0.5B-Instruct-GGUF", "--json"],
])
def test_the_fast_path_loads_only_what_it_uses(demo, args):
    """A repo the catalog lacks is not on this path: cli.py asks the Hub for it (answer/live.py)."""
    root = str(Path(__file__).resolve().parents[1])
    site = os.pathsep.join(dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib")))
    proc = subprocess.run([sys.executable, "-S", "-c", PROBE, *args, "--db", demo], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": root + os.pathsep + site})
    err, code = proc.stderr, proc.returncode
    assert "Traceback" not in err and code in (0, 1, 3), err
    loaded = err.rsplit("LOADED ", 1)[1].split()
    assert "indexer.fastcli" in loaded and "indexer.answer.query" in loaded
    assert not [m for m in loaded if m.split(".")[0] in FORBIDDEN or m in FORBIDDEN], loaded
    assert [m for m in loaded if not allowed(m)] == []
    assert not {"dataclasses", "inspect", "orjson"} & set(loaded)  # indexer/record.py's value classes instead
    if args[0] == "query":
        assert not {m.split(".")[0] for m in loaded} & set(QUERY_FORBIDDEN), loaded


CASES = [
    ["query", "--target", TARGET],
    ["query", "--target", "lumen-ai/Lumen-70B-Instruct", "--json", "--near-misses"],
    ["query", "--target", TARGET, "--all", "--engine", "vllm"],
    ["query", "--target", TARGET, "--limit", "2", "--engine", "llama.cpp", "--json"],
    ["query", "--target", "lumen-ai/Lumen-7B-Instruct-GGUF", "--engine", "lmstudio"],
    ["query", "--target", TARGET, "--method", "all", "--json"],
    ["query", "--target", TARGET, "--method", "mtp", "--engine", "vllm"],
    ["query", "--target=lumen-ai/Lumen-7B", "--target", "LUMEN-AI/lumen-7b-instruct", "--json"],  # the last wins
    ["query", "--target", "https://huggingface.co/lumen-ai/Lumen-7B"],
    ["query", "--target", "lumen"],  # exit 3 with suggestions
    ["query", "--target", "nobody/none", "--json"],  # exit 3
    ["query", "--target", ""],  # exit 2
    ["query", "--target", "a\x01b"],
    ["query", "--target", TARGET, "--limit", "0"],
    ["query", "--target", TARGET, "--limit", " 3"],  # click's int() takes it; validate.limit too
    ["query", "--target", "/nonexistent/model"],
    ["check", TARGET, DRAFT],  # exit 0
    ["check", TARGET, "corvid-labs/Corvid-1B", "--json"],  # exit 1
    ["check", TARGET, "lumen-ai/Lumen-0.5B", "--engine", "mlx"],
    ["check", TARGET, "lumen-ai/Lumen-0.5B", "--verbose"],
    ["check", "lumen-ai/Lumen-7B-Instruct-GGUF", "lumen-ai/Lumen-0.5B-Instruct-GGUF", "--engine", "llama.cpp"],
    ["check", TARGET, "nobody/none"],  # exit 3: "draft nobody/none: ..."
    ["check", "nobody/none", TARGET, "--json"],
    ["check", TARGET, "/nonexistent/dir"],
    ["check", TARGET, DRAFT, "--max-file-bytes", "10"],
    # handed to click: its usage errors and help, unchanged
    ["query"], ["query", "--help"], ["check", TARGET], ["check", TARGET, DRAFT, "extra"],
    ["query", "--target", TARGET, "--engine", "bogus"], ["query", "--target", TARGET, "--limit", "x"],
    ["query", "--target", TARGET, "--json=yes"], ["query", "--target", TARGET, "--no-such-option"],
    ["check", TARGET, DRAFT, "--max-file-bytes", "0"], ["query", "--target"], ["check", "--", TARGET, DRAFT],
]


@pytest.mark.parametrize("args", CASES, ids=[" ".join(c)[:60] for c in CASES])
def test_fast_path_prints_what_click_prints(demo, args):
    db_args = [] if "--help" in args else ["--db", demo]
    fast, slow = run(FAST, *args, *db_args), run(CLICK, *args, *db_args)
    assert fast == slow
    assert "Traceback" not in fast[1]


@pytest.mark.parametrize("args", [
    ["query", "--db", "/nonexistent/x.db", "--target", "a\x01b"],  # --db first: click checks it first
    ["query", "--target", "a\x01b", "--db", "/nonexistent/x.db"],  # --target first
    ["query", "--limit", "0", "--target", TARGET, "--db", "/nonexistent/x.db"],
    ["query", "--target", TARGET, "--db", "mysql://u@h/db"],
    ["check", "--db", "/nonexistent/x.db", "a\x01b", DRAFT],  # options before the arguments, as click does
    ["check", "a\x01b", "/nonexistent/x", "--db", "/nonexistent/x.db"],
])
def test_errors_come_in_clicks_order(args):
    fast, slow = run(FAST, *args), run(CLICK, *args)
    assert fast == slow
    assert fast[2] == 2 and fast[1].startswith("error: ") and fast[1].count("\n") == 1, fast


def test_the_catalog_from_the_environment(demo, tmp_path):
    empty = {"INDEXER_DB": ""}  # an empty variable is no value (click): the default catalog, which is missing
    for env in ({"INDEXER_DB": demo}, empty):
        fast = run(FAST, "query", "--target", TARGET, env=env)
        assert fast == run(CLICK, "query", "--target", TARGET, env=env)
    assert fast[2] == 2 and "does not exist" in fast[1]


NO_DEFAULT = getattr(click.core, "UNSET", None)  # click 8.3+: an option without a default


def test_the_table_is_cli_py_s():
    for name, (arguments, options) in fastcli._commands().items():
        command = cli.commands[name]
        params = {p.name: p for p in command.params}
        assert [p.name for p in command.params if isinstance(p, click.Argument)] == list(arguments)
        known = {o.name for o in options}
        assert [o.name for o in options] == [p.name for p in command.params if p.name in known]  # click's order
        for opt in options:
            p = params[opt.name]
            assert p.is_flag == (opt.kind == "flag"), opt.name
            assert p.opts == [opt.flag], opt.name
            if p.is_flag:  # click's flag without a default is False
                assert p.default in (NO_DEFAULT, None, False) and opt.default is False, opt.name
            else:
                assert (None if p.default is NO_DEFAULT else p.default) == opt.default, opt.name
            assert (p.envvar or None) == opt.envvar, opt.name
            assert not p.multiple, opt.name
            if isinstance(p.type, click.Choice):
                kind = {"engine": "engine", "method": "method"}[opt.kind]
                assert all(fastcli._value(kind, c) == c for c in p.type.choices)
                assert fastcli._value(kind, "bogus") is None
        # every option fastcli does not know makes it hand the argv to click
        for p in command.params:
            if isinstance(p, click.Option) and p.name not in known:
                assert fastcli.parse([name, *arguments, "--target", "x", p.opts[0]]) is None


def test_what_the_fast_path_hands_to_click():
    assert fastcli.parse(["query", "--target", "a/b", "--live"]) is None  # an option another branch may add
    assert fastcli.parse(["query", "--target", "a/b", "-h"]) is None
    assert fastcli.parse(["crawl", "--all"]) is None
    assert fastcli.parse(["--version"]) is None
    command, values, order = fastcli.parse(["query", "--db", "x.db", "--target", "a/b", "--json"])
    assert command == "query" and values["as_json"] and values["limit"] == 10 and values["engine"] == "sglang"
    assert order[:3] == ["db", "target", "as_json"] and order[3:] == ["engine", "limit", "near_misses", "all_",
                                                                      "method"]
    command, values, order = fastcli.parse(["check", "--json", "a/b", "c/d"])
    assert (values["target"], values["draft"]) == ("a/b", "c/d") and order[:3] == ["as_json", "target", "draft"]


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
