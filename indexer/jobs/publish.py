"""Publish the catalog with datasette: serve it read-only, or bundle a compacted snapshot.

``serve`` runs ``python -m datasette serve -i CATALOG --metadata indexer/data/metadata.yml`` (immutable:
datasette never writes and trusts the file not to change under it). ``publish`` writes a bundle:
``catalog.db`` (compacted with ``VACUUM INTO`` into a temp file in the bundle, then renamed over the
old one: a running site never sees a half-written database), ``metadata.yml``, ``serve.sh`` with the
exact command line, ``requirements.txt``, a ``Dockerfile`` and ``manifest.json``.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import yaml
from sqlalchemy import create_engine, select

from ..answer.query import open_reader
from ..answer.validate import output_dir
from ..catalog.db import CatalogError, missing_hint, read_only_uri, resolve_url, safe_url, sqlite_path, upgrade
from ..catalog.models import Base
from ..catalog.published import public_token_shas, redact, token_sha
from ..catalog.tokenstore import default_root
from ..engines import ENGINES
from ..errors import PortBusy, PublishError
from ..files import fsync_dir, sha256_file
from ..resources import METADATA_PATH, package_path
from ..scratch import scratch_dir
from ..site import PLUGINS_DIR

METADATA_DB_KEY = "catalog"
PUBLISHED_DB = "catalog.db"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8001
DATASETTE_SETTINGS = (("sql_time_limit_ms", "3000"), ("default_page_size", "50"), ("max_returned_rows", "100"))


def catalog_file(db: str | None) -> Path:
    """The SQLite file behind ``--db`` (other databases go through :func:`export_sqlite`)."""
    url = resolve_url(db)
    path = sqlite_path(url)
    if path is None:
        raise PublishError(f"{safe_url(url)} is not a SQLite file; export it with `indexer publish`")
    if not path.exists():
        raise CatalogError(f"catalog {path} does not exist; run `indexer crawl` or `indexer demo` first"
                           + missing_hint(path))

    open_reader(url).close()  # not a database, or not a catalog: refused in the words `indexer query` uses
    return path


EXPORT_BATCH = 5000


def export_sqlite(db: str | None, dest: Path) -> dict:
    """Snapshot any SQLAlchemy catalog (PostgreSQL, ...) into a fresh SQLite file for datasette.

    The file is created by the real migrations (same schema, indexes and alembic revision), then
    every table of the models' metadata is copied with SQLAlchemy Core in batches, parents first.
    """
    url = resolve_url(db)
    try:
        src = create_engine(url)
    except ModuleNotFoundError as e:
        raise PublishError(f"cannot open {safe_url(url)}: driver {e.name} is missing; "
                           "pip install 'psycopg[binary]'") from None
    except Exception as e:  # noqa: BLE001 - unknown scheme, bad URL
        raise PublishError(f"cannot open {safe_url(url)}: {type(e).__name__}: {e}") from None
    upgrade(str(dest))
    dst = create_engine(f"sqlite:///{dest}")
    counts = {}
    try:
        with src.connect() as s, dst.begin() as d:
            for table in Base.metadata.sorted_tables:
                n = 0
                for chunk in s.execution_options(yield_per=EXPORT_BATCH).execute(select(table)).partitions():
                    d.execute(table.insert(), [dict(row._mapping) for row in chunk])
                    n += len(chunk)
                counts[table.name] = n
    except PublishError:
        raise
    except Exception as e:  # noqa: BLE001 - refused connection, not migrated, ...
        raise PublishError(f"cannot export {safe_url(url)}: {type(e).__name__}: {str(e).splitlines()[0]}") from None
    finally:
        src.dispose()
        dst.dispose()
    return counts


def load_metadata(db_name: str = METADATA_DB_KEY) -> dict:
    """indexer/data/metadata.yml with its database section keyed by ``db_name`` (datasette uses the file stem)
    and the engine lists taken from the registry, so the home page names every engine."""
    names = [e.display for e in ENGINES.values()]
    text = METADATA_PATH.read_text(encoding="utf-8")
    text = text.replace("@ENGINE_NAMES@", ", ".join(names)).replace(
        "@ENGINE_KEYS@", ", ".join(list(ENGINES)[:-1]) + " or " + list(ENGINES)[-1])
    meta = yaml.safe_load(text)
    dbs = meta.get("databases") or {}
    if db_name != METADATA_DB_KEY and METADATA_DB_KEY in dbs:
        dbs[db_name] = dbs.pop(METADATA_DB_KEY)
    return meta


def write_metadata(path: Path, db_name: str = METADATA_DB_KEY) -> Path:
    """Write the datasette metadata for ``db_name`` to ``path`` (datasette reads it from a file)."""
    path.write_text(yaml.safe_dump(load_metadata(db_name), sort_keys=False, allow_unicode=True), "utf-8")
    return path


def datasette_args(db_file: str, metadata: str, host: str = DEFAULT_HOST, port=DEFAULT_PORT,
                   plugins_dir: str | None = None) -> list:
    """``datasette serve`` arguments: immutable catalog, our metadata and the site plugin (indexer/site)."""
    args = ["serve", "-i", str(db_file), "--metadata", str(metadata), "--host", host, "--port", str(port),
            "--plugins-dir", str(plugins_dir or PLUGINS_DIR)]
    for name, value in DATASETTE_SETTINGS:
        args += ["--setting", name, value]
    return args


def serve_command(db: str | None, host: str, port: int, metadata_dir: Path) -> list[str]:
    """The datasette command line for ``indexer serve`` (metadata rendered into ``metadata_dir``).

    A non-SQLite catalog is first exported into ``metadata_dir`` (datasette serves SQLite files).
    """
    if sqlite_path(resolve_url(db)) is None:
        path = metadata_dir / PUBLISHED_DB
        export_sqlite(db, path)
    else:
        path = catalog_file(db)
    _checkpoint(path)
    meta = write_metadata(metadata_dir / "metadata.yml", path.stem)
    return [sys.executable, "-m", "datasette", *datasette_args(str(path), str(meta), host, port)]


def check_port(host: str, port: int) -> None:
    """Bind the port as uvicorn will (SO_REUSEADDR, uvicorn 0.54 config.py:601, so a TIME_WAIT socket is no
    obstacle) and let it go. Only a port in use is blamed on another server; an address that is not this
    machine's, or a privileged port, is named as such."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except socket.gaierror as e:
            raise PublishError(f"cannot listen on {host}: the host name does not resolve ({e.strerror or e}); "
                               "give an address of this machine with --host, e.g. 127.0.0.1") from None
        except OSError as e:
            why = e.strerror or str(e)
            if e.errno == errno.EADDRINUSE:
                raise PortBusy(f"cannot listen on {host}:{port} ({why}); another server holds it, "
                               "choose another with --port") from None
            if e.errno == errno.EADDRNOTAVAIL:
                raise PublishError(f"cannot listen on {host}: it is not an address of this machine ({why}); "
                                   "give one with --host, e.g. 127.0.0.1 or 0.0.0.0") from None
            if e.errno == errno.EACCES:
                raise PublishError(f"cannot listen on {host}:{port} ({why}); ports below 1024 need privileges, "
                                   "choose another with --port") from None
            raise PublishError(f"cannot listen on {host}:{port} ({why})") from None


