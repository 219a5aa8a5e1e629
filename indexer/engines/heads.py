"""Speculator heads (EAGLE, EAGLE-3, DFlash, DSpark, P-EAGLE) and built-in MTP: facts and per-engine fit rules.

A head is not a draft model with a vocabulary: it reads the target's hidden states (and, for
EAGLE-3/DFlash, the hidden states of chosen target layers) and its embeddings, so what must match
is shape and lineage. This module turns a head repo's ``config.json`` (+ tags) into ``HeadFacts``,
a target's ``config.json`` into a ``TargetShape``, and answers ``fit(head, target, engine)``,
``mtp(target, engine)`` and the launch commands. It is on the query path: stdlib only.

Every rule names the engine source it reproduces, at SGLang 0.5.23 (the PyPI wheel: no sdist of
0.5.23 is published; paths are relative to ``python/sglang/srt/``) and vLLM 0.33.0 (the PyPI sdist,
paths relative to ``vllm/``). Rules are plain data (the tables below) plus functions, so an
engine-registry entry can reference them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from ..vocab.modelconfig import AmbiguousTextConfig, sglang_text_config, transformers_text_config

SGLANG_VERSION = "0.5.23"
VLLM_VERSION = "0.33.0"
HEAD_ENGINES = ("sglang", "vllm")
METHODS = ("draft", "eagle", "eagle3", "dflash", "mtp", "ngram", "all")
ALGORITHMS = ("eagle", "eagle3", "dflash", "dspark", "peagle", "mtp")
FORMATS = ("sglang-native", "speculators", "eagle-legacy")
TIERS = ("exact", "lineage", "shape")
# Which head algorithms a --method lists. P-EAGLE runs as vLLM method eagle3 with parallel drafting
# (transformers_utils/configs/speculators/base.py:133-134); DSpark "extends DFlash" and reuses its
# runtime (transformers_utils/configs/speculators/algos.py:152-160).
METHOD_ALGORITHMS = {"eagle": ("eagle",), "eagle3": ("eagle3", "peagle"), "dflash": ("dflash", "dspark")}

# ---------------------------------------------------------------------------------------- format tables
# SGLang picks the model class from architectures[0] (its model registry of each file's EntryClass);
# these are the head classes it ships, with the algorithm each serves.
SGLANG_HEAD_ARCHS = {
    "LlamaForCausalLMEagle": "eagle",  # models/llama_eagle.py:153
    "Qwen2ForCausalLMEagle": "eagle",  # models/qwen2_eagle.py:151
    "MistralForCausalLMEagle": "eagle",  # models/mistral_eagle.py:210
    "LlamaForCausalLMEagle3": "eagle3",  # models/llama_eagle3.py:387
    "Eagle3DeepseekV2ForCausalLM": "eagle3",  # models/kimi_k25_eagle3.py:523
    "DFlashDraftModel": "dflash",  # models/dflash.py:1317-1324
    "DFlash2DraftModel": "dflash",  # models/dflash.py:1317-1324
    "Qwen3DSparkModel": "dspark",  # models/dspark.py:995
    "DSparkDraftModel": "dspark",  # models/dspark.py:995
}
# vLLM's speculative-decoding registry (model_executor/models/registry.py:655-744), head entries.
VLLM_HEAD_REGISTRY = {
    "EagleLlamaForCausalLM": "eagle",  # registry.py:661
    "EagleMistralForCausalLM": "eagle",  # registry.py:707
    "EagleMiniCPMForCausalLM": "eagle",  # registry.py:663
    "EagleLlama4ForCausalLM": "eagle",  # registry.py:662
    "Eagle3LlamaForCausalLM": "eagle3",  # registry.py:700
    "LlamaForCausalLMEagle3": "eagle3",  # registry.py:702 (SGLang's name -> Eagle3LlamaForCausalLM)
    "Eagle3Qwen3ForCausalLM": "eagle3",  # registry.py:705
    "Eagle3DeepseekV2ForCausalLM": "eagle3",  # registry.py:712
    "Eagle3DeepseekV3ForCausalLM": "eagle3",  # registry.py:713
    "PeagleLlamaForCausalLM": "eagle3",  # registry.py:699
    "PeagleQwen3ForCausalLM": "eagle3",  # registry.py:706
    "DFlashDraftModel": "dflash",  # registry.py:664
    "DFlash2DraftModel": "dflash",  # registry.py:666
    "Qwen3DSparkModel": "dspark",  # registry.py:681
}
# vLLM's speculators-format loader: speculators_model_type -> allowed transformer_layer_config.model_type
# (None: not restricted). transformers_utils/configs/speculators/algos.py:15-209.
VLLM_SPECULATORS_TYPES = {
    "eagle3": ("llama", "qwen3"),  # algos.py:39-45
    "peagle": ("llama", "qwen3"),  # algos.py:75-81
    "dflash": None,  # algos.py:90-126
    "dflash2": None,  # algos.py:129-149
    "dspark": None,  # algos.py:152-209
}
# Architectures that the speculators library writes (config.json "architectures"); with
# SGLANG_HEAD_ARCHS they let a listing's config digest recognise a head without downloading it.
SPECULATORS_ARCHS = ("Eagle3Speculator", "Eagle3DraftModel", "EagleSpeculator", "PEagleDraftModel",
                     "DFlashDraftModel", "DFlash2DraftModel", "DSparkDraftModel")
HEAD_ARCHS = frozenset(SGLANG_HEAD_ARCHS) | frozenset(VLLM_HEAD_REGISTRY) | frozenset(SPECULATORS_ARCHS)
HEAD_MODEL_TYPES = ("eagle", "speculators")  # vLLM's own config classes (transformers_utils/config.py:160,178)

# --------------------------------------------------------------------------------- target support tables
# EAGLE-3 needs the target to capture auxiliary hidden states.
# SGLang: the target class must implement set_eagle3_layers_to_capture
# (model_executor/model_runner_components/attention_backend_setup.py:55-61); the model files that do.
SGLANG_EAGLE3_TARGET_TYPES = (
    "llama", "mistral", "phi3", "internlm3",  # models/llama.py:929 (Mistral/Phi3 subclass LlamaForCausalLM)
    "qwen2", "qwen2_moe", "qwen2_5_vl", "qwen3", "qwen3_moe", "qwen3_next", "qwen3_vl", "qwen3_5",
    "deepseek_v2", "deepseek_v3", "gemma3", "gemma3_text", "gemma4", "gpt_oss", "glm4_moe", "kimi_k25",
    "minimax_m2", "llama4", "bailing_moe", "exaone_moe", "longcat_flash", "apertus", "qwen3_5_moe", "qwen3_5_text",
    "qwen3_5_moe_text", "gemma4_text", "minimax_m3", "glm4_moe_lite", "glm5_next",
)
# vLLM: the target class must implement SupportsEagle3 (v1/worker/gpu_model_runner.py:5173-5177).
VLLM_EAGLE3_TARGET_TYPES = (
    "llama", "mistral", "phi3",  # model_executor/models/llama.py:464 (mistral.py:236, phi3.py:10 subclass it)
    "qwen2", "qwen2_5_vl", "qwen3", "qwen3_moe", "qwen3_next", "qwen3_vl", "qwen3_5", "deepseek_v2",
    "deepseek_v3", "gemma4", "gpt_oss", "granite", "granitemoe", "minicpm", "minimax_m2", "llama4",
    "kimi_k25", "apertus", "nemotron_h", "mistral3", "llava", "pixtral", "qwen3_5_moe", "qwen3_5_text",
    "qwen3_5_moe_text", "gemma4_text", "granitemoeshared",
)

# DFlash/DSpark need the target to capture the chosen layers too. SGLang: set_dflash_layers_to_capture or
# set_dspark_layers_to_capture (model_executor/model_runner_components/attention_backend_setup.py:62-72); the model
# files that implement one (models/llama.py:943, qwen3.py:793, ...). Qwen2 does not.
SGLANG_DFLASH_TARGET_TYPES = (
    "llama", "mistral", "phi3", "internlm3", "qwen3", "qwen3_moe", "qwen3_next", "qwen3_vl", "qwen3_5",
    "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text", "deepseek_v2", "deepseek_v3", "deepseek_v32", "deepseek_v4",
    "gemma4", "gemma4_text", "glm4_moe_lite", "glm5_next", "gpt_oss", "kimi_k25", "kimi_k3", "kimi_linear", "laguna",
    "lfm2", "lfm2_moe", "lfm2_vl", "nemotron_h", "minimax_m3_vl", "bailing_moe_v3",
)
# vLLM's DFlash proposer turns on aux hidden-state outputs (v1/worker/gpu_model_runner.py:645-647), which need
# SupportsEagle3 like EAGLE-3 (gpu_model_runner.py:5173-5177): VLLM_EAGLE3_TARGET_TYPES applies.

# Built-in MTP. SGLang: the draft worker rewrites the target's architecture into its MTP class
# (configs/model_config.py:1010-1200, ``_config_draft_model``); NEXTN is an alias of EAGLE
# (speculative/spec_registry.py:183). Value: the line of the rewrite.
SGLANG_MTP_ARCHS = {
    "DeepseekV3ForCausalLM": 1032, "DeepseekV32ForCausalLM": 1032, "GlmMoeDsaForCausalLM": 1038,
    "DeepseekV4ForCausalLM": 1043, "Glm4MoeForCausalLM": 1063, "Glm4MoeLiteForCausalLM": 1067,
    "Glm5NextForConditionalGeneration": 1073, "GlmOcrForConditionalGeneration": 1080,
    "LongcatFlashForCausalLM": 1087, "MiMoForCausalLM": 1092, "MiMoV2ForCausalLM": 1094,
    "MiMoV2FlashForCausalLM": 1094, "Step3p5ForCausalLM": 1097, "InklingForConditionalGeneration": 1101,
    "GigaChat35ForCausalLM": 1112, "Step3p7ForConditionalGeneration": 1117, "BailingMoeV2ForCausalLM": 1121,
    "BailingMoeForCausalLM": 1121, "BailingMoeV2_5ForCausalLM": 1121, "BailingMoeV3ForCausalLM": 1121,
    "Ernie4_5_MoeForCausalLM": 1130, "Qwen3NextForCausalLM": 1134, "Qwen4ExpForConditionalGeneration": 1140,
    "Qwen3MoeForCausalLM": 1155, "Qwen3_5ForConditionalGeneration": 1159,
    "Qwen3_5MoeForConditionalGeneration": 1159, "Qwen3_5ForCausalLM": 1159, "Qwen3_5MoeForCausalLM": 1159,
    "ExaoneMoEForCausalLM": 1183, "ExaoneMoeForCausalLM": 1183, "NemotronHForCausalLM": 1198,
    "NemotronHPuzzleForCausalLM": 1198, "HYV3ForCausalLM": 1205, "HYV4ForCausalLM": 1209,
}
# Architectures whose draft path SGLang defaults to the target itself (arg_groups/speculative_hook.py:1121-1145);
# for the others the launch command names the target as --speculative-draft-model-path.
SGLANG_MTP_SELF_DRAFT_ARCHS = (
    "DeepseekV32ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV4ForCausalLM", "Glm4MoeForCausalLM",
    "Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM", "BailingMoeForCausalLM", "BailingMoeV2ForCausalLM",
    "BailingMoeV2_5ForCausalLM", "MistralLarge3ForCausalLM", "PixtralForConditionalGeneration",
    "HYV3ForCausalLM", "HYV4ForCausalLM", "Qwen4ExpForConditionalGeneration",
)
# vLLM: SpeculativeConfig.hf_config_override rewrites the target config into its MTP model
# (config/speculative.py:711-1170); keyed by model_type, value: the line.
VLLM_MTP_MODEL_TYPES = {
    "deepseek_v3": 749, "deepseek_v32": 749, "glm_moe_dsa": 749, "deepseek_mtp": 755, "deepseek_v4": 765,
    "dots3_note": 734, "pangu_ultra_moe": 777, "kimi_k3": 785, "ernie4_5_moe": 880, "nemotron_h": 896,
    "nemotron_h_puzzle": 896, "qwen3_next": 908, "qwen4_exp": 915, "qwen4_exp_text": 915, "bailing_hybrid": 951,
    "exaone_moe": 973, "exaone4_5": 980, "qwen3_5": 987, "qwen3_5_moe": 987, "qwen3_5_text": 987,
    "qwen3_5_moe_text": 987, "longcat_flash": 1032, "step3p5": 1039, "step3p7": 1039, "step5": 1055,
    "step5_vl": 1055, "hy_v3": 1073, "hy_v4": 1080, "minimax_m3_vl": 1117, "glm5_next": 1146,
}
# ... and the rewrites keyed by architectures[0] (same function).
VLLM_MTP_ARCHS = {
    "MiMoForCausalLM": 795, "MiMoV2ForCausalLM": 806, "MiMoV2OmniForCausalLM": 806, "MiMoV2FlashForCausalLM": 831,
    "Glm4MoeForCausalLM": 848, "Glm4MoeLiteForCausalLM": 858, "GlmOcrForConditionalGeneration": 869,
    "BailingMoeV3ForCausalLM": 946, "BailingMoeV2_5ForCausalLM": 951, "Step3p5ForCausalLM": 1039,
    "MiniMaxM3SparseForConditionalGeneration": 1117,
}
# Where each engine reads the MTP layer count. MiMo-V2 hard-codes one layer
# (vLLM model_executor/models/mimo_v2_mtp.py:53-54; SGLang configs/model_config.py:1096).
MTP_LAYER_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules")
MTP_FIXED_LAYERS = {"MiMoV2ForCausalLM": 1, "MiMoV2FlashForCausalLM": 1, "MiMoV2OmniForCausalLM": 1}


# ------------------------------------------------------------------------------------------------ facts
@dataclass
class HeadFacts:
    """What a head repo's config.json declares (None: not stated)."""

    repo_id: str
    algorithm: str  # one of ALGORITHMS
    format: str  # one of FORMATS
    architectures: list[str]
    layer_model_type: str | None  # model_type of the head's decoder layer(s)
    verifier: str | None  # speculators_config.verifier.name_or_path
    base_models: list[str]  # from the repo's base_model:* tags
    hidden_size: int | None
    target_hidden_size: int | None
    vocab_size: int | None  # the vocabulary the head embeds and its d2t/t2d maps index
    draft_vocab_size: int | None  # its own (possibly reduced) output vocabulary
    aux_layer_ids: list[int] | None
    aux_key: str | None  # which key held aux_layer_ids (they differ in meaning per engine)
    num_target_layers: int | None  # what the head says its target had (DFlash)
    mask_token_id: int | None
    speculative_tokens: int | None  # speculators proposal_methods[0].speculative_tokens / DFlash block_size-1
    params: int | None  # own parameter estimate from the config

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def declared_for(self) -> list[str]:
        """The models the head says it was trained for: verifier first, then base_model tags."""
        out = [self.verifier] if self.verifier else []
        return out + [b for b in self.base_models if b.lower() not in {o.lower() for o in out}]


