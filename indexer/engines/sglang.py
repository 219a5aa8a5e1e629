"""SGLang STANDALONE: a draft model beside the target (speculative/standalone_worker_v2.py), and its speculator
heads and built-in MTP (:mod:`indexer.engines.heads`). Sources are SGLang's, at :data:`VERSION`."""

from __future__ import annotations

from . import tables
from .archrules import ArchRule, Ranged, ShorterContext, StateIn, TypeIn
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
from .headrules import HeadFacts, HeadRules, TargetShape, check
from .server import Exchange, Reading, Server, chat_body, decode_seconds, stream_text, stream_usage
from .setup import Setup, Source, requantized

NAME = "sglang"  # the registry key: --engine sglang
# The PyPI wheels (no sdist since 0.5.10.post1), oldest first; head-rule paths are relative to python/sglang/srt/.
RELEASES = ("0.5.20", "0.5.21", "0.5.22", "0.5.23")
VERSION = RELEASES[-1]
# The release the citations without since= were read at (engines/audit.py); at the older releases the audit re-pinned
# the ones that moved or were re-read with the same meaning (data/sglang/audited.json).
READ_AT = "0.5.23"

ALLOW_LONGER = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
ARCH_RULES = (
    # falcon_mamba, and mamba, whose model wraps FalconMamba (srt/models/mamba.py); SGLang has no Jamba model
    ArchRule("Mamba-1 target", TypeIn("target", frozenset({"falcon_mamba", "mamba"})), REFUSED,
             "the first verify fails the assert \"Mamba-1 (Falcon-Mamba) does not support speculative decoding yet\"",
             "python/sglang/srt/layers/attention/mamba/mamba1.py:230-232"),
    ArchRule("hybrid target", StateIn("target", frozenset({"mamba2", "gated_deltanet", "short_conv"})), None,
             "SGLang keeps these layers' states per draft token and runs the pair (with the extra_buffer radix "
             "cache, --mamba-track-interval must be at least --speculative-num-draft-tokens)",
             "python/sglang/srt/arg_groups/mamba_hook.py:132-133"),
    ArchRule("shorter draft context", ShorterContext("context_sglang", "SGLang's get_context_length: the first "
             "context key of the text config, times a rope factor"), REFUSED,
             "the draft worker is built with the target's context length and its ModelConfig raises ValueError "
             "(\"Target model's context_length ... is greater than the derived context_length\")",
             "python/sglang/srt/configs/model_config.py:1291-1316, "
             "python/sglang/srt/speculative/standalone_worker_v2.py:86-93",
             fix=f"set {ALLOW_LONGER} (SGLang then raises the draft's max_position_embeddings to {{t}}; past its "
                 "trained {d} tokens its drafts get worse), or serve the target with --context-length {d}"),
    ArchRule("hybrid draft", StateIn("draft"), None,
             "a STANDALONE draft with state layers is not established in SGLang's code (unverified: read, not run)",
             "python/sglang/srt/speculative/standalone_worker_v2.py:86-93"),
)


def rule(t: Side, d: Side) -> Verdict:
    """STANDALONE raises when model_config.vocab_size differs; no tokenizer check runs."""
    ts, ds = t.vocab_size, d.vocab_size
    if ts is None or ds is None or ts != ds:
        return Verdict(REFUSED, [size_differs("vocab_size", ts, ds) + " (STANDALONE raises ValueError at launch)"])
    missing = tokenizer_missing(t, d)
    if missing:
        return Verdict(USELESS, [f"vocab_size {ts} on both; {missing}"])
    if not same_mapping(t, d):
        return mapping_differs(t, d, ts, f"vocab_size {ts} on both, and the draft worker loads no tokenizer, so "
                                         "SGLang starts")
    return Verdict(WORKS, [f"vocab_size {ts} and get_vocab() mapping identical"])


def sizes(t: Side, d: Side) -> tuple[int | None, int | None]:
    """SGLang compares hf_text_config.vocab_size."""
    return t.vocab_size, d.vocab_size


