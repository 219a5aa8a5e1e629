"""Where a catalog is: ``--db`` (a path or a URL) into a checked URL, and the facts of a SQLite file.

Every command takes ``--db``: a file path or a SQLAlchemy URL (default ``data/catalog.db``,
env ``INDEXER_DB``). SQLite and PostgreSQL are supported (``pip install '.[postgres]'`` in a checkout).
SQLAlchemy is read through :mod:`indexer.deferred` when a URL needs it, so the light ``indexer query`` path
(stdlib ``sqlite3``) resolves the same URLs, and a query reads its SQLite file's facts with ``os.path``
(:func:`sqlite_file`), without pathlib. Everything here is importable from ``indexer.catalog.db``.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from .. import deferred
from ..errors import CatalogError

DEFAULT_DB = "data/catalog.db"
DEFAULT_DEMO_DB = "data/demo.db"  # where `indexer demo` builds its catalog (missing_hint points there)
POSTGRES_FIX = "pip install 'psycopg[binary]'"  # what the postgres extra installs (pyproject.toml)
# How long a writer waits for another writer's lock before giving up (seconds; env INDEXER_BUSY_TIMEOUT).
DEFAULT_BUSY_TIMEOUT = 30.0
# Schemes spelled differently by users and by SQLAlchemy. Plain postgresql:// picks psycopg2 in
# SQLAlchemy 2.0 and psycopg (3) in 2.1 ("Default PostgreSQL driver changed to psycopg",
# https://docs.sqlalchemy.org/en/21/changelog/migration_21.html; sqlalchemy 2.1.9
# dialects/postgresql/__init__.py:99 ``base.dialect = dialect = psycopg.dialect``); the ``postgres``
# extra installs psycopg 3, so name it explicitly whichever SQLAlchemy 2.x is installed.
SCHEME_ALIASES = {"postgres": "postgresql+psycopg", "postgresql": "postgresql+psycopg"}
DRIVER_MODULES = ("psycopg", "psycopg2", "psycopg2cffi", "pg8000", "asyncpg", "MySQLdb", "pymysql")
SUPPORTED = "a file path, sqlite:///PATH or postgresql://USER@HOST/DBNAME"


def resolve_url(db: str | None = None) -> str:
    """Turn ``--db`` (path or URL; falls back to $INDEXER_DB, then data/catalog.db) into a URL.

    URLs are checked here, so every caller refuses an unknown scheme or a missing driver the
    same way: CatalogError, before anything connects.
    """
    db = db or os.environ.get("INDEXER_DB") or DEFAULT_DB
    if "://" not in db:
        return f"sqlite:///{os.path.realpath(os.path.expanduser(db))}"  # Path(db).expanduser().resolve()
    scheme, rest = db.split("://", 1)
    url = f"{SCHEME_ALIASES.get(scheme.lower(), scheme)}://{rest}"
    check_driver(url)
    return url


def check_driver(url: str) -> None:
    """CatalogError unless SQLAlchemy knows the scheme and its DBAPI driver is installed."""
    sa = deferred.sqlalchemy
    try:
        dialect = sa.engine.make_url(url).get_dialect()
    except sa.exc.NoSuchModuleError:
        scheme = url.split("://", 1)[0]
        raise CatalogError(f"--db {safe_url(url)}: unknown database scheme {scheme!r}; give {SUPPORTED}") from None
    except (sa.exc.ArgumentError, ValueError) as e:
        raise CatalogError(f"--db {safe_url(url)} is not a database URL ({e}); give {SUPPORTED}") from None
    try:
        dialect.import_dbapi()
    except ImportError as e:
        raise CatalogError(missing_driver(url, e)) from None


def missing_driver(url: str, e: ImportError) -> str:
    """The one line for a URL whose DBAPI driver is not installed, naming the extra that installs it."""
    if url.startswith("postgresql"):
        return f"--db {safe_url(url)}: the PostgreSQL driver (psycopg) is not installed; run {POSTGRES_FIX}"
    return (f"--db {safe_url(url)}: its driver is not installed ({e}); the indexer is tested on SQLite "
            f"and PostgreSQL ({POSTGRES_FIX})")


def safe_url(url: str) -> str:
    """The URL with any password masked: never print a credential. The driver our alias added
    (``postgresql+psycopg``, :data:`SCHEME_ALIASES`) is not shown: the user typed ``postgresql://``."""
    for alias in set(SCHEME_ALIASES.values()):
        if url.startswith(f"{alias}://"):
            url = "postgresql" + url[len(alias):]
    if "://" not in url or "@" not in url:
        return url
    try:
        return deferred.sqlalchemy.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - unparsable: drop the credentials part by hand
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"


def sqlite_file(url: str) -> str | None:
    """The file behind a sqlite URL as ``str(sqlite_path(url))`` spells it, or None for other databases /
    in-memory.

    ``sqlite:///file:PATH?mode=ro&uri=true`` (a read-only URI, as the site uses) names PATH.
    """
    if not url.startswith("sqlite:///"):
        return None
    path = url[len("sqlite:///") :]
    if path.startswith("file:"):
        path = path[len("file:") :].split("?", 1)[0]
    if not path or path == ":memory:":
        return None
    # What PurePosixPath makes of it: no empty or "." names, two leading slashes kept, three or more one.
    root = "//" if path.startswith("//") and not path.startswith("///") else "/" if path.startswith("/") else ""
    return root + "/".join(p for p in path.split("/") if p and p != ".") or "."


