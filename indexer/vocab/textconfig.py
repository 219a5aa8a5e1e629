"""Which sub-config of ``config.json`` each engine reads as the text config.

SGLang picks it like its ``get_hf_text_config``; transformers uses ``PretrainedConfig.get_text_config()``,
and vLLM the same after remapping a few model types. All three are reproduced on the raw JSON, so reading a
config (``modelconfig``), estimating its size (``params``) and the head rules share one rule per engine.
"""

from __future__ import annotations

from ..errors import AmbiguousTextConfig

# SGLang 0.5.23 srt/utils/hf_transformers/common.py:547-613 (get_hf_text_config): a Llava...ForCausalLM
# keeps the top level, otherwise the first of these that exists (thinker_config: its text_config).
SGLANG_TEXT_KEYS = ("thinker_config", "llm_config", "language_config", "text_config")
# transformers 5.24.0 configuration_utils.py:1539-1562 (get_text_config): every one of these that is
# set is a candidate; more than one raises ValueError ("would be ambiguous").
TRANSFORMERS_TEXT_KEYS = ("text_encoder", "decoder", "generator", "text_config")
# vLLM 0.33.0 registers its own config classes for these model types, whose text_config is another
# key of config.json (DeepSeek-VL2: language_config; Ovis: llm_config), then calls get_text_config().
VLLM_TEXT_KEY_REMAPS = {"deepseek_vl_v2": "language_config", "ovis": "llm_config"}


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
    key = VLLM_TEXT_KEY_REMAPS.get(str(config.get("model_type")))
    if key and isinstance(config.get(key), dict):
        return key, config[key]
    return transformers_text_config(config)
