"""Scope listings that cost what changed (docs/hub-api.md §0.1.5, §0.1.7, §0.1.13 and §0.2).

Each scope is listed with ``sort=lastModified``: the Hub sorts descending and pages by keyset on
(lastModified, ``_id``), so a listing read over hours neither skips nor repeats repos. A pass stops at the
scope's high-water mark (the newest lastModified its last pass saw) less ``LISTING_MARGIN``: a night with
nothing new costs one page per scope.

A pass that fails part-way (the Hub answers 504 on deep filtered listings, huggingface_hub #2460, after the
page's own retries) or that the run's budget stops keeps its place: ``{"url": the page to read next,
"floor": where it would have stopped}`` is saved in ``scope_cursors.resumes`` and the next run reads on from
there after its own head pass. Only a pass that reads to the end of the listing has seen every repo of the
scope, so only such a pass may mark rows ``gone`` (``--full-listing`` forces one: the weekly job).

A scope keeps only model repos that can hold a causal LM: pipeline ``text-generation``,
``image-text-to-text`` or none (then not a library that never holds one). How many it listed and kept is
reported per scope.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ..catalog.models import ScopeCursor
from ..errors import Cancelled, HubUnreachable
from ..hub.client import BudgetExhausted, HubClient, Listed
from .fetch import describe

LISTING_MARGIN = timedelta(hours=1)  # the Hub's listing index may lag a commit by minutes
CAUSAL_LM_PIPELINES = ("text-generation", "image-text-to-text")
# Libraries whose repos hold no causal LM (they tag no text-generation pipeline either)
NON_LM_LIBRARIES = frozenset({
    "diffusers", "sentence-transformers", "timm", "open_clip", "speechbrain", "pyannote-audio", "espnet",
    "stable-baselines3", "ml-agents", "sample-factory", "setfit", "span-marker", "flair", "paddleocr",
})


def keeps(item: Listed) -> bool:
    """Whether a listed repo can hold a causal LM (decided from the listing alone, no request)."""
    if item.pipeline_tag:
        return item.pipeline_tag in CAUSAL_LM_PIPELINES
    return item.library_name not in NON_LM_LIBRARIES


def _when(value) -> datetime | None:
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value) if value else None


@dataclass
class Pass:
    """One walk down the listing: from ``url`` (None: the first page) until ``floor`` (None: the end)."""

    url: str | None
    floor: datetime | None
    head: bool = False  # starts at the first page: its first item is the scope's new high-water mark
    started: bool = False
    done: bool = False
    to_end: bool = False  # read to the last page, not stopped at the floor


@dataclass
class ScopeListing:
    """One scope's listing for this run: its passes from the saved cursor, what they listed and kept."""

    label: str
    kwargs: dict
    client: HubClient
    cursor: ScopeCursor | None = None
    full: bool = False  # --full-listing: ignore the high-water mark, walk to the end
    listed: int = 0
    kept: int = 0
    pages: int = 0
    top: datetime | None = None
    ids: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    passes: list[Pass] = field(default_factory=list)

    def __post_init__(self):
        hw = self.cursor.high_water if self.cursor is not None else None
        floor = None if self.full or hw is None else hw - LISTING_MARGIN
        self.passes = [Pass(None, floor, head=True)]
        if not self.full:  # a full walk covers every hole a failed pass left
            for r in (self.cursor.resumes if self.cursor is not None else None) or ():
                self.passes.append(Pass(r["url"], _when(r.get("floor"))))

    @property
    def complete(self) -> bool:
        """Every pass done: nothing of the scope is left unread below the high-water mark."""
        return all(p.done for p in self.passes)

    @property
    def saw_everything(self) -> bool:
        """The head pass read to the end: every repo of the scope was listed (rows not listed are gone)."""
        return self.passes[0].to_end

    def items(self) -> Iterator[Listed]:
        """The kept repos of every pass; a failing pass is recorded in ``errors`` and the next one goes on."""
        for p in self.passes:
            try:
                yield from self._walk(p)
            except (BudgetExhausted, HubUnreachable, Cancelled):
                raise  # the run stops (budget) or cannot go on (no Hub, a signal)
            except Exception as e:  # e.g. a 504 after the retries: the place is kept for the next run
                self.errors.append(f"listing {self.label} failed: {describe(e)}")

    def _walk(self, p: Pass) -> Iterator[Listed]:
        url: str | None = p.url or self.client.listing_url(**self.kwargs)
        while url:
            p.url, p.started = url, True  # until the page is read to its end, a resume re-reads it
            items, next_url = self.client.list_page(url)
            self.pages += 1
            for item in items:
                when = _when(item.last_modified)
                # A private repo (listed because a token is set) leaves no trace in what is published: neither
                # the high-water mark (its last change) nor the count of listed repos.
                if p.head and when is not None and not item.private and (self.top is None or when > self.top):
                    self.top = when
                if p.floor is not None and when is not None and when < p.floor:
                    p.done = True
                    return
                self.listed += not item.private
                self.ids.add(item.id)
                if keeps(item):
                    self.kept += 1
                    yield item
            url = next_url
        p.url, p.done, p.to_end = None, True, True

    def save(self, session, now: datetime) -> None:
        """Persist the high-water mark and the places of passes left unfinished (the caller commits)."""
        row = self.cursor or session.get(ScopeCursor, self.label)
        if row is None:
            row = ScopeCursor(scope=self.label, resumes=[])
            session.add(row)
        if self.top is not None and (row.high_water is None or self.top > row.high_water):
            row.high_water = self.top
        resumes = []
        for p in self.passes:
            if p.done or (p.head and self.top is None):
                continue  # done, or a head pass that read nothing: the next head pass redoes it
            if p.started or not p.head:
                resumes.append({"url": p.url, "floor": p.floor.isoformat() if p.floor else None})
        row.resumes = resumes
        if self.saw_everything:
            row.full_at = now
        row.updated_at = now

    def report(self) -> dict:
        """The scope's counts for the run record and ``indexer crawl --json``."""
        return {"listed": self.listed, "kept": self.kept, "pages": self.pages, "complete": self.complete,
                "saw_everything": self.saw_everything}
