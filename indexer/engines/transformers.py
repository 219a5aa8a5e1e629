"""transformers assisted generation (``generate(assistant_model=...)``) and universal assisted generation (UAG),
at each of :data:`RELEASES` (the default: the newest, :data:`VERSION`); paths are relative to the repository root.
A row's ``since``/``until`` names the releases it holds for; its source is at ``since`` (or 5.24.0)."""

from __future__ import annotations

from functools import partial

from . import tables
from .archrules import WRONG_OUTPUT, ArchRule, Ranged, StateIn, TypeIn
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
from .headrules import Heads, HeadVerdict, TargetShape, check
from .setup import Setup, Source

RELEASES = ("5.21.1", "5.22.2", "5.23.0", "5.24.0", "5.25.0")  # the releases whose source we read, oldest first
VERSION = RELEASES[-1]
READ_AT = "5.24.0"  # the release the citations without since= were read at (engines/audit.py)

# The model types whose PreTrainedModel sets ``_is_stateful = True`` at 5.24.0 (extracted from models/*/modeling_*.py,
# each with its file:line, and the model types whose config class the model's folder defines);
# 5.25.0 removed the attribute, and these are the "former stateful types" there.
STATEFUL = frozenset(tables.values("transformers", "5.24.0", "stateful"))


def _no_cache(release: str) -> frozenset:
    """The causal-LM model types ``_supports_default_dynamic_cache`` excludes by class name (extracted: "reformer",
    "minimax", "xlnet", "rwkv", "xlstm", exempting "minimaxm2"/"minimaxm3"): generate() prepares no Cache for them,
    so assisted decoding raises RuntimeError "Assisted decoding requires a cache"."""
    return frozenset(tables.values("transformers", release, "no_default_cache"))


def _no_cache_source(release: str) -> str:
    t = tables.tables("transformers", release)["no_default_cache"]
    return f"{t['source']}, {t['raise'].rpartition('/')[2].replace('utils.py:', '')}"


# 5.25.0 removed ``_is_stateful``: linear-attention layers record each token's recurrent state and crop rolls it
# back (cache_utils.py:1082, 1162-1207; turned on for the target at generation/utils.py:4002, for the assistant at
# 2338-2340). These types hold no such history, or no Cache at all:
NO_CACHE = _no_cache("5.25.0")
# DeepseekV4HCACache.is_croppable = False (modeling_deepseek_v4.py:178 at 5.25.0)
UNCROPPABLE = frozenset({"deepseek_v4"})
MAMBA1 = frozenset({"mamba", "falcon_mamba", "jamba"})  # the chunked scan "does not take the past state"
ONE_STATE = frozenset({"zamba", "zaya"})  # update_recurrent_state with the final state only: one history entry
MODULE_STATE = frozenset({"recurrent_gemma"})  # the recurrent state lives on the module, outside the cache
# Rolled back, but with a wrong state when run on tiny random-weight models at 5.25.0 (tests/engine_harness.py;
# docs/engines.md "seen running"): the assisted path's logits differ from a fresh pass over its own tokens by 1e-2 to
# 3e-2, where rounding stays under 1e-4 (the kernels compute in float32 whatever the model's dtype, at 5.25.0:
# models/qwen3_5/modeling_qwen3_5.py:379, 504, models/olmo_hybrid/modeling_olmo_hybrid.py:358, 483,
# models/mamba2/modeling_mamba2.py:251, 313). Not rounding: plain decoding differs from the same fresh pass by 1e-7.
SEEN_DIFFERING = frozenset({"qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text", "mamba2", "olmo_hybrid"})
ROLLED_BACK = STATEFUL - NO_CACHE - UNCROPPABLE - MAMBA1 - ONE_STATE - MODULE_STATE - SEEN_DIFFERING

NO_CACHE_SAYS = ("_supports_default_dynamic_cache excludes its model class by name, so generate() prepares no Cache, "
                 "and assisted decoding raises RuntimeError \"Assisted decoding requires a cache\"")
NO_CACHE_ANCHORS = ("or all(unsupported_name not in name for unsupported_name in unsupported_model_names)",
                    'raise RuntimeError("Assisted decoding requires a cache")')

# The releases before 5.24.0 (OLDER): the same checks, at the lines the extractor found (tables "spans"), with each
# release's stateful model types. MiniMax gets a Cache there (MiniMaxCache, made by the model), and its crop raises.
OLDER = RELEASES[:RELEASES.index("5.24.0")]


