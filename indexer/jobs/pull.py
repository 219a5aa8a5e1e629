"""``indexer pull``: the newest published snapshot (``indexer publish --to-hub``) becomes the local catalog.

1. One cheap request: ``dataset_info(files_metadata=True)`` names the commit and the snapshot's LFS sha256
   (docs/hub-upload.md §3). When it equals the local catalog's (remembered in ``<catalog>.pulled.json`` with the file's
   size and mtime, else hashed) and the token store is the published one, nothing is downloaded.
2. Otherwise the snapshot is downloaded into a staging directory beside the catalog (same filesystem, so the
   rename is atomic), with the client's progress bar. The client checks only the size (§3): the sha256 is
   checked here, then ``PRAGMA integrity_check``, the schema revision (newer than this version knows: "upgrade
   indexer") and the schema itself: every table, column, index, view and trigger must be what the project's
   migrations make at that revision (``catalog.snapshot.schema_differences``), so a snapshot cannot hand a reader
   a missing column, a view that never ends or a trigger. An older revision is then migrated in place.
3. The token store (``tokens.tar``) is checked the same way, then each new file against its name (the store is
   content-addressed: ``tokenstore.check_item``), and merged into the store beside the catalog (each file
   renamed into place), before the catalog is swapped, so the new catalog never
   lacks a token list it names.
4. The old catalog's journal or WAL is settled (a stale ``-wal`` beside a new file would be replayed into it),
   the staged file fsynced and ``os.replace``d over the catalog, the directory fsynced.

A kill -9, a full disk, a corrupt or truncated download at any step leaves the old catalog as it was: nothing
touches it before step 4, and the rename is one atomic step. A pull removes its staging folder on every way out
(an error, Ctrl-C, SIGTERM); one left by a kill -9 is removed at the start of the next pull, whether or not that
one downloads (under ``<catalog>.pull.lock``).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import sqlite3
import tarfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from huggingface_hub import get_token
from huggingface_hub.utils import disable_progress_bars

from ..catalog.db import resolve_url, sqlite_path, upgrade
from ..catalog.measurements import COLUMNS
from ..catalog.snapshot import check_revision, integrity, schema_differences
from ..catalog.tokenstore import check_item, default_root
from ..errors import DatasetError
from ..files import fsync_dir, sha256_file
from ..hub.dataset import DatasetRepo
from ..hub.session import RequestCounter
from .hubpublish import MANIFEST, SNAPSHOT, TOKENS

DEFAULT_CATALOG_REPO = "indexer-project/catalog"  # the published catalog; INDEXER_CATALOG_REPO overrides it
REPO_ENV = "INDEXER_CATALOG_REPO"
STAGING_PREFIX = ".pull-"
TOKEN_NAME = re.compile(r"[0-9a-f]{2}/[0-9a-f]{64}\.(json|tokens|counts)\.z")


def source_repo(repo: str | None = None) -> str:
    """Where to pull from: ``--from``, else ``$INDEXER_CATALOG_REPO``, else :data:`DEFAULT_CATALOG_REPO`."""
    return repo or os.environ.get(REPO_ENV) or DEFAULT_CATALOG_REPO


def state_path(path: Path) -> Path:
    """``<catalog>.pulled.json``: what was pulled last (commit, the published sha256, and the local file's size
    and mtime), so an unchanged pull does not hash the catalog again, and a migrated copy still counts as it."""
    return path.with_name(path.name + ".pulled.json")


def local_sha256(path: Path) -> str | None:
    """The catalog file's sha256 (from the state file when size and mtime still match), None if absent."""
    if not path.is_file():
        return None
    st = path.stat()
    try:
        state = json.loads(state_path(path).read_text("utf-8"))
        if state.get("size") == st.st_size and state.get("mtime_ns") == st.st_mtime_ns:
            return state["sha256"]
    except (OSError, ValueError, KeyError):
        pass
    return sha256_file(path)


def _state(path: Path) -> dict:
    try:
        return json.loads(state_path(path).read_text("utf-8"))
    except (OSError, ValueError):
        return {}


