"""What every engine shares: the seven outcomes, a model as the rules see it (:class:`Side`), a
:class:`Verdict`, the :class:`Engine` entry each ``engines/<engine>.py`` fills in, and the grading
helpers the rules call. No engine is named here; :mod:`indexer.engines` lists them (stdlib only).

A verdict has one of seven outcomes, because a user needs to know whether speculation *works*,
not only whether the engine starts. For the engines that start without comparing token lists
(SGLang, vLLM, transformers, MLX, LM Studio), a started pair is graded by how far the two
vocabularies agree (:mod:`indexer.vocab.agreement`, whose thresholds are the only ones):

* ``works``: the engine accepts the pair and the ids text uses mean the same on both sides
  (identical mappings, or at least 99% of the target's tokens of the reference text agree);
* ``degraded``: it starts, and 50-99% agree: speculation pays less;
* ``useless``: it starts, but under half agree, so nearly every drafted token is
  rejected and speculation is slower than none (the engine does not warn);
* ``refused``: the engine raises at launch;
* ``no_speculation``: llama-server starts, logs the failed check and serves without a draft;
* ``wrong_output``: the engine starts and drafts, but the output can differ from the target's own (mlx-lm on a
  sliding-window target: rejected draft tokens stay in the target's cache once the context passes the window);
* ``unknown``: the indexer does not model the path the engine takes for a side (llama.cpp: a converter vocabulary
  path not reproduced), so it cannot say; never counted as works or refused.

Beside the vocabulary, each engine's architecture rows (``Engine.arch_rules``, :mod:`indexer.engines.archrules`)
may make the verdict worse or add a note; ``Verdict.vocabulary`` keeps what the vocabulary alone says.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..gguf.vocab import GGUFVocab
from ..speed.gate import DraftGate
from ..vocab import agreement as _agreement
from ..vocab.archconfig import ArchFacts
from . import tables
from .archrules import WRONG_OUTPUT, ArchRule, Ranged, at_release, matching, worst
from .headrules import NO_HEADS, Heads

WORKS, DEGRADED, USELESS, REFUSED, NO_SPECULATION = "works", "degraded", "useless", "refused", "no_speculation"
UNKNOWN = "unknown"  # a gap in the indexer's model, not the engine's answer
OUTCOMES = (WORKS, DEGRADED, USELESS, REFUSED, NO_SPECULATION, WRONG_OUTPUT, UNKNOWN)
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
    gguf: GGUFVocab | None = None  # what convert_hf_to_gguf.py would write
    gguf_missing: str | None = None  # why ``gguf`` is None
    model_type: str | None = None  # config.json model_type (mlx-lm picks its model class by it)
    gguf_file: str | None = None  # a GGUF file whose own header gave ``gguf`` (read, not predicted)
    arch: ArchFacts | None = None  # the architecture facts (indexer.vocab.archconfig), None when unknown
    counts: dict[int, int] | None = None  # id counts of this tokenizer over the reference text (agreement)
    count_text: Callable[[], dict[int, int] | None] | None = None  # counts ``counts`` when None (a local side)
    agreements: dict = field(default_factory=dict, compare=False, repr=False)  # draft name -> agreement (memo)


@dataclass
class Verdict:
    """One engine's answer on a pair: the outcome and the facts behind it, in words."""

    outcome: str
    reasons: list[str]
    vocabulary: str | None = None  # the vocabulary rule's outcome before the architecture rows (None: the same)
    architecture: list = field(default_factory=list)  # archrules.Applied rows that matched
    fix: str | None = None  # an architecture row's fix, when a row decided the outcome
    version: str | None = None  # the engine release it answers for (Engine.release)

    @property
    def accepted(self) -> bool:
        """The engine starts with the pair (and drafts)."""
        return self.outcome in (WORKS, DEGRADED, USELESS, WRONG_OUTPUT)

    @property
    def demoted(self) -> bool:
        """A row says to rank this draft after the others (it works, with a cost)."""
        return any(a.rule.demote for a in self.architecture)

    @property
    def compatible(self) -> bool:
        """Speculation works: accepted and the draft speaks the target's vocabulary."""
        return self.outcome == WORKS

    def to_dict(self) -> dict:
        """The JSON shape ``check --json`` prints per engine."""
        return {"compatible": self.compatible, "accepted": self.accepted, "outcome": self.outcome,
                "version": self.version, "reasons": self.reasons, "vocabulary_outcome": self.vocabulary or self.outcome,
                "architecture": [a.to_dict() for a in self.architecture]}