def _span(name: str, release: str) -> str:
    return tables.values("transformers", release, "spans")[name]


def _since(release: str) -> str:
    return release  # the oldest too: its rows were read at it (engines/audit.py reads since as the release read at)


def _next(release: str) -> str:
    return RELEASES[RELEASES.index(release) + 1]


MINIMAX_CROP = ("src/transformers/models/minimax/modeling_minimax.py:109-110",
                'raise RuntimeError("MiniMaxCache does not support `crop` method")')
OLDER_ROWS = tuple(row for r in OLDER for row in (
    ArchRule("stateful target", TypeIn("target", frozenset(tables.values("transformers", r, "stateful"))), REFUSED,
             "generate(assistant_model=...) raises ValueError \"assisted generation is not supported with stateful "
             "models\": a recurrent state cannot be reset to a prefix of the generated text",
             _span("stateful_check", r), since=_since(r), until=_next(r),
             anchors=("assisted generation is not supported with stateful models",)),
    ArchRule("stateful draft", StateIn("draft"), None,
             "the assistant is not checked; its cache is cropped where it can be, so acceptance may fall while the "
             "target verifies every token", _span("assistant_cache_update", r), since=_since(r), until=_next(r),
             anchors=("def _update_past_and_masks(",)),
    ArchRule("uncroppable target cache", TypeIn("target", frozenset({"minimax"})), REFUSED,
             "MiniMax's model makes its own MiniMaxCache, whose crop raises RuntimeError \"MiniMaxCache does not "
             "support `crop` method\" at the first rejected draft token", MINIMAX_CROP[0], since=_since(r),
             until=_next(r), anchors=(MINIMAX_CROP[1],)),
))

ARCH_RULES = (
    *OLDER_ROWS,
    ArchRule("stateful target", TypeIn("target", STATEFUL), REFUSED,
             "generate(assistant_model=...) raises ValueError \"assisted generation is not supported with stateful "
             "models\": a recurrent state cannot be reset to a prefix of the generated text",
             "src/transformers/generation/utils.py:1885-1890", since="5.24.0", until="5.25.0",
             anchors=("assisted generation is not supported with stateful models",)),
    ArchRule("stateful draft", StateIn("draft"), None,
             "the assistant is not checked; its cache is cropped where it can be, so acceptance may fall while the "
             "target verifies every token",
             "src/transformers/generation/candidate_generator.py:292-302", since="5.24.0", until="5.25.0",
             anchors=("def _update_past_and_masks(",)),
    # 5.24.0 checks _is_stateful first (validation, before the assisted loop), so there the stateful types never
    # reach the cache check
    ArchRule("stateless target cache", TypeIn("target", _no_cache("5.24.0") - STATEFUL), REFUSED, NO_CACHE_SAYS,
             _no_cache_source("5.24.0"), since="5.24.0", until="5.25.0", anchors=NO_CACHE_ANCHORS),
    ArchRule("stateless target cache", TypeIn("target", NO_CACHE), REFUSED, NO_CACHE_SAYS,
             _no_cache_source("5.25.0"), since="5.25.0", anchors=NO_CACHE_ANCHORS),
    ArchRule("uncroppable target cache", TypeIn("target", UNCROPPABLE), REFUSED,
             "its compressed-attention cache layer is not croppable, and after the prefill generate() raises "
             "ValueError \"Assisted decoding requires a cache that can be cropped\"",
             "src/transformers/models/deepseek_v4/modeling_deepseek_v4.py:178, "
             "src/transformers/generation/utils.py:4103-4106", since="5.25.0",
             anchors=("is_croppable = False", "Assisted decoding requires a cache that can be cropped")),
    ArchRule("Mamba-1 target", TypeIn("target", MAMBA1), WRONG_OUTPUT,
             "it starts; a verify pass runs the first tokens through the chunked selective scan, which \"does not "
             "take the past state\", so the output can differ from the target's own (unverified: read, not run)",
             "src/transformers/models/mamba/modeling_mamba.py:418-419", since="5.25.0",
             anchors=("does not take the past state",)),
    ArchRule("one-state history target", TypeIn("target", ONE_STATE), REFUSED,
             "its layers store only a forward's final recurrent state, so crop cannot restore the accepted prefix's "
             "and generate() raises IndexError once several draft tokens are rejected (seen running on a tiny "
             "Zamba model)",
             "src/transformers/models/zamba/modeling_zamba.py:678, src/transformers/cache_utils.py:1204",
             since="5.25.0", anchors=("cache.update_recurrent_state(final_state", "recurrent_states_history[i][")),
    ArchRule("module-state target", TypeIn("target", MODULE_STATE), REFUSED,
             "its recurrent blocks keep their state on the module, outside the cache, and assisted decoding raises "
             "AttributeError ('CausalLMOutput' object has no attribute 'cache') (seen running on a tiny model)",
             "src/transformers/models/recurrent_gemma/modeling_recurrent_gemma.py:338", since="5.25.0",
             anchors=("self.recurrent_states = recurrent_states",)),
    ArchRule("stateful target rolled back, seen differing", TypeIn("target", SEEN_DIFFERING), WRONG_OUTPUT,
             "it starts and crop rolls the recorded recurrent state back, but run on tiny models the assisted path's "
             "logits differ from a fresh pass over the same tokens by 1e-2, a hundred times the float32 rounding of "
             "its kernels, so the state after a rollback is wrong (seen running): "
             "the output can be wrong",
             "src/transformers/cache_utils.py:1162-1207, src/transformers/generation/utils.py:4002", since="5.25.0",
             anchors=("def activate_past_recording(", "cache.activate_past_recording(")),
    ArchRule("stateful target rolled back", TypeIn("target", ROLLED_BACK), None,
             "transformers records each token's recurrent state during a verify pass and crop restores the accepted "
             "prefix's (since 5.25.0; was refused before)",
             "src/transformers/cache_utils.py:1162-1207, src/transformers/generation/utils.py:4002", since="5.25.0",
             anchors=("def activate_past_recording(", "cache.activate_past_recording(")),
)


