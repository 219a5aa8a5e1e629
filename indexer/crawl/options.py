"""What a crawl covers: its options (``indexer crawl``'s flags) and the listing calls (:class:`Scope`) they
make, each with the catalog rows it covers, so a listing read to its end can mark the rows it no longer
returned ``gone``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from ..catalog.models import Repo
from ..files import DEFAULT_MAX_FILE_BYTES
from ..hub import DEFAULT_CALL_SECONDS
from ..hub.listed import ALL_PIPELINES
from .families import find_family


@dataclass
class CrawlOptions:
    """``indexer crawl``'s flags as one value, so the CLI, the nightly and the demo start the same crawl."""

    families: tuple[str, ...] = ()
    author: str | None = None
    search: str | None = None
    models: tuple[str, ...] = ()
    all: bool = False
    limit: int | None = None
    full: bool = False
    full_listing: bool = False  # walk every scope to its end (finds deleted and renamed repos)
    endpoint: str | None = None
    token: str | bool | None = None
    api_budget: int | None = None  # None: learned from RateLimit-Policy, the tier's quota until then
    resolver_budget: int | None = None
    max_minutes: float | None = None
    max_api_calls: int | None = None
    workers: int = 4
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    quiet: bool = False
    retries: int = 5
    base_delay: float = 1.0
    read_timeout: float = 60.0
    call_timeout: float = DEFAULT_CALL_SECONDS  # one Hub call with all its retries (indexer/hub/guard.py)
    blob_dir: str | None = None
    cache_dir: str | None = None
    live: bool = False  # repos a live answer listed itself (indexer/answer/live.py): recorded as scope "live"
    drafts_for: str | None = None  # a `query --live` discovery's target: scope "live drafts-for=ID" (answer/summary.py)

    def scope(self, public=None) -> str:
        """The run's scope in words, as ``crawl_runs.scope`` records it. ``public``: the ``--model`` ids known to be
        public; the others are counted, not named ("model=(2 unnamed)": private, unknown to the Hub, or not asked
        yet). None names them all."""
        parts = [f"family={f}" for f in self.families]
        if self.author:
            parts.append(f"author={self.author}")
        if self.search:
            parts.append(f"search={self.search}")
        named = [m for m in self.models if public is None or m in public]
        parts += [f"model={m}" for m in named]
        if len(named) < len(self.models):
            parts.append(f"model=({len(self.models) - len(named)} unnamed)")
        if self.live:
            parts.append("live")
        if self.drafts_for:
            parts.append(f"drafts-for={self.drafts_for}")
        if self.all:
            parts.append("all")
        if self.limit:
            parts.append(f"limit={self.limit}")
        if self.full:
            parts.append("full")
        if self.full_listing:
            parts.append("full-listing")
        return " ".join(parts)


@dataclass
class Scope:
    """One listing call and the catalog rows it covers (for ``gone``)."""

    label: str
    kwargs: dict

    def rows(self):
        """The query for the catalog rows this listing covers (those it may prove gone)."""
        q = select(Repo).where(Repo.status != "gone")
        if self.kwargs.get("author"):
            q = q.where(Repo.repo_id.like(_like(self.kwargs["author"]) + "/%", escape="\\"))
        if self.kwargs.get("search"):
            q = q.where(Repo.repo_id.like("%" + _like(self.kwargs["search"]) + "%", escape="\\"))
        if self.kwargs.get("pipeline_tag"):
            q = q.where(Repo.pipeline_tag == self.kwargs["pipeline_tag"])
        return q


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def scopes(options: CrawlOptions, families) -> list[Scope]:
    """The listing calls a crawl makes, one per family author or search, ``--author``/``--search``, ``--all``."""
    o = options
    out = []
    for name in o.families:
        fam = find_family(name, families)
        if fam is None:  # Crawler checks every name first (loop.py)
            raise ValueError(f"unknown family {name!r}")
        out += [Scope(f"family={fam.name} author={a}", {"author": a}) for a in fam.authors]
        out += [Scope(f"family={fam.name} search={s}", {"search": s}) for s in fam.search]
    if o.author or o.search:
        kw = {k: v for k, v in (("author", o.author), ("search", o.search)) if v}
        out.append(Scope(" ".join(f"{k}={v}" for k, v in kw.items()), kw))
    if o.all:
        out += [Scope(f"pipeline_tag={p}", {"pipeline_tag": p}) for p in ALL_PIPELINES]
    return out
