"""The architecture facts the engines check before any vocabulary, from ``config.json`` (and
``tokenizer_config.json``): which layers keep a state that cannot roll back, the sliding window, the
context length each engine derives, and whether the model has a vision tower.

Only the files the crawl already fetches are read; nothing is loaded or run. Each fact is what the
engines' own code reads (the rules that use them, with file:line, are in ``indexer/engines/``):

* ``layers``: the kinds of the text model's layers with their counts, from ``layer_types``
  (``full_attention``, ``sliding_attention``, ``linear_attention``, ``mamba``, ``conv``, ...),
  ``layers_block_type`` (Jamba, Granite-4.0-H), ``hybrid_override_pattern`` (Nemotron-H), else the
  model type's one kind (Mamba, RWKV, ...).
* ``state``: the recurrent-state families among them (``mamba1``, ``mamba2``, ``gated_deltanet``,
  ``short_conv``, ``rwkv``, ``recurrent``): a cache with one of these cannot be cut back to a prefix.
* ``sliding_window``: the window of the sliding-attention layers, when any slide.
* ``context``: the context length SGLang (``get_context_length``) and vLLM (``_get_and_verify_max_len``)
  derive from the text config.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache

from .. import deferred
from ..errors import AmbiguousTextConfig
from . import TRANSFORMERS_LOCK
from .params import speed_facts
from .textconfig import sglang_text_config, transformers_text_config, vllm_text_config

# Model types whose layers keep a recurrent state (the model code of transformers 5.24.0, vLLM 0.33.0, mlx-lm
# d78bf58e): the family of their state layers. Jamba and Zamba run Mamba-1 mixers; Falcon-H1, Granite-4.0-H,
# Nemotron-H, Bamba, Zamba2 and PLaMo-2 Mamba-2; Qwen3-Next, Qwen3.5/3.6, Kimi-Linear, OLMo-hybrid gated
# DeltaNet-style linear attention; LFM2 short convolutions.
STATE_BY_MODEL_TYPE = {
    "mamba": "mamba1", "falcon_mamba": "mamba1", "jamba": "mamba1", "zamba": "mamba1",
    "mamba2": "mamba2", "nemotron_h": "mamba2", "nemotron_h_moe": "mamba2", "granitemoehybrid": "mamba2",
    "falcon_h1": "mamba2", "bamba": "mamba2", "zamba2": "mamba2", "plamo2": "mamba2",
    "qwen3_next": "gated_deltanet", "qwen3_5": "gated_deltanet", "qwen3_5_moe": "gated_deltanet",
    "qwen3_5_text": "gated_deltanet", "qwen3_5_moe_text": "gated_deltanet", "kimi_linear": "gated_deltanet",
    "olmo_hybrid": "gated_deltanet", "bailing_moe_linear": "gated_deltanet", "qwen4_exp": "gated_deltanet",
    "glm5_next": "gated_deltanet",
    "lfm2": "short_conv", "lfm2_moe": "short_conv", "lfm2_vl": "short_conv", "lfm2-vl": "short_conv",
    "rwkv": "rwkv", "rwkv5": "rwkv", "rwkv6": "rwkv", "rwkv7": "rwkv",
    "recurrent_gemma": "recurrent", "xlstm": "recurrent",
}
# Model types made of state layers only (no attention layer at all).
PURE_STATE = frozenset({"mamba", "falcon_mamba", "mamba2", "rwkv", "rwkv5", "rwkv6", "rwkv7", "xlstm"})
# A layer_types / layers_block_type value -> the kind we report (the family for state layers).
LAYER_KIND = {"full_attention": "full_attention", "attention": "full_attention", "global": "full_attention",
              "sliding_attention": "sliding_attention", "sliding": "sliding_attention",
              "chunked_attention": "chunked_attention", "linear_attention": "linear_attention",
              "mamba": "mamba", "mamba2": "mamba", "conv": "short_conv", "short_conv": "short_conv",
              "hybrid": "mamba", "recurrent": "recurrent"}
STATE_KINDS = frozenset({"short_conv", "rwkv", "recurrent", "mamba1", "mamba2", "gated_deltanet"})
# Nemotron-H's hybrid_override_pattern: M a Mamba-2 layer, * attention, - and E feed-forward/MoE (no cache).
NEMOTRON_PATTERN = {"M": "mamba", "*": "full_attention"}
# Model types whose every other layer (or a fixed pattern of them) slides even without layer_types
# (transformers 5.24.0's Gemma-2/3/4, Cohere-2 and gpt-oss configs derive their layer_types from the pattern).
ALWAYS_SLIDING = frozenset({"gemma2", "gemma3", "gemma3_text", "gemma3n", "gemma3n_text", "gemma4", "gemma4_text",
                            "cohere2", "gpt_oss"})

# SGLang 0.5.23 srt/utils/hf_transformers/common.py:668-694 (CONTEXT_LENGTH_KEYS, get_context_length).
SGLANG_CONTEXT_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
                       "max_position_embeddings")
SGLANG_DEFAULT_CONTEXT = 2048  # common.py:694
# vLLM 0.33.0 transformers_utils/model_arch_config_convertor.py:374-403 (derive_max_model_len_and_key): the
# smallest of these keys, model_max_length winning when set.
VLLM_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                     "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
VLLM_DEFAULT_CONTEXT = 2048  # config/model.py:2586
# config/model.py:2613-2620: rope types whose factor is not applied again
VLLM_UNSCALED_ROPE = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")
# transformers 5.24.0 keys these models' rope_parameters by layer type (models/gemma3/configuration_gemma3.py:
# 135-153), so SGLang's rope_scaling.get("factor", 1) finds no factor at the top.
PER_LAYER_ROPE = frozenset({"gemma3", "gemma3_text", "gemma3n", "gemma3n_text", "olmo3", "cohere_compass",
                            "dots3_note", "step3p7"})
# transformers' attribute_map aliases that the engines' getattr sees (GPT-2 family: n_positions).
ALIASES = {"max_position_embeddings": ("n_positions", "n_ctx")}


@dataclass
class ArchFacts:
    """A model's architecture facts as the engines' non-vocabulary checks read them."""

    model_type: str | None = None
    text_model_type: str | None = None  # the text sub-config's model_type (Qwen3.5: qwen3_5_moe_text)
    layers: dict[str, int] = field(default_factory=dict)  # layer kind -> count (the text model's)
    listed: bool = False  # the config names each layer's kind (layer_types and the like)
    state: list[str] = field(default_factory=list)  # recurrent-state families (mamba1, gated_deltanet, ...)
    sliding_window: int | None = None  # the window of the sliding layers, when any slide
    context_sglang: int | None = None  # SGLang's derived context length
    context_vllm: int | None = None  # vLLM's derived max_model_len (with tokenizer_config's model_max_length)
    vision: bool = False  # config.json has vision_config
    gguf_arch: str | None = None  # general.architecture, for a GGUF file
    head: dict | None = None  # a GGUF speculator head or embedded MTP layers: kind, llama-server --spec-type, keys
    gguf_block_count: int | None = None  # <arch>.block_count (a GGUF file)
    gguf_embedding_length: int | None = None  # <arch>.embedding_length (a GGUF file)
    source: str = "config.json"
    speed: dict | None = None  # what the speed model reads (vocab.params.speed_facts), None for older rows

    def to_dict(self) -> dict:
        """The JSON shape stored in the catalog and shown under ``check``'s details."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict | None) -> ArchFacts | None:
        """The stored form back (unknown keys ignored, so older rows still read)."""
        if not isinstance(d, dict):
            return None
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def types(self) -> set[str]:
        """The model types an engine may key on: the top level's and the text sub-config's."""
        return {t for t in (self.model_type, self.text_model_type) if t}

    @property
    def stateful(self) -> bool:
        """Some layer keeps a recurrent state, so the cache cannot be cut back to a prefix."""
        return bool(self.state)

    @property
    def hybrid(self) -> bool:
        """State layers beside attention layers (a pure Mamba/RWKV model is not hybrid)."""
        return self.stateful and any(k.endswith("attention") and k != "linear_attention" for k in self.layers)


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _text(config: dict) -> dict:
    """The text config the facts are read from: transformers' get_text_config(), else SGLang's pick."""
    try:
        return transformers_text_config(config)[1]
    except AmbiguousTextConfig:
        return sglang_text_config(config)[1]


