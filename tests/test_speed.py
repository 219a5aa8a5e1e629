"""The expected speed-up: names, the cost model's physics, the fit against published measurements, and
what check and query say with it (through the CLI, on the demo catalog and on a hub of real model shapes)."""

from __future__ import annotations

import json
import math
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from crawlkit import crawl, set_meta

from indexer.cli import cli
from indexer.engines import ENGINES, speed_profile
from indexer.errors import BadInput
from indexer.hubsim import HubServer
from indexer.speed import calibrate, hardware, model, quant
from indexer.speed.facts import shape_from_config

MEASUREMENTS = Path(__file__).resolve().parents[2] / "shared" / "speedups" / "measurements.json"
needs_measurements = pytest.mark.skipif(not MEASUREMENTS.exists(), reason="../shared/speedups is absent")


def _benchmark_models():
    """benchmarks/speedup_models.py, loaded by path (benchmarks/ on sys.path would shadow the gguf package)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "speedup_models.py"
    spec = importlib.util.spec_from_file_location("speedup_models", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["speedup_models"] = module
    spec.loader.exec_module(module)
    return module


_benchmark_models()

TARGET, DRAFT = "lumen-ai/Lumen-7B-Instruct", "lumen-ai/Lumen-0.5B-Instruct"


def cli_run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


# ---- names as people write them ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("M4 Max", "M4 Max"), ("m4 max", "M4 Max"), ("Apple M3 Pro", "M3 Pro"), ("RTX-4090", "RTX 4090"),
    ("NVIDIA RTX 3090", "RTX 3090"), ("h100", "H100 SXM"), ("A100 80GB", "A100 80GB"), ("Ryzen 9 7950X (CPU)",
                                                                                        "Ryzen 9 7950X"),
    ("cpu", "cpu"), ("Radeon Pro W7900", "Radeon Pro W7900"), ("RX 9070 XT", "RX 9070 XT"), ("L40S", "L40S"),
])
def test_hardware_names(name, expected):
    assert hardware.lookup(name).name == expected


def test_every_issue_device_is_listed():
    for name in ("M1", "M1 Pro", "M1 Max", "M1 Ultra", "M2 Pro", "M2 Max", "M2 Ultra", "M3 Pro", "M3 Max", "M3 Ultra",
                 "M4 Pro", "M4 Max", "RTX 3060", "RTX 3090", "RTX 4090", "RTX 5090", "A100 80GB", "H100 SXM", "H200",
                 "L40S", "Radeon Pro W7900", "RX 9070 XT", "Ryzen 9 7950X", "cpu"):
        d = hardware.lookup(name)
        assert d.bandwidth_gbps > 0 and d.tflops > 0 and d.source


def test_unknown_hardware_names_the_closest():
    with pytest.raises(BadInput, match=r"unknown hardware 'M4 Maxx'; closest: M4 Max"):
        hardware.lookup("M4 Maxx")


# Every name the shared measurements' README says --quant should take.
QUANT_NAMES = """F32 F16 BF16 Q8_0 Q6_K Q5_K_M Q5_K_S Q5_0 Q4_K_M Q4_K_S Q4_K Q4_0 Q3_K_L Q3_K_M Q3_K_S Q2_K IQ4_XS
IQ4_NL IQ3_M IQ2_XS Q4_K_L Q6_K_L UD-Q4_K_XL UD-Q3_K_XL 3bit 4bit 6bit 8bit mxfp4 bf16 fp16 fp8 int8 int4 awq gptq
nvfp4 MOSTLY_Q4_K_M""".split()


@pytest.mark.parametrize("name", QUANT_NAMES)
def test_quant_names(name):
    q = quant.lookup(name)
    assert 1 < q.bpw <= 32


def test_quant_bits_order():
    bpw = [quant.lookup(n).bpw for n in ("F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q3_K_M", "Q2_K")]
    assert bpw == sorted(bpw, reverse=True)


def test_quant_from_config():
    assert quant.from_config({"quantization": {"group_size": 64, "bits": 4}}).name == "4bit"
    assert quant.from_config({"quantization_config": {"quant_method": "awq", "bits": 4}}).name == "int4"
    assert quant.from_config({"quantization_config": {"quant_method": "fp8"}}).name == "fp8"
    assert quant.from_config({"model_type": "llama"}) is None


def test_every_gguf_file_type_has_a_quantization():
    """Each of gguf-py's LlamaFileType names (general.file_type) reads as a quantization, gpt-oss's MXFP4_MOE and
    the new Q1_0 included; only GUESSED says nothing."""
    from gguf.constants import LlamaFileType

    assert [t.name for t in LlamaFileType if quant.from_gguf_file_type(t.name) is None] == ["GUESSED"]
    assert quant.from_gguf_file_type("MOSTLY_MXFP4_MOE").family == quant.IQUANT
    assert quant.lookup("nf4").name == quant.lookup("bnb-4bit").name == "int4"


def test_mxfp4_is_each_runtime_s_own():
    """GGUF's MXFP4, MLX's mxfp4 and gpt-oss's checkpoints share a name: each runtime estimates with its own, not
    with the engine's default (a gpt-oss checkpoint as bf16 would read four times its bytes)."""
    from indexer.answer.speedup import RUNTIME_FAMILIES, _quant_for

    assert quant.from_config({"quantization_config": {"quant_method": "mxfp4"}}).family == quant.INT4
    assert quant.from_config({"quantization": {"bits": 4, "mode": "mxfp4", "group_size": 32}}).family == quant.AFFINE
    named = quant.lookup("MXFP4")
    for runtime, families in RUNTIME_FAMILIES.items():
        for declared, override in ((named, None), (None, named)):
            q = _quant_for(declared, override, "Q4_K_M" if runtime == model.GGML else "bf16", runtime)
            assert q.bpw == 4.25 and q.family in families, (runtime, q)


# ---- the physics --------------------------------------------------------------------------------------------------

def qwen_7b():
    return model.Shape(params=int(7.62e9), layers=28, hidden=3584, vocab=152064, tied=False, kv_per_token=2 * 28 * 512)


def qwen_05b():
    return model.Shape(params=int(494e6), layers=24, hidden=896, vocab=151936, tied=True, kv_per_token=2 * 24 * 128)


def setup(device="M4 Max", runtime=model.GGML, tq="Q4_K_M", dq="Q8_0", **kw):
    return model.Setup(hardware.lookup(device), runtime, quant.lookup(tq), quant.lookup(dq), **kw)