def no_fix(outcome: str, *, shared: bool, sizes: tuple, tli: str, tli_blocked) -> None:
    """An engine with no vocabulary translation and no size to change: nothing changes its outcome."""
    return None


@dataclass(frozen=True)
class SpeedProfile:
    """How an engine runs a pair, for the speed model (indexer/speed/model.py): its runtime, the kinds of device it
    runs on, its usual quantizations when a repo declares none, and the most draft tokens it is worth trying."""

    runtime: str  # "ggml", "mlx", "serving" (CUDA graphs), "eager" (PyTorch eager)
    devices: tuple  # device kinds: "apple", "nvidia", "amd", "cpu"
    target_quant: str
    draft_quant: str
    max_draft_tokens: int = 8
    # The profile of GGUF pairs when the engine runs GGUF files with another runtime (LM Studio: its llama.cpp
    # engine, on every kind of device, while its MLX engine runs Hugging Face checkpoints on Apple devices only);
    # None: the runtime above runs both.
    gguf: SpeedProfile | None = None
    source: str = ""  # where the engine says which kinds of device it runs on
    # With a GGUF profile: the quantization families (speed/quant.py) this runtime runs; weights of any other run on
    # the GGUF profile (the calibration picks the runtime of a measurement by its quantization).
    families: tuple = ()
    # The draft tokens per round a run that sets none drafts, when the engine drafts a fixed count (MLX), with the
    # source; None: it drafts up to max_draft_tokens, stopping where the draft is unsure (llama-server).
    default_draft_tokens: int | None = None
    default_draft_source: str = ""
    # How the drafting of the builds that published measurements ran ends a draft early (speed.gate.DraftGate) and
    # their draft-token cap, where they differ from the release's (llama-server before its speculative refactor);
    # the calibration runs rows that name no other settings so. None: as the release.
    published_gate: DraftGate | None = None
    published_draft_tokens: int | None = None
    # A draft model's round copies the recurrent state of a model that keeps one to host memory and back on a
    # rejection (the engine cannot cut it back to a prefix): model.Setup.copies_state.
    copies_state: bool = False

    def running(self, family: str) -> SpeedProfile:
        """The profile that runs weights of a quantization ``family``."""
        return self.gguf if self.gguf is not None and family not in self.families else self


