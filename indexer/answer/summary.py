"""The summary line of a query: which engines have drafts for the target, and the cheapest fix among the near
misses. Every engine in one pass: the target's classes on all of them are read at once, and each engine's scope
is only probed for a draft (:func:`indexer.answer.members.has_candidates`)."""

from __future__ import annotations

from typing import Any

from .. import engines as registry
from ..catalog.classes import target_classes
from ..catalog.reader import Reader
from ..catalog.repofacts import crawl_scope, has_run
from ..errors import QueryError
from .members import has_candidates
from .pipeline import near_misses
from .scope import Scope, engine_at, resolve

# Which near-miss fix costs least: an environment variable (SGLang's shorter draft context), resizing embeddings
# (vocab_size), re-converting a GGUF (token list), then TLI (a mapping that disagrees: only an engine with TLI has
# a fix for it).
FIX_COST = {"vocab_size": 1, "token list": 2, "mapping": 3, "shorter draft context": 0}
SUMMARY_NEAR_MISSES = 3


def summarize(cat: Reader, s: Scope, misses: list[dict] | None = None) -> dict:
    """Across engines: which have drafts for this target, and the cheapest fix among the near misses."""
    with_drafts: list[str] = []
    without: list[str] = []
    unknown: list[str] = []
    classes = target_classes(cat, s.target.class_pk, list(registry.ENGINES))
    for engine in registry.ENGINES:
        try:
            other = s if engine == s.name else resolve(cat, s.target, engine_at(engine, None), probe_only=True,
                                                       classes=classes)
        except QueryError:  # no class on this engine (its facts are missing)
            without.append(engine)
            continue
        if other.unknown_target:  # the indexer does not model the engine's path for the target: counted as neither
            unknown.append(engine)
            continue
        (with_drafts if has_candidates(cat, other) else without).append(engine)
    if misses is None and s.name not in with_drafts:  # a fix matters when there is no draft
        misses = near_misses(cat, s, SUMMARY_NEAR_MISSES)
    cheapest = None
    fixable = [m for m in misses or () if m["fix"]]
    if fixable:
        best = min(fixable, key=lambda m: FIX_COST.get(m["failed_check"], 9))
        cheapest = {"engine": s.name, "repo_id": best["repo_id"], "failed_check": best["failed_check"],
                    "fix": best["fix"]}
    out: dict[str, Any] = {"engines_with_drafts": with_drafts, "engines_without_drafts": without,
                           "engines_unknown": unknown, "cheapest_fix": cheapest}
    if not with_drafts and not looked_for_drafts(cat, s.t["repo_id"]):
        out["catalog_looked"] = False  # "no drafts" would be the catalog's silence, not an answer
    return out


LIVE_SCOPE = "live"  # crawl_runs.scope of a live answer's fetch (crawl/options.py CrawlOptions.scope)


def discovery_scope(repo_id: str) -> str:
    """crawl_runs.scope of a ``query --live`` discovery for ``repo_id``: the catalog has looked for its drafts."""
    return f"{LIVE_SCOPE} drafts-for={repo_id}"


def looked_for_drafts(cat, repo_id: str) -> bool:
    """Has this catalog looked for drafts of ``repo_id``? Not when the target came in alone, fetched by a live
    answer (scope "live"), and no ``--live`` discovery has run for it since: then the catalog holds the target
    and whatever else it happened to hold, and its empty answer says nothing about the Hub. A row written by
    a crawl of a family, author, search or the whole Hub (or of unknown origin: a hand-made or old catalog) has
    been looked around."""
    if crawl_scope(cat, repo_id) != LIVE_SCOPE:
        return True
    return has_run(cat, discovery_scope(repo_id))
