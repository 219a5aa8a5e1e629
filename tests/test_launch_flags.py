"""Every launch command the tool prints, parsed against the flag table of the engine release it names (read from the
engine's source: indexer/engines/data/flags) and compared with the setup whose speed-up is printed beside it.

Crossed over the demo catalog and the architecture catalog (tests/test_arch.py's hub): every target with drafts,
every engine with a speed model and each of its releases, the reference devices and the named ones, with and
without a quantization asked; the heads' commands (EAGLE, EAGLE-3, DFlash, MTP, n-gram) per engine and release;
llama.cpp's and Ollama's GGUF head commands. ``pytest -s`` prints the table: commands per engine, valid, and valid
and running the estimated setup.
"""

from __future__ import annotations

import json
import os
from collections import Counter

import pytest
from crawlkit import crawled_catalog, set_meta
from launchcheck import catalog_files, check, check_flags_only
from test_arch import HUB, write_model

from indexer import engines as registry
from indexer.answer.query import run_query
from indexer.answer.speedup import Options
from indexer.engines import extract_flags, flags
from indexer.engines.headrules import GGUFHeadRules, HeadFacts, TargetShape
from indexer.engines.setup import text
from indexer.errors import IndexerError

DEVICES = (None, "H100 SXM", "RTX 4090", "M4 Max")
QUANTS = {  # a quantization asked, per runtime (None: what the setup chooses)
    "ggml": (None, "Q5_K_M", "Q8_0", "F16"), "mlx": (None, "8bit", "bf16"), "serving": (None, "fp8"),
    "eager": (None, "fp8"),
}
DRAFT_ENGINES = [n for n, e in registry.ENGINES.items() if e.speed is not None]


@pytest.fixture(scope="module")
def arch_catalog(tmp_path_factory):
    root = tmp_path_factory.mktemp("arch-hub")
    hub = root / "hub"
    for repo_id, (name, params) in HUB.items():
        write_model(hub / repo_id, name)
        set_meta(hub, repo_id, params=params)
    return crawled_catalog(root, hub)


def _targets(db: str) -> list[str]:
    import sqlite3

    with sqlite3.connect(db) as c:
        return [r[0] for r in c.execute("SELECT repo_id FROM repos WHERE status = 'ok' ORDER BY repo_id")]


def _commands(db: str):
    """(engine, release, the entry's setup, its steps) for every draft any query lists: at the newest release on
    every device and quantization asked, at the older ones (their own flag tables) on a datacenter GPU and a Mac
    with the setup's own quantization; every release crossed whole with INDEXER_LAUNCH_EVERY=1."""
    every = os.environ.get("INDEXER_LAUNCH_EVERY") == "1"
    for target in _targets(db):
        for engine in DRAFT_ENGINES:
            entry = registry.ENGINES[engine]
            runtimes = {entry.speed.runtime} | ({entry.speed.gguf.runtime} if entry.speed.gguf else set())
            quants = sorted({q for r in runtimes for q in QUANTS[r]}, key=str)
            for release in entry.releases:
                newest = every or release == entry.releases[-1]
                for device in DEVICES if newest else (None, "M4 Max"):
                    for q in quants if newest else [None]:
                        opts = Options(hardware=device, target_quant=q)
                        try:
                            res = run_query(target, engine=engine, db=db, release=release, speed=opts, limit=5)
                        except IndexerError:
                            continue
                        for d in res["drafts"]:
                            yield engine, release, d


def tally(commands, files: dict | None = None) -> tuple[Counter, Counter, Counter, list]:
    total, valid, exact, bad = Counter(), Counter(), Counter(), []
    seen = set()
    for engine, release, d in commands:
        key = (engine, release, d["launch"], json.dumps(d["setup"], sort_keys=True))
        if key in seen:
            continue
        seen.add(key)
        total[engine] += 1
        if d["setup"] is None:
            bad.append((engine, d["launch"], ["no setup"], []))
            continue
        errs, diffs = check(d["setup"], d["setup"]["steps"], files)
        valid[engine] += not errs
        exact[engine] += not errs and not diffs
        if errs or diffs:
            bad.append((engine, d["launch"], errs, diffs))
    return total, valid, exact, bad


