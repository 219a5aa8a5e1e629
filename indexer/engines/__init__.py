"""The engine registry: the one place that knows a serving engine (stdlib only, for the query path).

Each :class:`Engine` entry carries its name and display name, the engine version it mirrors,
the source reference of each check, the facts its rule reads, the rule itself, its class key
for ``compute``, its launch-command builder, and its words for the outcomes. ``rules``,
``compute``, ``query``, the CLI choices, the models and the site all read :data:`ENGINES`;
adding an engine means adding one entry here. docs/engines.md explains every rule.

A verdict has one of five outcomes, because a user needs to know whether speculation *works*,
not only whether the engine starts. For the engines that start without comparing token lists
(SGLang, vLLM, transformers, MLX, LM Studio), a started pair is graded by how far the two
vocabularies agree (:mod:`indexer.vocab.agreement`, whose thresholds are the only ones):

* ``works``: the engine accepts the pair and the ids text uses mean the same on both sides
  (identical mappings, or at least 99% of the target's tokens of the reference text agree);
* ``degraded``: it starts, and 50-99% agree: speculation pays less;
* ``useless``: it starts, but under half agree, so nearly every drafted token is
  rejected and speculation is slower than none (the engine does not warn);
* ``refused``: the engine raises at launch;
* ``no_speculation``: llama-server starts, logs the failed check and serves without a draft.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from ..gguf import LLAMACPP_COMMIT  # the llama.cpp version the GGUF layer transcribes (one place)
from ..vocab import agreement as _agreement
from .heads import HEAD_RULES
from .heads import METHODS as QUERY_METHODS  # noqa: F401  (re-exported: the --method choices, draft to all)

WORKS, DEGRADED, USELESS, REFUSED, NO_SPECULATION = "works", "degraded", "useless", "refused", "no_speculation"
OUTCOMES = (WORKS, DEGRADED, USELESS, REFUSED, NO_SPECULATION)
GGUF_CLASS_KEY = ("gguf_sig",)  # compute's class key for an engine that compares GGUF token lists
SLOWER = "nearly every drafted token is rejected, so speculation is slower than none"


@dataclass
class Side:
    """One model as the rules see it: config facts, tokenizer facts, and what llama.cpp reads."""

    name: str
    vocab_size: int | None  # SGLang's hf_text_config.vocab_size
    vocab_size_transformers: int | None  # transformers' get_text_config().vocab_size
    tok: dict | None  # fingerprint facts; None when no tokenizer could be loaded
    vocab: dict[str, int] | None = None  # full get_vocab() mapping, when available
    vllm_vocab_size: int | None = None  # vLLM's hf_text_config.vocab_size (its model-type remaps)
    text_config_error: str | None = None  # get_text_config() raises (transformers, vLLM)
    has_vision_config: bool = False  # config.json has vision_config (LM Studio)
    gguf: object | None = None  # indexer.gguf.predict.GGUFVocab: what convert_hf_to_gguf.py would write
    gguf_missing: str | None = None  # why ``gguf`` is None
    model_type: str | None = None  # config.json model_type (mlx-lm picks its model class by it)
    gguf_file: str | None = None  # a GGUF file whose own header gave ``gguf`` (read, not predicted)
    counts: dict[int, int] | None = None  # id counts of this tokenizer over the reference text (agreement)
    source_dir: str | None = None  # a local directory to count in when ``counts`` is None
    agreements: dict = field(default_factory=dict, repr=False, compare=False)  # draft name -> agreement (memo)


@dataclass
class Verdict:
    outcome: str
    reasons: list[str]

    @property
    def accepted(self) -> bool:
        """The engine starts with the pair (and drafts)."""
        return self.outcome in (WORKS, DEGRADED, USELESS)

    @property
    def compatible(self) -> bool:
        """Speculation works: accepted and the draft speaks the target's vocabulary."""
        return self.outcome == WORKS

    def to_dict(self) -> dict:
        return {"compatible": self.compatible, "accepted": self.accepted, "outcome": self.outcome,
                "reasons": self.reasons}