def uag(lines: str) -> str:
    """The UAG advice, citing the translator at a release."""
    return ("pass tokenizer= and assistant_tokenizer= to generate() (transformers universal assisted generation, "
            f"generation/candidate_generator.py:{lines}: any pair, TLI when sampling)")


UAG_DEF = "def _get_assistant_to_target_input_ids("
UAG_LINES = (*(Ranged(value=_span("uag_translator", r).rpartition(":")[2], since=_since(r), until=_next(r),
                      source=_span("uag_translator", r).partition("-")[0], anchors=(UAG_DEF,))
               for r in OLDER),
             Ranged(value="762-795", since="5.24.0", until="5.25.0",
                    source="src/transformers/generation/candidate_generator.py:762",
                    anchors=("def _get_assistant_to_target_input_ids(",)),
             Ranged(value="775-808", since="5.25.0", source="src/transformers/generation/candidate_generator.py:775",
                    anchors=("def _get_assistant_to_target_input_ids(",)))
UAG = uag(str(UAG_LINES[-1].value))


def rule(t: Side, d: Side) -> Verdict:
    """Equal get_text_config().vocab_size: one tokenizer assumed; unequal: needs both tokenizers (UAG)."""
    for role, side in (("target", t), ("draft", d)):
        if side.text_config_error:
            return Verdict(REFUSED, [f"the {role}'s {side.text_config_error}: generate() raises ValueError"])
    ts, ds = t.vocab_size_transformers, d.vocab_size_transformers
    if ts is None or ds is None or ts != ds:
        return Verdict(REFUSED, [size_differs("vocab_size", ts, ds) + ": assisted generation raises ValueError "
                                 "unless tokenizer= and assistant_tokenizer= are passed (universal assisted "
                                 "generation, which works for any pair)"])
    missing = tokenizer_missing(t, d)
    if missing:
        return Verdict(USELESS, [f"vocab_size {ts} on both; {missing}"])
    if not same_mapping(t, d):
        return mapping_differs(t, d, ts, f"vocab_size {ts} on both, so transformers treats them as one tokenizer "
                                         "(passing assistant_tokenizer raises) and output stays correct, the target "
                                         "verifying every token")
    return Verdict(WORKS, [f"vocab_size {ts} on both and the same mapping"])


def sizes(t: Side, d: Side) -> tuple[int | None, int | None]:
    """transformers compares get_text_config().vocab_size."""
    return t.vocab_size_transformers, d.vocab_size_transformers


