"""Catalog access: URL resolution, engine creation, Alembic upgrades, and one-line errors.

Every command takes ``--db``: a file path or a SQLAlchemy URL (default ``data/catalog.db``,
env ``INDEXER_DB``). SQLite and PostgreSQL are supported (``pip install 'indexer[postgres]'``).

Whatever goes wrong with a catalog becomes a :class:`CatalogError` whose message is one line
that names the fix; :func:`explain` is the single place that maps driver exceptions to it.
This module imports SQLAlchemy only inside its functions, so the light ``indexer query`` path
(stdlib ``sqlite3``) can use the same URL resolution and error words.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from ..errors import CatalogError
from ..files import fsync_dir

DEFAULT_DB = "data/catalog.db"
DEFAULT_DEMO_DB = "data/demo.db"  # where `indexer demo` builds its catalog (missing_hint points there)
# repos.gated values that mean "not gated" (the Hub answers False, or "auto"/"manual"); compute's SQL and
# the query's ranking both read these.
NOT_GATED = ("", "false", "False", "0", "no")
POSTGRES_FIX = "pip install 'indexer[postgres]'"
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


# ---------------------------------------------------------------- URLs


def resolve_url(db: str | None = None) -> str:
    """Turn ``--db`` (path or URL; falls back to $INDEXER_DB, then data/catalog.db) into a URL.

    URLs are checked here, so every caller refuses an unknown scheme or a missing driver the
    same way: CatalogError, before anything connects.
    """
    db = db or os.environ.get("INDEXER_DB") or DEFAULT_DB
    if "://" not in db:
        return f"sqlite:///{Path(db).expanduser().resolve()}"
    scheme, rest = db.split("://", 1)
    url = f"{SCHEME_ALIASES.get(scheme.lower(), scheme)}://{rest}"
    check_driver(url)
    return url


def check_driver(url: str) -> None:
    """CatalogError unless SQLAlchemy knows the scheme and its DBAPI driver is installed."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        dialect = make_url(url).get_dialect()
    except NoSuchModuleError:
        scheme = url.split("://", 1)[0]
        raise CatalogError(f"--db {safe_url(url)}: unknown database scheme {scheme!r}; give {SUPPORTED}") from None
    except (ArgumentError, ValueError) as e:
        raise CatalogError(f"--db {safe_url(url)} is not a database URL ({e}); give {SUPPORTED}") from None
    try:
        dialect.import_dbapi()
    except ImportError as e:
        raise CatalogError(missing_driver(url, e)) from None


def missing_driver(url: str, e: ImportError) -> str:
    if url.startswith("postgresql"):
        return f"--db {safe_url(url)}: the PostgreSQL driver (psycopg) is not installed; run {POSTGRES_FIX}"
    return (f"--db {safe_url(url)}: its driver is not installed ({e}); the indexer is tested on SQLite "
            f"and PostgreSQL ({POSTGRES_FIX})")


def safe_url(url: str) -> str:
    """The URL with any password masked: never print a credential."""
    if "://" not in url or "@" not in url:
        return url
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - unparsable: drop the credentials part by hand
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"


def sqlite_path(url: str) -> Path | None:
    """The file behind a sqlite URL, or None for other databases / in-memory.

    ``sqlite:///file:PATH?mode=ro&uri=true`` (a read-only URI, as the site uses) names PATH.
    """
    if not url.startswith("sqlite:///"):
        return None
    path = url[len("sqlite:///") :]
    if path.startswith("file:"):
        path = path[len("file:") :].split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def missing_hint(path: Path) -> str:
    """After `indexer demo`, the default catalog is missing but the demo's exists: say where it is."""
    demo = Path(DEFAULT_DEMO_DB)
    if path == Path(DEFAULT_DB).resolve() and demo.exists() and not os.environ.get("INDEXER_DB"):
        return f"; the demo catalog is {demo}: add --db {demo} (or set INDEXER_DB={demo})"
    return ""