@dataclass(frozen=True)
class Engine:
    name: str
    display: str
    version: str
    sources: dict[str, str]  # check -> file:line at ``version``
    facts: tuple[str, ...]  # Side attributes the rule reads
    rule: Callable[[Side, Side], Verdict]
    # compute's class key: columns of compute's per-repo table; same key => the pair works
    class_key: tuple[str, ...]
    launch: Callable[[str, str], str]
    words: dict[str, str] = field(default_factory=dict)  # outcome -> how this engine says it
    # a Side fact that, true on the target, makes the engine refuse every draft (query reads it)
    refuses_target_with: str | None = None
    # Speculator heads and built-in MTP, per --method (eagle, eagle3, dflash, mtp, ngram): heads.HEAD_RULES' entry
    # for this engine (engine method name, fit rule, launch builder, source). Empty: it loads no heads.
    heads: dict = field(default_factory=dict)
    # The rule for a pair with a GGUF file on either side; None: the engine loads no GGUF files.
    gguf_rule: Callable[[Side, Side], Verdict] | None = None
    # Why a GGUF file target gets no drafts from this engine's query although it loads GGUF files (LM Studio:
    # they run on its llama.cpp engine, so ask that); None where the engine answers it or loads no GGUF.
    gguf_target_refusal: str | None = None

    @property
    def gguf_classes(self) -> bool:
        """Classes are GGUF vocabulary signatures, with cross-class pairs in ``llamacpp_pairs`` (llama.cpp)."""
        return self.class_key == GGUF_CLASS_KEY

    def refuses_gguf_target(self, gguf_file: str) -> str | None:
        """Why this engine's query gives a GGUF file target no drafts (None: it answers from the file's facts)."""
        if self.gguf_classes:
            return None
        if self.gguf_rule is not None:
            return self.gguf_target_refusal
        return loads_no_gguf(self.display, Side(gguf_file, None, None, None, gguf_file=gguf_file),
                             Side("", None, None, None))

    def verdict(self, t: Side, d: Side) -> Verdict:
        if t.gguf_file or d.gguf_file:
            if self.gguf_rule is None:
                return Verdict(REFUSED, [loads_no_gguf(self.display, t, d)])
            return self.gguf_rule(t, d)
        return self.rule(t, d)


def loads_no_gguf(display: str, t: Side, d: Side) -> str:
    files = [r for r, s in (("target", t), ("draft", d)) if s.gguf_file]
    what = "the target and the draft are GGUF files" if len(files) == 2 else f"the {files[0]} is a GGUF file"
    return (f"not judged: {display} loads Hugging Face checkpoints (config.json and tokenizer files) and its check "
            f"reads them; {what}. Check the HF repo the GGUF was made from, or run GGUF files with llama.cpp or "
            "LM Studio")


# ---------------------------------------------------------------- shared facts


def same_mapping(t: Side, d: Side) -> bool | None:
    if t.tok is None or d.tok is None:
        return None
    return t.tok["vocab_sha256"] == d.tok["vocab_sha256"]


def below(vocab: dict[str, int], limit: int) -> dict[str, int]:
    return {tok: i for tok, i in vocab.items() if i < limit}


def differs_only_above(t: Side, d: Side, size: int | None) -> bool:
    """The mappings agree on every id below ``size``: they differ only at ids no model emits."""
    if size is None or t.vocab is None or d.vocab is None:
        return False
    return below(t.vocab, size) == below(d.vocab, size)


def _sizes(what: str, ts, ds) -> str:
    return f"{what} differs: target {ts}, draft {ds}"


def target_counts(t: Side) -> dict[int, int] | None:
    """The target's id counts over the reference text: stored ones, else counted once in its directory."""
    if t.counts is None and t.source_dir is not None:
        try:
            t.counts = _agreement.count_text(t.source_dir)
        except Exception:  # noqa: BLE001 - transformers cannot tokenize: the grade rests on ids, and says so
            t.source_dir = None
    return t.counts


