"""What a draft-model answer is about, resolved once and passed down the stages: the engine at its release, the
engine whose classes answer (LM Studio's llama.cpp for a GGUF target), the target's class there, the classes whose
drafts work with it or are degraded, and why the engine refuses the target when it does.

The catalog's classes are computed at each engine's newest release: another release is answered from them only
while its class key is the same (its architecture rows are judged by the verdict stage).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import engines as registry
from ..catalog import classes as sql
from ..catalog.classes import RankKeys, TargetClass
from ..catalog.reader import Reader
from ..engines.base import Engine
from ..errors import QueryError
from ..gguf import NOT_MODELLED
from .archrank import ArchJudge
from .target import Target, resolve_target


@dataclass
class Scope:
    """One target on one engine: the engine resolved once, the target's class and the classes that work with it."""

    engine: Engine  # the engine at the release asked
    rules: Engine  # the engine whose classes answer (``classes_of``)
    target: Target
    arch: ArchJudge  # the engine's architecture rows for this target
    keys: RankKeys  # what the ranking compares members with
    label: str = ""
    members: int = 0
    size: int | None = None  # the class's vocab_size
    class_id: int | None = None
    runs_as: str | None = None  # LM Studio on a GGUF target: its llama.cpp engine answers
    refused_target: str | None = None
    unknown_target: bool = False  # refused_target is a gap in the indexer's model, not the engine's refusal
    class_ids: list[int] = field(default_factory=list)  # the classes whose drafts work
    degraded_ids: list[int] = field(default_factory=list)  # the classes whose drafts start, degraded
    sizes: dict[int, int] = field(default_factory=dict)  # class id -> members
    paired: dict[int, str] = field(default_factory=dict)  # GGUF classes that pass llama.cpp's check -> why
    grades: dict[int, dict] = field(default_factory=dict)  # agreeing class -> {"grade", "measured"}
    agreement_read: bool = False

    @property
    def name(self) -> str:
        """The engine's name."""
        return self.engine.name

    @property
    def classes_of(self) -> str:
        """The engine whose classes answer (a GGUF target on LM Studio or Ollama reads its GGUF engine's)."""
        return self.rules.name

    @property
    def t(self) -> dict:
        """The target's facts."""
        return self.target.facts


def engine_at(engine: str, release: str | None) -> Engine:
    """The engine at ``release``, answerable from the catalog's classes (module docstring)."""
    if engine not in registry.ENGINES:
        raise QueryError(f"unknown engine {engine!r}; choose one of {', '.join(registry.ENGINES)}")
    newest = registry.ENGINES[engine]
    try:
        entry = newest.at(release)
    except ValueError as e:
        raise QueryError(str(e)) from None
    if entry.class_key != newest.class_key:
        raise QueryError(f"{engine} {release} groups vocabularies unlike {newest.release}, at which the catalog's "
                         f"classes are computed: ask `indexer check` for a pair at {release}")
    return entry


def resolve(cat: Reader, target: str | Target, engine: Engine, *, probe_only: bool = False,
            classes: dict[str, TargetClass] | None = None) -> Scope:
    """The scope of ``target`` on ``engine``. ``probe_only``: only :func:`~indexer.answer.members.has_candidates`
    is asked (the summary line asks every engine), which reads the classes that agree with the target's only when
    its own class has no draft. ``classes``: the target's classes on every engine, read at once
    (:func:`indexer.catalog.classes.target_classes`)."""
    resolved = target if isinstance(target, Target) else resolve_target(cat, target)
    t = resolved.facts
    rules, runs_as, draft_where = engine, None, ""
    if resolved.gguf_file and engine.gguf_engine:
        rules = registry.ENGINES[engine.gguf_engine]
        runs_as = f"a GGUF target: its {rules.name} engine, GGUF drafts only"
        draft_where = sql.GGUF_DRAFTS_ONLY
    gguf_refusal = engine.refuses_drafts or (engine.refuses_gguf_target() if resolved.gguf_file else None)
    cls: TargetClass | None = None
    if not gguf_refusal:
        cls = classes.get(rules.name) if classes is not None else sql.target_class(cat, rules.name,
                                                                                   resolved.class_pk)
    refused: str | None = None
    unknown = False
    if cls is None:
        # No class: the engine refuses the target itself (an answer, with no drafts), or facts are missing.
        refused, unknown = (gguf_refusal, False) if gguf_refusal else _refusal(cat, engine, rules, resolved)
        if refused is None:
            raise QueryError(f"{t['repo_id']} has no {engine.name} class (facts missing, or the catalog was "
                             "changed since the last `indexer compute`; run it)")
        cls = TargetClass(None, None, None, None, f"none: {refused}", 0, None)
    lineage_id, author_id, family_id = cls.lineage_id, cls.author_id, cls.family_id
    if resolved.class_pk != t["pk"]:
        # A borrowed tokenizer: the lineage stays the base's, author and family are the target's own.
        author_id = sql.dense_id(cat, "author", t["author"])
        family_id = sql.dense_id(cat, "family", t["family"])
        if t["pk"] == -1:
            lineage_id = None
    keys = RankKeys(t["params"], lineage_id, author_id, family_id, t["is_chat"], resolved.exclude_pk, draft_where)
    # The engine's architecture rows (engines/archrules.py): the target's once, the draft's per draft.
    arch = ArchJudge(cat, engine, resolved.class_pk, bool(resolved.gguf_file), resolved.memo)
    s = Scope(engine, rules, resolved, arch, keys, label=cls.label, members=cls.members, size=cls.vocab_size,
              class_id=cls.class_id, runs_as=runs_as, refused_target=refused, unknown_target=unknown)
    if s.class_id is not None:
        s.class_ids = [s.class_id]
        s.sizes[s.class_id] = s.members
    refusing = engine.refuses_target_with
    if s.refused_target is None and refusing and sql.engine_fact(cat, resolved.class_pk, refusing):
        # The rule refuses every draft for this target (LM Studio: a vision_config target).
        s.refused_target = engine.rule(_fact_side(refusing), _fact_side(None)).reasons[0]
        s.class_ids = []
    elif s.refused_target is None and arch.refusal():
        s.refused_target = arch.refusal()  # a stateful target on transformers, mlx-lm, ...
        s.class_ids = []
    elif s.class_id is not None and rules.gguf_classes:
        # Other GGUF vocabularies that pass common_speculative_are_compatible (llamacpp_pairs).
        for cid, reason, members in sql.gguf_pairs(cat, rules.name, s.class_id):
            s.class_ids.append(cid)
            s.paired[cid] = reason
            s.sizes[cid] = members
    if not probe_only:
        read_agreement(cat, s)
    return s