@dataclass(frozen=True, kw_only=True)
class Engine:
    """One serving engine, as its module under ``engines/`` describes it; the registry lists them."""

    name: str
    display: str
    version: str
    sources: dict[str, str]  # check -> file:line at ``version``
    facts: tuple[str, ...]  # Side attributes the rule reads
    rule: Callable[[Side, Side], Verdict]
    # compute's class key: columns of compute's per-repo table; same key => the pair works (empty: no classes, the
    # engine runs no draft model)
    class_key: tuple[str, ...]
    launch: Callable  # launch(setup.Setup) -> the steps that run it, in order (the last starts the engine)
    # The vocabulary sizes this engine compares, (target, draft): the numbers its fix words use.
    sizes: Callable[[Side, Side], tuple[int | None, int | None]]
    # The one way to change this engine's outcome: fix(outcome, shared=, sizes=, tli=, tli_blocked=) -> words or
    # None (``rules.fix_for`` computes the shared arguments; see it for their meaning).
    fix: Callable[..., str | None] = no_fix
    words: dict[str, str] = field(default_factory=dict)  # outcome -> how this engine says it
    # a Side fact that, true on the target, makes the engine refuse every draft (query reads it)
    refuses_target_with: str | None = None
    # why the engine runs no separate draft model at all (Ollama): query answers every target with it
    refuses_drafts: str | None = None
    # Speculator heads and built-in MTP, per --method: the engine's head rules, launch commands and method names, as
    # one subclass of a rule class of engines/headrules.py (HeadRules: heads as Hugging Face checkpoints, methods
    # eagle, eagle3, dflash, mtp, ngram; GGUFHeadRules: heads as GGUF files). NO_HEADS (false): it runs none.
    heads: Heads = NO_HEADS
    # The rule for a pair with a GGUF file on either side; None: the engine loads no GGUF files.
    gguf_rule: Callable[[Side, Side], Verdict] | None = None
    # The engine whose classes answer a GGUF file target, with GGUF drafts only (LM Studio runs GGUF files on its
    # llama.cpp engine); None: the engine's own classes.
    gguf_engine: str | None = None
    # The architecture table (archrules.ArchRule rows, as data) for HF sides, and for a pair with a GGUF file.
    arch_rules: tuple = ()
    gguf_arch_rules: tuple = ()
    # The speed model's view of the engine (None: it runs no separate draft model)
    speed: SpeedProfile | None = None
    # The release this entry answers for, and every release whose source we have read, oldest first (the last is
    # the default). ``ranged``: field -> its rows over all of them (archrules.ArchRule / Ranged, each with its
    # since/until); :meth:`at` selects the rows of one release. Empty: one release, nothing ranged.
    release: str = ""
    releases: tuple = ()
    ranged: dict = field(default_factory=dict, compare=False, repr=False)

    def at(self, release: str | None) -> Engine:
        """This engine as it was at ``release`` (None: the default, the newest): the ranged fields' rows that hold
        then. ValueError names the known releases for any other."""
        if release is None or release == self.release:
            return self
        if release not in self.releases:
            raise ValueError(f"unknown {self.name} version {release!r}; known: "
                             f"{', '.join(self.releases or (self.release,))}")
        return resolve(self, release)

    def device_kinds(self, gguf: bool | None = None) -> tuple:
        """The kinds of device this engine runs a pair on: ``gguf`` True a pair with a GGUF file, False one of
        Hugging Face checkpoints, None either (the union, main runtime's kinds first). Empty: no speed profile."""
        if self.speed is None:
            return ()
        main = self.speed.devices if not (gguf and self.speed.gguf) else ()
        other = self.speed.gguf.devices if self.speed.gguf is not None and gguf is not False else ()
        return tuple(dict.fromkeys((*main, *other)))

    def profile_on(self, kind: str, gguf: bool) -> SpeedProfile | None:
        """The runtime that runs a pair (``gguf``: with a GGUF file) on a ``kind`` device, None when none does."""
        if self.speed is None:
            return None
        profile = self.speed.gguf if gguf and self.speed.gguf is not None else self.speed
        return profile if kind in profile.devices else None

    def not_on(self, kind: str, gguf: bool) -> str:
        """Why this engine runs no such pair on a ``kind`` device, naming the kinds it does run it on."""
        if self.speed is not None and kind in self.device_kinds(None) and not gguf:  # LM Studio off a Mac: GGUF
            return (f"{self.display} runs Hugging Face (MLX) checkpoints on {' and '.join(self.speed.devices)} "
                    f"devices only; on {kind} devices, GGUF files on its llama.cpp engine")
        kinds = self.device_kinds(gguf)
        return (f"{self.display} does not run on {kind} devices"
                + (f" (it runs on {', '.join(kinds)})" if kinds else ""))

    @property
    def gguf_classes(self) -> bool:
        """Classes are GGUF vocabulary signatures, with cross-class pairs in ``llamacpp_pairs`` (llama.cpp)."""
        return self.class_key == GGUF_CLASS_KEY

    def refuses_gguf_target(self) -> str | None:
        """Why this engine's query gives a GGUF file target no drafts (None: it answers from the file's facts)."""
        if self.gguf_classes:
            return None
        if self.gguf_rule is not None:
            return None if self.gguf_engine else "its GGUF rule answers pairs of files only (ask `indexer check`)"
        return loads_no_gguf(self.display, target=True, draft=False)

    def verdict(self, t: Side, d: Side) -> Verdict:
        """This engine's verdict on the pair: GGUF files go to its GGUF rule (or are not judged); then its
        architecture rows."""
        if t.gguf_file or d.gguf_file:
            if self.gguf_rule is None:
                v = Verdict(REFUSED, [loads_no_gguf(self.display, target=bool(t.gguf_file), draft=bool(d.gguf_file))])
            else:
                v = with_arch(self.gguf_rule(t, d), self.gguf_arch_rules, t, d)
        else:
            v = with_arch(self.rule(t, d), self.arch_rules, t, d)
        v.version = self.release or None
        return v


