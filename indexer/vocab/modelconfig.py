"""Facts from ``config.json``: the text-config ``vocab_size`` by each engine's rule.

SGLang picks the text config like its ``get_hf_text_config``; transformers uses
``PretrainedConfig.get_text_config()``, and vLLM the same after remapping a few model types.
All are reproduced on the raw JSON; a config that does not state ``vocab_size`` falls back to
transformers' class default (AutoConfig, no remote code), which is what the engines would see.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import AmbiguousTextConfig
from ..files import DEFAULT_MAX_FILE_BYTES, InputError, read_json

# SGLang 0.5.23 srt/utils/hf_transformers/common.py:547-613 (get_hf_text_config): a Llava...ForCausalLM
# keeps the top level, otherwise the first of these that exists (thinker_config: its text_config).
SGLANG_TEXT_KEYS = ("thinker_config", "llm_config", "language_config", "text_config")
# transformers 5.24.0 configuration_utils.py:1539-1562 (get_text_config): every one of these that is
# set is a candidate; more than one raises ValueError ("would be ambiguous").
TRANSFORMERS_TEXT_KEYS = ("text_encoder", "decoder", "generator", "text_config")
# vLLM 0.33.0 registers its own config classes for these model types, whose text_config is another
# key of config.json (DeepSeek-VL2: language_config; Ovis: llm_config), then calls get_text_config().
VLLM_TEXT_KEY_REMAPS = {"deepseek_vl_v2": "language_config", "ovis": "llm_config"}


@dataclass
class ConfigFacts:
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

    def to_dict(self) -> dict:
        return asdict(self)


def _vocab_size(value, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError("malformed", f"config.json: {where}vocab_size must be a non-negative integer")
    return value


def sglang_text_config(config: dict) -> tuple[str | None, dict]:
    """The sub-config SGLang's get_hf_text_config would use, and its key."""
    archs = config.get("architectures") or []
    if archs and isinstance(archs[0], str) and archs[0].startswith("Llava") and archs[0].endswith("ForCausalLM"):
        return None, config
    for key in SGLANG_TEXT_KEYS:
        sub = config.get(key)
        if isinstance(sub, dict):
            if key == "thinker_config" and isinstance(sub.get("text_config"), dict):
                return "thinker_config.text_config", sub["text_config"]
            return key, sub
    return None, config


def transformers_text_config(config: dict) -> tuple[str | None, dict]:
    """The sub-config ``get_text_config()`` returns; :class:`AmbiguousTextConfig` where it raises."""
    found = [k for k in TRANSFORMERS_TEXT_KEYS if isinstance(config.get(k), dict)]
    if len(found) > 1:
        raise AmbiguousTextConfig(f"get_text_config() is ambiguous: config.json has {', '.join(found)}")
    if len(found) == 1:
        return found[0], config[found[0]]
    return None, config


def vllm_text_config(config: dict) -> tuple[str | None, dict]:
    """vLLM's ``hf_text_config``: its remapped sub-config for a few model types, else ``get_text_config()``."""
    key = VLLM_TEXT_KEY_REMAPS.get(config.get("model_type"))
    if key and isinstance(config.get(key), dict):
        return key, config[key]
    return transformers_text_config(config)


def _vocab_sizes_from_transformers(directory: Path, sglang_key: str | None) -> tuple[int | None, int | None]:
    """(SGLang, transformers) vocab_size as transformers' config classes fill them in, for
    configs that leave vocab_size to a class default (AutoConfig, never remote code)."""
    try:
        from transformers import AutoConfig

        cfg = AutoConfig.from_pretrained(str(directory), trust_remote_code=False)
        sub = cfg
        for part in (sglang_key or "").split(".") if sglang_key else ():
            sub = getattr(sub, part, None)
        return getattr(sub, "vocab_size", None), getattr(cfg.get_text_config(), "vocab_size", None)
    except Exception:
        return None, None


def read_config(directory: str | Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> ConfigFacts:
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
    from .params import estimate_from_config

    estimate = estimate_from_config(config)
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
    )
