"""Issue 23: the engines' architecture rows (stateful and hybrid targets and drafts, sliding windows, context
lengths, multimodal targets), on configs written from the public config.json fields of current models, through
`check` (local directories and GGUF files), the catalog (crawl, compute, backfill of an older catalog) and `query`.
Runs without ../shared."""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner
from crawlkit import crawled_catalog, set_meta
from gguf.constants import GGUFValueType
from ggufkit import write_gguf
from test_engines import SPM_WORDS, make_spm

from indexer.answer.localdir import side_from_dir, side_from_gguf
from indexer.answer.query import QueryError, run_query
from indexer.catalog.compute import compute
from indexer.cli import cli
from indexer.engines import ENGINES, verdicts
from indexer.engines.archrules import SEVERITY, WRONG_OUTPUT
from indexer.engines.rules import check_pair
from indexer.vocab.archconfig import arch_facts

# The releases these tests were written at: the rows of the older releases stay reachable with
# --engine-version, and give the verdicts they gave. The newest releases' rows: the tests at the end.
OLD = {"transformers": "5.24.0", "vllm": "0.33.0", "mlx": "d78bf58e"}
V = len(SPM_WORDS)  # every model below shares make_spm's tokenizer, so the vocabulary rules all say "works"
QWEN35_LAYERS = ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 2