def fix(outcome: str, *, shared: bool, sizes: tuple, tli: str, tli_blocked, uag_lines: str) -> str | None:
    """UAG for a refused pair of unequal sizes (or resize the draft when only its rows differ)."""
    t_size, d_size = sizes
    if outcome != REFUSED or t_size is None or d_size is None or t_size == d_size:
        # equal vocab_size: transformers refuses assistant_tokenizer (generation/utils.py:1907-1917 at 5.25.0)
        return None
    return uag(uag_lines) + tli + (f", or {resize_words(t_size)}" if shared else "")


FIXES = tuple(Ranged(value=partial(fix, uag_lines=str(r.value)), since=r.since, until=r.until, source=r.source,
                     anchors=r.anchors) for r in UAG_LINES)


# --method ngram: generate(prompt_lookup_num_tokens=N) drafts N tokens copied from the text so far
# (PromptLookupCandidateGenerator, src/transformers/generation/utils.py:1318-1331); None turns it off and no
# default is set (src/transformers/generation/configuration_utils.py:335-336, 462). N = 10 as its maintainer
# gives it (https://huggingface.co/joaogante/activity/posts: "prompt_lookup_num_tokens=10").
NGRAM_TOKENS = 10
NGRAM_SOURCE = "src/transformers/generation/utils.py:1318-1331"
# --method mtp: the statements of generate(use_mtp=True) the verdict cites, at each release (tables "spans")
MTP_SPANS = ("mtp_generator", "mtp_layers_read", "batch_size_one", "mtp_no_patterns", "mtp_weights_missing")
MTP_ANCHORS = ("elif generation_config.use_mtp:", "Could not find `num_mtp_layers`",
               "assisted generate is only supported for batch_size = 1",
               "does not seem to register any known MTP layer patterns", "weights are missing from")