def busy_timeout() -> float:
    try:
        return max(0.0, float(os.environ.get("INDEXER_BUSY_TIMEOUT", DEFAULT_BUSY_TIMEOUT)))
    except ValueError:
        return DEFAULT_BUSY_TIMEOUT


# ---------------------------------------------------------------- SQLite files


def _is_wal(path: Path) -> bool:
    """Header bytes 18-19 are 2 in WAL mode (https://www.sqlite.org/fileformat2.html#database_header)."""
    try:
        with open(path, "rb") as f:
            return f.read(20)[18:19] == b"\x02"
    except OSError:
        return False


def writable(path: Path) -> bool:
    """A SQLite writer needs the file and its directory (journal, -wal, -shm files).

    ``os.access`` answers for the real user, and is False on a read-only mount even for root.
    """
    if path.exists():
        return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    return os.access(parent, os.W_OK)


def read_only_uri(path: Path) -> str | None:
    """A ``file:`` URI that reads a catalog we cannot write, or None when it is writable.

    ``mode=ro`` unless the file is in WAL mode and no ``-shm`` can be made beside it: then only
    ``immutable=1`` opens it (https://www.sqlite.org/wal.html#readonly, "Read-Only Databases").
    """
    if writable(path):
        return None
    from urllib.parse import quote

    shm = path.with_name(path.name + "-shm")
    needs_immutable = _is_wal(path) and not os.access(path.parent, os.W_OK) and not shm.exists()
    return f"file:{quote(str(path))}?{'immutable=1' if needs_immutable else 'mode=ro'}"


def check_sqlite_file(path: Path) -> None:
    """CatalogError unless ``path`` is a SQLite file (header "SQLite format 3", or empty: a new catalog)."""
    if path.is_dir():
        raise CatalogError(f"catalog {path} is a directory; point --db at a catalog file inside it")
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as e:
        raise CatalogError(f"catalog {path} cannot be read ({e.strerror})") from None
    if head and head != b"SQLite format 3\x00":
        raise CatalogError(f"catalog {path} is not a SQLite database; point --db at a catalog file or a new path")


def readonly_url(path: str | Path) -> str:
    """A SQLAlchemy URL that opens a SQLite file read-only: no journal-mode switch, no -wal beside it."""
    return f"sqlite:///file:{Path(path).resolve()}?mode=ro&uri=true"


def _sqlite_pragmas(dbapi_conn, _record):
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute(f"PRAGMA busy_timeout={int(busy_timeout() * 1000)}")
    cur.close()


