"""The architecture rules: what an engine decides from config.json or a GGUF header before (or beside) any
vocabulary check. Each engine lists its rows in its own module (``ARCH_RULES``) as data: a match on one fact,
what the engine then does, its words, and the source line. Nothing here names an engine.

A row that has an outcome changes the pair's verdict when it is worse than the vocabulary's (refused beats
everything; ``wrong_output``, "starts, but the output can be wrong", beats every started outcome); a row without
one keeps the outcome and adds its words to the reasons (``demote``: the query ranks such drafts after the
others). The facts are :class:`indexer.vocab.archconfig.ArchFacts`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..vocab.archconfig import ArchFacts

WRONG_OUTPUT = "wrong_output"
# From the best to the worst: the verdict of a pair is the worst of its vocabulary outcome and its rows' outcomes.
# ``unknown`` (the indexer cannot say) ranks below every outcome the engine is known to give except a refusal.
SEVERITY = ("works", "degraded", "useless", "no_speculation", WRONG_OUTPUT, "unknown", "refused")
STATE_WORDS = {"mamba1": "Mamba-1", "mamba2": "Mamba-2", "gated_deltanet": "gated-DeltaNet (linear attention)",
               "short_conv": "short-convolution", "rwkv": "RWKV", "recurrent": "recurrent"}


def _side(t: ArchFacts | None, d: ArchFacts | None, side: str) -> ArchFacts | None:
    return t if side == "target" else d


def _named(f: ArchFacts) -> str:
    return "model_type " + " / ".join(sorted(f.types())) if f.types() else f"GGUF architecture {f.gguf_arch}"


@dataclass(frozen=True)
class TypeIn:
    """The side's model_type (top level or text sub-config), or its GGUF architecture, is one of ``types``."""

    side: str
    types: frozenset

    def __call__(self, t: ArchFacts | None, d: ArchFacts | None) -> str | None:
        """The words of the match, or None."""
        f = _side(t, d, self.side)
        if f is None:
            return None
        hit = sorted((f.types() | {f.gguf_arch or ""}) & self.types)
        return f"the {self.side}'s model_type is {hit[0]}" if hit else None


@dataclass(frozen=True)
class StateIn:
    """Some layer of the side keeps a recurrent state of one of these families (``None``: any family)."""

    side: str
    families: frozenset | None = None

    def __call__(self, t: ArchFacts | None, d: ArchFacts | None) -> str | None:
        """The words of the match, or None."""
        f = _side(t, d, self.side)
        if f is None or not f.state:
            return None
        hit = [s for s in f.state if self.families is None or s in self.families]
        if not hit:
            return None
        layers = ", ".join(f"{n} {k}" for k, n in f.layers.items())
        return (f"the {self.side} ({_named(f)}) has {' and '.join(STATE_WORDS.get(s, s) for s in hit)} layers"
                + (f" ({layers})" if layers else ""))


@dataclass(frozen=True)
class Sliding:
    """The side has sliding-window layers (and, when ``types`` is given, the engine's model class for its
    model_type keeps them in a rotating cache)."""

    side: str
    types: frozenset | None = None
    listed_types: frozenset = frozenset()  # model types that slide only where layer_types lists sliding layers

    def __call__(self, t: ArchFacts | None, d: ArchFacts | None) -> str | None:
        """The words of the match, or None."""
        f = _side(t, d, self.side)
        if f is None or not f.sliding_window:
            return None
        if self.types is not None and not (f.types() & self.types) and not (f.listed and f.types() & self.listed_types):
            return None
        n = f.layers.get("sliding_attention")
        return (f"the {self.side} ({_named(f)}) has {n or 'its'} sliding-window layers with a window of "
                f"{f.sliding_window} tokens")


@dataclass(frozen=True)
class ShorterContext:
    """The draft's derived context length (``ArchFacts.<field>``) is shorter than the target's."""

    field: str
    how: str  # how the engine derives it, in words

    def __call__(self, t: ArchFacts | None, d: ArchFacts | None) -> str | None:
        """The words of the match, or None."""
        if t is None or d is None:
            return None
        tc, dc = getattr(t, self.field), getattr(d, self.field)
        if not tc or not dc or dc >= tc:
            return None
        return f"the draft's derived context length {dc} is shorter than the target's {tc} ({self.how})"


@dataclass(frozen=True)
class Vision:
    """The side's config.json has a vision_config (a multimodal model)."""

    side: str

    def __call__(self, t: ArchFacts | None, d: ArchFacts | None) -> str | None:
        """The words of the match, or None."""
        f = _side(t, d, self.side)
        return f"the {self.side}'s config.json has vision_config" if f is not None and f.vision else None


@dataclass(frozen=True)
class Head:
    """The side's GGUF header declares a speculator head (EAGLE-3, DFlash, Gemma-4 assistant) or MTP layers."""

    side: str
    embedded: bool = False  # True: MTP layers inside the model itself; False: a separate head file

    def __call__(self, t: ArchFacts | None, d: ArchFacts | None) -> str | None:
        """The words of the match, or None."""
        f = _side(t, d, self.side)
        head = (f.head if f is not None else None) or {}
        if f is None or not head or bool(head.get("embedded")) != self.embedded:
            return None
        keys = ", ".join(f"{k} {v}" for k, v in head.items() if k not in ("kind", "spec_type", "embedded"))
        return (f"the {self.side}'s GGUF ({f.gguf_arch}) is {'a model with' if self.embedded else 'a'} "
                f"{head['kind'].upper()} {'layers' if self.embedded else 'head'}" + (f" ({keys})" if keys else "")
                + f": llama-server runs it with --spec-type {head['spec_type']}")