class GenerateDrafting(Heads):
    """What transformers drafts without a draft model, at one release, both as generate() keywords: prompt lookup
    (n-gram, ``prompt_lookup_num_tokens``) and the target's own MTP layers (``use_mtp=True``, MTPCandidateGenerator:
    MtpModel.from_pretrained builds the layers from the target's decoder-layer class and loads their weights from
    its checkpoint). Which model types run MTP is extracted per release (tables "mtp")."""

    engine = "transformers"

    def __init__(self, release: str):
        self.release = release
        self.spans = tables.values("transformers", release, "spans")
        self.mtp_types: dict = tables.values("transformers", release, "mtp")
        self.mtp_types_source = tables.source("transformers", release, "mtp")
        self.methods = {
            "ngram": ("prompt lookup (prompt_lookup_num_tokens)",
                      tables.reline(NGRAM_SOURCE, tables.relined("transformers", release))),
            "mtp": ("use_mtp (MTPCandidateGenerator)", self.spans["mtp_generator"])}

    def mtp(self, target: TargetShape) -> HeadVerdict:
        """Whether ``generate(use_mtp=True)`` runs the target's MTP layers at this release: its model type's config
        declares num_mtp_layers (else MTPCandidateGenerator raises ValueError), the config.json states them under the
        key that config reads, and MtpModel.from_pretrained finds their weights by the model's patterns."""
        checks: list[dict] = []
        release, spans = self.release, self.spans
        model_type = target.model_type or "(none)"
        entry = self.mtp_types.get(target.model_type or "")
        text_entry = self.mtp_types.get(target.text_model_type or "") if entry is None else None
        if entry is None or entry["class"] is None:
            able = ", ".join(t for t, e in self.mtp_types.items() if e["class"])
            known = entry or text_entry
            if known:  # a config that declares them, under a type AutoModelForCausalLM has no class for
                whose = "its config" if entry else f"its text config ({target.text_model_type})"
                why = (f"transformers {release} has no causal-LM class for model type {model_type} "
                       f"(AutoModelForCausalLM cannot load it), though {whose} declares num_mtp_layers")
                where = f"{known['config']}; {tables.source('transformers', release, 'causal_lm')}"
            else:
                why = (f"transformers {release} declares num_mtp_layers for no {model_type} config (it does for "
                       f"{able}), so generate(use_mtp=True) raises ValueError \"Could not find `num_mtp_layers`\"")
                where = f"{spans['mtp_layers_read']}; {self.mtp_types_source}"
            check(checks, "target_arch", False, why, where)
            return self._verdict(checks)
        check(checks, "target_arch", True, f"{entry['class']} reads num_mtp_layers from the config's {entry['key']}; "
              "the MTP layers draft by argmax, or by sampling with do_sample=True, and the target verifies them",
              f"{entry['config']}; {spans['mtp_generator']}")
        stated = target.mtp_key is not None and target.mtp_key.rpartition(".")[2] == entry["key"]
        layers = target.mtp_layers if stated else None
        if not layers:
            said = f" ({target.mtp_key} {target.mtp_layers}, which transformers does not read)" if (
                target.mtp_key and not stated) else ""
            check(checks, "mtp", False, f"the config declares no MTP layers in {entry['key']}{said}",
                  entry["config"])
        else:
            check(checks, "mtp", True, f"{layers} MTP layer(s) ({entry['key']}): {layers} draft token(s) a round",
                  entry["config"])
        self._weights(checks, target, entry, layers)
        check(checks, "batch", True, "one sequence at a time: assisted generation raises ValueError for a batch "
              "of more than one", spans["batch_size_one"])
        return self._verdict(checks)

    def _weights(self, checks: list, target: TargetShape, entry: dict, layers: int | None) -> None:
        """MtpModel.from_pretrained keeps the model's weight patterns with no layer number or one at or past
        num_hidden_layers, and raises when none is left or a weight of the MTP layers is not found."""
        spans, depth = self.spans, target.num_hidden_layers
        if entry["weights"] is None:
            check(checks, "weights", False, f"{entry['class']} registers no MTP weight patterns: MtpModel raises "
                  "ValueError", spans["mtp_no_patterns"])
            return
        fixed = entry["layers"]
        if fixed is None:
            check(checks, "weights", True, "its MTP weights are found by name, at any depth", entry["weights"])
            return
        wanted = list(range(depth, depth + (layers or 1))) if depth is not None else None
        if wanted is not None and set(wanted) <= set(fixed):
            check(checks, "weights", True, f"its MTP weights are found at checkpoint layer {wanted[0]}, a number "
                  f"{entry['class']} names", entry["weights"])
            return
        where = "the target's config states no num_hidden_layers" if wanted is None else (
            f"this target's MTP layers are checkpoint layer(s) {', '.join(map(str, wanted))}")
        raised = (f"{spans['mtp_no_patterns']}, ValueError" if wanted is not None and wanted[0] > max(fixed) else
                  f"{spans['mtp_weights_missing']}, RuntimeError")
        check(checks, "weights", False, f"{entry['class']} finds MTP weights only at checkpoint layer(s) "
              f"{', '.join(map(str, fixed))}, and {where}: MtpModel.from_pretrained raises "
              f"{raised.rpartition(', ')[2]}", f"{entry['weights']}; {raised.rpartition(', ')[0]}")

    def _verdict(self, checks: list[dict]) -> HeadVerdict:
        method = self.methods["mtp"][0]
        failed = next((c["check"] for c in checks if not c["ok"]), None)
        if failed is None:
            return HeadVerdict(True, [c["detail"] for c in checks], None, "exact", self.engine, method, None, checks)
        return HeadVerdict(False, [c["detail"] for c in checks if not c["ok"]], failed, None, self.engine, method,
                           None, checks)

    def mtp_setup(self, target: TargetShape) -> Setup:
        """The setup of the target's MTP layers: no draft, num_mtp_layers draft tokens a round (fixed)."""
        return Setup(self.engine, self.release, Source(target.repo_id), None, target.mtp_layers, "mtp")


HEADS = tuple(Ranged(value=GenerateDrafting(r), since=_since(r), until=_next(r) if r != VERSION else None,
                     source="; ".join(tables.values("transformers", r, "spans")[k] for k in MTP_SPANS),
                     anchors=MTP_ANCHORS)
              for r in RELEASES)


