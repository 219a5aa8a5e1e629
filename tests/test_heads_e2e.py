"""Speculator heads end to end: a crawl of the imitation (head repos + targets) through huggingface_hub, then
``indexer query --method ...``, ``indexer check TARGET HEAD`` and the site, against indexer/engines/heads.py.

Two hubs: one with small synthetic targets (runs without ../shared) and one with the corpus targets
(``build_heads_hub``), where every (head, target, engine) verdict is the designed one of tests/test_heads.py.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import CORPUS, MODELS, needs_corpus
from crawlkit import crawl, set_meta, write_repo
from test_heads import EXPECTED
from test_site import Site

from indexer.answer.query import ENGINES, run_query
from indexer.catalog.compute import compute
from indexer.catalog.db import upgrade
from indexer.cli import cli
from indexer.engines import heads
from indexer.engines.heads import parse_head
from indexer.hubsim import HubServer
from indexer.hubsim import heads as hubheads

TINY = "TinyLlama/TinyLlama-1.1B-Chat-v1.0"
TINY_FT = "someone/TinyLlama-1.1B-chat-finetune"
MTP = "someone/Tiny-DeepseekV3-MTP"
GLM_MTP = "someone/Tiny-Glm4Moe-Air-MTP"  # GLM-4.5-Air's 46 layers: transformers finds its MTP layer's weights
TINY_CFG = {"hidden_size": 2048, "num_hidden_layers": 22, "vocab_size": 32000, "num_attention_heads": 32}
HEAD_IDS = [h.repo_id for h in hubheads.HEADS]


def invoke(*args) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, [str(a) for a in args])
    return res.exit_code, res.stdout, res.stderr


def query_json(db, target, method, engine="sglang", *extra) -> tuple[int, dict | None, str]:
    code, out, err = invoke("query", "--db", db, "--target", target, "--method", method, "--engine", engine,
                            "--json", *extra)
    return code, (json.loads(out) if code == 0 else None), err


TARGETS = 4  # the small targets write_synthetic_hub writes beside the heads


def write_synthetic_hub(hub_dir):
    """The head repos, TinyLlama-shaped target, a fine-tune of it (base_model tags), a DeepSeek-V3 MTP config and a
    GLM-4.5-Air-deep one."""
    hubheads.write_head_repos(hub_dir)
    write_repo(hub_dir, TINY, config=TINY_CFG)
    write_repo(hub_dir, TINY_FT, config=TINY_CFG)
    write_repo(hub_dir, MTP, config={**TINY_CFG, "architectures": ["DeepseekV3ForCausalLM"],
                                     "model_type": "deepseek_v3", "num_nextn_predict_layers": 1})
    write_repo(hub_dir, GLM_MTP, config={**TINY_CFG, "num_hidden_layers": 46, "architectures": ["Glm4MoeForCausalLM"],
                                         "model_type": "glm4_moe", "num_nextn_predict_layers": 1})
    set_meta(hub_dir, TINY_FT, tags=hubheads.base_model_tags(TINY), baseModels=TINY)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """Head repos + four small targets (TinyLlama's shapes; a fine-tune of it; DeepSeek-V3 and GLM MTP configs)."""
    root = tmp_path_factory.mktemp("heads-e2e")
    hub_dir = root / "hub"
    write_synthetic_hub(hub_dir)
    db = str(root / "catalog.db")
    upgrade(db)
    with HubServer(str(hub_dir)) as hub:
        summary = crawl(db, hub)
        again = crawl(db, hub)
    compute(db)
    return db, summary, again


def test_crawl_keeps_heads_with_their_facts(synthetic):
    db, summary, again = synthetic
    assert summary["statuses"] == {"head": len(HEAD_IDS), "ok": TARGETS}, summary
    assert again["unchanged"] == len(HEAD_IDS) + 4
    con = sqlite3.connect(db)
    rows = {r[0]: r[1:] for r in con.execute("SELECT repo_id, status, reason, tokenizer_id FROM repos")}
    for head_id in HEAD_IDS:
        status, reason, tok = rows[head_id]
        assert status == "head" and reason.startswith("speculator head: ") and tok is None, (head_id, rows[head_id])
    stored = {r[0]: r[1:] for r in con.execute(
        "SELECT r.repo_id, h.algorithm, h.format, h.verifier, h.hidden_size, h.vocab_size, h.draft_vocab_size, "
        "h.aux_layer_ids, h.params FROM heads h JOIN repos r ON r.id = h.repo_pk")}
    assert set(stored) == set(HEAD_IDS)
    for spec in hubheads.HEADS:
        want = parse_head(spec.config, spec.repo_id)
        got = stored[spec.repo_id]
        assert got[:6] == (want.algorithm, want.format, want.verifier, want.hidden_size, want.vocab_size,
                           want.draft_vocab_size), spec.repo_id
        assert json.loads(got[6]) == want.aux_layer_ids and got[7] == want.params, spec.repo_id
    target = con.execute("SELECT hidden_size, num_hidden_layers, mtp_layers, mtp_key FROM repos WHERE repo_id = ?",
                         (MTP,)).fetchone()
    assert target == (2048, 22, 1, "num_nextn_predict_layers")
    # heads are never draft models: no compatibility class holds one
    assert con.execute("SELECT count(*) FROM repo_classes rc JOIN repos r ON r.id = rc.repo_pk "
                       "WHERE r.status = 'head'").fetchone()[0] == 0


def test_eagle3_exact_then_lineage_then_near_misses(synthetic):
    db = synthetic[0]
    exact = "heads-lab/sglang-EAGLE3-TinyLlama-1.1B-Chat-v1.0"
    for engine in ("sglang", "vllm"):
        code, res, _ = query_json(db, TINY, "eagle3", engine, "--all", "--near-misses")
        assert code == 0
        assert [(d["repo_id"], d["tier"]) for d in res["drafts"]] == [(exact, "exact")], res["drafts"]
        d = res["drafts"][0]
        assert set(d) >= {"repo_id", "reasons", "launch", "params"} and d["params"] > 0
        misses = {m["repo_id"]: (m["failed_check"], m["reason"]) for m in res["near_misses"]}
        assert misses["heads-lab/sglang-EAGLE3-Llama-2-13b-chat-hf"] == (
            "hidden_size", "trained for hidden size 5120; this target has 2048")
        assert misses["heads-lab/sglang-EAGLE3-Sheared-LLaMA-1.3B"][0] == "aux_layers"
        assert "beyond this target's 22 layers" in misses["heads-lab/sglang-EAGLE3-Sheared-LLaMA-1.3B"][1]
        code, ft, _ = query_json(db, TINY_FT, "eagle3", engine, "--all")
        assert [(d["repo_id"], d["tier"]) for d in ft["drafts"]] == [(exact, "lineage")]
        assert any("shares this target's base-model lineage" in r for r in ft["drafts"][0]["reasons"])
    sglang = query_json(db, TINY_FT, "eagle3", "sglang")[1]["drafts"][0]["launch"]
    assert sglang == (f"python -m sglang.launch_server --model-path {TINY_FT} --speculative-algorithm EAGLE3 "
                      f"--speculative-draft-model-path {exact} --speculative-num-steps 3 --speculative-eagle-topk 1 "
                      "--speculative-num-draft-tokens 4")
    vllm = query_json(db, TINY_FT, "eagle3", "vllm")[1]["drafts"][0]["launch"]
    assert shlex.split(vllm)[:3] == ["vllm", "serve", TINY_FT]
    assert json.loads(shlex.split(vllm)[4]) == {"method": "eagle3", "model": exact, "num_speculative_tokens": 3}


def test_dflash_eagle_mtp_and_ngram(synthetic):
    db = synthetic[0]
    dflash = "heads-lab/TinyLlama-1.1B-Chat-v1.0-DFlash-b16"
    for engine in ("sglang", "vllm"):
        res = query_json(db, TINY, "dflash", engine, "--all")[1]
        assert [(d["repo_id"], d["tier"]) for d in res["drafts"]] == [(dflash, "exact")]
        res = query_json(db, TINY, "eagle", engine, "--all", "--near-misses")[1]
        assert res["drafts"] == []  # the EAGLE-1 heads are 4096 wide: near misses by hidden size
        assert {m["failed_check"] for m in res["near_misses"]} == {"hidden_size"}
        mtp = query_json(db, MTP, "mtp", engine)[1]
        assert [d["repo_id"] for d in mtp["drafts"]] == [MTP]
        no_mtp = query_json(db, TINY, "mtp", engine, "--near-misses")[1]
        assert no_mtp["drafts"] == [] and no_mtp["near_misses"][0]["failed_check"] == "target_arch"
        ngram = query_json(db, TINY, "ngram", engine)[1]
        assert ngram["drafts"][0]["reasons"] == [heads.NGRAM_REASON] and "needs no draft" in heads.NGRAM_REASON
    assert query_json(db, MTP, "mtp", "sglang")[1]["drafts"][0]["launch"] == (
        f"python -m sglang.launch_server --model-path {MTP} --speculative-algorithm NEXTN --speculative-num-steps 3 "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4")
    assert query_json(db, MTP, "mtp", "vllm")[1]["drafts"][0]["launch"] == (
        f"vllm serve {MTP} --speculative-config '{{\"method\": \"mtp\", \"num_speculative_tokens\": 1}}'")
    code, out, _ = invoke("query", "--db", db, "--target", TINY, "--method", "ngram")
    assert code == 0 and "needs no draft model or head" in out


def test_transformers_runs_a_target_s_mtp_layers_with_use_mtp(synthetic):
    """transformers' generate(use_mtp=True): GLM-4.5-Air's depth fits (its class finds the MTP weights at layer 46);
    a 22-layer DeepSeek-V3 does not (DeepseekV3ForCausalLM finds them only at layer 61); TinyLlama has none."""
    from launchcheck import check

    db = synthetic[0]
    glm = query_json(db, GLM_MTP, "mtp", "transformers")[1]
    [d] = glm["drafts"]
    assert d["method"].startswith("use_mtp") and d["setup"]["method"] == "mtp" and d["setup"]["draft_tokens"] == 1
    assert "use_mtp=True" in d["launch"] and "assistant" not in d["launch"] and GLM_MTP in d["launch"]
    assert d["launch"] == d["speedup"]["launch"] and check(d["speedup"]["setup"], d["speedup"]["setup"]["steps"]) \
        == ([], [])
    deep = query_json(db, MTP, "mtp", "transformers", "--near-misses")[1]
    assert deep["drafts"] == [] and deep["near_misses"][0]["failed_check"] == "weights"
    assert "checkpoint layer(s) 61" in deep["note"] and "22" in deep["note"]
    tiny = query_json(db, TINY, "mtp", "transformers", "--near-misses")[1]
    assert tiny["near_misses"][0]["failed_check"] == "target_arch" and "no llama config" in tiny["note"]
    # older releases: the model types are that release's (ERNIE 4.5 MoE came in 5.25.0)
    code, old, _ = query_json(db, GLM_MTP, "mtp", "transformers", "--engine-version", "transformers==5.21.1")
    assert code == 0 and old["drafts"][0]["setup"]["release"] == "5.21.1"
    # --method all shows it for transformers, next to prompt lookup
    views = query_json(db, GLM_MTP, "all")[1]["engines"]
    assert views["transformers"]["mtp"]["fits"] and "use_mtp=True" in views["transformers"]["mtp"]["launch"]
    assert views["transformers"]["ngram"]["launch"]
    assert not query_json(db, MTP, "all")[1]["engines"]["transformers"]["mtp"]["fits"]
    code, out, _ = invoke("query", "--db", db, "--target", GLM_MTP, "--method", "all")
    assert code == 0 and "use_mtp=True" in out


def test_method_all_gives_every_option_per_engine(synthetic):
    db = synthetic[0]
    code, res, _ = query_json(db, MTP, "all")
    assert code == 0 and list(res["engines"]) == list(ENGINES)
    for engine in ("sglang", "vllm"):
        view = res["engines"][engine]
        assert view["mtp"]["fits"] and view["mtp"]["launch"]
        assert view["ngram"]["launch"]
        assert set(view["heads"]) == {"eagle", "eagle3", "dflash"}
    for engine, view in res["engines"].items():
        if engine in ("llama.cpp", "ollama"):  # heads from GGUF files, asked with a GGUF repo target
            assert view["heads"] is None and view["note"].startswith("runs speculator heads from GGUF files")
        elif engine not in ("sglang", "vllm"):
            assert view["heads"] is None and view["note"] == "loads no speculator heads"
            assert (view["mtp"] is not None) == (engine == "transformers")  # generate(use_mtp=True)
    code, out, _ = invoke("query", "--db", db, "--target", TINY, "--method", "all")
    assert code == 0
    assert "eagle3: heads-lab/sglang-EAGLE3-TinyLlama-1.1B-Chat-v1.0 [exact]" in out
    assert "--speculative-algorithm NGRAM" in out and '"method": "ngram"' in out


def test_method_all_compares_heads_with_drafts_by_the_estimate(synthetic):
    db = synthetic[0]
    code, res, _ = query_json(db, MTP, "all", "sglang", "--hardware", "H200", "--task", "code")
    assert code == 0
    for engine in ("sglang", "vllm"):
        view = res["engines"][engine]
        mtp = view["mtp"]["speedup"]
        assert mtp["hardware"] == "H200" and mtp["task"] == "code" and mtp["estimate"] > 0
        eagle3 = view["heads"]["eagle3"][0]["speedup"]
        assert eagle3["low"] <= eagle3["estimate"] <= eagle3["high"] and "eagle3 head" in eagle3["why"]
        assert view["heads"]["dflash"][0]["speedup"]["why"].endswith("no measured acceptance for dflash heads")
        best = view["best"]
        assert best["estimate"] == max(mtp["estimate"], eagle3["estimate"]) and best["compared"] == 2
    # every head's and MTP's command is its estimated setup's, valid against the release's flags
    from launchcheck import check

    commands = [(e["launch"], e["speedup"]) for v in res["engines"].values() if v.get("heads") is not None
                for e in [v["mtp"], *(h for hs in v["heads"].values() for h in hs)] if (e.get("speedup") or {})
                .get("setup")]
    assert len(commands) >= 4
    for launch, figure in commands:
        assert launch == figure["launch"] and check(figure["setup"], figure["setup"]["steps"]) == ([], []), launch
    # each head's estimate is at the draft-token count its launch runs
    assert res["engines"]["vllm"]["mtp"]["speedup"]["draft_tokens"] == 1
    assert res["engines"]["sglang"]["mtp"]["speedup"]["draft_tokens"] == 3
    code, out, _ = invoke("query", "--db", db, "--target", MTP, "--method", "all", "--hardware", "H200")
    assert code == 0 and "best expected on H200: " in out and "(of 2 compared)" in out
    code, res, _ = query_json(db, MTP, "all", "sglang", "--hardware", "M4 Max")
    assert "does not run on apple devices" in res["engines"]["sglang"]["mtp"]["speedup"]["why"]
    code, res, _ = query_json(db, TINY, "eagle3", "vllm")
    assert res["drafts"][0]["speedup"]["draft_tokens"] == 3
    # the command is the estimated setup's: asked at FP8, the target is quantized at load and estimated so
    code, fp8, _ = query_json(db, TINY, "eagle3", "vllm", "--quant", "fp8")
    entry = fp8["drafts"][0]
    assert entry["speedup"]["target_quant"] == "fp8" and entry["speedup"]["setup"]["target"]["quant"] == "fp8"
    assert entry["launch"] == entry["speedup"]["launch"] and " --quantization fp8 " in entry["launch"]
    assert " --quantization " not in res["drafts"][0]["launch"]
    head = res["drafts"][0]["repo_id"]
    code, out, _ = invoke("check", TINY, head, "--db", db, "--json", "--hardware", "H200")
    explained = json.loads(out)
    assert explained["kind"] == "head"
    assert explained["engines"]["vllm"]["speedup"] == {**res["drafts"][0]["speedup"], "hardware": "H200",
                                                       **{k: explained["engines"]["vllm"]["speedup"][k]
                                                          for k in ("estimate", "low", "high", "target_tok_s", "why",
                                                                    "setup")}}
    code, out, _ = invoke("check", TINY, head, "--db", db)
    assert code == 0 and "speed-up ≈" in out and "3 draft tokens" in out


def test_check_target_head(synthetic):
    db = synthetic[0]
    code, out, _ = invoke("check", "--db", db, TINY, "heads-lab/sglang-EAGLE3-Sheared-LLaMA-1.3B", "--json")
    assert code == 1
    res = json.loads(out)
    for engine in ("sglang", "vllm"):
        v = res["engines"][engine]
        assert not v["fits"] and v["failed_check"] == "aux_layers"
        assert [c["check"] for c in v["checks"]] == ["format", "target_arch", "hidden_size", "vocab_size",
                                                     "aux_layers"]
        assert all(c["source"] for c in v["checks"])
    code, out, _ = invoke("check", "--db", db, TINY_FT, "heads-lab/sglang-EAGLE3-TinyLlama-1.1B-Chat-v1.0",
                          "--engine", "vllm")
    assert code == 0 and "FITS (lineage)" in out and "lineage: trained for" in out
    # a speculators head on SGLang: the format is the failing check, whatever the shapes say
    code, out, _ = invoke("check", "--db", db, TINY, "heads-lab/Qwen2.5-0.5B-Instruct-speculator.eagle3")
    assert code == 1 and "NO FIT (format)" in out
    # a draft model still gets the draft-model check
    code, out, _ = invoke("check", "--db", db, TINY, TINY_FT, "--json")
    assert "verdicts" in json.loads(out)


def test_bad_method_input_is_one_line(synthetic):
    db = synthetic[0]
    for args, words in (
        (("--target", TINY, "--method", "eagle3", "--engine", "mlx"), "loads no speculator heads"),
        (("--target", "heads-lab/sglang-EAGLE3-TinyLlama-1.1B-Chat-v1.0", "--method", "eagle3"),
         "is a speculator head"),
        (("--target", "nobody/none", "--method", "eagle3"), "not in"),
    ):
        code, out, err = invoke("query", "--db", db, *args)
        assert code in (2, 3) and err.startswith("error: ") and words in err and err.count("\n") == 1, err
        assert "Traceback" not in err


def test_head_query_stays_light(synthetic):
    code = (
        "import sys\n"
        "from indexer.cli import cli\n"
        "for m in ('eagle3', 'mtp', 'all'):\n"
        "    try:\n"
        f"        cli(['query', '--target', {TINY!r}, '--method', m, '--db', {synthetic[0]!r}])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = [m for m in ('transformers', 'tokenizers', 'huggingface_hub', 'sqlalchemy', 'torch') "
        "if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert "HEAVY []" in out.stdout and "[exact]" in out.stdout, out.stdout[-2000:]


def test_site_offers_the_method_and_explains_heads(synthetic):
    db = synthetic[0]
    site = Site(db)
    status, got = site.json("/drafts.json", target=TINY, method="eagle3", engine="vllm", all="1")
    assert status == 200
    assert got == run_query(TINY, method="eagle3", engine="vllm", all_members=True, db=db)
    page = site.get("/drafts", target=TINY, method="eagle3").text
    assert '<option value="eagle3" selected>' in page
    assert "heads-lab/sglang-EAGLE3-TinyLlama-1.1B-Chat-v1.0" in page and "tier-exact" in page
    assert "trained for hidden size 5120; this target has 2048" in page  # near misses name the failing shape
    overview = site.get("/drafts", target=MTP, method="all").text
    assert 'id="overview"' in overview and "--speculative-algorithm NEXTN" in overview
    assert 'data-engine="vllm" data-option="mtp"' in overview
    assert 'data-engine="sglang" data-option="best"' in overview and "built-in MTP" in overview
    hw = site.get("/drafts", target=MTP, method="all", hardware="H200").text
    assert "expected on H200" in hw and 'class="speedup-cell"><span class="speedup' in hw
    status, got = site.json("/explain.json", target=TINY_FT, draft="heads-lab/sglang-EAGLE3-TinyLlama-1.1B-Chat-v1.0")
    assert status == 200 and got["kind"] == "head" and got["engines"]["sglang"]["tier"] == "lineage"
    page = site.get("/explain", target=TINY, draft="heads-lab/sglang-EAGLE3-Sheared-LLaMA-1.3B").text
    assert "head-explanation" in page and "does not fit: aux_layers" in page
    status, got = site.json("/drafts.json", target=TINY, method="eagle3", engine="mlx")
    assert status == 400 and "loads no speculator heads" in got["error"]


# ------------------------------------------------------------------------------ the corpus targets
@pytest.fixture(scope="module")
def corpus_catalog(tmp_path_factory):
    if not (CORPUS / "oracle.json").is_file():
        pytest.skip("../shared/corpus is absent")
    root = tmp_path_factory.mktemp("heads-e2e-corpus")
    built = hubheads.build_heads_hub(root / "hub", MODELS)
    db = str(root / "catalog.db")
    upgrade(db)
    with HubServer(str(root / "hub")) as hub:
        summary = crawl(db, hub)
    compute(db)
    return db, built, summary


@needs_corpus
def test_corpus_every_method_lists_exactly_the_fitting_heads(corpus_catalog):
    db, built, summary = corpus_catalog
    assert summary["statuses"].get("no_tokenizer", 0) == 0 and summary["statuses"]["head"] == len(built["heads"])
    algorithm = {s.repo_id: parse_head(s.config, s.repo_id).algorithm for s in hubheads.HEADS}
    for target in built["targets"]:
        for engine in heads.HEAD_ENGINES:
            for method, algorithms in heads.METHOD_ALGORITHMS.items():
                code, res, err = query_json(db, target, method, engine, "--all")
                assert code == 0, err
                want = {h: w[engine] for (h, t), w in EXPECTED.items()
                        if t == target and w[engine] in heads.TIERS and algorithm[h] in algorithms}
                got = {d["repo_id"]: d["tier"] for d in res["drafts"]}
                assert got == want, (target, engine, method)
                if "exact" in want.values():
                    assert res["drafts"][0]["tier"] == "exact", (target, engine, method)


def _documented_launch(cmd: str, engine: str, target: str) -> None:
    """SGLang: launch_server --model-path T --speculative-algorithm A [...]; vLLM: serve T --speculative-config
    JSON with method (and model / num_speculative_tokens), or serve a speculators head directly."""
    argv = shlex.split(cmd)
    if engine == "sglang":
        assert argv[:5] == ["python", "-m", "sglang.launch_server", "--model-path", target], cmd
        assert argv[5] == "--speculative-algorithm" and argv[6] in (
            "EAGLE", "EAGLE3", "DFLASH", "DSPARK", "NEXTN", "NGRAM", "STANDALONE"), cmd
        return
    assert argv[:2] == ["vllm", "serve"], cmd
    if len(argv) == 3:  # a speculators head whose verifier is the target
        return
    assert argv[2] == target and argv[3] == "--speculative-config", cmd
    cfg = json.loads(argv[4])
    assert cfg["method"] in ("eagle", "eagle3", "dflash", "dspark", "mtp", "ngram", "draft_model"), cmd
    assert isinstance(cfg["num_speculative_tokens"], int), cmd


@needs_corpus
def test_corpus_method_all_launches_in_documented_syntax(corpus_catalog):
    db, built, _ = corpus_catalog
    for target in built["targets"]:
        code, res, err = query_json(db, target, "all")
        assert code == 0, err
        for engine in heads.HEAD_ENGINES:
            view = res["engines"][engine]
            launches = [view["ngram"]["launch"]] + [hs[0]["launch"] for hs in view["heads"].values() if hs]
            launches += [view["mtp"]["launch"]] if view["mtp"]["fits"] else []
            launches += [view["drafts"][0]["launch"]] if view["drafts"] else []
            for cmd in launches:
                _documented_launch(cmd, engine, target)
    mtp = query_json(db, "heads-lab/TinyLlama-1.1B-DeepseekV3-MTP", "all")[1]["engines"]
    assert mtp["sglang"]["mtp"]["fits"] and mtp["vllm"]["mtp"]["fits"]
    nextn = query_json(db, "heads-lab/Qwen2.5-0.5B-Instruct-NextN", "all")[1]["engines"]
    assert not nextn["sglang"]["mtp"]["fits"] and not nextn["vllm"]["mtp"]["fits"]


def test_method_draft_is_todays_answer(synthetic):
    db = synthetic[0]
    assert run_query(TINY, db=db, method="draft", near_misses=True) == run_query(TINY, db=db, near_misses=True)
    code, out, _ = invoke("query", "--db", db, "--target", TINY)
    code2, out2, _ = invoke("query", "--db", db, "--target", TINY, "--method", "draft")
    assert code == code2 == 0 and out == out2 and out.startswith(f"target: {TINY}")


def test_heads_follow_their_config_across_crawls(tmp_path, catalog):
    """A head whose config becomes a plain model loses its heads row; a repo named like EAGLE that is no head
    ends as no_tokenizer after its config was read; a speculators head is recognised from the digest alone."""
    hub_dir = tmp_path / "hub"
    spec = hubheads.HEADS[1]  # speculators EAGLE-3: nothing in its name says "eagle"
    hubheads.write_head_repos(hub_dir, (spec,))
    not_head = hub_dir / "someone" / "eagle-llama-full"
    not_head.mkdir(parents=True)
    (not_head / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                                                      "num_hidden_layers": 22, "hidden_size": 2048}))
    with HubServer(str(hub_dir)) as hub:
        first = crawl(catalog, hub)
    con = sqlite3.connect(catalog)
    status = dict(con.execute("SELECT repo_id, status FROM repos"))
    assert status == {spec.repo_id: "head", "someone/eagle-llama-full": "no_tokenizer"}, first
    assert con.execute("SELECT count(*) FROM heads").fetchone()[0] == 1
    con.close()
    (hub_dir / spec.repo_id / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"],
                                                                     "model_type": "llama"}))
    with HubServer(str(hub_dir)) as hub:
        crawl(catalog, hub)
    con = sqlite3.connect(catalog)
    assert dict(con.execute("SELECT repo_id, status FROM repos"))[spec.repo_id] == "no_tokenizer"
    assert con.execute("SELECT count(*) FROM heads").fetchone()[0] == 0
    con.close()


