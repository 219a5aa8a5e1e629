"""Parameter counts when the Hub gives none: estimated from ``config.json``, else read from the repo name.

Ranking needs a size for every repo, but the Hub's ``safetensors.total`` is missing for repos without
safetensors weights (``.bin``/GGUF only, or files the crawler never lists). The estimate counts the weight
matrices a transformers decoder of that architecture allocates: embeddings (and the LM head unless tied),
per layer attention (GQA: ``num_key_value_heads`` x ``head_dim``; DeepSeek's MLA low-rank projections), the
MLP (gated SwiGLU/GeGLU: three matrices, else two), norms and biases, and for mixture-of-experts layers the
routed experts, shared experts and router, keeping the total apart from the parameters active per token.
Multimodal configs are estimated on their text sub-config (the language model a draft is compared with;
vision towers are not counted). Every result says where it came from, so it is shown as an estimate.

Architecture facts come from transformers 5.24.0 (``transformers/models/<type>/configuration_<type>.py`` for
defaults, ``modeling_<type>.py`` for which layers exist); the line of each default is cited in ``TRAITS``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .textconfig import sglang_text_config

SOURCE_SAFETENSORS, SOURCE_CONFIG, SOURCE_NAME = "safetensors", "config", "name"


@dataclass(frozen=True)
class ParamEstimate:
    """A model's parameter count and where it came from, so an estimate is shown as one."""

    total: int
    active: int | None  # parameters used per token, for mixture-of-experts models only
    source: str  # "safetensors" (the Hub's count), "config" or "name" (estimates)

    @property
    def estimated(self) -> bool:
        """Whether the count is ours (from config or name) rather than the Hub's safetensors count."""
        return self.source != SOURCE_SAFETENSORS


@dataclass(frozen=True)
class Traits:
    """What an architecture's modeling code builds beyond the config numbers."""

    tie: bool  # class default of tie_word_embeddings
    gated: bool = True  # MLP has gate, up and down projections
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    layernorm: bool = False  # LayerNorm (weight and bias) instead of RMSNorm (weight)
    learned_positions: bool = False  # absolute position embedding table
    qk_norm: bool = False  # per-head RMSNorm on q and k


