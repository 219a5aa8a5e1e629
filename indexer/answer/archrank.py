"""The engines' architecture rows on a query's drafts, the way ``check`` applies them
(:func:`indexer.engines.base.with_arch`), so that every front end gives one answer.

A compatibility class groups drafts by vocabulary only. The rows that read the target alone (a stateful target,
a sliding-window one on mlx-lm) are judged once per query: a refusal refuses every draft, ``wrong_output`` marks
every draft, a note goes on every draft. The rows that read the draft (its state layers, its context length) are
judged per ranked draft from its stored ``engine_facts.arch``: a refused draft leaves the list (it is a near
miss, with the row's fix), a demoted one is ranked after the others.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.classes import Member, engine_fact
from ..catalog.reader import Reader, json_value
from ..engines import ENGINES
from ..engines.archrules import Applied, matching, worst
from ..vocab.archconfig import ArchFacts

REFUSED = "refused"


@dataclass
class ArchVerdict:
    """The architecture rows' verdict on one draft: the outcome, the words of the rows that decided it (they go
    right after the accept reason), the other rows as notes, and whether a row ranks it after the others."""

    outcome: str
    deciding: list[str]
    notes: list[str]
    demoted: bool
MAX_PAGES = 20  # pages of ranked members scanned for drafts no architecture row refuses


def arch_of(cat: Reader, repo_pk: int) -> ArchFacts | None:
    """A catalog repo's stored architecture facts (None: not derived yet, or no engine facts)."""
    return ArchFacts.from_dict(json_value(engine_fact(cat, repo_pk, "arch")))


def pages(ranked, page: int):
    """The first ``MAX_PAGES`` pages of ranked members, in order, ending at the first short page. The first page
    is one query; the rest come from one more (every query over a big class sorts it whole, so a query per page
    would sort it twenty times)."""
    rows = ranked(page, 0)
    yield rows
    if len(rows) < page:
        return
    rest = ranked(page * (MAX_PAGES - 1), page)
    for i in range(MAX_PAGES - 1):
        chunk = rest[i * page:(i + 1) * page]
        yield chunk
        if len(chunk) < page:
            return


class ArchJudge:
    """One engine's rows for one target: the target's rows once, the draft rows per draft."""

    def __init__(self, cat: Reader, entry, target_pk: int, gguf_target: bool = False, memo: dict | None = None):
        """``memo``: the target's facts already read for another engine (the summary line asks all seven)."""
        rules = entry.gguf_arch_rules if gguf_target else entry.arch_rules
        self.gguf_target = gguf_target
        self.t = None
        if rules or len(entry.releases) > 1:
            memo = {} if memo is None else memo
            if ("arch", target_pk) not in memo:
                memo["arch", target_pk] = arch_of(cat, target_pk)
            self.t = memo["arch", target_pk]
        self.target_rows = matching(rules, self.t, None, ("target",))
        self.draft_rules = tuple(r for r in rules if r.side != "target")
        self._rows: dict[int, list[Applied]] = {}  # member pk -> its rows

    def by_version(self, engine: str) -> dict[str, str] | None:
        """Where the engine's releases disagree on the target alone (a refusal, wrong output, or neither: a
        transformers 5.24 refusal of a stateful target that 5.25 starts): release -> what the target's rows say."""
        e = ENGINES[engine]
        if len(e.releases) < 2:
            return None
        seen = {}
        for r in e.releases:
            at = e.at(r)
            rows = matching(at.gguf_arch_rules if self.gguf_target else at.arch_rules, self.t, None, ("target",))
            seen[r] = next((a.rule.outcome for a in rows if a.rule.outcome == REFUSED), None) or next(
                (a.rule.outcome for a in rows if a.rule.outcome), None) or "starts"
        return seen if len(set(seen.values())) > 1 else None

    @property
    def per_draft(self) -> bool:
        """Some row reads the draft, so each ranked draft is judged."""
        return bool(self.draft_rules)

    def refusal(self) -> str | None:
        """The words of a target row that refuses every draft."""
        return next((a.words for a in self.target_rows if a.rule.outcome == REFUSED), None)

    def rows(self, m: Member) -> list[Applied]:
        """Every row that matches the target and this draft (its stored facts), worked out once per member (its
        ranking and its verdict both ask)."""
        if m.pk not in self._rows:
            self._rows[m.pk] = self.rows_of(m.arch)
        return self._rows[m.pk]

    def rows_of(self, arch) -> list[Applied]:
        """Every row that matches the target and a draft with these stored facts (``engine_facts.arch``)."""
        return [*self.target_rows, *matching(self.draft_rules, self.t, ArchFacts.from_dict(json_value(arch)),
                                             ("draft", "pair"))]

    def refused(self, m: Member) -> Applied | None:
        """The draft row that refuses this draft, if one does."""
        return next((a for a in self.rows(m) if a.rule.outcome == REFUSED), None)

    def judge(self, base: str, m: Member) -> ArchVerdict:
        """The rows' verdict on a draft the vocabulary rule gave ``base``: the worse outcome wins, as
        ``engines.base.with_arch`` words a verdict."""
        rows = self.rows(m)
        outcome = base
        for a in rows:
            outcome = worst(outcome, a.rule.outcome)
        deciding = [a for a in rows if a.rule.outcome and a.rule.outcome == outcome != base]
        return ArchVerdict(outcome, [a.words for a in deciding],
                           [f"{'also' if a.rule.outcome else 'note'}: {a.words}" for a in rows if a not in deciding],
                           any(a.rule.demote for a in rows))

    def miss(self, m: Member) -> tuple[str, str, str | None] | None:
        """(failed check, reason, fix) of a draft a draft row refuses; None when none does."""
        a = self.refused(m)
        if a is None:
            return None
        return a.rule.check, a.words, a.fix(self.t, ArchFacts.from_dict(json_value(m.arch)))

    def take(self, ranked, need: int) -> tuple[list[Member], list[Member]]:
        """Up to ``need`` members, in rank order, that no row refuses, and the demoted ones apart (up to ``need``).
        ``ranked(n, offset)``: the next ``n`` ranked members."""
        good: list[Member] = []
        later: list[Member] = []
        for rows in pages(ranked, max(need, 20)):
            for r in rows:
                applied = self.rows(r)
                if any(a.rule.outcome == REFUSED for a in applied):
                    continue
                (later if any(a.rule.demote for a in applied) else good).append(r)
            if len(good) >= need:
                break
        return good[:need], later[:need]

    def misses(self, ranked, limit: int) -> list[tuple[Member, tuple[str, str, str | None]]]:
        """Up to ``limit`` members, in rank order, that a draft row refuses, each with (check, reason, fix)."""
        out = []
        for rows in pages(ranked, max(limit, 20)):
            out += [(r, why) for r in rows if (why := self.miss(r)) is not None]
            if len(out) >= limit:
                break
        return out[:limit]