def pair_agreement(t: Side, d: Side) -> dict | None:
    """The pair's ``agreement`` object (memoised on the target), or None when a vocabulary is unknown."""
    key = (d.name, (d.tok or {}).get("vocab_sha256"))
    if key in t.agreements:
        return t.agreements[key]
    if t.vocab is not None and d.vocab is not None:
        a = _agreement.agreement(t.vocab, d.vocab, target_counts(t), _agreement.special_ids(t.tok))
    elif t.tok and d.tok and t.tok.get("base_vocab_sha256") == d.tok.get("base_vocab_sha256"):
        # No vocabulary in the token store: one base vocabulary, so the added tokens tell (as compute does).
        a = _agreement.by_added(t.tok.get("added_tokens") or [], d.tok.get("added_tokens") or [],
                                t_base=t.tok.get("hf_vocab_size"), d_base=d.tok.get("hf_vocab_size"),
                                ids_target=t.tok.get("vocab_len") or 0, counts=target_counts(t),
                                specials=_agreement.special_ids(t.tok))
    else:
        return None
    t.agreements[key] = a
    return a


GRADES = {_agreement.WORKS: WORKS, _agreement.DEGRADED: DEGRADED, _agreement.USELESS: USELESS}


def _mapping_differs(t: Side, d: Side, size: int | None, starts: str, notes: list[str] = ()) -> Verdict:
    """A started pair whose mappings differ, graded by how far they agree (works, degraded, useless)."""
    a = pair_agreement(t, d)
    if a is None:
        return Verdict(USELESS, [f"{starts}; the get_vocab() mappings differ and a vocabulary is missing from the "
                                 f"token store, so how far they agree is unknown: assume {SLOWER}", *notes])
    outcome = GRADES[a["class"]] if not a["identical"] else WORKS
    said = {WORKS: "drafting one of the differing tokens is rejected; every other drafted token is verified as "
                   "with an identical vocabulary",
            DEGRADED: "speculation pays less than with an identical vocabulary: the figure is the ceiling of "
                      "acceptance",
            USELESS: SLOWER}[outcome]
    above = (f" (ids >= vocab_size {size} only, which neither model can emit)"
             if differs_only_above(t, d, size) else "")
    warnings = a["warnings"] if outcome != USELESS else []  # when everything differs, naming specials is noise
    return Verdict(outcome, [f"{starts}; {_agreement.summary(a)}{above}: {said}",
                             *(f"warning: {w}" for w in warnings), *notes])


def _tokenizer_missing(t: Side, d: Side) -> str | None:
    for role, side in (("target", t), ("draft", d)):
        if side.tok is None:
            return f"the {role}'s tokenizer could not be loaded, so the mappings cannot be compared"
    return None


# ---------------------------------------------------------------- rules


def sglang_rule(t: Side, d: Side) -> Verdict:
    """STANDALONE raises when model_config.vocab_size differs; no tokenizer check runs."""
    ts, ds = t.vocab_size, d.vocab_size
    if ts is None or ds is None or ts != ds:
        return Verdict(REFUSED, [_sizes("vocab_size", ts, ds) + " (STANDALONE raises ValueError at launch)"])
    missing = _tokenizer_missing(t, d)
    if missing:
        return Verdict(USELESS, [f"vocab_size {ts} on both; {missing}"])
    if not same_mapping(t, d):
        return _mapping_differs(t, d, ts, f"vocab_size {ts} on both, and the draft worker loads no tokenizer, so "
                                          "SGLang starts")
    return Verdict(WORKS, [f"vocab_size {ts} and get_vocab() mapping identical"])


def tli_constraints(t: Side, d: Side) -> list[str]:
    """What vLLM's use_heterogeneous_vocab needs beyond method draft_model and a greedy draft."""
    out = []
    for role, side in (("target", t), ("draft", d)):
        tok = side.tok or {}
        if tok.get("unk_token_id") is None and tok.get("eos_token_id") is None:
            out.append(f"the {role} has neither an unk nor an eos token, so vLLM's TLI refuses it")
    return out