def fix(outcome: str, *, shared: bool, sizes: tuple, tli: str, tli_blocked) -> str | None:
    """No TLI in SGLang (PR #22883 open, not merged); sizes are all it compares."""
    return resize_words(sizes[0]) if outcome == REFUSED and shared and sizes[0] is not None else None


# The chain a head launch runs: without --speculative-num-steps SGLang picks its own steps and top-k
# (server_args.py auto_choose_speculative_params, often a tree the speed model does not describe); 3 steps of top-k 1
# is what SpecForge's SpecBundle measured its EAGLE-3 heads with.
HEAD_CHAIN = 3


def _chain_flags(steps: int) -> str:
    """A chain of ``steps`` drafted tokens: steps N, top-k 1, N+1 tokens verified (arg_groups/fields/spec.py)."""
    return f"--speculative-num-steps {steps} --speculative-eagle-topk 1 --speculative-num-draft-tokens {steps + 1}"


def launch(setup: Setup) -> list[str]:
    """The STANDALONE serve command (a draft model, not a head). Draft tokens: a chain of that many drafted tokens
    (--speculative-num-steps N, --speculative-eagle-topk 1, --speculative-num-draft-tokens N+1: a chain verifies
    its N tokens and the bonus one, arg_groups/fields/spec.py); without a count SGLang's own tree of 4 steps, top-k
    2 and 7 tokens. A side that runs at FP8 from a float checkpoint gets --quantization fp8 (target) or
    --speculative-draft-model-quantization fp8 (draft; arg_groups/fields/model.py, spec.py)."""
    if setup.method != "draft_model":  # a head, built-in MTP or n-gram
        return SGLangHeads().launch_setup(setup)
    assert setup.draft is not None  # a draft-model launch
    n = setup.draft_tokens
    tree = ("--speculative-num-steps 4 --speculative-eagle-topk 2 --speculative-num-draft-tokens 7" if not n
            else _chain_flags(n))
    quant = "".join(f" {flag} {q}" for flag, src in (("--quantization", setup.target),
                                                     ("--speculative-draft-model-quantization", setup.draft))
                    if (q := requantized(src)))
    return [f"python -m sglang.launch_server --model-path {setup.target.repo} --speculative-algorithm STANDALONE "
            f"--speculative-draft-model-path {setup.draft.repo} {tree}{quant}"]


# ---------------------------------------------------------------- speculator heads and built-in MTP
# SGLang picks the model class from architectures[0]: its registry keys every model file's EntryClass by class name
# (models/registry.py:134-148). The head classes it ships (EAGLE, EAGLE-3, DFlash, DSpark), with the algorithm each
# serves and the file:line that lists it, extracted from the release's models/*.py (scripts/extract_tables.py).
SGLANG_SPECULATORS = tables.values(NAME, VERSION, "speculative_models")
SGLANG_HEAD_ARCHS = tables.heads(NAME, VERSION)
SRT = "python/sglang/srt/"


# EAGLE-3 and DFlash/DSpark need the target's model class to capture the chosen layers' hidden states: SGLang raises
# ValueError when it lacks set_eagle3_layers_to_capture (EAGLE-3), or both set_dspark_layers_to_capture (DSpark only)
# and set_dflash_layers_to_capture (model_executor/model_runner_components/attention_backend_setup.py:55-61, 62-72).
# The registered classes that have them, defined or inherited, are extracted per release (table capture_classes).
def _capture_classes(release: str) -> dict[str, dict[str, str]]:
    """method kind (eagle3, dflash, dspark) -> registered class -> where it gets the method (relative to SRT)."""
    return {kind: {c: w.removeprefix(SRT) for c, w in found.items()}
            for kind, found in tables.values(NAME, release, "capture_classes").items()}


