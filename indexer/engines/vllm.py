"""vLLM's draft_model speculation (config/speculative.py) with its token-level intersection (TLI,
``use_heterogeneous_vocab``), and its speculator heads and built-in MTP. Sources are vLLM's, at :data:`VERSION`."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import partial

from . import tables
from .archrules import WRONG_OUTPUT, ArchRule, Ranged, ShorterContext, StateIn, TypeIn, Vision, relined
from .base import (
    REFUSED,
    SIZE_WORDS,
    USELESS,
    WORKS,
    Side,
    SpeedProfile,
    Verdict,
    mapping_differs,
    released,
    resize_words,
    same_mapping,
    size_differs,
    tokenizer_missing,
)
from .headrules import HeadFacts, HeadRules, TargetShape
from .server import Exchange, Reading, Server, chat_body, decode_seconds
from .setup import Setup, requantized
from .transformers import VERSION as TRANSFORMERS_VERSION  # vLLM reads configs through transformers

NAME = "vllm"  # the registry key: --engine vllm
# the PyPI wheels we read, oldest first; head-rule paths are relative to vllm/
RELEASES = ("0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0")
VERSION = RELEASES[-1]
# The release the citations without since= were read at (engines/audit.py); at the older releases the audit re-pinned
# the ones that moved (data/vllm/audited.json), and the rows below say where a rule differs.
READ_AT = "0.33.0"

TLI_VLLM = ("`use_heterogeneous_vocab: true` in --speculative-config (vLLM TLI, vllm/v1/spec_decode/vocab_mapping.py: "
            "method draft_model, greedy draft)")


def tli_constraints(t: Side, d: Side) -> list[str]:
    """What vLLM's use_heterogeneous_vocab needs beyond method draft_model and a greedy draft."""
    out = []
    for role, side in (("target", t), ("draft", d)):
        tok = side.tok or {}
        if tok.get("unk_token_id") is None and tok.get("eos_token_id") is None:
            out.append(f"the {role} has neither an unk nor an eos token, so vLLM's TLI refuses it")
    return out


_MAMBA1 = ArchRule(
    "Mamba-1 target", TypeIn("target", frozenset({"jamba", "mamba", "falcon_mamba"})), WRONG_OUTPUT,
    "vLLM's Mamba-1 metadata builder never passes the accepted-token counts, so a verify is run as a prefill "
    "and rejected draft tokens stay in the state (unverified: read from the code, not run; no refusal)",
    "vllm/v1/attention/backends/mamba1_attn.py:38-45, vllm/v1/attention/backends/mamba_attn.py:400-406",
    anchors=("return self._compute_common_metadata(common_attn_metadata)",
             "self.reorder_batch_threshold if num_accepted_tokens is not None else 1"))
_HYBRID_TARGET, _SHORTER, _MULTIMODAL = (
    ArchRule("hybrid target", StateIn("target", frozenset({"mamba2", "gated_deltanet", "short_conv"})), None,
             "vLLM gives these layers one state slot per speculative token and runs the pair",
             "vllm/model_executor/layers/mamba/abstract.py:72-90",
             anchors=("else vllm_config.num_speculative_tokens",)),
    ArchRule("shorter draft context", ShorterContext("context_vllm", "vLLM's derived max_model_len: the smallest "
             "context key, times a rope factor, capped by tokenizer_config's model_max_length"), None,
             "vLLM starts, but lowers the target's max_model_len to the draft's with a warning (V2 model runner)",
             "vllm/config/vllm.py:3025-3050", demote=True, anchors=("def _limit_max_model_len_to_draft(",)),
    ArchRule("multimodal target", Vision("target"), None,
             "the draft runs text-only: vLLM passes it none of the target's multimodal embeddings (a warning)",
             "vllm/v1/worker/gpu/spec_decode/speculator.py:244-253",
             anchors=("does not support external multimodal embeddings",)),
)

# The models vLLM dropped (registry.py _PREVIOUSLY_SUPPORTED_MODELS, extracted per release), by the model_type whose
# transformers causal-LM class is the dropped architecture. With model_impl "auto" (the default) vLLM first falls
# back to its Transformers modeling backend, which takes the transformers class when it is backend compatible or can
# set its attention implementation (registry.py _try_resolve_transformers; the flags extracted from the class's
# modeling file); otherwise it raises "Model architecture X was supported in vLLM until vY".
DROPPED_LINES = {"0.30.0": ("vllm/model_executor/models/registry.py:1412-1421, 1181-1190",
                            "vllm/model_executor/models/transformers/base.py:104-112"),
                 "0.31.0": ("vllm/model_executor/models/registry.py:1407-1416, 1176-1185",
                            "vllm/model_executor/models/transformers/base.py:105-113"),
                 "0.32.0": ("vllm/model_executor/models/registry.py:1417-1426, 1186-1195",
                            "vllm/model_executor/models/transformers/base.py:107-115"),
                 "0.33.0": ("vllm/model_executor/models/registry.py:1461-1470, 1230-1239",
                            "vllm/model_executor/models/transformers/base.py:109-117"),
                 "0.34.0": ("vllm/model_executor/models/registry.py:1540-1549, 1308-1317",
                            "vllm/model_executor/models/transformers/base.py:109-117")}