def _table(total, valid, exact) -> str:
    rows = ["| engine | commands | valid | valid and running the estimated setup |", "|---|---|---|---|"]
    rows += [f"| {e} | {total[e]} | {valid[e]} | {exact[e]} |" for e in DRAFT_ENGINES if total[e]]
    return "\n".join(rows)


def test_every_draft_command_parses_and_runs_the_estimated_setup(demo_catalog, arch_catalog):
    commands = [*_commands(str(demo_catalog)), *_commands(arch_catalog)]
    total, valid, exact, bad = tally(commands, {**catalog_files(arch_catalog), **catalog_files(str(demo_catalog))})
    print("\n" + _table(total, valid, exact))
    for engine, launch, errs, diffs in bad[:20]:
        print(engine, launch[:160], errs, diffs)
    assert set(total) >= {"sglang", "vllm", "llama.cpp", "mlx", "transformers", "lmstudio"}
    assert all(valid[e] == total[e] for e in total), [b for b in bad if b[2]][:5]
    assert all(exact[e] == total[e] for e in total), [b for b in bad if b[3]][:5]


HEADS = {
    "eagle": HeadFacts("org/eagle-head", "eagle", "native", ["LlamaForCausalLMEagle"], "llama", None, [], 64, None, 256,
                       None, None, None, None, None, None, 1_000_000),
    "eagle3": HeadFacts("org/eagle3-head", "eagle3", "native", ["LlamaForCausalLMEagle3"], "llama", None, [], 64, 64,
                        256, 128, [1, 2, 3], None, None, None, None, 1_000_000),
    "dflash": HeadFacts("org/dflash-head", "dflash", "native", ["DFlashDraftModel"], "qwen3", None, [], 64, 64, 256,
                        None, None, None, 4, None, 15, 1_000_000),
}


def test_every_head_command_is_made_from_its_setup():
    """The heads' commands (EAGLE, EAGLE-3, P-EAGLE, DFlash, a speculators head naming its verifier, MTP, n-gram) are
    made from a Setup, as the estimate's: parsed against the release's table and compared with the setup, also
    with the target run at FP8 (quantized at load)."""
    from dataclasses import replace

    from indexer.engines.setup import Source

    target = TargetShape("org/T", "llama", ["LlamaForCausalLM"], 64, 4, 256, 256, 1, None, None)
    heads = [*HEADS.values(), replace(HEADS["eagle3"], repo_id="org/peagle-head", algorithm="peagle"),
             replace(HEADS["eagle3"], repo_id="org/spec-head", format="speculators", verifier="org/T")]
    checked = Counter()
    for engine in ("sglang", "vllm"):
        for release in registry.ENGINES[engine].releases:
            rules = registry.ENGINES[engine].at(release).heads
            setups = [rules.head_setup(h, "org/T") for h in heads]
            setups += [rules.mtp_setup(target), rules.ngram_setup("org/T")]
            for setup in setups:
                for variant in (setup, replace(setup, target=Source("org/T", quant="fp8"))):
                    steps = registry.ENGINES[engine].launch(variant)
                    assert check(variant.to_dict(), steps) == ([], []), (variant, steps)
                    checked[engine] += 1
            # the command a query prints is the setup's
            assert rules.launch(heads[1], "org/T") == text(rules.launch_setup(setups[1]))
            wrong = replace(setups[1], draft_tokens=(setups[1].draft_tokens or 0) + 2)
            assert check(wrong.to_dict(), registry.ENGINES[engine].launch(setups[1]))[1], wrong
    print(dict(checked))
    per = {e: len(registry.ENGINES[e].releases) for e in ("sglang", "vllm")}
    assert checked["sglang"] == 2 * 7 * per["sglang"] and checked["vllm"] == 2 * 7 * per["vllm"]


