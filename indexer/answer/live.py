"""Live answers for Hub repos the local catalog lacks: fetched the way the crawl fetches them.

A repo missing from the catalog is crawled alone: ``model_info`` (one API call), paths-info for its wanted files
(one), one GET per blob the blob store does not hold, a GGUF header range-read for a GGUF-only repo
(``crawl.fetch.Fetcher``), written by ``crawl.writer.CatalogWriter`` into the catalog (created by the real
migrations when missing), then given its classes by ``catalog.compute_scoped`` (not a full ``compute``). Asked
again, it is in the catalog: 0 requests. Gated repos are answered from public copies found by blob id, as in
the crawl; a token (HF_TOKEN) is used by huggingface_hub and never stored. A private repo never enters the
catalog: its files are fetched into a temporary directory and it is answered as a local model directory.

``--live`` (``discover``) also lists candidate drafts the catalog lacks (``candidates.py``) and fetches them within
a request budget. ``--offline`` and HF_HUB_OFFLINE=1 never touch the network.

Read through :mod:`indexer.deferred` when an answer needs the Hub: a query the catalog answers imports none of it.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..catalog import repoids
from ..catalog.blobstore import BlobStore
from ..catalog.compute_scoped import compute_repos
from ..catalog.db import immediate_transactions, missing_hint, open_catalog, resolve_url, sqlite_path
from ..catalog.reader import Reader
from ..crawl.fetch import Fetcher, describe
from ..crawl.loop import Crawler, catalog_dir
from ..crawl.options import CrawlOptions
from ..engines import DEFAULT_ENGINE
from ..engines.rules import check_pair
from ..errors import EXIT_NOT_FOUND, CatalogError, CrawlFailed, HubUnreachable, IndexerError, QueryError, RepoNotFound
from ..files import DEFAULT_MAX_FILE_BYTES
from ..hub.client import BudgetExhausted, HubClient
from ..hub.guard import INTERACTIVE
from .candidates import discover_drafts
from .lookup import find_repo_id, repo_ref
from .query import _CheckCatalog, check, run_query
from .sides import is_local, resolve_side
from .validate import is_repo_id

PULL_HINT = "`indexer pull` fetches the published catalog"
DEFAULT_BUDGET = 60  # requests (API calls + downloads) of one `query --live`


def offline(flag: bool = False) -> bool:
    """--offline, or HF_HUB_OFFLINE as huggingface_hub reads it (constants.py:12-19, 194: 1/ON/YES/TRUE), or its
    ``constants.HF_HUB_OFFLINE`` when it is already imported (what every request checks, constants.py:197-213)."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE")
    constants = sys.modules.get("huggingface_hub.constants")
    return (flag or (value or "").upper() in {"1", "ON", "YES", "TRUE"}
            or bool(constants is not None and getattr(constants, "HF_HUB_OFFLINE", False)))


class LiveError(QueryError):
    """A live answer that cannot be given (offline): one line, exit 3."""

    def __init__(self, message: str):
        super().__init__(message, EXIT_NOT_FOUND)


@dataclass
class Fetch:
    """What one live fetch did: repos written, private repos read apart, failures, requests spent."""

    written: list[str] = field(default_factory=list)
    private: dict[str, Path] = field(default_factory=dict)  # repo id -> temporary model directory
    failed: dict[str, str] = field(default_factory=dict)  # repo id -> why
    statuses: dict[str, str] = field(default_factory=dict)  # repo id -> status the catalog gave it
    ids: dict[str, str] = field(default_factory=dict)  # asked id -> the Hub's id
    compute: dict | None = None

    def close(self) -> None:
        """Remove the private repos' temporary directories."""
        for path in self.private.values():
            shutil.rmtree(path.parent, ignore_errors=True)
        self.private.clear()