def vllm_rule(t: Side, d: Side) -> Verdict:
    """draft_model raises when get_vocab_size() differs; tokenizers are never compared."""
    for role, side in (("target", t), ("draft", d)):
        if side.text_config_error:
            return Verdict(REFUSED, [f"the {role}'s {side.text_config_error}: vLLM's ModelConfig raises"])
    ts, ds = t.vllm_vocab_size, d.vllm_vocab_size
    if ts is None or ds is None or ts != ds:
        why = _sizes("vocab_size", ts, ds) + " (draft_model raises ValueError at launch)"
        tli = tli_constraints(t, d)
        hint = ("; `use_heterogeneous_vocab: true` (draft_model only, greedy draft) would run TLI"
                if not tli else f"; TLI is not possible either: {'; '.join(tli)}")
        return Verdict(REFUSED, [why + hint])
    missing = _tokenizer_missing(t, d)
    if missing:
        return Verdict(USELESS, [f"vocab_size {ts} on both; {missing}"])
    if not same_mapping(t, d):
        return _mapping_differs(t, d, ts, f"vocab_size {ts} on both, so vLLM starts (it never compares tokenizers)")
    return Verdict(WORKS, [f"vocab_size {ts} on both and the same get_vocab() mapping"])


def transformers_rule(t: Side, d: Side) -> Verdict:
    """Equal get_text_config().vocab_size: one tokenizer assumed; unequal: needs both tokenizers (UAG)."""
    for role, side in (("target", t), ("draft", d)):
        if side.text_config_error:
            return Verdict(REFUSED, [f"the {role}'s {side.text_config_error}: generate() raises ValueError"])
    ts, ds = t.vocab_size_transformers, d.vocab_size_transformers
    if ts is None or ds is None or ts != ds:
        return Verdict(REFUSED, [_sizes("vocab_size", ts, ds) + ": assisted generation raises ValueError unless "
                                 "tokenizer= and assistant_tokenizer= are passed (universal assisted generation, "
                                 "which works for any pair)"])
    missing = _tokenizer_missing(t, d)
    if missing:
        return Verdict(USELESS, [f"vocab_size {ts} on both; {missing}"])
    if not same_mapping(t, d):
        return _mapping_differs(t, d, ts, f"vocab_size {ts} on both, so transformers treats them as one tokenizer "
                                          "(passing assistant_tokenizer raises) and output stays correct, the target "
                                          "verifying every token")
    return Verdict(WORKS, [f"vocab_size {ts} on both and the same mapping"])


# mlx-lm d78bf58e: get_model_classes imports mlx_lm.models.<MODEL_REMAPPING.get(t, t)> and raises
# "Model type X not supported." otherwise (mlx_lm/utils.py:46-57, 187-193); the modules of mlx_lm/models/.
MLX_LM_MODEL_REMAPPING = {"mistral": "llama", "llava": "mistral3", "phi-msft": "phixtral", "falcon_mamba": "mamba",
                          "joyai_llm_flash": "deepseek_v3", "kimi_k2": "deepseek_v3", "qwen2_5_vl": "qwen2_vl",
                          "minimax_m2": "minimax", "iquestcoder": "llama", "gemma4_unified": "gemma4"}
MLX_LM_MODEL_MODULES = frozenset("""
Klear activations afm7 afmoe apertus baichuan_m1 bailing_moe bailing_moe_linear base bitlinear_layers bitnet
cache cohere cohere2 dbrx deepseek deepseek_v2 deepseek_v3 deepseek_v32 dots1 ernie4_5 ernie4_5_moe exaone
exaone4 exaone_moe falcon_h1 gated_delta gemma gemma2 gemma3 gemma3_text gemma3n gemma4 gemma4_text glm glm4
glm4_moe glm4_moe_lite glm_moe_dsa gpt2 gpt_bigcode gpt_neox gpt_oss granite granitemoe granitemoehybrid
helium hunyuan hunyuan_v1_dense internlm2 internlm3 iquestloopcoder jamba kimi_k25 kimi_linear kimi_vl laguna
lfm2 lfm2-vl lfm2_moe lille-130m llama llama4 llama4_text longcat_flash longcat_flash_ngram mamba mamba2
mellum mimo mimo_v2_flash minicpm minicpm3 minimax ministral3 mistral3 mixtral mla nanochat nemotron nemotron-nas
nemotron_h olmo olmo2 olmo3 olmoe openelm phi phi3 phi3small phimoe phixtral pipeline pixtral plamo plamo2
qwen qwen2 qwen2_moe qwen2_vl qwen3 qwen3_5 qwen3_5_moe qwen3_moe qwen3_next qwen3_vl qwen3_vl_moe
recurrent_gemma rope_utils rwkv7 seed_oss smollm3 solar_open ssm stablelm starcoder2 step3p5 switch_layers
telechat3 youtu_llm
""".split())


