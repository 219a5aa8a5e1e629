"""What a published catalog snapshot says about itself: its schema revision, how fresh its data is, and
whether this version of indexer can read it. ``indexer publish --to-hub`` writes these facts into the
manifest; ``indexer pull`` checks a downloaded file against them before it replaces the local catalog.

Read with the stdlib ``sqlite3`` on the file itself (read-only), so checking a staged download never opens
it through the catalog machinery that would create or migrate it.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from alembic.script import ScriptDirectory

from ..errors import CatalogError
from ..scratch import scratch_dir
from .migrate import alembic_config, upgrade


def known_revisions() -> list[str]:
    """The Alembic revisions this version ships, oldest first (the last one is the head)."""
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return [s.revision for s in reversed(list(script.walk_revisions()))]


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)


def schema_revision(path: Path) -> str | None:
    """The Alembic revision recorded in a SQLite catalog file (None: never migrated)."""
    con = _connect(path)
    try:
        kind = con.execute("SELECT type FROM sqlite_master WHERE name = 'alembic_version'").fetchone()
        if kind != ("table",):  # a view would run whatever query it holds
            return None
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


def schema_of(path: Path) -> dict:
    """Everything of a SQLite file's schema a reader depends on: each table's columns (``table_xinfo``), foreign
    keys and indexes (``index_list``, ``index_xinfo``), every object of ``sqlite_master`` with its SQL (whitespace
    collapsed), SQLite's own ``sqlite_*`` tables (statistics, sequences) left out."""
    con = _connect(path)
    try:
        objects = sorted(con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master "
                                     "WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'").fetchall())
        tables = {}
        for kind, name, _tbl, _sql in objects:
            if kind != "table":
                continue
            q = name.replace('"', '""')
            indexes = []
            for row in con.execute(f'PRAGMA index_list("{q}")').fetchall():
                iq = row[1].replace('"', '""')
                indexes.append((tuple(row[1:]), con.execute(f'PRAGMA index_xinfo("{iq}")').fetchall()))
            tables[name] = {"columns": con.execute(f'PRAGMA table_xinfo("{q}")').fetchall(),
                            "foreign_keys": con.execute(f'PRAGMA foreign_key_list("{q}")').fetchall(),
                            "indexes": sorted(indexes)}
    finally:
        con.close()
    return {"objects": [(k, n, t, _squash(sql)) for k, n, t, sql in objects], "tables": tables}


def _squash(sql: str | None) -> str | None:
    return None if sql is None else re.sub(r"\s+", " ", sql).strip()


def reference_schema(revision: str) -> dict:
    """The schema the project's own migrations make at ``revision``, built in a temporary file."""
    with scratch_dir(prefix="indexer-schema-") as tmp:
        ref = Path(tmp) / "reference.db"
        upgrade(str(ref), revision)
        return schema_of(ref)


def schema_differences(path: Path, revision: str) -> list[str]:
    """How the schema of ``path`` differs from the one the migrations make at ``revision`` (empty: none). A
    snapshot may hold no table, column, index, view or trigger the migrations do not make, and lack none."""
    have, want = schema_of(path), reference_schema(revision)
    out = []
    mine = {(k, n): sql for k, n, _t, sql in have["objects"]}
    theirs = {(k, n): sql for k, n, _t, sql in want["objects"]}
    for kind, name in sorted(mine.keys() - theirs.keys()):
        out.append(f"an extra {kind} {name!r}")
    for key in sorted(mine.keys() & theirs.keys()):
        kind, name = key
        if kind == "table" and have["tables"][name] != want["tables"][name]:
            got, exp = have["tables"][name], want["tables"][name]
            what = [part for part in ("columns", "foreign_keys", "indexes") if got[part] != exp[part]]
            if "columns" in what:
                gc, ec = {c[1] for c in got["columns"]}, {c[1] for c in exp["columns"]}
                parts = [f"no column {c!r}" for c in sorted(ec - gc)]
                parts += [f"an extra column {c!r}" for c in sorted(gc - ec)]
                detail = ", ".join(parts[:5]) + (f" and {len(parts) - 5} more" if len(parts) > 5 else "")
                detail = detail or "other column types"
                out.append(f"table {name!r}: {detail}")
            else:
                out.append(f"table {name!r}: other {' and '.join(w.replace('_', ' ') for w in what)}")
        elif mine[key] != theirs[key]:
            out.append(f"{kind} {name!r} is defined otherwise")
    for kind, name in sorted(theirs.keys() - mine.keys()):
        out.append(f"no {kind} {name!r}")
    return out