def dropped(release: str) -> tuple[dict, dict]:
    """(model_type -> (class, last release) loaded by the Transformers backend, the same refused) at a release."""
    gone = tables.values(NAME, release, "previously_supported")
    native = set(tables.tables(NAME, release)["native_models"].get("_TEXT_GENERATION_MODELS", {}).get("values", []))
    backend: dict[str, tuple[str, str]] = {}
    refused: dict[str, tuple[str, str]] = {}
    for model_type, e in tables.values("transformers", TRANSFORMERS_VERSION, "causal_lm").items():
        if e["class"] in gone and e["class"] not in native:
            ok = e["file"] is not None and (e["backend_compatible"] or e["can_set_attn"])
            (backend if ok else refused)[model_type] = (e["class"], gone[e["class"]])
    return backend, refused


def _dropped_rows(release: str, until: str | None) -> tuple:
    """One row per dropped model type at a release: a note where the Transformers backend loads it, else refused."""
    backend, refused = dropped(release)
    fallback, base = DROPPED_LINES[release]
    since = release
    return (
        *(ArchRule("dropped model, Transformers backend", TypeIn("target", frozenset({t})), None,
                   f"vLLM dropped its own {c} after v{v}; with model_impl auto it loads transformers' {c} through its "
                   "Transformers modeling backend, which supports draft_model, EAGLE and EAGLE-3/DFlash capture "
                   "(SupportsEagle, SupportsEagle3); vLLM's own handling of recurrent or linear-attention layers "
                   "does not apply there (unverified: read, not run)",
                   f"{fallback}; {base}", since=since, until=until,
                   anchors=("arch = self._try_resolve_transformers(architectures[0], model_config)", None,
                            "SupportsEagle3,"))
          for t, (c, v) in sorted(backend.items())),
        *(ArchRule("dropped model", TypeIn("target", frozenset({t})), REFUSED,
                   f"vLLM dropped its own {c} after v{v}, and its Transformers modeling backend does not take "
                   f"transformers' {c}, so vLLM raises ValueError \"Model architecture {c} was supported in vLLM "
                   f"until v{v}, and is not supported anymore\"", fallback, since=since, until=until,
                   anchors=(None, 'f"Model architecture {arch} was supported in vLLM until "'))
          for t, (c, v) in sorted(refused.items())),
    )


ARCH_RULES = (
    *(row for i, r in enumerate(RELEASES) for row in _dropped_rows(r, RELEASES[i + 1] if i + 1 < len(RELEASES)
                                                                  else None)),
    *relined(_MAMBA1, "0.34.0",
             "vllm/v1/attention/backends/mamba1_attn.py:38-45, vllm/v1/attention/backends/mamba_attn.py:398-404"),
    *relined(_HYBRID_TARGET, "0.34.0", "vllm/model_executor/layers/mamba/abstract.py:78-98"),
    ArchRule("hybrid draft", StateIn("draft"), REFUSED,
             "vLLM's KV-cache manager assumes \"draft models have no mamba layers\", and support for hybrid drafts "
             "was never merged (PRs #49138, #50146 closed): expect a failure at start-up (unverified: read, not run)",
             "vllm/v1/core/kv_cache_coordinator.py:871-874", anchors=("draft models have no mamba",)),
    # 0.30.0-0.32.0 have no _limit_max_model_len_to_draft: the draft's max_model_len is capped at the smaller of
    # both (SpeculativeConfig._maybe_override_draft_max_model_len) and the target's is left as it is.
    ArchRule("shorter draft context", _SHORTER.when, None,
             "vLLM starts and keeps the target's max_model_len; the draft's is the smaller of both, and what the "
             "drafter does past it is not read (unverified: read, not run)",
             "vllm/config/speculative.py:1541-1547, 1614-1651", demote=True, since="0.30.0", until="0.33.0",
             anchors=("SpeculativeConfig._maybe_override_draft_max_model_len(",
                      "def _maybe_override_draft_max_model_len(")),
    *relined(replace(_SHORTER, since="0.33.0"), "0.34.0", "vllm/config/vllm.py:3102-3121"),
    *relined(_MULTIMODAL, "0.34.0", "vllm/v1/worker/gpu/spec_decode/speculator.py:307-318"),
)