def mlx_model_type_supported(model_type: str | None) -> bool | None:
    """Whether mlx_lm.load finds a model class for this config model_type (None: unknown)."""
    if model_type is None:
        return None
    return MLX_LM_MODEL_REMAPPING.get(model_type, model_type) in MLX_LM_MODEL_MODULES


def _mlx_load_notes(t: Side, d: Side) -> list[str]:
    """The vocabulary rule is the verdict; say when mlx_lm.load would refuse a side before it."""
    return [f"note: mlx_lm.load refuses the {role}'s model_type {side.model_type!r} (\"Model type "
            f"{MLX_LM_MODEL_REMAPPING.get(side.model_type, side.model_type)} not supported.\") before any "
            "vocabulary check" for role, side in (("target", t), ("draft", d))
            if mlx_model_type_supported(side.model_type) is False]


def _mlx_sizes(t: Side, d: Side) -> tuple[int | None, int | None]:
    return (t.tok or {}).get("hf_vocab_size"), (d.tok or {}).get("hf_vocab_size")


def mlx_rule(t: Side, d: Side) -> Verdict:
    """mlx_lm.generate raises when tokenizer.vocab_size differs (mlx_lm.server only warns)."""
    missing = _tokenizer_missing(t, d)
    if missing:
        return Verdict(REFUSED, [missing])
    ts, ds = _mlx_sizes(t, d)
    notes = _mlx_load_notes(t, d)
    if ts != ds:
        return Verdict(REFUSED, [_sizes("tokenizer.vocab_size", ts, ds) + ": mlx_lm.generate raises ValueError; "
                                 f"mlx_lm.server only warns and proceeds, where {SLOWER}", *notes])
    if not same_mapping(t, d):
        return _mapping_differs(t, d, None, f"tokenizer.vocab_size {ts} on both (base vocabulary, added tokens not "
                                            "counted), so it starts", notes)
    return Verdict(WORKS, [f"tokenizer.vocab_size {ts} on both and the same mapping", *notes])


def lmstudio_rule(t: Side, d: Side) -> Verdict:
    """LM Studio's mlx-engine: no draft for a vision_config target; else tokenizer.vocab_size equal."""
    if t.has_vision_config:
        return Verdict(REFUSED, ["the target's config.json has vision_config: LM Studio loads it through its "
                                 "batched vision kit, which never takes a draft model"])
    missing = _tokenizer_missing(t, d)
    if missing:
        return Verdict(REFUSED, [missing])
    ts, ds = _mlx_sizes(t, d)
    if ts != ds:
        return Verdict(REFUSED, [_sizes("tokenizer.vocab_size", ts, ds) + ": LM Studio reports the draft as "
                                 "incompatible and refuses to load it"])
    if not same_mapping(t, d):
        return _mapping_differs(t, d, None, f"tokenizer.vocab_size {ts} on both, so LM Studio loads the draft")
    return Verdict(WORKS, [f"tokenizer.vocab_size {ts} on both and the same mapping"])


def _gguf_origin(role: str, side: Side) -> str:
    """Read facts name their file; predicted ones say from what conversion."""
    if side.gguf_file:
        return f"the {role}'s GGUF facts are read from the header of {side.gguf_file}"
    return (f"the {role}'s GGUF is predicted, after conversion with convert_hf_to_gguf.py @{LLAMACPP_COMMIT} "
            "in its pinned environment")