# model_type -> Traits; tie defaults at transformers 5.24.0 models/<type>/configuration_<type>.py:<line>.
TRAITS = {
    "llama": Traits(tie=False),  # configuration_llama.py:78; attention_bias/mlp_bias keys read below
    "mistral": Traits(tie=False),  # configuration_mistral.py:77
    "mixtral": Traits(tie=False),  # configuration_mixtral.py:81
    "qwen2": Traits(tie=False, qkv_bias=True),  # configuration_qwen2.py:71; modeling_qwen2.py:181-183 bias=True
    "qwen2_moe": Traits(tie=False, qkv_bias=True),  # configuration_qwen2_moe.py:89
    "qwen3": Traits(tie=False, qk_norm=True),  # configuration_qwen3.py:73; modeling_qwen3.py:229-230 q/k norms
    "qwen3_moe": Traits(tie=False, qk_norm=True),  # configuration_qwen3_moe.py:91
    "gemma": Traits(tie=True),  # configuration_gemma.py:81 (GeGLU: gated)
    "gemma2": Traits(tie=True),  # configuration_gemma2.py:82
    "gemma3": Traits(tie=True),  # configuration_gemma3.py:88
    "phi3": Traits(tie=False),  # configuration_phi3.py:75 (fused qkv and gate_up: same counts)
    "phi": Traits(tie=False, gated=False, qkv_bias=True, o_bias=True, mlp_bias=True, layernorm=True),  # :76
    "gpt2": Traits(tie=True, gated=False, qkv_bias=True, o_bias=True, mlp_bias=True, layernorm=True,
                   learned_positions=True),  # configuration_gpt2.py:102
    "gpt_bigcode": Traits(tie=True, gated=False, qkv_bias=True, o_bias=True, mlp_bias=True, layernorm=True,
                          learned_positions=True),  # configuration_gpt_bigcode.py:79
    "gpt_neox": Traits(tie=False, gated=False, qkv_bias=True, o_bias=True, mlp_bias=True,
                       layernorm=True),  # configuration_gpt_neox.py:77
    "gptj": Traits(tie=False, gated=False, mlp_bias=True, layernorm=True),  # configuration_gptj.py:84
    "falcon": Traits(tie=True, gated=False, layernorm=True),  # configuration_falcon.py:88; `bias` key below
    "opt": Traits(tie=True, gated=False, qkv_bias=True, o_bias=True, mlp_bias=True, layernorm=True,
                  learned_positions=True),  # configuration_opt.py:73
    "bloom": Traits(tie=True, gated=False, qkv_bias=True, o_bias=True, mlp_bias=True,
                    layernorm=True),  # configuration_bloom.py:72
    "starcoder2": Traits(tie=True, gated=False, qkv_bias=True, o_bias=True, mlp_bias=True,
                         layernorm=True),  # configuration_starcoder2.py:80 (use_bias default True)
    "stablelm": Traits(tie=False, layernorm=True),  # configuration_stablelm.py:55
    "olmo": Traits(tie=False),  # configuration_olmo.py:79
    "olmo2": Traits(tie=False),  # configuration_olmo2.py:82
    "cohere": Traits(tie=True, layernorm=True),  # configuration_cohere.py:81
    "granite": Traits(tie=False),  # configuration_granite.py:77
    "deepseek_v2": Traits(tie=False),  # configuration_deepseek_v2.py:90
    "deepseek_v3": Traits(tie=False),  # configuration_deepseek_v3.py:111
    "mpt": Traits(tie=True, gated=False, layernorm=True),  # configuration_mpt.py:137
}
ALIASES = {"qwen2_vl": "qwen2", "qwen2_5_vl": "qwen2", "gemma3_text": "gemma3", "mistral3": "mistral",
           "llava": "llama", "RefinedWeb": "falcon", "RefinedWebModel": "falcon"}
GATED_ACTS = ("silu", "swiglu", "swish", "geglu")


def _first(cfg: dict, *keys: str):
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _traits(model_type: str | None, text: dict) -> Traits:
    mt = model_type or ""
    mt = ALIASES.get(mt, ALIASES.get(mt.removesuffix("_text"), mt.removesuffix("_text")))
    if mt in TRAITS:
        return TRAITS[mt]
    # An architecture we do not list: SiLU-family activations mean a gated MLP (Llama-style), and
    # PretrainedConfig's own tie_word_embeddings default is False in transformers 5 (modeling_utils.py:2492).
    act = str(text.get("hidden_act") or text.get("activation_function") or "silu").lower()
    return Traits(tie=False, gated=act in GATED_ACTS)


def _attention(text: dict, hidden: int, heads: int, kv_heads: int, head_dim: int, tr: Traits) -> int:
    """One layer's attention weights (and biases)."""
    if text.get("kv_lora_rank"):
        # DeepSeek MLA (modeling_deepseek_v3.py DeepseekV3Attention): low-rank q and kv with their norms.
        q_lora = _first(text, "q_lora_rank")
        kv_lora = text["kv_lora_rank"]
        nope, rope = _first(text, "qk_nope_head_dim") or 128, _first(text, "qk_rope_head_dim") or 64
        v_dim = _first(text, "v_head_dim") or 128
        q = hidden * q_lora + q_lora + q_lora * heads * (nope + rope) if q_lora else hidden * heads * (nope + rope)
        kv = hidden * (kv_lora + rope) + kv_lora + kv_lora * heads * (nope + v_dim)
        return q + kv + heads * v_dim * hidden
    q, kv = heads * head_dim, kv_heads * head_dim
    n = hidden * (q + 2 * kv) + q * hidden
    bias = text.get("attention_bias", text.get("bias", text.get("use_bias")))
    if tr.qkv_bias or bias is True:
        n += q + 2 * kv
    if tr.o_bias or bias is True:
        n += hidden
    if tr.qk_norm:
        n += 2 * head_dim
    return n