# Built-in MTP. SGLang: the draft worker rewrites the target's architecture into its MTP class
# (configs/model_config.py ``_config_draft_model``, an ``if`` per family: the lines are extracted per release, table
# mtp_rewrites; GigaChat35 came with 0.5.21 and ExaoneMoe with 0.5.22); NEXTN is an alias of EAGLE
# (speculative/spec_registry.py:183).
SGLANG_MTP_ARCHS = (
    "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM", "DeepseekV4ForCausalLM",
    "Glm4MoeForCausalLM", "Glm4MoeLiteForCausalLM", "Glm5NextForConditionalGeneration",
    "GlmOcrForConditionalGeneration", "LongcatFlashForCausalLM", "MiMoForCausalLM", "MiMoV2ForCausalLM",
    "MiMoV2FlashForCausalLM", "Step3p5ForCausalLM", "InklingForConditionalGeneration", "GigaChat35ForCausalLM",
    "Step3p7ForConditionalGeneration", "BailingMoeV2ForCausalLM", "BailingMoeForCausalLM",
    "BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM", "Ernie4_5_MoeForCausalLM", "Qwen3NextForCausalLM",
    "Qwen4ExpForConditionalGeneration", "Qwen3MoeForCausalLM", "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM", "ExaoneMoEForCausalLM",
    "ExaoneMoeForCausalLM", "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "HYV3ForCausalLM",
    "HYV4ForCausalLM",
)
def _mtp_lines(release: str) -> dict[str, int]:
    """The architectures _config_draft_model rewrites at ``release``, with the line of each one's ``if``."""
    rewrites = tables.values(NAME, release, "mtp_rewrites")
    return {a: rewrites[a] for a in SGLANG_MTP_ARCHS if a in rewrites}


# Architectures whose draft path SGLang defaults to the target itself (arg_groups/speculative_hook.py:1121-1145);
# for the others the launch command names the target as --speculative-draft-model-path.
SGLANG_MTP_SELF_DRAFT_ARCHS = (
    "DeepseekV32ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV4ForCausalLM", "Glm4MoeForCausalLM",
    "Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM", "BailingMoeForCausalLM", "BailingMoeV2ForCausalLM",
    "BailingMoeV2_5ForCausalLM", "MistralLarge3ForCausalLM", "PixtralForConditionalGeneration",
    "HYV3ForCausalLM", "HYV4ForCausalLM", "Qwen4ExpForConditionalGeneration",
)
SGLANG_ALGORITHM = {"eagle": "EAGLE", "eagle3": "EAGLE3", "peagle": "EAGLE3", "dflash": "DFLASH",
                    "dspark": "DSPARK", "mtp": "NEXTN"}