def llamacpp_rule(t: Side, d: Side) -> Verdict:
    """common_speculative_are_compatible on GGUF files: read from the file, or what convert_hf_to_gguf.py
    would write (predicted) for an HF side."""
    follows = f"(llama.cpp @{LLAMACPP_COMMIT}, convert_hf_to_gguf.py in its pinned environment)"
    for role, side in (("target", t), ("draft", d)):
        g = side.gguf
        if g is None:
            return Verdict(REFUSED, [f"the {role}'s GGUF facts are unknown: {side.gguf_missing or 'not derived'}"])
        if not g.converted and side.gguf_file:
            return Verdict(REFUSED, [f"the {role} ({side.gguf_file}): {g.error} (llama.cpp @{LLAMACPP_COMMIT})"])
        if not g.converted:
            return Verdict(REFUSED, [f"the {role} cannot be converted to GGUF: {g.error} {follows}"])
    from ..gguf.predict import speculative_compatible  # the transcription of the C++ rule lives beside the prediction

    ok, reasons = speculative_compatible(t.gguf, d.gguf)
    origins = [_gguf_origin(r, s) for r, s in (("target", t), ("draft", d))] if t.gguf_file or d.gguf_file else []
    if ok:
        return Verdict(WORKS, [f"GGUF vocabularies: {t.gguf.vocab_type}, n_vocab {t.gguf.n_vocab}/{d.gguf.n_vocab}",
                               *reasons, *origins])
    return Verdict(NO_SPECULATION, [*reasons, "llama-server logs 'failed to initialize speculative decoding "
                                    "context' and serves without a draft", *origins])


def lmstudio_gguf_rule(t: Side, d: Side) -> Verdict:
    """LM Studio runs GGUF models on its llama.cpp engine: two GGUF files get llama.cpp's verdict."""
    if not (t.gguf_file and d.gguf_file):
        return Verdict(REFUSED, ["LM Studio runs a GGUF model on its llama.cpp engine and an HF (MLX) model on "
                                 "mlx-engine; a draft must run on the target's engine, so both must be GGUF"])
    v = llamacpp_rule(t, d)
    return Verdict(v.outcome, ["LM Studio's GGUF engine is llama.cpp", *v.reasons])


LLAMACPP_MAX_VOCAB_DIFF = 128  # SPEC_VOCAB_MAX_SIZE_DIFFERENCE, common/speculative.cpp:30
LLAMACPP_CHECK_START_ID = 5  # SPEC_VOCAB_CHECK_START_TOKEN_ID, common/speculative.cpp:31


def gguf_signature(g, tokens_sha256: str) -> str:
    """llama.cpp's class key: what common_speculative_are_compatible compares, BOS/EOS ids only where
    added. Equal signatures pass (same type, same flags, same token list, so same n_vocab)."""
    parts = [g.vocab_type, bool(g.add_bos), g.bos if g.add_bos else None, bool(g.add_eos),
             g.eos if g.add_eos else None, tokens_sha256]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def gguf_buckets(tokens) -> tuple[str, str]:
    """Two token-prefix keys (hi, lo) such that every pair passing llama.cpp's size and text checks
    shares one: with k = n // 128, hi hashes tokens[5 : k*128] and lo tokens[5 : (k-1)*128]. Two lists
    within 128 of each other have k equal or one apart, and agree on [5, min(n)) ⊇ [5, k_min*128)."""
    k = len(tokens) // LLAMACPP_MAX_VOCAB_DIFF

    def key(m: int) -> str:
        h = hashlib.sha256(f"{m}:".encode())
        for tok in tokens[LLAMACPP_CHECK_START_ID:max(LLAMACPP_CHECK_START_ID, m * LLAMACPP_MAX_VOCAB_DIFF)]:
            # the rule compares with strcmp: text after a NUL does not count
            h.update(tok.split("\0", 1)[0].encode("utf-8", "surrogatepass") + b"\0")
        return h.hexdigest()

    return key(k), key(k - 1) if k > 0 else key(-1)


# ---------------------------------------------------------------- launch commands


def launch_sglang(target: str, draft: str) -> str:
    return (f"python -m sglang.launch_server --model-path {target} --speculative-algorithm STANDALONE "
            f"--speculative-draft-model-path {draft} --speculative-num-steps 4 --speculative-eagle-topk 2 "
            "--speculative-num-draft-tokens 7")


def launch_vllm(target: str, draft: str, *, heterogeneous: bool = False) -> str:
    cfg = {"method": "draft_model", "model": draft, "num_speculative_tokens": 5}
    if heterogeneous:
        cfg["use_heterogeneous_vocab"] = True
    return f"vllm serve {target} --speculative-config '{json.dumps(cfg)}'"


def launch_transformers(target: str, draft: str, *, universal: bool = False) -> str:
    call = "model.generate(**inputs, assistant_model=assistant"
    if universal:
        call += ", tokenizer=tokenizer, assistant_tokenizer=assistant_tokenizer"
    return (f'model = AutoModelForCausalLM.from_pretrained("{target}"); '
            f'assistant = AutoModelForCausalLM.from_pretrained("{draft}"); {call})')