def test_verify_costs_at_least_a_step_and_grows_with_tokens():
    s, t = setup(), qwen_7b()
    one = model.forward_seconds(t, s.target_quant, 1, s)
    times = [model.forward_seconds(t, s.target_quant, n, s) for n in (1, 2, 5, 9)]
    assert times == sorted(times) and times[0] == one


def test_a_quantized_target_pays_less_than_a_float_one():
    """The measured pattern: the same pair gains far more with an F16 target than with a Q4_K_M one."""
    kw = dict(relation=model.SIBLING)
    f16 = model.estimate(qwen_7b(), qwen_05b(), setup(tq="F16", task="code"), **kw).estimate
    q4 = model.estimate(qwen_7b(), qwen_05b(), setup(tq="Q4_K_M", task="code"), **kw).estimate
    assert f16 > 1.5 * q4


def test_moe_verify_reads_the_union_of_experts():
    moe = model.Shape(params=int(35e9), active=int(3e9), layers=40, experts=256, experts_per_token=8)
    s = setup(device="RTX 3090", tq="UD-Q4_K_XL")
    dense = model.Shape(params=int(3e9), layers=40)

    def growth(shape):  # what a verify of 8 tokens adds to a step of one
        return model.forward_seconds(shape, s.target_quant, 8, s) - model.forward_seconds(shape, s.target_quant, 1, s)

    p = model._Pass(moe, s.target_quant, s, model.CALIBRATION)
    union = 256 * (1 - (1 - 8 / 256) ** 8)  # distinct experts 8 tokens route to, 8 each at random
    assert (p.read(8) - p.read(1)) / p.per_expert == pytest.approx(union - 8)
    assert growth(moe) - growth(dense) == pytest.approx((p.read(8) - p.read(1)) * (p.seconds_per_param + p.unpack))


def test_useless_vocabulary_is_slower():
    e = model.estimate(qwen_7b(), qwen_05b(), setup(), relation=model.SIBLING, agreement=0.0)
    assert e.estimate < 1.0 and e.low <= e.estimate <= e.high


def test_leviathan_is_the_limit_without_costs():
    """With no per-layer, per-round or verify arithmetic cost, the model is Leviathan's S(α, γ, c)."""
    cal = {**model.CALIBRATION, "tau": {k: 0.0 for k in model.CALIBRATION["tau"]},
           "overhead": {k: 0.0 for k in model.CALIBRATION["overhead"]},
           "kappa": {k: 0.0 for k in model.CALIBRATION["kappa"]}}
    t, d = model.Shape(params=int(7e9), layers=32), model.Shape(params=int(7e8), layers=32)
    s = setup(tq="F16", dq="F16", draft_tokens=4)
    got = model.best_speedup(t, d, 0.8, s, cal)[0]
    c = 0.1  # the draft reads a tenth of the target's bytes
    assert got == pytest.approx(model.tokens_per_round(0.8, 4) / (4 * c + 1), rel=1e-6)


def test_no_size_means_no_figure():
    from indexer.answer.speedup import Options, estimate

    out = estimate(ENGINES["llama.cpp"], {"shape": None}, {"shape": qwen_05b()}, Options("M4 Max"))
    assert out == [{"hardware": "M4 Max", "estimate": None, "why": "speed-up unknown: no size for the target"}]


def test_an_engine_that_does_not_run_on_the_device_says_so():
    from indexer.answer.speedup import Options, estimate

    out = estimate(ENGINES["vllm"], {"shape": qwen_7b()}, {"shape": qwen_05b()}, Options("M4 Max"))
    assert out[0]["estimate"] is None and "does not run on apple" in out[0]["why"]


def test_shape_from_a_real_config():
    cfg = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584, "num_hidden_layers": 28,
           "num_attention_heads": 28, "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064,
           "tie_word_embeddings": False}
    s = shape_from_config(cfg)
    assert 7.0e9 < s.params < 8.0e9 and s.layers == 28 and s.kv_per_token == 2 * 28 * 4 * 128 and s.tied is False


# ---- llama-server's draft gate -----------------------------------------------------------------------------------

def test_the_gate_reproduces_the_published_p_min_run():
    """llama.cpp#25908 (Qwen3-4B, Qwen3-0.6B, n_max 64): p_min 0 accepted 96 of 1378 drafted; p_min 0.75 gave
    accepted/drafted 0.90 and an accept length of 3.7-3.9 at n_max 8, 16 and 64 alike."""
    from indexer.speed.gate import DraftGate, drafted_acceptance, round_of

    alpha = 0.817  # the per-token α of the p_min 0 run: α / (1 - α) = 96 / (1378 / 64) accepted a round
    assert drafted_acceptance(alpha, 64, None) == pytest.approx(96 / 1378, abs=0.005)
    for n in (8, 16, 64):
        assert drafted_acceptance(alpha, n, DraftGate(0.75)) == pytest.approx(0.90, abs=0.025)
    assert 3.7 <= round_of(alpha, 64, DraftGate(0.75)).tokens <= 3.9


def test_a_gate_at_p_min_zero_drafts_the_full_count():
    from indexer.speed.gate import DraftGate, round_of

    r = round_of(0.7, 5, DraftGate(0.0))
    assert r.tokens == pytest.approx(model.tokens_per_round(0.7, 5)) and r.drafted == 5 and r.verify == {6: 1.0}


def test_a_gate_stops_drafts_early_and_yields_fewer_tokens():
    from indexer.speed.gate import DraftGate, round_of

    gated, full = round_of(0.7, 16, DraftGate(0.75, keeps_unsure=True)), round_of(0.7, 16, None)
    assert gated.drafted < 4 < full.drafted and gated.tokens < full.tokens
    assert sum(gated.verify.values()) == pytest.approx(1.0) and max(gated.verify) == 17


def test_a_draft_shorter_than_n_min_is_a_plain_step():
    from indexer.speed.gate import DraftGate, round_of

    assert round_of(0.8, 3, DraftGate(0.0, n_min=5)) == round_of(0.8, 3, DraftGate(0.9, n_min=5))
    r = round_of(0.8, 3, DraftGate(0.0, n_min=5))
    assert (r.tokens, r.passes, r.drafted, r.verify) == (1.0, 0.0, 0.0, {1: 1.0})
    short = round_of(0.8, 8, DraftGate(0.5, n_min=5))  # drafts under 5 thrown away: those rounds verify 1 token
    assert 0 < short.verify[1] < 1 and all(k >= 6 for k in short.verify if k != 1)