class Live:
    """One live answer's door to the Hub: one client (its request counters are the answer's), one catalog."""

    def __init__(self, db: str | None, *, endpoint: str | None = None, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
                 workers: int = 4, base_delay: float = 1.0):
        self.db, self.max_file_bytes, self.workers = db, max_file_bytes, workers
        self.endpoint = endpoint or os.environ.get("HF_ENDPOINT") or None
        self.base_delay = base_delay
        self.client = HubClient(self.endpoint, token=None, scratch_dir=catalog_dir(db) / "cache",
                                base_delay=base_delay, unreachable_after=INTERACTIVE)
        self.fetch = Fetch()
        self._catalog = None
        self._computed: set[str] = set()
        self.items: dict = {}  # the Hub's id -> what model_info said (Listed)

    def _engine(self):
        """The catalog, opened (and created or migrated) once for every crawl round of this answer."""
        if self._catalog is None:

            self._catalog = open_catalog(self.db, create=True)  # as a crawl opens it (crawl/loop.py Crawler)
            immediate_transactions(self._catalog)
        return self._catalog

    def close(self) -> None:
        """Close the client and the catalog, remove temporary directories."""
        self.client.close()
        self.fetch.close()
        if self._catalog is not None:
            self._catalog.dispose()

    def requests(self) -> int:
        """Requests this answer sent: API calls plus resolver (download) calls."""
        c = self.client.counts()
        return c["api_calls"] + c["resolver_calls"]

    def _options(self, drafts_for: str | None = None):
        return CrawlOptions(live=True, endpoint=self.client.endpoint, quiet=True, max_file_bytes=self.max_file_bytes,
                            workers=self.workers, base_delay=self.base_delay, drafts_for=drafts_for)

    def lookup(self, repo_ids) -> list:
        """``model_info`` of each (one API call, the crawl's --model call, crawl/loop.py ``_items``): the public
        repos' items; a private repo is read apart at once (never handed to the crawl), a failure recorded."""
        items = []
        for rid in repo_ids:
            if rid in self.fetch.ids or rid in self.fetch.failed:
                continue  # asked already in this answer
            try:
                item = self.client.model_info(rid)
            except (HubUnreachable, BudgetExhausted):
                raise
            except Exception as e:  # noqa: BLE001 - a typo'd, vanished or hidden repo: said, not fatal
                self.fetch.failed[rid] = f"model_info failed: {describe(e)}"
                continue
            self.fetch.ids[rid] = item.id
            self.items[item.id] = item
            if item.private:
                self._read_private(item)
            else:
                items.append(item)
        return items

    def crawl(self, listed, progress=None, drafts_for: str | None = None) -> None:
        """Crawl exactly these listed repos with the crawl's own code (no row, no run record for a private one).
        ``drafts_for``: a discovery for that target, recorded (its run's scope) even when it fetched nothing, so
        the catalog knows it has looked (answer/summary.py ``looked_for_drafts``)."""
        items = [i for i in listed if not i.private]
        if drafts_for is not None and getattr(self.items.get(drafts_for), "private", False):
            drafts_for = None  # a private target has no row to mark as looked around, and its id is never stored
        if not items and not drafts_for:
            return
        crawler = Crawler(self.db, self._options(drafts_for), client=self.client, listed=items, resume=False,
                          progress=progress, engine=self._engine())
        try:
            summary = crawler.run()
        except CrawlFailed as e:
            summary = e.summary
        for err in summary.get("errors") or ():
            if err.get("repo"):
                self.fetch.failed[err["repo"]] = err["reason"]
        for rid, status in _rows(self.db, [i.id for i in items]).items():
            self.fetch.statuses[rid] = status
            if rid not in self.fetch.written:
                self.fetch.written.append(rid)

    def compute(self) -> None:
        """Classes for every repo this answer wrote (catalog/compute_scoped.py), once."""
        todo = [r for r in self.fetch.written if r not in self._computed]
        if todo:
            self.fetch.compute = compute_repos(self.db, todo)
            self._computed.update(todo)

    def _read_private(self, item) -> None:
        """A private repo: its wanted files into a temporary directory (blobs in a temporary store), no row."""
        tmp = Path(tempfile.mkdtemp(prefix="indexer-private-"))
        store = BlobStore(tmp / "blobs")
        got = Fetcher(self.client, store, self.max_file_bytes).fetch(item)
        if got.status is not None or got.gguf is not None:
            shutil.rmtree(tmp, ignore_errors=True)
            why = got.reason or ("a GGUF-only private repo is answered from a local .gguf file, not live"
                                 if got.gguf is not None else got.status)
            self.fetch.failed[item.id] = f"private: {why}"
            return
        directory = tmp / item.id.split("/")[-1]
        store.export({e.filename: e.blob_id for e in got.entries.values()}, directory)
        shutil.rmtree(tmp / "blobs", ignore_errors=True)
        self.fetch.private[item.id] = directory