def sqlite_path(url: str) -> Path | None:
    """:func:`sqlite_file` as a Path."""
    path = sqlite_file(url)
    return Path(path) if path is not None else None


def db_arg(url: str) -> str:
    """How to write the catalog back on a command line (a path for SQLite files)."""
    path = sqlite_path(url)
    return str(path) if path is not None else f"'{safe_url(url)}'"


def missing_hint(path: str | Path | None) -> str:
    """After `indexer demo`, the default catalog is missing but the demo's exists: say where it is."""
    demo = Path(DEFAULT_DEMO_DB)
    if (path is not None and Path(path) == Path(DEFAULT_DB).resolve() and demo.exists()
            and not os.environ.get("INDEXER_DB")):
        return f"; the demo catalog is {demo}: add --db {demo} (or set INDEXER_DB={demo})"
    return ""


def check_folder(db: str | None, path: str | Path | None) -> None:
    """CatalogError when a catalog path someone gave (``--db``, $INDEXER_DB) lies in a folder that does not exist:
    a typo must not leave a new folder with a catalog, blobs and lock files behind. Only the commands that
    create catalogs (``db upgrade``, ``crawl``, ``nightly``, ``demo``) make the folder; the default
    ``data/catalog.db`` is made wherever it is needed, as before."""
    if path is None or not (db or os.environ.get("INDEXER_DB")):
        return
    folder = os.path.dirname(str(path)) or "."  # a str: no pathlib on the query path
    if os.path.isdir(folder):
        return
    raise CatalogError(f"catalog {path}: folder {folder} does not exist; create it first "
                       "(`indexer db upgrade --db PATH` makes a new catalog and its folder)")


def busy_timeout() -> float:
    """Seconds a writer waits for another writer's lock ($INDEXER_BUSY_TIMEOUT, else the default)."""
    try:
        return max(0.0, float(os.environ.get("INDEXER_BUSY_TIMEOUT", DEFAULT_BUSY_TIMEOUT)))
    except ValueError:
        return DEFAULT_BUSY_TIMEOUT


# ---------------------------------------------------------------- SQLite files


def _parent(path: str | Path) -> str:
    """``Path(path).parent``, as a string."""
    return os.path.dirname(os.fspath(path)) or "."


def _is_wal(path: str | Path) -> bool:
    """Header bytes 18-19 are 2 in WAL mode (https://www.sqlite.org/fileformat2.html#database_header)."""
    try:
        with open(path, "rb") as f:
            return f.read(20)[18:19] == b"\x02"
    except OSError:
        return False


def writable(path: str | Path) -> bool:
    """A SQLite writer needs the file and its directory (journal, -wal, -shm files).

    ``os.access`` answers for the real user, and is False on a read-only mount even for root.
    """
    if os.path.exists(path):
        return os.access(path, os.W_OK) and os.access(_parent(path), os.W_OK)
    parent = _parent(path)
    while not os.path.exists(parent):
        parent = _parent(parent)
    return os.access(parent, os.W_OK)


def read_only_uri(path: str | Path) -> str | None:
    """A ``file:`` URI that reads a catalog we cannot write, or None when it is writable.

    ``mode=ro`` unless the file is in WAL mode and no ``-shm`` can be made beside it: then only
    ``immutable=1`` opens it (https://www.sqlite.org/wal.html#readonly, "Read-Only Databases").
    """
    if writable(path):
        return None

    shm = os.fspath(path) + "-shm"
    needs_immutable = _is_wal(path) and not os.access(_parent(path), os.W_OK) and not os.path.exists(shm)
    return f"file:{quote(str(path))}?{'immutable=1' if needs_immutable else 'mode=ro'}"


REBUILD = ("make a new one: `indexer pull` fetches the published catalog, `indexer demo` rebuilds the demo catalog "
           "(it rebuilds a damaged one itself), `indexer nightly` crawls one")  # a catalog that cannot be read


def check_sqlite_file(path: str | Path) -> None:
    """CatalogError unless ``path`` is a SQLite file (header "SQLite format 3", or empty: a new catalog)."""
    if os.path.isdir(path):
        raise CatalogError(f"catalog {path} is a directory; point --db at a catalog file inside it")
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as e:
        raise CatalogError(f"catalog {path} cannot be read ({e.strerror})") from None
    if head and head != b"SQLite format 3\x00":
        raise CatalogError(f"catalog {path} is not a SQLite database; point --db at a catalog file or a new path, "
                           f"or delete it, then {REBUILD}")


def readonly_url(path: str | Path) -> str:
    """A SQLAlchemy URL that opens a SQLite file read-only: no journal-mode switch, no -wal beside it."""
    return f"sqlite:///file:{Path(path).resolve()}?mode=ro&uri=true"