def _stem(repo: str) -> str:
    return repo.rstrip("/").rsplit("/", 1)[-1]


def _is_gguf_path(name: str) -> bool:
    return name.lower().endswith(".gguf")


def _is_gguf_repo(name: str) -> bool:
    """``owner/name:QUANT`` (the quant llama-server's -hf picks, common/arg.cpp:3060-3064), or a repo named
    ``…-GGUF`` by the Hub's convention: GGUF files, no HF weights to convert."""
    repo = name.split(":", 1)[0]
    if name.startswith(("/", ".")) or "/" not in repo:
        return False
    return ":" in name or "gguf" in repo.lower()


def launch_llamacpp(target: str, draft: str) -> str:
    """One runnable llama-server command: -m / -md for GGUF files, -hf / -hfd for GGUF repos (common/arg.cpp:3035,
    3060, 3975, 4241), --spec-type draft-simple (common/arg.cpp:4249, common/speculative.cpp:35); HF sides are
    converted first (convert_hf_to_gguf.py DIR --outfile)."""
    steps, args = [], []
    for flag_file, flag_hub, name in (("-m", "-hf", target), ("-md", "-hfd", draft)):
        if _is_gguf_path(name):
            args.append(f"{flag_file} {name}")
        elif _is_gguf_repo(name):
            args.append(f"{flag_hub} {name}")
        else:
            stem = _stem(name)
            steps.append(f"python convert_hf_to_gguf.py {stem} --outfile {stem}.gguf")
            args.append(f"{flag_file} {stem}.gguf")
    return " && ".join([*steps, f"llama-server {' '.join(args)} --spec-type draft-simple"])


def launch_mlx(target: str, draft: str) -> str:
    return f'mlx_lm.generate --model {target} --draft-model {draft} --num-draft-tokens 3 --prompt "..."'


def launch_lmstudio(target: str, draft: str) -> str:
    """lmstudio-python's documented form (lmstudio.ai/docs/python/llm-prediction/speculative-decoding)."""
    return (f"python -c \"import lmstudio as lms; print(lms.llm('{target}').respond('...', "
            f"config={{'draftModel': '{draft}'}}))\"")


# ---------------------------------------------------------------- the registry

_SIZE_WORDS = {WORKS: "works", DEGRADED: "starts; part of the drafted tokens mean something else: pays less",
               USELESS: "starts, but rejects nearly every drafted token: slower than no draft",
               REFUSED: "refuses to start"}

