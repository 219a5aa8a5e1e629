"""Helpers for the Hub dataset tests (publish --to-hub, pull): the demo catalog built once, copies of it, a Hub
imitation with a write and a read-only token, and the CLI run in-process against it."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from indexer.cli import cli
from indexer.hubsim import HubServer

WRITE = "hf_testWriteToken0123456789"
READ = "hf_testReadToken0123456789"
ORG = "org"


def dataset_hub(root: Path, **kw) -> HubServer:
    """An imitation whose write token may write in ``org`` only (a repo elsewhere cannot be created)."""
    (root / "models").mkdir(parents=True, exist_ok=True)
    kw.setdefault("tokens", {WRITE: "write", READ: "read"})
    kw.setdefault("dataset_namespaces", {ORG})
    return HubServer(str(root / "models"), dataset_dir=str(root / "datasets"), **kw)


def copy_catalog(src: Path, dest_dir: Path, *, tokens: bool = True) -> Path:
    """The catalog (and its token store) copied into ``dest_dir``: catalog.db, tokens/. SQLite's backup API, so
    what a WAL still holds is copied too."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    con, out = sqlite3.connect(src), sqlite3.connect(dest_dir / "catalog.db")
    try:
        con.backup(out)
    finally:
        con.close()
        out.close()
    if tokens and (src.parent / "tokens").is_dir():
        shutil.copytree(src.parent / "tokens", dest_dir / "tokens")
    return dest_dir / "catalog.db"


def touch_catalog(db: Path, minutes_later: int = 1) -> None:
    """Change the catalog as a later crawl would: one more download, the last crawl run ending later."""
    con = sqlite3.connect(db)
    try:
        con.execute("UPDATE repos SET downloads = coalesce(downloads, 0) + 1 WHERE id = (SELECT min(id) FROM repos)")
        con.execute(f"UPDATE crawl_runs SET finished_at = datetime(finished_at, '+{minutes_later} minutes')")
        con.commit()
    finally:
        con.close()


def run(args: list[str], monkeypatch, token: str | None = WRITE, **env) -> tuple[int, str, str]:
    """``indexer ARGS`` in-process with HF_TOKEN set (or unset): (exit code, stdout, stderr)."""
    if token is None:
        monkeypatch.delenv("HF_TOKEN", raising=False)
    else:
        monkeypatch.setenv("HF_TOKEN", token)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    return res.exit_code, res.stdout, res.stderr


def publish(db: Path, hub: HubServer, monkeypatch, repo: str = f"{ORG}/catalog", token: str | None = WRITE,
            *extra: str) -> tuple[int, str, str]:
    """``indexer publish --to-hub REPO --db DB --json`` against ``hub``."""
    return run(["publish", "--db", str(db), "--to-hub", repo, "--endpoint", hub.endpoint, "--json", *extra],
               monkeypatch, token)


def sha256(path: Path) -> str:
    """The file's sha256, to compare catalogs byte for byte."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def remote_files(hub: HubServer, repo: str = f"{ORG}/catalog") -> dict:
    """Path -> FileEntry at the head of a dataset repo of the imitation."""
    return dict(hub.datasets.repos[repo].head.files)


def remote_json(hub: HubServer, path: str, repo: str = f"{ORG}/catalog") -> dict:
    """A JSON file at the head of a dataset repo of the imitation, read from its store."""
    return json.loads(Path(remote_files(hub, repo)[path].abs_path).read_text())