def _rows(db: str | None, repo_ids) -> dict[str, str]:
    """Status of each of ``repo_ids`` the catalog holds."""
    ids = sorted(set(repo_ids))
    if not ids:
        return {}
    cat = Reader(db, needs="repos")
    try:
        return {rid: st for rid in ids if (st := repoids.status(cat, rid)) is not None}
    finally:
        cat.close()


REFETCH = ("error", "gone")  # rows the crawl resolves again however unchanged (crawl/loop.py _triage)


def in_catalog(db: str | None, arg: str, *, any_status: bool = False) -> str | None:
    """The catalog repo id ``arg`` names (any case, a Hub URL), else None (also when there is no catalog).
    A row the crawl would resolve again (a transient error, gone) counts as missing unless ``any_status``."""
    try:
        cat = Reader(db, needs="repos")
    except CatalogError:
        return None
    try:
        rid = find_repo_id(cat.all, arg, cat.dialect).repo_id
        if any_status:
            return rid
        return None if repoids.status(cat, rid) in REFETCH else rid
    except RepoNotFound:
        return None
    finally:
        cat.close()


def hub_id(arg: str) -> str | None:
    """The ``owner/name`` a target or draft names on the Hub (a repo id or Hub URL), None for a bare name."""
    try:
        ref = repo_ref(arg)
    except RepoNotFound:
        return None
    return ref if "/" in ref and is_repo_id(ref) else None


def missing_catalog(db: str | None) -> bool:
    """No catalog file (a SQLite path that does not exist)."""
    try:
        path = sqlite_path(resolve_url(db))
    except CatalogError:
        return False
    return path is not None and not path.exists()


def offline_refusal(db: str | None, args, first: IndexerError | None = None) -> IndexerError:
    """What an offline answer says when the catalog lacks a repo (or there is no catalog): one line."""
    why = "the Hub is not asked offline (--offline or HF_HUB_OFFLINE=1)"
    if first is None and not missing_catalog(db):
        return LiveError(f"{', '.join(args)} {'is' if len(args) == 1 else 'are'} not in the catalog, and {why}")
    return unanswered(db, first, why)


def sides_to_fetch(db: str | None, *args: str) -> list[str]:
    """The Hub repos among ``args`` that the catalog lacks (what a live answer would fetch, or refuse offline)."""
    hub = [a for a in args if not is_local(a) and hub_id(a) is not None]
    if not hub or missing_catalog(db):
        return hub
    try:
        Reader(db, needs="repos").close()
    except CatalogError:  # a catalog that exists but cannot be read: its own error stands, nothing is fetched
        return []
    return [a for a in hub if in_catalog(db, a) is None]


def ensure(live: Live, args: list[str]) -> dict[str, str]:
    """Fetch the repos among ``args`` (Hub ids) that the catalog lacks; asked id -> what answers it
    (the catalog id, or a private repo's temporary directory). 0 requests for repos already held."""
    need = []
    out: dict[str, str] = {}
    for arg in args:
        held = in_catalog(live.db, arg)
        if held is not None:
            out[arg] = held
        else:
            need.append(arg)
    if need:
        ids = {arg: hub_id(arg) for arg in need}
        live.crawl(live.lookup([i for i in ids.values() if i]))
        live.compute()
        for arg, rid in ids.items():
            out[arg] = _answered_by(live, arg, rid)
    return out


