"""The answer API: the one module the CLI and the site call, for drafts, heads, check, lookup and rendering.

``run_query`` answers ``indexer query`` and ``/drafts.json``; ``check`` answers ``indexer check`` and
``/explain.json``; ``render`` and ``render_explain`` print them. Each opens one read-only
:class:`~indexer.catalog.reader.Reader` per request (or takes the caller's) and passes it down to the pieces
below, which never import back up: ``target`` (whom the answer is for), ``scope`` (the engine and the target's
classes on it, resolved once) and ``pipeline`` (the drafts: candidates, verdict, setup and estimate, order, render),
``headquery`` (speculator heads, MTP, n-gram), ``sides`` and ``rule_inputs`` (the two sides of a check),
``render`` (the words). On the interactive path: what ``check`` needs beyond the catalog (tokenizers,
GGUF files) is read through :mod:`indexer.deferred` when a check needs it.
"""

from __future__ import annotations

from pathlib import Path

from .. import engines as registry
from ..catalog.reader import Reader
from ..engines.rules import check_pair
from ..errors import EXIT_NOT_FOUND, CatalogError, IndexerError, InputError, QueryError
from ..files import DEFAULT_MAX_FILE_BYTES
from . import headquery
from .headquery import explain_head
from .lead import device_block, lead
from .lookup import looks_like_dir, repo_ids_only
from .pipeline import drafts as answer_drafts
from .pipeline import near_misses as answer_near_misses
from .render import fmt_params, fmt_ratio, fmt_size, render, render_check, render_explain
from .scope import engine_at, resolve, target_info
from .setup import launch
from .sides import is_local, resolve_side
from .summary import summarize
from .target import resolve_target
from .validate import target as valid_target

ENGINES = tuple(registry.ENGINES)  # the names, re-exported from the registry (the site imports them)
ENGINE_NAMES = registry.ENGINE_NAMES
DEFAULT_ENGINE = registry.DEFAULT_ENGINE
# --method: "draft" (separate draft models, the default) or a speculator head method (indexer/answer/headquery.py).
METHODS = registry.QUERY_METHODS
__all__ = ["DEFAULT_ENGINE", "ENGINES", "ENGINE_NAMES", "EXIT_NOT_FOUND", "METHODS", "QueryError", "check",
           "fmt_params", "fmt_ratio", "fmt_size", "launch", "open_reader", "render", "render_check", "render_explain",
           "run_query", "works_on"]


def open_reader(db: str | None = None) -> Reader:
    """The request's reader of a computed catalog, one snapshot of it (``Reader(snapshot=True)``); a catalog that
    cannot answer is a QueryError (exit 2)."""
    try:
        return Reader(db, snapshot=True)
    except CatalogError as e:
        raise QueryError(e.message) from None


def run_query(target: str, *, engine: str | None = registry.DEFAULT_ENGINE, limit: int = 10, near_misses: bool = False,
              all_members: bool = False, db: str | None = None, method: str = "draft",
              reader: Reader | None = None, shown: str | None = None, speed=None,
              release: str | None = None) -> dict:
    """The answer as the ``--json`` shape: target, engine, drafts, near_misses, summary.

    ``method`` other than "draft" answers with speculator heads, MTP or n-gram (indexer/answer/headquery.py) in the
    same shape; "all" gives one overview per engine instead. ``reader``: the request's, when the caller asks
    more than one question of the catalog (the site's page); else one is opened on ``db`` and closed.
    ``shown``: the name a local directory target is shown by (a private Hub repo read into one, answer/live.py).
    ``speed``: the speed question (:class:`~indexer.answer.speedup.Options`: hardware, task, quantizations); None:
    the engine's reference devices.
    ``release``: the engine's release to answer for (``--engine-version``; default: its newest).
    ``engine`` None: the engine that runs the target fastest on the device ``speed`` names (``lead``: every engine
    that runs there, best first), else the default engine."""
    device = speed.device if speed is not None else None
    if engine is None and (device is None or method != "draft"):
        engine = registry.DEFAULT_ENGINE
    if method not in METHODS:
        raise QueryError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if engine is not None and engine not in ENGINES:
        raise QueryError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    if engine is not None and release is not None and release not in registry.ENGINES[engine].releases:
        raise QueryError(f"unknown {engine} version {release!r}; known: {', '.join(registry.ENGINES[engine].releases)}")
    cat = reader or open_reader(db)
    try:
        if method != "draft":

            if method == "all":
                return headquery.overview_all(cat, target, _drafts_per_engine(cat, speed), speed=speed)
            assert engine is not None  # None is the draft method's, with a device (above)
            return headquery.method_query(cat, target, engine, method, limit=limit, near_misses=near_misses,
                                          all_members=all_members, release=release, speed=speed)
        resolved = _shown_as(cat, target, shown) if shown else None
        if engine is None:

            q, drafts, led = lead(cat, target, resolved, speed, limit, all_members)
        else:
            q = resolve(cat, resolved or target, engine_at(engine, release))
            drafts = answer_drafts(cat, q, speed, limit, all_members)
            led = None
        misses = answer_near_misses(cat, q, limit) if near_misses else []
        out = {
            "target": target_info(cat, q),
            "engine": q.name,
            "drafts": drafts,
            "near_misses": misses,
            "summary": summarize(cat, q, misses if near_misses else None),
            "refused": None if q.unknown_target else q.refused_target,
            "unknown": q.refused_target if q.unknown_target else None,  # the indexer cannot say (not a refusal)
            "version": q.engine.release,
            "by_version": q.arch.by_version(q.name),
        }
        if q.runs_as:  # LM Studio on a GGUF target: its llama.cpp engine answers
            out["runs_as"] = q.runs_as
        if device is not None:

            out["hardware"] = device_block(q, speed, led)
        return out
    finally:
        if reader is None:
            cat.close()