@dataclass
class TargetShape:
    """The target facts a head rule needs (the text sub-config of multimodal configs)."""

    repo_id: str
    model_type: str | None
    architectures: list[str]
    hidden_size: int | None
    num_hidden_layers: int | None
    vocab_size: int | None  # SGLang's text config rule (modelconfig.sglang_text_config)
    vocab_size_transformers: int | None  # get_text_config(), what vLLM reads
    mtp_layers: int | None
    mtp_key: str | None
    text_config_key: str | None
    text_model_type: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class HeadVerdict:
    fits: bool
    reasons: list[str]
    failed_check: str | None  # "format" | "target_arch" | "hidden_size" | "vocab_size" | "aux_layers" | "mtp"
    tier: str | None  # exact | lineage | shape (None when it does not fit)
    engine: str = ""
    method: str | None = None  # the engine's method/algorithm name for this head
    warning: str | None = None
    checks: list[dict] = field(default_factory=list)  # every check: {check, ok, detail, source}

    def to_dict(self) -> dict:
        return asdict(self)


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _first_int(*values) -> int | None:
    """The first value that is an int (0 included), so a stated 0 is not mistaken for "absent"."""
    return next((v for v in map(_int, values) if v is not None), None)


def _ids(value) -> list[int] | None:
    if isinstance(value, list) and value and all(_int(v) is not None for v in value):
        return list(value)
    return None