def _answered_by(live: Live, arg: str, rid: str | None) -> str:
    """What answers ``arg`` after the fetch: its catalog id or a private repo's directory, else RepoNotFound."""
    if rid is None:
        raise RepoNotFound(f"{arg} is not in the catalog; give the full ORG/NAME id to fetch it from the Hub")
    canonical = live.fetch.ids.get(rid, rid)  # the Hub's spelling of the id
    if canonical in live.fetch.private:
        return str(live.fetch.private[canonical])
    held = in_catalog(live.db, canonical, any_status=True)  # written now: its status is the answer
    if held is not None:
        return held
    why = live.fetch.failed.get(canonical) or live.fetch.failed.get(rid) or "not written"
    raise RepoNotFound(f"{arg} is not on the Hub either ({why})")


def unanswered(db: str | None, first: IndexerError | None, why: str) -> IndexerError:
    """The catalog's own answer (``first``: not in the catalog, did you mean) with why the Hub did not answer
    either; with no catalog at all, one line saying how to get one."""
    if missing_catalog(db):

        path = sqlite_path(resolve_url(db))
        return CatalogError(f"catalog {path} does not exist, and {why}; {PULL_HINT}, or run `indexer crawl`"
                            + missing_hint(path))
    if first is None:
        return RepoNotFound(why)
    return first.reworded(f"{first.message}; {why}")


def _fetched(live: Live, args: list[str], first: IndexerError | None) -> dict[str, str]:
    """``ensure``, its failures worded with the catalog's own answer."""
    try:
        return ensure(live, args)
    except HubUnreachable as e:
        raise unanswered(live.db, first, f"the Hub could not be asked ({e})") from None
    except RepoNotFound as e:
        raise unanswered(live.db, first, e.message) from None


def live_check(target: str, draft: str, *, db: str | None = None, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
               offline_flag: bool = False, endpoint: str | None = None,
               first: IndexerError | None = None, releases: dict | None = None) -> tuple[dict, dict]:
    """``indexer check`` for sides the catalog lacks: fetched first (unless offline); (result, live report).
    ``first``: the catalog's own answer, kept in the words when the Hub cannot answer either."""
    hub_sides = sides_to_fetch(db, target, draft)
    if not hub_sides:
        return check(target, draft, db=db, max_file_bytes=max_file_bytes, releases=releases), {}
    if offline(offline_flag):
        raise offline_refusal(db, hub_sides, first)
    live = Live(db, endpoint=endpoint, max_file_bytes=max_file_bytes)
    try:
        answered = _fetched(live, hub_sides, first)
        report = _report(live)
        if not live.fetch.private:
            return check(target, draft, db=db, max_file_bytes=max_file_bytes, releases=releases), report
        return _check_private(target, draft, answered, db, max_file_bytes, releases), report
    finally:
        live.close()


def _check_private(target: str, draft: str, answered: dict, db, max_file_bytes, releases=None) -> dict:
    """A check with a private side: that side read from its temporary directory, named by its repo id."""
    catalog = _CheckCatalog(db)
    try:
        sides = []
        for role, arg in (("target", target), ("draft", draft)):
            use = answered.get(arg, arg)
            try:
                reader = None if is_local(use) else catalog.get()
                side = resolve_side(use, db=db, max_file_bytes=max_file_bytes, reader=reader)
            except IndexerError as e:
                raise e.reworded(f"{role} {arg}: {e.message}") from None
            sides.append(replace(side, name=arg) if use != arg else side)
        target_side, draft_side = sides
        return check_pair(target_side, draft_side, releases)
    finally:
        catalog.close()