def test_every_head_command_parses():
    target = TargetShape("org/T", "llama", ["LlamaForCausalLM"], 64, 4, 256, 256, 1, None, None)
    checked = Counter()
    for engine in ("sglang", "vllm"):
        for release in registry.ENGINES[engine].releases:
            rules = registry.ENGINES[engine].at(release).heads
            commands = [rules.launch(h, "org/T") for h in HEADS.values()]
            commands += [rules.mtp_launch(target), rules.ngram_launch("org/T")]
            for cmd in commands:
                assert check_flags_only(engine, release, cmd) == [], cmd
                if engine == "vllm":
                    cfg = json.loads(cmd.split("--speculative-config ", 1)[1].strip("'"))
                    spec = flags.program("vllm", release, "vllm serve")["speculative_config"]
                    assert set(cfg) <= set(spec["keys"]) and cfg["method"] in spec["methods"], cmd
                checked[engine] += 1
    for engine in ("llama.cpp", "ollama"):
        e = registry.ENGINES[engine]
        assert isinstance(e.heads, GGUFHeadRules)
        for spec_type, _ in e.heads.methods.values():
            for head in (None, "org/Head-GGUF:Q8_0"):
                cmd = e.heads.launch("org/T-GGUF:Q4_K_M", head, spec_type)
                server = cmd.split("  # llama-server ", 1)
                if engine == "ollama":  # the llama-server it runs: the flags Ollama passes
                    assert f"--spec-type {spec_type}" in cmd and server[1].split()[-1] in flags.program(
                        "llama.cpp", registry.ENGINES["llama.cpp"].release, "llama-server")["options"][
                        "--spec-type"]["choices"], cmd
                else:
                    assert check_flags_only("llama.cpp", e.release, cmd) == [], cmd
                checked[engine] += 1
    print(dict(checked))
    per = {e: len(registry.ENGINES[e].releases) for e in ("sglang", "vllm")}
    assert checked["sglang"] == 5 * per["sglang"] and checked["vllm"] == 5 * per["vllm"]


def test_removed_and_unknown_flags_and_choices_are_caught():
    server = flags.program("llama.cpp", registry.ENGINES["llama.cpp"].release, "llama-server")
    p = flags.parse(server, ["-m", "x.gguf", "--draft-max", "3", "--spec-type", "draft-typo", "--no-such-flag"])
    assert any("--draft-max was removed" in e for e in p.errors)
    assert any("draft-typo" in e for e in p.errors) and any("--no-such-flag" in e for e in p.errors)
    ok = flags.parse(server, ["-hf", "a/b-GGUF:Q4_K_M", "--spec-type", "draft-simple,ngram-mod", "--spec-draft-n-max",
                              "3"])
    assert ok.errors == [] and ok.value("--spec-draft-n-max") == "3"
    assert "Q4_K_M" in flags.quantize_types(registry.ENGINES["llama.cpp"].release)
    assert "q8_0" in flags.convert_outtypes(registry.ENGINES["llama.cpp"].release)


