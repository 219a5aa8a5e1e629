"""The nightly job: crawl the families incrementally, compute, check, publish, report.

Safe to kill and rerun (the crawl commits per repo; publishing renames a finished file into place) and
safe to start twice: a second run finds the lock held and exits at once with status 75 (EX_TEMPFAIL).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
import time
import traceback
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import select

from ..catalog.compute import compute
from ..catalog.db import open_catalog, resolve_url, session_factory, sqlite_path, upgrade
from ..catalog.models import ScopeCursor
from ..crawl.families import load_families
from ..crawl.loop import CrawlFailed, CrawlInterrupted, CrawlOptions, crawl
from ..errors import EXIT_FAILED, EXIT_LOCKED, LockBusy  # noqa: F401  (re-exported: the CLI imports them here)
from ..lockfile import lock_holder
from .hubpublish import publish_to_hub
from .publish import integrity_check, publish

EXIT_OK = 0
DEFAULT_PUBLISH_DIR = "data/publish"


def lock_path_for(db: str | None) -> Path:
    """``<catalog>.lock`` beside a SQLite catalog; a per-URL file in the temp dir for server databases."""
    url = resolve_url(db)
    path = sqlite_path(url)
    if path is not None:
        return path.with_name(path.name + ".lock")
    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"indexer-nightly-{digest}.lock"


@contextmanager
def exclusive_lock(path: Path):
    """fcntl.flock(LOCK_EX | LOCK_NB) on ``path``; raises LockBusy at once if another process holds it.

    The kernel drops the lock when the process dies, so a killed run never leaves a stale lock.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LockBusy(path, lock_holder(path, os.pread(fd, 200, 0).decode(errors="replace").strip())) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} since {_now()}\n".encode(), 0)
        yield path
    finally:
        os.close(fd)  # releases the flock


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _jsonable(obj):
    return json.loads(json.dumps(obj, default=str))


def run_crawl(db, endpoint, families, max_minutes=None, max_api_calls=None, request_timeout=None,
              full_listing=False) -> dict:
    """Call the crawler's library function (incremental by commit sha; quiet, no progress bar).

    A time-boxed crawl that ends ``partial`` is a success: the next night starts with what is left.
    """
    # CrawlFailed / CrawlInterrupted carry the run's counts in ``.summary`` (kept in the report).
    opts = CrawlOptions(families=tuple(families), endpoint=endpoint, quiet=True, max_minutes=max_minutes,
                        max_api_calls=max_api_calls, full_listing=full_listing)
    if request_timeout:
        opts.call_timeout = request_timeout
    return crawl(db, opts, progress=False)


def full_listing_due(db: str | None, days: float | None) -> bool:
    """Whether some scope's last complete listing is older than ``days`` (never listed: its first
    listing is complete anyway, nothing to force)."""
    if not days:
        return False

    with session_factory(open_catalog(db))() as session:
        rows = session.scalars(select(ScopeCursor.full_at)).all()
    cutoff = datetime.now(timezone.utc).replace(tzinfo=None) - timedelta(days=days)
    return any(at is None or at < cutoff for at in rows)


def nightly(
    db: str | None = None,
    families: list[str] | None = None,
    endpoint: str | None = None,
    publish_dir: str | None = DEFAULT_PUBLISH_DIR,
    report: str | None = None,
    lock_file: str | None = None,
    max_minutes: float | None = None,
    max_api_calls: int | None = None,
    request_timeout: float | None = None,
    full_listing: bool = False,
    full_listing_every: float | None = None,
    to_hub: str | None = None,
) -> dict:
    """Run every step under the lock; returns the report (``status`` "ok" or "failed").

    Raises LockBusy when another run holds the lock. ``families`` None = every family of
    indexer/data/families.toml; ``publish_dir`` None or "" = do not publish; ``to_hub`` ORG/NAME: also commit
    the catalog to that Hub dataset (``hubpublish.py``; the endpoint is the crawl's).
    """
    lock = Path(lock_file) if lock_file else lock_path_for(db)
    with exclusive_lock(lock):
        return _run(db, families, endpoint, publish_dir, report, lock, max_minutes, max_api_calls, request_timeout,
                    full_listing, full_listing_every, to_hub)