def test_llama_servers_reported_acceptance_inverts_to_the_per_token_alpha():
    from indexer.speed.gate import DraftGate, drafted_acceptance, per_token_alpha

    kept = DraftGate(0.75, keeps_unsure=True)
    assert per_token_alpha(drafted_acceptance(0.72, 16, kept), 16, kept) == pytest.approx(0.72, abs=1e-3)
    assert per_token_alpha(0.9, 64, DraftGate(0.75)) is None  # a dropping gate reports ~0.9 at any α


@needs_measurements
def test_published_llama_server_rows_run_their_builds_gate():
    from speedup_models import SHAPES, relation_of

    by_id = {c.row["id"]: c for c in calibrate.load_cases(MEASUREMENTS, SHAPES, relation_of, speed_profile)}
    sweep = by_id["draftbench-7B-FP16-0.5B-FP16"].setup
    assert (sweep.gate.p_min, sweep.gate.keeps_unsure, sweep.draft_tokens) == (0.75, True, 16)
    assert by_id["lcpp-10664-m2pro-q25-7b-05b-pmin0.6"].setup.gate.p_min == 0.6
    assert by_id["thc1006-3090-qwen36-35b-a3b-draftspec-codejson"].setup.gate.n_min == 2
    assert by_id["specbench-sps-a100-7b"].setup.gate is None  # transformers drafts its count


# ---- mixture-of-experts routing ----------------------------------------------------------------------------------

@needs_measurements
def test_a_small_active_moe_decodes_at_its_published_speed():
    """thc1006's RTX 3090 baseline (Qwen3.6-35B-A3B, UD-Q4_K_XL, llama-server): 139.22 tok/s, where bytes alone
    would give more than twice that."""
    from speedup_models import SHAPES, relation_of

    case = next(c for c in calibrate.load_cases(MEASUREMENTS, SHAPES, relation_of, speed_profile)
                if c.row["id"] == "thc1006-3090-qwen36-35b-a3b-draftspec-codejson")
    assert "139.22" in case.row["quote"]
    routed = model._Pass(case.target, case.setup.target_quant, case.setup, model.CALIBRATION)
    bytes_only = model._Pass(case.target, case.setup.target_quant, case.setup, {**model.CALIBRATION,
                                                                                "kernel_latency": 0.0})
    assert 1 / routed.seconds(1) == pytest.approx(139.22, rel=0.1)
    assert 1 / bytes_only.seconds(1) > 2 * 139.22


def test_moe_routing_is_paid_once_a_pass_and_not_by_dense_models():
    s = model.Setup(hardware.lookup("M2 Ultra"), model.GGML, quant.lookup("Q6_K"), quant.lookup("Q8_0"))
    moe = model.Shape(params=int(30.5e9), active=int(3.3e9), layers=48, hidden=2048, vocab=151936, tied=False,
                      experts=128, experts_per_token=8, kv_per_token=2 * 48 * 4 * 128)
    dense = model.Shape(params=int(3.3e9), layers=48, hidden=2048, vocab=151936, tied=False)
    off = {**model.CALIBRATION, "kernel_latency": 0.0}
    routing = 48 * (8 + model.MOE_EXTRA_KERNELS) * model.KERNEL_LATENCY
    for n in (1, 9):
        got = model.forward_seconds(moe, s.target_quant, n, s) - model.forward_seconds(moe, s.target_quant, n, s, off)
        assert got == pytest.approx(routing)
    assert model.forward_seconds(dense, s.target_quant, 1, s) == model.forward_seconds(dense, s.target_quant, 1, s, off)


# ---- what the draft was tuned for ---------------------------------------------------------------------------------

def test_a_draft_tuned_apart_from_its_target_accepts_less_than_its_sibling():
    """A base draft for a chat target, and a draft that does not reason for a reasoning target, read as family:
    their α is below the same draft's as a sibling, and a draft tuned as its target keeps the sibling's."""
    s = model.Setup(hardware.lookup("M4 Max"), model.GGML, quant.lookup("Q4_K_M"), quant.lookup("Q8_0"))
    target = model.Shape(params=int(32.8e9), layers=64, hidden=5120, vocab=152064, tied=False)
    draft = model.Shape(params=int(1.54e9), layers=28, hidden=1536, vocab=151936, tied=True)
    sibling = model.estimate(target, draft, s, relation=model.SIBLING)
    for tuned in (model.tuning(True, False, False, False), model.tuning(True, True, True, False)):
        apart = model.estimate(target, draft, s, relation=model.SIBLING, tuned_apart=tuned)
        assert apart.acceptance < sibling.acceptance and apart.estimate < sibling.estimate
        assert f"family draft: {tuned}" in apart.why
    assert model.tuning(True, True, True, True) is None and model.tuning(True, None, None, None) is None
    assert model.tuning(True, True, False, True) is None  # a reasoning draft for a plain target: not known to hurt
    # a relation already below sibling stays what it is
    assert model.kin(model.OTHER, model.BASE_FOR_CHAT) == model.OTHER


def test_thinking_tokens_say_a_tokenizer_reasons():
    from indexer.answer.speedup import tuned_apart, writes_thinking

    qwq = [{"id": 151667, "content": "<think>", "special": False}, {"id": 151668, "content": "</think>"}]
    instruct = [{"id": 151644, "content": "<|im_start|>", "special": True}]
    assert writes_thinking(qwq) is True and writes_thinking(instruct) is False and writes_thinking(None) is None
    t = {"chat": True, "reasons": writes_thinking(qwq)}
    assert tuned_apart(t, {"chat": True, "reasons": writes_thinking(instruct)}) == model.PLAIN_FOR_REASONING
    assert tuned_apart(t, {"chat": True, "reasons": True}) is None
    assert tuned_apart({"chat": True, "reasons": False}, {"chat": False, "reasons": False}) == model.BASE_FOR_CHAT


def test_check_gives_a_base_draft_less_than_its_instruct_sibling(demo_catalog):
    """The demo's Lumen-0.5B is a base model without the chat tokens: for the chat target it reads as family, below
    what its size alone would give a sibling, and below the Instruct draft of its size."""
    out = {}
    for draft in ("lumen-ai/Lumen-0.5B", "lumen-ai/Lumen-0.5B-Instruct"):
        code, text = cli_run("check", TARGET, draft, "--db", str(demo_catalog), "--json", "--engine", "llama.cpp",
                             "--hardware", "M4 Max")
        assert code == 0, text
        out[draft] = json.loads(text)["verdicts"]["llama.cpp"]["speedup"]
    base, instruct = out["lumen-ai/Lumen-0.5B"], out["lumen-ai/Lumen-0.5B-Instruct"]
    assert model.BASE_FOR_CHAT in base["why"] and "sibling draft" in instruct["why"]
    as_sibling = model.acceptance(490_000_000, model.SIBLING, "chat", quant.lookup("Q4_K_M"), quant.lookup("Q8_0"))[0]
    assert base["acceptance"] < as_sibling - 0.03 and base["acceptance"] < instruct["acceptance"] - 0.03
    assert base["estimate"] < instruct["estimate"]
    code, text = cli_run("query", "--target", TARGET, "--engine", "llama.cpp", "--db", str(demo_catalog), "--json",
                         "--hardware", "M4 Max")
    ranked = [d["repo_id"] for d in json.loads(text)["drafts"]]
    assert ranked.index("lumen-ai/Lumen-0.5B") > ranked.index("lumen-ai/Lumen-0.5B-Instruct")