def rule(t: Side, d: Side, *, tli: bool = False) -> Verdict:
    """draft_model raises when get_vocab_size() differs; tokenizers are never compared. ``tli``: the release has
    ``use_heterogeneous_vocab`` (0.33.0; 0.34.0 removed it with the V1 model runner)."""
    for role, side in (("target", t), ("draft", d)):
        if side.text_config_error:
            return Verdict(REFUSED, [f"the {role}'s {side.text_config_error}: vLLM's ModelConfig raises"])
    ts, ds = t.vllm_vocab_size, d.vllm_vocab_size
    if ts is None or ds is None or ts != ds:
        why = size_differs("vocab_size", ts, ds) + " (draft_model raises ValueError at launch)"
        if not tli:
            return Verdict(REFUSED, [why + "; this vLLM has no vocabulary translation (TLI)"])
        blocked = tli_constraints(t, d)
        hint = ("; `use_heterogeneous_vocab: true` (draft_model only, greedy draft) would run TLI"
                if not blocked else f"; TLI is not possible either: {'; '.join(blocked)}")
        return Verdict(REFUSED, [why + hint])
    missing = tokenizer_missing(t, d)
    if missing:
        return Verdict(USELESS, [f"vocab_size {ts} on both; {missing}"])
    if not same_mapping(t, d):
        return mapping_differs(t, d, ts, f"vocab_size {ts} on both, so vLLM starts (it never compares tokenizers)")
    return Verdict(WORKS, [f"vocab_size {ts} on both and the same get_vocab() mapping"])


def sizes(t: Side, d: Side) -> tuple[int | None, int | None]:
    """vLLM compares hf_text_config.vocab_size after its model-type remaps."""
    return t.vllm_vocab_size, d.vllm_vocab_size


def fix(outcome: str, *, shared: bool, sizes: tuple, tli: str, tli_blocked, has_tli: bool = False) -> str | None:
    """Resize the draft when only its rows differ, else (or also) run TLI where the release has it and the pair
    can."""
    use_tli = None if tli_blocked or not has_tli else f"run TLI: {TLI_VLLM}{tli}"
    if outcome == REFUSED and shared and sizes[0] is not None:
        return resize_words(sizes[0]) + (f", or {use_tli}" if use_tli else "")
    return use_tli


# 0.34.0 deleted the V1 model runner and its proposers: use_heterogeneous_vocab is no field of SpeculativeConfig
# (no line of vllm/ names it), and the equal-size check runs for every draft with its own vocabulary
# (verify_equal_vocab_size_if_draft_model; draft_model: standalone_ar/config.py; SOURCES cites both at 0.34.0).
RULES = (Ranged(value=partial(rule, tli=True), until="0.34.0", source="vllm/config/speculative.py:2036-2037",
                anchors=("if not self.use_heterogeneous_vocab:",)),
         Ranged(value=rule, since="0.34.0", source="vllm/config/speculative.py:1725-1740",
                anchors=("def verify_equal_vocab_size_if_draft_model(",)))
TLI_UNTIL = "0.34.0"  # the first release without TLI (RULES and FIXES change there)


def has_tli(release: str | None) -> bool:
    """Does this vLLM release (None: the newest we read) translate vocabularies (TLI)?"""
    return RELEASES.index(release or VERSION) < RELEASES.index(TLI_UNTIL)


FIXES = (Ranged(value=partial(fix, has_tli=True), until="0.34.0", source="vllm/v1/spec_decode/vocab_mapping.py:68",
                anchors=("class VocabMapping",)),
         Ranged(value=fix, since="0.34.0"))


def launch(setup: Setup, *, heterogeneous: bool = False) -> list[str]:
    """The draft_model serve command: --speculative-config's method, model and num_speculative_tokens (5 when no
    count is given), TLI on request (0.33.0); a side that runs at FP8 from a float checkpoint gets --quantization
    fp8 (target) or the config's quantization (draft): both are keys of SpeculativeConfig / EngineArgs."""
    if setup.method != "draft_model":  # a head, built-in MTP or n-gram: the release's head rules print it
        heads = ENGINE.at(setup.release).heads
        assert isinstance(heads, VLLMHeads)
        return heads.launch_setup(setup)
    assert setup.draft is not None  # a draft-model launch
    cfg: dict = {"method": "draft_model", "model": setup.draft.repo, "num_speculative_tokens": setup.draft_tokens or 5}
    if requantized(setup.draft):
        cfg["quantization"] = requantized(setup.draft)
    if heterogeneous:
        cfg["use_heterogeneous_vocab"] = True
    quant = f" --quantization {requantized(setup.target)}" if requantized(setup.target) else ""
    return [f"vllm serve {setup.target.repo}{quant} --speculative-config '{json.dumps(cfg)}'"]


# ---------------------------------------------------------------- speculator heads and built-in MTP
# vLLM's speculative-decoding registry (model_executor/models/registry.py, _SPECULATIVE_DECODING_MODELS), extracted
# per release (scripts/extract_tables.py): every class with its kind; the heads (EAGLE, EAGLE-3, DFlash, DSpark) are
# what EAGLEConfig's renamed architecture must be.


def _registry(release: str) -> dict:
    return tables.values(NAME, release, "speculative_models")


def _registry_span(release: str) -> str:
    return tables.source(NAME, release, "speculative_models").removeprefix("vllm/")