def launch(setup: Setup, *, universal: bool = False) -> list[str]:
    """A complete script, as one ``python -c`` line: the tokenizer, both models in their own dtype on the best
    device (CUDA, else MPS, else the CPU: device_map would need accelerate, seen running), the prompt's inputs,
    generate(assistant_model=...) and the decoded text; for n-gram and MTP setups the target alone
    (prompt_lookup_num_tokens=N; use_mtp=True, which drafts num_mtp_layers tokens a round).
    UAG on request (tokenizer= and assistant_tokenizer=).
    Draft tokens: a constant draft length (GenerationConfig num_assistant_tokens and num_assistant_tokens_schedule=
    "constant", src/transformers/generation/configuration_utils.py; generate() takes generation-config fields as
    keywords)."""
    t = setup.target.repo
    lines = ["import torch", "from transformers import AutoModelForCausalLM, AutoTokenizer",
             "device = 'cuda' if torch.cuda.is_available() else 'mps' if torch.backends.mps.is_available() else 'cpu'",
             f"tokenizer = AutoTokenizer.from_pretrained('{t}')",
             f"model = AutoModelForCausalLM.from_pretrained('{t}', dtype='auto').to(device)"]
    if setup.method in ("ngram", "mtp"):  # no assistant: candidates copied from the text, or the target's MTP layers
        call = (f"model.generate(**inputs, prompt_lookup_num_tokens={setup.draft_tokens or NGRAM_TOKENS}, "
                "max_new_tokens=64" if setup.method == "ngram" else "model.generate(**inputs, use_mtp=True, "
                "max_new_tokens=64")
        lines += ["inputs = tokenizer('Hello', return_tensors='pt').to(model.device)", f"out = {call})",
                  "print(tokenizer.decode(out[0], skip_special_tokens=True))"]
        return [f'python -c "{"; ".join(lines)}"']
    assert setup.draft is not None  # a draft-model launch
    d = setup.draft.repo
    lines.append(f"assistant = AutoModelForCausalLM.from_pretrained('{d}', dtype='auto').to(device)")
    call = "model.generate(**inputs, assistant_model=assistant, max_new_tokens=64"
    if universal:
        lines.append(f"assistant_tokenizer = AutoTokenizer.from_pretrained('{d}')")
        call += ", tokenizer=tokenizer, assistant_tokenizer=assistant_tokenizer"
    if setup.draft_tokens:
        call += f", num_assistant_tokens={setup.draft_tokens}, num_assistant_tokens_schedule='constant'"
    lines += ["inputs = tokenizer('Hello', return_tensors='pt').to(model.device)", f"out = {call})",
              "print(tokenizer.decode(out[0], skip_special_tokens=True))"]
    return [f'python -c "{"; ".join(lines)}"']


VOCAB_CHECK = "get_text_config().vocab_size == assistant_model.config.get_text_config()"
SOURCES = (
    *(Ranged(value={"vocab_size equal / assistant_tokenizer refused": _span("vocab_size_check", r),
                    "get_text_config()": _span("get_text_config", r),
                    "universal assisted generation (TLI)": _span("uag_translator", r)},
             since=_since(r), until=_next(r),
             anchors=(VOCAB_CHECK, "def get_text_config(", UAG_DEF))
      for r in OLDER),
    Ranged(value={"vocab_size equal / assistant_tokenizer refused": "src/transformers/generation/utils.py:1907-1919",
                  "get_text_config()": "src/transformers/configuration_utils.py:1519-1562",
                  "universal assisted generation (TLI)": "src/transformers/generation/candidate_generator.py:762-795"},
           since="5.24.0", until="5.25.0", anchors=(VOCAB_CHECK,
                                    "def get_text_config(", "def _get_assistant_to_target_input_ids(")),
    Ranged(value={"vocab_size equal / assistant_tokenizer refused": "src/transformers/generation/utils.py:1907-1917",
                  "get_text_config()": "src/transformers/configuration_utils.py:1525-1570",
                  "universal assisted generation (TLI)": "src/transformers/generation/candidate_generator.py:775-808"},
           since="5.25.0", anchors=("get_text_config().vocab_size == assistant_model.config.get_text_config()",
                                    "def get_text_config(", "def _get_assistant_to_target_input_ids(")),
)

ENGINE = released(
    releases=RELEASES, name="transformers", display="transformers assisted generation",
    version=f"transformers {VERSION}", sources=SOURCES,
    speed=SpeedProfile("eager", ("nvidia", "amd", "apple", "cpu"), "bf16", "bf16", 8,
                       source="PyTorch's devices: cuda (NVIDIA, and AMD through ROCm), mps (Apple), cpu"),
    facts=("vocab_size_transformers", "text_config_error", "tok.vocab_sha256"),
    rule=rule, class_key=("vst", "tok"), launch=launch, sizes=sizes, fix=FIXES, words=dict(SIZE_WORDS),
    arch_rules=ARCH_RULES, heads=HEADS)
