"""What a published catalog snapshot says about itself: its schema revision, how fresh its data is, and
whether this version of indexer can read it. ``indexer publish --to-hub`` writes these facts into the
manifest; ``indexer pull`` checks a downloaded file against them before it replaces the local catalog.

Read with the stdlib ``sqlite3`` on the file itself (read-only), so checking a staged download never opens
it through the catalog machinery that would create or migrate it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..errors import CatalogError


def known_revisions() -> list[str]:
    """The Alembic revisions this version ships, oldest first (the last one is the head)."""
    from alembic.script import ScriptDirectory

    from .migrate import alembic_config

    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return [s.revision for s in reversed(list(script.walk_revisions()))]


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)


def schema_revision(path: Path) -> str | None:
    """The Alembic revision recorded in a SQLite catalog file (None: never migrated)."""
    con = _connect(path)
    try:
        rows = con.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.OperationalError:
        return None
    finally:
        con.close()
    return rows[0][0] if rows else None


def integrity(path: Path) -> str:
    """``PRAGMA integrity_check`` of a SQLite file: "ok", or the first problems (a non-database says so)."""
    try:
        con = _connect(path)
        try:
            rows = [r[0] for r in con.execute("PRAGMA integrity_check")]
        finally:
            con.close()
    except sqlite3.DatabaseError as e:
        return str(e)
    return "ok" if rows == ["ok"] else "; ".join(rows[:3])


def freshness(path: Path) -> dict:
    """How new a catalog's data is: ``data_as_of`` (the last crawl run's end) and ``high_water`` per scope
    (the newest lastModified each scope's listing has seen), as ISO strings."""
    con = _connect(path)
    try:
        (as_of,) = con.execute("SELECT max(coalesce(finished_at, started_at)) FROM crawl_runs").fetchone()
        marks = dict(con.execute("SELECT scope, high_water FROM scope_cursors WHERE high_water IS NOT NULL "
                                 "ORDER BY scope").fetchall())
    finally:
        con.close()
    return {"data_as_of": _iso(as_of), "high_water": {k: _iso(v) for k, v in marks.items()}}


def _iso(value) -> str | None:
    """SQLite keeps DateTime as ``YYYY-MM-DD HH:MM:SS.ffffff`` (naive UTC); ISO with a ``T`` compares the same."""
    return None if value is None else str(value).replace(" ", "T")


def older_than(ours: dict, theirs: dict) -> bool:
    """Whether the data of ``ours`` (a manifest's freshness) is older than ``theirs``: their last crawl ended
    later, or some scope of theirs has seen newer repos while none of ours has. Never replace theirs then."""
    a, b = ours.get("data_as_of"), theirs.get("data_as_of")
    if a and b and a != b:
        return a < b
    mine, other = ours.get("high_water") or {}, theirs.get("high_water") or {}
    ahead = any(v and (mine.get(k) is None or mine[k] < v) for k, v in other.items())
    behind = any(v and (other.get(k) is None or other[k] < v) for k, v in mine.items())
    return ahead and not behind


def check_revision(path: Path) -> tuple[str, bool]:
    """The file's revision and whether it needs migrating; a revision this version does not know (a newer
    indexer made it) is refused with "upgrade indexer"."""
    rev = schema_revision(path)
    known = known_revisions()
    if rev is None:
        raise CatalogError(f"{path.name} is not an indexer catalog (no schema revision)")
    if rev not in known:
        raise CatalogError(f"the published catalog has schema revision {rev}, newer than this indexer knows "
                           f"({known[-1]}); upgrade indexer (pip install -U indexer)")
    return rev, rev != known[-1]