def test_lmstudio_scripts_ask_lm_studio_for_the_keys():
    from dataclasses import replace

    from indexer.engines.setup import FILE, GGUF, HF, MLX, Setup, Source, text

    lms = registry.ENGINES["lmstudio"]
    gguf = Setup("lmstudio", lms.release, Source("org/T-GGUF", GGUF, "Q4_K_M", tag="Q4_K_M"),
                 Source("org/D", HF, "Q8_0"), draft_tokens=3)
    mlx = Setup("lmstudio", lms.release, Source("org/T", HF, "4bit"), Source("org/D-4bit", MLX, "4bit"),
                draft_tokens=2)
    local = replace(gguf, draft=Source("/models/d.gguf", FILE, "Q8_0"))
    for setup in (gguf, mlx, local):
        steps = lms.launch(setup)
        assert check(setup.to_dict(), steps) == ([], []), steps
    steps = lms.launch(gguf)  # the draft is made by llama.cpp's chain, imported, then found by its path
    assert steps[-2] == "lms import D-Q8_0.gguf --user-repo local/D-Q8_0-GGUF -y"
    assert "target = get('org/T-GGUF', 'gguf', 'Q4_K_M'); draft = find('local/D-Q8_0-GGUF/D-Q8_0.gguf')" in steps[-1]
    assert "'speculativeDecodingNumDraftTokensExact': 3" in steps[-1]
    assert lms.launch(mlx)[0] == ("mlx_lm.convert --hf-path org/T -q --q-bits 4 --mlx-path "
                                  "~/.lmstudio/models/local/T-4bit")
    assert "get('org/D-4bit', 'safetensors')" in text(lms.launch(mlx))
    assert lms.launch(local)[0] == "lms import /models/d.gguf --user-repo local/d-GGUF -y --copy"
    # what the check catches: another quantization, a name lmstudio-python lacks, a key respond() does not take
    script = steps[-1]
    for bad in (script.replace("'Q4_K_M')", "'Q5_K_M')"), script.replace("search_models", "find_models"),
                script.replace("'draftModel'", "'draft_model'"), script.replace("Exact': 3", "Exact': 4")):
        errs, diffs = check(gguf.to_dict(), [*steps[:-1], bad])
        assert errs or diffs, bad
    errs, _ = check(gguf.to_dict(), [s.replace("--user-repo", "--repo") for s in steps])
    assert any("--repo" in e for e in errs)


def test_every_claimed_release_has_its_table():
    for engine in ("llama.cpp", "sglang", "vllm", "mlx"):
        for release in registry.ENGINES[engine].releases:
            assert flags.table(engine, release) is not None, (engine, release)


# ---------------------------------------------------------------------------------------------- the extractor

ARG_CPP = """
static void add_opt(common_arg arg) {}
void init() {
    add_opt(common_arg(
        {"-m", "--model"}, "FNAME",
        "model path",
        [](common_params & params, const std::string & value) { params.model = value; }
    ).set_examples({LLAMA_EXAMPLE_COMMON, LLAMA_EXAMPLE_SERVER}));
    add_opt(common_arg(
        {"--flash"}, {"--no-flash"},
        "use flash (\\"fast\\")",
        [](common_params & params, bool value) { params.flash = value; }
    ));
    add_opt(common_arg(
        {"--spec-type"}, "TYPE",
        "types",
        [](common_params & params, const std::string & value) { }
    ).set_examples({LLAMA_EXAMPLE_SERVER}));
    add_opt(common_arg(
        {"--only-cli"}, "N", "cli",
        [](common_params & params, int value) { }
    ).set_examples({LLAMA_EXAMPLE_CLI}));
    add_opt(common_arg(
        {"--draft-max"}, "N",
        "the argument has been removed. use --spec-draft-n-max",
        [](common_params & /*params*/, int /*value*/) {
            arg_removed("use --spec-draft-n-max");
        }
    ).set_examples({LLAMA_EXAMPLE_SERVER}));
}
"""
SPEC_CPP = """
const std::map<std::string, common_speculative_type> common_speculative_type_from_name_map = {
    {"none",          COMMON_SPECULATIVE_TYPE_NONE},
    {"draft-simple",  COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE},
};
"""
QUANTIZE_CPP = """
static const std::vector<quant_option> QUANT_OPTIONS = {
    { "Q4_K_M",   LLAMA_FTYPE_MOSTLY_Q4_K_M,   " 4.58G",  },
    { "Q8_0",     LLAMA_FTYPE_MOSTLY_Q8_0,     " 7.96G",  },
};
int main(int argc, char ** argv) {
    for (; arg_idx < argc && strncmp(argv[arg_idx], "--", 2) == 0; arg_idx++) {
        if (strcmp(argv[arg_idx], "--pure") == 0) {
            params.pure = true;
        } else if (strcmp(argv[arg_idx], "--imatrix") == 0) {
            imatrix_file = argv[++arg_idx];
        } else {
            usage(argv[0]);
        }
    }
}
"""
CONVERT_PY = '''
import argparse
def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--outfile", type=str)
    parser.add_argument("--outtype", type=str, choices=["f16", "q8_0"], default="f16")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("model", type=str, nargs="?")
    return parser.parse_args()
'''