def immediate_transactions(engine) -> None:
    """Make every transaction of a SQLite ``engine`` take the write lock when it begins (BEGIN IMMEDIATE).

    A deferred transaction that reads and then writes cannot wait for a concurrent writer in WAL mode: its
    upgrade to a write lock fails at once with SQLITE_BUSY when another connection committed since it
    began (https://www.sqlite.org/lang_transaction.html, "BEGIN IMMEDIATE"; https://www.sqlite.org/wal.html).
    Beginning with the write lock makes the busy timeout apply, so concurrent crawls queue instead of
    failing. The pysqlite recipe of SQLAlchemy's SQLite dialect docs ("Serializable isolation / Savepoints /
    Transactional DDL"): let the driver stop issuing BEGIN, and emit it from the ``begin`` event.
    """
    from sqlalchemy import event

    if engine.dialect.name != "sqlite":
        return

    @event.listens_for(engine, "connect")
    def _no_driver_begin(dbapi_conn, _record):
        dbapi_conn.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin_immediate(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _sqlite_read_pragmas(dbapi_conn, _record):
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout={int(busy_timeout() * 1000)}")
    cur.close()


# ---------------------------------------------------------------- engines


def make_engine(db: str | None = None, *, read_only: bool = False):
    """A SQLAlchemy engine; a SQLite file we cannot write is opened read-only (queries still answer)."""
    from urllib.parse import quote

    from sqlalchemy import create_engine, event

    url = resolve_url(db)
    path = sqlite_path(url)
    ro_uri = read_only_uri(path) if path is not None and path.exists() else None
    if read_only and path is not None and path.exists() and ro_uri is None:
        ro_uri = f"file:{quote(str(path))}?mode=ro"
    if ro_uri is not None:
        engine = create_engine(f"sqlite:///{ro_uri}&uri=true", future=True)
        event.listen(engine, "connect", _sqlite_read_pragmas)
        return engine
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CatalogError(f"catalog {path}: cannot create its directory ({e.strerror})") from None
    engine = create_engine(url, future=True)
    if url.startswith("sqlite") and "mode=ro" not in url:  # read-only: never switch the file to WAL
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def preflight(db: str | None = None, *, write: bool = False, connect: bool = True) -> str:
    """Check ``--db`` before a command starts: scheme and driver; then (``connect``) that a
    database server answers; for writers also that the SQLite file can be written and that no
    other writer holds it.

    Returns the resolved URL; raises CatalogError with the fix.
    """
    url = resolve_url(db)
    path = sqlite_path(url)
    if path is not None and path.exists():
        check_sqlite_file(path)
    if not write:
        if connect and path is None and not url.startswith("sqlite"):
            engine = make_engine(url)
            try:
                engine.connect().close()
            except Exception as e:  # noqa: BLE001 - translated below, or re-raised if not the database's
                raise as_catalog_error(e, url) from None
            finally:
                engine.dispose()
        return url
    if path is not None:
        if not writable(path):
            raise CatalogError(f"catalog {path} is read-only (the file or its directory is not writable); this "
                               "command writes it: fix the permissions or copy the catalog somewhere writable")
        if not path.exists():
            return url
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            if path is not None:  # take and drop the write lock: a busy catalog is reported now
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                conn.exec_driver_sql("ROLLBACK")
    except Exception as e:  # noqa: BLE001 - translated below, or re-raised if not the database's
        raise as_catalog_error(e, url) from None
    finally:
        engine.dispose()
    return url


def alembic_config(url: str):
    from alembic.config import Config

    from ..resources import MIGRATIONS_DIR

    if not (MIGRATIONS_DIR / "env.py").exists():
        raise CatalogError(f"migrations not found at {MIGRATIONS_DIR}; reinstall the package (`pip install .`)")
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(db: str | None = None, revision: str = "head") -> str:
    """Create or upgrade the catalog schema; returns the URL that was migrated.

    Never leaves a catalog part-way (issue 18): a new SQLite catalog is built in a temporary file
    beside it and renamed into place; an existing one is migrated one whole transaction per revision
    (migrations/env.py). Concurrent upgrades of one catalog wait for each other (``migration_lock``
    and, for SQLite files, ``upgrade_lock``), so two crawls started at once on a new path do not race.
    """
    from alembic import command

    url = preflight(db, write=True)
    path = sqlite_path(url)
    try:
        if path is None:
            command.upgrade(alembic_config(url), revision)
            return url
        path.parent.mkdir(parents=True, exist_ok=True)
        with upgrade_lock(path):
            _remove_stale_builds(path)
            if _holds_nothing(path):
                _build_new(path, revision)
            else:
                command.upgrade(alembic_config(url), revision)
    except Exception as e:  # noqa: BLE001 - translated below, or re-raised if not the database's
        raise as_catalog_error(e, url) from None
    return url


NEW_SUFFIX = ".new"


def _holds_nothing(path: Path) -> bool:
    """A missing or empty file, or one an interrupted first migration left behind by an older version
    (only catalog tables, no recorded revision, no rows): built anew, since there is nothing to keep.
    Any other SQLite file is left to the migration, which refuses what it cannot upgrade."""
    if not path.exists() or path.stat().st_size == 0:
        return True
    import sqlite3

    from .models import Base

    ours = set(Base.metadata.tables) | {"alembic_version"}

    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                                "AND name NOT LIKE 'sqlite_%'")]
            if not set(tables) <= ours:
                return False
            if "alembic_version" in tables and con.execute("SELECT 1 FROM alembic_version").fetchone():
                return False
            return not any(con.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchone() for t in tables)
        finally:
            con.close()
    except sqlite3.Error:
        return False  # let the migration report what is wrong with it