def test_the_catalog_reads_a_tokenizers_added_tokens(demo_catalog):
    """What says whether a draft reasons: its tokenizer's added tokens, read for many drafts at once."""
    from indexer.answer.speedup import catalog_facts, writes_thinking
    from indexer.catalog.reader import Reader
    from indexer.catalog.repofacts import added_tokens, target_row

    with Reader(str(demo_catalog), needs="repos") as reader:
        ids = [target_row(reader, r)["tokenizer_id"] for r in (TARGET, "lumen-ai/Lumen-0.5B")]
        added = added_tokens(reader, ids)
        facts = catalog_facts(reader, TARGET)
    assert "<|im_start|>" in {t["content"] for t in added[ids[0]]}  # the chat tokens: the base lacks them
    assert "<|im_start|>" not in {t["content"] for t in added[ids[1]] or []}
    assert facts["chat"] is True and facts["reasons"] is False and writes_thinking(added[ids[0]]) is False


# ---- against the published measurements ---------------------------------------------------------------------------

def test_a_hybrid_config_says_which_layers_keep_a_state():
    """A catalog's hybrid target (Qwen3-Next: every 4th layer full attention) is known as one to the calibration of
    `indexer measure`'s rows, as the benchmark's hand-written shapes are."""
    from indexer.vocab.archconfig import arch_facts

    base = {"hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2,
            "head_dim": 256, "vocab_size": 151936, "intermediate_size": 5120}
    from indexer.speed.facts import shape_from_facts

    hybrid = shape_from_facts(arch_facts({**base, "model_type": "qwen3_next", "full_attention_interval": 4}).speed)
    dense = shape_from_facts(arch_facts({**base, "model_type": "qwen3"}).speed)
    assert hybrid.state_layers == 36 and hybrid.kv_per_token == 2 * 12 * 2 * 256
    assert dense.state_layers is None and dense.kv_per_token == 2 * 48 * 2 * 256


@needs_measurements
def test_a_hybrid_target_does_not_set_the_factors_of_the_targets_the_model_describes():
    """Rows of a target with recurrent-state layers (Qwen3.6-35B-A3B: 0.46-0.48x at full acceptance, a verify the
    model does not describe) are left out of the cost fit: adding them changes no factor, where the same rows taken
    as an attention target's would move the K-quant verify cost."""
    from speedup_models import SHAPES, relation_of

    cases = calibrate.load_cases(MEASUREMENTS, SHAPES, relation_of, speed_profile)
    hybrid = [c for c in cases if c.target.state_layers]
    plain = [c for c in cases if not c.target.state_layers and c.hardware != "M4 Max"]
    assert len(hybrid) == 2 and not any(calibrate.describes(c) for c in hybrid)
    with_them = calibrate.calibrate(plain + hybrid, model.PRIORS, iterations=150)
    assert with_them == calibrate.calibrate(plain, model.PRIORS, iterations=150)
    for c in hybrid:
        c.target = replace(c.target, state_layers=None, state_bytes=None)
    as_attention = calibrate.calibrate(plain + hybrid, model.PRIORS, iterations=150)
    assert as_attention["kappa"][quant.KQUANT] > 1.5 * with_them["kappa"][quant.KQUANT]



