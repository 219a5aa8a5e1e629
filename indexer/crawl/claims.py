"""Concurrent crawls on one catalog split the work instead of both fetching it.

Before a crawl fetches a repo it *claims* it: a ``crawl_queue`` row carrying its run id, written in one
transaction (``BEGIN IMMEDIATE`` on SQLite; ``SELECT ... FOR UPDATE`` and the primary key on PostgreSQL).
A repo claimed by another crawl that is still alive is skipped; the claim goes when the repo is written.
A claim of a crawl that died (kill -9) stays in the queue, and the next run resumes it like any
queued repo. A crawl is alive while its run is ``running`` and its owner process exists.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from sqlalchemy import select

from ..catalog.db import is_write_conflict
from ..catalog.models import CrawlQueue, CrawlRun, Repo

# A crawl on another host cannot be checked: its run counts as alive this long after it started.
REMOTE_RUN_HOURS = 6


def owner_tag() -> str:
    """``host:pid`` of this process: what another crawl checks to tell whether our run is alive."""
    return f"{socket.gethostname()}:{os.getpid()}"


def run_alive(run: CrawlRun | None, now: datetime) -> bool:
    """Whether a run still holds its claims: running, and its process exists (or, on another host, young)."""
    if run is None or run.status != "running" or not run.owner:
        return False
    host, _, pid = run.owner.rpartition(":")
    if host != socket.gethostname():
        return run.started_at is not None and now - run.started_at < timedelta(hours=REMOTE_RUN_HOURS)
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


class _DoneElsewhere(Exception):
    """Raised inside the claim's transaction to roll it back: another crawl wrote the repo meanwhile."""


def claim(session, transaction, item, run_id: int, now: datetime, seen: tuple | None = None) -> bool:
    """Claim ``item`` (a ``hub.Listed``) for run ``run_id``; False when another live crawl holds it, or
    wrote it since this crawl looked (``seen``: the repo row's (sha, status) then, None when absent).

    ``transaction`` is the writer's per-repo transaction context (commit or roll back).
    """
    try:
        with transaction(session):
            row = session.execute(select(CrawlQueue).where(CrawlQueue.repo_id == item.id).with_for_update()
                                  .execution_options(populate_existing=True)).scalar_one_or_none()
            if row is not None and row.crawl_run_id not in (None, run_id):
                other = session.get(CrawlRun, row.crawl_run_id, populate_existing=True)
                if run_alive(other, now):
                    return False
            if row is None:
                session.add(CrawlQueue(repo_id=item.id, item=item.to_json(), queued_at=now, crawl_run_id=run_id))
            else:
                row.crawl_run_id, row.item = run_id, item.to_json()
            session.flush()  # waits for a crawl that is writing this repo now (its claim row is locked)
            # Checked after the claim row is ours: a crawl that wrote the repo has committed by now.
            current = session.execute(select(Repo.sha, Repo.status).where(Repo.repo_id == item.id)
                                      .execution_options(populate_existing=True)).one_or_none()
            if (current is not None and tuple(current) != seen and current.sha == item.sha
                    and current.status not in ("error", "gone")):
                raise _DoneElsewhere
    except _DoneElsewhere:
        return False
    except Exception as e:
        if is_write_conflict(e):  # another crawl inserted the claim first
            return False
        raise
    return True
