"""Stage 1 of a draft-model answer: the candidates, the members of the classes that work with the target
(:mod:`indexer.answer.scope`) ranked by the catalog (:mod:`indexer.catalog.classes`, docs/ranking.md).

A draft qualifies when the engine accepts the pair (its class works with the target's), it has strictly fewer
parameters than the target (unknown parameters are listed after) and it is not disabled; no architecture row may
refuse it, and a row that demotes it ranks it after the others. A repo that is the target in another form (a
quant, a copy, its size) is no draft.
"""

from __future__ import annotations

import re

from ..catalog import classes as sql
from ..catalog.classes import Member
from ..catalog.reader import Reader
from .archrank import REFUSED
from .scope import Scope, read_agreement

COPY_RATIO = 0.75  # a draft of at least 3/4 of the target's size is "of its size": no draft (query --all says so)
POOL = 30  # drafts ranked by size and lineage that the speed model then orders (a page is at most this many)
PROBE_ROWS = (4, 20)  # members has_candidates reads unranked, then more, before it ranks a class whose draft
# rows may refuse them
# The suffixes quants and copies add to a name (-GGUF, -AWQ, -4bit, -Q4_K_M, ...).
COPY_SUFFIXES = re.compile(r"([-_.](gguf|awq|gptq|exl2|mlx|fp8|int4|int8|bnb|\d+bit|q\d\w*|f16|bf16))+$")


def stem(repo_id: str) -> str:
    """A repo's name without its org and the suffixes quants and copies add (-GGUF, -AWQ, -4bit, ...)."""
    return COPY_SUFFIXES.sub("", repo_id.split("/")[-1].lower())


def ranked(cat: Reader, s: Scope, class_ids: list[int], where: str, limit: int | None,
           offset: int = 0) -> list[Member]:
    """Members of ``class_ids`` passing ``where``, in rank order."""
    return sql.ranked(cat, s.keys, s.sizes, class_ids, where, limit, offset)


def take(cat: Reader, s: Scope, class_ids: list[int], where: str, need: int) -> tuple[list[Member], list[Member]]:
    """Up to ``need`` ranked members no architecture row refuses, and the demoted ones apart (ranked after)."""
    where = s.keys.draft_where + where
    if not s.arch.per_draft:
        return ranked(cat, s, class_ids, where, need), []
    return s.arch.take(lambda n, offset: ranked(cat, s, class_ids, where, n, offset), need)


def drafts(cat: Reader, s: Scope, limit: int) -> list[Member]:
    """Smaller drafts ranked on their size (the Hub's count, else compute's estimate from the config or the name),
    then the drafts of unknown size; the demoted ones after. Up to ``POOL`` of them, for the speed model to order."""
    if s.t["params"] is None:  # nothing to compare with: every member, sized ones first
        rows, later = take(cat, s, s.class_ids, "AND NOT rc.disabled", limit)
        rows.sort(key=lambda r: r.params is None)
        more, more_later = take(cat, s, s.degraded_ids, "AND NOT rc.disabled", limit - len(rows)) \
            if len(rows) < limit else ([], [])
        more.sort(key=lambda r: r.params is None)
        return [*rows, *more, *later, *more_later]
    rows, later = [], []
    pool = max(limit, POOL)
    for ids in (s.class_ids, s.degraded_ids):  # degraded drafts come after every working one
        # under 3/4 of the target's size (COPY_RATIO): a repo of its size (its base, a quant) is no draft
        # (:tp3 is 3 x the target's size, computed here: PostgreSQL multiplies a bound int4 in int4)
        for where in ("AND rc.params * 4 < :tp3 AND NOT rc.disabled",
                      "AND rc.params IS NULL AND NOT rc.disabled"):
            if len(rows) < pool:
                got, demoted = take(cat, s, ids, where, pool - len(rows))
                rows += got
                later += demoted
    return [r for r in [*rows, *later] if not copy_of_target(s, r)]


def every(cat: Reader, s: Scope) -> list[Member]:
    """Every member that works, then every degraded one, that no architecture row refuses (``query --all``)."""
    rows = sql.every_member(cat, s.class_ids + s.degraded_ids, s.target.exclude_pk, s.keys.draft_where)
    return [r for r in rows if s.arch.refused(r) is None]


def size_not_a_draft(target_params, draft_params) -> str | None:
    """Why a model this size is no draft for a target that size (the words ``query --all`` marks it with)."""
    if draft_params is None or not target_params or draft_params < COPY_RATIO * target_params:
        return None
    return "the target's size or larger" if draft_params < target_params else "larger than the target"


def copy_of_target(s: Scope, m: Member) -> str | None:
    """Why a class member is the target itself in another form (a quant, a copy, its size), else None."""
    t = s.t
    size = size_not_a_draft(t["params"], m.params)
    if size:
        return size
    target_stem = stem(t["repo_id"])
    if target_stem and stem(m.repo_id).startswith(target_stem):
        return "a copy or quant of the target"
    return None


def has_candidates(cat: Reader, s: Scope) -> bool:
    """Whether :func:`drafts` would list anything (an index probe; the summary line asks every engine). A scope
    resolved ``probe_only`` probes the target's own class first, then, only if it has none, the agreeing ones."""
    if not s.agreement_read:
        probed = list(s.class_ids)
        if _probe(cat, s, probed):
            return True
        read_agreement(cat, s)
        if s.class_ids == probed and not s.degraded_ids:
            return False  # no class agrees: the probe above was the whole answer
    return _probe(cat, s, s.class_ids + s.degraded_ids)  # degraded drafts are listed too


def _probe(cat: Reader, s: Scope, class_ids: list[int]) -> bool:
    """Whether any member of ``class_ids`` would be listed as a draft."""
    if not s.arch.per_draft:
        return sql.any_member(cat, class_ids, s.keys)
    # A draft row may refuse members: a few in index order usually hold one it takes (no ranking sort), a few more
    # if not; only when none does is the class ranked page by page as drafts() would. Which few come first does
    # not change the answer, since the ranking decides when they are all refused.
    for n in PROBE_ROWS:
        archs = sql.first_archs(cat, class_ids, s.keys, n)
        if not archs:
            return False
        if any(not any(a.rule.outcome == REFUSED for a in s.arch.rows_of(arch)) for arch in archs):
            return True
        if len(archs) < n:
            break
    size = "AND (rc.params * 4 < :tp3 OR rc.params IS NULL) " if s.t["params"] is not None else ""
    good, later = take(cat, s, class_ids, f"{size}AND NOT rc.disabled", 1)
    return bool(good or later)