QWEN36 = {"model_type": "qwen3_5_moe", "hidden_size": 2048, "num_hidden_layers": 40, "full_attention_interval": 4,
          "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "vocab_size": 248320,
          "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
          "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4}


def test_a_hybrid_config_gives_the_bytes_of_its_recurrent_state():
    """30 Gated DeltaNet layers of Qwen3.6-35B-A3B's shape keep 62.8125 MiB for one sequence: the target part of the
    82.079 MiB llama-server logs per checkpoint of this pair (with Qwen3.5-0.8B's 19.266 MiB); no state, no bytes."""
    from indexer.vocab.archconfig import arch_facts

    facts = arch_facts(QWEN36).speed
    # a layer: the convolution over (k - 1) positions of q, k and v, and a 128 x 128 state per value head, in f32
    assert facts["state_layers"] == 30
    assert facts["state_bytes"] == 30 * 4 * (3 * (32 * 128 + 2 * 16 * 128) + 32 * 128 * 128)
    assert facts["state_bytes"] / 2 ** 20 == pytest.approx(62.8125)
    draft = {**QWEN36, "hidden_size": 1024, "num_hidden_layers": 24, "linear_num_value_heads": 16}
    assert arch_facts(draft).speed["state_bytes"] / 2 ** 20 == pytest.approx(19.265625)
    mamba2 = {"model_type": "nemotron_h", "hidden_size": 4096, "num_hidden_layers": 4,
              "hybrid_override_pattern": "M*MM", "mamba_num_heads": 128, "mamba_head_dim": 64,
              "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4, "num_attention_heads": 32,
              "num_key_value_heads": 8, "vocab_size": 131072}
    assert arch_facts(mamba2).speed["state_bytes"] == 3 * 4 * (3 * (8192 + 2 * 8 * 128) + 128 * 8192)
    assert arch_facts({**QWEN36, "model_type": "qwen3", "full_attention_interval": None}).speed["state_bytes"] is None


def _hybrid(shape: model.Shape, state_bytes: int) -> model.Shape:
    return replace(shape, state_layers=(shape.layers or 4) * 3 // 4, state_bytes=state_bytes)


def test_copying_the_state_makes_a_hybrid_target_slower_than_the_same_dense_one():
    """An engine that copies a recurrent state every round (llama-server with a draft model) pays for it: the hybrid
    target's estimate falls below the same-size dense target's, and further as the state grows; an engine that does
    not, or a target without state layers, gives exactly the figure without copies."""
    dense, draft = qwen_7b(), qwen_05b()
    copying = setup(device="RTX 3090", copies_state=True)
    plain = replace(copying, copies_state=False)
    kw = dict(relation=model.SIBLING)
    base = model.estimate(dense, draft, plain, **kw)
    assert model.estimate(dense, draft, copying, **kw) == base
    assert model.estimate(_hybrid(dense, 0), draft, copying, **kw) == base  # state layers, no bytes known
    small = model.estimate(_hybrid(dense, 20 * 2 ** 20), draft, copying, **kw).estimate
    large = model.estimate(_hybrid(dense, 80 * 2 ** 20), draft, copying, **kw).estimate
    assert large < small < base.estimate
    assert model.estimate(_hybrid(dense, 80 * 2 ** 20), draft, plain, **kw) == base
    # a draft that keeps a state pays its own copies each round, whatever the target, and a target that cuts its
    # cache back has no checkpoint to restore: no replay
    recurrent_draft = _hybrid(draft, 20 * 2 ** 20)
    costs = model._round_costs(copying, (model._Pass(dense, copying.target_quant, copying, model.CALIBRATION),
                                         model._Pass(recurrent_draft, copying.draft_quant, copying, model.CALIBRATION)),
                               model.CALIBRATION, (dense, recurrent_draft))
    assert costs[5].each_round == pytest.approx(2 * 20 * 2 ** 20 / 3e9) and costs[5].kept == costs[5].rejected == 0
    assert model.estimate(dense, recurrent_draft, copying, **kw).estimate < base.estimate


def test_a_rejected_round_restores_and_replays_and_a_full_one_only_saves():
    """At full acceptance a round pays the save alone; below it, restores and replays add to it, and the replay's
    extra token is counted (the round and its replay yield one token more than the round)."""
    t, d = _hybrid(qwen_7b(), 60 * 2 ** 20), qwen_05b()
    s = setup(device="RTX 3090", draft_tokens=4, copies_state=True)
    costs = model._round_costs(s, (model._Pass(t, s.target_quant, s, model.CALIBRATION),
                                   model._Pass(d, s.draft_quant, s, model.CALIBRATION)), model.CALIBRATION, (t, d))
    t1, td, overhead, _, seconds, copies = costs
    assert copies.kept == copies.rejected == pytest.approx(60 * 2 ** 20 / 3e9) and copies.each_round == 0
    full = model._speedup(1.0, 4, costs, None)
    assert full == pytest.approx(5 * t1 / (4 * td + seconds[5] + overhead + copies.kept))
    r = model.round_of(0.6, 4, None)
    expected = (r.tokens + (1 - 0.6 ** 4)) * t1 / (
        4 * td + seconds[5] + overhead + copies.kept
        + sum(0.6 ** i * 0.4 * (copies.rejected + seconds[i + 2]) for i in range(4)))
    assert model._speedup(0.6, 4, costs, None) == pytest.approx(expected)


@pytest.mark.parametrize("gate", [None, model.DraftGate(0.75, 0, True), model.DraftGate(0.75, 3, True),
                                  model.DraftGate(0.75, 0, False), model.DraftGate(0.75, 2, False)])
@pytest.mark.parametrize("alpha", [0.3, 0.8, 0.97])
def test_the_rejections_of_a_round_add_up_to_its_accepted_tokens(gate, alpha):
    """The rounds that reject after i accepted tokens and the rounds that accept all of a kept draft account for
    every accepted token the round yields (the same per-token model as ``round_of``)."""
    n = 8
    r = model.round_of(alpha, n, gate)
    rejected = dict(r.rejected)
    assert sum(rejected.values()) <= r.kept + 1e-12 and all(0 <= i < n for i in rejected)
    # the accepted tokens of rejected rounds are below what the round yields; all-accepted rounds make up the rest
    assert sum(i * p for i, p in rejected.items()) <= r.tokens - 1 + 1e-12
    if gate is None:
        assert r.kept - sum(rejected.values()) == pytest.approx(alpha ** n)


def test_only_llama_cpp_copies_the_state_of_a_draft_models_round():
    """The answer charges llama.cpp's draft-model rounds for the copies of a hybrid target's state, and says so; an
    engine that keeps states on the device is not charged."""
    from indexer.answer.speedup import Options, estimate

    assert speed_profile("llama.cpp", quant.lookup("Q4_K_M")).copies_state
    assert not any(speed_profile(e, quant.lookup("Q4_K_M")).copies_state
                   for e in ("vllm", "sglang", "transformers", "mlx"))
    hybrid = _hybrid(qwen_7b(), 60 * 2 ** 20)
    llama = estimate(ENGINES["llama.cpp"], {"shape": hybrid}, {"shape": qwen_05b()}, Options("RTX 3090"))[0]
    dense = estimate(ENGINES["llama.cpp"], {"shape": qwen_7b()}, {"shape": qwen_05b()}, Options("RTX 3090"))[0]
    vllm = estimate(ENGINES["vllm"], {"shape": hybrid}, {"shape": qwen_05b()}, Options("RTX 3090"))[0]
    assert "recurrent state copied to host memory" in llama["why"] and llama["estimate"] < dense["estimate"]
    assert "recurrent state" not in vllm["why"] and "recurrent state" not in dense["why"]


@needs_measurements
def test_the_hybrid_rows_are_slower_once_the_state_copies_are_charged():
    """Qwen3.6-35B-A3B with Qwen3.5-0.8B on an RTX 3090 (0.46x and 0.48x measured; rows the cost fit leaves out, and
    the copies fit nothing): estimated slower than no draft, within 0.3 in log of each, where without the copies the
    model said 1.6-1.7x."""
    from speedup_models import SHAPES, relation_of

    cases = [c for c in calibrate.load_cases(MEASUREMENTS, SHAPES, relation_of, speed_profile) if c.target.state_layers]
    assert len(cases) == 2
    for c in cases:
        got = calibrate.predict(c, model.CALIBRATION)
        without = model.estimate(c.target, c.draft, replace(c.setup, copies_state=False), relation=c.relation)
        assert got < 0.9 < 1.5 < without.estimate
        assert abs(math.log(got / c.speedup)) < 0.3


@needs_measurements
def test_the_shipped_calibration_matches_the_measurements():
    """On the shared measurements the model beats Leviathan and DraftFinder, on the big sweep and elsewhere."""
    from speedup_models import SHAPES, relation_of

    cases = calibrate.load_cases(MEASUREMENTS, SHAPES, relation_of, speed_profile)
    assert len(cases) > 300
    preds = [calibrate.predict(c, model.CALIBRATION) for c in cases]
    sweep = [i for i, c in enumerate(cases) if c.hardware == "M4 Max"]
    other = [i for i, c in enumerate(cases) if c.hardware != "M4 Max"]
    for idx in (sweep, other):
        rows = [cases[i] for i in idx]
        ours = calibrate.score(rows, [preds[i] for i in idx])
        lev = calibrate.score(rows, [calibrate.leviathan(cases[i]) for i in idx])
        df = calibrate.score(rows, [calibrate.draftfinder(cases[i]) for i in idx])
        assert ours["median_ln_error"] < min(lev["median_ln_error"], df["median_ln_error"])
        assert ours["class_right"] >= max(lev["class_right"], df["class_right"])
    assert calibrate.score([cases[i] for i in sweep], [preds[i] for i in sweep])["median_ln_error"] <= 0.15


@needs_measurements
def test_a_calibration_improves_on_the_priors():
    from speedup_models import SHAPES, relation_of

    cases = calibrate.load_cases(MEASUREMENTS, SHAPES, relation_of, speed_profile)[::6]  # a sample keeps it short
    fitted = calibrate.calibrate(cases, model.PRIORS, iterations=120)

    def err(cal):
        return sum(math.log(calibrate.predict(c, cal) / c.speedup) ** 2 for c in cases)

    assert err(fitted) < err(model.PRIORS)


def test_latent_attention_caches_its_latent_not_its_heads():
    from indexer.vocab.params import speed_facts

    mla = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
           "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128, "kv_lora_rank": 512,
           "qk_rope_head_dim": 64, "vocab_size": 129280, "n_routed_experts": 256, "num_experts_per_tok": 8}
    assert speed_facts(mla)["kv_per_token"] == 61 * (512 + 64)
    plain = {k: v for k, v in mla.items() if k not in ("kv_lora_rank", "qk_rope_head_dim")}
    assert speed_facts(plain)["kv_per_token"] == 2 * 61 * 128 * 56


def test_a_k_quant_mix_unpacks_as_its_main_block_type():
    assert [quant.block(quant.lookup(n)) for n in ("Q4_K_M", "Q4_K_S", "UD-Q4_K_XL", "Q3_K_L", "Q6_K", "Q4_0",
                                                   "4bit")] == ["Q4_K", "Q4_K", "Q4_K", "Q3_K", "Q6_K", "Q4_0", "4bit"]


def test_mlx_verifies_dearer_where_bfloat16_is_emulated():
    """M1 and M2 GPUs emulate bfloat16; MLX's verify arithmetic pays for it, llama.cpp's (f16/f32) does not."""
    def extra(device, runtime, q):
        s = setup(device, runtime, q, q)
        return model.forward_seconds(qwen_7b(), s.target_quant, 5, s) - model.forward_seconds(qwen_7b(),
                                                                                               s.target_quant, 1, s)

    m2, m3 = hardware.lookup("M2 Max"), hardware.lookup("M3 Max")
    assert not m2.bf16 and m3.bf16
    per_flop = {d.name: extra(d.name, model.MLX, "4bit") * d.tflops for d in (m2, m3)}
    assert per_flop["M2 Max"] == pytest.approx(per_flop["M3 Max"] * model.CALIBRATION["bf16_emulation"], rel=1e-6)
    ggml = {d.name: extra(d.name, model.GGML, "Q4_K_M") * d.tflops for d in (m2, m3)}
    assert ggml["M2 Max"] == pytest.approx(ggml["M3 Max"], rel=1e-6)


@needs_measurements
def test_decode_speeds_are_reproduced_once_unpacking_is_charged():
    """Where a row gives the target's own decode speed, the fitted model reproduces it per quantization (the slow
    Q3_K and Q2_K decodes are unpacking, not bytes), and better than bytes alone."""
    from speedup_models import SHAPES, relation_of

    cases = [c for c in calibrate.load_cases(MEASUREMENTS, SHAPES, relation_of, speed_profile) if c.baseline]
    fitted = calibrate.fit_decode(cases, model.PRIORS)
    assert fitted["unpack"]["Q3_K"] > fitted["unpack"]["Q4_K"] > fitted["unpack"]["Q8_0"]

    def error(cal):
        errs = [abs(math.log(c.baseline * model.forward_seconds(c.target, c.setup.target_quant, 1, c.setup, cal)))
                for c in cases]
        return sorted(errs)[len(errs) // 2], max(errs)

    median, worst = error(fitted)
    assert median < 0.05 and worst < 0.2
    assert median < error({**fitted, "unpack": {}})[0]


# ---- speculator heads ---------------------------------------------------------------------------------------------

def llama_8b():
    return model.Shape(params=int(8.03e9), layers=32, hidden=4096, vocab=128256, tied=False,
                       kv_per_token=2 * 32 * 8 * 128)


def test_a_head_reads_its_layer_not_its_embedding_table():
    table = 128256 * 4096
    head = model.head_shape(table + 400_000_000, 4096, 128256)
    assert head.params == 400_000_000 and head.layers == 1
    small = model.head_shape(100_000_000, 4096, 128256)  # no table in the count: all of it is read
    assert small.params == 100_000_000
    assert model.head_shape(None, 4096, 128256) is None


def test_head_estimates_follow_the_task_and_the_method():
    head = model.head_shape(128256 * 4096 + 420_000_000, 4096, 128256)
    s = {task: model.estimate_head(llama_8b(), head, setup("H100 SXM", model.SERVING, "bf16", "bf16", task=task,
                                                           draft_tokens=3), method="eagle3")
         for task in model.TASKS}
    assert s["code"].estimate > s["reasoning"].estimate > s["chat"].estimate > s["prose"].estimate > 1.0
    assert all(e.draft_tokens == 3 and e.low <= e.estimate <= e.high for e in s.values())
    assert "eagle3 head" in s["chat"].why
    mtp = model.estimate_head(llama_8b(), model.mtp_shape(llama_8b()), setup("H100 SXM", model.SERVING, "bf16",
                                                                              "bf16", draft_tokens=1), method="mtp")
    assert 1.0 < mtp.estimate < 2.0  # one MTP token a round: at most twice the tokens
    assert model.estimate_head(llama_8b(), head, setup("H100 SXM", model.SERVING, "bf16", "bf16"),
                               method="dflash") is None


def test_streams_decoded_together_share_the_weights_not_the_cache():
    one = setup("H100 SXM", model.SERVING, "bf16", "bf16")
    eight = setup("H100 SXM", model.SERVING, "bf16", "bf16", batch=8)
    t1, t8 = model.forward_seconds(llama_8b(), one.target_quant, 1, one), \
        model.forward_seconds(llama_8b(), eight.target_quant, 1, eight)
    assert t1 < t8 < 8 * t1
    assert "8 streams decoded together" in model.estimate(llama_8b(), llama_8b(), eight, relation="sibling").why


def _benchmark_heads():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "speedup_heads.py"
    spec = importlib.util.spec_from_file_location("speedup_heads", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_measurements
def test_the_shipped_head_acceptance_is_the_fit_of_the_shared_heads():
    """HEAD_ACCEPT["eagle3"] is what benchmarks/speedup_heads.py --fit gives; held out per target, the model's
    error on the single-device head rows beats Leviathan's."""
    bench = _benchmark_heads()
    rows = json.loads(MEASUREMENTS.read_text())["heads"]
    cases = [bench.HeadCase(r) for r in rows if r.get("target") in bench.TARGETS and r.get("speedup")
             and r.get("hw_key")]
    assert len(cases) >= 10
    assert bench.fit(cases) == pytest.approx(model.HEAD_ACCEPT["eagle3"], abs=1e-3)
    ours, lev = [], []
    for c in cases:
        others = bench.fit([o for o in cases if o.row["target"] != c.row["target"]])
        ours.append(abs(math.log(bench.predict(c, others) / c.speedup)))
        lev.append(abs(math.log(bench.leviathan(c, others) / c.speedup)))
    assert sorted(ours)[len(ours) // 2] < sorted(lev)[len(lev) // 2]


# ---- check and query through the CLI -----------------------------------------------------------------------------

def test_check_gives_a_speedup_per_engine(demo_catalog):
    code, out = cli_run("check", TARGET, DRAFT, "--db", str(demo_catalog), "--json", "--hardware", "M4 Max",
                        "--task", "code")
    assert code == 0
    v = json.loads(out)["verdicts"]
    s = v["llama.cpp"]["speedup"]
    assert {"estimate", "low", "high", "draft_tokens", "acceptance", "hardware", "why"} <= set(s)
    assert s["low"] <= s["estimate"] <= s["high"] and s["hardware"] == "M4 Max" and s["draft_tokens"] >= 1
    assert v["sglang"]["speedup"]["estimate"] is None  # SGLang runs on GPUs, not on a Mac
    assert v["ollama"]["speedup"] is None  # no separate draft model
    code, text = cli_run("check", TARGET, DRAFT, "--db", str(demo_catalog), "--hardware", "M4 Max")
    assert "speed-up ≈" in text and "on M4 Max" in text


def test_check_without_hardware_names_three_reference_devices(demo_catalog):
    code, out = cli_run("check", TARGET, DRAFT, "--db", str(demo_catalog), "--json")
    devices = {s["hardware"] for s in json.loads(out)["verdicts"]["transformers"]["speedups"]}
    assert devices == {"H100 SXM", "RTX 4090", "M4 Max"}


@pytest.mark.parametrize("args, words", [
    (["--hardware", "M9 Ultra"], "error: unknown hardware 'M9 Ultra'; closest:"),
    (["--quant", "Q4_KM_X"], "error: unknown quantization 'Q4_KM_X'; closest:"),
    (["--draft-quant", "zzz"], "error: unknown quantization 'zzz'"),
])
def test_bad_speed_options_are_one_line(demo_catalog, args, words):
    for command in (["check", TARGET, DRAFT], ["query", "--target", TARGET]):
        code, out = cli_run(*command, "--db", str(demo_catalog), *args)
        assert code == 2 and out.strip().startswith(words) and len(out.strip().splitlines()) == 1, out


def test_query_ranks_by_the_estimate_and_leaves_out_the_target_itself(demo_catalog):
    code, out = cli_run("query", "--target", TARGET, "--engine", "llama.cpp", "--db", str(demo_catalog), "--json",
                        "--hardware", "M4 Max", "--task", "code")
    drafts = json.loads(out)["drafts"]
    ids = [d["repo_id"] for d in drafts]
    itself = {"lumen-ai/Lumen-7B", "lumen-ai/Lumen-7B-Instruct-GGUF", "lumen-ai/Lumen-70B-Instruct"}
    assert ids and not itself & set(ids)
    faster = [d["speedup"]["estimate"] for d in drafts if not d["speedup"]["slower"]]
    assert faster == sorted(faster, reverse=True)
    best = drafts[0]
    assert not best["speedup"]["slower"] or all(d["speedup"]["slower"] for d in drafts)
    assert f"--spec-draft-n-max {best['speedup']['draft_tokens']}" in best["launch"]


def test_query_all_marks_what_is_not_a_draft(demo_catalog):
    code, out = cli_run("query", "--target", TARGET, "--engine", "llama.cpp", "--db", str(demo_catalog), "--json",
                        "--all")
    marked = {d["repo_id"]: d["not_a_draft"] for d in json.loads(out)["drafts"]}
    assert marked["lumen-ai/Lumen-7B"] and marked["lumen-ai/Lumen-7B-Instruct-GGUF"]
    assert marked["lumen-ai/Lumen-0.5B-Instruct"] is None


@pytest.mark.parametrize("engine, flag", [("vllm", '"num_speculative_tokens": {n}'), ("mlx", "--num-draft-tokens {n}"),
                                          ("sglang", "--speculative-num-steps {n}"),
                                          ("lmstudio", "'speculativeDecodingNumDraftTokensExact': {n}")])
def test_launch_carries_the_draft_token_count(demo_catalog, engine, flag):
    code, out = cli_run("query", "--target", TARGET, "--engine", engine, "--db", str(demo_catalog), "--json")
    best = json.loads(out)["drafts"][0]
    assert flag.format(n=best["speedup"]["draft_tokens"]) in best["launch"]


# A hub of real shapes: Qwen2.5's config.json facts and the Hub's safetensors counts, one tiny tokenizer.
QWEN = {
    "Qwen/Qwen2.5-7B-Instruct": (3584, 28, 28, 4, 18944, 152064, False, 7615616512),
    "Qwen/Qwen2.5-0.5B-Instruct": (896, 24, 14, 2, 4864, 151936, True, 494032768),
    "Qwen/Qwen2.5-1.5B-Instruct": (1536, 28, 12, 2, 8960, 151936, True, 1543714304),
}


@pytest.fixture(scope="module")
def qwen_catalog(tmp_path_factory):
    """The three Qwen2.5 repos with their real config.json sizes and the Hub's parameter counts; their tokenizer is
    the demo's (one llama.cpp's converter knows), so every engine judges them."""
    from indexer.jobs.demo import build_demo_hub

    demo = tmp_path_factory.mktemp("demo-hub")
    build_demo_hub(demo)
    root = tmp_path_factory.mktemp("qwen-hub")
    for repo, (hidden, layers, heads, kv, inter, vocab, tied, params) in QWEN.items():
        shutil.copytree(demo / DRAFT, root / repo)
        config = json.loads((root / repo / "config.json").read_text())
        config.update({"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
                       "num_key_value_heads": kv, "intermediate_size": inter, "tie_word_embeddings": tied,
                       "max_position_embeddings": 32768, "vocab_size": vocab})
        (root / repo / "config.json").write_text(json.dumps(config))
        set_meta(root, repo, params=params, downloads=1000)
    db = str(tmp_path_factory.mktemp("qwen-db") / "catalog.db")
    with HubServer(str(root)) as hub:
        crawl(db, hub)
    assert cli_run("compute", "--db", db, "--quiet")[0] == 0
    return db


@needs_measurements
def test_the_cli_answers_published_rows_as_the_library_does(qwen_catalog):
    """Through `indexer check` on crawled repos: the same estimate as the calibration cases give, and the class the
    measurement has (faster, same, slower) for the draftbench rows of these pairs."""
    from speedup_models import SHAPES, relation_of

    cases = [c for c in calibrate.load_cases(MEASUREMENTS, SHAPES, relation_of, speed_profile)
             if c.row["target"] in QWEN and c.row["draft"] in QWEN and c.hardware == "M4 Max"][::12]
    assert len(cases) >= 8
    right = 0
    for c in cases:
        r = c.row
        code, out = cli_run("check", r["target"], r["draft"], "--db", qwen_catalog, "--json", "--engine", "llama.cpp",
                            "--hardware", r["hardware"], "--quant", r["quant"], "--draft-quant", r["draft_quant"],
                            "--task", r["task"])
        got = json.loads(out)["verdicts"]["llama.cpp"]["speedup"]["estimate"]
        # the rows ran llama-server's p-min gate of their builds; the release drafts the count the launch sets
        c.setup = replace(c.setup, gate=None, draft_tokens=None, max_draft_tokens=16)
        assert got == pytest.approx(calibrate.predict(c, model.CALIBRATION), rel=0.06), r["id"]
        right += calibrate.speed_class(got) == calibrate.speed_class(c.speedup)
    assert right / len(cases) >= 0.75


# ---- suggestions that looked wrong ------------------------------------------------------------

def test_a_useless_vocabulary_is_no_near_miss(demo_catalog):
    """Corvid-1B is a different family at 0% agreement: no fix makes it work on SGLang, so it is not a near miss."""
    code, out = cli_run("query", "--target", TARGET, "--db", str(demo_catalog), "--near-misses", "--json")
    misses = {m["repo_id"]: m for m in json.loads(out)["near_misses"]}
    assert "corvid-labs/Corvid-1B" not in misses
    assert all(m["fix"] for m in misses.values())


def test_agreement_near_one_hundred_percent_is_worded_without_contradiction(demo_catalog):
    code, out = cli_run("query", "--target", TARGET, "--db", str(demo_catalog))
    assert "100.0% agree" not in out and "all but 2 of 558 tokens agree" in out


def test_the_ollama_refusal_is_said_once(demo_catalog):
    code, out = cli_run("query", "--target", TARGET, "--db", str(demo_catalog), "--engine", "ollama")
    assert out.count("Ollama takes no separate draft models") == 1, out


def test_gguf_files_get_an_estimate_and_lm_studio_runs_them_with_llamacpp(demo_catalog):
    """Two local GGUF files: their sizes from their names, their types from their headers; LM Studio runs GGUF
    files on its llama.cpp engine, so off a Mac it has a figure too."""
    hub = demo_catalog.parent / "demo-hub"
    target = hub / "lumen-ai/Lumen-7B-Instruct-GGUF/Lumen-7B-Instruct-Q4_K_M.gguf"
    draft = hub / "lumen-ai/Lumen-0.5B-Instruct-GGUF"
    code, out = cli_run("check", str(target), str(draft), "--db", str(demo_catalog), "--json", "--engine",
                        "llama.cpp", "--hardware", "RTX 3090")
    v = json.loads(out)["verdicts"]
    assert v["llama.cpp"]["speedup"]["target_quant"] == "Q4_K_M" and v["llama.cpp"]["speedup"]["draft_quant"] == "Q8_0"
    assert v["lmstudio"]["speedup"]["estimate"] == v["llama.cpp"]["speedup"]["estimate"]


def test_the_header_counts_the_repos_that_work_beside_the_class(demo_catalog):
    """The class line used to say "(5 repos)" while drafts of agreeing classes were listed too."""
    code, out = cli_run("query", "--target", TARGET, "--db", str(demo_catalog), "--json")
    t = json.loads(out)["target"]
    assert t["agreeing_members"] >= 1
    code, text = cli_run("query", "--target", TARGET, "--db", str(demo_catalog))
    assert f"({t['class_members']} repos, and {t['agreeing_members']} more whose vocabularies work with it)" in text


def test_a_pair_whose_weights_exceed_the_device_says_it_does_not_fit():
    """A 70B target in bfloat16 (140 GB) cannot be held by one 80 GB H100 nor a 24 GB RTX 4090: the figure stays,
    flagged; a 7B pair fits. At Q4_K_M the same 70B fits the H100 and not the RTX 4090."""
    from indexer.answer.speedup import Options, estimate, words

    big = model.Shape(params=70_000_000_000, layers=80, hidden=8192, vocab=32000)
    draft = model.Shape(params=1_100_000_000, layers=22, hidden=2048, vocab=32000)
    for device in ("H100 SXM", "RTX 4090"):
        [s] = estimate(ENGINES["sglang"], {"shape": big}, {"shape": draft}, Options(device))
        assert s["fits"] is False and s["weights_gb"] == pytest.approx(140 + 2.2, abs=0.2)
        assert s["estimate"] is not None and s["why"].startswith("does not fit: the weights alone take 142 GB")
        assert "DOES NOT FIT one device: 142 GB of weights" in words(s)
    [small] = estimate(ENGINES["sglang"], {"shape": qwen_7b()}, {"shape": qwen_05b()}, Options("RTX 4090"))
    assert small["fits"] is True and "NOT FIT" not in words(small) and not small["why"].startswith("does not fit")
    on = {d: estimate(ENGINES["llama.cpp"], {"shape": big}, {"shape": draft}, Options(d))[0]["fits"]
          for d in ("H100 SXM", "RTX 4090")}
    assert on == {"H100 SXM": True, "RTX 4090": False}