def _without_speed(answer: dict) -> dict:
    return {**answer, "drafts": [{k: v for k, v in d.items() if k != "speedup"} for d in answer["drafts"]]}


def test_heads_on_postgresql_answer_as_on_sqlite(pg_url, synthetic, tmp_path, monkeypatch):
    """The same crawl into PostgreSQL: heads rows, the head answers and the head check equal SQLite's."""
    from indexer.answer.query import check

    monkeypatch.chdir(tmp_path)  # the PostgreSQL catalog's blob and token stores go under the working directory
    monkeypatch.setenv("INDEXER_TOKENS", str(tmp_path / "tokens"))
    upgrade(pg_url)
    hub_dir = tmp_path / "hub"
    write_synthetic_hub(hub_dir)
    with HubServer(str(hub_dir)) as hub:
        summary = crawl(pg_url, hub)
    assert summary["statuses"] == {"head": len(HEAD_IDS), "ok": TARGETS}
    # no compute: head answers read heads and repos only (compute's engine facts on PostgreSQL fail at the base
    # commit too: SELECT DISTINCT over the json column file_sets.files)
    sqlite_db = synthetic[0]
    for target, method, engine in ((TINY, "eagle3", "sglang"), (TINY_FT, "eagle3", "vllm"), (TINY, "dflash", "vllm"),
                                   (MTP, "mtp", "vllm")):
        kw = dict(method=method, engine=engine, all_members=True, near_misses=True)
        on_pg, on_sqlite = run_query(target, db=pg_url, **kw), run_query(target, db=sqlite_db, **kw)
        assert _without_speed(on_pg) == _without_speed(on_sqlite), (target, method)
        # both estimate the head; the figures differ only because the uncomputed PostgreSQL catalog sizes the
        # target from its parameter count alone (compute derives the config's shape into engine_facts)
        assert all(d["speedup"]["estimate"] for d in on_pg["drafts"] if method == "eagle3")
    head = "heads-lab/sglang-EAGLE3-TinyLlama-1.1B-Chat-v1.0"
    assert check(TINY_FT, head, db=pg_url) == check(TINY_FT, head, db=sqlite_db)  # the head check (explain_head)