class SGLangHeads(HeadRules):
    """SGLang's head rules (paths relative to python/sglang/srt/ at :data:`VERSION`)."""

    engine = NAME
    release = VERSION
    head_classes = SGLANG_HEAD_ARCHS
    speculators = SGLANG_SPECULATORS
    mtp_archs = _mtp_lines(VERSION)
    mtp_span = tables.source(NAME, VERSION, "mtp_rewrites").removeprefix(SRT)
    capture_classes = _capture_classes(VERSION)
    registered = tables.values(NAME, VERSION, "registered_models")
    methods = {
        "eagle": ("EAGLE", "speculative/spec_info.py:42, models/llama_eagle.py:153"),
        "eagle3": ("EAGLE3", "speculative/spec_info.py:43, models/llama_eagle3.py:387"),
        "dflash": ("DFLASH / DSPARK", "speculative/spec_info.py:39-41, models/dflash.py:1317, models/dspark.py:995"),
        "mtp": ("NEXTN", f"speculative/spec_registry.py:183, {mtp_span}"),
        "ngram": ("NGRAM", "speculative/spec_info.py:46"),
    }
    mtp_method = "NEXTN"
    mtp_layers_source = mtp_span
    aux_any_depth_source = "models/llama.py:933-936"
    aux_default_source = "models/llama.py:933-936"
    eagle_aux_source = "models/llama_eagle.py:91"
    dflash_layer_ids_source = "speculative/dflash_utils.py:579-584"
    # The lm_head has draft_vocab_size rows and d2t maps each draft id to a target id (hot_token_id).
    draft_vocab_source = "models/llama_eagle3.py:306-314, 350-352"
    # speculative/eagle_worker_v2.py:260-274
    draft_vocab_note = "; SGLang's --speculative-use-rejection-sampling needs the full vocabulary"

    def loads(self, head: HeadFacts) -> tuple[bool, str, str, str | None]:
        """No speculators loader; the model class comes from architectures (its head classes only)."""
        if head.format == "speculators":
            return (False, "SGLang has no loader for the speculators format (no speculators_config handling "
                    "anywhere in sglang/srt); use the head's SGLang-native conversion",
                    f"sglang {VERSION}: grep speculators_config python/sglang/srt", None)
        arch = next((a for a in head.architectures if a in self.head_classes), None)
        if arch is None:
            return (False, f"SGLang resolves the model class from architectures ({', '.join(head.architectures)}), "
                    "and none is one of its head classes (e.g. LlamaForCausalLMEagle, LlamaForCausalLMEagle3)",
                    "models/registry.py:93-112, models/llama_eagle.py:153, models/llama_eagle3.py:387", None)
        algo = self.head_classes[arch]
        e = self.speculators[arch]
        return (True, f"{arch} is SGLang's {algo.upper()} head class", f"{e['file'].removeprefix(SRT)}:{e['line']} "
                "(EntryClass)",
                algo.upper())

    def capture(self, head: HeadFacts) -> tuple[dict[str, str], str, str] | None:
        """EAGLE-3 and DFlash/DSpark targets must have the layer capture (EAGLE-1: any target)."""
        if head.algorithm in ("eagle3", "peagle"):
            return (self.capture_classes["eagle3"], "EAGLE-3",
                    "model_executor/model_runner_components/attention_backend_setup.py:55-61")
        if head.algorithm in ("dflash", "dspark"):
            dspark = self.capture_classes["dspark"] if head.algorithm == "dspark" else {}
            return ({**self.capture_classes["dflash"], **dspark}, "DFlash" if not dspark else "DSpark",
                    "model_executor/model_runner_components/attention_backend_setup.py:62-72")
        return None

    def target_class(self, target: TargetShape) -> tuple[str | None, str]:
        """The first of the target's architectures SGLang registers, else its Transformers fallback
        (models/registry.py:93-112, resolve_model_cls)."""
        arch = next((a for a in target.architectures if a in self.registered), None)
        if arch is not None:
            return arch, ""
        if not target.architectures:
            return None, " (the config names no architectures)"
        return ("TransformersForCausalLM", f" (SGLang registers no class for {target.architectures[0]} and falls back "
                "to its Transformers backend)")

    def hidden(self, head: HeadFacts) -> tuple[int | None, str]:
        """The fc input each head class builds from the target's hidden size."""
        if head.algorithm in ("eagle3", "peagle"):
            # SGLang shares the target's embedding only when target_hidden_size is absent or equals hidden_size
            # (models/llama.py:910-916), so this one comparison covers the embedding too.
            return (head.target_hidden_size or head.hidden_size,
                    "models/llama_eagle3.py:151-154 (fc input = target_hidden_size or hidden_size)")
        if head.algorithm == "eagle":
            return head.hidden_size, "models/llama_eagle.py:91 (fc over concat(embeds, hidden) = 2*hidden_size)"
        # dflash / dspark: fc reads len(target_layer_ids) * hidden_size
        return head.hidden_size, "models/dflash.py:750-770 (fc = num_context_features * hidden_size)"

    def target_vocab(self, target: TargetShape) -> int | None:
        """SGLang's text config rule (modelconfig.sglang_text_config)."""
        return target.vocab_size

    def borrowed_vocab(self, head: HeadFacts, tv: int | None, checks: list) -> bool | None:
        """SGLang hands EAGLE-1 and DFlash/DSpark heads the target's own embedding and lm_head."""
        if head.algorithm not in ("eagle", "dflash", "dspark"):
            return None
        src = ("speculative/eagle_worker_v2.py:376-378 (set_embed_and_head)" if head.algorithm == "eagle"
               else "speculative/dflash_worker_v2.py:138 (the draft borrows the target lm_head)")
        if head.mask_token_id is not None and tv is not None and head.mask_token_id >= tv:
            return check(checks, "vocab_size", False,
                         f"mask_token_id {head.mask_token_id} is outside this target's vocabulary of {tv}",
                         "speculative/dflash_worker_v2.py:1399-1405")
        return check(checks, "vocab_size", True,
                     f"uses the target's embedding and lm_head (vocabulary {tv}); trained vocabulary "
                     f"{head.vocab_size}", src)

    def vocab_source(self, head: HeadFacts) -> str:
        """EAGLE-3's d2t map indexes the head's vocabulary."""
        return "models/llama_eagle3.py:350-352 (d2t maps draft ids into the head's vocabulary)"

    def eagle_aux_limit(self, head: HeadFacts, layers: int) -> tuple[int, int, str] | None:
        """SGLang captures EAGLE-3 id v at layer v+1 of its loop (models/llama.py:941, 486-492), so v <= L-2; it reads
        only eagle_config's list (model_executor/model_runner_components/spec_aux_hidden_state.py:186-196)."""
        if head.aux_key != "eagle_config.eagle_aux_hidden_state_layer_ids":
            return None
        return 0, layers - 2, "models/llama.py:941, 486-492 (id v is captured at layer v+1)"

    def mtp_support(self, target: TargetShape, arch: str | None) -> tuple[bool, str, str]:
        """The draft worker rewrites the target's architecture into its MTP class (SGLANG_MTP_ARCHS)."""
        line = self.mtp_archs.get(arch or "")
        return (line is not None, f"SGLang {'has an' if line else 'has no'} MTP draft class for {arch}",
                f"configs/model_config.py:{line}" if line else self.mtp_span)

    def mtp_draft(self, target: TargetShape) -> Source | None:
        """NEXTN names the target as draft path unless SGLang defaults to it (SGLANG_MTP_SELF_DRAFT_ARCHS)."""
        arch = target.architectures[0] if target.architectures else ""
        return None if arch in SGLANG_MTP_SELF_DRAFT_ARCHS else Source(target.repo_id)

    def launch_setup(self, setup: Setup) -> list[str]:
        """The serve command (arg_groups/fields/spec.py:31-40): the method's --speculative-algorithm, the head (or the
        MTP draft path) as --speculative-draft-model-path, a chain of the setup's draft tokens (DFlash drafts its
        block and NGRAM its own: SGLang sets their steps), --quantization fp8 for a float target run at FP8."""
        algorithm = "NGRAM" if setup.method == "ngram" else SGLANG_ALGORITHM.get(setup.method, setup.method.upper())
        draft = f" --speculative-draft-model-path {setup.draft.repo}" if setup.draft is not None else ""
        chain = f" {_chain_flags(setup.draft_tokens)}" if setup.draft_tokens and setup.method not in (
            "dflash", "dspark", "ngram") else ""
        quant = "".join(f" {flag} {q}" for flag, src in (("--quantization", setup.target),
                                                         ("--speculative-draft-model-quantization", setup.draft))
                        if (q := requantized(src)))
        return [f"python -m sglang.launch_server --model-path {setup.target.repo} --speculative-algorithm "
                f"{algorithm}{draft}{chain}{quant}"]

    def launch_tokens(self, head: HeadFacts | None, target: TargetShape | None) -> int:
        """The chain the launch command states (HEAD_CHAIN)."""
        return HEAD_CHAIN