def _build_new(path: Path, revision: str) -> None:
    """Migrate a fresh SQLite file beside ``path``, then rename it into place (atomic on POSIX)."""
    import secrets

    from alembic import command

    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}{NEW_SUFFIX}")
    os.close(os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644))  # the umask applies, as for a new file
    try:
        command.upgrade(alembic_config(f"sqlite:///{tmp}"), revision)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    finally:
        for leftover in (tmp, *_sidecars(tmp)):
            leftover.unlink(missing_ok=True)


def _sidecars(path: Path) -> list[Path]:
    return [path.with_name(path.name + s) for s in ("-journal", "-wal", "-shm")]


def _remove_stale_builds(path: Path) -> None:
    """Temporary builds of a killed upgrade (we hold the upgrade lock: nobody else is building)."""
    for stale in path.parent.glob(f".{path.name}.*{NEW_SUFFIX}*"):
        stale.unlink(missing_ok=True)


@contextmanager
def upgrade_lock(path: Path):
    """An exclusive flock on ``<catalog>.upgrade-lock`` for the whole upgrade; waits up to the busy timeout.

    A separate file from the nightly's ``<catalog>.lock`` (flock locks of one process on two
    descriptors of the same file conflict). The kernel drops it when the process dies.
    """
    import fcntl
    import time

    lock = path.with_name(path.name + ".upgrade-lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        give_up = time.monotonic() + max(busy_timeout(), 1.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= give_up:
                    from ..lockfile import lock_holder

                    holder = lock_holder(lock, os.pread(fd, 200, 0).decode(errors="replace").strip())
                    raise CatalogError(f"catalog {path} is being upgraded by another process ({holder}); try "
                                       "again when it has finished") from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


# PostgreSQL: one advisory lock key for catalog migrations (an arbitrary constant, "idx18").
PG_MIGRATION_LOCK = 0x69647831


@contextmanager
def migration_lock(connection):
    """Hold a session-level advisory lock on a PostgreSQL catalog while it migrates, so concurrent
    upgrades wait (https://www.postgresql.org/docs/current/explicit-locking.html#ADVISORY-LOCKS).
    SQLite files are serialised by ``upgrade_lock`` instead."""
    if connection.dialect.name != "postgresql":
        yield
        return
    connection.exec_driver_sql(f"SELECT pg_advisory_lock({PG_MIGRATION_LOCK})")
    connection.commit()
    try:
        yield
    finally:
        if connection.in_transaction():
            connection.rollback()
        connection.exec_driver_sql(f"SELECT pg_advisory_unlock({PG_MIGRATION_LOCK})")
        connection.commit()


def current_revision(engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def open_catalog(db: str | None = None, *, create: bool = False):
    """Engine for an existing, migrated catalog (or migrate it first when ``create``)."""
    from sqlalchemy import inspect

    if create:
        upgrade(db)
    url = resolve_url(db)
    path = sqlite_path(url)
    if path is not None and not path.exists():
        raise CatalogError(f"catalog {path} does not exist; run `indexer db upgrade --db {path}` first"
                           + missing_hint(path))
    engine = make_engine(db)
    try:
        migrated = inspect(engine).has_table("repos")
    except Exception as e:  # noqa: BLE001 - translated below, or re-raised if not the database's
        engine.dispose()
        raise as_catalog_error(e, url) from None
    if not migrated:
        engine.dispose()
        raise CatalogError(f"catalog {db_arg(url)} is not migrated; run `indexer db upgrade --db {db_arg(url)}`")
    return engine


def session_factory(engine):
    from sqlalchemy.orm import sessionmaker

    return sessionmaker(engine, expire_on_commit=False)


# ---------------------------------------------------------------- errors in words


def db_arg(url: str) -> str:
    """How to write the catalog back on a command line (a path for SQLite files)."""
    path = sqlite_path(url)
    return str(path) if path is not None else f"'{safe_url(url)}'"


def is_db_error(exc: BaseException) -> bool:
    """An exception raised by the database layer (SQLAlchemy, sqlite3, psycopg), not by our logic."""
    mod = type(exc).__module__ or ""
    return isinstance(exc, CatalogError) or mod.split(".")[0] in ("sqlalchemy", "sqlite3", "psycopg", "psycopg2")


def is_write_conflict(exc: BaseException) -> bool:
    """A write that lost a race with another writer and succeeds when retried: a unique key that
    another transaction committed first, a deadlock victim (PostgreSQL SQLSTATE 40P01) or a
    serialization failure (40001) (https://www.postgresql.org/docs/current/errcodes-appendix.html)."""
    from sqlalchemy.exc import DBAPIError, IntegrityError

    if isinstance(exc, IntegrityError):
        return "unique" in str(exc.orig).lower()
    if isinstance(exc, DBAPIError):
        code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
        return code in ("40P01", "40001")
    return False


def as_catalog_error(exc: BaseException, url: str | None) -> BaseException:
    """``exc`` as a CatalogError when it comes from the database layer; else ``exc`` unchanged."""
    if isinstance(exc, CatalogError):
        return exc
    if isinstance(exc, ImportError) and url and (exc.name or "").split(".")[0] in DRIVER_MODULES:
        return CatalogError(missing_driver(url, exc))
    if not is_db_error(exc):
        return exc
    return CatalogError(explain(exc, url))


def _driver_message(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip()
    return text.splitlines()[0].strip() if text else type(orig).__name__


def explain(exc: BaseException, url: str | None) -> str:
    """One line for a driver exception: what is wrong with which catalog, and the fix."""
    name = f"catalog {safe_url(url)}" if url else "the catalog"
    path = sqlite_path(url) if url else None
    if path is not None:
        name = f"catalog {path}"
    cls = type(exc).__name__
    if cls == "NoSuchModuleError":
        return f"{name}: unknown database scheme; give {SUPPORTED}"
    if cls == "ArgumentError":
        return f"{name} is not a database URL; give {SUPPORTED}"
    msg = _driver_message(exc)
    low = msg.lower()
    arg = db_arg(url) if url else "CATALOG"
    if "readonly database" in low or "read-only" in low or "read only" in low:
        return (f"{name} is read-only; this command writes it: fix the permissions or copy the catalog "
                "somewhere writable")
    if "database or disk is full" in low or "disk i/o error" in low:  # SQLITE_FULL / SQLITE_IOERR
        why = ("the disk is full" if "full" in low
               else "a write failed (disk I/O error: a full disk, a file-size limit or a failing device)")
        return f"{name}: {why}; nothing committed was lost: free space or fix the device, then run again"
    if "database is locked" in low or "database table is locked" in low:
        return (f"{name} is locked by another writer (a crawl, compute or nightly still running?); "
                "try again when it has finished")
    if "file is not a database" in low or "not a database" in low:
        return f"{name} is not a SQLite database; point --db at a catalog file or a new path"
    if "unable to open database file" in low:
        return f"{name} cannot be opened (missing directory or no permission to read it)"
    if "no such table" in low or ("relation" in low and "does not exist" in low):
        return f"{name} is not migrated; run `indexer db upgrade --db {arg}`"
    if "password authentication failed" in low or "authentication failed" in low:
        return f"{name}: the server refused the credentials ({msg}); check the user and password in --db"
    if "database" in low and "does not exist" in low:
        return f"{name}: {msg}; create it first (e.g. `createdb NAME`) or fix the name in --db"
    if any(s in low for s in ("connection refused", "could not connect", "connection failed",
                              "no such file or directory", "name or service not known", "timeout expired",
                              "could not translate host name", "server closed the connection")):
        return (f"{name} is unreachable ({msg}); start the database server or fix the host and port in --db")
    if "permission denied" in low or "must be owner" in low:  # PostgreSQL SQLSTATE 42501 / 42P... privileges
        return (f"{name}: the --db user may not do this ({msg}); use the catalog's owner, or grant this user "
                "write access")
    return f"{name}: {cls}: {msg}"
