"""Speculator heads (EAGLE, EAGLE-3, DFlash, DSpark, P-EAGLE) and built-in MTP: the data a head rule reads and
the one rule class of each kind, which every engine that runs heads subclasses once in its own module
(``Engine.heads``). No engine is named here.

* :class:`HeadRules`: heads as Hugging Face checkpoints (config.json), judged by one fit algorithm whose inputs each
  engine supplies (``engines/sglang.py``, ``engines/vllm.py``).
* :class:`GGUFHeadRules`: heads as GGUF files, judged from the header facts the crawl read; each engine supplies
  its checks and launch command (``engines/llamacpp.py``, ``engines/ollama.py``).

A head is not a draft model with a vocabulary: it reads the target's hidden states (and, for
EAGLE-3/DFlash, the hidden states of chosen target layers) and its embeddings, so what must match
is shape and lineage. :mod:`indexer.engines.headfacts` turns configs into :class:`HeadFacts` and
:class:`TargetShape`; :mod:`indexer.engines.heads` is the public API. On the query path: stdlib only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from .setup import Setup, Source, text
from .tables import reline

METHODS = ("draft", "eagle", "eagle3", "dflash", "mtp", "ngram", "all")
ALGORITHMS = ("eagle", "eagle3", "dflash", "dspark", "peagle", "mtp")
FORMATS = ("sglang-native", "speculators", "eagle-legacy")
TIERS = ("exact", "lineage", "shape")
# Which head algorithms a --method lists. P-EAGLE runs as vLLM method eagle3 with parallel drafting
# (transformers_utils/configs/speculators/base.py:133-134); DSpark "extends DFlash" and reuses its
# runtime (transformers_utils/configs/speculators/algos.py:152-160).
METHOD_ALGORITHMS = {"eagle": ("eagle",), "eagle3": ("eagle3", "peagle"), "dflash": ("dflash", "dspark")}
# Where each engine reads the MTP layer count (headfacts.target_shape reads the first one stated).
MTP_LAYER_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules")
NGRAM_REASON = "n-gram (prompt lookup) drafting proposes tokens from the prompt itself: it needs no draft model or head"


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
        """The JSON shape ``check --json`` prints."""
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
        """The JSON shape ``check --json`` prints."""
        return asdict(self)


@dataclass
class HeadVerdict:
    """One engine's answer on a head (or built-in MTP) for a target, with every check and its source."""

    fits: bool
    reasons: list[str]
    failed_check: str | None  # "format" | "target_arch" | "hidden_size" | "vocab_size" | "aux_layers" | "mtp"
    tier: str | None  # exact | lineage | shape (None when it does not fit)
    engine: str = ""
    method: str | None = None  # the engine's method/algorithm name for this head
    warning: str | None = None
    checks: list[dict] = field(default_factory=list)  # every check: {check, ok, detail, source}

    def to_dict(self) -> dict:
        """The JSON shape ``check --json`` and the site print."""
        return asdict(self)


# ------------------------------------------------------------------------------------------------ words
def check(checks: list, name: str, ok: bool, detail: str, source: str) -> bool:
    """Record one check with its words and source; return whether it passed."""
    checks.append({"check": name, "ok": ok, "detail": detail, "source": source})
    return ok


def same(a: int | None, b: int | None) -> bool:
    """Equal and stated: an absent value never matches."""
    return a is not None and a == b


def unknown(what: str, head_value: int | None, target_value: int | None) -> str:
    """A check that cannot pass because a config does not state the value (never guessed as a fit)."""
    side = "the head's config" if head_value is None else "the target's config"
    return f"{side} states no {what}"


def hidden_words(trained: int | None, target: int | None) -> str:
    """How a hidden-size check reads."""
    if trained is None or target is None:
        return unknown("hidden size", trained, target)
    if trained == target:
        return f"hidden size {target} on both"
    return f"trained for hidden size {trained}; this target has {target}"


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


def lineage_words(head: HeadFacts, t: str) -> str:
    """What the tier means for this head, in the reasons."""
    declared = ", ".join(head.declared_for) or "nothing"
    if t == "exact":
        return f"trained for exactly this target (declares {declared})"
    if t == "lineage":
        return f"trained for {declared}, which shares this target's base-model lineage"
    return f"trained for {declared}: no shared lineage with this target"