def layer_kinds(text: dict, model_type: str | None) -> tuple[Counter, bool]:
    """The text model's layer kinds and counts, and whether the config lists every layer (see the module
    docstring for the keys read)."""
    n = _int(text.get("num_hidden_layers")) or _int(text.get("n_layer")) or _int(text.get("num_layers")) or 0
    for key in ("layer_types", "layers_block_type", "block_types"):
        value = text.get(key)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return Counter(LAYER_KIND.get(v.lower(), v.lower()) for v in value), True
    pattern = text.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        kinds = Counter(NEMOTRON_PATTERN[c] for c in pattern if c in NEMOTRON_PATTERN)
        if kinds:
            return kinds, True
    state = STATE_BY_MODEL_TYPE.get(model_type or "")
    interval = _int(text.get("full_attention_interval"))
    if state and interval and n:  # Qwen3-Next: every interval-th layer is full attention, the others linear
        full = n // interval
        return Counter({"full_attention": full, "linear_attention": n - full}), True
    period = _int(text.get("attn_layer_period"))
    if state and period and n:  # Jamba: attention where i % attn_layer_period == attn_layer_offset
        offset = text.get("attn_layer_offset") if isinstance(text.get("attn_layer_offset"), int) else 0
        attn = sum(1 for i in range(n) if i % period == offset)
        return Counter({"full_attention": attn, state: n - attn}), False
    if state and model_type in PURE_STATE:
        return Counter({state: n or 1}), False
    if state:  # a hybrid without a per-layer list (Falcon-H1: attention and Mamba-2 in every layer)
        return Counter({"full_attention": n or 1, state: n or 1}), False
    if _window(text) and model_type in ALWAYS_SLIDING:  # a fixed pattern: one full layer in every `pattern`
        every = _int(text.get("sliding_window_pattern")) or 2
        full = max(1, (n or every) // every)
        return Counter({"sliding_attention": (n or every) - full, "full_attention": full}), False
    if _window(text):  # Mistral-style: one window for every layer
        return Counter({"sliding_attention": n or 1}), False
    return (Counter({"full_attention": n}) if n else Counter()), False


def _window(text: dict) -> int | None:
    """The configured window, unless the config turns it off (Qwen2: use_sliding_window false)."""
    if text.get("use_sliding_window") is False:
        return None
    return _int(text.get("sliding_window"))


def _state_families(kinds: Counter, model_type: str | None) -> list[str]:
    known = STATE_BY_MODEL_TYPE.get(model_type or "")
    out = set()
    for kind in kinds:
        if kind == "linear_attention":
            out.add("gated_deltanet")
        elif kind == "mamba":
            out.add(known if known in ("mamba1", "mamba2") else "mamba2")
        elif kind in STATE_KINDS:
            out.add(kind)
    if known and not out:  # a per-layer list in words we do not know: the model type tells
        out.add(known)
    return sorted(out)


def _rope(text: dict) -> dict | None:
    for key in ("rope_scaling", "rope_parameters"):  # transformers 5: rope_scaling is rope_parameters
        value = text.get(key)
        if isinstance(value, dict):
            return value
    return None


def _value(text: dict, key: str):
    v = text.get(key)
    if v is None:
        for alias in ALIASES.get(key, ()):
            if text.get(alias) is not None:
                return text.get(alias)
    return v


def _class_default(text: dict, config: dict) -> int | None:
    """max_position_embeddings as transformers' config class fills it in when config.json leaves it out: both
    engines read the config object, not the JSON (AutoConfig.for_model, never remote code)."""
    model_type = text.get("model_type") or config.get("model_type")
    return _type_default(model_type) if isinstance(model_type, str) else None


@lru_cache(maxsize=256)
def _type_default(model_type: str) -> int | None:
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # as vocab/fingerprint.py: no banner in the output
    try:
        with TRANSFORMERS_LOCK:
            text_config = deferred.transformers.AutoConfig.for_model(model_type).get_text_config()
            value = getattr(text_config, "max_position_embeddings", None)
    except Exception:  # noqa: BLE001 - an unknown model type (or no transformers): the engines' own default
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def sglang_context(config: dict) -> int:
    """SGLang's get_context_length on its hf_text_config (common.py:677-694): the first context key, times the
    rope factor unless the rope parameters carry original_max_position_embeddings or are llama3."""
    text = sglang_text_config(config)[1]
    rope = _rope(text)
    factor = 1
    if rope and (text.get("model_type") or config.get("model_type")) not in PER_LAYER_ROPE:
        factor = rope.get("factor", 1) or 1
        if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
            factor = 1
    for key in SGLANG_CONTEXT_KEYS:
        value = _value(text, key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(factor * value)
    default = _class_default(text, config)
    return int(factor * default) if default else SGLANG_DEFAULT_CONTEXT


def vllm_context(config: dict, tokenizer_config: dict | None = None) -> int | None:
    """vLLM's max_model_len from its hf_text_config (model_arch_config_convertor.py:374-403, config/model.py:
    2545-2640): the smallest context key, tokenizer_config's model_max_length as a cap, the rope factor except
    for the types in VLLM_UNSCALED_ROPE and Gemma-3. None when get_text_config() raises (vLLM refuses)."""
    try:
        text = vllm_text_config(config)[1]
    except AmbiguousTextConfig:
        return None
    found = [v for k in VLLM_CONTEXT_KEYS if isinstance(v := _value(text, k), (int, float)) and not isinstance(v, bool)]
    if not found and (default := _class_default(text, config)):
        found = [default]
    derived: float = min(found) if found else float("inf")
    if isinstance(text.get("model_max_length"), (int, float)) and text.get("model_max_length"):
        derived = text["model_max_length"]
    cap = (tokenizer_config or {}).get("model_max_length")
    if isinstance(cap, (int, float)) and not isinstance(cap, bool):
        derived = min(derived, cap)
    if derived == float("inf"):
        derived = VLLM_DEFAULT_CONTEXT
    rope = _rope(text)
    mt = text.get("model_type") or config.get("model_type") or ""
    if rope and "gemma3" not in mt:
        rope_type = rope.get("rope_type") or rope.get("type") or "default"
        if rope_type not in VLLM_UNSCALED_ROPE:
            derived *= rope.get("factor", 1.0) or 1.0
    return int(derived)


def arch_facts(config: dict, tokenizer_config: dict | None = None) -> ArchFacts:
    """Every architecture fact of one config.json (and its tokenizer_config.json), read once."""
    model_type = config.get("model_type") if isinstance(config.get("model_type"), str) else None
    text = _text(config)
    text_type = text.get("model_type") if text is not config and isinstance(text.get("model_type"), str) else None
    # the type that names the layers: the one an engine knows as stateful, else the text sub-config's, else the top's
    kind_type = next((x for x in (text_type, model_type) if x in STATE_BY_MODEL_TYPE), text_type or model_type)
    kinds, listed = layer_kinds(text, kind_type)
    window = _window(text) if kinds.get("sliding_attention") else None
    kv_layers = sum(n for k, n in kinds.items() if "attention" in k and "linear" not in k) or None
    return ArchFacts(
        model_type=model_type, text_model_type=text_type, layers=dict(sorted(kinds.items())), listed=listed,
        state=_state_families(kinds, kind_type), sliding_window=window,
        context_sglang=sglang_context(config), context_vllm=vllm_context(config, tokenizer_config),
        vision=isinstance(config.get("vision_config"), dict) or "vision_config" in config,
        speed=speed_facts(config, kv_layers))