ENGINES: dict[str, Engine] = {e.name: e for e in (
    Engine(
        name="sglang", display="SGLang STANDALONE", version="sglang 0.5.23",
        sources={
            "vocab_size equal": "python/sglang/srt/speculative/standalone_worker_v2.py:185-215",
            "text config priority": "python/sglang/srt/utils/hf_transformers/common.py:547-613 (get_hf_text_config)",
            "no get_vocab() check (draft worker loads no tokenizer)": "python/sglang/srt/managers/tp_worker.py:326-329",
        },
        facts=("vocab_size", "tok.vocab_sha256", "vocab"),
        rule=sglang_rule, class_key=("vs", "tok"), launch=launch_sglang, words=dict(_SIZE_WORDS),
        heads=HEAD_RULES["sglang"]),
    Engine(
        name="vllm", display="vLLM draft_model", version="vllm 0.33.0",
        sources={
            "get_vocab_size() equal": "vllm/config/speculative.py:2036-2056 (verify_equal_vocab_size_if_draft_model)",
            "hf_text_config = get_text_config()": "vllm/transformers_utils/config.py (get_hf_text_config)",
            "get_text_config() ambiguity raises": "transformers 5.24.0 configuration_utils.py:1555-1560",
            "use_heterogeneous_vocab (TLI)": "vllm/v1/spec_decode/vocab_mapping.py (VocabMapping, _get_unk_token_id)",
        },
        facts=("vllm_vocab_size", "text_config_error", "tok.vocab_sha256", "tok.unk_token_id", "tok.eos_token_id"),
        rule=vllm_rule, class_key=("vllm_vs", "tok"), launch=launch_vllm, words=dict(_SIZE_WORDS),
        heads=HEAD_RULES["vllm"]),
    Engine(
        name="transformers", display="transformers assisted generation", version="transformers 5.24.0",
        sources={
            "vocab_size equal / assistant_tokenizer refused": "src/transformers/generation/utils.py:1907-1919",
            "get_text_config()": "src/transformers/configuration_utils.py:1519-1562",
            "universal assisted generation (TLI)": "src/transformers/generation/candidate_generator.py:762-795",
        },
        facts=("vocab_size_transformers", "text_config_error", "tok.vocab_sha256"),
        rule=transformers_rule, class_key=("vst", "tok"), launch=launch_transformers, words=dict(_SIZE_WORDS)),
    Engine(
        name="llama.cpp", display="llama.cpp speculative (llama-server draft-simple)",
        version=f"llama.cpp @{LLAMACPP_COMMIT} (llama-cpp-python 0.3.36)",
        sources={
            "common_speculative_are_compatible": "common/speculative.cpp:67-130",
            "SPEC_VOCAB_MAX_SIZE_DIFFERENCE 128, CHECK_START_TOKEN_ID 5": "common/speculative.cpp:30-31",
            "draft-simple throws when incompatible": "common/speculative.cpp:242-249",
            "llama-server serves without speculation": "tools/server/server-context.cpp:1240-1260",
            "GGUF vocabulary": "convert_hf_to_gguf.py (indexer/gguf/predict.py models it), or the GGUF's own header "
                               "(indexer/gguf/file.py: src/llama-vocab.cpp llama_vocab::impl::load)",
        },
        facts=("gguf",),
        rule=llamacpp_rule, class_key=GGUF_CLASS_KEY, launch=launch_llamacpp, gguf_rule=llamacpp_rule,
        words={WORKS: "works", NO_SPECULATION: "starts and serves without speculation",
               REFUSED: "has no GGUF to load (the converter refuses the repo)"}),
    Engine(
        name="mlx", display="MLX-LM (mlx_lm.generate)", version="mlx-lm d78bf58e",
        sources={
            "tokenizer.vocab_size equal (generate raises)": "mlx_lm/generate.py:2156",
            "server only warns": "mlx_lm/server.py:346",
            "model type supported (load)": "mlx_lm/utils.py:46-57, 187-193",
        },
        facts=("tok.hf_vocab_size", "tok.vocab_sha256"),
        rule=mlx_rule, class_key=("hf", "tok"), launch=launch_mlx, words=dict(_SIZE_WORDS)),
    Engine(
        name="lmstudio", display="LM Studio (mlx-engine)", version="mlx-engine 08f0c075",
        sources={
            "tokenizer.vocab_size equal": "mlx_engine/model_kit/model_kit.py:193-203",
            "vision_config target: no draft": "mlx_engine/generate.py:257-270, "
                                              "mlx_engine/model_kit/batched_vision/model_kit.py:388-394",
        },
        facts=("has_vision_config", "tok.hf_vocab_size", "tok.vocab_sha256"),
        rule=lmstudio_rule, class_key=("hf", "tok"), launch=launch_lmstudio, words=dict(_SIZE_WORDS),
        refuses_target_with="has_vision_config", gguf_rule=lmstudio_gguf_rule,
        gguf_target_refusal="LM Studio runs GGUF models on its llama.cpp engine, with GGUF drafts only: ask "
                            "--engine llama.cpp"),
)}

ENGINE_NAMES: dict[str, str] = {name: e.display for name, e in ENGINES.items()}
DEFAULT_ENGINE = "sglang"


# The engine whose classes are GGUF signatures (a local GGUF target is matched to a catalog repo through it).
GGUF_ENGINE = next(name for name, e in ENGINES.items() if e.gguf_classes)
HEAD_ENGINES = tuple(name for name, e in ENGINES.items() if e.heads)  # engines that load speculator heads


def engine(name: str) -> Engine:
    try:
        return ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}") from None


def verdicts(t: Side, d: Side) -> dict[str, Verdict]:
    return {name: e.verdict(t, d) for name, e in ENGINES.items()}
