"""GGUF-only repos in the crawl: read one GGUF header over HTTP ranges, keyed by the file's LFS sha256.

A repo whose root holds ``*.gguf`` files and no tokenizer files (quantizer repos) is read from the key/value
section of one file: the smallest first shard of a model file (``names.choose_file``, llama-server's own
name rules). Paths-info gives every file's size and LFS sha256 before any byte is read; a sha256 already in
the catalog (or read earlier in the run: mirrors, re-uploads) costs no request. Otherwise
``gguf_header.read_kv_section`` asks ``HubClient.read_range`` for one range big enough for typical
vocabularies and extends it only when the section is longer; tensor data is never read.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass

from .file import GGUFFile, facts_from_header
from .header import DEFAULT_MAX_KV_BYTES, FIRST_READ, read_kv_section
from .names import choose_file, is_model_file, split_info

GGUF_SET_PREFIX = b"gguf-lfs-sha256:"


def gguf_names(siblings) -> list[str]:
    """The GGUF model files among a listing's sibling names (any folder), sorted."""
    return sorted(n for n in siblings or () if isinstance(n, str) and is_model_file(n))


def gguf_set_key(sha256: str) -> str:
    """The file_sets key of a GGUF file: its LFS sha256, whatever its name (mirrors share one set)."""
    return hashlib.sha256(GGUF_SET_PREFIX + sha256.encode()).hexdigest()


@dataclass
class GGUFRead:
    """One repo's GGUF: which file, its content sha256, and its facts (None: already in the catalog)."""

    filename: str
    sha256: str
    size: int
    n_files: int  # GGUF model files in the repo
    file: GGUFFile | None = None
    status: str = "ok"  # or "malformed" (the reason says why)
    error: str | None = None
    bytes_read: int = 0
    requests: int = 0

    @property
    def key(self) -> str:
        """The file_sets key of this GGUF (by its sha256)."""
        return gguf_set_key(self.sha256)

    def reason(self) -> str:
        """The repo's reason line: which file the facts come from and what reading it cost."""
        quant, _, count = split_info(self.filename)
        shard = f", shard 1 of {count}" if count > 1 else ""
        how = (f"{self.bytes_read} bytes in {self.requests} range request{'s' if self.requests != 1 else ''}"
               if self.requests else f"sha256 {self.sha256[:12]} already read: no request")
        return (f"GGUF repo: facts read from {self.filename}{shard} (the smallest of {self.n_files} GGUF model "
                f"file{'s' if self.n_files != 1 else ''}; key/value section only, {how})")


class GGUFHeaderReader:
    """Reads GGUF headers for the fetch workers; thread-safe, one read per sha256 per run."""

    def __init__(self, client, known: set[str] | None = None, *, first: int = FIRST_READ,
                 max_bytes: int = DEFAULT_MAX_KV_BYTES):
        self.client, self.first, self.max_bytes = client, first, max_bytes
        self.known = set(known or ())  # file_sets keys of GGUF files already in the catalog
        self._memo: dict[str, GGUFRead] = {}
        self._inflight: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self.reads = self.bytes_read = self.requests = self.known_hits = 0

    def stats(self) -> dict:
        """What this run read (headers, bytes, range requests, files already known), for the run's summary."""
        with self._lock:
            return {"headers_read": self.reads, "bytes_read": self.bytes_read, "range_requests": self.requests,
                    "already_known": self.known_hits}

    def read(self, repo_id: str, sha: str, files: dict[str, tuple[int, str | None]]) -> GGUFRead | None:
        """``files``: {path: (size, LFS sha256)} from paths-info. None when no file is a GGUF model."""
        name = choose_file({p: s for p, (s, _) in files.items()})
        if name is None:
            return None
        size, lfs = files[name]
        n = sum(1 for p in files if is_model_file(p) and split_info(p)[1] == 1)
        content = lfs or hashlib.sha256(f"{repo_id}@{sha}/{name}".encode()).hexdigest()  # a non-LFS .gguf: per commit
        out = GGUFRead(name, content, size, n)
        while True:
            with self._lock:
                if out.key in self.known:
                    self.known_hits += 1
                    return out
                done = self._memo.get(content)
                if done is not None:
                    self.known_hits += 1
                    return GGUFRead(name, content, size, n, done.file, done.status, done.error)
                ev = self._inflight.get(content)
                if ev is None:
                    ev = self._inflight[content] = threading.Event()
                    break
            ev.wait()
        try:
            r = read_kv_section(lambda a, b: self.client.read_range(repo_id, sha, name, a, b), size or None,
                                first=self.first, max_bytes=self.max_bytes)
            out.bytes_read, out.requests = r.bytes_read, r.requests
            if r.header.ok:
                out.file = facts_from_header(r.header, f"{repo_id}/{name}")
            else:
                out.status, out.error = "malformed", f"{name}: {r.header.reason}"
            with self._lock:
                self._memo[content] = out
                self.reads += 1
                self.bytes_read += r.bytes_read
                self.requests += r.requests
            return out
        finally:
            with self._lock:
                self._inflight.pop(content, None)
            ev.set()


__all__ = ["GGUFRead", "GGUFHeaderReader", "gguf_names", "gguf_set_key"]