# ------------------------------------------------------------------------------------------------ rules
class Heads:
    """What every engine's head rules share: the --methods it runs, each with the engine's own name for it and where
    the engine defines it. ``method in rules`` says whether the engine runs a --method; an engine that runs no heads
    has this class itself (:data:`NO_HEADS`: no methods, false)."""

    engine = ""  # the registry name
    # --method -> (the engine's own name for it, where the engine defines it)
    methods: dict[str, tuple[str, str]] = {}
    from_gguf = False  # True: the heads are GGUF files, judged from their headers (GGUFHeadRules)

    def __contains__(self, method: object) -> bool:
        return method in self.methods

    def __iter__(self):
        return iter(self.methods)

    def __len__(self) -> int:
        return len(self.methods)

    def mtp(self, target: TargetShape) -> HeadVerdict:
        """Built-in multi-token prediction where the engine runs it from a Hugging Face checkpoint: its verdict."""
        raise NotImplementedError

    def mtp_setup(self, target: TargetShape) -> Setup:
        """The setup of the target's built-in MTP."""
        raise NotImplementedError


NO_HEADS = Heads()


class GGUFHeadRules(Heads):
    """One engine's rules for the speculator heads it runs from GGUF files (its own MTP layers, EAGLE-3, DFlash ...),
    from the header facts the crawl read (``ArchFacts.head``: indexer/gguf/file.py). ``methods`` maps --method to
    the engine's speculation type (llama-server's --spec-type); a subclass supplies the checks and the command."""

    from_gguf = True

    def fit(self, method: str, head: dict | None, target) -> list[tuple[str, bool, str, str]]:
        """The engine's checks of a GGUF head (``head``: its ArchFacts.head; None: the target's own MTP layers) on a
        GGUF target (its ArchFacts), as (check, ok, detail, source); every one must pass."""
        raise NotImplementedError

    def launch(self, target: str, head: str | None, spec_type: str) -> str:
        """The command that runs the target with the head (None: its own MTP layers) as ``spec_type``."""
        raise NotImplementedError