@contextmanager
def _pull_lock(path: Path):
    fd = os.open(path.with_name(path.name + ".pull.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DatasetError(f"another pull into {path} is running") from None
        yield
    finally:
        os.close(fd)


def _verify(file: Path, sha256: str, size: int, name: str) -> None:
    got = file.stat().st_size
    if got != size:
        raise DatasetError(f"the downloaded {name} has {got} bytes, not the {size} published; the old catalog is "
                           "kept", exit_code=1)
    if sha256_file(file) != sha256:
        raise DatasetError(f"the downloaded {name} does not match its published sha256 (corrupt download); the "
                           "old catalog is kept", exit_code=1)


def check_staged(staged: Path) -> dict:
    """Integrity, schema revision and schema of the staged snapshot (every table, column, index, view and trigger
    as the migrations make them at its revision); an older revision is migrated in place."""
    ok = integrity(staged)
    if ok != "ok":
        raise DatasetError(f"the downloaded catalog fails its integrity check ({ok}); the old catalog is kept",
                           exit_code=1)
    try:
        rev, older = check_revision(staged)
    except Exception as e:  # CatalogError: newer than this version, or not a catalog
        raise DatasetError(str(e)) from None
    wrong = schema_differences(staged, rev)
    if wrong:  # a reader would fail on it (a missing column), hang (a view over an endless CTE), or a crawl would
        raise DatasetError(f"the downloaded catalog's schema is not the one revision {rev} makes "  # (triggers)
                           f"({'; '.join(wrong[:4])}{'; ...' if len(wrong) > 4 else ''}); the old catalog is kept",
                           exit_code=1)
    out = {"schema_revision": rev, "migrated_from": None}
    if older:

        upgrade(str(staged))
        _journal_delete(staged)
        out = {"schema_revision": check_revision(staged)[0], "migrated_from": rev}
    return out


def keep_measurements(old: Path, staged: Path) -> int:
    """Copy into the staged snapshot the local catalog's measurements (``indexer measure``) it lacks: a pull brings
    the published ones and never loses those made here. A row is the same when its pair, engine, device, task and
    time are. Returns how many were kept."""
    if not old.exists():
        return 0
    con = sqlite3.connect(staged.resolve().as_uri(), uri=True)
    try:
        con.execute("ATTACH DATABASE ? AS old", (old.resolve().as_uri() + "?mode=ro",))
        have = {r[0] for r in con.execute("SELECT name FROM old.sqlite_master WHERE type = 'table'")}
        mine = {r[0] for r in con.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")}
        if "measurements" not in have or "measurements" not in mine:
            return 0
        cols = ", ".join(COLUMNS)
        missing = ("FROM old.measurements o WHERE NOT EXISTS (SELECT 1 FROM main.measurements m WHERE m.target = "
                   "o.target AND m.draft = o.draft AND m.engine = o.engine AND m.task = o.task AND m.measured_at = "
                   "o.measured_at AND COALESCE(m.hardware, '') = COALESCE(o.hardware, ''))")
        if not con.execute(f"SELECT COUNT(*) {missing}").fetchone()[0]:
            return 0  # the staged file stays byte for byte the published one
        n = con.execute(f"INSERT INTO main.measurements ({cols}) SELECT {cols} {missing} ORDER BY o.id").rowcount
        con.commit()
        return n
    except sqlite3.DatabaseError:
        return 0  # an old file that is no catalog: nothing to keep
    finally:
        con.close()


def _journal_delete(path: Path) -> None:
    """Settle a SQLite file into one self-contained file: a hot journal rolled back, a WAL checkpointed and
    removed (``journal_mode=DELETE``). A stale ``-wal`` or ``-journal`` left beside a replaced file would be
    applied to the new one."""
    con = sqlite3.connect(path, timeout=10)
    try:
        con.execute("PRAGMA journal_mode=DELETE")
    finally:
        con.close()


def merge_tokens(archive: Path, root: Path) -> int:
    """Merge the published token store into ``root``: every new or changed file checked against its name (the
    store is content-addressed: ``tokenstore.check_item``) before any is written, then each written beside its
    place and renamed into it; returns how many files were new or changed."""
    with tarfile.open(archive, "r:") as tar:
        for member in tar:
            if not (member.isfile() and TOKEN_NAME.fullmatch(member.name)):
                raise DatasetError(f"{TOKENS} holds {member.name!r}, not a token store file; nothing merged; the "
                                   "old catalog is kept", exit_code=1)
        changed = []
        for member in tar.getmembers():
            file = tar.extractfile(member)
            assert file is not None  # every member is a regular file (checked above)
            data = file.read()
            dest = root / member.name
            if dest.is_file() and dest.read_bytes() == data:
                continue
            try:
                check_item(member.name, data)
            except ValueError as e:
                raise DatasetError(f"{TOKENS} holds {member.name} whose content does not match its name ({e}); "
                                   "nothing merged; the old catalog is kept", exit_code=1) from None
            changed.append(member)
        for member in changed:
            file = tar.extractfile(member)
            assert file is not None  # every member is a regular file (checked above)
            data = file.read()
            dest = root / member.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, dest)
    return len(changed)


def pull(db: str | None = None, *, repo: str | None = None, revision: str = "main", endpoint: str | None = None,
         token: str | None = None, progress: bool = True, log=lambda _m: None) -> dict:
    """Make the published catalog of ``repo`` at ``revision`` the catalog ``db``; returns what was done
    (``status`` ``unchanged`` or ``pulled``, the commit, sha256, bytes downloaded, migration, ``requests``: the
    HTTP requests it sent, redirects followed included)."""
    with RequestCounter() as counter:
        done = _pull(db, repo=repo, revision=revision, endpoint=endpoint, token=token, progress=progress, log=log)
    return {**done, "requests": counter.requests}


def _pull(db: str | None, *, repo: str | None, revision: str, endpoint: str | None, token: str | None,
          progress: bool, log) -> dict:

    path = sqlite_path(resolve_url(db))
    if path is None:
        raise DatasetError("pull writes a SQLite catalog: give --db a file path")
    _remove_stale_staging(path)  # left by a killed pull (kill -9): gone whatever this pull does
    repo_id = source_repo(repo)
    hub = DatasetRepo(repo_id, endpoint=endpoint, token=token or get_token())
    if not progress:
        disable_progress_bars()
    info = hub.info(revision)  # the one cheap request
    files = {s.rfilename: s for s in info.siblings or []}
    snap, toks = files.get(SNAPSHOT), files.get(TOKENS)
    if snap is None or snap.lfs is None:
        raise DatasetError(f"{repo_id} at {info.sha[:12]} has no {SNAPSHOT}: not a catalog published by "
                           "`indexer publish --to-hub`")
    result = {"repo": repo_id, "revision": revision, "commit": info.sha, "db": str(path),
              "sha256": snap.lfs.sha256, "bytes": snap.lfs.size, "downloaded_bytes": 0, "token_files": 0,
              "migrated_from": None}
    token_root = default_root(db)
    tokens_current = toks is None or (_state(path).get("tokens_sha256") == toks.lfs.sha256 and token_root.is_dir())
    if local_sha256(path) == snap.lfs.sha256 and tokens_current:
        return {**result, "status": "unchanged"}
    path.parent.mkdir(parents=True, exist_ok=True)
    with _pull_lock(path):
        staging = path.parent / f"{STAGING_PREFIX}{path.name}-{uuid.uuid4().hex[:8]}"
        try:
            staging.mkdir()
            return _swap_in(hub, info, path, staging, snap, toks, token_root, tokens_current, result, log)
        except OSError as e:  # full disk, no permission: the old catalog is untouched until the rename
            raise DatasetError(f"cannot pull into {path.parent}: {e.strerror or e}; the old catalog is kept",
                               exit_code=1) from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _remove_stale_staging(path: Path) -> None:
    """Remove the staging folders a killed pull left beside ``path``; none while another pull runs (they are
    its own)."""
    stale = list(path.parent.glob(f"{STAGING_PREFIX}{path.name}-*")) if path.parent.is_dir() else []
    if not stale:
        return
    try:
        with _pull_lock(path):
            for old in path.parent.glob(f"{STAGING_PREFIX}{path.name}-*"):
                shutil.rmtree(old, ignore_errors=True)
    except DatasetError:  # another pull holds the lock
        pass


def _swap_in(hub, info, path: Path, staging: Path, snap, toks, token_root: Path, tokens_current: bool,
             result: dict, log) -> dict:
    """Steps 2-4 of the module docstring, inside ``staging``; the old catalog is replaced by the last rename."""
    repo_id = hub.repo_id
    manifest = hub.read_json(MANIFEST, info.sha, staging / "meta") or {}
    published = (manifest.get("snapshot") or {}).get("sha256")
    if published and published != snap.lfs.sha256:
        raise DatasetError(f"{repo_id}: manifest.json names another snapshot than the one stored")
    staged = None
    if local_sha256(path) != snap.lfs.sha256:
        log(f"downloading {SNAPSHOT} ({snap.lfs.size} bytes) from {repo_id} at {info.sha[:12]}")
        t0 = time.perf_counter()
        staged = hub.download(SNAPSHOT, info.sha, staging)
        t1 = time.perf_counter()
        _verify(staged, snap.lfs.sha256, snap.lfs.size, SNAPSHOT)
        t2 = time.perf_counter()
        result["downloaded_bytes"] += snap.lfs.size
        result.update(check_staged(staged))
        result["seconds"] = {"download": round(t1 - t0, 3), "sha256": round(t2 - t1, 3),
                             "integrity_and_schema": round(time.perf_counter() - t2, 3)}
    if toks is not None and not tokens_current:
        tar = hub.download(TOKENS, info.sha, staging)
        _verify(tar, toks.lfs.sha256, toks.lfs.size, TOKENS)
        result["downloaded_bytes"] += toks.lfs.size
        result["token_files"] = merge_tokens(tar, token_root)
    if staged is not None:
        result["kept_measurements"] = keep_measurements(path, staged)
        if path.exists():
            try:
                _journal_delete(path)
            except sqlite3.Error as e:
                if "not a database" not in str(e):  # a broken old file is simply replaced
                    raise DatasetError(f"cannot replace {path}: {e} (a crawl or another writer has it "
                                       "open; stop it and pull again)") from None
        with open(staged, "rb") as f:
            os.fsync(f.fileno())
        os.chmod(staged, 0o644)
        os.replace(staged, path)
        fsync_dir(path.parent)
    st = path.stat()
    state = {"repo": repo_id, "commit": info.sha, "sha256": snap.lfs.sha256, "size": st.st_size,
             "mtime_ns": st.st_mtime_ns, "tokens_sha256": toks.lfs.sha256 if toks else None,
             "created_at": manifest.get("created_at")}
    tmp = staging / "state.json"
    tmp.write_text(json.dumps(state, indent=1) + "\n", "utf-8")
    os.replace(tmp, state_path(path))
    return {**result, "status": "pulled", "created_at": manifest.get("created_at")}
