"""MLX-LM's speculative generation (``mlx_lm.generate --draft-model``), at each of :data:`RELEASES` (the commit
d78bf58e, then the PyPI sdist 0.32.2; the default is the newest, :data:`VERSION`); paths are relative to the
repository root. LM Studio's mlx-engine pins its own mlx-lm: it keeps the d78bf58e tables (lmstudio.py)."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from .archrules import WRONG_OUTPUT, ArchRule, Ranged, Sliding, StateIn, TypeIn, relined
from .base import (
    REFUSED,
    SIZE_WORDS,
    SLOWER,
    WORKS,
    Side,
    SpeedProfile,
    Verdict,
    mapping_differs,
    released,
    same_mapping,
    size_differs,
    tokenizer_missing,
    tokenizer_sizes,
)

RELEASES = ("d78bf58e", "0.32.2")
VERSION = RELEASES[-1]

# mlx-lm @VERSION: get_model_classes imports mlx_lm.models.<MODEL_REMAPPING.get(t, t)> and raises
# "Model type X not supported." otherwise (mlx_lm/utils.py:46-57, 187-193); the modules of mlx_lm/models/.
MLX_LM_MODEL_REMAPPING = {"mistral": "llama", "llava": "mistral3", "phi-msft": "phixtral", "falcon_mamba": "mamba",
                          "joyai_llm_flash": "deepseek_v3", "kimi_k2": "deepseek_v3", "qwen2_5_vl": "qwen2_vl",
                          "minimax_m2": "minimax", "iquestcoder": "llama", "gemma4_unified": "gemma4"}
MLX_LM_MODEL_MODULES = frozenset("""
Klear activations afm7 afmoe apertus baichuan_m1 bailing_moe bailing_moe_linear base bitlinear_layers bitnet
cache cohere cohere2 dbrx deepseek deepseek_v2 deepseek_v3 deepseek_v32 dots1 ernie4_5 ernie4_5_moe exaone
exaone4 exaone_moe falcon_h1 gated_delta gemma gemma2 gemma3 gemma3_text gemma3n gemma4 gemma4_text glm glm4
glm4_moe glm4_moe_lite glm_moe_dsa gpt2 gpt_bigcode gpt_neox gpt_oss granite granitemoe granitemoehybrid
helium hunyuan hunyuan_v1_dense internlm2 internlm3 iquestloopcoder jamba kimi_k25 kimi_linear kimi_vl laguna
lfm2 lfm2-vl lfm2_moe lille-130m llama llama4 llama4_text longcat_flash longcat_flash_ngram mamba mamba2
mellum mimo mimo_v2_flash minicpm minicpm3 minimax ministral3 mistral3 mixtral mla nanochat nemotron nemotron-nas
nemotron_h olmo olmo2 olmo3 olmoe openelm phi phi3 phi3small phimoe phixtral pipeline pixtral plamo plamo2
qwen qwen2 qwen2_moe qwen2_vl qwen3 qwen3_5 qwen3_5_moe qwen3_moe qwen3_next qwen3_vl qwen3_vl_moe
recurrent_gemma rope_utils rwkv7 seed_oss smollm3 solar_open ssm stablelm starcoder2 step3p5 switch_layers
telechat3 youtu_llm
""".split())


# The model files under mlx_lm/models/ whose make_cache keeps an ArraysCache (a recurrent or convolution state:
# ArraysCache has no is_trimmable override, models/cache.py:594, 146-147), with the model types that load them.
MLX_ARRAYS_CACHE = frozenset("""
baichuan_m1 bailing_moe_linear falcon_h1 falcon_mamba granitemoehybrid jamba kimi_linear lfm2 lfm2_moe lfm2-vl
longcat_flash_ngram mamba mamba2 nemotron_h plamo2 qwen3_5 qwen3_5_moe qwen3_next recurrent_gemma rwkv7
""".split())
# ... whose sliding layers keep a RotatingKVCache(max_size=sliding_window) (trimmable only while offset < max_size,
# models/cache.py:542-543): always for these model types,
MLX_ROTATING = frozenset("""
afmoe cohere2 exaone4 exaone_moe gemma3 gemma3_text gemma3n gemma4 gemma4_text gemma4_unified gpt_oss iquestloopcoder
laguna mellum mimo_v2_flash olmo3 step3p5
""".split())
# ... and for these only where layer_types lists sliding_attention layers (models/llama.py:157-170, 266-270;
# ministral3.py:162-173, 325-329; mistral and iquestcoder load llama, mistral3 ministral3).
MLX_ROTATING_LISTED = frozenset({"llama", "mistral", "iquestcoder", "ministral3", "mistral3"})

# mlx-lm 0.32.2 (the PyPI sdist): model modules, remappings (utils.py:48-61), and the model files whose make_cache
# adds an ArraysCache (bailing_hybrid.py:731, bailing_moe_v3.py:487, gear.py:495, kimi_k3.py:893,
# olmo_hybrid.py:403 are new) or a RotatingKVCache for sliding layers (gear.py:493, muse_glimmer.py:278,
# muse_spark.py:1076, plamo3.py:293, spark2_5.py:327 are new).
MLX_LM_MODEL_REMAPPING_0322 = {**MLX_LM_MODEL_REMAPPING, "xverse": "llama", "deepseek_v41_text": "deepseek_v41"}
MLX_LM_MODEL_MODULES_0322 = MLX_LM_MODEL_MODULES | frozenset("""
bailing_hybrid bailing_moe_v3 deepseek_v41 gear gptj kimi_k3 minimax_m3_vl mistral4 muse_glimmer muse_spark
nanbeige olmo_hybrid plamo3 prism_hadamard_qwen35 spark2_5 talkie
""".split())
MLX_ARRAYS_CACHE_0322 = MLX_ARRAYS_CACHE | frozenset({"bailing_hybrid", "bailing_moe_v3", "gear", "kimi_k3",
                                                       "olmo_hybrid"})
MLX_ROTATING_0322 = MLX_ROTATING | frozenset({"gear", "muse_glimmer", "muse_spark", "plamo3", "spark2_5"})

_TARGET_CACHE = ArchRule(
    "non-trimmable target cache", TypeIn("target", MLX_ARRAYS_CACHE), REFUSED,
    "its mlx-lm model keeps an ArraysCache, and mlx_lm.generate raises ValueError \"Speculative decoding "
    "requires a trimmable prompt cache (got {'ArraysCache'})\"",
    "mlx_lm/generate.py:520-524, mlx_lm/models/cache.py:88-92",
    anchors=("Speculative decoding requires a trimmable prompt cache", None))
_SLIDING = ArchRule(
    "sliding-window target", Sliding("target", MLX_ROTATING, MLX_ROTATING_LISTED), WRONG_OUTPUT,
    "speculation starts, but once prompt and output pass the window its RotatingKVCache is no longer "
    "trimmable and trim_prompt_cache then trims no layer, so rejected draft tokens stay in the target's "
    "cache and the output can be wrong",
    "mlx_lm/models/cache.py:109-110, 542-543; mlx_lm/generate.py:580-582",
    anchors=(None, "return self.offset < self.max_size", "trim_prompt_cache(model_cache"))
_DRAFT_CACHE = ArchRule(
    "non-trimmable draft cache", StateIn("draft"), None,
    "the draft's cache is never checked and trim_prompt_cache is a no-op on it, so acceptance falls; the "
    "target verifies every token", "mlx_lm/generate.py:582", anchors=("trim_prompt_cache(draft_cache",))

ARCH_RULES = (
    replace(_TARGET_CACHE, until="0.32.2"),
    replace(_TARGET_CACHE, since="0.32.2", when=TypeIn("target", MLX_ARRAYS_CACHE_0322),
            source="mlx_lm/generate.py:542-546, mlx_lm/models/cache.py:164-165, 596",
            anchors=("Speculative decoding requires a trimmable prompt cache", "return False", "class ArraysCache")),
    replace(_SLIDING, until="0.32.2"),
    replace(_SLIDING, since="0.32.2", when=Sliding("target", MLX_ROTATING_0322, MLX_ROTATING_LISTED),
            source="mlx_lm/models/cache.py:115-119, 544-545; mlx_lm/generate.py:598-599",
            anchors=("return all(c.is_trimmable() for c in cache)", "return self.offset < self.max_size",
                     "trim_prompt_cache(model_cache")),
    *relined(_DRAFT_CACHE, "0.32.2", "mlx_lm/generate.py:599"),
)


def mlx_model_type_supported(model_type: str | None, modules=MLX_LM_MODEL_MODULES_0322,
                             remapping=MLX_LM_MODEL_REMAPPING_0322) -> bool | None:
    """Whether mlx_lm.load finds a model class for this config model_type (None: unknown)."""
    if model_type is None:
        return None
    return remapping.get(model_type, model_type) in modules


def _mlx_load_notes(t: Side, d: Side, modules, remapping) -> list[str]:
    """The vocabulary rule is the verdict; say when mlx_lm.load would refuse a side before it."""
    return [f"note: mlx_lm.load refuses the {role}'s model_type {side.model_type!r} (\"Model type "
            f"{remapping.get(side.model_type, side.model_type)} not supported.\") before any "
            "vocabulary check" for role, side in (("target", t), ("draft", d))
            if mlx_model_type_supported(side.model_type, modules, remapping) is False]


def rule(t: Side, d: Side, modules=MLX_LM_MODEL_MODULES_0322, remapping=MLX_LM_MODEL_REMAPPING_0322) -> Verdict:
    """mlx_lm.generate raises when tokenizer.vocab_size differs (mlx_lm.server only warns)."""
    missing = tokenizer_missing(t, d)
    if missing:
        return Verdict(REFUSED, [missing])
    ts, ds = tokenizer_sizes(t, d)
    notes = _mlx_load_notes(t, d, modules, remapping)
    if ts != ds:
        return Verdict(REFUSED, [size_differs("tokenizer.vocab_size", ts, ds) + ": mlx_lm.generate raises "
                                 f"ValueError; mlx_lm.server only warns and proceeds, where {SLOWER}", *notes])
    if not same_mapping(t, d):
        return mapping_differs(t, d, None, f"tokenizer.vocab_size {ts} on both (base vocabulary, added tokens not "
                                           "counted), so it starts", notes)
    return Verdict(WORKS, [f"tokenizer.vocab_size {ts} on both and the same mapping", *notes])


def launch(target: str, draft: str, draft_tokens: int | None = None) -> str:
    """The mlx_lm.generate command with a draft model (``draft_tokens``: --num-draft-tokens, mlx_lm/generate.py)."""
    return (f"mlx_lm.generate --model {target} --draft-model {draft} --num-draft-tokens {draft_tokens or 3} "
            '--prompt "..."')


# No fix: MLX has no vocabulary translation, and tokenizer.vocab_size is the base vocabulary (no resize helps).
RULES = (Ranged(value=partial(rule, modules=MLX_LM_MODEL_MODULES, remapping=MLX_LM_MODEL_REMAPPING),
                until="0.32.2"),
         Ranged(value=rule, since="0.32.2", source="mlx_lm/utils.py:48-61, 220-225",
                anchors=("MODEL_REMAPPING = {", 'msg = f"Model type {model_type} not supported."')))
SOURCES = (
    Ranged(value={"tokenizer.vocab_size equal (generate raises)": "mlx_lm/generate.py:2156",
                  "server only warns": "mlx_lm/server.py:346",
                  "model type supported (load)": "mlx_lm/utils.py:46-57, 187-193"}, until="0.32.2"),
    Ranged(value={"tokenizer.vocab_size equal (generate raises)": "mlx_lm/generate.py:2144",
                  "server only warns": "mlx_lm/server.py:453",
                  "model type supported (load)": "mlx_lm/utils.py:48-61, 220-225"}, since="0.32.2",
           anchors=("if draft_tokenizer.vocab_size != tokenizer.vocab_size:",
                    "if draft_tokenizer.vocab_size != tokenizer.vocab_size:", "MODEL_REMAPPING = {",
                    'msg = f"Model type {model_type} not supported."')),
)

ENGINE = released(
    releases=RELEASES, name="mlx", display="MLX-LM (mlx_lm.generate)", version=f"mlx-lm {VERSION}",
    speed=SpeedProfile("mlx", ("apple",), "4bit", "4bit", 8),
    sources=SOURCES, facts=("tok.hf_vocab_size", "tok.vocab_sha256"),
    rule=RULES, class_key=("hf", "tok"), launch=launch, sizes=tokenizer_sizes,
    words=dict(SIZE_WORDS), arch_rules=ARCH_RULES)


# ---------------------------------------------------------------- what mlx_lm.server reports (indexer measure)
# Paths are relative to the mlx-lm 0.32.2 wheel.
def _server_release(get_json) -> str | None:
    """mlx_lm.server answers only /v1/models and /health to a GET (mlx_lm/server.py:1787-1798); its release is in
    each response's ``system_fingerprint`` ("<mlx-lm>-<mlx>-<platform>-<gpu>", server.py:59-61), read from the
    answer instead."""
    return None


def _server_request(prompt: str, max_tokens: int, target: str | None = None, draft: str | None = None):
    """A greedy streamed chat completion with the usage at its end (``stream_options.include_usage``,
    mlx_lm/server.py:1682-1692): the client times the tokens."""
    from .server import Exchange, chat_body

    body = chat_body(prompt, max_tokens, stream_options={"include_usage": True})
    return Exchange("/v1/chat/completions", {**body, "stream": True}, stream=True)


def _server_reading(events, timing):
    """Text and ``usage.completion_tokens``; no draft counts: stream_generate's ``from_draft`` (mlx_lm/generate.py:
    283-296) is not passed on to the response (server.py:1121-1131 keeps text, token, logprobs, finish reason)."""
    from .server import Reading, decode_seconds, stream_text, stream_usage

    return Reading(tokens=int(stream_usage(events).get("completion_tokens") or 0), seconds=decode_seconds(timing),
                   text=stream_text(events))


def fingerprint_release(answer) -> str | None:
    """The mlx-lm version at the head of a response's ``system_fingerprint``."""
    events = answer if isinstance(answer, list) else [answer]
    for e in events:
        fp = e.get("system_fingerprint") if isinstance(e, dict) else None
        if isinstance(fp, str) and fp:
            return fp.split("-", 1)[0]
    return None


def _server():
    from .server import Server

    return Server(
        release=_server_release, request=_server_request, reading=_server_reading, answer_release=fingerprint_release,
        sources={"release": "mlx_lm/server.py:59-61 (system_fingerprint)",
                 "usage at the end of a stream": "mlx_lm/server.py:1682-1692",
                 "no acceptance": "mlx_lm/server.py:1121-1131 (Response has no from_draft)"},
        # num_draft_tokens 0 still runs the draft path, and draft_model null reloads the target: a second server
        not_reported="acceptance (mlx_lm.server does not report which tokens came from the draft)")


SERVER = _server()
