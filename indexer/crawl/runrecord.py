"""A crawl run's record: its ``crawl_runs`` row (started, saved as it goes, finished; a dead run's row marked
interrupted), the errors it keeps, the progress bar and the summary it returns. The base of ``loop.Crawler``,
whose counts, client, writer and fetcher it reports.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import select, update

from ..catalog.models import CrawlRun
from .claims import owner_tag, run_alive
from .writefail import storage_failure
from .writer import now_utc

MAX_RUN_ERRORS = 200


class RunRecord:
    """What a run records about itself (mixed into ``Crawler``, which holds the state it reads)."""

    # Set by the class this is mixed into (declared here for the type checker).
    Session: Any
    _listings: Any
    _public_models: set[str]
    _started: Any
    client: Any
    counts: Any
    errors: Any
    fetcher: Any
    opt: Any
    progress: Any
    run_id: int | None
    statuses: Any
    stopped: Any
    writer: Any

    def _start_run(self) -> None:
        with self.Session() as session:
            # A run still "running" whose process is gone was killed: nothing else can finish it.
            now = now_utc()
            dead = [r.id for r in session.scalars(select(CrawlRun).where(CrawlRun.status == "running"))
                    if not run_alive(r, now)]
            if dead:
                session.execute(update(CrawlRun).where(CrawlRun.id.in_(dead)).values(status="interrupted"))
            run = CrawlRun(started_at=now, status="running", scope=self._scope(), errors=[], owner=owner_tag())
            session.add(run)
            session.commit()
            self.run_id = run.id

    def _scope(self) -> str:
        """The run's scope as recorded: a ``--model`` id is named once model_info has shown it public, so a
        private repo's id (crawled with a token) never enters the catalog, and so never a published one."""
        return self.opt.scope(public=self._public_models)

    def _save_final(self, status: str) -> None:
        """Record how the run ended; when even that write fails, the next run marks it interrupted."""
        try:
            with self.Session() as session:
                self._save_run(session, status, final=True)
        except Exception as e:  # noqa: BLE001 - the run's own failure is what gets reported
            if storage_failure(e) is None:
                raise

    def _save_run(self, session, status: str, final: bool = False) -> None:
        run = session.get(CrawlRun, self.run_id)
        c = self.client.counts()
        for k in ("listed", "unchanged", "new", "changed", "failed", "unresolved"):
            setattr(run, k, self.counts[k])
        run.api_calls, run.resolver_calls = c["api_calls"], c["resolver_calls"]
        run.bytes_downloaded = c["bytes_downloaded"]
        run.rate_limited = sum(c["rate_limited"].values())
        run.errors = list(self.errors)
        run.scope = self._scope()
        run.status = status
        if final:
            run.finished_at = now_utc()
        session.commit()

    def _record_error(self, repo_id, reason) -> None:
        if len(self.errors) < MAX_RUN_ERRORS:
            self.errors.append({"repo": repo_id, "reason": reason})

    def _tick(self) -> None:
        if self.progress is not None:
            self.progress.update(1)
            c = self.client.counts()
            self.progress.set_postfix(new=self.counts["new"], changed=self.counts["changed"],
                                      failed=self.counts["failed"], api=c["api_calls"], refresh=False)

    def summary(self, status: str) -> dict:
        """What the run did, as ``indexer crawl --json`` prints it and the nightly report keeps it."""
        c = self.client.counts()
        elapsed = time.monotonic() - self._started
        return {
            "run_id": self.run_id,
            "status": status,
            "scope": self._scope(),
            **self.counts,
            "stopped": self.stopped,
            "statuses": dict(sorted(self.statuses.items())),
            "api_calls": c["api_calls"],
            "list_calls": c["list_calls"],
            "resolver_calls": c["resolver_calls"],
            "bytes_downloaded": c["bytes_downloaded"],
            "client_retries": c["retries"],
            "rate_limited": c["rate_limited"],
            "quota": c["quota"],
            "pacing_wait_seconds": c["pacing_wait_seconds"],
            "file_sets_fingerprinted": self.writer.fingerprinted,
            "gguf": self.fetcher.gguf.stats(),
            "scopes": {x.label: x.report() for x in self._listings},
            "seconds": round(elapsed, 3),
            "errors": self.errors[:20],
        }
