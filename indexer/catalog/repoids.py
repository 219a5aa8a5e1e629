"""The SQL that finds repo ids: an exact id, any letter case, a bare name, the ids that start with a prefix, and the
status and facts of named repos. Every probe is one equality or range over an index (``repos.repo_id``, and the
expression indexes ``lower(repo_id)`` and ``lower(<name part>)`` of migration 0004), so a miss with suggestions
stays fast on a million repos. The answer (``answer/lookup.py``) decides what was meant and words it.

The probes take a ``rows(sql, params) -> list[tuple]`` callable (a :class:`~indexer.catalog.reader.Reader`'s
``all``) and the SQL dialect's name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .reader import Reader, in_list

Rows = Callable[[str, dict], list[tuple]]
PROBE_ROWS = 400  # ids read per prefix probe


def name_expr(dialect: str) -> str:
    """The exact expression of the ``ix_repos_name_lower`` index (SQLite only uses an index it matches)."""
    find = "strpos" if dialect == "postgresql" else "instr"
    return f"lower(substr(repo_id, {find}(repo_id, '/') + 1))"


def exact(rows: Rows, repo_id: str) -> str | None:
    """``repo_id`` as stored, when the catalog holds it with this spelling."""
    hit = rows("SELECT repo_id FROM repos WHERE repo_id = :r", {"r": repo_id})
    return hit[0][0] if hit else None


def any_case(rows: Rows, repo_id: str) -> list[str]:
    """The ids equal to ``repo_id`` in any letter case (at most 10)."""
    return [r for (r,) in rows("SELECT repo_id FROM repos WHERE lower(repo_id) = :r LIMIT 10",
                               {"r": repo_id.lower()})]


def by_name(rows: Rows, name: str, dialect: str) -> list[str]:
    """The ids whose name part (after the organisation) is ``name`` in any case, most downloaded first (at most 10)."""
    return [r for (r,) in rows(f"SELECT repo_id FROM repos WHERE {name_expr(dialect)} = :r "
                               "ORDER BY COALESCE(downloads, 0) DESC LIMIT 10", {"r": name.lower()})]


def _prefixed(rows: Rows, expr: str, prefix: str) -> list[str]:
    if not prefix:
        return []
    return [r for (r,) in rows(f"SELECT repo_id FROM repos WHERE {expr} >= :lo AND {expr} < :hi "
                               f"LIMIT {PROBE_ROWS}", {"lo": prefix, "hi": prefix + "\uffff"})]


def id_prefixed(rows: Rows, prefix: str) -> list[str]:
    """Up to PROBE_ROWS ids whose lowercase form starts with ``prefix`` (lowercase)."""
    return _prefixed(rows, "lower(repo_id)", prefix)


def name_prefixed(rows: Rows, prefix: str, dialect: str) -> list[str]:
    """Up to PROBE_ROWS ids whose lowercase name part starts with ``prefix`` (lowercase)."""
    return _prefixed(rows, name_expr(dialect), prefix)


def status(cat: Reader, repo_id: str) -> str | None:
    """The repo's crawl status, None when the catalog lacks it."""
    row = cat.one("SELECT status FROM repos WHERE repo_id = :r", {"r": repo_id})
    return row[0] if row is not None else None


def held(cat: Reader, repo_ids: Iterable[str]) -> set[str]:
    """Which of ``repo_ids`` the catalog holds (asked 500 at a time)."""
    ids = sorted(set(repo_ids))
    out: set[str] = set()
    for i in range(0, len(ids), 500):
        params: dict = {}
        out |= {r for (r,) in cat.all("SELECT repo_id FROM repos WHERE repo_id IN "
                                      + in_list("r", ids[i:i + 500], params), params)}
    return out


def size_facts(cat: Reader, repo_id: str) -> tuple | None:
    """(repo id, author, family, base_models, params or its estimate) of a repo, None when the catalog lacks it."""
    return cat.one("SELECT repo_id, author, family, base_models, COALESCE(params, params_estimate) FROM repos "
                   "WHERE repo_id = :r", {"r": repo_id})