def read_agreement(cat: Reader, s: Scope) -> None:
    """Add the classes whose tokenizer agrees with the target's (compute's agreement step) to the scope, once:
    same-size classes whose drafts work (ranked with the class) or are degraded (listed after), as `check` says."""
    if not s.agreement_read and s.class_ids and not s.rules.gguf_classes and s.size is not None:
        t = s.t
        for cid, base, grade, clean, members in sql.same_size_classes(cat, s.name, s.size, t["tokenizer_id"]):
            s.sizes[cid] = members
            if grade is None and clean and base == t["base_vocab_sha256"]:
                grade = registry.WORKS  # every same-base draft agrees >= WORKS_AT with this target
            if grade in (registry.WORKS, registry.DEGRADED):
                s.grades[cid] = {"grade": grade, "measured": not clean or base != t["base_vocab_sha256"]}
                (s.class_ids if grade == registry.WORKS else s.degraded_ids).append(cid)
    s.agreement_read = True


def _fact_side(fact: str | None):
    side = registry.Side("", None, None, None)
    if fact:
        setattr(side, fact, True)
    return side


def _refusal(cat: Reader, engine: Engine, rules: Engine, target: Target) -> tuple[str | None, bool]:
    """Why the engine refuses this target whatever the draft, when it does (else facts are missing), and whether
    that is a gap in the indexer's model rather than the engine's refusal."""
    error = sql.engine_fact(cat, target.class_pk, "text_config_error")
    if error and "text_config_error" in engine.facts:
        return f"{error}: {registry.ENGINE_NAMES[engine.name]} refuses it", False
    if rules.gguf_classes:
        gguf_error = sql.engine_fact(cat, target.class_pk, "gguf_error")
        if gguf_error and target.gguf_file:  # read facts: libllama's own words
            return f"the target's GGUF ({target.gguf_file}): {gguf_error}", False
        if gguf_error and gguf_error.startswith(NOT_MODELLED):  # our gap: the answer is unknown, not "none"
            return (f"the target's GGUF vocabulary is unknown: {gguf_error[len(NOT_MODELLED):]}; llama.cpp may "
                    "well convert it: this is not a refusal"), True
        if gguf_error:
            return f"the target cannot be converted to GGUF: {gguf_error}", False
    return None, False


def target_info(cat: Reader, s: Scope) -> dict:
    """The ``target`` block of the JSON answer: the target's size, vocabulary and class."""
    t = s.t
    others = [c for c in s.class_ids + s.degraded_ids if c != s.class_id]
    return {
        "repo_id": t["repo_id"],
        "params": t["params"],
        "params_source": t["params_source"],
        "params_active": t["params_active"],
        "note": s.target.note,
        "vocab_size": t["vocab_size"],
        "vocab_size_transformers": t["vocab_size_transformers"],
        "vocab_sha256": t["vocab_sha256"],
        "hf_vocab_size": t["hf_vocab_size"],
        "class": s.label,
        "class_members": s.members,
        # Repos outside the target's class whose drafts work with it anyway: other GGUF vocabularies that pass
        # llama.cpp's check, vocabularies that agree (the header says so, else its count reads as a contradiction
        # of the drafts listed).
        "agreeing_members": sql.members_of(cat, others) if others else 0,
    }