def free_port(host: str = DEFAULT_HOST) -> int:
    """A port the OS says is free now, for ``serve`` and ``demo`` given no ``--port`` (or 0)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """Linux: datasette gets SIGTERM if `indexer serve` itself is killed (prctl PR_SET_PDEATHSIG)."""
    try:

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def _listening(host: str, port: int) -> bool:
    """Whether datasette accepts connections (uvicorn listens only after the app's startup,
    uvicorn 0.54 server.py:115-161, ``Server.startup``). A TCP connect, not an HTTP request: a request would put an
    access-log line into the middle of the URLs printed next."""
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=2):
            return True
    except OSError:
        return False


@contextmanager
def stop_on_signals():
    """SIGTERM (and SIGHUP) raise KeyboardInterrupt like Ctrl-C does, so every ``with`` block unwinds:
    datasette is stopped, the hub imitation shut down and temp dirs removed."""
    def _raise(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    old = {sig: signal.signal(sig, _raise) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _stop(proc: subprocess.Popen) -> int:
    if proc.poll() is None:
        proc.terminate()
        try:
            return proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


def serve(db: str | None = None, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, on_ready=None,
          ready_timeout: float = 60.0) -> int:
    """Run datasette until interrupted (Ctrl-C, SIGTERM, SIGHUP); returns its exit status.

    The port is checked first (:class:`PortBusy`); ``on_ready(url)`` is called once the server
    answers, so nothing claims to be serving before it does. Port 0 picks a free port.
    """
    if sqlite_path(resolve_url(db)) is not None:
        catalog_file(db)  # a missing file is reported before the port
    port = port or free_port(host)
    check_port(host, port)
    probe_host = "127.0.0.1" if host in ("0.0.0.0", "") else ("[::1]" if host == "::" else host)
    url = f"http://{host}:{port}/"
    with stop_on_signals(), scratch_dir(prefix="indexer-serve-") as tmp:
        cmd = serve_command(db, host, port, Path(tmp))
        # The site's explain view reads token lists from the catalog's token store, not the snapshot's.
        env = {**os.environ, "INDEXER_TOKENS": str(default_root(db))}
        proc = subprocess.Popen(cmd, env=env, preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        try:
            deadline = time.monotonic() + ready_timeout
            while not _listening(probe_host, port):
                if proc.poll() is not None:
                    raise PublishError(f"datasette exited with status {proc.returncode} before serving {url}")
                if time.monotonic() > deadline:
                    raise PublishError(f"datasette did not answer at {url} within {ready_timeout:.0f} s")
                time.sleep(0.1)
            if on_ready is not None:
                on_ready(url)
            return proc.wait()
        except KeyboardInterrupt:
            _stop(proc)
            return 0
        finally:
            _stop(proc)


def _checkpoint(path: Path) -> None:
    """Fold the WAL into the main file: an immutable reader ignores ``-wal`` files."""
    try:
        con = sqlite3.connect(path, timeout=30)
        try:
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            con.close()
    except sqlite3.Error:  # read-only location or busy writer: serve what is there
        pass


def compact_into(src: Path, dest: Path) -> dict:
    """``VACUUM INTO`` a temp file beside ``dest``, strip it of what may not be published (a repo id the copy does
    not hold: ``catalog/published.py``), check it, then atomically rename it over ``dest``."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()  # VACUUM INTO refuses an existing file
    try:
        # A catalog we cannot write may need immutable=1 to be read at all (indexer.catalog.db.read_only_uri).
        con = sqlite3.connect(read_only_uri(src) or f"file:{src}?mode=ro", uri=True, timeout=30)
        try:
            con.execute("VACUUM INTO ?", (str(tmp),))
        finally:
            con.close()
        con = sqlite3.connect(tmp)
        try:
            con.execute("PRAGMA journal_mode=DELETE")  # a single self-contained file for readers
            redact(con)
            public_tokens = public_token_shas(con)
            ok = con.execute("PRAGMA integrity_check").fetchone()[0]
            counts = {
                t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]
                for (t,) in con.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' "
                    "ORDER BY name"
                )
            }
        finally:
            con.close()
        if ok != "ok":
            raise PublishError(f"integrity check of the compacted copy failed: {ok}")
        os.chmod(tmp, 0o644)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, dest)
        fsync_dir(dest.parent)
    finally:
        if tmp.exists():
            tmp.unlink()
    return {"bytes": dest.stat().st_size, "sha256": sha256_file(dest), "tables": counts,
            "public_tokens": public_tokens}


