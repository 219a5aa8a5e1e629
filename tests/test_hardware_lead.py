"""The device leads the answer, GGUF targets answer every method, LM Studio tells one story (on the demo catalog).

`indexer query --hardware NAME` without --engine ranks the engines that run on that device; an engine that does
not run there says so before its command; a device given by --bandwidth needs its kind. A GGUF repo answers
--method all|mtp|dflash from its header facts, and no answer prints a Python None. LM Studio runs GGUF files on
its llama.cpp engine everywhere and MLX models on Apple only, in `query`, `check` and `hardware` alike.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from indexer.answer.query import METHODS, render, run_query
from indexer.cli import cli
from indexer.engines import ENGINES
from indexer.errors import IndexerError

TARGET = "lumen-ai/Lumen-7B-Instruct"
GGUF_TARGETS = ("lumen-ai/Lumen-7B-Instruct-GGUF", "lumen-ai/Lumen-0.5B-Instruct-GGUF",
                "quietfox/Lumen-0.5B-Instruct-sft-GGUF")


@pytest.fixture(scope="module")
def db(demo_catalog) -> str:
    return str(demo_catalog)


def run(*args):
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


def query(db, *args, as_json=False):
    code, out = run("query", "--db", db, *args, *(["--json"] if as_json else []))
    return code, json.loads(out) if as_json and code == 0 else out


@pytest.mark.parametrize("device, kind, first", [("M4 Max", "apple", "mlx"), ("RTX 4090", "nvidia", "llama.cpp")])
def test_a_named_device_without_an_engine_ranks_the_engines_that_run_there(db, device, kind, first):
    code, res = query(db, "--target", TARGET, "--hardware", device, as_json=True)
    assert code == 0
    block = res["hardware"]
    assert (block["name"], block["kind"], block["runs"]) == (device, kind, True)
    assert res["engine"] == block["lead"][0]["engine"] == first
    assert [r["engine"] for r in block["lead"]] and all(kind in ENGINES[r["engine"]].device_kinds(None)
                                                        for r in block["lead"])
    assert all(r["estimate"] is not None for r in block["lead"])  # every engine there has a figure on the demo
    rates = [r["tok_s"] for r in block["lead"]]
    assert rates == sorted(rates, reverse=True)  # fastest first
    assert res["drafts"][0]["speedup"]["estimate"] is not None and res["drafts"][0]["speedup"]["hardware"] == device
    code, text = query(db, "--target", TARGET, "--hardware", device)
    assert code == 0 and f"on {device} ({kind}), fastest first: {first} ≈" in text
    assert f"answering for {first}" in text and "NOT ON" not in text
    if kind == "apple":
        assert "sglang, vllm do not run there" in text and "sglang.launch_server" not in text


def test_an_engine_that_does_not_run_on_the_device_says_so_before_its_command(db):
    code, text = query(db, "--target", TARGET, "--engine", "sglang", "--hardware", "M4 Max")
    assert code == 0
    lines = text.splitlines()
    warn = next(i for i, line in enumerate(lines) if line.startswith("NOT ON M4 MAX: "))
    launch = next(i for i, line in enumerate(lines) if "sglang.launch_server" in line)
    assert warn < launch and "engines that run there: transformers, llama.cpp, mlx, lmstudio" in lines[warn]
    code, res = query(db, "--target", TARGET, "--engine", "sglang", "--hardware", "M4 Max", as_json=True)
    assert res["hardware"]["runs"] is False and "does not run on apple devices" in res["hardware"]["why"]
    assert res["hardware"]["lead"] is None and "mlx" in res["hardware"]["engines"]
    # the command is the setup estimated on the engine's own device, and says which: never settings of its own
    code, own = query(db, "--target", TARGET, "--engine", "sglang", "--hardware", "H100 SXM", as_json=True)
    best, there = res["drafts"][0], own["drafts"][0]
    assert best["setup"]["hardware"] == "H100 SXM" and best["launch"] == there["launch"]
    assert best["setup"]["draft_tokens"] == there["speedup"]["draft_tokens"]
    assert 'the command below runs the setup estimated on H100 SXM (--hardware "H100 SXM"' in lines[warn]


def test_bandwidth_alone_asks_for_the_kind_and_never_guesses_nvidia(db):
    code, out = query(db, "--target", TARGET, "--engine", "mlx", "--bandwidth", "400")
    assert code == 2 and out.count("\n") == 1 and "--device-kind apple|nvidia|amd|cpu" in out
    code, res = query(db, "--target", TARGET, "--engine", "mlx", "--bandwidth", "400", "--device-kind", "apple",
                      as_json=True)
    assert code == 0 and res["drafts"][0]["speedup"]["estimate"] is not None
    code, res = query(db, "--target", TARGET, "--bandwidth", "400", "--device-kind", "apple", as_json=True)
    assert code == 0 and res["hardware"]["kind"] == "apple" and res["engine"] in ("mlx", "lmstudio", "llama.cpp")
    code, out = run("check", "--db", db, TARGET, "lumen-ai/Lumen-0.5B-Instruct", "--bandwidth", "400")
    assert code == 2 and "--device-kind" in out
    code, out = query(db, "--target", TARGET, "--hardware", "M4 Max", "--device-kind", "nvidia")
    assert code == 2 and "--device-kind" in out


def test_a_short_name_says_which_device_it_took(db):
    code, text = query(db, "--target", TARGET, "--hardware", "H100")
    assert code == 0 and "hardware: H100 SXM (also: H100 PCIe)" in text
    code, text = query(db, "--target", TARGET, "--hardware", "rtx4090")
    assert code == 0 and "on RTX 4090 (nvidia)" in text and "also:" not in text
    code, text = run("check", "--db", db, TARGET, "lumen-ai/Lumen-0.5B-Instruct", "--hardware", "H100")
    assert code == 0 and text.splitlines()[2] == "hardware: H100 SXM (also: H100 PCIe); name the other with --hardware"
    code, text = run("check", "--db", db, TARGET, "lumen-ai/Lumen-0.5B-Instruct", "--hardware", "m4max")
    assert code == 0 and "also:" not in text and "on M4 Max, 4bit target" in text


@pytest.mark.parametrize("target", GGUF_TARGETS)
@pytest.mark.parametrize("method", ["all", "mtp", "dflash"])
def test_gguf_targets_answer_every_method(db, target, method):
    for engine in ("llama.cpp", "sglang", "ollama"):
        code, text = query(db, "--target", target, "--engine", engine, "--method", method)
        assert code == 0, (engine, text)
        assert "None" not in text and "recrawl" not in text
        assert "GGUF llama, " in text.splitlines()[0] and " layers" in text.splitlines()[0]
    code, res = query(db, "--target", target, "--engine", "llama.cpp", "--method", method, as_json=True)
    assert res["target"]["block_count"] and res["target"]["embedding_length"]  # from the header


def test_method_all_on_a_gguf_target_names_who_runs_it(db):
    code, res = query(db, "--target", GGUF_TARGETS[0], "--method", "all", as_json=True)
    assert code == 0
    assert "loads Hugging Face checkpoints, not GGUF files" in res["engines"]["sglang"]["note"]
    assert "lumen-ai/Lumen-7B-Instruct" in res["engines"]["sglang"]["note"]  # the repo it quantizes
    assert res["engines"]["llama.cpp"]["mtp"]["fits"] is False and res["engines"]["llama.cpp"]["drafts"]
    assert res["engines"]["lmstudio"]["drafts"]  # LM Studio's llama.cpp engine


def test_no_text_answer_of_the_demo_catalog_prints_none(db):
    from indexer.answer.query import open_reader

    cat = open_reader(db)
    try:
        repos = [r[0] for r in cat.all("SELECT repo_id FROM repos ORDER BY repo_id")]
        seen = 0
        for repo in repos:
            for engine in ENGINES:
                for method in METHODS:
                    try:
                        result = run_query(repo, engine=engine, method=method, reader=cat, near_misses=True)
                    except IndexerError as e:
                        assert "None" not in e.message, (repo, engine, method, e.message)
                        continue
                    text = render(result, near_misses=True)
                    seen += 1
                    assert "None" not in text, (repo, engine, method, text)
    finally:
        cat.close()
    assert seen > len(repos) * len(ENGINES)


def test_lm_studio_answers_a_gguf_target_with_gguf_drafts_on_its_llama_cpp_engine(db):
    code, res = query(db, "--target", GGUF_TARGETS[0], "--engine", "lmstudio", as_json=True)
    assert code == 0 and res["refused"] is None and res["drafts"]
    assert "llama.cpp engine" in res["runs_as"]
    assert all(d["repo_id"].endswith("-GGUF") for d in res["drafts"])  # a GGUF target takes GGUF drafts
    assert "lmstudio" in res["summary"]["engines_with_drafts"]
    code, text = query(db, "--target", GGUF_TARGETS[0], "--engine", "lmstudio", "--hardware", "RTX 4090")
    assert code == 0 and "NOT ON" not in text and "ask --engine llama.cpp" not in text


def test_lm_studio_estimates_an_hf_pair_on_apple_only_in_check_and_query(db):
    code, res = run("check", "--db", db, TARGET, "lumen-ai/Lumen-0.5B-Instruct", "--json")
    lm = json.loads(res)["verdicts"]["lmstudio"]
    figures = {s["hardware"]: s for s in lm["speedups"]}
    assert figures["M4 Max"]["estimate"] is not None
    for other in ("H100 SXM", "RTX 4090"):  # MLX models: Apple only; elsewhere it runs GGUF files
        assert figures[other]["estimate"] is None and "GGUF files on its llama.cpp engine" in figures[other]["why"]
    code, res = run("check", "--db", db, GGUF_TARGETS[0], GGUF_TARGETS[1], "--json")
    lm = json.loads(res)["verdicts"]["lmstudio"]
    assert all(s["estimate"] is not None for s in lm["speedups"]) and len(lm["speedups"]) == 3
    code, res = query(db, "--target", TARGET, "--engine", "lmstudio", "--hardware", "RTX 4090", as_json=True)
    assert res["hardware"]["runs"] is False and "GGUF" in res["hardware"]["why"]


def test_the_site_leads_with_the_device_too(db):
    from indexer.site import drafts

    res = drafts(db, {"target": TARGET, "hardware": "M4 Max"})
    cli_res = query(db, "--target", TARGET, "--hardware", "M4 Max", as_json=True)[1]
    assert res["engine"] == cli_res["engine"] and res["hardware"]["lead"] == cli_res["hardware"]["lead"]


# ---------------------------------------------------------------- what a newcomer met (issue 37, item 6)


def test_a_check_of_the_target_with_itself_or_a_larger_model_says_not_a_draft(db):
    code, text = run("check", "--db", db, TARGET, TARGET)
    assert "NOT A DRAFT: the target itself" in text
    code, text = run("check", "--db", db, "lumen-ai/Lumen-0.5B-Instruct", TARGET)
    assert "NOT A DRAFT: larger than the target" in text
    code, text = run("check", "--db", db, TARGET, "lumen-ai/Lumen-0.5B-Instruct")
    assert "NOT A DRAFT" not in text


def test_the_tli_line_names_an_engine_whose_release_has_tli(db):
    pair = (TARGET, "lumen-ai/Lumen-1.5B-Instruct")
    code, text = run("check", "--db", db, *pair)
    assert "as vLLM" not in text and "(vLLM 0.34.0 has no TLI)" in text
    code, text = run("check", "--db", db, *pair, "--engine-version", "vllm==0.33.0")
    assert "TLI intersection: 558 tokens as vLLM 0.33.0 counts them" in text


def test_demo_help_names_exit_130():
    code, text = run("demo", "--help")
    assert code == 0 and "130" in text


def test_a_damaged_catalog_names_the_next_step(db, tmp_path):
    bad = tmp_path / "bad.db"
    data = bytearray(open(db, "rb").read())
    data[100:3100] = b"\xff" * 3000
    bad.write_bytes(bytes(data))
    code, out = query(str(bad), "--target", TARGET)
    assert code == 2 and out.count("\n") == 1 and "indexer pull" in out and "indexer demo" in out


def test_a_gated_repo_without_files_is_not_sent_to_a_recrawl(db):
    code, out = query(db, "--target", "corvid-labs/Corvid-70B-Instruct")
    assert code == 3 and "request access" in out and "recrawl" not in out


def test_the_site_shows_code_not_backticks():
    from indexer.site.hooks import code_spans

    assert str(code_spans("run `indexer pull` & <x>")) == "run <code>indexer pull</code> &amp; &lt;x&gt;"
    assert str(code_spans("an odd ` one")) == "an odd ` one"
    assert str(code_spans(None)) == ""


def test_an_agreement_never_reads_100_percent_while_tokens_differ():
    from indexer.vocab.agreement import percent

    assert percent(0.99996, True) == "over 99.9%" and percent(0.99996, False) == "100.0%"
    assert percent(0.987, True) == "98.7%"