def _pick(name: str, rows: tuple, release: str, releases: tuple):
    """A ranged field's value at ``release``: the rows that hold (architecture rows), or the one Ranged value."""
    held = at_release(rows, release, releases)
    if not isinstance(rows[0], Ranged):
        return held
    if len(held) != 1:
        raise ValueError(f"{release}: {len(held)} rows of {name} hold, not one")
    return held[0].value


def resolve(e: Engine, release: str) -> Engine:
    """``e`` with its ranged fields at ``release``, their citations at that release's lines where the audit
    re-pinned them (:func:`indexer.engines.tables.relined`)."""
    places = tables.relined(e.name, release)
    changes = {name: _pick(name, rows, release, e.releases) for name, rows in e.ranged.items()}
    if places:
        changes = {name: _relined(value, places, tables.reline) for name, value in changes.items()}
    return replace(e, release=release, version=e.version.replace(e.release, release), **changes)


def _relined(value, places: dict, reline: Callable):
    """A ranged field's value with its citations at their re-pinned places: rows' sources, a sources dict."""
    if isinstance(value, tuple) and value and isinstance(value[0], ArchRule):
        return tuple(replace(row, source=reline(row.source, places)) for row in value)
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return {k: reline(v, places) for k, v in value.items()}
    return value


def released(*, releases: tuple, **fields) -> Engine:
    """An engine module's ENGINE: its entry at the newest of ``releases``, holding every release's rows. A field
    given as a tuple of ranged rows (architecture rows or :class:`~indexer.engines.archrules.Ranged` values) is
    kept whole in ``ranged``; the others hold at every release."""
    newest = releases[-1]
    ranged = {name: value for name, value in fields.items()
              if isinstance(value, tuple) and value and isinstance(value[0], (Ranged, ArchRule))}
    fields.update({name: _pick(name, rows, newest, releases) for name, rows in ranged.items()})
    return Engine(**fields, release=newest, releases=releases, ranged=ranged)


def with_arch(v: Verdict, rules, t: Side, d: Side, sides: tuple[str, ...] = ("target", "draft", "pair")) -> Verdict:
    """The vocabulary verdict ``v`` with the architecture rows that match the pair: the worse outcome wins and
    its words come first; rows without an outcome add notes (each with its source)."""
    applied = matching(rules, t.arch, d.arch, sides)
    if not applied:
        return v
    outcome = v.outcome
    for a in applied:
        outcome = worst(outcome, a.rule.outcome)
    deciding = [a for a in applied if a.rule.outcome is not None and a.rule.outcome == outcome
                and outcome != v.outcome]
    notes = [a for a in applied if a not in deciding]
    fix = next((f for a in deciding if (f := a.fix(t.arch, d.arch))), None)
    reasons = [*(a.words for a in deciding), *v.reasons,
               *(f"{'also' if a.rule.outcome else 'note'}: {a.words}" for a in notes)]
    return Verdict(outcome, reasons, vocabulary=v.outcome, architecture=applied, fix=fix)