def _run(db, families, endpoint, publish_dir, report_path, lock, max_minutes=None, max_api_calls=None,
         request_timeout=None, full_listing=False, full_listing_every=None, to_hub=None) -> dict:

    started = time.perf_counter()
    if not families:
        families = [f.name for f in load_families()]
    rep: dict = {
        "status": "running",
        "started_at": _now(),
        "finished_at": None,
        "catalog": resolve_url(db),
        "lock": str(lock),
        "families": list(families),
        "endpoint": endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co",
        "steps": {},
        "error": None,
    }

    def step(name, fn):
        t0 = time.perf_counter()
        try:
            result = fn()
        except BaseException as e:
            rep["steps"][name] = {"status": "interrupted" if _interrupted(e) else "failed",
                                  "seconds": round(time.perf_counter() - t0, 3),
                                  "error": f"{type(e).__name__}: {e}"}
            if isinstance(getattr(e, "summary", None), dict):
                rep["steps"][name]["result"] = _jsonable(e.summary)
            raise
        rep["steps"][name] = {"status": "ok", "seconds": round(time.perf_counter() - t0, 3),
                              "result": _jsonable(result)}
        return result

    try:
        step("migrate", lambda: upgrade(db))
        full = full_listing or full_listing_due(db, full_listing_every)
        rep["full_listing"] = full
        crawl_result = step("crawl", lambda: run_crawl(db, endpoint, families, max_minutes, max_api_calls,
                                                             request_timeout, full))
        crawl_status = _get(crawl_result, "status")
        if crawl_status not in (None, "ok", "partial"):
            raise RuntimeError(f"crawl ended with status {crawl_status}")

        step("compute", lambda: compute(db))

        integrity = step("integrity_check", lambda: integrity_check(db))
        if integrity not in ("ok", "skipped"):
            raise RuntimeError(f"integrity_check failed: {integrity}")
        if publish_dir and sqlite_path(resolve_url(db)) is not None:

            step("publish", lambda: publish(db, publish_dir))
        else:
            why = "no --publish-dir" if not publish_dir else "not a SQLite catalog"
            rep["steps"]["publish"] = {"status": "skipped", "reason": why}
        if to_hub:

            step("publish_hub", lambda: _hub_summary(publish_to_hub(db, to_hub, endpoint=endpoint)))
        rep["status"] = "ok"
    except BaseException as e:  # a report is written for every failure, even SIGTERM / Ctrl-C
        if _interrupted(e):  # the crawl recorded its run as interrupted; nothing later ran
            rep["status"], rep["error"] = "interrupted", "interrupted by a signal"
        else:
            rep["status"] = "failed"
            rep["error"] = _reason(e)
            rep["traceback"] = traceback.format_exc(limit=8)
            if not isinstance(e, Exception):
                _finish(rep, started, report_path)
                raise
    _finish(rep, started, report_path)
    return rep


def _hub_summary(done: dict) -> dict:
    """What the report keeps of a Hub publish: where, which commit, whether anything changed (no token)."""
    m = done["manifest"]
    return {"repo": done["repo"], "status": done["status"], "commit": done["commit"],
            "bytes": m["snapshot"]["bytes"], "sha256": m["snapshot"]["sha256"]}


def _interrupted(e: BaseException) -> bool:
    return isinstance(e, (KeyboardInterrupt, CrawlInterrupted))


def _reason(e: BaseException) -> str:
    """The cause in words: the crawl's own one-line message, else the exception's."""
    if isinstance(e, CrawlFailed):
        return f"crawl failed: {e}"
    return f"{type(e).__name__}: {e}"


def _finish(rep: dict, started: float, report_path) -> None:
    rep["finished_at"] = _now()
    rep["seconds"] = round(time.perf_counter() - started, 3)
    rep["summary"] = summary_line(rep)
    if report_path:
        path = Path(report_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(rep, indent=2, default=str) + "\n", "utf-8")
        os.replace(tmp, path)


def _get(obj, key, default=None):
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def summary_line(rep: dict) -> str:
    """The nightly report in one line (status, crawl counts, compute): the report's ``summary``."""
    crawl = (rep["steps"].get("crawl") or {}).get("result") or {}
    compute = (rep["steps"].get("compute") or {}).get("result") or {}
    parts = [f"nightly {rep['status']}"]
    counts = [f"{k} {crawl[k]}" for k in ("listed", "new", "changed", "unchanged", "failed", "gone", "unresolved")
              if k in crawl]
    if crawl.get("status") == "partial":
        counts.append("partial: resumed next run")
    if counts:
        parts.append(", ".join(counts))
    if "api_calls" in crawl:
        parts.append(f"{crawl['api_calls']} API calls")
    if "repos" in compute:
        parts.append(f"{compute['repos']} ok repos classified")
    integ = rep["steps"].get("integrity_check", {}).get("result")
    if integ:
        parts.append(f"integrity {integ}")
    pub = rep["steps"].get("publish", {})
    if pub.get("status") == "ok":
        parts.append(f"published {pub['result']['outdir']}")
    hub = (rep["steps"].get("publish_hub") or {}).get("result")
    if hub:
        parts.append(f"{hub['repo']} {hub['status']} at {hub['commit'][:12]}")
    if rep.get("error"):
        parts.append(f"error: {rep['error']}")
    parts.append(f"{rep.get('seconds', 0):.1f}s")
    return "; ".join(parts)