@dataclass(frozen=True)
class ArchRule:
    """One row of an engine's architecture table: the fact it reads, what the engine does, its source."""

    check: str  # a short name: the near miss's failed_check, the details' rule name
    when: TypeIn | StateIn | Sliding | ShorterContext | Vision | Head
    outcome: str | None  # refused / wrong_output, or None: the outcome stands and the words are a note
    says: str  # what the engine does, after the matched fact
    source: str  # file:line at the engine's pinned version
    demote: bool = False  # the query ranks such drafts after the others
    fix: str | None = None  # the one way around it, when there is one ("{t}"/"{d}": the sides' values)
    since: str | None = None  # the first of the engine's releases it holds at (None: every one before ``until``)
    until: str | None = None  # the first release it no longer holds at (None: it holds at the newest)
    anchors: tuple = ()  # per file:line of ``source``, a short text found there (engines/audit.py checks them)
    read_at: str | None = None  # the release ``source`` was read at (None: ``since``, else the module's READ_AT)

    @property
    def side(self) -> str:
        """Which side the row reads: target, draft, or pair (both)."""
        return getattr(self.when, "side", "pair")


@dataclass(frozen=True, kw_only=True)
class Ranged:
    """One of an engine's values (its vocabulary rule, fix, launch, sources, head rules) for a range of its
    releases: the engine module lists one row per range, :meth:`indexer.engines.base.Engine.at` picks the one that
    holds."""

    value: object
    since: str | None = None  # as ArchRule's
    until: str | None = None
    source: str = ""  # file:line at ``since`` (or the release it was read at), when the value has one
    anchors: tuple = ()
    read_at: str | None = None  # as ArchRule's


def relined(row, release: str, source: str) -> tuple:
    """A row whose rule holds on at ``release`` but whose cited lines moved: the row until then, and the same row
    from then with the new source (the anchors stay)."""
    return replace(row, until=release), replace(row, since=release, source=source)


def older(row, release: str, oldest: str, source: str, anchors: tuple | None = None,
          read_at: str | None = None) -> tuple:
    """A row whose rule holds before ``release`` too, at lines of different text there (read at ``oldest``, the
    engine's first release; moves between then and ``release`` are re-pinned by the audit): that row from ``oldest``
    until ``release``, and ``row`` from ``release`` (its source read at ``read_at``, its own by default)."""
    return (replace(row, since=oldest, until=release, source=source, read_at=oldest,
                    anchors=row.anchors if anchors is None else anchors),
            replace(row, since=release, read_at=row.read_at or read_at or row.since))


def holds(row, release: str, releases: tuple) -> bool:
    """Does the row (ArchRule or Ranged) hold at ``release``? ``releases``: the engine's, oldest first."""
    i = releases.index(release)
    return ((row.since is None or releases.index(row.since) <= i)
            and (row.until is None or i < releases.index(row.until)))


def at_release(rows, release: str, releases: tuple) -> tuple:
    """The rows that hold at ``release``, in table order."""
    return tuple(r for r in rows if holds(r, release, releases))


class Applied:
    """A row that matched a pair: its words and its effect."""

    __slots__ = ("rule", "fact")

    def __init__(self, rule: ArchRule, fact: str):
        self.rule, self.fact = rule, fact

    def __eq__(self, other):
        return isinstance(other, Applied) and (other.rule, other.fact) == (self.rule, self.fact)

    @property
    def words(self) -> str:
        """The reason line: the fact, what the engine does, and the source."""
        return f"{self.fact}: {self.rule.says} ({self.rule.source})"

    def fix(self, t: ArchFacts | None, d: ArchFacts | None) -> str | None:
        """The row's fix with the sides' context lengths filled in."""
        if self.rule.fix is None:
            return None
        field = getattr(self.rule.when, "field", None)
        return self.rule.fix.format(t=getattr(t, field, "") if field else "", d=getattr(d, field, "") if field else "")

    def to_dict(self) -> dict:
        """The JSON shape listed under a verdict's ``architecture``."""
        return {"check": self.rule.check, "outcome": self.rule.outcome, "says": self.words,
                "source": self.rule.source, "demoted": self.rule.demote}


def matching(rules, t: ArchFacts | None, d: ArchFacts | None, sides: tuple[str, ...] = ("target", "draft", "pair")
             ) -> list[Applied]:
    """The rows of ``rules`` that apply to the pair (only those reading ``sides``), in table order."""
    out = []
    for rule in rules:
        if rule.side not in sides:
            continue
        fact = rule.when(t, d)
        if fact:
            out.append(Applied(rule, fact))
    return out


def worst(a: str, b: str | None) -> str:
    """The worse of two outcomes (``b`` None: ``a``)."""
    if b is None:
        return a
    return max(a, b, key=SEVERITY.index)


def table(rules) -> list[dict]:
    """An engine's rows as data (docs and the README's table): check, side, outcome, source."""
    return [{"check": r.check, "side": r.side, "outcome": r.outcome or "note", "says": r.says, "source": r.source,
             "since": r.since, "until": r.until} for r in rules]