def test_extractor_reads_a_llamacpp_tree(tmp_path):
    (tmp_path / "common").mkdir()
    (tmp_path / "tools" / "quantize").mkdir(parents=True)
    (tmp_path / "common" / "arg.cpp").write_text(ARG_CPP)
    (tmp_path / "common" / "speculative.cpp").write_text(SPEC_CPP)
    (tmp_path / "tools" / "quantize" / "quantize.cpp").write_text(QUANTIZE_CPP)
    (tmp_path / "convert_hf_to_gguf.py").write_text(CONVERT_PY)
    t = extract_flags.extract(tmp_path, "llama.cpp", "x")["programs"]
    server = t["llama-server"]
    assert server["options"]["-m"]["values"] == 1 and server["options"]["--model"]["line"] == 4
    assert server["options"]["--flash"]["values"] == 0 and "--no-flash" in server["options"]
    assert server["options"]["--spec-type"]["choices"] == ["none", "draft-simple"]
    assert "--only-cli" not in server["options"]  # not a server option
    assert server["removed"]["--draft-max"]["says"] == "use --spec-draft-n-max"
    assert t["llama-quantize"]["options"] == {"--imatrix": {"values": 1, "line": 10},
                                              "--pure": {"values": 0, "line": 8}}
    assert t["llama-quantize"]["positionals"][2]["choices"] == ["Q4_K_M", "Q8_0"]
    conv = t["convert_hf_to_gguf.py"]
    assert conv["options"]["--outtype"]["choices"] == ["f16", "q8_0"] and conv["options"]["--verbose"]["values"] == 0
    assert conv["positionals"][0]["name"] == "model"


def test_extractor_reads_python_trees(tmp_path):
    srt = tmp_path / "sglang" / "srt"
    (srt / "arg_groups" / "fields").mkdir(parents=True)
    (srt / "speculative").mkdir()
    (srt / "arg_groups" / "choices.py").write_text('QUANTIZATION_CHOICES = ["fp8", "awq"]\n')
    (srt / "arg_groups" / "fields" / "spec.py").write_text(
        "class Spec(msgspec.Struct):\n"
        '    model_path: A[str, Arg(help="p", aliases=["--model"])] = None\n'
        '    quantization: A[Optional[str], Arg(help="q", choices=QUANTIZATION_CHOICES)] = None\n'
        '    mode: A[Literal["a", "b"], "m"] = "a"\n'
        '    hidden: A[int, Arg(no_cli=True)] = 1\n'
        '    flag: A[bool, "f"] = False\n')
    (srt / "server_args.py").write_text(
        "class ServerArgs:\n    @staticmethod\n    def add_cli_args(parser):\n"
        '        parser.add_argument("--config", type=str)\n')
    (srt / "speculative" / "spec_info.py").write_text(
        "class SpeculativeAlgorithm(Enum):\n    EAGLE = auto()\n    STANDALONE = auto()\n    NONE = auto()\n")
    (srt / "arg_groups" / "fields" / "spec.py").write_text(
        (srt / "arg_groups" / "fields" / "spec.py").read_text()
        + '    speculative_algorithm: A[Optional[str], "algo"] = None\n')
    opts = extract_flags.extract(tmp_path, "sglang", "x")["programs"]["sglang.launch_server"]["options"]
    assert opts["--model"] is opts["--model-path"] and opts["--quantization"]["choices"] == ["fp8", "awq"]
    assert opts["--mode"]["choices"] == ["a", "b"] and opts["--flag"]["values"] == 0
    assert "--hidden" not in opts and "--config" in opts
    assert opts["--speculative-algorithm"]["choices"] == ["EAGLE", "STANDALONE"]
    vllm = tmp_path / "v"
    (vllm / "vllm" / "engine").mkdir(parents=True)
    (vllm / "vllm" / "config").mkdir()
    (vllm / "vllm" / "engine" / "arg_utils.py").write_text(
        "class EngineArgs:\n    @staticmethod\n    def add_cli_args(parser):\n"
        '        g = parser.add_argument_group()\n        g.add_argument("--speculative-config", **kw["x"])\n')
    (vllm / "vllm" / "config" / "speculative.py").write_text(
        'EagleTypes = Literal["eagle", "eagle3"]\nMethod = Literal["ngram", "draft_model", EagleTypes]\n'
        "class SpeculativeConfig:\n    method: Method | None = None\n    num_speculative_tokens: int = None\n"
        "    _private: int = 0\n")
    t = extract_flags.extract(vllm, "vllm", "x")["programs"]["vllm serve"]
    assert "--speculative-config" in t["options"]
    assert t["speculative_config"]["methods"] == ["ngram", "draft_model", "eagle", "eagle3"]
    assert list(t["speculative_config"]["keys"]) == ["method", "num_speculative_tokens"]


