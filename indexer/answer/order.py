"""Stage 4 of a draft-model answer: the order. Drafts by outcome (works, degraded, ..., wrong_output), the demoted
ones after the others of theirs, then by the expected speed-up on the device asked: a draft expected to be slower
than none comes after every draft expected to pay (the renderer marks it); the catalog's size-and-lineage order
breaks ties.
"""

from __future__ import annotations

from ..engines.archrules import SEVERITY
from .verdict import Judged


def by_speed(judged: list[Judged], limit: int) -> list[Judged]:
    """The first ``limit`` drafts, best first (module docstring); ``judged`` is in the catalog's order."""
    def key(item: tuple[int, Judged]):
        i, j = item
        s = (j.speedup or {}).get("estimate")
        return SEVERITY.index(j.outcome), j.demoted, s is not None and s < 1.0, -(s or 0.0), i

    return [j for _, j in sorted(enumerate(judged), key=key)][:limit]


def by_name(judged: list[Judged]) -> list[Judged]:
    """Every member (``query --all``): by outcome, the demoted after the others, then by repo id."""
    return sorted(judged, key=lambda j: (SEVERITY.index(j.outcome), j.demoted, j.member.repo_id))
