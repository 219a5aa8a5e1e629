"""A head repo's config.json (+ tags) as :class:`HeadFacts`, a target's config.json as :class:`TargetShape`, and
whether a listing's config digest is a head's (the crawler asks before downloading). Engine-neutral: it reads
the head classes of every engine that loads heads as Hugging Face checkpoints (``HeadRules.head_classes``) to
recognise a head. Stdlib only.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import AmbiguousTextConfig
from ..vocab.textconfig import sglang_text_config, transformers_text_config
from . import ENGINES, HEAD_ENGINES
from .headrules import MTP_LAYER_KEYS, HeadFacts, HeadRules, TargetShape

# The head classes the engines load (architectures entry -> algorithm), first engine in registry order first;
# where two engines load one class they agree on its algorithm. Every release's classes: a head one release
# dropped (vLLM 0.34's P-EAGLE) is still a head, judged at each release.
HEAD_CLASSES: dict[str, str] = {}
for _entry in (ENGINES[name] for name in HEAD_ENGINES):
    for _heads in ([_entry.heads] if "heads" not in _entry.ranged else [r.value for r in _entry.ranged["heads"]]):
        for _arch, _algorithm in (_heads.head_classes.items() if isinstance(_heads, HeadRules) else ()):
            HEAD_CLASSES.setdefault(_arch, _algorithm)
# Architectures that the speculators library writes (config.json "architectures"); with HEAD_CLASSES they let
# a listing's config digest recognise a head without downloading it.
SPECULATORS_ARCHS = ("Eagle3Speculator", "Eagle3DraftModel", "EagleSpeculator", "PEagleDraftModel",
                     "DFlashDraftModel", "DFlash2DraftModel", "DSparkDraftModel")
HEAD_ARCHS = frozenset(HEAD_CLASSES) | frozenset(SPECULATORS_ARCHS)
HEAD_MODEL_TYPES = ("eagle", "speculators")  # vLLM's own config classes (transformers_utils/config.py:160,178)
# MiMo-V2 hard-codes one MTP layer (vLLM model_executor/models/mimo_v2_mtp.py:53-54; SGLang
# configs/model_config.py:1096).
MTP_FIXED_LAYERS = {"MiMoV2ForCausalLM": 1, "MiMoV2FlashForCausalLM": 1, "MiMoV2OmniForCausalLM": 1}


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
    native = next((HEAD_CLASSES[a] for a in archs if a in HEAD_CLASSES), None)
    if native:
        return _parse_native(config, repo_id, archs, base_models, native, "sglang-native")
    legacy = _legacy_eagle_name(repo_id)
    if legacy and archs and archs[0].endswith("ForCausalLM") and config.get("num_hidden_layers") == 1:
        return _parse_native(config, repo_id, archs, base_models, legacy, "eagle-legacy")
    return None


def _parse_speculators(config, repo_id, archs, base_models) -> HeadFacts:
    spec = config.get("speculators_config")
    spec = spec if isinstance(spec, dict) else {}
    verifier = spec.get("verifier")
    verifier = verifier if isinstance(verifier, dict) else {}
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
