"""A draft-model answer as one pass: candidates (:mod:`~indexer.answer.members`), verdict
(:mod:`~indexer.answer.verdict`), setup and estimate (:mod:`~indexer.answer.estimate`), order
(:mod:`~indexer.answer.order`), render (:mod:`~indexer.answer.entries`). Each stage finishes before the next
begins, over the scope resolved once (:mod:`~indexer.answer.scope`); nothing goes back up.
"""

from __future__ import annotations

from ..catalog import classes as sql
from ..catalog.classes import Member
from ..catalog.reader import Reader
from . import entries, estimate, members, order, verdict
from .scope import Scope
from .speedup import Options


def drafts(cat: Reader, s: Scope, speed: Options | None, limit: int, all_members: bool = False) -> list[dict]:
    """The ranked drafts (``all_members``: every repo that works, then every degraded one, unranked) as the
    answer's entries. ``speed``: the speed question, None for the engine's reference devices."""
    if all_members:
        judged = verdict.judge(cat, s, members.every(cat, s))
        estimate.add(cat, s, judged, speed)
        for j in judged:
            j.not_a_draft = members.copy_of_target(s, j.member)
        shown = order.by_name(judged)
    else:
        judged = verdict.judge(cat, s, members.drafts(cat, s, limit))
        estimate.add(cat, s, judged, speed)
        shown = order.by_speed(judged, limit)
    root = lineage_root(cat, s, [j.member for j in shown])
    return [entries.entry(s, j, root, ranked=not all_members) for j in shown]


def near_misses(cat: Reader, s: Scope, limit: int) -> list[dict]:
    """The near misses (verdict.near_misses) as the answer's entries."""
    misses = verdict.near_misses(cat, s, limit)
    root = lineage_root(cat, s, [m.judged.member for m in misses])
    return [entries.miss_entry(s, m, root) for m in misses]


def lineage_root(cat: Reader, s: Scope, shown: list[Member]) -> str | None:
    """The repo id of the target's lineage root when a draft shown shares it and the catalog holds it."""
    lineage = s.keys.lineage_id
    if lineage is None or lineage <= 0 or not any(m.lineage_id == lineage for m in shown):
        return None
    return sql.repo_name(cat, lineage)