class HeadRules(Heads):
    """One engine's rules for heads as Hugging Face checkpoints. The fit algorithm (format, target support, hidden
    size, vocabulary, aux layers, then the tier) is the same for every engine; a subclass supplies what its engine
    reads, with the source of each. Its --methods: eagle, eagle3, dflash, mtp, ngram."""

    # The head classes the engine loads: config.json architectures entry -> algorithm (headfacts recognises a
    # head by these)
    head_classes: dict[str, str] = {}
    mtp_method = ""  # the engine's name for built-in MTP
    mtp_layers_source = ""  # where the engine reads the MTP layer count
    aux_any_depth_source = ""  # no aux ids to check when the target states no depth
    aux_default_source = ""  # the engine's default aux layers when it reads none from the head
    eagle_aux_source = ""  # EAGLE-1 reads only the last hidden state
    dflash_layer_ids_source = ""  # 0-based target_layer_ids (DFlash)
    draft_vocab_source = ""  # draft_vocab_size must not exceed the vocabulary d2t indexes
    draft_vocab_note = ""  # said after "mapped by d2t/t2d" when the draft vocabulary is reduced
    # speculators DFlash/DSpark aux ids are 1-based (the format as vLLM's loader defines it)
    speculators_aux_source = ("transformers_utils/configs/speculators/algos.py:117-120, "
                              "model_executor/models/llama.py:429-441")

    # ----------------------------------------------------------------------- what a subclass supplies
    def loads(self, head: HeadFacts) -> tuple[bool, str, str, str | None]:
        """Whether the engine loads this head's format at all: (ok, detail, source, engine method)."""
        raise NotImplementedError

    def capture(self, head: HeadFacts) -> tuple[dict[str, str], str, str] | None:
        """(the model classes that can capture the hidden states this head reads -> the file:line that gives them
        the capture, what, source of the check); None: any target."""
        raise NotImplementedError

    def target_class(self, target: TargetShape) -> tuple[str | None, str]:
        """The model class the engine builds for the target's architectures (None: none), and how it picked it."""
        raise NotImplementedError

    def hidden(self, head: HeadFacts) -> tuple[int | None, str]:
        """The hidden size the head's fc expects of the target, with the source."""
        raise NotImplementedError

    def target_vocab(self, target: TargetShape) -> int | None:
        """The target vocabulary size this engine reads."""
        raise NotImplementedError

    def borrowed_vocab(self, head: HeadFacts, tv: int | None, checks: list) -> bool | None:
        """The vocabulary check of a head that uses the target's own embedding and lm_head (None: it has its own)."""
        return None

    def vocab_source(self, head: HeadFacts) -> str:
        """Where the engine sizes the head's vocabulary."""
        raise NotImplementedError

    def eagle_aux_limit(self, head: HeadFacts, layers: int) -> tuple[int, int, str] | None:
        """The allowed EAGLE-3 aux ids on this engine (see :meth:`aux_limit`)."""
        raise NotImplementedError

    def mtp_support(self, target: TargetShape, arch: str | None) -> tuple[bool, str, str]:
        """Whether the engine has an MTP model for the target: (ok, detail, source)."""
        raise NotImplementedError

    # Each launch command is made from a Setup (engines/setup.py), as a draft model's is: the setup's target, head
    # (its ``draft``), draft tokens and ``method`` (the head's algorithm, "mtp", "ngram", or a subclass's own),
    # so the estimate at that setup and the command cannot disagree. A subclass prints it (``launch_setup``).
    release = ""  # the release these rules are of
    # The citations (in the rules' text, read at another release) whose lines moved at ``release``: citation -> its
    # file:line there, as the audit re-pinned them (tables.relined). Every check's source is given through them.
    places: dict[str, str] = {}

    def cite(self, source: str) -> str:
        """``source`` with each citation at its lines at :attr:`release`."""
        return reline(source, self.places)

    def launch_setup(self, setup: Setup) -> list[str]:
        """The serve command of a head, MTP or n-gram setup (quantized at load as the setup's target says)."""
        raise NotImplementedError

    def head_method(self, head: HeadFacts, target_id: str) -> str:
        """The setup's ``method`` for a head: its algorithm (a subclass may name a form of its own)."""
        return head.algorithm

    def mtp_draft(self, target: TargetShape) -> Source | None:
        """What the engine is told to draft from for built-in MTP (None: the target itself, by default)."""
        return None

    ngram_tokens: int | None = None  # the draft tokens an n-gram launch states (None: the engine's own)

    def head_setup(self, head: HeadFacts, target_id: str) -> Setup:
        """The setup of target + head at the draft tokens its launch states."""
        return Setup(self.engine, self.release, Source(target_id), Source(head.repo_id),
                     self.launch_tokens(head, None), self.head_method(head, target_id))

    def mtp_setup(self, target: TargetShape) -> Setup:
        """The setup of the target's built-in MTP."""
        return Setup(self.engine, self.release, Source(target.repo_id), self.mtp_draft(target),
                     self.launch_tokens(None, target), "mtp")

    def ngram_setup(self, target_id: str) -> Setup:
        """The setup of n-gram (prompt lookup) drafting: no draft."""
        return Setup(self.engine, self.release, Source(target_id), None, self.ngram_tokens, "ngram")

    def launch(self, head: HeadFacts, target_id: str) -> str:
        """The serve command for target + head."""
        return text(self.launch_setup(self.head_setup(head, target_id)))

    def mtp_launch(self, target: TargetShape) -> str:
        """The serve command for built-in MTP."""
        return text(self.launch_setup(self.mtp_setup(target)))

    def launch_tokens(self, head: HeadFacts | None, target: TargetShape | None) -> int:
        """The draft tokens per round the launch command runs (``head`` None: built-in MTP); the speed model
        estimates at this count."""
        raise NotImplementedError

    def ngram_launch(self, target_id: str) -> str:
        """The serve command for n-gram (prompt lookup) drafting."""
        return text(self.launch_setup(self.ngram_setup(target_id)))

    # ----------------------------------------------------------------------- the algorithm
    def fit(self, head: HeadFacts, target: TargetShape, *, target_lineage: Iterable[str] = (),
            head_lineage: Iterable[str] = ()) -> HeadVerdict:
        """Whether ``head`` loads and runs on ``target`` under this engine, and its tier."""
        checks: list[dict] = []
        ok, detail, src, method = self.loads(head)
        check(checks, "format", ok, detail, src)
        failed = None if ok else "format"
        for name, rule in (("target_arch", self._target_supported), ("hidden_size", self._hidden_checks),
                           ("vocab_size", self._vocab_checks), ("aux_layers", self._aux_checks)):
            if not rule(head, target, checks) and failed is None:
                failed = name
        for c in checks:
            c["source"] = self.cite(c["source"])
        t = tier(head, target.repo_id, target_lineage=target_lineage, head_lineage=head_lineage)
        lineage = lineage_words(head, t)
        if failed:
            reasons = [c["detail"] for c in checks if not c["ok"]]
            return HeadVerdict(False, reasons + [lineage], failed, None, self.engine, method, None, checks)
        reasons = [c["detail"] for c in checks if c["check"] != "format"] + [lineage]
        warning = "fits by shape only: acceptance is unknown" if t == "shape" else None
        return HeadVerdict(True, reasons, None, t, self.engine, method, warning, checks)

    def _target_supported(self, head, target, checks) -> bool:
        """Can the target capture the hidden states this head reads? EAGLE-1 reads only the last one (any target)."""
        need = self.capture(head)
        if need is None:
            return True
        table, what, src = need
        cls, how = self.target_class(target)
        where = table.get(cls) if cls else None
        if where is None:
            return check(checks, "target_arch", False, f"the target's model class {cls or '(none)'}{how} cannot "
                         f"capture {what} aux hidden states", src)
        return check(checks, "target_arch", True, f"the target's model class {cls}{how} captures {what} aux "
                     "hidden states", f"{src}, {where}")

    def _hidden_checks(self, head, target, checks) -> bool:
        want, src = self.hidden(head)
        th = target.hidden_size
        return check(checks, "hidden_size", same(want, th), hidden_words(want, th), src)

    def _vocab_checks(self, head, target, checks) -> bool:
        tv = self.target_vocab(target)
        tv = tv if tv is not None else target.vocab_size
        borrowed = self.borrowed_vocab(head, tv, checks)
        if borrowed is not None:
            return borrowed
        if head.draft_vocab_size and head.vocab_size and head.draft_vocab_size > head.vocab_size:
            return check(checks, "vocab_size", False,
                         f"draft_vocab_size {head.draft_vocab_size} exceeds the vocabulary {head.vocab_size} its "
                         "d2t map indexes", self.draft_vocab_source)
        if head.vocab_size is None or tv is None:
            detail, ok = unknown("vocab size", head.vocab_size, tv), False
        elif head.vocab_size == tv:
            detail = f"vocab size {tv} on both"
            if head.draft_vocab_size and head.draft_vocab_size != tv:
                detail += f" (draft vocabulary {head.draft_vocab_size}, mapped by d2t/t2d){self.draft_vocab_note}"
            ok = True
        else:
            detail = f"trained for vocab size {head.vocab_size}; this target has {tv}"
            ok = False
        return check(checks, "vocab_size", ok, detail, self.vocab_source(head))

    def aux_limit(self, head: HeadFacts, layers: int) -> tuple[int, int, str] | None:
        """Allowed (lowest, highest) aux layer id on this engine for a target of ``layers`` layers, with the
        source. DFlash target_layer_ids are 0-based layer indices; speculators DFlash/DSpark aux ids are 1-based
        (transformers_utils/configs/speculators/algos.py:117-120); EAGLE-3 ids are the engine's own
        (:meth:`eagle_aux_limit`)."""
        if not head.aux_key:
            return None
        if head.aux_key.endswith("target_layer_ids"):
            return 0, layers - 1, self.dflash_layer_ids_source
        if head.aux_key == "aux_hidden_state_layer_ids":
            return 1, layers, self.speculators_aux_source
        return self.eagle_aux_limit(head, layers)

    def _aux_checks(self, head, target, checks) -> bool:
        L = target.num_hidden_layers
        if L is None:
            if head.aux_layer_ids and self.aux_limit(head, 0) is not None:
                return check(checks, "aux_layers", False, unknown("num_hidden_layers", 0, None),
                             "the aux layer ids index the target's layers")
            return check(checks, "aux_layers", True, "no aux layer ids to check against the target's depth",
                         self.aux_any_depth_source)
        limit = self.aux_limit(head, L)
        if limit is None:
            if head.algorithm == "eagle":
                return check(checks, "aux_layers", True,
                             "reads only the target's last hidden state: no aux layer ids", self.eagle_aux_source)
            default = "; it uses its default [2, L//2, L-3]" if head.algorithm in ("eagle3", "peagle") else ""
            return check(checks, "aux_layers", True, f"no aux layer ids this engine reads{default}",
                         self.aux_default_source)
        low, high, src = limit
        bad = [i for i in head.aux_layer_ids if i < low or i > high]
        if bad:
            return check(checks, "aux_layers", False,
                         f"aux layer ids {head.aux_layer_ids} ({head.aux_key}) go beyond this target's {L} layers "
                         f"(allowed {low}..{high})", src)
        return check(checks, "aux_layers", True,
                     f"aux layer ids {head.aux_layer_ids} within the target's {L} layers", src)

    def mtp(self, target: TargetShape) -> HeadVerdict:
        """Built-in multi-token prediction: the target is its own speculator."""
        checks: list[dict] = []
        arch = target.architectures[0] if target.architectures else None
        ok, detail, src = self.mtp_support(target, arch)
        ok = check(checks, "target_arch", ok, detail, src)
        layers = target.mtp_layers or 0
        has_layers = check(checks, "mtp", layers > 0,
                           f"{layers} MTP layer(s) ({target.mtp_key})" if layers else "the config declares no MTP "
                           f"layers ({' / '.join(MTP_LAYER_KEYS)})", self.mtp_layers_source)
        for c in checks:
            c["source"] = self.cite(c["source"])
        if ok and has_layers:
            return HeadVerdict(True, [c["detail"] for c in checks], None, "exact", self.engine, self.mtp_method,
                               None, checks)
        failed = "target_arch" if not ok else "mtp"
        return HeadVerdict(False, [c["detail"] for c in checks if not c["ok"]], failed, None, self.engine,
                           self.mtp_method, None, checks)

    def ngram(self, target_id: str) -> dict:
        """``--method ngram``: always available, needs nothing (says so), with its launch command."""
        return {"repo_id": target_id, "method": self.methods["ngram"][0], "reasons": [NGRAM_REASON],
                "launch": self.ngram_launch(target_id)}