def public_token_files(public_tokens: set[str]):
    """A ``copytree`` ignore: the token store's files a published copy leaves out (a gated repo's token lists,
    unless a public repo has the same; temporary files)."""
    def ignore(_dir, names):
        return [n for n in names if n.endswith(".tmp") or (n.endswith(".z") and token_sha(n) not in public_tokens)]

    return ignore


def _atomic_write(path: Path, text: str, mode: int = 0o644) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, "utf-8")
    os.chmod(tmp, mode)
    os.replace(tmp, path)


SERVE_SH = """#!/bin/sh
# Serve this bundle with datasette (read-only, immutable). Generated by `indexer publish`.
# Needs: pip install -r requirements.txt (the site plugin runs the bundled copy of indexer/).
set -e
cd "$(dirname "$0")"
export PYTHONPATH="$PWD${{PYTHONPATH:+:$PYTHONPATH}}"
exec {command}
"""

DOCKERFILE = """# Generated by `indexer publish`.
# docker build -t indexer-catalog . && docker run -p 8001:8001 indexer-catalog
FROM python:3.12-slim
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY catalog.db metadata.yml serve.sh manifest.json ./
COPY plugins ./plugins
COPY indexer ./indexer
# With `indexer publish --with-tokens`, also: COPY tokens ./tokens
ENV HOST=0.0.0.0 PORT=8001
EXPOSE 8001
CMD ["sh", "serve.sh"]
"""
BUNDLED_PACKAGE = "indexer"
BUNDLED_PLUGINS = "plugins"
BUNDLED_TOKENS = "tokens"
SITE_REQUIREMENTS = ("datasette", "datasette-pretty-json", "sqlalchemy", "orjson", "pyyaml", "tokenizers",
                     "huggingface_hub")


def _requirements() -> str:
    """What the bundled site imports: datasette and the modules behind /drafts and /explain."""
    lines = []
    for dist in SITE_REQUIREMENTS:
        try:
            lines.append(f"{dist}=={version(dist)}")
        except PackageNotFoundError:
            lines.append(dist)
    return "\n".join(lines) + "\n"