def live_query(target: str, *, db: str | None = None, engine: str | None, limit: int = 10, near_misses: bool = False,
               all_members: bool = False, method: str = "draft", offline_flag: bool = False, discover: bool = False,
               budget: int = DEFAULT_BUDGET, endpoint: str | None = None, progress: bool | None = None,
               first: IndexerError | None = None, speed=None, release: str | None = None) -> dict:
    """``indexer query`` for a target the catalog lacks (fetched), or with ``--live`` (drafts discovered too).
    ``first``: the catalog's own answer, kept in the words when the Hub cannot answer either."""
    held = None if is_local(target) else in_catalog(db, target)
    rid = None if is_local(target) else hub_id(target) or held  # a bare name the catalog knows: its full id
    if rid is None or offline(offline_flag) or (held is not None and not discover):
        if rid is not None and held is None and offline(offline_flag):
            raise offline_refusal(db, [target], first)
        result = run_query(target, engine=engine, limit=limit, near_misses=near_misses, all_members=all_members,
                           db=db, method=method, speed=speed, release=release)
        if discover and (offline(offline_flag) or is_local(target)):
            why = "a local target" if is_local(target) else "offline"
            result["live"] = {"note": f"{why}: no candidate drafts were looked for on the Hub"}
        return result
    live = Live(db, endpoint=endpoint)
    try:
        report: dict = {}
        if discover:

            try:
                report = discover_drafts(live, held or rid, engine or DEFAULT_ENGINE, budget, progress=progress,
                                         held=held is not None)
            except HubUnreachable as e:
                raise unanswered(db, first, f"the Hub could not be asked ({e})") from None
        answered = _fetched(live, [target], first)[target]
        report = {**_report(live), **report}
        if answered in (str(p) for p in live.fetch.private.values()):
            if method != "draft":
                raise QueryError(f"{target} is private: it is answered as a local model directory, for "
                                 "--method draft only")
            result = run_query(answered, engine=engine, limit=limit, near_misses=near_misses,
                               all_members=all_members, db=db, method=method, shown=target, speed=speed,
                               release=release)
        else:
            result = run_query(answered, engine=engine, limit=limit, near_misses=near_misses,
                               all_members=all_members, db=db, method=method, speed=speed, release=release)
            if not discover and (result.get("summary") or {}).get("catalog_looked") is False:
                # The target came in alone: the catalog's "no drafts" would be silence, so look.

                try:
                    found = discover_drafts(live, answered, engine or DEFAULT_ENGINE, budget, progress=progress)
                except HubUnreachable as e:
                    raise unanswered(db, first, f"the Hub could not be asked ({e})") from None
                report = {**_report(live), **found}
                result = run_query(answered, engine=engine, limit=limit, near_misses=near_misses,
                                   all_members=all_members, db=db, method=method, speed=speed, release=release)
        result["live"] = report
        return result
    finally:
        live.close()


def _report(live: Live) -> dict:
    c = live.client.counts()
    out = {"fetched": sorted(live.fetch.written), "private": sorted(live.fetch.private),
           "failed": dict(sorted(live.fetch.failed.items())), "api_calls": c["api_calls"],
           "downloads": c["resolver_calls"], "requests": c["api_calls"] + c["resolver_calls"]}
    if live.fetch.compute is not None:
        out["compute_seconds"] = live.fetch.compute["seconds"]
    return out


def render_live(report: dict) -> str:
    """The live part of an answer in words (stderr: stdout stays the answer's own)."""
    if not report:
        return ""
    if report.get("note"):
        return f"live: {report['note']}"
    lines = []
    fetched = report.get("fetched") or []
    if fetched or report.get("private"):
        lines.append(f"live: fetched {len(fetched)} repo(s) into the catalog"
                     + (f" ({', '.join(fetched[:5])}{', ...' if len(fetched) > 5 else ''})" if fetched else "")
                     + (f"; {len(report['private'])} private repo(s) read apart, not stored" if report.get("private")
                        else "")
                     + f"; {report['api_calls']} API call(s), {report['downloads']} download(s)")
    for rid, why in list((report.get("failed") or {}).items())[:5]:
        lines.append(f"live: {rid}: {why}")
    for line in report.get("discovery_lines") or ():
        lines.append(f"live: {line}")
    return "\n".join(lines)


def say(report: dict) -> None:
    """Print :func:`render_live` to stderr when there is something to say."""
    text = render_live(report)
    if text:
        print(text, file=sys.stderr)