# Configs written from the public config.json fields of each model family (sizes shrunk; the fields the engines
# read are the real ones). A "text_config" entry gets the vocab_size there, as in the real files.
CONFIGS = {
    "qwen3_5_moe": {  # Qwen3.5 / Qwen3.6 MoE: gated DeltaNet + full attention, with a vision tower
        "model_type": "qwen3_5_moe", "architectures": ["Qwen3_5MoeForConditionalGeneration"],
        "vision_config": {"model_type": "qwen3_5_moe", "depth": 2, "hidden_size": 64},
        "text_config": {"model_type": "qwen3_5_moe_text", "num_hidden_layers": 8, "layer_types": QWEN35_LAYERS,
                        "max_position_embeddings": 262144, "full_attention_interval": 4,
                        "rope_parameters": {"rope_type": "default", "rope_theta": 10000000,
                                            "mrope_section": [11, 11, 10]}}},
    "qwen3_5": {  # the dense Qwen3.5, the natural draft of the MoE
        "model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
        "vision_config": {"model_type": "qwen3_5", "depth": 2, "hidden_size": 64},
        "text_config": {"model_type": "qwen3_5_text", "num_hidden_layers": 8, "layer_types": QWEN35_LAYERS,
                        "max_position_embeddings": 262144}},
    "qwen3_next": {"model_type": "qwen3_next", "architectures": ["Qwen3NextForCausalLM"], "num_hidden_layers": 48,
                   "full_attention_interval": 4, "max_position_embeddings": 262144},
    "falcon_h1": {"model_type": "falcon_h1", "architectures": ["FalconH1ForCausalLM"], "num_hidden_layers": 24,
                  "mamba_d_ssm": 1024, "max_position_embeddings": 16384},
    "jamba": {"model_type": "jamba", "architectures": ["JambaForCausalLM"], "num_hidden_layers": 32,
              "attn_layer_period": 8, "attn_layer_offset": 4, "max_position_embeddings": 262144},
    "granite_h": {"model_type": "granitemoehybrid", "architectures": ["GraniteMoeHybridForCausalLM"],
                  "num_hidden_layers": 4, "layer_types": ["mamba", "mamba", "mamba", "attention"],
                  "max_position_embeddings": 131072},
    "nemotron_h": {"model_type": "nemotron_h", "architectures": ["NemotronHForCausalLM"],
                   "hybrid_override_pattern": "M-M-M*-M-", "max_position_embeddings": 8192},
    "lfm2": {"model_type": "lfm2", "architectures": ["Lfm2ForCausalLM"], "num_hidden_layers": 4,
             "layer_types": ["conv", "conv", "full_attention", "conv"], "max_position_embeddings": 128000},
    "mamba": {"model_type": "mamba", "architectures": ["MambaForCausalLM"], "num_hidden_layers": 24},
    "falcon_mamba": {"model_type": "falcon_mamba", "architectures": ["FalconMambaForCausalLM"],
                     "num_hidden_layers": 64},
    "mamba2": {"model_type": "mamba2", "architectures": ["Mamba2ForCausalLM"], "num_hidden_layers": 48},
    "rwkv7": {"model_type": "rwkv7", "architectures": ["RWKV7ForCausalLM"], "num_hidden_layers": 24},
    "gemma3": {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"], "vision_config": {},
               "text_config": {"model_type": "gemma3_text", "num_hidden_layers": 34, "sliding_window": 1024,
                               "sliding_window_pattern": 6, "max_position_embeddings": 131072,
                               "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}},
    "gemma3_text": {"model_type": "gemma3_text", "architectures": ["Gemma3ForCausalLM"], "num_hidden_layers": 26,
                    "sliding_window": 512, "sliding_window_pattern": 6, "max_position_embeddings": 32768},
    "gemma3n": {"model_type": "gemma3n", "architectures": ["Gemma3nForConditionalGeneration"],
                "vision_config": {}, "audio_config": {},
                "text_config": {"model_type": "gemma3n_text", "num_hidden_layers": 5, "sliding_window": 512,
                                "layer_types": ["sliding_attention"] * 4 + ["full_attention"],
                                "max_position_embeddings": 32768}},
    "gemma4": {"model_type": "gemma4", "architectures": ["Gemma4ForConditionalGeneration"], "vision_config": {},
               "text_config": {"model_type": "gemma4_text", "num_hidden_layers": 6, "sliding_window": 1024,
                               "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
                               "max_position_embeddings": 262144}},
    "gpt_oss": {"model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "num_hidden_layers": 24,
                "sliding_window": 128, "layer_types": ["sliding_attention", "full_attention"] * 12,
                "max_position_embeddings": 131072,
                "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096}},
    "mistral_no_window": {"model_type": "mistral", "architectures": ["MistralForCausalLM"],
                          "num_hidden_layers": 32, "sliding_window": None, "max_position_embeddings": 32768},
    "mistral_v01": {"model_type": "mistral", "architectures": ["MistralForCausalLM"], "num_hidden_layers": 32,
                    "sliding_window": 4096, "max_position_embeddings": 32768},
    "llama31": {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32,
                "max_position_embeddings": 131072,
                "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                 "original_max_position_embeddings": 8192, "rope_type": "llama3"}},
    "llama_2k": {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 22,
                 "max_position_embeddings": 2048},
    "llama_linear": {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2,
                     "max_position_embeddings": 16384, "rope_scaling": {"factor": 4.0, "type": "linear"}},
}


def write_model(path, name: str):
    """make_spm's tokenizer with CONFIGS[name] as its config.json (the vocab_size where the real file has it)."""
    make_spm(path)
    cfg = json.loads(json.dumps(CONFIGS[name]))
    (cfg["text_config"] if "text_config" in cfg else cfg)["vocab_size"] = V
    (path / "config.json").write_text(json.dumps(cfg))
    return path


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    root = tmp_path_factory.mktemp("arch")
    return {name: side_from_dir(write_model(root / name, name)) for name in CONFIGS}


def outcomes(sides, t: str, d: str, releases: dict | None = None) -> dict[str, str]:
    return {e: v.outcome for e, v in verdicts(sides[t], sides[d], OLD if releases is None else releases).items()}


def said(sides, t: str, d: str, engine: str, releases: dict | None = None) -> str:
    return " ".join(verdicts(sides[t], sides[d], OLD if releases is None else releases)[engine].reasons)


# ---------------------------------------------------------------- the facts


def test_layer_kinds_state_and_windows_from_the_config_fields():
    f = arch_facts(CONFIGS["qwen3_5_moe"])
    assert (f.model_type, f.text_model_type, f.vision) == ("qwen3_5_moe", "qwen3_5_moe_text", True)
    assert f.layers == {"full_attention": 2, "linear_attention": 6} and f.state == ["gated_deltanet"] and f.hybrid
    assert arch_facts(CONFIGS["qwen3_next"]).layers == {"full_attention": 12, "linear_attention": 36}
    assert arch_facts(CONFIGS["jamba"]).layers == {"full_attention": 4, "mamba1": 28}
    assert arch_facts(CONFIGS["granite_h"]).state == ["mamba2"]
    assert arch_facts(CONFIGS["nemotron_h"]).layers == {"full_attention": 1, "mamba": 4}
    assert arch_facts(CONFIGS["lfm2"]).state == ["short_conv"]
    assert arch_facts(CONFIGS["mamba"]).hybrid is False and arch_facts(CONFIGS["mamba"]).state == ["mamba1"]
    assert arch_facts(CONFIGS["rwkv7"]).state == ["rwkv"]
    assert arch_facts(CONFIGS["falcon_h1"]).state == ["mamba2"]
    g = arch_facts(CONFIGS["gemma3"])
    assert g.sliding_window == 1024 and g.layers == {"full_attention": 5, "sliding_attention": 29} and not g.state
    assert arch_facts(CONFIGS["gpt_oss"]).sliding_window == 128
    assert arch_facts(CONFIGS["gemma3_text"]).layers == {"full_attention": 4, "sliding_attention": 22}
    assert arch_facts(CONFIGS["mistral_no_window"]).sliding_window is None
    assert arch_facts(CONFIGS["mistral_v01"]).sliding_window == 4096
    q = arch_facts({**CONFIGS["llama_2k"], "sliding_window": 32768, "use_sliding_window": False})
    assert q.sliding_window is None  # Qwen2's configs state a window and turn it off


def test_context_lengths_as_each_engine_derives_them():
    def ctx(name, **kw):
        f = arch_facts({**CONFIGS[name], **kw})
        return f.context_sglang, f.context_vllm

    assert ctx("llama31") == (131072, 131072)  # llama3 rope: neither multiplies
    assert ctx("llama_linear") == (65536, 65536)  # a linear factor: both multiply
    assert ctx("gpt_oss") == (131072, 131072)  # yarn with original_max_position_embeddings: neither
    # Gemma-3: transformers keys its rope parameters by layer type (no factor for SGLang), vLLM skips gemma3
    assert ctx("gemma3") == (131072, 131072)
    assert ctx("qwen3_5_moe") == (262144, 262144)  # read in the text sub-config
    assert ctx("mamba") == (2048, 2048)  # no context key: both engines' default
    assert arch_facts({"model_type": "gpt2", "n_positions": 1024}).context_sglang == 1024  # attribute_map alias
    # vLLM takes the smallest key and tokenizer_config's model_max_length as a cap; SGLang the first key
    f = arch_facts({"model_type": "x", "max_position_embeddings": 8192, "seq_length": 4096},
                   {"model_max_length": 2048})
    assert (f.context_sglang, f.context_vllm) == (4096, 2048)


# ---------------------------------------------------------------- the pair, on every engine


def test_qwen35_moe_target_with_a_qwen35_draft(sides):
    """The issue's report: check said works on transformers and MLX; both refuse."""
    got = outcomes(sides, "qwen3_5_moe", "qwen3_5")
    assert got["transformers"] == "refused" and got["mlx"] == "refused" and got["lmstudio"] == "refused"
    assert "assisted generation is not supported with stateful models" in said(sides, "qwen3_5_moe", "qwen3_5",
                                                                              "transformers")
    assert "requires a trimmable prompt cache" in said(sides, "qwen3_5_moe", "qwen3_5", "mlx")
    assert got["sglang"] == "works" and "runs the pair" in said(sides, "qwen3_5_moe", "qwen3_5", "sglang")
    assert got["vllm"] == "refused" and "draft models have no mamba layers" in said(sides, "qwen3_5_moe", "qwen3_5",
                                                                                  "vllm")
    for v in verdicts(sides["qwen3_5_moe"], sides["qwen3_5"], OLD).values():
        assert v.vocabulary in (None, "works", "refused")  # the vocabulary alone says what it said before


@pytest.mark.parametrize("target", ["qwen3_next", "falcon_h1", "granite_h", "nemotron_h", "mamba2"])
def test_gdn_and_mamba2_hybrids_run_on_vllm_and_sglang_not_on_transformers_or_mlx(sides, target):
    got = outcomes(sides, target, "llama_2k" if target != "nemotron_h" else "llama_2k")
    assert got["transformers"] == "refused" and got["mlx"] == "refused"
    assert got["vllm"] == "works"  # the draft is a plain transformer
    assert "one state slot per speculative token" in said(sides, target, "llama_2k", "vllm")


def test_mamba1_targets(sides):
    for t in ("mamba", "falcon_mamba"):
        got = outcomes(sides, t, "llama_2k")
        assert got["sglang"] == "refused" and "Mamba-1 (Falcon-Mamba) does not support" in said(sides, t, "llama_2k",
                                                                                             "sglang")
        assert got["vllm"] == WRONG_OUTPUT and got["transformers"] == "refused"
    # Jamba's Mamba-1 layers: vLLM has no speculative path for them; SGLang has no Jamba model (no row)
    assert outcomes(sides, "jamba", "llama_2k")["vllm"] == WRONG_OUTPUT


def test_lfm2_short_conv_is_not_stateful_for_transformers_but_not_trimmable_for_mlx(sides):
    got = outcomes(sides, "lfm2", "llama_2k")
    assert got["transformers"] == "works" and got["mlx"] == "refused" and got["vllm"] == "works"


def test_a_hybrid_draft_on_each_engine(sides):
    got = outcomes(sides, "llama31", "qwen3_next")
    assert got["vllm"] == "refused"
    for engine in ("transformers", "mlx"):  # the draft's cache is not checked: notes, the outcome stands
        assert got[engine] == "works" and "note:" in said(sides, "llama31", "qwen3_next", engine)
    assert "not established" in said(sides, "llama31", "qwen3_next", "sglang")


# ---------------------------------------------------------------- sliding windows on mlx-lm


@pytest.mark.parametrize("target, window", [("gemma3_text", 512), ("gemma3n", 512), ("gemma4", 1024),
                                            ("gpt_oss", 128)])
def test_sliding_window_targets_on_mlx_start_but_can_be_wrong(sides, target, window):
    v = verdicts(sides[target], sides["llama_2k"])["mlx"]
    assert v.outcome == WRONG_OUTPUT and v.vocabulary == "works" and v.accepted and not v.compatible
    assert f"window of {window} tokens" in v.reasons[0]
    assert ENGINES["mlx"].words[WRONG_OUTPUT]
    assert verdicts(sides[target], sides["llama_2k"])["transformers"].outcome == "works"  # past recording


def test_a_mistral_window_without_layer_types_does_not_slide_on_mlx(sides):
    """mlx-lm's llama model (Mistral loads it) slides only where layer_types says so (models/llama.py:157-170)."""
    for t in ("mistral_v01", "mistral_no_window"):
        assert outcomes(sides, t, "llama_2k")["mlx"] == "works"


def test_lmstudio_refuses_the_vision_gemma_and_can_be_wrong_on_the_text_one(sides):
    assert outcomes(sides, "gemma3", "llama_2k")["lmstudio"] == "refused"
    assert outcomes(sides, "gemma3_text", "llama_2k")["lmstudio"] == WRONG_OUTPUT


# ---------------------------------------------------------------- context length


def test_a_shorter_draft_context(sides):
    r = check_pair(sides["llama31"], sides["llama_2k"])
    assert r["verdicts"]["sglang"]["outcome"] == "refused" and r["verdicts"]["sglang"]["vocabulary_outcome"] == "works"
    assert "2048 is shorter than the target's 131072" in r["verdicts"]["sglang"]["reasons"][0]
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in r["fixes"]["sglang"] and "131072" in r["fixes"]["sglang"]
    vllm = r["verdicts"]["vllm"]
    assert vllm["outcome"] == "works" and any("lowers the target's max_model_len" in x for x in vllm["reasons"])
    assert [a["demoted"] for a in vllm["architecture"]] == [True]
    details = r["details"]["architecture"]
    assert details["target"]["context_sglang"] == 131072 and details["draft"]["context_vllm"] == 2048
    # the other way round nothing is shorter
    assert outcomes(sides, "llama_2k", "llama31")["sglang"] == "works"


def test_multimodal_target_on_vllm_runs_the_draft_text_only(sides):
    assert "text-only" in said(sides, "gemma3", "llama_2k", "vllm")
    assert outcomes(sides, "gemma3", "llama_2k")["vllm"] == "works"  # notes: text-only, and a shorter context
    assert "text-only" not in said(sides, "gemma3_text", "llama_2k", "vllm")


def test_every_rule_row_names_its_source_and_a_known_outcome():
    for name, e in ENGINES.items():
        for rows in (e.arch_rules, e.gguf_arch_rules):
            for r in rows:
                assert r.outcome in (None, "refused", WRONG_OUTPUT), (name, r.check)
                assert r.source and any(x in r.source for x in (".py:", ".cpp:")), (name, r.check)
    assert SEVERITY.index(WRONG_OUTPUT) > SEVERITY.index("useless")


# ---------------------------------------------------------------- GGUF headers (llama.cpp)


def test_gguf_header_arch_facts_and_the_llamacpp_checkpoint_note(tmp_path):
    u32 = GGUFValueType.UINT32
    t = write_gguf(tmp_path / "qwen35.gguf", arch="qwen35",
                   extra=[("qwen35.context_length", 262144, u32), ("qwen35.block_count", 4, u32)])
    d = write_gguf(tmp_path / "llama.gguf", arch="llama", extra=[("llama.context_length", 4096, u32)])
    ts, ds = side_from_gguf(t), side_from_gguf(d)
    assert ts.arch.gguf_arch == "qwen35" and ts.arch.state == ["gated_deltanet"] and ts.arch.context_sglang == 262144
    v = verdicts(ts, ds)["llama.cpp"]
    assert v.outcome == "works" and any("will use checkpoints" in x for x in v.reasons)
    back = " ".join(verdicts(ds, ts)["llama.cpp"].reasons)
    assert ds.arch.state == [] and "draft's state is checkpointed" in back and "will use checkpoints" not in back


# ---------------------------------------------------------------- through the catalog and query

B = 10**9
HUB = {  # repo id -> (CONFIGS key, params)
    "qwen/Qwen3.5-MoE-35B": ("qwen3_5_moe", 35 * B),
    "qwen/Qwen3.5-2B": ("qwen3_5", 2 * B),
    "meta/Llama-3.1-8B": ("llama31", 8 * B),
    "tiny/Llama-2k-0.5B": ("llama_2k", B // 2),
    "tiny/Llama-Linear-0.6B": ("llama_linear", B * 6 // 10),  # 65536 context: shorter than 131072 too
    "google/gemma-3-1b": ("gemma3_text", B),
    "tiny/Llama-2k-0.1B": ("llama_2k", B // 10),
}


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    root = tmp_path_factory.mktemp("arch-hub")
    hub = root / "hub"
    for repo_id, (name, params) in HUB.items():
        write_model(hub / repo_id, name)
        set_meta(hub, repo_id, params=params)
    db = crawled_catalog(root, hub)
    return db


def drafts(db, target, engine, **kw):
    kw.setdefault("release", OLD.get(engine))
    return run_query(target, engine=engine, db=db, **kw)


def test_query_refuses_a_stateful_target_where_check_does(catalog):
    for engine in ("transformers", "mlx"):
        res = drafts(catalog, "qwen/Qwen3.5-MoE-35B", engine)
        assert res["drafts"] == [] and res["refused"], engine
    # SGLang runs the hybrid target (vLLM refuses the hybrid Qwen3.5 draft, keeps the plain ones)
    sglang = [d["repo_id"] for d in drafts(catalog, "qwen/Qwen3.5-MoE-35B", "sglang")["drafts"]]
    assert "qwen/Qwen3.5-2B" in sglang
    vllm = [d["repo_id"] for d in drafts(catalog, "qwen/Qwen3.5-MoE-35B", "vllm", all_members=True)["drafts"]]
    assert "qwen/Qwen3.5-2B" not in vllm and "tiny/Llama-2k-0.5B" in vllm


def test_query_sglang_drops_shorter_context_drafts_and_names_the_fix(catalog):
    res = drafts(catalog, "meta/Llama-3.1-8B", "sglang", near_misses=True)
    # every smaller draft but the Qwen3.5 (262144) has a shorter context than Llama-3.1's 131072
    assert [d["repo_id"] for d in res["drafts"]] == ["qwen/Qwen3.5-2B"]
    misses = {m["repo_id"]: m for m in res["near_misses"]}
    assert {"tiny/Llama-2k-0.5B", "tiny/Llama-2k-0.1B", "tiny/Llama-Linear-0.6B"} <= set(misses)
    m = misses["tiny/Llama-2k-0.5B"]
    assert m["outcome"] == "refused" and m["failed_check"] == "shorter draft context"
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in m["fix"]
    assert res["summary"]["cheapest_fix"]["failed_check"] == "shorter draft context"


def test_query_vllm_ranks_shorter_context_drafts_after_the_others(catalog):
    got = drafts(catalog, "qwen/Qwen3.5-MoE-35B", "vllm")["drafts"]
    # 262144 target: every plain draft is shorter, so all are demoted and keep their outcome
    assert got and all(d["demoted"] and d["outcome"] == "works" for d in got)
    got = drafts(catalog, "tiny/Llama-Linear-0.6B", "vllm", all_members=True)["drafts"]
    order = [(d["repo_id"], d["demoted"]) for d in got]
    assert order.index(("meta/Llama-3.1-8B", False)) < order.index(("tiny/Llama-2k-0.5B", True))
    assert any("lowers the target's max_model_len" in r for d in got if d["demoted"] for r in d["reasons"])


def test_query_mlx_lists_sliding_window_drafts_as_wrong_output(catalog):
    got = drafts(catalog, "google/gemma-3-1b", "mlx")["drafts"]
    assert got and {d["outcome"] for d in got} == {WRONG_OUTPUT}
    assert "window of 512 tokens" in got[0]["reasons"][1]  # right after why its class accepts it


@pytest.mark.parametrize("releases", [OLD, {}], ids=["old releases", "newest releases"])
def test_check_and_query_all_agree_for_every_pair_and_engine(catalog, releases):
    """One answer: `query --all` lists a draft as works exactly when `check` says it works, at each release."""
    from indexer.answer.rule_inputs import side_from_catalog

    sides = {r: side_from_catalog(r, db=catalog) for r in HUB}
    for engine in ENGINES:
        for t in HUB:
            try:
                listed = {d["repo_id"]: d["outcome"] for d in drafts(catalog, t, engine, all_members=True,
                                                                      release=releases.get(engine))["drafts"]}
            except QueryError:  # no class on this engine (llama.cpp: the converter refuses)
                listed = {}
            want = {d: v.outcome for d in HUB if d != t
                    if (v := verdicts(sides[t], sides[d], releases)[engine]).accepted
                    and v.vocabulary in (None, "works")}
            assert listed == want, (engine, t)


def test_the_summary_probe_agrees_with_the_listed_drafts_where_rows_refuse_some(catalog):
    """The summary line's yes/no per engine (``has_candidates``: a few members unranked, then more, then the ranked
    pages) is whether ``query`` lists any draft, here where the engines' rows refuse or demote some of them."""
    from indexer.answer.members import has_candidates
    from indexer.answer.pipeline import drafts as listed_drafts
    from indexer.answer.scope import engine_at, resolve
    from indexer.catalog.reader import Reader

    refusing = 0
    with Reader(catalog) as cat:
        for engine in ENGINES:
            for t in HUB:
                try:
                    full = resolve(cat, t, engine_at(engine, None))
                except QueryError:
                    continue
                listed = bool(listed_drafts(cat, full, None, 10))
                assert has_candidates(cat, resolve(cat, t, engine_at(engine, None), probe_only=True)) == listed, \
                    (engine, t)
                refusing += full.arch.per_draft
    assert refusing  # rows that read the draft were in play


def test_check_json_shows_the_architecture_details(catalog):
    res = CliRunner().invoke(cli, ["check", "--db", catalog, "meta/Llama-3.1-8B", "tiny/Llama-2k-0.5B", "--json"])
    data = json.loads(res.stdout)
    arch = data["details"]["architecture"]
    assert arch["target"]["context_sglang"] == 131072 and arch["draft"]["context_sglang"] == 2048
    assert data["verdicts"]["sglang"]["architecture"][0]["check"] == "shorter draft context"


def test_an_older_catalog_gets_the_facts_on_the_next_compute_without_a_crawl(catalog):
    with sqlite3.connect(catalog) as conn:
        before = dict(conn.execute("SELECT id, arch FROM engine_facts").fetchall())
        conn.execute("UPDATE engine_facts SET arch = NULL")  # as revision 0009 leaves an older catalog
    stats = compute(catalog)
    assert stats["engine_facts"]["arch_backfilled"] == len(before)
    with sqlite3.connect(catalog) as conn:
        after = dict(conn.execute("SELECT id, arch FROM engine_facts").fetchall())
    assert {k: json.loads(v) for k, v in after.items()} == {k: json.loads(v) for k, v in before.items()}
    assert compute(catalog)["engine_facts"]["arch_backfilled"] == 0


def test_gguf_heads_are_read_from_the_header_and_launched_with_their_spec_type(tmp_path):
    u32, i32 = GGUFValueType.UINT32, GGUFValueType.INT32
    target = write_gguf(tmp_path / "qwen35-mtp.gguf", arch="qwen35",
                        extra=[("qwen35.nextn_predict_layers", 1, u32), ("qwen35.block_count", 4, u32)])
    eagle = write_gguf(tmp_path / "eagle3-head.gguf", arch="eagle3",
                       extra=[("eagle3.target_layers", [2, 10, 20], GGUFValueType.ARRAY, i32),
                              ("eagle3.target_hidden_size", 4096, u32)])
    ts, ds = side_from_gguf(target), side_from_gguf(eagle)
    assert ts.arch.head == {"kind": "mtp", "spec_type": "draft-mtp", "embedded": True, "nextn_predict_layers": 1}
    assert ds.arch.head["kind"] == "eagle3" and ds.arch.head["target_layers"] == [2, 10, 20]
    r = check_pair(ts, ds)
    assert r["launch"]["llama.cpp"].endswith("--spec-type draft-eagle3")
    said_ = " ".join(r["verdicts"]["llama.cpp"]["reasons"])
    assert "EAGLE3 head" in said_ and "target_hidden_size 4096" in said_ and "own MTP layers" in said_
    plain = write_gguf(tmp_path / "llama.gguf", arch="llama")
    assert check_pair(ts, side_from_gguf(plain))["launch"]["llama.cpp"].endswith("--spec-type draft-simple")
    assert side_from_gguf(plain).arch.head is None


# ---------------------------------------------------------------- GGUF heads on llama.cpp (--method)

U32, I32 = GGUFValueType.UINT32, GGUFValueType.INT32


def _gguf(hub, repo_id, file, arch, keys, tags, **kw):
    extra = [(f"{arch}.{k}", v, U32) if isinstance(v, int) else (f"{arch}.{k}", v, GGUFValueType.ARRAY, I32)
             for k, v in keys.items()]
    write_gguf(hub / repo_id / file, arch=arch, extra=extra, **kw)
    set_meta(hub, repo_id, tags=["gguf", *tags])


@pytest.fixture(scope="module")
def gguf_catalog(tmp_path_factory):
    root = tmp_path_factory.mktemp("gguf-heads")
    hub = root / "hub"
    shape = {"block_count": 32, "embedding_length": 4096}
    _gguf(hub, "ggml/Qwen3.5-9B-GGUF", "Qwen3.5-9B-Q4_K_M.gguf", "qwen35",
          {**shape, "nextn_predict_layers": 1, "context_length": 262144}, ["base_model:quantized:qwen/Qwen3.5-9B"])
    _gguf(hub, "ggml/Llama-3.1-8B-GGUF", "Llama-3.1-8B-Q4_K_M.gguf", "llama", shape,
          ["base_model:quantized:meta/Llama-3.1-8B"])
    _gguf(hub, "ggml/gemma-4-E4B-GGUF", "gemma-4-E4B-Q4_K_M.gguf", "gemma4", {"block_count": 42,
          "embedding_length": 2560}, ["base_model:quantized:google/gemma-4-E4B"])
    # heads carry no vocabulary here, so they are never draft models (class members)
    _gguf(hub, "heads/Llama-3.1-8B-EAGLE3-GGUF", "Llama-3.1-8B-EAGLE3-Q8_0.gguf", "eagle3",
          {"target_layers": [2, 15, 29], "target_hidden_size": 4096}, ["base_model:meta/Llama-3.1-8B"], tokens=[],
          model=None, pre=None)
    _gguf(hub, "heads/Deep-EAGLE3-GGUF", "Deep-EAGLE3-Q8_0.gguf", "eagle3",
          {"target_layers": [2, 30, 60], "target_hidden_size": 4096}, [], tokens=[], model=None, pre=None)
    _gguf(hub, "heads/Wide-EAGLE3-GGUF", "Wide-EAGLE3-Q8_0.gguf", "eagle3",
          {"target_layers": [2, 15, 29], "target_hidden_size": 5120}, [], tokens=[], model=None, pre=None)
    _gguf(hub, "heads/Qwen3.5-9B-DFlash-GGUF", "Qwen3.5-9B-DFlash-Q8_0.gguf", "dflash",
          {"target_layers": [1, 8, 16, 24, 30], "block_size": 16}, ["base_model:qwen/Qwen3.5-9B"], tokens=[],
          model=None, pre=None)
    _gguf(hub, "heads/gemma-4-E4B-assistant-GGUF", "gemma-4-E4B-assistant-Q8_0.gguf", "gemma4-assistant",
          {"embedding_length_out": 2560}, ["base_model:google/gemma-4-E4B"], tokens=[], model=None, pre=None)
    db = crawled_catalog(root, hub)
    return db


def test_llamacpp_self_mtp_from_the_target_header(gguf_catalog):
    res = run_query("ggml/Qwen3.5-9B-GGUF", engine="llama.cpp", method="mtp", db=gguf_catalog)
    assert [d["repo_id"] for d in res["drafts"]] == ["ggml/Qwen3.5-9B-GGUF"]
    assert res["drafts"][0]["launch"] == "llama-server -hf ggml/Qwen3.5-9B-GGUF:Q4_K_M --spec-type draft-mtp"
    none = run_query("ggml/Llama-3.1-8B-GGUF", engine="llama.cpp", method="mtp", db=gguf_catalog, near_misses=True)
    assert none["drafts"] == [] and none["near_misses"][0]["failed_check"] == "mtp"


def test_llamacpp_eagle3_heads_fit_by_header_keys(gguf_catalog):
    res = run_query("ggml/Llama-3.1-8B-GGUF", engine="llama.cpp", method="eagle3", db=gguf_catalog,
                    near_misses=True)
    assert [(d["repo_id"], d["tier"]) for d in res["drafts"]] == [("heads/Llama-3.1-8B-EAGLE3-GGUF", "lineage")]
    assert res["drafts"][0]["launch"] == ("llama-server -hf ggml/Llama-3.1-8B-GGUF:Q4_K_M -hfd "
                                          "heads/Llama-3.1-8B-EAGLE3-GGUF:Q8_0 --spec-type draft-eagle3")
    misses = {m["repo_id"]: m["failed_check"] for m in res["near_misses"]}
    assert misses == {"heads/Deep-EAGLE3-GGUF": "aux_layers", "heads/Wide-EAGLE3-GGUF": "hidden_size"}
    # gemma4 exports layer inputs too, but the shapes differ; a target whose graph does not (none here) would fail
    # target_arch
    dflash = run_query("ggml/Qwen3.5-9B-GGUF", engine="llama.cpp", method="dflash", db=gguf_catalog)
    assert [d["repo_id"] for d in dflash["drafts"]] == ["heads/Qwen3.5-9B-DFlash-GGUF"]
    assert all(d["launch"].endswith("--spec-type draft-dflash") for d in dflash["drafts"])


def test_llamacpp_gemma4_assistant_is_an_mtp_drafter(gguf_catalog):
    res = run_query("ggml/gemma-4-E4B-GGUF", engine="llama.cpp", method="mtp", db=gguf_catalog, near_misses=True)
    assert [d["repo_id"] for d in res["drafts"]] == ["heads/gemma-4-E4B-assistant-GGUF"]
    assert res["drafts"][0]["launch"].endswith("-hfd heads/gemma-4-E4B-assistant-GGUF:Q8_0 --spec-type draft-mtp")
    # the assistant is for gemma4 only
    other = run_query("ggml/Llama-3.1-8B-GGUF", engine="llama.cpp", method="mtp", db=gguf_catalog, near_misses=True)
    assert ("heads/gemma-4-E4B-assistant-GGUF", "target_arch") in {(m["repo_id"], m["failed_check"])
                                                                    for m in other["near_misses"]}


def test_every_llamacpp_command_carries_a_spec_type(gguf_catalog):
    for target in ("ggml/Qwen3.5-9B-GGUF", "ggml/Llama-3.1-8B-GGUF", "ggml/gemma-4-E4B-GGUF"):
        for method in ("mtp", "eagle3", "dflash"):
            res = CliRunner().invoke(cli, ["query", "--db", gguf_catalog, "--target", target, "--engine", "llama.cpp",
                                           "--method", method, "--json"])
            assert res.exit_code == 0, res.output
            for d in json.loads(res.stdout)["drafts"]:
                assert " --spec-type draft-" in d["launch"]
    text = CliRunner().invoke(cli, ["query", "--db", gguf_catalog, "--target", "ggml/Qwen3.5-9B-GGUF", "--engine",
                                    "llama.cpp", "--method", "mtp"])
    assert text.exit_code == 0 and "$ llama-server -hf ggml/Qwen3.5-9B-GGUF:Q4_K_M --spec-type draft-mtp" in text.output
    bad = CliRunner().invoke(cli, ["query", "--db", gguf_catalog, "--target", "heads/Deep-EAGLE3-GGUF", "--engine",
                                   "llama.cpp", "--method", "eagle3"])
    assert bad.exit_code != 0 and bad.output.startswith("error:") and "not a target" in bad.output


# ---------------------------------------------------------------- Ollama


def test_ollama_takes_no_draft_model_for_any_pair(sides, gguf_catalog):
    v = verdicts(sides["llama31"], sides["llama_2k"])["ollama"]
    assert v.outcome == "refused" and "--spec-type draft-mtp" in v.reasons[0]
    res = run_query("ggml/Llama-3.1-8B-GGUF", engine="ollama", db=gguf_catalog)
    assert res["drafts"] == [] and "no separate draft models" in res["refused"]


def test_ollama_mtp_and_dflash_drafters_with_their_modelfile(gguf_catalog):
    mtp = run_query("ggml/Qwen3.5-9B-GGUF", engine="ollama", method="mtp", db=gguf_catalog)["drafts"]
    assert [d["repo_id"] for d in mtp] == ["ggml/Qwen3.5-9B-GGUF"]
    assert "FROM hf.co/ggml/Qwen3.5-9B-GGUF:Q4_K_M\\nPARAMETER draft_num_predict 4" in mtp[0]["launch"]
    assert any("draft_num_predict" in r for r in mtp[0]["reasons"])  # off by default without it
    dflash = run_query("ggml/Qwen3.5-9B-GGUF", engine="ollama", method="dflash", db=gguf_catalog)["drafts"]
    assert [d["repo_id"] for d in dflash] == ["heads/Qwen3.5-9B-DFlash-GGUF"]
    cmd = dflash[0]["launch"]
    assert cmd.startswith("hf download heads/Qwen3.5-9B-DFlash-GGUF --include '*Q8_0*.gguf' --local-dir draft")
    assert "DRAFT ./draft" in cmd and "ollama create qwen3.5-9b-gguf -f Modelfile" in cmd
    assert cmd.endswith("--spec-type draft-dflash")
    assistant = run_query("ggml/gemma-4-E4B-GGUF", engine="ollama", method="mtp", db=gguf_catalog)["drafts"]
    assert [d["repo_id"] for d in assistant] == ["heads/gemma-4-E4B-assistant-GGUF"]
    res = CliRunner().invoke(cli, ["query", "--db", gguf_catalog, "--target", "ggml/Llama-3.1-8B-GGUF", "--engine",
                                   "ollama", "--method", "eagle3"])
    # a non-DFlash DRAFT runs as MTP, so EAGLE-3 heads run elsewhere
    assert res.exit_code == 2 and "runs no eagle3 heads (only mtp, dflash" in res.output and "llama.cpp" in res.output


def test_ollama_verdict_on_a_dflash_draft_file(tmp_path):
    t = write_gguf(tmp_path / "qwen35.gguf", arch="qwen35", extra=[("qwen35.block_count", 32, U32)])
    d = write_gguf(tmp_path / "dflash.gguf", arch="dflash",
                   extra=[("dflash.target_layers", [1, 8, 16], GGUFValueType.ARRAY, I32)])
    v = verdicts(side_from_gguf(t), side_from_gguf(d))["ollama"]
    assert v.outcome == "works" and "--spec-type draft-dflash" in v.reasons[0]


def test_a_config_without_a_context_key_gets_its_class_default_as_the_engines_read_it():
    """Both engines read transformers' config object: LlamaConfig's max_position_embeddings default (2048) beats
    tokenizer_config's larger model_max_length cap."""
    f = arch_facts({"model_type": "llama", "num_hidden_layers": 2}, {"model_max_length": 4096})
    assert (f.context_sglang, f.context_vllm) == (2048, 2048)


# ---------------------------------------------------------------- the newest releases


NEW = {}  # the default: each engine's newest release


def test_transformers_5_25_starts_the_rolled_back_hybrids(sides):
    """5.25.0 removed the stateful refusal: hybrids with per-token state history start; 5.24.0 refused them."""
    for target in ("qwen3_next", "falcon_h1", "granite_h", "nemotron_h"):
        got = outcomes(sides, target, "llama_2k", NEW)
        assert got["transformers"] == "works", target
        assert "records each token's recurrent state" in said(sides, target, "llama_2k", "transformers", NEW)
        assert outcomes(sides, target, "llama_2k")["transformers"] == "refused"  # at 5.24.0
    # seen differing from plain greedy decoding when run on tiny float64 models (tests/engine_harness.py)
    for target in ("qwen3_5_moe", "mamba2"):
        assert outcomes(sides, target, "llama_2k", NEW)["transformers"] == WRONG_OUTPUT, target
    assert outcomes(sides, "qwen3_5_moe", "qwen3_5", NEW)["transformers"] == WRONG_OUTPUT


def test_transformers_5_25_mamba1_is_wrong_output_and_the_rest_as_read(sides):
    for t in ("mamba", "falcon_mamba", "jamba"):
        assert outcomes(sides, t, "llama_2k", NEW)["transformers"] == WRONG_OUTPUT, t
        assert "does not take the past state" in said(sides, t, "llama_2k", "transformers", NEW)
    v = verdicts(sides["mamba"], sides["llama_2k"])["transformers"]
    assert v.version == "5.25.0" and "modeling_mamba.py:418-419" in " ".join(v.reasons)


def test_transformers_rows_for_types_without_a_history():
    """The rows 5.25.0 still refuses or marks, by model_type (the facts need only model_type)."""
    from indexer.vocab.archconfig import ArchFacts

    e = ENGINES["transformers"]
    for model_type, want in (("rwkv", "refused"), ("xlstm", "refused"), ("deepseek_v4", "refused"),
                             ("zamba", "refused"), ("zaya", "refused"), ("recurrent_gemma", "refused"),
                             ("qwen3_5_moe", WRONG_OUTPUT), ("kimi_linear", None), ("olmo_hybrid", WRONG_OUTPUT)):
        facts = ArchFacts(model_type=model_type)
        rows = [r for r in e.arch_rules if r.side == "target" and r.when(facts, None)]
        assert [r.outcome for r in rows] == [want], model_type
        old = [r for r in e.at("5.24.0").arch_rules if r.side == "target" and r.when(facts, None)]
        assert [r.outcome for r in old] == ["refused"], model_type


def test_check_says_where_the_releases_disagree(sides):
    r = check_pair(sides["qwen3_next"], sides["llama_2k"])
    v = r["verdicts"]["transformers"]
    assert v["version"] == "5.25.0" and v["outcome"] == "works"
    assert v["by_version"] == {"5.21.1": "refused", "5.22.2": "refused", "5.23.0": "refused", "5.24.0": "refused",
                               "5.25.0": "works"}
    assert v["versions"] == "refused on transformers \u2264 5.24.0, works from 5.25.0"
    assert r["verdicts"]["sglang"]["by_version"] is None and r["verdicts"]["sglang"]["version"] == "0.5.23"
    old = check_pair(sides["qwen3_next"], sides["llama_2k"], {"transformers": "5.24.0"})
    assert old["verdicts"]["transformers"]["version"] == "5.24.0" and old["verdicts"]["transformers"]["outcome"] \
        == "refused" and old["verdicts"]["transformers"]["by_version"] == v["by_version"]
    from indexer.answer.render import render_check

    text = render_check(r)
    assert "transformers 5.25.0" in text and "by version: refused on transformers \u2264 5.24.0, works from 5.25.0" \
        in text


def test_mlx_0_32_2_new_cache_types(tmp_path):
    from indexer.vocab.archconfig import ArchFacts

    e, old = ENGINES["mlx"], ENGINES["mlx"].at("d78bf58e")
    for model_type in ("bailing_hybrid", "bailing_moe_v3", "gear", "kimi_k3", "olmo_hybrid"):
        facts = ArchFacts(model_type=model_type)
        assert [r.outcome for r in e.arch_rules if r.side == "target" and r.when(facts, None)][:1] == ["refused"]
        assert not [r for r in old.arch_rules if r.check == "non-trimmable target cache" and r.when(facts, None)]
    for model_type in ("muse_glimmer", "muse_spark", "spark2_5"):
        facts = ArchFacts(model_type=model_type, sliding_window=4096)
        assert [r.outcome for r in e.arch_rules if r.when(facts, None)] == [WRONG_OUTPUT], model_type
        assert not [r for r in old.arch_rules if r.when(facts, None)], model_type


def test_query_answers_the_stateful_target_at_each_release(catalog):
    new = run_query("qwen/Qwen3.5-MoE-35B", engine="transformers", db=catalog)
    assert new["version"] == "5.25.0" and new["drafts"] and not new["refused"]
    assert new["by_version"] == {"5.21.1": "refused", "5.22.2": "refused", "5.23.0": "refused", "5.24.0": "refused",
                                 "5.25.0": WRONG_OUTPUT}
    old = run_query("qwen/Qwen3.5-MoE-35B", engine="transformers", db=catalog, release="5.24.0")
    assert old["version"] == "5.24.0" and old["drafts"] == [] and old["refused"]
    with pytest.raises(QueryError) as e:
        run_query("qwen/Qwen3.5-MoE-35B", engine="transformers", db=catalog, release="4.0")
    assert "known: 5.21.1, 5.22.2, 5.23.0, 5.24.0, 5.25.0" in e.value.message
    res = CliRunner().invoke(cli, ["query", "--target", "qwen/Qwen3.5-MoE-35B", "--db", catalog, "--engine",
                                   "transformers", "--engine-version", "transformers==5.24.0"])
    assert res.exit_code == 0 and "transformers assisted generation 5.24.0" in res.output
    assert "by version: refused on transformers \u2264 5.24.0, wrong_output from 5.25.0" in res.output