def loads_no_gguf(display: str, *, target: bool, draft: bool) -> str:
    """Why an engine that loads only HF checkpoints does not judge a pair with a GGUF file (on the sides named)."""
    files = [role for role, is_gguf in (("target", target), ("draft", draft)) if is_gguf]
    what = "the target and the draft are GGUF files" if len(files) == 2 else f"the {files[0]} is a GGUF file"
    return (f"not judged: {display} loads Hugging Face checkpoints (config.json and tokenizer files) and its check "
            f"reads them; {what}. Check the HF repo the GGUF was made from, or run GGUF files with llama.cpp or "
            "LM Studio")


# ---------------------------------------------------------------- shared facts


def same_mapping(t: Side, d: Side) -> bool | None:
    """One get_vocab() mapping on both sides (None: a tokenizer is missing)."""
    if t.tok is None or d.tok is None:
        return None
    return t.tok["vocab_sha256"] == d.tok["vocab_sha256"]


def below(vocab: dict[str, int], limit: int) -> dict[str, int]:
    """The part of a mapping a model of ``limit`` rows can emit."""
    return {tok: i for tok, i in vocab.items() if i < limit}


def differs_only_above(t: Side, d: Side, size: int | None) -> bool:
    """The mappings agree on every id below ``size``: they differ only at ids no model emits."""
    if size is None or t.vocab is None or d.vocab is None:
        return False
    return below(t.vocab, size) == below(d.vocab, size)


def size_differs(what: str, ts, ds) -> str:
    """The words every engine's refusal by size starts with."""
    return f"{what} differs: target {ts}, draft {ds}"


def target_counts(t: Side) -> dict[int, int] | None:
    """The target's id counts over the reference text: stored ones, else counted once by the side's own counter
    (a local directory's tokenizer box, answer/localdir.py). None leaves the grade to ids (and says so)."""
    if t.counts is None and t.count_text is not None:
        t.counts, t.count_text = t.count_text(), None
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


def mapping_differs(t: Side, d: Side, size: int | None, starts: str, notes: Sequence[str] = ()) -> Verdict:
    """A started pair whose mappings differ, graded by how far they agree (works, degraded, useless)."""
    a = pair_agreement(t, d)
    if a is None:
        return Verdict(USELESS, [f"{starts}; the get_vocab() mappings differ and a vocabulary is missing from the "
                                 f"token store, so how far they agree is unknown: assume {SLOWER}", *notes])

    grades = {_agreement.WORKS: WORKS, _agreement.DEGRADED: DEGRADED, _agreement.USELESS: USELESS}
    outcome = grades[a["class"]] if not a["identical"] else WORKS
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


def tokenizer_missing(t: Side, d: Side) -> str | None:
    """Why the mappings cannot be compared, when a side's tokenizer could not be loaded."""
    for role, side in (("target", t), ("draft", d)):
        if side.tok is None:
            return f"the {role}'s tokenizer could not be loaded, so the mappings cannot be compared"
    return None


def tokenizer_sizes(t: Side, d: Side) -> tuple[int | None, int | None]:
    """tokenizer.vocab_size (the base vocabulary, added tokens not counted): what MLX engines compare."""
    return (t.tok or {}).get("hf_vocab_size"), (d.tok or {}).get("hf_vocab_size")


def resize_words(t_size: int | None) -> str:
    """The fix for a pair whose one difference is the draft's row count (SGLang, vLLM, transformers)."""
    return f"resize the draft's embedding and lm_head to the target's {t_size} rows (new rows are never drafted)"


# How an engine that grades started pairs says each outcome (the ``words`` of most entries).
SIZE_WORDS = {WORKS: "works", DEGRADED: "starts; part of the drafted tokens mean something else: pays less",
              USELESS: "starts, but rejects nearly every drafted token: slower than no draft",
              REFUSED: "refuses to start", WRONG_OUTPUT: "starts, but the output can be wrong"}
