"""Dataset repos of the Hub imitation: a git-like history of file snapshots, and the LFS objects of each repo.

Repos live under one directory (a temp dir by default): regular files' contents under ``blobs/<git sha1>``,
LFS objects under ``lfs/<sha256>``, so the server streams both from disk as it streams model files
(``FileEntry``). A repo is born with one commit holding ``.gitattributes``, as the Hub's "initial commit" is;
every commit is kept, so any earlier commit can still be read (``revision=<sha>``).

What the real Hub does, and where it is written (docs: docs/hub-upload.md):

* regular files over 10 MiB are refused by the commit endpoint (400, huggingface_hub issue #2666);
* a commit whose ``parentCommit`` is not the branch head is refused (412, huggingface_hub
  ``tests/test_hf_api.py:751-772``);
* the commit endpoint adds a ``.gitattributes`` line for every path committed as ``lfsFile`` that no pattern
  tracks yet (huggingface.js ``api-commit.ts:109-110``; huggingface_hub issue #1472).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field

from .repos import FileEntry, git_blob_sha1, hub_date

REGULAR_LIMIT = 10 << 20  # the commit endpoint's limit for a regular file (docs/hub-upload.md §2.6)
# A subset of the Hub's default dataset .gitattributes (the full template is unverified, docs/hub-upload.md §6):
# archives and columnar data; ``*.sqlite`` is not listed, so a SQLite file becomes LFS by its binary sample.
LFS_PATTERNS = ("*.7z", "*.arrow", "*.bin", "*.gz", "*.parquet", "*.safetensors", "*.tar", "*.tar.*", "*.tgz",
                "*.zip", "*.zst")
LFS_LINE = "{} filter=lfs diff=lfs merge=lfs -text\n"


def gitattributes_text(patterns) -> str:
    """The ``.gitattributes`` that tracks ``patterns`` with LFS, one line each."""
    return "".join(LFS_LINE.format(p) for p in patterns)


def lfs_patterns(text: str) -> list[str]:
    """The patterns a ``.gitattributes`` text sends to LFS (``filter=lfs``)."""
    return [line.split()[0] for line in text.splitlines() if line.strip() and "filter=lfs" in line.split()[1:]]


def tracked(path: str, patterns) -> bool:
    """Whether a pattern of ``.gitattributes`` matches ``path`` (a bare pattern matches the file name)."""
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(path if "/" in p else name, p) for p in patterns)


@dataclass
class Commit:
    """One commit: its id, parent, words, date and the whole file tree at it."""

    oid: str
    parent: str | None
    title: str
    message: str
    date: str
    files: dict[str, FileEntry]

    @property
    def dirs(self) -> set[str]:
        """Every directory of the tree (paths-info and tree answer them as ``directory``)."""
        out: set[str] = set()
        for p in self.files:
            parts = p.split("/")[:-1]
            out.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        return out


@dataclass
class DatasetRepo:
    """A dataset repo: its commits (oldest first) and the LFS objects uploaded to it (sha256 -> size)."""

    id: str
    private: bool
    created_at: str
    commits: list[Commit] = field(default_factory=list)
    objects: dict[str, int] = field(default_factory=dict)

    @property
    def head(self) -> Commit:
        """The commit ``main`` points at."""
        return self.commits[-1]

    def at(self, rev: str) -> Commit | None:
        """The commit a revision names: ``main`` or a full commit id; None when there is none."""
        if rev == "main":
            return self.head
        return next((c for c in self.commits if c.oid == rev), None)


STATE_FILE = "repos.json"  # the repos' commits and objects, beside blobs/ and lfs/: a store outlives its server


class DatasetStore:
    """Every dataset repo, its commits and objects, stored under ``root`` (and read back from it: the demo's
    datasets stay beside its catalog, and a later imitation serves them, ``python -m indexer.hubsim --datasets``)."""

    def __init__(self, root: str):
        self.root = root
        os.makedirs(os.path.join(root, "blobs"), exist_ok=True)
        os.makedirs(os.path.join(root, "lfs"), exist_ok=True)
        self.repos: dict[str, DatasetRepo] = {}
        self.lock = threading.RLock()
        self._n = 0
        self._load()

    def _load(self) -> None:
        path = os.path.join(self.root, STATE_FILE)
        if not os.path.exists(path):
            return
        with open(path, encoding="utf-8") as f:
            state = json.load(f)

        def entry(e: dict) -> FileEntry:
            return FileEntry(**{**e, "abs_path": os.path.join(self.root, e["abs_path"])})

        for r in state["repos"]:
            commits = [Commit(c["oid"], c["parent"], c["title"], c["message"], c["date"],
                              {p: entry(e) for p, e in c["files"].items()}) for c in r["commits"]]
            self.repos[r["id"]] = DatasetRepo(r["id"], r["private"], r["created_at"], commits, dict(r["objects"]))
        self._n = state.get("n", 0)

    def save(self) -> None:
        """Write the repos' state (atomically) after every change."""
        def entry(e: FileEntry) -> dict:
            return {**asdict(e), "abs_path": os.path.relpath(e.abs_path, self.root)}

        with self.lock:
            state = {"n": self._n, "repos": [
                {"id": r.id, "private": r.private, "created_at": r.created_at, "objects": r.objects,
                 "commits": [{"oid": c.oid, "parent": c.parent, "title": c.title, "message": c.message,
                              "date": c.date, "files": {p: entry(e) for p, e in c.files.items()}}
                             for c in r.commits]}
                for r in self.repos.values()]}
            _write_atomic(os.path.join(self.root, STATE_FILE), json.dumps(state, indent=1).encode())

    def _commit_id(self, parent: str | None, title: str, files: dict[str, FileEntry]) -> str:
        self._n += 1
        tree = "\n".join(f"{p} {fe.oid}" for p, fe in sorted(files.items()))
        return hashlib.sha1(f"{parent}\n{title}\n{self._n}\n{time.time()}\n{tree}".encode()).hexdigest()

    def create(self, repo_id: str, private: bool) -> tuple[DatasetRepo, bool]:
        """The repo, created with its initial commit when missing; the flag says whether it was created."""
        with self.lock:
            if repo_id in self.repos:
                return self.repos[repo_id], False
            now = hub_date(time.time())
            repo = DatasetRepo(repo_id, private, now)
            files = {".gitattributes": self.regular(".gitattributes", gitattributes_text(LFS_PATTERNS).encode())}
            repo.commits.append(Commit(self._commit_id(None, "initial commit", files), None, "initial commit", "",
                                       now, files))
            self.repos[repo_id] = repo
            self.save()
            return repo, True

    def regular(self, path: str, data: bytes) -> FileEntry:
        """A regular file of a commit, its content kept once under ``blobs/<git sha1>``."""
        sha1 = git_blob_sha1(data)
        dest = os.path.join(self.root, "blobs", sha1)
        if not os.path.exists(dest):
            _write_atomic(dest, data)
        return FileEntry(path, dest, len(data), sha1, hashlib.sha256(data).hexdigest(), False, len(data))

    def object_path(self, sha256: str) -> str:
        """Where an uploaded LFS object is kept (the name is checked by the caller: 64 hex)."""
        return os.path.join(self.root, "lfs", sha256)

    def put_object(self, repo: DatasetRepo, sha256: str, data: bytes) -> None:
        """Keep an uploaded LFS object for ``repo`` (the caller checked its sha256 and size)."""
        dest = self.object_path(sha256)
        if not os.path.exists(dest):
            _write_atomic(dest, data)
        with self.lock:
            repo.objects[sha256] = len(data)
            self.save()

    def lfs_entry(self, path: str, sha256: str, size: int) -> FileEntry:
        """An LFS file of a commit, pointing at its stored object."""
        dest = self.object_path(sha256)
        pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()
        return FileEntry(path, dest, size, git_blob_sha1(pointer), sha256, True, size)

    def object_entry(self, sha256: str) -> FileEntry | None:
        """An LFS object of any dataset repo, as the CDN serves it."""
        with self.lock:
            size = next((r.objects[sha256] for r in self.repos.values() if sha256 in r.objects), None)
        return None if size is None else self.lfs_entry(sha256, sha256, size)

    def commit(self, repo: DatasetRepo, files: dict[str, FileEntry], title: str, message: str) -> Commit:
        """Append a commit with the tree ``files`` on top of the head (the caller checked the parent)."""
        with self.lock:
            c = Commit(self._commit_id(repo.head.oid, title, files), repo.head.oid, title, message,
                       hub_date(time.time()), files)
            repo.commits.append(c)
            self.save()
            return c


def _write_atomic(dest: str, data: bytes) -> None:
    tmp = f"{dest}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, dest)
