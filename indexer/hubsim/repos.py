"""Load a directory tree into in-memory Hub repositories (files, blob ids, metadata).

Two layouts are accepted at the root: ``<owner>/<name>/...`` and the flat ``<owner>__<name>/...``
used by the test corpus. Metadata comes from ``hub.json`` at the root (repo id -> fields) and/or
``.hubmeta.json`` inside a repo folder (the latter wins). ``renamed_from`` (a list of old ids) makes
those ids redirect to the repo, as the Hub does after a rename.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

HUB_META_FILE = "hub.json"
REPO_META_FILE = ".hubmeta.json"
LFS_NAMES = ("tokenizer.json",)
LFS_SUFFIXES = (".model", ".safetensors", ".bin", ".gguf")


def git_blob_sha1(data: bytes) -> str:
    """Git's blob id: what the Hub reports as ``oid``/``blobId`` for regular files."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    """The Git LFS pointer text; its git blob id is the Hub's ``blobId`` for an LFS file."""
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


def hub_date(ts: float) -> str:
    """Format a POSIX time the way the client accepts (must end in ``Z``, never ``+00:00``)."""
    dt = datetime.fromtimestamp(ts, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def split_flat_name(dirname: str) -> tuple[str, str] | None:
    """``owner__name[__more]`` -> (owner, name[__more]); None when there is no ``__``."""
    owner, sep, name = dirname.partition("__")
    if not sep or not owner or not name:
        return None
    return owner, name


@dataclass
class FileEntry:
    """One file of a repo, with the ids the Hub reports for it."""

    path: str  # relative, "/"-separated
    abs_path: str
    size: int  # real size on disk (what GET serves)
    blob_sha1: str  # git blob sha1 of the content
    sha256: str
    lfs: bool
    reported_size: int  # size shown in paths-info/siblings (may be faked via metadata)

    @property
    def oid(self) -> str:
        """Hub ``oid``: blob sha1 for regular files, blob sha1 of the LFS pointer for LFS files."""
        if self.lfs:
            return git_blob_sha1(lfs_pointer(self.sha256, self.reported_size))
        return self.blob_sha1

    @property
    def pointer_size(self) -> int:
        """Size of the file's LFS pointer, which the Hub reports as ``pointerSize``."""
        return len(lfs_pointer(self.sha256, self.reported_size))


@dataclass
class Repo:
    """One repo: its files and its metadata (hub.json / .hubmeta.json)."""

    id: str
    dir: str
    files: dict[str, FileEntry]
    meta: dict
    sha: str
    last_modified: str
    created_at: str
    dirs: dict[str, str] = field(default_factory=dict)  # directory path -> tree oid

    @property
    def owner(self) -> str:
        """The namespace (user or organisation) of the id."""
        return self.id.split("/", 1)[0]

    @property
    def gated(self):
        """False, or the gating mode (``"auto"``, ``"manual"``) as the Hub reports it."""
        return self.meta.get("gated", False) or False

    @property
    def private(self) -> bool:
        """Listed and served only with a token."""
        return bool(self.meta.get("private", False))

    @property
    def disabled(self) -> bool:
        """Its files answer 403, as a disabled repo's do."""
        return bool(self.meta.get("disabled", False))


class _HashCache:
    """Content hashes keyed by inode identity, so hard-linked copies are hashed once."""

    def __init__(self):
        self._cache: dict[tuple, tuple[str, str]] = {}
        self._lock = threading.Lock()

    def get(self, path: str, st: os.stat_result) -> tuple[str, str]:
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            hit = self._cache.get(key)
        if hit:
            return hit
        with open(path, "rb") as f:
            data = f.read()
        hit = (git_blob_sha1(data), hashlib.sha256(data).hexdigest())
        with self._lock:
            self._cache[key] = hit
        return hit


