"""One read-only reader of the catalog, on SQLite and PostgreSQL alike: what every answer reads through.

Opened once per request (a query, a check, a site page) and passed down. Named-parameter SQL (``:name``)
over the stdlib ``sqlite3`` module for SQLite files, so the interactive path imports no SQLAlchemy; SQLAlchemy
Core for other URLs. URLs and driver errors are worded by indexer.catalog.db; a catalog we cannot write is
read read-only. Every failure to open is one :class:`~indexer.errors.CatalogError` line with its fix.
"""

from __future__ import annotations

import json
import os
import sqlite3
from typing import Any

from .. import deferred
from ..errors import CatalogError
from .dberrors import as_catalog_error
from .dburl import busy_timeout, db_arg, missing_hint, read_only_uri, resolve_url, sqlite_file

# repos.gated values that mean "not gated" (the Hub answers False, or "auto"/"manual"); compute's SQL and
# the query's ranking both read these (here, so that a query does not load catalog.db and its migrations).
NOT_GATED = ("", "false", "False", "0", "no")

# What the reader is opened for, and the words when the catalog cannot give it: "answers" needs the computed
# classes (`indexer query`), "repos" only the crawled repos (`indexer check`).
NEEDS = {
    "answers": ("repo_classes", "run `indexer pull` to fetch the published catalog, or `indexer crawl` and "
                "`indexer compute`",
                "is not migrated or not computed; "
                "run `indexer db upgrade --db {arg}` and `indexer compute --db {arg}`"),
    "repos": ("repos", "run `indexer pull` to fetch the published catalog, or `indexer crawl`",
              "is not migrated; run `indexer db upgrade --db {arg}`"),
}


class Reader:
    """Read-only rows of one catalog: ``all(sql, params)``, ``one(sql, params)``, ``dialect``, ``close()``."""

    def __init__(self, db: str | None = None, *, needs: str = "answers", snapshot: bool = False):
        """``snapshot`` (SQLite): every read of this reader sees one state of the catalog, one read transaction: an
        answer's thirty statements cannot mix the states before and after a crawl's write, and SQLite takes its
        file locks once instead of per statement. For a request's reader only: it
        does not see writes made after it opened. (PostgreSQL reads through SQLAlchemy's connection as before.)"""
        table, missing_fix, unmigrated = NEEDS[needs]
        url = resolve_url(db)  # CatalogError: an unknown scheme or a missing driver
        self.sa, self.db = None, db
        self._indexes: dict[str, bool] = {}
        path = sqlite_file(url)  # a str: no pathlib on the query path
        try:
            if url.startswith("sqlite:///"):
                if path is not None and not os.path.exists(path):
                    raise CatalogError(f"catalog {path} does not exist; "
                                       + missing_fix.format(arg=path) + missing_hint(path))
                ro_uri = read_only_uri(path) if path is not None else None
                self.conn: Any = sqlite3.connect(ro_uri, uri=True) if ro_uri else sqlite3.connect(path or ":memory:")
                self.conn.execute(f"PRAGMA busy_timeout={int(busy_timeout() * 1000)}")
            else:
                self.sa = deferred.sqlalchemy.create_engine(url)
                self.conn = self.sa.connect()
        except CatalogError:
            raise
        except Exception as e:  # noqa: BLE001 - the database layer's, in words

            raise CatalogError(str(as_catalog_error(e, url))) from None
        if snapshot and self.sa is None:
            self.conn.execute("BEGIN")  # deferred: the first read takes the snapshot; close() ends it
        try:
            self.all(f"SELECT 1 FROM {table} LIMIT 1")
        except Exception as e:  # noqa: BLE001 - any driver's "no such table"
            msg = str(getattr(e, "orig", None) or e).lower()
            self.close()
            if "no such table" not in msg and "does not exist" not in msg:

                raise CatalogError(str(as_catalog_error(e, url))) from None
            raise CatalogError(f"catalog {db_arg(url)} " + unmigrated.format(arg=db_arg(url))) from None

    @property
    def dialect(self) -> str:
        """The SQL dialect's name (the lookup's probes differ on PostgreSQL)."""
        return self.sa.dialect.name if self.sa is not None else "sqlite"

    def has_index(self, name: str) -> bool:
        """Whether the catalog has the index ``name`` (a catalog an older version made may lack one), asked once."""
        if name not in self._indexes:
            sql = ("SELECT 1 FROM pg_indexes WHERE indexname = :n" if self.dialect == "postgresql" else
                   "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = :n")
            self._indexes[name] = self.one(sql, {"n": name}) is not None
        return self._indexes[name]

    def all(self, sql: str, params: dict | None = None) -> list[tuple]:
        """Every row of ``sql`` as tuples."""
        if self.sa is not None:
            return [tuple(r) for r in self.conn.execute(deferred.sqlalchemy.text(sql), params or {})]
        return self.conn.execute(sql, params or {}).fetchall()

    def stream(self, sql: str, params: dict | None = None):
        """The rows of ``sql`` as tuples, one at a time: a caller that stops early leaves the rest unread."""
        if self.sa is not None:
            result = self.conn.execute(deferred.sqlalchemy.text(sql), params or {})
            try:
                yield from (tuple(r) for r in result)
            finally:
                result.close()
            return
        cursor = self.conn.execute(sql, params or {})
        try:
            yield from cursor
        finally:
            cursor.close()

    def one(self, sql: str, params: dict | None = None):
        """The first row of ``sql``, or None."""
        rows = self.all(sql, params)
        return rows[0] if rows else None

    def close(self) -> None:
        """Close the connection (and a SQLAlchemy engine's pool) at the end of the request."""
        self.conn.close()
        if self.sa is not None:
            self.sa.dispose()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def json_value(value):
    """A JSON column: text from sqlite3 (None when it does not parse), an object from some drivers."""
    if isinstance(value, (str, bytes)):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def int_list(values: list) -> str:
    """``(1, 2, 3)`` for an IN clause of integers (ids the catalog gave), written into the SQL (``int()`` each, so
    nothing else gets in): binding hundreds of named parameters costs more than the query itself. ``(NULL)`` when
    empty."""
    return "(" + (", ".join(str(int(v)) for v in values) or "NULL") + ")"


def in_list(name: str, values: list, params: dict) -> str:
    """``(:name0, :name1, ...)`` for an IN clause, the values added to ``params`` (``(NULL)`` when empty)."""
    keys = []
    for i, v in enumerate(values):
        params[f"{name}{i}"] = v
        keys.append(f":{name}{i}")
    return "(" + (", ".join(keys) or "NULL") + ")"
