"""Publish the catalog with datasette: serve it read-only, or bundle a compacted snapshot.

``serve`` runs ``python -m datasette serve -i CATALOG --metadata data/metadata.yml`` (immutable:
datasette never writes and trusts the file not to change under it). ``publish`` writes a bundle:
``catalog.db`` (compacted with ``VACUUM INTO`` into a temp file in the bundle, then renamed over the
old one: a running site never sees a half-written database), ``metadata.yml``, ``serve.sh`` with the
exact command line, ``requirements.txt``, a ``Dockerfile`` and ``manifest.json``.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from .db import PROJECT_ROOT, CatalogError, resolve_url, sqlite_path
from .files import sha256_file

METADATA_PATH = PROJECT_ROOT / "data" / "metadata.yml"
METADATA_DB_KEY = "catalog"
PUBLISHED_DB = "catalog.db"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8001
DATASETTE_SETTINGS = (("sql_time_limit_ms", "3000"), ("default_page_size", "50"))


class PublishError(Exception):
    pass


def catalog_file(db: str | None) -> Path:
    """The SQLite file behind ``--db``; datasette publishing needs a file."""
    url = resolve_url(db)
    path = sqlite_path(url)
    if path is None:
        raise PublishError(
            f"datasette publishes SQLite files; {url.split('://', 1)[0]} catalogs cannot be served "
            "(copy it to SQLite first, or point --db at a .db file)"
        )
    if not path.exists():
        raise CatalogError(f"catalog {path} does not exist; run `indexer crawl` or `indexer demo` first")
    return path


def load_metadata(db_name: str = METADATA_DB_KEY) -> dict:
    """data/metadata.yml with its database section keyed by ``db_name`` (datasette uses the file stem)."""
    import yaml

    with open(METADATA_PATH, encoding="utf-8") as f:
        meta = yaml.safe_load(f)
    dbs = meta.get("databases") or {}
    if db_name != METADATA_DB_KEY and METADATA_DB_KEY in dbs:
        dbs[db_name] = dbs.pop(METADATA_DB_KEY)
    return meta


def write_metadata(path: Path, db_name: str = METADATA_DB_KEY) -> Path:
    import yaml

    path.write_text(yaml.safe_dump(load_metadata(db_name), sort_keys=False, allow_unicode=True), "utf-8")
    return path


def datasette_args(db_file: str, metadata: str, host: str = DEFAULT_HOST, port=DEFAULT_PORT,
                   plugins_dir: str | None = None) -> list:
    """``datasette serve`` arguments: immutable catalog, our metadata and the site plugin (indexer/site)."""
    from .site import PLUGINS_DIR

    args = ["serve", "-i", str(db_file), "--metadata", str(metadata), "--host", host, "--port", str(port),
            "--plugins-dir", str(plugins_dir or PLUGINS_DIR)]
    for name, value in DATASETTE_SETTINGS:
        args += ["--setting", name, value]
    return args


def serve_command(db: str | None, host: str, port: int, metadata_dir: Path) -> list[str]:
    """The datasette command line for ``indexer serve`` (metadata rendered into ``metadata_dir``)."""
    path = catalog_file(db)
    _checkpoint(path)
    meta = write_metadata(metadata_dir / "metadata.yml", path.stem)
    return [sys.executable, "-m", "datasette", *datasette_args(str(path), str(meta), host, port)]


def serve(db: str | None = None, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> int:
    """Run datasette in the foreground until interrupted; returns its exit status."""
    with tempfile.TemporaryDirectory(prefix="indexer-serve-") as tmp:
        cmd = serve_command(db, host, port, Path(tmp))
        proc = subprocess.Popen(cmd)
        try:
            return proc.wait()
        except KeyboardInterrupt:
            proc.terminate()
            try:
                return proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                return proc.wait()


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
    """``VACUUM INTO`` a temp file beside ``dest``, check it, then atomically rename it over ``dest``."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()  # VACUUM INTO refuses an existing file
    try:
        con = sqlite3.connect(f"file:{src}?mode=ro", uri=True, timeout=30)
        try:
            con.execute("VACUUM INTO ?", (str(tmp),))
        finally:
            con.close()
        con = sqlite3.connect(tmp)
        try:
            con.execute("PRAGMA journal_mode=DELETE")  # a single self-contained file for readers
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
        _fsync_dir(dest.parent)
    finally:
        if tmp.exists():
            tmp.unlink()
    return {"bytes": dest.stat().st_size, "sha256": sha256_file(dest), "tables": counts}


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _atomic_write(path: Path, text: str, mode: int = 0o644) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, "utf-8")
    os.chmod(tmp, mode)
    os.replace(tmp, path)


SERVE_SH = """#!/bin/sh
# Serve this bundle with datasette (read-only, immutable). Generated by `indexer publish`.
# Needs: pip install -r requirements.txt
set -e
cd "$(dirname "$0")"
exec {command}
"""

DOCKERFILE = """# Generated by `indexer publish`.
# docker build -t indexer-catalog . && docker run -p 8001:8001 indexer-catalog
FROM python:3.12-slim
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY catalog.db metadata.yml serve.sh manifest.json ./
ENV HOST=0.0.0.0 PORT=8001
EXPOSE 8001
CMD ["sh", "serve.sh"]
"""


def _requirements() -> str:
    from importlib.metadata import PackageNotFoundError, version

    lines = []
    for dist in ("datasette", "datasette-pretty-json"):
        try:
            lines.append(f"{dist}=={version(dist)}")
        except PackageNotFoundError:
            lines.append(dist)
    return "\n".join(lines) + "\n"


def bundle_command() -> str:
    """The exact command line serve.sh runs (host/port from $HOST/$PORT, defaults 127.0.0.1:8001)."""
    args = datasette_args(PUBLISHED_DB, "metadata.yml", "HOST_PLACEHOLDER", "PORT_PLACEHOLDER")
    line = " ".join(["python3", "-m", "datasette", *(shlex.quote(a) for a in args)])
    return line.replace("HOST_PLACEHOLDER", f'"${{HOST:-{DEFAULT_HOST}}}"').replace(
        "PORT_PLACEHOLDER", f'"${{PORT:-{DEFAULT_PORT}}}"'
    )


def publish(db: str | None, outdir) -> dict:
    """Write the datasette bundle into ``outdir``; returns a manifest dict."""
    src = catalog_file(db)
    out = Path(outdir).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    if out / PUBLISHED_DB == src.resolve():
        raise PublishError(f"OUTDIR {out} holds the catalog itself; publish into another directory")
    db_info = compact_into(src, out / PUBLISHED_DB)
    import yaml

    _atomic_write(out / "metadata.yml", yaml.safe_dump(load_metadata(), sort_keys=False, allow_unicode=True))
    _atomic_write(out / "serve.sh", SERVE_SH.format(command=bundle_command()), 0o755)
    _atomic_write(out / "requirements.txt", _requirements())
    _atomic_write(out / "Dockerfile", DOCKERFILE)
    manifest = {
        "published_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "source": str(src),
        "outdir": str(out),
        "database": PUBLISHED_DB,
        "bytes": db_info["bytes"],
        "sha256": db_info["sha256"],
        "tables": db_info["tables"],
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
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        rows = [r[0] for r in con.execute("PRAGMA integrity_check")]
    finally:
        con.close()
    return "ok" if rows == ["ok"] else "; ".join(rows[:5])