def _mlp(hidden: int, inner: int, tr: Traits, text: dict) -> int:
    bias = tr.mlp_bias or text.get("mlp_bias") is True or text.get("bias") is True
    if tr.gated:
        return 3 * hidden * inner + ((2 * inner + hidden) if bias else 0)
    return 2 * hidden * inner + ((inner + hidden) if bias else 0)


def _sparse_layers(text: dict, layers: int) -> int:
    """How many layers have routed experts (the rest keep a dense MLP)."""
    first_dense = _first(text, "first_k_dense_replace") or 0  # DeepSeek
    freq = _first(text, "moe_layer_freq", "decoder_sparse_step") or 1  # DeepSeek-V2 / Qwen-MoE
    dense_only = set(text.get("mlp_only_layers") or [])  # Qwen-MoE
    step_is_qwen = "decoder_sparse_step" in text
    n = 0
    for i in range(layers):
        if i < first_dense or i in dense_only:
            continue
        if (((i + 1) % freq) if step_is_qwen else (i % freq)) == 0:
            n += 1
    return n


def estimate_from_config(config: dict) -> ParamEstimate | None:
    """Parameters of the language model a ``config.json`` describes, or None when it lacks the sizes."""
    _, text = sglang_text_config(config)
    model_type = text.get("model_type") or config.get("model_type")
    hidden = _first(text, "hidden_size", "n_embd", "n_embed", "d_model", "dim")
    layers = _first(text, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
    vocab = _first(text, "vocab_size", "padded_vocab_size") or _first(config, "vocab_size")
    if not (hidden and layers and vocab):
        return None
    tr = _traits(model_type, text)
    heads = _first(text, "num_attention_heads", "n_head", "num_heads", "n_heads") or max(1, hidden // 128)
    kv_heads = _first(text, "num_key_value_heads", "num_kv_heads", "n_head_kv", "num_query_groups")
    if kv_heads is None:
        # Falcon's old layout with multi_query has one kv head (modeling_falcon.py:241).
        kv_heads = 1 if text.get("multi_query") and not text.get("new_decoder_architecture") else heads
    head_dim = _first(text, "head_dim") or hidden // heads
    inner = _first(text, "intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim", "d_ff") or 4 * hidden
    tie = text.get("tie_word_embeddings", config.get("tie_word_embeddings", tr.tie))

    norm = 2 * hidden if tr.layernorm else hidden
    embed = vocab * hidden + (0 if tie else vocab * hidden)
    if tr.learned_positions:
        embed += (_first(text, "n_positions", "max_position_embeddings") or 0) * hidden
    attn = _attention(text, hidden, heads, kv_heads, head_dim, tr)
    dense_layer = attn + _mlp(hidden, inner, tr, text) + 2 * norm

    experts = _first(text, "num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
    if not experts or experts < 2:
        return ParamEstimate(total=embed + layers * dense_layer + norm, active=None, source=SOURCE_CONFIG)
    per_token = _first(text, "num_experts_per_tok", "num_selected_experts", "moe_top_k", "top_k") or 2
    expert_inner = _first(text, "moe_intermediate_size") or inner
    expert = _mlp(hidden, expert_inner, tr, text)
    shared = 0
    if _first(text, "n_shared_experts"):  # DeepSeek: n_shared_experts experts of moe_intermediate_size
        shared = _mlp(hidden, expert_inner * text["n_shared_experts"], tr, text)
    elif _first(text, "shared_expert_intermediate_size"):  # Qwen2-MoE: one shared expert and its gate
        shared = _mlp(hidden, text["shared_expert_intermediate_size"], tr, text) + hidden
    router = hidden * experts
    sparse = _sparse_layers(text, layers)
    base = embed + norm + layers * (attn + 2 * norm) + (layers - sparse) * _mlp(hidden, inner, tr, text)
    total = base + sparse * (experts * expert + shared + router)
    active = base + sparse * (min(per_token, experts) * expert + shared + router)
    return ParamEstimate(total=total, active=active, source=SOURCE_CONFIG)


# A size in a repo name: "7B", "1.5b", "350M", "8x7B", "30B-A3B". K is left out on purpose: "4k"/"128k" in a
# name is a context length far more often than a parameter count.
_SIZE = re.compile(r"(?<![A-Za-z0-9.])(?:(\d+)x)?(\d+(?:\.\d+)?)([BbMmTt])(?![A-Za-z0-9])")
_ACTIVE = re.compile(r"(?<![A-Za-z0-9.])[Aa](\d+(?:\.\d+)?)([BbMm])(?![A-Za-z0-9])")
_UNIT = {"m": 1e6, "b": 1e9, "t": 1e12}


def estimate_from_name(repo_id: str) -> ParamEstimate | None:
    """The size a repo name states (``Qwen2.5-7B`` -> 7e9), or None.

    ``8x7B`` counts 8 experts of 7B (an upper bound: experts share attention and embeddings);
    ``30B-A3B`` gives 3B active.
    """
    name = repo_id.rsplit("/", 1)[-1]
    match = _SIZE.search(name)
    if match is None:
        return None
    count, size, unit = match.groups()
    total = int(float(size) * _UNIT[unit.lower()] * (int(count) if count else 1))
    active = None
    found = _ACTIVE.search(name, match.end())
    if found is not None:
        active = int(float(found.group(1)) * _UNIT[found.group(2).lower()])
    if total <= 0:
        return None
    return ParamEstimate(total=total, active=active, source=SOURCE_NAME)


def best_params(params: int | None, estimate: int | None, estimate_source: str | None,
                repo_id: str | None = None, active: int | None = None) -> ParamEstimate | None:
    """One repo's size: the Hub's count, else the config estimate, else the name; None when unknown."""
    if params is not None:
        return ParamEstimate(total=params, active=None, source=SOURCE_SAFETENSORS)
    if estimate is not None:
        return ParamEstimate(total=estimate, active=active, source=estimate_source or SOURCE_CONFIG)
    return estimate_from_name(repo_id) if repo_id else None


def _kv_per_token(text: dict, kv_layers: int | None, kv_heads: int | None, head_dim: int | None) -> int | None:
    """KV cache elements one token adds: keys and values per KV head, or, for multi-head latent attention
    (DeepSeek-V2/V3, Kimi-K2: ``kv_lora_rank``), the compressed latent and the shared rotary key per layer
    (DeepSeek-V2, https://arxiv.org/abs/2405.04434 section 2.1.2: only c_t^KV and k_t^R are cached)."""
    if not kv_layers:
        return None
    rank = _first(text, "kv_lora_rank")
    if rank:
        return kv_layers * (rank + (_first(text, "qk_rope_head_dim") or 0))
    return 2 * kv_layers * kv_heads * head_dim if kv_heads and head_dim else None


def _state_bytes_per_layer(text: dict, hidden: int | None) -> int | None:
    """Bytes of one state layer's recurrent state for one sequence, as llama.cpp keeps it: a convolution row of
    n_embd_r and a state row of n_embd_s, both f32 (src/llama-hparams.cpp:208-258, src/llama-model.cpp:2483-2484 at
    0c1e57098). Gated DeltaNet (Qwen3-Next, Qwen3.5/3.6: conversion/qwen.py:377-381 maps the linear_* keys),
    Mamba-1/2 (d_inner, n_groups, d_state, d_conv) and LFM2's short convolutions; None for a config without them."""
    k_heads = _first(text, "linear_num_key_heads")
    v_heads, k_dim, v_dim = (_first(text, key) for key in ("linear_num_value_heads", "linear_key_head_dim",
                                                             "linear_value_head_dim"))
    if k_heads and v_heads and k_dim and v_dim:  # ssm_d_state = k_dim, d_inner = v_heads * v_dim, groups = k_heads
        conv = (_first(text, "linear_conv_kernel_dim") or 4) - 1
        return 4 * (conv * (v_heads * v_dim + 2 * k_heads * k_dim) + k_dim * v_heads * v_dim)
    d_state = _first(text, "mamba_d_state", "ssm_state_size", "state_size")
    inner = _first(text, "mamba_d_ssm", "mamba_d_inner") or (
        (_first(text, "mamba_n_heads", "mamba_num_heads") or 0) * (_first(text, "mamba_d_head", "mamba_head_dim") or 0)
        or (hidden or 0) * (_first(text, "mamba_expand", "expand") or 0))
    if d_state and inner:
        conv = (_first(text, "mamba_d_conv", "conv_kernel", "mamba_conv_kernel") or 4) - 1
        groups = _first(text, "mamba_n_groups", "n_groups") or 0
        return 4 * (conv * (inner + 2 * groups * d_state) + d_state * inner)
    cache = _first(text, "conv_L_cache")
    return 4 * hidden * (cache - 1) if cache and hidden else None


def speed_facts(config: dict, kv_layers: int | None = None) -> dict:
    """What the speed model (indexer/speed/model.py) reads of a config beyond the parameter count: the estimate and
    the active share, layers, hidden size, vocabulary, tied embeddings, routed experts, KV elements per token
    (``kv_layers``: the layers that keep a KV cache, for hybrid models) and the declared quantization."""
    _, text = sglang_text_config(config)
    est = estimate_from_config(config)
    hidden = _first(text, "hidden_size", "n_embd", "n_embed", "d_model", "dim")
    layers = _first(text, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
    heads = _first(text, "num_attention_heads", "n_head", "num_heads", "n_heads") or (
        max(1, hidden // 128) if hidden else None)
    kv_heads = _first(text, "num_key_value_heads", "num_kv_heads", "n_head_kv", "num_query_groups") or heads
    head_dim = _first(text, "head_dim") or (hidden // heads if hidden and heads else None)
    kv_layers = kv_layers if kv_layers is not None else layers
    experts = _first(text, "num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
    quant = {}
    for key in ("quantization", "quantization_config"):
        value = config.get(key) if isinstance(config.get(key), dict) else text.get(key)
        if isinstance(value, dict):  # the keys that name a method and its bits, nothing else
            quant[key] = {k: value[k] for k in ("bits", "mode", "quant_method", "w_bit", "num_bits", "fmt",
                                                "load_in_4bit", "load_in_8bit") if isinstance(value.get(k), (int, str))}
    tie = text.get("tie_word_embeddings", config.get("tie_word_embeddings"))
    state_layers = layers - kv_layers if isinstance(layers, int) and kv_layers and kv_layers < layers else None
    per_layer = _state_bytes_per_layer(text, hidden) if state_layers else None
    return {
        "params_estimate": est.total if est else None, "active_estimate": est.active if est else None,
        "layers": layers, "hidden": hidden, "vocab": _first(text, "vocab_size") or _first(config, "vocab_size"),
        "tied": tie if isinstance(tie, bool) else None,
        "experts": experts if isinstance(experts, int) and experts > 1 else None,
        "experts_per_token": _first(text, "num_experts_per_tok", "num_selected_experts", "moe_top_k", "moe_topk",
                                    "num_experts_per_token")
        if isinstance(experts, int) and experts > 1 else None,
        "kv_per_token": _kv_per_token(text, kv_layers, kv_heads, head_dim),
        # a hybrid's other layers keep a recurrent state, not a KV cache (linear attention, state-space)
        "state_layers": state_layers,
        # what a copy of the recurrent state of one sequence moves (llama-server snapshots it every round)
        "state_bytes": state_layers * per_layer if state_layers and per_layer else None,
        "quantization": quant or None,
    }