def base_models_from_tags(tags: Iterable[str]) -> list[str]:
    """``base_model:<id>`` and ``base_model:<relation>:<id>`` tags (HUB-API.md §0.1 point 2) -> ids."""
    out: list[str] = []
    for tag in tags or ():
        if not isinstance(tag, str) or not tag.startswith("base_model:"):
            continue
        rest = tag[len("base_model:"):]
        head, sep, tail = rest.partition(":")
        repo = tail if sep and head in ("finetune", "quantized", "adapter", "merge") else rest
        if repo and repo not in out:
            out.append(repo)
    return out


def _archs(config: dict) -> list[str]:
    archs = config.get("architectures")
    return [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []


def is_head_config(config: dict | None) -> bool:
    """Whether a listing's config digest (architectures, model_type) already says "speculator head".

    EAGLE-1 checkpoints in the original layout (plain ``LlamaForCausalLM``, e.g. yuhuili/EAGLE-*) are not
    recognisable from the digest; ``parse_head`` with the repo id finds them."""
    if not isinstance(config, dict):
        return False
    if config.get("model_type") in HEAD_MODEL_TYPES or "speculators_model_type" in config:
        return True
    return any(a in HEAD_ARCHS for a in _archs(config))


def head_candidate(repo_id: str, digest: dict | None) -> bool:
    """Whether the crawler must fetch this repo's config.json even without tokenizer files: the listing's
    config digest says "head" (``is_head_config``), or the repo is named like an EAGLE checkpoint in the
    original layout (vLLM's name rule, config/speculative.py:1444-1448) and its digest is a plain
    ``*ForCausalLM`` (``parse_head`` then checks it has one layer)."""
    if is_head_config(digest):
        return True
    archs = _archs(digest) if isinstance(digest, dict) else []
    return bool(_legacy_eagle_name(repo_id) and archs and archs[0].endswith("ForCausalLM"))


def _legacy_eagle_name(repo_id: str) -> str | None:
    """vLLM's own name rule when no method is given: "eagle-" -> eagle, "eagle3" -> eagle3
    (config/speculative.py:1444-1448)."""
    name = repo_id.lower()
    if "eagle3" in name:
        return "eagle3"
    if "eagle-" in name:
        return "eagle"
    return None


def parse_head(config: dict, repo_id: str = "", tags: Iterable[str] = ()) -> HeadFacts | None:
    """HeadFacts from a head repo's config.json, or None when the config is not a head's."""
    if not isinstance(config, dict):
        return None
    archs = _archs(config)
    base_models = base_models_from_tags(tags)
    if "speculators_model_type" in config or isinstance(config.get("speculators_config"), dict):
        return _parse_speculators(config, repo_id, archs, base_models)
    native = next((SGLANG_HEAD_ARCHS.get(a) or VLLM_HEAD_REGISTRY.get(a) for a in archs
                   if a in SGLANG_HEAD_ARCHS or a in VLLM_HEAD_REGISTRY), None)
    if native:
        return _parse_native(config, repo_id, archs, base_models, native, "sglang-native")
    legacy = _legacy_eagle_name(repo_id)
    if legacy and archs and archs[0].endswith("ForCausalLM") and config.get("num_hidden_layers") == 1:
        return _parse_native(config, repo_id, archs, base_models, legacy, "eagle-legacy")
    return None


def _parse_speculators(config, repo_id, archs, base_models) -> HeadFacts:
    spec = config.get("speculators_config") if isinstance(config.get("speculators_config"), dict) else {}
    verifier = spec.get("verifier") if isinstance(spec.get("verifier"), dict) else {}
    layer = config.get("transformer_layer_config")
    layer = layer if isinstance(layer, dict) else {}
    kind = config.get("speculators_model_type")
    kind = kind if isinstance(kind, str) and kind else "eagle3"
    algorithm = {"dflash2": "dflash"}.get(kind, kind)  # dflash2 runs as dflash (speculators/base.py:135-136)
    methods = spec.get("proposal_methods")
    first = methods[0] if isinstance(methods, list) and methods and isinstance(methods[0], dict) else {}
    aux_key = "eagle_aux_hidden_state_layer_ids" if algorithm in ("eagle3", "peagle", "eagle") \
        else "aux_hidden_state_layer_ids"
    facts = HeadFacts(
        repo_id=repo_id, algorithm=algorithm, format="speculators", architectures=archs,
        layer_model_type=layer.get("model_type") if isinstance(layer.get("model_type"), str) else None,
        verifier=verifier.get("name_or_path") if isinstance(verifier.get("name_or_path"), str) else None,
        base_models=base_models,
        hidden_size=_first_int(layer.get("hidden_size"), config.get("hidden_size")),
        target_hidden_size=_int(config.get("target_hidden_size")),
        vocab_size=_first_int(layer.get("vocab_size"), config.get("vocab_size")),
        draft_vocab_size=_int(config.get("draft_vocab_size")),
        aux_layer_ids=_ids(config.get(aux_key)), aux_key=aux_key if _ids(config.get(aux_key)) else None,
        num_target_layers=_int(config.get("num_target_layers")),
        mask_token_id=_int(config.get("mask_token_id")),
        speculative_tokens=_int(first.get("speculative_tokens")), params=None)
    facts.params = estimate_params(facts, layer or config)
    return facts


def _parse_native(config, repo_id, archs, base_models, algorithm, fmt) -> HeadFacts:
    eagle_cfg = config.get("eagle_config") if isinstance(config.get("eagle_config"), dict) else {}
    dflash_cfg = config.get("dflash_config") if isinstance(config.get("dflash_config"), dict) else {}
    aux, aux_key = None, None
    candidates = (
        ("eagle_config.eagle_aux_hidden_state_layer_ids", eagle_cfg.get("eagle_aux_hidden_state_layer_ids")),
        ("eagle_aux_hidden_state_layer_ids", config.get("eagle_aux_hidden_state_layer_ids")),
        ("dflash_config.target_layer_ids", dflash_cfg.get("target_layer_ids")),
        ("target_layer_ids", config.get("target_layer_ids")),
    )
    for key, where in candidates:
        if _ids(where):
            aux, aux_key = _ids(where), key
            break
    block = _first_int(config.get("block_size"), dflash_cfg.get("block_size"))
    facts = HeadFacts(
        repo_id=repo_id, algorithm=algorithm, format=fmt, architectures=archs,
        layer_model_type=config.get("model_type") if isinstance(config.get("model_type"), str) else None,
        verifier=None, base_models=base_models,
        hidden_size=_int(config.get("hidden_size")), target_hidden_size=_int(config.get("target_hidden_size")),
        vocab_size=_int(config.get("vocab_size")), draft_vocab_size=_int(config.get("draft_vocab_size")),
        aux_layer_ids=aux, aux_key=aux_key,
        num_target_layers=_first_int(config.get("num_target_layers"), dflash_cfg.get("num_target_layers")),
        mask_token_id=_first_int(dflash_cfg.get("mask_token_id"), config.get("mask_token_id")),
        speculative_tokens=(block - 1) if block and block > 1 else None, params=None)
    facts.params = estimate_params(facts, config)
    return facts


def estimate_params(head: HeadFacts, layer: dict) -> int | None:
    """The head's own parameters from its config: embedding, fusion fc, decoder layers, lm_head.

    An estimate (no weights are read): attention q/k/v/o + gated MLP per layer; EAGLE-3's first layer
    reads 2*hidden (llama_eagle3.py:64 in SGLang), DFlash's fc reads len(aux)*target_hidden."""
    h, v = head.hidden_size, head.vocab_size
    if not h:
        return None
    n_layers = _int(layer.get("num_hidden_layers")) or 1
    heads = _int(layer.get("num_attention_heads")) or max(1, h // 128)
    kv = _int(layer.get("num_key_value_heads")) or heads
    hd = _int(layer.get("head_dim")) or h // heads
    inter = _int(layer.get("intermediate_size")) or 4 * h
    th = head.target_hidden_size or h

    def attn(inp: int) -> int:
        return inp * heads * hd + 2 * inp * kv * hd + heads * hd * h

    total = 0
    for i in range(n_layers):
        total += attn(2 * h if head.algorithm in ("eagle3", "peagle") and i == 0 else h) + 3 * h * inter
    n_aux = len(head.aux_layer_ids) if head.aux_layer_ids else 3
    total += {"eagle": 2 * h * h, "eagle3": n_aux * th * h, "peagle": n_aux * th * h}.get(head.algorithm,
                                                                                          n_aux * th * h)
    if v:
        total += v * h  # embed_tokens (shared with the target on some engines, still in the checkpoint)
    if head.algorithm in ("eagle3", "peagle"):
        total += (head.draft_vocab_size or v or 0) * h  # own lm_head over the draft vocabulary
    return total


def _mtp_layers(top: dict, text: dict, archs: list[str]) -> tuple[int | None, str | None]:
    for where, cfg in (("", top), ("text.", text)):
        for key in MTP_LAYER_KEYS:
            n = _int(cfg.get(key))
            if n is not None:
                return n, where + key
    for a in archs[:1]:
        if a in MTP_FIXED_LAYERS:
            return MTP_FIXED_LAYERS[a], "fixed by the engine"
    return None, None


def target_shape(config: dict, repo_id: str = "") -> TargetShape:
    """The head-relevant facts of a target config.json (the text sub-config of multimodal configs:
    SGLang's get_hf_text_config, reproduced in modelconfig.sglang_text_config)."""
    config = config if isinstance(config, dict) else {}
    key, text = sglang_text_config(config)
    try:
        _, ttext = transformers_text_config(config)
    except AmbiguousTextConfig:  # get_text_config() raises: vLLM refuses the target, its vocab size is unknown
        ttext = {}
    archs = _archs(config)
    n, mtp_key = _mtp_layers(config, text, archs)
    return TargetShape(
        repo_id=repo_id, model_type=config.get("model_type") if isinstance(config.get("model_type"), str) else None,
        architectures=archs, hidden_size=_int(text.get("hidden_size")),
        num_hidden_layers=_int(text.get("num_hidden_layers")), vocab_size=_int(text.get("vocab_size")),
        vocab_size_transformers=_int(ttext.get("vocab_size")), mtp_layers=n, mtp_key=mtp_key,
        text_config_key=key, text_model_type=text.get("model_type") if isinstance(text.get("model_type"), str)
        else None)


# ------------------------------------------------------------------------------------------------ rules
def _check(checks: list, name: str, ok: bool, detail: str, source: str) -> bool:
    checks.append({"check": name, "ok": ok, "detail": detail, "source": source})
    return ok


def loads(head: HeadFacts, engine: str) -> tuple[bool, str, str, str | None]:
    """Whether the engine loads this head's format at all: (ok, detail, source, engine method)."""
    if engine == "sglang":
        if head.format == "speculators":
            return (False, "SGLang has no loader for the speculators format (no speculators_config handling "
                    "anywhere in sglang/srt); use the head's SGLang-native conversion",
                    f"sglang {SGLANG_VERSION}: grep speculators_config python/sglang/srt", None)
        arch = next((a for a in head.architectures if a in SGLANG_HEAD_ARCHS), None)
        if arch is None:
            return (False, f"SGLang resolves the model class from architectures ({', '.join(head.architectures)}), "
                    "and none is one of its head classes (e.g. LlamaForCausalLMEagle, LlamaForCausalLMEagle3)",
                    "models/registry.py:93-112, models/llama_eagle.py:153, models/llama_eagle3.py:387", None)
        algo = SGLANG_HEAD_ARCHS[arch]
        return (True, f"{arch} is SGLang's {algo.upper()} head class", "models/registry.py:93-112 (EntryClass)",
                algo.upper())
    if head.format == "speculators":
        kind = head.algorithm
        if kind not in VLLM_SPECULATORS_TYPES:
            return (False, f"speculators_model_type {head.algorithm!r} is not one of vLLM's "
                    f"{sorted(VLLM_SPECULATORS_TYPES)}", "transformers_utils/configs/speculators/base.py:51-56", None)
        allowed = VLLM_SPECULATORS_TYPES[kind]
        if allowed and (head.layer_model_type or "llama") not in allowed:
            return (False, f"speculators {kind} with a {head.layer_model_type} layer: vLLM maps only "
                    f"{' / '.join(allowed)} layers", "transformers_utils/configs/speculators/algos.py:39-45", None)
        method = "eagle3" if head.algorithm == "peagle" else head.algorithm  # speculators/base.py:133-136
        return (True, f"speculators format, speculators_model_type {head.algorithm}",
                "transformers_utils/configs/speculators/algos.py:15-209", method)
    # EAGLEConfig renames architectures for the chosen method (transformers_utils/configs/eagle.py:46-76),
    # then the registry must know the name.
    method = "eagle3" if head.algorithm == "peagle" else head.algorithm
    renamed = [_vllm_rename(a, method) for a in head.architectures]
    hit = next((r for r in renamed if r in VLLM_HEAD_REGISTRY), None)
    if hit is None:
        return (False, f"vLLM's EAGLE config renames {_first(head)} to {renamed[0] if renamed else '?'} for "
                f"method {method}, which its registry does not hold",
                "transformers_utils/configs/eagle.py:46-76, model_executor/models/registry.py:655-744", None)
    return True, f"{_first(head)} loads as vLLM's {hit}", "model_executor/models/registry.py:655-744", method


def _first(head: HeadFacts) -> str:
    return head.architectures[0] if head.architectures else "(no architectures)"


def _vllm_rename(arch: str, method: str) -> str:
    """EAGLEConfig's architecture naming (transformers_utils/configs/eagle.py:46-76)."""
    if method == "eagle":
        return arch if arch.startswith("Eagle") else f"Eagle{arch}"
    if method == "eagle3":
        return arch if arch.startswith("Eagle3") or arch.endswith("Eagle3") else f"Eagle3{arch}"
    if method == "dflash":
        return arch if arch.startswith("DFlash") or arch.endswith("DFlash") else f"DFlash{arch}"
    return arch


def _target_types(target: TargetShape) -> list[str]:
    """The top-level model_type picks the target class; a text sub-config's type is accepted too."""
    return [t for t in (target.model_type, target.text_model_type) if t]


def _hidden_checks(head, target, engine, checks) -> bool:
    th = target.hidden_size
    if head.algorithm in ("eagle3", "peagle"):
        want = head.target_hidden_size or head.hidden_size
        src = ("models/llama_eagle3.py:151-154 (fc input = target_hidden_size or hidden_size)" if engine == "sglang"
               else "model_executor/models/llama_eagle3.py:218-221 (fc input = target_hidden_size or hidden_size)")
        # SGLang shares the target's embedding only when target_hidden_size is absent or equals hidden_size
        # (models/llama.py:910-916), so this one comparison covers the embedding too.
        return _check(checks, "hidden_size", _same(want, th), _hidden_words(want, th), src)
    if head.algorithm == "eagle":
        src = ("models/llama_eagle.py:91 (fc over concat(embeds, hidden) = 2*hidden_size)" if engine == "sglang"
               else "model_executor/models/llama_eagle.py:110-130 (fc input = 2*hidden_size)")
        return _check(checks, "hidden_size", _same(head.hidden_size, th), _hidden_words(head.hidden_size, th), src)
    if engine == "sglang":  # dflash / dspark: fc reads len(target_layer_ids) * hidden_size
        return _check(checks, "hidden_size", _same(head.hidden_size, th), _hidden_words(head.hidden_size, th),
                      "models/dflash.py:750-770 (fc = num_context_features * hidden_size)")
    want = head.target_hidden_size or head.hidden_size
    return _check(checks, "hidden_size", _same(want, th), _hidden_words(want, th),
                  "model_executor/models/qwen3_dflash.py:89-93 (target_hidden_size or hidden_size)")


def _same(a: int | None, b: int | None) -> bool:
    """Equal and stated: an absent value never matches."""
    return a is not None and a == b


def _hidden_words(trained: int | None, target: int | None) -> str:
    if trained is None or target is None:
        return _unknown("hidden size", trained, target)
    if trained == target:
        return f"hidden size {target} on both"
    return f"trained for hidden size {trained}; this target has {target}"


def _unknown(what: str, head_value: int | None, target_value: int | None) -> str:
    """A check that cannot pass because a config does not state the value (never guessed as a fit)."""
    side = "the head's config" if head_value is None else "the target's config"
    return f"{side} states no {what}"


def _vocab_checks(head, target, engine, checks) -> bool:
    tv = target.vocab_size if engine == "sglang" else target.vocab_size_transformers
    tv = tv if tv is not None else target.vocab_size
    if engine == "sglang" and head.algorithm in ("eagle", "dflash", "dspark"):
        # SGLang hands these heads the target's own embedding and lm_head.
        src = ("speculative/eagle_worker_v2.py:376-378 (set_embed_and_head)" if head.algorithm == "eagle"
               else "speculative/dflash_worker_v2.py:138 (the draft borrows the target lm_head)")
        if head.mask_token_id is not None and tv is not None and head.mask_token_id >= tv:
            return _check(checks, "vocab_size", False,
                          f"mask_token_id {head.mask_token_id} is outside this target's vocabulary of {tv}",
                          "speculative/dflash_worker_v2.py:1399-1405")
        return _check(checks, "vocab_size", True,
                      f"uses the target's embedding and lm_head (vocabulary {tv}); trained vocabulary "
                      f"{head.vocab_size}", src)
    if head.draft_vocab_size and head.vocab_size and head.draft_vocab_size > head.vocab_size:
        return _check(checks, "vocab_size", False,
                      f"draft_vocab_size {head.draft_vocab_size} exceeds the vocabulary {head.vocab_size} its "
                      "d2t map indexes", "model_executor/models/llama_eagle3.py:338-345")
    if head.vocab_size is None or tv is None:
        detail, ok = _unknown("vocab size", head.vocab_size, tv), False
    elif head.vocab_size == tv:
        detail = f"vocab size {tv} on both"
        if head.draft_vocab_size and head.draft_vocab_size != tv:
            detail += f" (draft vocabulary {head.draft_vocab_size}, mapped by d2t/t2d)"
            if engine == "sglang":  # speculative/eagle_worker_v2.py:260-274
                detail += "; SGLang's --speculative-use-rejection-sampling needs the full vocabulary"
        ok = True
    else:
        detail = f"trained for vocab size {head.vocab_size}; this target has {tv}"
        ok = False
    src = ("models/llama_eagle3.py:350-352 (d2t maps draft ids into the head's vocabulary)" if engine == "sglang"
           else "model_executor/models/llama_eagle3.py:338-392 (logits scattered into vocab_size)")
    if head.algorithm in ("dflash", "dspark") and engine == "vllm":
        src = "model_executor/models/qwen3_dflash.py:444 (embedding of vocab_size)"
    if head.algorithm == "eagle" and engine == "vllm":
        src = "model_executor/models/llama_eagle.py:88-95 (embedding of vocab_size)"
    return _check(checks, "vocab_size", ok, detail, src)


def aux_limit(head: HeadFacts, engine: str, layers: int) -> tuple[int, int, str] | None:
    """Allowed (lowest, highest) aux layer id on this engine for a target of ``layers`` layers, with the source.

    The engines index differently: SGLang captures EAGLE-3 id v at layer v+1 of its loop
    (models/llama.py:941, 486-492), so v <= L-2; vLLM collects id k after layer k-1 and at the start
    (model_executor/models/llama.py:429-441, interfaces.py:1647), so k <= L. DFlash target_layer_ids are
    0-based layer indices (SGLang speculative/dflash_utils.py:579-584; vLLM adds 1,
    v1/worker/gpu_model_runner.py:5212-5215); speculators DFlash/DSpark aux ids are 1-based
    (transformers_utils/configs/speculators/algos.py:117-120)."""
    if not head.aux_key:
        return None
    if head.aux_key.endswith("target_layer_ids"):
        src = ("speculative/dflash_utils.py:579-584" if engine == "sglang"
               else "v1/worker/gpu_model_runner.py:5212-5215")
        return 0, layers - 1, src
    if head.aux_key == "aux_hidden_state_layer_ids":
        return 1, layers, ("transformers_utils/configs/speculators/algos.py:117-120, "
                           "model_executor/models/llama.py:429-441")
    if engine == "sglang":
        if head.aux_key != "eagle_config.eagle_aux_hidden_state_layer_ids":
            # SGLang reads only eagle_config's list
            # (model_executor/model_runner_components/spec_aux_hidden_state.py:186-196).
            return None
        return 0, layers - 2, "models/llama.py:941, 486-492 (id v is captured at layer v+1)"
    return 0, layers, "model_executor/models/llama.py:429-441, model_executor/models/interfaces.py:1647"


def _aux_checks(head, target, engine, checks) -> bool:
    L = target.num_hidden_layers
    if L is None:
        if head.aux_layer_ids and aux_limit(head, engine, 0) is not None:
            return _check(checks, "aux_layers", False, _unknown("num_hidden_layers", 0, None),
                          "the aux layer ids index the target's layers")
        return _check(checks, "aux_layers", True, "no aux layer ids to check against the target's depth",
                      "models/llama.py:933-936" if engine == "sglang" else "model_executor/models/interfaces.py:1751")
    limit = aux_limit(head, engine, L)
    if limit is None:
        src = ("models/llama.py:933-936" if engine == "sglang"
               else "model_executor/models/interfaces.py:1751-1772")
        if head.algorithm == "eagle":
            return _check(checks, "aux_layers", True, "reads only the target's last hidden state: no aux layer ids",
                          "models/llama_eagle.py:91" if engine == "sglang"
                          else "model_executor/models/llama_eagle.py:110-130")
        default = "; it uses its default [2, L//2, L-3]" if head.algorithm in ("eagle3", "peagle") else ""
        return _check(checks, "aux_layers", True, f"no aux layer ids this engine reads{default}", src)
    low, high, src = limit
    bad = [i for i in head.aux_layer_ids if i < low or i > high]
    if bad:
        return _check(checks, "aux_layers", False,
                      f"aux layer ids {head.aux_layer_ids} ({head.aux_key}) go beyond this target's {L} layers "
                      f"(allowed {low}..{high})", src)
    return _check(checks, "aux_layers", True, f"aux layer ids {head.aux_layer_ids} within the target's {L} layers",
                  src)


def _target_supported(head, target, engine, checks) -> bool:
    """Can the target capture the hidden states this head reads? EAGLE-1 reads only the last one (any target);
    DSpark on vLLM runs in its own model runner, not checked here."""
    if head.algorithm in ("eagle3", "peagle"):
        table, what = (SGLANG_EAGLE3_TARGET_TYPES if engine == "sglang" else VLLM_EAGLE3_TARGET_TYPES), "EAGLE-3"
        src = ("model_executor/model_runner_components/attention_backend_setup.py:55-61" if engine == "sglang"
               else "v1/worker/gpu_model_runner.py:5173-5177")
    elif head.algorithm == "dflash" or (head.algorithm == "dspark" and engine == "sglang"):
        table, what = (SGLANG_DFLASH_TARGET_TYPES if engine == "sglang" else VLLM_EAGLE3_TARGET_TYPES), "DFlash"
        src = ("model_executor/model_runner_components/attention_backend_setup.py:62-72" if engine == "sglang"
               else "v1/worker/gpu_model_runner.py:645-647, 5173-5177")
    else:
        return True
    types = _target_types(target)
    ok = any(t in table for t in types)
    mt = types[0] if types else None
    return _check(checks, "target_arch", ok,
                  f"target model_type {mt} {'can' if ok else 'cannot'} capture {what} aux hidden states", src)


def _norm(ids: Iterable[str]) -> set[str]:
    return {i.lower() for i in ids if isinstance(i, str) and i}


def tier(head: HeadFacts, target_id: str, *, target_lineage: Iterable[str] = (),
         head_lineage: Iterable[str] = ()) -> str:
    """exact: the head declares the target itself (verifier or base_model tag); lineage: the head's
    declared models and the target share a root of their base-model chains (passed in as ids);
    otherwise shape."""
    declared = _norm(head.declared_for)
    if target_id.lower() in declared:
        return "exact"
    if (declared | _norm(head_lineage)) & (_norm(target_lineage) | {target_id.lower()}):
        return "lineage"
    return "shape"


def fit(head: HeadFacts, target: TargetShape, engine: str, *, target_lineage: Iterable[str] = (),
        head_lineage: Iterable[str] = ()) -> HeadVerdict:
    """Whether ``head`` loads and runs on ``target`` under ``engine`` (sglang / vllm), and its tier."""
    if engine not in HEAD_ENGINES:
        raise ValueError(f"engine must be one of {HEAD_ENGINES}, not {engine!r}")
    checks: list[dict] = []
    ok, detail, src, method = loads(head, engine)
    _check(checks, "format", ok, detail, src)
    failed = None if ok else "format"
    for name, rule in (("target_arch", _target_supported), ("hidden_size", _hidden_checks),
                       ("vocab_size", _vocab_checks), ("aux_layers", _aux_checks)):
        if not rule(head, target, engine, checks) and failed is None:
            failed = name
    t = tier(head, target.repo_id, target_lineage=target_lineage, head_lineage=head_lineage)
    lineage = _lineage_words(head, t)
    if failed:
        reasons = [c["detail"] for c in checks if not c["ok"]]
        return HeadVerdict(False, reasons + [lineage], failed, None, engine, method, None, checks)
    reasons = [c["detail"] for c in checks if c["check"] != "format"] + [lineage]
    warning = "fits by shape only: acceptance is unknown" if t == "shape" else None
    return HeadVerdict(True, reasons, None, t, engine, method, warning, checks)


def _lineage_words(head: HeadFacts, t: str) -> str:
    declared = ", ".join(head.declared_for) or "nothing"
    if t == "exact":
        return f"trained for exactly this target (declares {declared})"
    if t == "lineage":
        return f"trained for {declared}, which shares this target's base-model lineage"
    return f"trained for {declared}: no shared lineage with this target"


def mtp(target: TargetShape, engine: str) -> HeadVerdict:
    """Built-in multi-token prediction: the target is its own speculator (SGLang NEXTN/EAGLE, vLLM mtp)."""
    checks: list[dict] = []
    arch = target.architectures[0] if target.architectures else None
    if engine == "sglang":
        line = SGLANG_MTP_ARCHS.get(arch)
        ok = _check(checks, "target_arch", line is not None,
                    f"SGLang {'has an' if line else 'has no'} MTP draft class for {arch}",
                    f"configs/model_config.py:{line or '1010-1200'}")
        method = "NEXTN"
    elif engine == "vllm":
        line = VLLM_MTP_ARCHS.get(arch) or VLLM_MTP_MODEL_TYPES.get(target.model_type or "")
        ok = _check(checks, "target_arch", line is not None,
                    f"vLLM {'has an' if line else 'has no'} MTP model for {target.model_type} ({arch})",
                    f"config/speculative.py:{line or '711-1170'}")
        method = "mtp"
    else:
        raise ValueError(f"engine must be one of {HEAD_ENGINES}, not {engine!r}")
    layers = target.mtp_layers or 0
    has_layers = _check(checks, "mtp", layers > 0,
                        f"{layers} MTP layer(s) ({target.mtp_key})" if layers else "the config declares no MTP layers "
                        f"({' / '.join(MTP_LAYER_KEYS)})", "config/speculative.py:755-760" if engine == "vllm"
                        else "configs/model_config.py:1010-1200")
    if ok and has_layers:
        return HeadVerdict(True, [c["detail"] for c in checks], None, "exact", engine, method, None, checks)
    failed = "target_arch" if not ok else "mtp"
    return HeadVerdict(False, [c["detail"] for c in checks if not c["ok"]], failed, None, engine, method, None,
                       checks)


# ------------------------------------------------------------------------------------------------ launch
DEFAULT_SPEC_TOKENS = 3
SGLANG_ALGORITHM = {"eagle": "EAGLE", "eagle3": "EAGLE3", "peagle": "EAGLE3", "dflash": "DFLASH",
                    "dspark": "DSPARK", "mtp": "NEXTN"}


def launch(head: HeadFacts, target_id: str, engine: str) -> str:
    """The serve command in each engine's documented syntax (SGLang arg_groups/fields/spec.py:31-40;
    vLLM --speculative-config JSON, config/speculative.py:419)."""
    if engine == "sglang":
        return (f"python -m sglang.launch_server --model-path {target_id} "
                f"--speculative-algorithm {SGLANG_ALGORITHM.get(head.algorithm, head.algorithm.upper())} "
                f"--speculative-draft-model-path {head.repo_id}")
    if engine != "vllm":
        raise ValueError(f"engine must be one of {HEAD_ENGINES}, not {engine!r}")
    if head.format == "speculators" and head.verifier and head.verifier.lower() == target_id.lower():
        # The speculators config names its verifier: vLLM serves the target from it
        # (transformers_utils/config.py:800-870, engine/arg_utils.py:2263-2277).
        return f"vllm serve {head.repo_id}"
    cfg: dict = {"method": "eagle3" if head.algorithm == "peagle" else head.algorithm, "model": head.repo_id,
                 "num_speculative_tokens": head.speculative_tokens or DEFAULT_SPEC_TOKENS}
    if head.algorithm == "peagle":
        cfg["parallel_drafting"] = True  # transformers_utils/configs/speculators/base.py:133-134
    return f"vllm serve {target_id} --speculative-config '{json.dumps(cfg)}'"


def mtp_launch(target: TargetShape, engine: str) -> str:
    if engine == "sglang":
        arch = target.architectures[0] if target.architectures else ""
        draft = "" if arch in SGLANG_MTP_SELF_DRAFT_ARCHS else f" --speculative-draft-model-path {target.repo_id}"
        return f"python -m sglang.launch_server --model-path {target.repo_id} --speculative-algorithm NEXTN{draft}"
    if engine != "vllm":
        raise ValueError(f"engine must be one of {HEAD_ENGINES}, not {engine!r}")
    # num_speculative_tokens must be given for the draft to default to the target (config/speculative.py:1252-1263).
    cfg = {"method": "mtp", "num_speculative_tokens": target.mtp_layers or 1}
    return f"vllm serve {target.repo_id} --speculative-config '{json.dumps(cfg)}'"


def ngram_launch(target_id: str, engine: str) -> str:
    """N-gram (prompt lookup) needs no draft: SGLang NGRAM (speculative/spec_info.py:46); vLLM method ngram with
    its default lookup window of 5 (config/speculative.py:1300-1305)."""
    if engine == "sglang":
        return f"python -m sglang.launch_server --model-path {target_id} --speculative-algorithm NGRAM"
    if engine != "vllm":
        raise ValueError(f"engine must be one of {HEAD_ENGINES}, not {engine!r}")
    cfg = {"method": "ngram", "num_speculative_tokens": DEFAULT_SPEC_TOKENS, "prompt_lookup_max": 5}
    return f"vllm serve {target_id} --speculative-config '{json.dumps(cfg)}'"


NGRAM_REASON = "n-gram (prompt lookup) drafting proposes tokens from the prompt itself: it needs no draft model or head"


def ngram(target_id: str, engine: str) -> dict:
    """``--method ngram``: always available, needs nothing (says so), with its launch command."""
    return {"repo_id": target_id, "method": "NGRAM" if engine == "sglang" else "ngram", "reasons": [NGRAM_REASON],
            "launch": ngram_launch(target_id, engine)}


def rank_key(verdict: HeadVerdict, downloads: int | None = None) -> tuple:
    """Ranking of fitting heads: exact, then lineage, then shape; more downloads first within a tier."""
    return (TIERS.index(verdict.tier) if verdict.tier in TIERS else len(TIERS), -(downloads or 0))


def head_entry(head: HeadFacts, verdict: HeadVerdict, target_id: str, downloads: int | None = None) -> dict:
    """A fitting head in the JSON shape of a draft model entry (``drafts[]``: repo_id, reasons, launch)."""
    reasons = ([verdict.warning] if verdict.warning else []) + verdict.reasons
    return {"repo_id": head.repo_id, "params": head.params, "downloads": downloads, "algorithm": head.algorithm,
            "format": head.format, "tier": verdict.tier, "method": verdict.method, "reasons": reasons,
            "launch": launch(head, target_id, verdict.engine)}


def head_miss(head: HeadFacts, verdict: HeadVerdict, downloads: int | None = None) -> dict:
    """A near miss in the shape of a draft near miss: the failing check and its words."""
    return {"repo_id": head.repo_id, "params": head.params, "downloads": downloads, "algorithm": head.algorithm,
            "format": head.format, "failed_check": verdict.failed_check, "reason": verdict.reasons[0],
            "reasons": verdict.reasons[1:], "fix": None}


def fitting_heads(target: TargetShape, candidates: Iterable[HeadFacts], engine: str, method: str, *,
                  target_lineage: Iterable[str] = (), lineage_of=None, downloads: dict | None = None
                  ) -> tuple[list[dict], list[dict]]:
    """(fits, near misses) among ``candidates`` for ``--method`` (eagle / eagle3 / dflash), ranked.

    ``lineage_of(repo_id) -> ids`` gives a head's declared models' base-model chain; ``downloads`` maps ids."""
    algorithms = METHOD_ALGORITHMS[method]
    target_lineage = list(target_lineage)
    downloads = downloads or {}
    fits, misses = [], []
    for head in candidates:
        if head.algorithm not in algorithms:
            continue
        head_lineage = [i for d in head.declared_for for i in (lineage_of(d) if lineage_of else ())]
        v = fit(head, target, engine, target_lineage=target_lineage, head_lineage=head_lineage)
        dl = downloads.get(head.repo_id)
        if v.fits:
            fits.append((rank_key(v, dl), head.repo_id, head_entry(head, v, target.repo_id, dl)))
        elif v.failed_check != "format":
            misses.append((-(dl or 0), head.repo_id, head_miss(head, v, dl)))
    return [e for *_, e in sorted(fits, key=lambda x: x[:2])], [e for *_, e in sorted(misses, key=lambda x: x[:2])]


def overview(target: TargetShape, candidates: Iterable[HeadFacts], engine: str, **kw) -> dict:
    """``--method all`` for one engine, without draft models (the draft query adds those): built-in MTP, fitting
    heads per method, n-gram."""
    candidates = list(candidates)
    m = mtp(target, engine)
    out = {"engine": engine,
           "mtp": {"fits": m.fits, "reasons": m.reasons, "launch": mtp_launch(target, engine) if m.fits else None},
           "heads": {}, "ngram": ngram(target.repo_id, engine)}
    for method in METHOD_ALGORITHMS:
        out["heads"][method] = fitting_heads(target, candidates, engine, method, **kw)[0]
    return out


def explain(head: HeadFacts, target: TargetShape, **lineage) -> dict:
    """``indexer check TARGET HEAD`` material: every shape check, the lineage and the verdict per engine."""
    out = {"head": head.to_dict(), "target": target.to_dict(), "engines": {}}
    for engine in HEAD_ENGINES:
        v = fit(head, target, engine, **lineage)
        out["engines"][engine] = {**v.to_dict(), "launch": launch(head, target.repo_id, engine) if v.fits else None}
    return out


# ------------------------------------------------------------------------------------- registry entries
# What an engine-registry entry references, per engine and --method: the engine's own name for the method,
# the functions that decide and launch it, and where the engine defines it.
HEAD_RULES = {
    "sglang": {
        "eagle": {"engine_method": "EAGLE", "fit": fit, "launch": launch,
                  "source": "speculative/spec_info.py:42, models/llama_eagle.py:153"},
        "eagle3": {"engine_method": "EAGLE3", "fit": fit, "launch": launch,
                   "source": "speculative/spec_info.py:43, models/llama_eagle3.py:387"},
        "dflash": {"engine_method": "DFLASH / DSPARK", "fit": fit, "launch": launch,
                   "source": "speculative/spec_info.py:39-41, models/dflash.py:1317, models/dspark.py:995"},
        "mtp": {"engine_method": "NEXTN", "fit": mtp, "launch": mtp_launch,
                "source": "speculative/spec_registry.py:183, configs/model_config.py:1010-1210"},
        "ngram": {"engine_method": "NGRAM", "fit": None, "launch": ngram_launch,
                  "source": "speculative/spec_info.py:46"},
    },
    "vllm": {
        "eagle": {"engine_method": "eagle", "fit": fit, "launch": launch,
                  "source": "config/speculative.py:71-72, transformers_utils/configs/eagle.py:46-53"},
        "eagle3": {"engine_method": "eagle3", "fit": fit, "launch": launch,
                   "source": "config/speculative.py:71-72, transformers_utils/configs/speculators/algos.py:15-87"},
        "dflash": {"engine_method": "dflash / dspark", "fit": fit, "launch": launch,
                   "source": "config/speculative.py:69-70, transformers_utils/configs/speculators/algos.py:90-209"},
        "mtp": {"engine_method": "mtp", "fit": mtp, "launch": mtp_launch,
                "source": "config/speculative.py:38-67, 711-1170"},
        "ngram": {"engine_method": "ngram", "fit": None, "launch": ngram_launch,
                  "source": "config/speculative.py:1297-1305"},
    },
}