def bundle_command() -> str:
    """The exact command line serve.sh runs (host/port from $HOST/$PORT, defaults 127.0.0.1:8001)."""
    args = datasette_args(PUBLISHED_DB, "metadata.yml", "HOST_PLACEHOLDER", "PORT_PLACEHOLDER",
                          plugins_dir=BUNDLED_PLUGINS)
    line = " ".join(["python3", "-m", "datasette", *(shlex.quote(a) for a in args)])
    return line.replace("HOST_PLACEHOLDER", f'"${{HOST:-{DEFAULT_HOST}}}"').replace(
        "PORT_PLACEHOLDER", f'"${{PORT:-{DEFAULT_PORT}}}"'
    )


def _replace_dir(src: Path, dest: Path, ignore=None) -> None:
    """Copy ``src`` beside ``dest`` under a temp name, then swap it in (no half-copied package)."""
    tmp = dest.with_name(f".{dest.name}.tmp")
    old = dest.with_name(f".{dest.name}.old")
    for p in (tmp, old):
        shutil.rmtree(p, ignore_errors=True)
    shutil.copytree(src, tmp, ignore=ignore)
    if dest.exists():
        os.replace(dest, old)
    os.replace(tmp, dest)
    shutil.rmtree(old, ignore_errors=True)


def publish(db: str | None, outdir, *, with_tokens: bool = False) -> dict:
    """Write the datasette bundle into ``outdir``; returns a manifest dict.

    A SQLite catalog is compacted straight into the bundle; any other catalog (PostgreSQL) is first
    exported into a SQLite snapshot (:func:`export_sqlite`) and that is compacted. ``with_tokens``
    copies the token store too (``tokens/`` beside ``catalog.db``), so the site's explain view can
    run the llama.cpp and TLI checks on token text; without it they say the lists are unavailable.
    """
    url = resolve_url(db)
    out = output_dir(outdir)  # a file in the way, no permission: one line, exit 2
    with scratch_dir(prefix=".export-", dir=out) as tmp:
        if sqlite_path(url) is None:
            src = Path(tmp) / PUBLISHED_DB
            export_sqlite(db, src)
            source = safe_url(url)
        else:
            src = catalog_file(db)
            source = str(src)
            if out / PUBLISHED_DB == src.resolve():
                raise PublishError(f"OUTDIR {out} holds the catalog itself; publish into another directory")
        db_info = compact_into(src, out / PUBLISHED_DB)

    _atomic_write(out / "metadata.yml", yaml.safe_dump(load_metadata(), sort_keys=False, allow_unicode=True))
    package = package_path()  # the installed package (a wheel in site-packages, or the checkout)
    _replace_dir(package, out / BUNDLED_PACKAGE, shutil.ignore_patterns("__pycache__", "*.pyc", "hubsim"))
    _replace_dir(PLUGINS_DIR, out / BUNDLED_PLUGINS, shutil.ignore_patterns("__pycache__", "*.pyc"))
    tokens = default_root(db)
    if with_tokens and tokens.is_dir() and tokens.resolve() != (out / BUNDLED_TOKENS).resolve():
        _replace_dir(tokens, out / BUNDLED_TOKENS, public_token_files(db_info["public_tokens"]))
    elif not with_tokens and (out / BUNDLED_TOKENS).is_dir():
        shutil.rmtree(out / BUNDLED_TOKENS)
    _atomic_write(out / "serve.sh", SERVE_SH.format(command=bundle_command()), 0o755)
    _atomic_write(out / "requirements.txt", _requirements())
    _atomic_write(out / "Dockerfile", DOCKERFILE)
    manifest = {
        "published_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "source": source,
        "outdir": str(out),
        "database": PUBLISHED_DB,
        "bytes": db_info["bytes"],
        "sha256": db_info["sha256"],
        "tables": db_info["tables"],
        "token_lists": with_tokens,
        "serve": "sh serve.sh",
        "command": bundle_command(),
    }
    _atomic_write(out / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    return manifest


def integrity_check(db: str | None) -> str:
    """``PRAGMA integrity_check`` for SQLite catalogs ("ok" when healthy); "skipped" for other databases."""
    path = sqlite_path(resolve_url(db))
    if path is None:
        return "skipped"
    con = sqlite3.connect(read_only_uri(path) or f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        rows = [r[0] for r in con.execute("PRAGMA integrity_check")]
    finally:
        con.close()
    return "ok" if rows == ["ok"] else "; ".join(rows[:5])