# vLLM's speculators-format loader: speculators_model_type -> allowed transformer_layer_config.model_type
# (None: not restricted); each head-rules class cites its release's loader.
VLLM_SPECULATORS_TYPES = {"eagle3": ("llama", "qwen3"), "peagle": ("llama", "qwen3"), "dflash": None, "dflash2": None,
                          "dspark": None}
# vLLM: the target's model class must implement SupportsEagle3 (each head-rules class's eagle3_source), itself or
# through a class it inherits from (Mistral's and Phi-3's subclass Llama's); DFlash turns on the same aux hidden-state
# outputs (dflash_capture_source). The registered architectures whose class does, per release: table eagle3_classes.
def _eagle3_classes(release: str) -> tuple[dict[str, str], dict[str, str]]:
    """(architecture -> where its class implements SupportsEagle3, relative to vllm/; every registered
    architecture -> module.Class) at ``release``."""
    t = tables.tables(NAME, release)["eagle3_classes"]
    return {a: w.removeprefix("vllm/") for a, w in t["values"].items()}, t["registered"]


# vLLM: SpeculativeConfig.hf_config_override rewrites the target config into its MTP model (an ``if`` on the
# target's model_type or architectures[0] per family): the model types and architectures it rewrites, each with the
# line of its ``if`` at a release (extracted: table mtp_rewrites; step5 and step5_vl came with 0.33.0).
VLLM_MTP_MODEL_TYPES = (
    "deepseek_v3", "deepseek_v32", "glm_moe_dsa", "deepseek_mtp", "deepseek_v4", "dots3_note", "pangu_ultra_moe",
    "kimi_k3", "ernie4_5_moe", "nemotron_h", "nemotron_h_puzzle", "qwen3_next", "qwen4_exp", "qwen4_exp_text",
    "bailing_hybrid", "exaone_moe", "exaone4_5", "qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text",
    "longcat_flash", "step3p5", "step3p7", "step5", "step5_vl", "hy_v3", "hy_v4", "minimax_m3_vl", "glm5_next",
)
VLLM_MTP_ARCHS = (
    "MiMoForCausalLM", "MiMoV2ForCausalLM", "MiMoV2OmniForCausalLM", "MiMoV2FlashForCausalLM", "Glm4MoeForCausalLM",
    "Glm4MoeLiteForCausalLM", "GlmOcrForConditionalGeneration", "BailingMoeV3ForCausalLM",
    "BailingMoeV2_5ForCausalLM", "Step3p5ForCausalLM", "MiniMaxM3SparseForConditionalGeneration",
)


def _mtp_lines(release: str, names: tuple) -> dict[str, int]:
    """The names hf_config_override rewrites at ``release``, with the line of each one's ``if``."""
    rewrites = tables.values(NAME, release, "mtp_rewrites")
    return {n: rewrites[n] for n in names if n in rewrites}


def _mtp_source(release: str) -> tuple[str, str]:
    """(MTPModelTypes and hf_config_override, hf_config_override's lines) at ``release``, relative to vllm/."""
    rewrites = tables.source(NAME, release, "mtp_rewrites").rpartition(":")[2]
    return f"{tables.source(NAME, release, 'mtp_model_types').removeprefix('vllm/')}, {rewrites}", rewrites


DEFAULT_SPEC_TOKENS = 3  # the num_speculative_tokens a launch command gives when the head states none


def _vllm_rename(arch: str, method: str) -> str:
    """EAGLEConfig's architecture naming (transformers_utils/configs/eagle.py:46-76)."""
    if method == "eagle":
        return arch if arch.startswith("Eagle") else f"Eagle{arch}"
    if method == "eagle3":
        return arch if arch.startswith("Eagle3") or arch.endswith("Eagle3") else f"Eagle3{arch}"
    if method == "dflash":  # LiLiCorrDraftModel keeps its name (transformers_utils/configs/eagle.py:69-73 at 0.33.0)
        return (arch if arch.startswith("DFlash") or arch.endswith("DFlash") or arch == "LiLiCorrDraftModel"
                else f"DFlash{arch}")
    return arch


def _first(head: HeadFacts) -> str:
    return head.architectures[0] if head.architectures else "(no architectures)"