def _shown_as(cat: Reader, path: str, shown: str):
    """A local directory target, named ``shown`` in the answer and its launch commands."""
    t = resolve_target(cat, path)
    t.facts["repo_id"] = shown
    t.note = (t.note or "").replace(f"local directory {path}", f"{shown} (private: read from its files, not stored)")
    return t


def _drafts_per_engine(cat: Reader, speed=None, limit: int = 3):
    """``--method all``'s draft models per engine: the target resolved once, ranked on the same reader."""
    resolved: dict = {}

    def drafts(repo_id: str, engine: str) -> list[dict]:
        if repo_id not in resolved:
            try:
                resolved[repo_id] = resolve_target(cat, repo_id)
            except QueryError as e:
                resolved[repo_id] = e
        if isinstance(resolved[repo_id], QueryError):
            raise resolved[repo_id]
        return answer_drafts(cat, resolve(cat, resolved[repo_id], engine_at(engine, None)), speed, limit)

    return drafts


def check(target: str, draft: str, *, db: str | None = None, max_file_bytes: int | None = None,
          local_dirs: bool = True, releases: dict[str, str] | None = None) -> dict:
    """``indexer check TARGET DRAFT --json``: the one function the CLI and the site both call.

    It dispatches: a DRAFT that is a speculator head in the catalog is explained against TARGET
    (``headquery.explain_head``, ``kind`` "head"); anything else gets the draft-model verdicts per engine.
    ``local_dirs=False`` (the site) takes both as repo ids only (``validate.target``): a web visitor must
    never make the server read its own filesystem. Raises the library's :class:`~indexer.errors.IndexerError`
    (BadInput, InputError, RepoNotFound, ...) with the side that failed named in its message. ``releases``: engine
    -> release to answer for (``--engine-version``; default: each engine's newest). ``max_file_bytes``: None is
    files.DEFAULT_MAX_FILE_BYTES (read here: a query reads no files).
    """
    if max_file_bytes is None:

        max_file_bytes = DEFAULT_MAX_FILE_BYTES
    if local_dirs:
        return _check(target, draft, db, max_file_bytes, releases)

    target, draft = valid_target(target, "target", local_dirs=False), valid_target(draft, "draft", local_dirs=False)
    with repo_ids_only():
        return _check(target, draft, db, max_file_bytes, releases)


def works_on(result: dict, engine: str) -> bool:
    """Does the :func:`check` answer (a head's or a draft model's) say the pair works on ``engine``?"""
    if result.get("kind") == "head":
        verdict = result["engines"].get(engine)
        return verdict is not None and verdict["fits"]
    return result["verdicts"][engine]["compatible"]


class _CheckCatalog:
    """The check's one reader, opened when a side first needs the catalog (two local directories need none)."""

    def __init__(self, db: str | None):
        self.db = db
        self.reader: Reader | None = None
        self.error: str | None = None

    def get(self) -> Reader:
        if self.reader is None and self.error is None:
            try:
                self.reader = Reader(self.db, needs="repos")
            except CatalogError as e:
                self.error = e.message
        if self.error is not None:
            raise InputError("error", self.error)
        assert self.reader is not None
        return self.reader

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()


def _check(target: str, draft: str, db: str | None, max_file_bytes: int, releases: dict | None = None) -> dict:
    catalog = _CheckCatalog(db)
    try:
        if not looks_like_dir(draft):
            try:
                cat = catalog.get()
            except InputError:
                cat = None  # no catalog: no head to explain; a catalog side says why below
            head = explain_head(cat, target, draft, releases) if cat is not None else None
            if head is not None:
                return head
        sides = []
        for role, arg in (("target", target), ("draft", draft)):
            try:
                reader = None if is_local(arg) else catalog.get()
                sides.append(resolve_side(arg, db=db, max_file_bytes=max_file_bytes, reader=reader))
            except IndexerError as e:  # InputError, RepoNotFound, CatalogError: same type, the side named

                if e.message.startswith(f"{role} "):
                    msg = e.message
                elif e.message.startswith(f"{Path(arg)}: "):  # the message already names the directory
                    msg = f"{role} {e.message}"
                else:
                    msg = f"{role} {arg}: {e.message}"
                raise e.reworded(msg) from None
        target_side, draft_side = sides
        return check_pair(target_side, draft_side, releases)
    finally:
        catalog.close()
