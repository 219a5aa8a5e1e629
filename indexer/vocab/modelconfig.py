"""Facts from ``config.json``: the text-config ``vocab_size`` by each engine's rule.

Which sub-config each engine reads (SGLang's ``get_hf_text_config``, transformers' and vLLM's
``get_text_config()``) is ``textconfig``; a config that does not state ``vocab_size`` falls back to
transformers' class default (AutoConfig, no remote code), which is what the engines would see.
The size estimate when the Hub has no count is ``params.estimate_from_config``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from .. import deferred
from ..errors import AmbiguousTextConfig
from ..files import DEFAULT_MAX_FILE_BYTES, InputError, read_json
from . import TRANSFORMERS_LOCK
from .archconfig import ArchFacts, arch_facts
from .params import estimate_from_config
from .textconfig import VLLM_TEXT_KEY_REMAPS, sglang_text_config, transformers_text_config, vllm_text_config


@dataclass
class ConfigFacts:
    """The facts of one ``config.json`` the engines' rules read (the writer copies every field onto the repo)."""

    model_type: str | None
    architectures: list[str] | None
    vocab_size: int | None  # SGLang's rule
    vocab_size_transformers: int | None  # transformers' get_text_config() (vLLM too)
    text_config_key: str | None  # which sub-config SGLang used, None for the top level
    auto_map: bool = False
    params_estimate: int | None = None  # params.estimate_from_config: used when the Hub has no count
    params_active_estimate: int | None = None  # per token, mixture-of-experts only
    params_estimate_source: str | None = None  # "config" when estimated
    vllm_vocab_size: int | None = None  # vLLM's get_text_config() after its model-type remaps
    text_config_error: str | None = None  # get_text_config() raises (transformers and vLLM refuse)
    has_vision_config: bool = False  # LM Studio never drafts for such a target
    arch: ArchFacts | None = None  # the architecture facts the engines check beside the vocabulary (archconfig)

    def to_dict(self) -> dict:
        """Every field by name, as the writer copies them onto the repo row."""
        return asdict(self)


def _vocab_size(value, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError("malformed", f"config.json: {where}vocab_size must be a non-negative integer")
    return value


def _vocab_sizes_from_transformers(directory: Path, sglang_key: str | None) -> tuple[int | None, int | None]:
    """(SGLang, transformers) vocab_size as transformers' config classes fill them in, for
    configs that leave vocab_size to a class default (AutoConfig, never remote code)."""
    try:
        with TRANSFORMERS_LOCK:
            cfg = deferred.transformers.AutoConfig.from_pretrained(str(directory), trust_remote_code=False)
        sub = cfg
        for part in (sglang_key or "").split(".") if sglang_key else ():
            sub = getattr(sub, part, None)
        return getattr(sub, "vocab_size", None), getattr(cfg.get_text_config(), "vocab_size", None)
    except Exception:
        return None, None


# A model dimension (layers, widths, heads, experts, vocabulary, context) above this is no model's: refused as out
# of range, where it would overflow the catalog's INTEGER columns (params = 12 * layers * hidden**2 ...) or SQLite.
MAX_DIMENSION = 2**31 - 1
DIMENSION_KEYS = frozenset((
    # what vocab/params.py, vocab/archconfig.py and engines/headfacts.py read as sizes
    "d_ff", "d_model", "dim", "ffn_dim", "ffn_hidden_size", "head_dim", "hidden_size", "intermediate_size",
    "kv_lora_rank", "max_position_embeddings", "moe_intermediate_size", "moe_num_experts", "moe_top_k", "n_embd",
    "n_embed", "n_head", "n_head_kv", "n_heads", "n_inner", "n_layer", "n_layers", "n_positions", "n_routed_experts",
    "n_shared_experts", "num_attention_heads", "num_experts", "num_experts_per_tok", "num_heads",
    "num_hidden_layers", "num_key_value_heads", "num_kv_heads", "num_layers", "num_local_experts",
    "num_query_groups", "num_selected_experts", "padded_vocab_size", "q_lora_rank", "qk_nope_head_dim",
    "qk_rope_head_dim", "shared_expert_intermediate_size", "top_k", "v_head_dim", "vocab_size",
    "draft_vocab_size", "num_target_layers", "target_hidden_size", "sliding_window", "num_nextn_predict_layers",
    "mtp_num_hidden_layers", "num_mtp_modules"))


def check_dimensions(config: dict, where: str = "", depth: int = 0) -> None:
    """Refuse a size above :data:`MAX_DIMENSION` (InputError, one line naming it), at the top level and in the
    nested configs (text_config, ...)."""
    for key, value in config.items():
        if isinstance(value, dict) and depth < 3:
            check_dimensions(value, f"{where}{key}.", depth + 1)
        elif (key in DIMENSION_KEYS and isinstance(value, int) and not isinstance(value, bool)
              and not -MAX_DIMENSION <= value <= MAX_DIMENSION):
            raise InputError("malformed", f"config.json: {where}{key} {value} is out of range "
                                          f"(at most {MAX_DIMENSION})")


def read_config(directory: str | Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> ConfigFacts:
    """Every fact the engines' rules take from a directory's ``config.json``, read once (size-capped)."""
    directory = Path(directory)
    path = directory / "config.json"
    if not path.is_file():
        raise InputError("malformed", f"{directory}: no config.json")
    config = read_json(path, max_bytes)
    model_type = config.get("model_type")
    archs = config.get("architectures")
    if archs is not None and not (isinstance(archs, list) and all(isinstance(a, str) for a in archs)):
        raise InputError("malformed", "config.json: architectures must be a list of strings")
    if model_type is not None and not isinstance(model_type, str):
        raise InputError("malformed", "config.json: model_type must be a string")
    check_dimensions(config)

    key, sub = sglang_text_config(config)
    sglang = _vocab_size(sub.get("vocab_size"), f"{key}." if key else "")
    error, hf, vllm = None, None, None
    try:
        tkey, tsub = transformers_text_config(config)
        hf = _vocab_size(tsub.get("vocab_size"), f"{tkey}." if tkey else "")
    except AmbiguousTextConfig as e:
        error = str(e)
    try:
        vkey, vsub = vllm_text_config(config)
        vllm = _vocab_size(vsub.get("vocab_size"), f"{vkey}." if vkey else "")
    except AmbiguousTextConfig:
        pass
    if sglang is None or (hf is None and error is None):
        from_classes = _vocab_sizes_from_transformers(directory, key)
        sglang = sglang if sglang is not None else from_classes[0]
        hf = hf if hf is not None or error is not None else from_classes[1]
        if vllm is None and error is None and model_type not in VLLM_TEXT_KEY_REMAPS:
            vllm = hf
    estimate = estimate_from_config(config)
    tokenizer_config = None
    if (directory / "tokenizer_config.json").is_file():  # vLLM caps max_model_len by its model_max_length
        try:
            tokenizer_config = read_json(directory / "tokenizer_config.json", max_bytes)
        except InputError:
            tokenizer_config = None
    return ConfigFacts(
        model_type=model_type,
        architectures=archs,
        vocab_size=sglang,
        vocab_size_transformers=hf,
        text_config_key=key,
        auto_map=bool(config.get("auto_map")),
        params_estimate=estimate.total if estimate else None,
        params_active_estimate=estimate.active if estimate else None,
        params_estimate_source=estimate.source if estimate else None,
        vllm_vocab_size=vllm,
        text_config_error=error,
        has_vision_config="vision_config" in config,
        arch=arch_facts(config, tokenizer_config if isinstance(tokenizer_config, dict) else None),
    )