class VLLMHeads(HeadRules):
    """vLLM's head rules (paths relative to vllm/ at :data:`VERSION`)."""

    engine = NAME
    release = "0.33.0"
    head_classes = tables.heads(NAME, "0.33.0")
    registry_source = _registry_span("0.33.0")
    eagle3_classes, registered = _eagle3_classes("0.33.0")
    speculators_types = VLLM_SPECULATORS_TYPES
    refused_speculators: dict = {}  # speculators_model_type -> (why, source): the loader raises
    # the speculators types: eagle3 algos.py:39-45, peagle algos.py:75-81, dflash algos.py:90-126, dflash2
    # algos.py:129-149, dspark algos.py:152-209
    speculators_source = "transformers_utils/configs/speculators/algos.py:15-209"
    eagle3_source = "v1/worker/gpu_model_runner.py:5173-5177"
    dflash_capture_source = "v1/worker/gpu_model_runner.py:645-647, 5173-5177"
    dflash_hidden_source = "model_executor/models/qwen3_dflash.py:89-93 (target_hidden_size or hidden_size)"
    dflash_vocab_source = "model_executor/models/qwen3_dflash.py:444 (embedding of vocab_size)"
    eagle3_vocab_source = "model_executor/models/llama_eagle3.py:338-392 (logits scattered into vocab_size)"
    aux_limit_source = "model_executor/models/llama.py:429-441, model_executor/models/interfaces.py:1647"
    mtp_model_types = _mtp_lines("0.33.0", VLLM_MTP_MODEL_TYPES)
    mtp_archs = _mtp_lines("0.33.0", VLLM_MTP_ARCHS)
    mtp_lines = _mtp_source("0.33.0")[1]
    methods = {
        "eagle": ("eagle", "config/speculative.py:71-72, transformers_utils/configs/eagle.py:46-53"),
        "eagle3": ("eagle3", "config/speculative.py:71-72, transformers_utils/configs/speculators/algos.py:15-87"),
        "dflash": ("dflash / dspark",
                   "config/speculative.py:69-70, transformers_utils/configs/speculators/algos.py:90-209"),
        "mtp": ("mtp", _mtp_source("0.33.0")[0]),
        "ngram": ("ngram", "config/speculative.py:1297-1305"),
    }
    mtp_method = "mtp"
    mtp_layers_source = "config/speculative.py:755-760"
    aux_any_depth_source = "model_executor/models/interfaces.py:1751"
    aux_default_source = "model_executor/models/interfaces.py:1751-1772"
    eagle_aux_source = "model_executor/models/llama_eagle.py:110-130"
    dflash_layer_ids_source = "v1/worker/gpu_model_runner.py:5212-5215"  # vLLM adds 1 to the 0-based ids
    draft_vocab_source = "model_executor/models/llama_eagle3.py:338-345"

    def loads(self, head: HeadFacts) -> tuple[bool, str, str, str | None]:
        """The speculators loader for its types, else EAGLEConfig's renaming and the model registry."""
        if head.format == "speculators":
            kind = head.algorithm
            if kind in self.refused_speculators:
                return (False, *self.refused_speculators[kind], None)
            if kind not in self.speculators_types:
                return (False, f"speculators_model_type {head.algorithm!r} is not one of vLLM's "
                        f"{sorted(self.speculators_types)}", "transformers_utils/configs/speculators/base.py:51-56",
                        None)
            allowed = self.speculators_types[kind]
            if allowed and (head.layer_model_type or "llama") not in allowed:
                return (False, f"speculators {kind} with a {head.layer_model_type} layer: vLLM maps only "
                        f"{' / '.join(allowed)} layers", "transformers_utils/configs/speculators/algos.py:39-45", None)
            method = "eagle3" if head.algorithm == "peagle" else head.algorithm  # speculators/base.py:133-136
            return (True, f"speculators format, speculators_model_type {head.algorithm}", self.speculators_source,
                    method)
        # EAGLEConfig renames architectures for the chosen method (transformers_utils/configs/eagle.py:46-76),
        # then the registry must know the name.
        method = "eagle3" if head.algorithm == "peagle" else head.algorithm
        renamed = [_vllm_rename(a, method) for a in head.architectures]
        hit = next((r for r in renamed if r in self.head_classes), None)
        if hit is None:
            return (False, f"vLLM's EAGLE config renames {_first(head)} to {renamed[0] if renamed else '?'} for "
                    f"method {method}, which its registry does not hold",
                    f"transformers_utils/configs/eagle.py:46-76, {self.registry_source}", None)
        line = _registry(self.release)[hit]["line"]
        return True, f"{_first(head)} loads as vLLM's {hit}", f"model_executor/models/registry.py:{line}", method

    def capture(self, head: HeadFacts) -> tuple[dict[str, str], str, str] | None:
        """EAGLE-3 and DFlash targets must implement SupportsEagle3; DSpark runs in its own model runner, not
        checked here; EAGLE-1 reads only the last hidden state (any target)."""
        if head.algorithm in ("eagle3", "peagle"):
            return self.eagle3_classes, "EAGLE-3", self.eagle3_source
        if head.algorithm == "dflash":
            return self.eagle3_classes, "DFlash", self.dflash_capture_source
        return None

    def target_class(self, target: TargetShape) -> tuple[str | None, str]:
        """The first of the target's architectures vLLM registers (model_executor/models/registry.py
        inspect_model_cls). With none, model_impl auto tries its Transformers backend, whose classes implement
        SupportsEagle3 but which takes only some models: not judged here, so the check fails."""
        arch = next((a for a in target.architectures if a in self.registered), None)
        if arch is not None:
            return arch, ""
        if not target.architectures:
            return None, " (the config names no architectures)"
        return None, (f" (vLLM registers none for {target.architectures[0]}; whether its Transformers backend takes "
                      "the model is not judged)")

    def hidden(self, head: HeadFacts) -> tuple[int | None, str]:
        """The fc input each head model builds from the target's hidden size."""
        if head.algorithm in ("eagle3", "peagle"):
            return (head.target_hidden_size or head.hidden_size,
                    "model_executor/models/llama_eagle3.py:218-221 (fc input = target_hidden_size or hidden_size)")
        if head.algorithm == "eagle":
            return head.hidden_size, "model_executor/models/llama_eagle.py:110-130 (fc input = 2*hidden_size)"
        return head.target_hidden_size or head.hidden_size, self.dflash_hidden_source

    def target_vocab(self, target: TargetShape) -> int | None:
        """get_text_config(), what vLLM reads."""
        return target.vocab_size_transformers

    def vocab_source(self, head: HeadFacts) -> str:
        """Every vLLM head embeds (or scatters logits into) its own vocab_size."""
        if head.algorithm in ("dflash", "dspark"):
            return self.dflash_vocab_source
        if head.algorithm == "eagle":
            return "model_executor/models/llama_eagle.py:88-95 (embedding of vocab_size)"
        return self.eagle3_vocab_source

    def eagle_aux_limit(self, head: HeadFacts, layers: int) -> tuple[int, int, str] | None:
        """vLLM collects id k after layer k-1 and at the start (aux_limit_source), so k <= L."""
        return 0, layers, self.aux_limit_source

    def mtp_support(self, target: TargetShape, arch: str | None) -> tuple[bool, str, str]:
        """SpeculativeConfig.hf_config_override rewrites the target config into its MTP model."""
        line = self.mtp_archs.get(arch or "") or self.mtp_model_types.get(target.model_type or "")
        return (line is not None, f"vLLM {'has an' if line else 'has no'} MTP model for {target.model_type} ({arch})",
                f"config/speculative.py:{line or self.mtp_lines}")

    ngram_tokens = DEFAULT_SPEC_TOKENS

    def head_method(self, head: HeadFacts, target_id: str) -> str:
        """``speculators``: a speculators config that names this target as its verifier, which vLLM serves from the
        head (transformers_utils/config.py:800-870, engine/arg_utils.py:2263-2277); else the head's algorithm."""
        if head.format == "speculators" and head.verifier and head.verifier.lower() == target_id.lower():
            return "speculators"
        return head.algorithm

    def launch_setup(self, setup: Setup) -> list[str]:
        """The --speculative-config JSON (config/speculative.py:419): the method (P-EAGLE is eagle3 with parallel
        drafting, transformers_utils/configs/speculators/base.py:133-134), the head as ``model``, the setup's
        num_speculative_tokens (ngram: its default lookup window of 5, config/speculative.py:1300-1305); MTP needs
        num_speculative_tokens for the draft to default to the target (config/speculative.py:1252-1263). A float
        side run at FP8 gets --quantization fp8 (target) or the config's ``quantization`` (head)."""
        quant = f" --quantization {requantized(setup.target)}" if requantized(setup.target) else ""
        if setup.method == "speculators":
            assert setup.draft is not None  # the head names its verifier: vLLM serves the target from it
            return [f"vllm serve {setup.draft.repo}{quant}"]
        cfg: dict = {"method": "eagle3" if setup.method == "peagle" else setup.method}
        if setup.draft is not None:
            cfg["model"] = setup.draft.repo
        cfg["num_speculative_tokens"] = setup.draft_tokens
        if setup.method == "peagle":
            cfg["parallel_drafting"] = True
        if setup.method == "ngram":
            cfg["prompt_lookup_max"] = 5
        if requantized(setup.draft):
            cfg["quantization"] = requantized(setup.draft)
        return [f"vllm serve {setup.target.repo}{quant} --speculative-config '{json.dumps(cfg)}'"]

    def launch_tokens(self, head: HeadFacts | None, target: TargetShape | None) -> int:
        """num_speculative_tokens of the launch command: the MTP layers, or the head's own count, or 3."""
        if head is None:
            return (target.mtp_layers if target is not None else None) or 1
        return head.speculative_tokens or DEFAULT_SPEC_TOKENS