# ---------------------------------------------------------------------------------------------- run for real

WEIGHTS = """
import sys, torch
from transformers import AutoConfig, AutoModelForCausalLM
for i, d in enumerate(sys.argv[1:]):
    torch.manual_seed(i)
    AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(d)).save_pretrained(d)
"""


def test_the_transformers_script_runs_as_printed(tmp_path):
    """The printed script, unchanged but for the interpreter, on tiny random-weight models on CPU (a cached venv
    with torch and transformers 5.25.0, tests/enginevenv.py): it loads, drafts and prints text."""
    import subprocess

    from enginevenv import engine_venv
    from test_engines import make_spm

    from indexer.engines.setup import DIR, Setup, Source

    small = {"hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
             "num_hidden_layers": 2, "max_position_embeddings": 256, "bos_token_id": 1, "eos_token_id": 2}
    target, draft = (make_spm(tmp_path / name, config=small) for name in ("target", "draft"))
    python = engine_venv("transformers", "5.25.0")
    subprocess.run([str(python), "-c", WEIGHTS, str(target), str(draft)], check=True, capture_output=True)
    setup = Setup("transformers", "5.25.0", Source(str(target), DIR, "bf16"), Source(str(draft), DIR, "bf16"),
                  draft_tokens=2)
    steps = registry.ENGINES["transformers"].launch(setup)
    assert len(steps) == 1 and steps[0].startswith("python -c ")
    run = subprocess.run(f"{python} {steps[0].removeprefix('python ')}", shell=True, capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip(), run.stderr[-2000:]  # the decoded text


def test_catalog_copies_replace_the_conversion_chain(demo_catalog):
    """llama.cpp runs the target's and an HF draft's GGUF copies from the catalog at the estimated quantization;
    --quant without such a copy gives the whole chain; MLX converts to the estimated bits."""
    db = str(demo_catalog)
    drafts = {d["repo_id"]: d for d in run_query("lumen-ai/Lumen-7B-Instruct", engine="llama.cpp", db=db)["drafts"]}
    hf = drafts["lumen-ai/Lumen-0.5B-Instruct"]
    assert hf["launch"] == ("llama-server -hf lumen-ai/Lumen-7B-Instruct-GGUF:Q4_K_M -hfd "
                            f"lumen-ai/Lumen-0.5B-Instruct-GGUF:Q8_0 --spec-type draft-simple --spec-draft-n-max "
                            f"{hf['speedup']['draft_tokens']}")
    assert (hf["speedup"]["target_quant"], hf["speedup"]["draft_quant"]) == ("Q4_K_M", "Q8_0")
    q5 = run_query("lumen-ai/Lumen-7B-Instruct", engine="llama.cpp", db=db, speed=Options(target_quant="Q5_K_M"))
    steps = q5["drafts"][0]["setup"]["steps"]
    assert steps[:3] == ["hf download lumen-ai/Lumen-7B-Instruct --local-dir Lumen-7B-Instruct",
                         "python convert_hf_to_gguf.py Lumen-7B-Instruct --outfile Lumen-7B-Instruct-F16.gguf "
                         "--outtype f16",
                         "llama-quantize Lumen-7B-Instruct-F16.gguf Lumen-7B-Instruct-Q5_K_M.gguf Q5_K_M"]
    assert q5["drafts"][0]["speedup"]["target_quant"] == "Q5_K_M"
    mlx = run_query("lumen-ai/Lumen-7B-Instruct", engine="mlx", db=db, speed=Options(target_quant="8bit"))
    assert mlx["drafts"][0]["setup"]["steps"][0] == ("mlx_lm.convert --hf-path lumen-ai/Lumen-7B-Instruct -q "
                                                     "--q-bits 8 --mlx-path Lumen-7B-Instruct-8bit")


def test_a_gguf_repo_runs_its_file_at_the_type_asked(demo_catalog):
    """The catalog lists every model file of a GGUF repo (the demo's 7B: Q4_K_M and Q8_0): a type it has runs that
    file (-hf REPO:TAG, LM Studio's download at the tag), a type it lacks is made from the base model, said."""
    db, gguf = str(demo_catalog), "lumen-ai/Lumen-7B-Instruct-GGUF"
    files = catalog_files(db)
    assert files[gguf] == [("Lumen-7B-Instruct-Q4_K_M.gguf", "Q4_K_M"), ("Lumen-7B-Instruct-Q8_0.gguf", "Q8_0")]
    for engine in ("llama.cpp", "lmstudio"):
        asked = run_query(gguf, engine=engine, db=db, speed=Options(hardware="RTX 4090", target_quant="Q5_K_M"))
        best = asked["drafts"][0]
        steps, target = best["setup"]["steps"], best["setup"]["target"]
        assert ":Q5_K_M" not in best["launch"] and "'Q5_K_M')" not in best["launch"]
        assert steps[0] == "hf download lumen-ai/Lumen-7B-Instruct --local-dir Lumen-7B-Instruct"  # the base, made
        assert target["repo"] == "lumen-ai/Lumen-7B-Instruct" and best["speedup"]["target_quant"] == "Q5_K_M"
        assert steps[-1].endswith(f"  # {gguf}: the catalog lists no Q5_K_M file (only Q4_K_M, Q8_0); made from "
                                  "lumen-ai/Lumen-7B-Instruct") and target["note"]
        assert check(best["setup"], steps, files) == ([], [])
        present = run_query(gguf, engine=engine, db=db, speed=Options(hardware="RTX 4090", target_quant="q8_0"))
        best = present["drafts"][0]
        target = best["setup"]["target"]
        assert (target["repo"], target["kind"], target["tag"], target["quant"]) == (gguf, "gguf", "Q8_0", "Q8_0")
        assert "note" not in target and best["speedup"]["target_quant"] == "Q8_0"
        assert f"-hf {gguf}:Q8_0 " in best["launch"] or f"get('{gguf}', 'gguf', 'Q8_0')" in best["launch"]
        assert check(best["setup"], best["setup"]["steps"], files) == ([], [])
    mlx_name = run_query(gguf, engine="llama.cpp", db=db, speed=Options(hardware="RTX 4090", target_quant="8bit"))
    best = mlx_name["drafts"][0]  # no GGUF type of that name: the file read, said
    assert best["launch"].startswith(f"llama-server -hf {gguf}:Q4_K_M ") and "run at Q4_K_M" in best["launch"]
    assert best["speedup"]["target_quant"] == "Q4_K_M"
    as_listed = run_query(gguf, engine="llama.cpp", db=db, speed=Options(hardware="RTX 4090", target_quant="q4_k_m"))
    assert "note" not in as_listed["drafts"][0]["setup"]["target"]
    # the check catches a tag that picks no file the catalog lists, or one of another type
    setup = {**best["setup"], "target": {**best["setup"]["target"], "tag": "Q5_K_M", "quant": "Q5_K_M"}}
    assert any("lists no Q5_K_M file" in d for d in check(setup, [best["launch"].replace(":Q4_K_M", ":Q5_K_M")],
                                                          files)[1])
    setup = {**best["setup"], "target": {**best["setup"]["target"], "tag": "Q8_0", "quant": "Q4_K_M"}}
    assert check(setup, [best["launch"].replace(":Q4_K_M", ":Q8_0")], files)[1]


@pytest.mark.parametrize("target, hardware", [("lumen-ai/Lumen-7B-Instruct-GGUF", None),
                                              ("lumen-ai/Lumen-7B-Instruct", None),
                                              ("lumen-ai/Lumen-7B-Instruct-GGUF", "M4 Max")])
def test_check_launches_the_setup_it_estimates(demo_catalog, target, hardware):
    """`check` of a pair with a GGUF file prints llama.cpp's command of its first estimated device, named: the
    quantizations and the draft tokens of that figure, never a conversion to F16 or llama-server's own draft length."""
    from click.testing import CliRunner

    from indexer.cli import cli

    args = ["check", "--db", str(demo_catalog), target, "lumen-ai/Lumen-0.5B-Instruct-GGUF"]
    args += ["--hardware", hardware] if hardware else []
    res = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    first = next(f for f in res["verdicts"]["llama.cpp"]["speedups"] if f.get("estimate") is not None)
    assert res["launch"]["llama.cpp"] == first["launch"] and res["launch_on"]["llama.cpp"] == first["hardware"]
    assert f"--spec-draft-n-max {first['draft_tokens']}" in first["launch"]
    assert f"-hf lumen-ai/Lumen-7B-Instruct-GGUF:{first['target_quant']} " in first["launch"]
    assert check(first["setup"], first["setup"]["steps"], catalog_files(str(demo_catalog))) == ([], [])
    text = CliRunner().invoke(cli, args).output
    assert f"  launch (llama.cpp, as estimated on {first['hardware']}): {first['launch']}\n" in text


@pytest.mark.parametrize("engine, runs_at", [("transformers", "bf16"), ("mlx", "4bit"), ("lmstudio", "4bit")])
def test_a_quantization_the_engine_cannot_make_is_said_not_dropped(demo_catalog, engine, runs_at):
    """--quant fp8 where no FP8 copy exists and the steps cannot make one: the setup runs at the engine's usual
    type, estimated so, and the source's note says why as a comment after the last step (never silently)."""
    res = run_query("lumen-ai/Lumen-7B-Instruct", engine=engine, db=str(demo_catalog),
                    speed=Options(target_quant="fp8"))
    best = res["drafts"][0]
    target = best["setup"]["target"]
    assert target["quant"] == best["speedup"]["target_quant"] == runs_at
    assert target["note"] == ("lumen-ai/Lumen-7B-Instruct: no fp8 copy in the catalog, and these steps cannot make "
                              f"one; run at {runs_at}")
    assert best["setup"]["steps"][-1].endswith(f"  # {target['note']}") and best["launch"].count(target["note"]) == 1
    assert check(best["setup"], best["setup"]["steps"], catalog_files(str(demo_catalog))) == ([], [])
