"""Helpers for the crawler tests: tiny hub trees, a crawl runner, catalog snapshots."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from tokfactory import make_model

from indexer.crawl.loop import Crawler, CrawlOptions

NO_HUB = "http://127.0.0.1:9"  # a closed port, as tests/conftest.py sets HF_ENDPOINT


def write_repo(hub_dir: Path, repo_id: str, **kw) -> Path:
    return make_model(hub_dir / repo_id, **kw)


def set_meta(hub_dir: Path, repo_id: str, **fields) -> None:
    path = hub_dir / "hub.json"
    meta = json.loads(path.read_text()) if path.exists() else {}
    meta.setdefault(repo_id, {}).update(fields)
    path.write_text(json.dumps(meta))


def copy_repo(hub_dir: Path, src: str, dst: str) -> Path:
    shutil.copytree(hub_dir / src, hub_dir / dst)
    return hub_dir / dst


def crawl(db: str, hub, **kw) -> dict:
    opts = dict(all=True, endpoint=hub.endpoint, quiet=True, base_delay=0.01, retries=3)
    opts.update(kw)
    return Crawler(db, CrawlOptions(**opts)).run()


def crawled_catalog(root: Path, hub_dir: Path) -> str:
    """root/catalog.db made by the real migrations, one crawl of ``hub_dir`` through the imitation, then compute."""
    from indexer.catalog.compute import compute
    from indexer.catalog.db import upgrade
    from indexer.hubsim import HubServer

    db = str(root / "catalog.db")
    upgrade(db)
    with HubServer(str(hub_dir)) as server:
        crawl(db, server)
    compute(db)
    return db


def repos(db: str) -> dict[str, dict]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        out = {}
        for r in con.execute(
            "select r.*, t.vocab_sha256 as vocab_sha, f.key as fs_key from repos r "
            "left join tokenizers t on t.id = r.tokenizer_id left join file_sets f on f.id = r.file_set_id"
        ):
            out[r["repo_id"]] = dict(r)
        return out
    finally:
        con.close()


STABLE = ("repo_id", "sha", "status", "reason", "author", "family", "is_chat", "params", "base_models",
          "tags", "gated", "model_type", "architectures", "vocab_size", "vocab_size_transformers",
          "text_config_key", "config_blob", "vocab_sha", "fs_key", "downloads", "likes")


def snapshot(db: str) -> dict:
    """The catalog's content without ids, timestamps and run ids (comparable across crawls)."""
    con = sqlite3.connect(db)
    try:
        blobs = sorted(con.execute("select blob_id, sha256, size from blobs").fetchall())
        toks = sorted(con.execute("select vocab_sha256, base_vocab_sha256, vocab_len, repo_count "
                                  "from tokenizers"))
        sets = sorted(con.execute("select key, status, reason from file_sets").fetchall())
    finally:
        con.close()
    rows = {k: {c: v[c] for c in STABLE} for k, v in repos(db).items()}
    return {"repos": rows, "blobs": blobs, "tokenizers": toks, "file_sets": sets}


def hermetic_env(tmp: Path) -> dict:
    env = dict(os.environ)
    env.update(HF_HOME=str(tmp / "hf-home"), HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_XET="1",
               HF_HUB_DISABLE_PROGRESS_BARS="1")
    for var in ("HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT", "INDEXER_DB"):
        env.pop(var, None)
    env["HF_ENDPOINT"] = NO_HUB  # never the real Hub (tests/conftest.py)
    return env


CLI = [sys.executable, "-c", "from indexer.cli import cli; cli()"]  # the command line, in a subprocess


def run_cli(args: list[str], tmp: Path, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    """``indexer ARGS`` in a subprocess with :func:`hermetic_env`, its output captured as text."""
    return subprocess.run(CLI + args, env=hermetic_env(tmp), capture_output=True, text=True, timeout=timeout, **kw)


def six_repo_hub(tmp: Path) -> Path:
    """Six small meta-llama repos, each with a vocabulary of its own, in ``tmp/hub``."""
    d = tmp / "hub"
    for i in range(6):
        write_repo(d, f"meta-llama/model-{i}", words=[f"w{i}x{j}" for j in range(40)])
    return d