class VLLMHeads034(VLLMHeads):
    """vLLM 0.34.0's head rules: the V1 model runner and P-EAGLE are gone, the registry moved and gained draft
    architectures. A configured method is never changed: a draft that declares its method (DFlash, DSpark, Gemma-4
    MTP) refuses a contradicting one (v1/worker/gpu/spec_decode/speculator_config.py:404-430); the launch commands
    here always pass the head's own method. The EAGLE config's renaming is unchanged (transformers_utils/configs/
    eagle.py:40-80 is the same text). The launch commands hold: ``method`` is a field
    (config/speculative.py:461); a speculators checkpoint whose verifier names a Hub repo serves that repo
    (transformers_utils/config.py:833-921, engine/arg_utils.py:2296-2310); MTP without a model drafts from the target
    (config/speculative.py:1386-1389, v1/worker/gpu/spec_decode/mtp/config.py:43-55); ngram's window defaults to 5
    (v1/worker/gpu/spec_decode/ngram/config.py:21-24)."""

    release = "0.34.0"
    # unchanged at 0.34.0 (the lines the inherited rules cite): transformers_utils/configs/eagle.py:46-76,
    # transformers_utils/configs/speculators/base.py:51-56, model_executor/models/llama_eagle.py:88-95,
    # model_executor/models/llama_eagle.py:110-130, model_executor/models/llama_eagle3.py:218-221,
    # model_executor/models/llama_eagle3.py:338-345, model_executor/models/llama.py:429-441
    # the speculators types: eagle3 algos.py:39-45, dflash algos.py:58-94, dflash2 algos.py:97-117, dspark
    # algos.py:120-177
    speculators_source = "transformers_utils/configs/speculators/algos.py:15-177"
    dflash_hidden_source = "model_executor/models/qwen3_dflash.py:130-134 (target_hidden_size or hidden_size)"
    dflash_vocab_source = "model_executor/models/qwen3_dflash.py:486 (embedding of vocab_size)"
    eagle3_vocab_source = "model_executor/models/llama_eagle3.py:338-384 (logits scattered into vocab_size)"
    aux_limit_source = "model_executor/models/llama.py:429-441, model_executor/models/interfaces.py:1660"
    methods = {
        "eagle": ("eagle", "config/speculative.py:87-88, transformers_utils/configs/eagle.py:46-53"),
        "eagle3": ("eagle3", "config/speculative.py:87-88, transformers_utils/configs/speculators/algos.py:15-50"),
        "dflash": ("dflash / dspark",
                   "config/speculative.py:85-86, transformers_utils/configs/speculators/algos.py:58-177"),
        "mtp": ("mtp", _mtp_source("0.34.0")[0]),
        "ngram": ("ngram", "config/speculative.py:1368-1369, v1/worker/gpu/spec_decode/ngram/config.py:21-24"),
    }
    mtp_layers_source = "config/speculative.py:853-858"
    aux_any_depth_source = "model_executor/models/interfaces.py:1764"
    aux_default_source = "model_executor/models/interfaces.py:1764-1785"
    head_classes = tables.heads(NAME, "0.34.0")
    registry_source = _registry_span("0.34.0")
    eagle3_classes, registered = _eagle3_classes("0.34.0")
    speculators_types = {k: v for k, v in VLLM_SPECULATORS_TYPES.items() if k != "peagle"}
    refused_speculators = {"peagle": ("vLLM's speculators loader raises \"P-EAGLE (parallel drafting EAGLE-3) is not "
                                      "supported.\"", "transformers_utils/configs/speculators/algos.py:53-55")}
    eagle3_source = "v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:18-19"
    dflash_layer_ids_source = "v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:113-114"  # still +1 on 0-based ids
    dflash_capture_source = "v1/worker/gpu/spec_decode/dflash/speculator.py:29, eagle/eagle3_utils.py:18-19"
    mtp_model_types = _mtp_lines("0.34.0", VLLM_MTP_MODEL_TYPES)
    mtp_archs = _mtp_lines("0.34.0", VLLM_MTP_ARCHS)
    mtp_lines = _mtp_source("0.34.0")[1]