def _older_heads(release: str) -> SGLangHeads:
    """SGLangHeads at a release before 0.5.23: that release's head classes, registered and capturing classes and
    MTP rewrites (extracted), and the lines its rules cite where the audit re-pinned them (tables.relined)."""
    heads = SGLangHeads()
    places = heads.places = tables.relined(NAME, release)  # every check's source, also in method bodies
    heads.release = release
    heads.head_classes = tables.heads(NAME, release)
    heads.speculators = tables.values(NAME, release, "speculative_models")
    heads.mtp_archs = _mtp_lines(release)
    heads.mtp_span = heads.mtp_layers_source = tables.source(NAME, release, "mtp_rewrites").removeprefix(SRT)
    heads.methods = {k: (m, tables.reline(src, places)) for k, (m, src) in SGLangHeads.methods.items()}
    heads.methods["mtp"] = ("NEXTN", f"{tables.reline('speculative/spec_registry.py:183', places)}, {heads.mtp_span}")
    heads.capture_classes = _capture_classes(release)
    heads.registered = tables.values(NAME, release, "registered_models")
    return heads


HEADS = (*(Ranged(value=_older_heads(r), since=r, until=RELEASES[i + 1]) for i, r in enumerate(RELEASES[:-1])),
         Ranged(value=SGLangHeads(), since=VERSION))
