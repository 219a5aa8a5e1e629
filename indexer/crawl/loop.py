"""The crawl loop (docs/architecture.md): list → (unchanged? stop) → resolve → fetch new blobs → fingerprint → row.

Three parts along the data flow:

* the loop (this module): the queue left by the previous run first, then the listings of the scope,
  scheduling onto the fetch workers, the run's bookkeeping and its budget;
* the fetch side (``fetch.Fetcher``): resolve and download on worker threads, no database;
* the writer side (``writer.CatalogWriter``): one transaction per repo on this thread.

A repo whose listed sha equals the catalog's (and whose row is neither ``error`` nor ``gone``) costs
nothing beyond its listing page, unless ``full``. Scopes are listed by ``listing.ScopeListing``: newest
modified first, down to the scope's high-water mark, resumable where a listing failed part-way; only a
listing read to its end marks the scope's rows it no longer returned ``gone``. Private repos (listed only
with a token) are never written. Gated repos whose blobs are not all held wait in ``blob_waits``; the end
of every run settles those whose blobs public copies have brought since, with zero requests.

Time-boxed runs (``max_minutes``, ``max_api_calls``) stop starting repos when the budget is spent,
queue the listed repos still unresolved in ``crawl_queue`` (the next run starts with them), and end
as ``partial``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

from huggingface_hub.errors import RepositoryNotFoundError
from sqlalchemy import select
from tqdm import tqdm

from ..catalog.blobstore import BlobStore
from ..catalog.db import (
    immediate_transactions,
    is_write_conflict,
    open_catalog,
    resolve_url,
    session_factory,
    sqlite_path,
)
from ..catalog.models import BlobWait, CrawlQueue, CrawlRun, FileSet, Repo, ScopeCursor
from ..catalog.tokenstore import TokenStore, default_root
from ..errors import CrawlFailed, CrawlInterrupted
from ..hub.client import BudgetExhausted, HubClient, HubUnreachable, Listed
from ..vocab.tokenbox import FAILED
from .claims import claim, run_alive
from .families import find_family, load_families
from .fetch import Entry, Fetched, Fetcher, describe, early_status
from .listing import ScopeListing
from .options import CrawlOptions, Scope, scopes
from .runrecord import RunRecord
from .writefail import WriteFailed, storage_failure
from .writer import CatalogWriter, file_set_key, now_utc

__all__ = ["CrawlFailed", "CrawlInterrupted", "CrawlOptions", "Crawler", "crawl", "file_set_key"]

# --max-minutes is a hard box: work still in flight this long after the deadline is abandoned (and queued).
ABANDON_AFTER_SECONDS = 5.0


def catalog_dir(db: str | None) -> Path:
    """Where blobs and the cache go by default: beside a SQLite catalog, else ``data/``."""
    path = sqlite_path(resolve_url(db))
    return path.parent if path is not None else Path("data")


class Crawler(RunRecord):
    """One crawl run: its queue and listings, the fetch workers, the writer, and the budget."""

    def __init__(self, db: str | None, options: CrawlOptions, *, client: HubClient | None = None,
                 progress=None, engine=None, listed: list[Listed] | None = None, resume: bool = True):
        self.db = db
        self.opt = options
        self.listed = list(listed or ())  # repos a caller has already listed (live answers): no model_info
        self.resume = resume  # start with the previous run's queue (a live answer fetches only what it asks)
        self.families = load_families()
        for name in options.families:
            if find_family(name, self.families) is None:
                raise ValueError(f"unknown family {name!r} (see indexer/data/families.toml or $INDEXER_FAMILIES)")
        if engine is None:
            engine = open_catalog(db, create=True)  # a first crawl creates the catalog
            immediate_transactions(engine)  # concurrent crawls wait for each other's repo transactions
        self.engine = engine
        self.Session = session_factory(self.engine)
        base = catalog_dir(db)
        self.store = BlobStore(Path(options.blob_dir) if options.blob_dir else base / "blobs")
        cache = Path(options.cache_dir) if options.cache_dir else base / "cache"
        self.client = client or HubClient(
            options.endpoint,
            token=options.token,
            scratch_dir=cache,
            api_budget=options.api_budget,
            resolver_budget=options.resolver_budget,
            retries=options.retries,
            base_delay=options.base_delay,
            read_timeout=options.read_timeout,
            call_timeout=options.call_timeout,
        )
        self._own_client = client is None
        self.progress = progress
        self.counts = {"listed": 0, "resumed": 0, "unchanged": 0, "new": 0, "changed": 0, "failed": 0,
                       "gone": 0, "private": 0, "unresolved": 0, "elsewhere": 0, "settled": 0, "from_copies": 0}
        self.statuses: dict[str, int] = {}
        self.errors: list[dict] = []
        self.listing_failures = 0
        self.scopes_listed = 0
        self.stopped: str | None = None  # why the budget stopped the run
        self.run_id: int | None = None
        self._started = 0.0
        self._seen: set[str] = set()
        self._queued: set[str] = set()
        self._public_models: set[str] = set()  # --model ids model_info showed public: only these are named
        self._leftover: list[Listed] = []
        self._abandoned = False
        self._listings: list[ScopeListing] = []
        self._written_gated: set[str] = set()
        self._gated_listed: dict[str, Listed] = {}  # this run's listing of gated repos (fresher than a wait's)

        self.writer = CatalogWriter(self.store, TokenStore(default_root(db)), self.families, options.max_file_bytes)
        self.fetcher = Fetcher(self.client, self.store, options.max_file_bytes, gguf_known=self._gguf_known())

    def _gguf_known(self) -> set[str]:
        """file_sets keys without a tokenizer: GGUF files already read (by LFS sha256) among failed sets."""
        with self.Session() as session:
            return set(session.scalars(select(FileSet.key).where(FileSet.tokenizer_id.is_(None))))

    # -- budget ------------------------------------------------------------------------------------
    def _deadline(self) -> float | None:
        return self._started + self.opt.max_minutes * 60 if self.opt.max_minutes else None

    def _budget_spent(self) -> bool:
        if self.stopped:
            return True
        deadline = self._deadline()
        if deadline is not None and time.monotonic() >= deadline:
            self.stopped = f"--max-minutes {self.opt.max_minutes:g} reached"
        elif self.opt.max_api_calls is not None and self.client.api_calls >= self.opt.max_api_calls:
            self.stopped = f"--max-api-calls {self.opt.max_api_calls} reached"
        return self.stopped is not None

    # -- what to crawl -----------------------------------------------------------------------------
    def scopes(self) -> list[Scope]:
        """This crawl's listing calls (``options.scopes``)."""
        return scopes(self.opt, self.families)

    def _items(self, session) -> Iterator[tuple[Listed, bool]]:
        """(item, queued) pairs: the previous run's unresolved repos first, then every scope."""
        o = self.opt
        n = 0
        now = now_utc()
        busy = {r.id for r in session.scalars(select(CrawlRun).where(CrawlRun.status == "running"))
                if r.id != self.run_id and run_alive(r, now)}  # their claims are theirs to finish
        queue = session.scalars(select(CrawlQueue).order_by(CrawlQueue.queued_at, CrawlQueue.repo_id)).all()
        for q in queue if self.resume else ():
            item = Listed.from_json(q.item)
            if item.id in self._seen or q.crawl_run_id in busy:
                continue
            self._seen.add(item.id)
            self._queued.add(item.id)
            self.counts["resumed"] += 1
            yield item, True
        for item in self.listed:
            if item.id not in self._seen:
                self._seen.add(item.id)
                n += 1
                yield item, False
        for model_id in o.models:
            if o.limit and n >= o.limit:
                return
            try:
                item = self.client.model_info(model_id)
            except BudgetExhausted:
                self.stopped = self.stopped or "budget spent"
                return
            except HubUnreachable:
                raise
            except Exception as e:  # a typo'd or vanished id: reported, no row
                self._gone_by_id(session, model_id, e)
                self._record_error(model_id, f"model_info failed: {describe(e)}")
                self.counts["failed"] += 1
                continue
            if not item.private:
                self._public_models.add(model_id)
            if item.id not in self._seen:
                self._seen.add(item.id)
                n += 1
                yield item, False
        for scope in self.scopes():
            if o.limit and n >= o.limit:
                return
            listing = ScopeListing(scope.label, scope.kwargs, self.client, session.get(ScopeCursor, scope.label),
                                   full=o.full_listing)
            self._listings.append(listing)
            try:
                for item in listing.items():
                    if item.id in self._seen:
                        continue
                    self._seen.add(item.id)
                    n += 1
                    yield item, False
                    if o.limit and n >= o.limit:
                        return
            except BudgetExhausted as e:  # the page's URL is kept (listing.save): the next run reads on from it
                self.stopped = self.stopped or f"budget spent while listing: {e}"
                self._record_error(None, f"listing {scope.label} stopped: {e}")
                return
            except HubUnreachable:
                raise
            for error in listing.errors:  # e.g. a 504 after the retries: the other scopes go on
                self._record_error(None, error)
            if listing.errors:
                self.listing_failures += 1
                continue
            self.scopes_listed += 1
            if listing.saw_everything:  # only a listing read to its end proves a repo gone
                self._mark_gone(session, scope, listing.ids)

    def _save_listings(self, session) -> None:
        """Each scope's high-water mark and unfinished places (not for --limit: a deliberately cut listing)."""
        if self.opt.limit:
            return
        now = now_utc()
        for attempt in range(3):
            try:
                for listing in self._listings:
                    listing.save(session, now)
                session.commit()
                return
            except Exception as e:  # another crawl of the same scope saved its cursor first: merge into it
                session.rollback()
                if not is_write_conflict(e) or attempt == 2:
                    raise
                for listing in self._listings:
                    listing.cursor = None  # read the row the other crawl committed

    def _mark_gone(self, session, scope: Scope, listed: set[str]) -> None:
        """After a complete listing: rows of the scope it no longer returned are ``gone``."""
        stale = [r for r in session.scalars(scope.rows()).all() if r.repo_id not in listed]
        if stale:
            self.writer.mark_gone(session, stale, f"not listed by {scope.label} (run {self.run_id})", self.run_id)
            self.counts["gone"] += len(stale)

    def _gone_by_id(self, session, repo_id: str, exc) -> None:
        if isinstance(exc, RepositoryNotFoundError):
            row = session.execute(select(Repo).where(Repo.repo_id == repo_id)).scalar_one_or_none()
            if row is not None and row.status != "gone":
                self.writer.mark_gone(session, [row], "repository not found", self.run_id)
                self.counts["gone"] += 1

    # -- main loop ---------------------------------------------------------------------------------
    def run(self) -> dict:
        """Crawl the queue and the scope to the end or the budget; the summary, or CrawlFailed/CrawlInterrupted."""
        self._started = time.monotonic()
        deadline = self._deadline()
        self.client.set_budget(deadline=deadline, max_api_calls=self.opt.max_api_calls)
        self._start_run()
        workers = max(1, self.opt.workers)
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="crawl")
        pending: dict[Future, tuple] = {}
        status = "ok"
        failure = None
        try:
            with self.Session() as session:
                for item, queued in self._items(session):
                    if self._budget_spent():
                        self._leftover.append(item)
                        break
                    if not queued and not item.private:  # a private repo is counted as private only
                        self.counts["listed"] += 1
                    job = self._triage(session, item, queued)
                    if job is not None:
                        pending[pool.submit(self.fetcher.fetch, item)] = job
                    while len(pending) >= workers * 16:  # keep resolving while this thread fingerprints
                        self._drain(session, pending, block=True)
                    self._drain(session, pending, block=False)
                    if (self.counts["listed"] + self.counts["resumed"]) % 200 == 0:
                        self._save_run(session, "running")
                while pending:
                    self._drain(session, pending, block=True)
                for repo_id, reason in self.writer.wait_for_counts(session):  # compute reads them next
                    self._record_error(repo_id, f"{FAILED}: {reason}")
                self._settle_waits(session)
                self.writer.refresh_gated_notes(session)
                self._save_listings(session)
                if self._leftover:
                    self.writer.queue(session, self._leftover, self.run_id)
                self.counts["unresolved"] = len(self._leftover)
        except KeyboardInterrupt:
            status = "interrupted"
            self.client.guard.cancel()  # requests not yet sent are dropped; stalled ones are abandoned
        except HubUnreachable as e:  # nothing can succeed: stop now, in one line
            status, failure = "failed", str(e)
            self._record_error(None, failure)
        except Exception as e:  # a failed write (disk full, I/O, read-only) or a bug: the run fails
            status = "failed"
            failure = storage_failure(e) or f"{type(e).__name__}: {str(e)[:500]}"
            self._record_error(None, failure)
        finally:
            for fut in pending:
                fut.cancel()
            # In-flight requests end by their call's deadline; an interrupted, failed or time-boxed run whose
            # work was abandoned does not wait for them.
            pool.shutdown(wait=status == "ok" and not self._abandoned, cancel_futures=True)
            if status == "ok":
                status, failure = self._final_status()
            self._save_final(status)
            if self._own_client:
                self.client.close()
            self.writer.close(wait=status not in ("interrupted", "failed"))
        summary = self.summary(status)
        if status == "interrupted":
            raise CrawlInterrupted(summary)
        if status == "failed":
            raise CrawlFailed(failure or "crawl failed", summary)
        return summary

    def _final_status(self) -> tuple[str, str | None]:
        scopes = len(self.scopes())
        if scopes and self.listing_failures == scopes and not self.counts["resumed"]:
            return "failed", "every listing failed: " + (self.errors[-1]["reason"] if self.errors else "")
        resolved = self.counts["unchanged"] + sum(n for s, n in self.statuses.items() if s != "error")
        if resolved == 0 and self.counts["failed"] > 0:
            first = next((e for e in self.errors if e["repo"]), self.errors[0] if self.errors else {})
            which = f"{first['repo']}: " if first.get("repo") else ""
            return "failed", f"nothing resolved, every repo failed (first: {which}{first.get('reason')})"
        if self.stopped or self.listing_failures or self.counts["unresolved"]:
            return "partial", None
        return "ok", None

    def _drain(self, session, pending: dict, block: bool) -> None:
        if not pending:
            return
        done, _ = wait(list(pending), timeout=self._block_seconds() if block else 0, return_when=FIRST_COMPLETED)
        if block and not done:  # the run's time is up and these are still in flight: leave them for next run
            self._abandon(pending)
            return
        for fut in done:
            item, existing_pk, kind, queued = pending.pop(fut)
            try:
                fetched = fut.result()
            except (HubUnreachable, WriteFailed):
                raise
            except Exception as e:  # a bug in a worker must not kill the crawl
                fetched = Fetched("error", f"internal: {describe(e)}")
            if fetched.deferred:
                self.stopped = self.stopped or "budget spent"
                self._leftover.append(item)
                continue
            self._finish(session, item, existing_pk, kind, fetched, queued)

    def _block_seconds(self) -> float | None:
        deadline = self._deadline()
        return None if deadline is None else max(0.0, deadline + ABANDON_AFTER_SECONDS - time.monotonic())

    def _abandon(self, pending: dict) -> None:
        """--max-minutes is a hard box: repos still being fetched are queued for the next run, not waited for."""
        self.stopped = self.stopped or f"--max-minutes {self.opt.max_minutes:g} reached"
        self._abandoned = True
        for fut, (item, *_rest) in list(pending.items()):
            fut.cancel()
            self._leftover.append(item)
        pending.clear()

    def _triage(self, session, item: Listed, queued: bool):
        """Unchanged → bookkeeping only; decided without the Hub → row now; else a worker job."""
        row = session.execute(select(Repo).where(Repo.repo_id == item.id)).scalar_one_or_none()
        if item.private:  # listed because a token is set: a public catalog never holds it
            self.counts["private"] += 1
            if row is not None and row.status != "gone":
                self.writer.mark_gone(session, [row], "private on the Hub", self.run_id)
                self.counts["gone"] += 1
            if queued:
                self.writer.dequeue(session, item.id)
            self._tick()
            return None
        if item.gated:
            self._gated_listed[item.id] = item
        if (row is not None and not self.opt.full and item.sha and row.sha == item.sha
                and row.status not in ("error", "gone") and not self._unsettled_gate(session, row, item)):
            self.counts["unchanged"] += 1
            self.writer.touch_unchanged(session, row, item, self.run_id, queued)
            self._tick()
            return None
        kind = "new" if row is None else "changed"
        pk = row.id if row is not None else None
        early = early_status(item, self.client.has_token)
        if early is not None:
            self._finish(session, item, pk, kind, early, queued)
            return None
        seen = (row.sha, row.status) if row is not None else None
        assert self.run_id is not None  # the run's row is written before any repo
        if not claim(session, self.writer.transaction, item, self.run_id, now_utc(), seen):
            self.counts["elsewhere"] += 1  # another live crawl is fetching it, or has just written it
            self._tick()
            return None
        return item, pk, kind, True  # claimed: the queue row goes when the repo is written

    @staticmethod
    def _unsettled_gate(session, row: Repo, item: Listed) -> bool:
        """A gated row with no wait for its blobs (written before waits existed): resolve it once more."""
        return bool(row.status == "gated" and item.gated
                    and session.get(BlobWait, row.repo_id) is None)

    def _settle_waits(self, session) -> None:
        """Gated repos whose missing blobs public copies have brought since (this run or an earlier one):
        fingerprinted from the store with zero requests, without waiting for a new commit."""
        for wait_row in session.scalars(select(BlobWait).order_by(BlobWait.repo_id)).all():
            entries = {name: Entry(name, blob, int(size or 0), lfs)
                       for name, (blob, size, lfs) in wait_row.entries.items()}
            if not all(self.store.has(e.blob_id) for e in entries.values()):
                continue
            item = self._gated_listed.get(wait_row.repo_id) or Listed.from_json(wait_row.item)
            if item.sha != wait_row.sha:
                continue  # a newer commit: resolved (or queued) by the listing's own path
            pk = session.scalar(select(Repo.id).where(Repo.repo_id == item.id))
            self.counts["settled"] += 1
            kind = None  # written as gated earlier in this run: counted then
            if item.id in self._written_gated:
                self.statuses["gated"] -= 1
            else:
                kind = "changed" if pk else "new"
            self._finish(session, item, pk, kind, Fetched(entries=entries, from_copies=""), False)

    def _finish(self, session, item, existing_pk, kind, fetched: Fetched, queued: bool) -> None:
        status, reason = self.writer.write(session, item, existing_pk, fetched, self.run_id, queued)
        if status == "ok" and fetched.from_copies is not None:
            self.counts["from_copies"] += 1
        if status == "gated":
            self._written_gated.add(item.id)
        if kind is not None:
            self.counts[kind] += 1
        self.statuses[status] = self.statuses.get(status, 0) + 1
        if status == "error":
            self.counts["failed"] += 1
            self._record_error(item.id, reason)
        self._tick()


def crawl(db: str | None, options: CrawlOptions, *, progress: bool | None = None) -> dict:
    """Run one crawl; a tqdm bar on stderr unless quiet or stderr is not a terminal."""
    show = (not options.quiet and sys.stderr.isatty()) if progress is None else progress
    bar = None
    if show:
        bar = tqdm(total=options.limit, unit="repo", file=sys.stderr, dynamic_ncols=True)
    try:
        return Crawler(db, options, progress=bar).run()
    finally:
        if bar is not None:
            bar.close()