def _older_heads(release: str) -> VLLMHeads:
    """VLLMHeads at a release before 0.33.0: that release's registry, EAGLE-3 capturing classes and MTP rewrites
    (extracted), and the lines its rules cite where the audit re-pinned them (tables.relined); the rules are the
    same."""
    heads = VLLMHeads()
    places = heads.places = tables.relined(NAME, release)  # every check's source, also in method bodies
    heads.methods = {k: (m, tables.reline(src, places)) for k, (m, src) in VLLMHeads.methods.items()}
    heads.methods["mtp"] = ("mtp", _mtp_source(release)[0])
    heads.release = release
    heads.head_classes = tables.heads(NAME, release)
    heads.registry_source = _registry_span(release)
    heads.eagle3_classes, heads.registered = _eagle3_classes(release)
    heads.mtp_model_types = _mtp_lines(release, VLLM_MTP_MODEL_TYPES)
    heads.mtp_archs = _mtp_lines(release, VLLM_MTP_ARCHS)
    heads.mtp_lines = _mtp_source(release)[1]
    return heads


OLDER = RELEASES[:RELEASES.index("0.33.0")]
HEADS = (*(Ranged(value=_older_heads(r), since=r, until=RELEASES[i + 1],
                  source=tables.source(NAME, r, "speculative_models")) for i, r in enumerate(OLDER)),
         Ranged(value=VLLMHeads(), since="0.33.0", until="0.34.0",
                source="vllm/model_executor/models/registry.py:699",
                anchors=('"PeagleLlamaForCausalLM"',)),
         Ranged(value=VLLMHeads034(), since="0.34.0",
                source="vllm/transformers_utils/configs/speculators/algos.py:53-55, "
                       "vllm/v1/worker/gpu/spec_decode/speculator_config.py:404-430",
                anchors=("P-EAGLE (parallel drafting EAGLE-3) is not supported.",
                         "def _resolve_checkpoint_config_class(")))