def _discover_repo_dirs(root: str) -> list[tuple[str, str]]:
    """Return [(repo_id, dir)] for both layouts; hidden entries and hub.json are skipped."""
    found = []
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        flat = split_flat_name(entry.name)
        has_files = any(e.is_file() and not e.name.startswith(".") for e in os.scandir(entry.path))
        if flat and has_files:
            found.append((f"{flat[0]}/{flat[1]}", entry.path))
            continue
        for sub in sorted(os.scandir(entry.path), key=lambda e: e.name):
            if sub.is_dir() and not sub.name.startswith("."):
                found.append((f"{entry.name}/{sub.name}", sub.path))
    return found


def _tree_oid(entries: list[tuple[str, str]]) -> str:
    h = hashlib.sha1()
    for name, oid in sorted(entries):
        h.update(f"{name}\0{oid}\n".encode())
    return h.hexdigest()


class RepoStore:
    """All repos of a hub directory; ``load()`` rescans (cheap: hashes are cached by inode)."""

    def __init__(self, root: str, lfs_threshold: int = 1 << 20):
        self.root = os.path.abspath(root)
        self.lfs_threshold = lfs_threshold
        self._hashes = _HashCache()
        self.repos: dict[str, Repo] = {}
        self.by_sha256: dict[str, FileEntry] = {}
        self.redirects: dict[str, str] = {}  # old id -> current id
        self.load()

    def is_lfs(self, rel_path: str, size: int) -> bool:
        """Whether the file is served as LFS: at least ``lfs_threshold`` bytes, or named as in LFS_NAMES /
        LFS_SUFFIXES."""
        name = rel_path.rsplit("/", 1)[-1]
        return size >= self.lfs_threshold or name in LFS_NAMES or name.endswith(LFS_SUFFIXES)

    def load(self) -> None:
        """Rescan the directory and the metadata (new files, changed contents and renames take effect)."""
        hub_meta = {}
        meta_path = os.path.join(self.root, HUB_META_FILE)
        if os.path.isfile(meta_path):
            with open(meta_path, encoding="utf-8") as f:
                hub_meta = json.load(f)
        repos, by_sha256, redirects = {}, {}, {}
        for repo_id, repo_dir in _discover_repo_dirs(self.root):
            meta = dict(hub_meta.get(repo_id) or {})
            local_meta = os.path.join(repo_dir, REPO_META_FILE)
            if os.path.isfile(local_meta):
                with open(local_meta, encoding="utf-8") as f:
                    meta.update(json.load(f))
            repo = self._load_repo(repo_id, repo_dir, meta)
            repos[repo_id] = repo
            for old in meta.get("renamed_from") or ():
                redirects[old] = repo_id
            for fe in repo.files.values():
                if fe.lfs:
                    by_sha256[fe.sha256] = fe
        _distinct_dates(repos)
        # Swap whole dicts so concurrent request threads always see a consistent snapshot.
        self.repos, self.by_sha256, self.redirects = repos, by_sha256, redirects

    def _edit_meta(self, fn) -> None:
        path = os.path.join(self.root, HUB_META_FILE)
        meta = {}
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                meta = json.load(f)
        fn(meta)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(meta, f)
        os.replace(path + ".tmp", path)

    def rename(self, old: str, new: str) -> None:
        """Move ``old`` to ``new`` (nested layout) and make ``old`` redirect there; then reload."""
        repo = self.repos[old]
        dest = os.path.join(self.root, *new.split("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        os.rename(repo.dir, dest)

        def edit(meta):
            entry = meta.pop(old, None) or {}
            entry["renamed_from"] = [*entry.get("renamed_from", []), old]
            meta[new] = entry

        self._edit_meta(edit)
        self.load()

    def delete(self, repo_id: str) -> None:
        """Remove a repo's folder and its metadata, as a deleted repo disappears from the Hub."""
        shutil.rmtree(self.repos[repo_id].dir)
        self._edit_meta(lambda meta: meta.pop(repo_id, None))
        self.load()

    def _load_repo(self, repo_id: str, repo_dir: str, meta: dict) -> Repo:
        fake_sizes = meta.get("fake_sizes") or {}
        files: dict[str, FileEntry] = {}
        newest = 0.0
        for dirpath, dirnames, filenames in os.walk(repo_dir, followlinks=True):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in filenames:
                if name == REPO_META_FILE or name.startswith(".git"):
                    continue
                abs_path = os.path.join(dirpath, name)
                st = os.stat(abs_path)
                rel = os.path.relpath(abs_path, repo_dir).replace(os.sep, "/")
                blob, sha256 = self._hashes.get(abs_path, st)
                files[rel] = FileEntry(
                    path=rel,
                    abs_path=abs_path,
                    size=st.st_size,
                    blob_sha1=blob,
                    sha256=sha256,
                    lfs=self.is_lfs(rel, st.st_size),
                    reported_size=int(fake_sizes.get(rel, st.st_size)),
                )
                newest = max(newest, st.st_mtime)
        files = dict(sorted(files.items()))
        # Like a git commit, the default sha depends on more than the tree: two repos with
        # identical files still get different shas.
        sha = meta.get("sha") or hashlib.sha1(
            (repo_id + "\n" + "".join(f"{p}\0{fe.oid}\n" for p, fe in files.items())).encode()
        ).hexdigest()
        # From file times (whole seconds) plus a millisecond offset of the id's own: copies made together
        # still get their own dates, stable across reloads (_distinct_dates settles the rare collision).
        ms = int(hashlib.sha1(repo_id.encode()).hexdigest()[:8], 16) % 1000 / 1000
        last_modified = meta.get("lastModified") or hub_date(int(newest) + ms)
        if "createdAt" not in meta and files:
            oldest = min(os.stat(fe.abs_path).st_mtime for fe in files.values())
            meta = {**meta, "_created_from_files": hub_date(int(oldest) + ms)}
        return Repo(
            id=repo_id,
            dir=repo_dir,
            files=files,
            meta=meta,
            sha=sha,
            last_modified=last_modified,
            created_at=meta.get("createdAt") or meta.get("_created_from_files") or last_modified,
            dirs=_directory_oids(files),
        )


def _distinct_dates(repos: dict[str, Repo]) -> None:
    """Every repo gets its own lastModified and createdAt, as on the Hub (a commit has its own time): dates
    taken from file times (copies share them) move on by a millisecond until unique; metadata dates stay."""
    for attr, key in (("last_modified", "lastModified"), ("created_at", "createdAt")):
        used = {getattr(r, attr) for r in repos.values() if r.meta.get(key)}
        for repo in sorted(repos.values(), key=lambda r: (getattr(r, attr), r.id)):
            if repo.meta.get(key):
                continue
            value = getattr(repo, attr)
            while value in used:
                value = _plus_ms(value)
            used.add(value)
            setattr(repo, attr, value)
    for repo in repos.values():  # createdAt never after lastModified
        if not repo.meta.get("createdAt") and repo.created_at > repo.last_modified:
            repo.created_at = repo.last_modified


def _plus_ms(date: str) -> str:
    dt = datetime.strptime(date, "%Y-%m-%dT%H:%M:%S.%fZ") + timedelta(milliseconds=1)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _directory_oids(files: dict[str, FileEntry]) -> dict[str, str]:
    """Tree oids for every sub-directory (root excluded), derived from their contents."""
    children: dict[str, list[tuple[str, str]]] = {}
    for p, fe in files.items():
        parts = p.split("/")
        for i in range(1, len(parts)):
            children.setdefault("/".join(parts[:i]), [])
        parent = "/".join(parts[:-1])
        if parent:
            children[parent].append((parts[-1], fe.oid))
    oids: dict[str, str] = {}
    for d in sorted(children, key=lambda d: -d.count("/")):  # deepest first
        sub = [(c.rsplit("/", 1)[-1], oids[c]) for c in oids if c.rsplit("/", 1)[0] == d and "/" in c]
        oids[d] = _tree_oid(children[d] + sub)
    return oids