ENGINE = released(
    releases=RELEASES,
    name=NAME, display="SGLang STANDALONE", version=f"sglang {VERSION}",
    speed=SpeedProfile("serving", ("nvidia", "amd"), "bf16", "bf16", 8,
                       source="docs/get_started/install.md (CUDA), docs/platforms/amd_gpu.md (ROCm)"),
    sources=(Ranged(value={
        "vocab_size equal": "python/sglang/srt/speculative/standalone_worker_v2.py:185-215",
        "text config priority": "python/sglang/srt/utils/hf_transformers/common.py:547-613 (get_hf_text_config)",
        "no get_vocab() check (draft worker loads no tokenizer)": "python/sglang/srt/managers/tp_worker.py:326-329",
    }),),
    facts=("vocab_size", "tok.vocab_sha256", "vocab"),
    rule=rule, class_key=("vs", "tok"), launch=launch, sizes=sizes, fix=fix, words=dict(SIZE_WORDS),
    heads=HEADS, arch_rules=ARCH_RULES)


# ---------------------------------------------------------------- what SGLang's server reports (indexer measure)
# Paths are relative to the sglang 0.5.23 wheel's python/sglang/srt/.
def _server_release(get_json) -> str | None:
    """``GET /server_info``' ``version`` (entrypoints/http_server.py:863-890)."""
    answer = get_json("/server_info")
    version = answer.get("version") if isinstance(answer, dict) else None
    return str(version) if version else None


def _server_request(prompt: str, max_tokens: int, target: str | None = None, draft: str | None = None):
    """A greedy streamed chat completion of exactly ``max_tokens`` tokens, asking for the speculative details
    (``return_spec_tokens_details``, ``ignore_eos``: entrypoints/openai/protocol.py:961, 1012) and the usage."""
    body = chat_body(prompt, max_tokens, ignore_eos=True, return_spec_tokens_details=True,
                     stream_options={"include_usage": True})
    return Exchange("/v1/chat/completions", {**body, "stream": True}, stream=True)


def _server_reading(events, timing):
    """The last event's ``sglext.spec_tokens_details`` (entrypoints/openai/serving_chat.py:2703-2729):
    ``spec_num_proposed_drafts`` = verify passes x (draft tokens - 1), ``spec_num_correct_drafts`` kept,
    ``spec_verify_ct`` passes (managers/tokenizer_manager.py:3148-3172)."""
    details = {}
    for e in events:
        ext = e.get("sglext") if isinstance(e, dict) else None
        got = (ext or {}).get("spec_tokens_details")
        if isinstance(got, list):
            got = got[0] if got else None
        if isinstance(got, dict):
            details = got
    usage = stream_usage(events)
    return Reading(tokens=int(usage.get("completion_tokens") or 0), seconds=decode_seconds(timing),
                   text=stream_text(events), drafted=details.get("spec_num_proposed_drafts"),
                   accepted=details.get("spec_num_correct_drafts"), rounds=details.get("spec_verify_ct"))


def _server():
    return Server(
        release=_server_release, request=_server_request, reading=_server_reading,
        sources={
            "release": "entrypoints/http_server.py:863-890 (/server_info version)",
            "sglext.spec_tokens_details": "entrypoints/openai/protocol.py:455-468, serving_chat.py:2703-2729",
            "spec_num_proposed_drafts, spec_num_correct_drafts, spec_verify_ct": "managers/tokenizer_manager.py:"
                                                                               "3148-3172",
            "decode time": "not in the response (meta_info e2e_latency includes the prefill): timed by the client "
                           "from the first streamed token to the last",
        })


SERVER = _server()