SOURCES = (
    Ranged(value={
        "get_vocab_size() equal": "vllm/config/speculative.py:2036-2056 (verify_equal_vocab_size_if_draft_model)",
        "hf_text_config = get_text_config()": "vllm/transformers_utils/config.py (get_hf_text_config)",
        "get_text_config() ambiguity raises": "transformers 5.24.0 configuration_utils.py:1555-1560",
        "use_heterogeneous_vocab (TLI)": "vllm/v1/spec_decode/vocab_mapping.py (VocabMapping, _get_unk_token_id)",
    }, until="0.34.0"),
    Ranged(value={
        "get_vocab_size() equal": "vllm/config/speculative.py:1725-1740 (verify_equal_vocab_size_if_draft_model)",
        "draft_model has its own vocabulary": "vllm/v1/worker/gpu/spec_decode/standalone_ar/config.py:15",
        "hf_text_config = get_text_config()": "vllm/transformers_utils/config.py (get_hf_text_config)",
        "get_text_config() ambiguity raises": f"transformers {TRANSFORMERS_VERSION} configuration_utils.py:1562-1567",
    }, since="0.34.0", anchors=("def verify_equal_vocab_size_if_draft_model(", "draft_has_own_vocab = True")),
)

ENGINE = released(
    releases=RELEASES, name=NAME, display="vLLM draft_model", version=f"vllm {VERSION}", sources=SOURCES,
    speed=SpeedProfile("serving", ("nvidia", "amd"), "bf16", "bf16", 8,
                       source="docs/getting_started/installation/gpu.md: NVIDIA CUDA, AMD ROCm"),
    facts=("vllm_vocab_size", "text_config_error", "tok.vocab_sha256", "tok.unk_token_id", "tok.eos_token_id"),
    rule=RULES, class_key=("vllm_vs", "tok"), launch=launch, sizes=sizes, fix=FIXES, words=dict(SIZE_WORDS),
    heads=HEADS, arch_rules=ARCH_RULES)


# ---------------------------------------------------------------- what vLLM's server reports (indexer measure)
# Paths are relative to the vllm wheels of 0.33.0 (the oldest release read, where the audit reads a module's
# citations) and 0.34.0: the same lines in both, but ignore_eos, two lines further down at 0.34.0.
IGNORE_EOS = (Ranged(value="ignore_eos", until="0.34.0",
                     source="vllm/entrypoints/openai/chat_completion/protocol.py:294"),
              Ranged(value="ignore_eos", since="0.34.0",
                     source="vllm/entrypoints/openai/chat_completion/protocol.py:296"))


def _server_release(get_json) -> str | None:
    """``GET /version``: ``{"version": VLLM_VERSION}`` (vllm/entrypoints/serve/instrumentator/basic.py:53-56)."""
    answer = get_json("/version")
    version = answer.get("version") if isinstance(answer, dict) else None
    return str(version) if version else None


def _server_request(prompt: str, max_tokens: int, target: str | None = None, draft: str | None = None):
    """A greedy chat completion of exactly ``max_tokens`` tokens (``ignore_eos``: :data:`IGNORE_EOS`)."""
    return Exchange("/v1/chat/completions", chat_body(prompt, max_tokens, ignore_eos=True))


def _server_reading(answer, timing):
    """vLLM's response carries no draft counts: they are the ``/metrics`` counters (``SERVER.counters``); the
    response gives the text and ``usage.completion_tokens``."""
    text = ((answer.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
    return Reading(tokens=int((answer.get("usage") or {}).get("completion_tokens") or 0),
                   seconds=decode_seconds(timing), text=text)


def _server():
    return Server(
        release=_server_release, request=_server_request, reading=_server_reading, metrics="/metrics",
        # prometheus_client exposes a Counter's samples with the suffix _total, a Histogram's as _sum and _count
        counters={"rounds": "vllm:spec_decode_num_drafts_total",
                  "drafted": "vllm:spec_decode_num_draft_tokens_total",
                  "accepted": "vllm:spec_decode_num_accepted_tokens_total",
                  "tokens": "vllm:generation_tokens_total",
                  "decode_seconds": "vllm:request_decode_time_seconds_sum",
                  "requests": "vllm:request_decode_time_seconds_count"},
        sources={
            "release": "vllm/entrypoints/serve/instrumentator/basic.py:53-56 (/version)",
            "vllm:spec_decode_num_drafts, _num_draft_tokens, _num_accepted_tokens": "vllm/v1/spec_decode/"
                                                                                   "metrics.py:228-232",
            "vllm:generation_tokens": "vllm/v1/metrics/loggers.py:798-802",
            "vllm:request_decode_time_seconds (first token to last, per request)": "vllm/v1/metrics/loggers.py:"
                                                                                   "1000-1008, 1305-1306",
        })


SERVER = _server()
