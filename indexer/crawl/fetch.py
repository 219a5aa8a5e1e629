"""The fetch side of a crawl: resolve a listed repo's files and download new blobs, on worker threads.

Never touches the database. ``Fetcher.fetch`` turns one ``Listed`` repo into a ``Fetched`` result:
either a final status decided without the files (gated, no tokenizer, too large, an error), or the
wanted files' entries with every blob present in the blob store. A run's budget running out while
a repo is being fetched gives ``Fetched(deferred=True)``: the repo is queued for the next run.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from huggingface_hub.errors import (
    GatedRepoError,
    LocalEntryNotFoundError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.hf_api import RepoFile

from ..catalog.blobstore import BlobStore
from ..engines.heads import head_candidate
from ..errors import UnsafeName
from ..files import CONFIG_FILE, VOCAB_FILES, WANTED_FILES
from ..gguf.hub import GGUFHeaderReader, GGUFRead, gguf_names
from ..hub.client import BudgetExhausted, Cancelled, HubClient, HubUnreachable, Listed, TransientError
from ..hub.listed import is_commit_sha, safe_blob_id, safe_name
from .writefail import raise_if_write_failed


@dataclass
class Entry:
    """One wanted file of a repo as huggingface_hub's ``paths_info`` gives it (``RepoFile``)."""

    filename: str
    blob_id: str
    size: int
    lfs_sha256: str | None = None


@dataclass
class Fetched:
    """What a worker found out about one repo."""

    status: str | None = None  # set when the repo ends before fingerprinting
    reason: str | None = None
    entries: dict[str, Entry] = field(default_factory=dict)
    downloaded: dict[str, tuple[int, str]] = field(default_factory=dict)  # blob id -> (size, sha256)
    deferred: bool = False  # the run's budget ran out: resume on the next run
    gguf: GGUFRead | None = None  # gguf_hub.GGUFRead: a GGUF-only repo, read from one GGUF header
    from_copies: str | None = None  # a gated repo answered from blobs already held: a repo they came from
    waiting: bool = False  # gated, some blobs unknown: ``entries`` wait for public copies (BlobWait)
    gguf_files: dict[str, int] = field(default_factory=dict)  # a GGUF repo's model files: {path: size, 0 unknown}


def early_status(item: Listed, has_token: bool) -> Fetched | None:
    """Outcomes the listing alone decides (0 requests).

    Never absence of files: a listing's ``siblings`` can come back empty or truncated (HUB-API §0.1.11,
    huggingface_hub PR #3241/#3565), so only paths-info can say a repo has no tokenizer.
    """
    if not is_commit_sha(item.sha):
        return Fetched("error", f"listing gave no usable commit sha ({item.sha!r})")
    if item.disabled:
        return Fetched("error", "repo disabled on the Hub")
    return None


def _sha(item: Listed) -> str:
    """The commit sha of an item :func:`_static_outcome` let through (it refuses one without)."""
    assert item.sha is not None
    return item.sha


def _maybe_head(item: Listed) -> bool:
    """A speculator head holds no tokenizer: its config.json decides (indexer/engines/heads.py, head_candidate)."""
    return head_candidate(item.id, item.config)


MISSING_MARK = "; not held from any public copy: "
COPY_NOTE = "gated: files known from identical public copies (e.g. {copy}), nothing downloaded"


def gated_waiting(item: Listed, out: Fetched, missing: list[str], why: str) -> Fetched:
    """``gated``, naming the files no held blob covers; the entries wait for public copies (BlobWait)."""
    out.status, out.waiting = "gated", True
    out.reason = f"gated ({item.gated}); {why}{MISSING_MARK}{', '.join(missing)}"
    return out


def describe(e: BaseException) -> str:
    """An exception in one short line (type and first line), for a repo's reason or a run's errors."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text[:300]}" if text else type(e).__name__


class Fetcher:
    """Resolves and downloads repos on worker threads, each new blob once even when two repos share it."""

    def __init__(self, client: HubClient, store: BlobStore, max_file_bytes: int, gguf_known: set[str] | None = None):
        self.client, self.store, self.max_file_bytes = client, store, max_file_bytes
        self.gguf = GGUFHeaderReader(client, gguf_known)
        self._inflight: dict[str, threading.Event] = {}
        self.sources: dict[str, str] = {}  # blob id -> the public repo it was downloaded from (this run)
        self._lock = threading.Lock()

    def fetch(self, item: Listed) -> Fetched:
        """Resolve + download; every failure becomes a status (errors keep their reason)."""
        try:
            return self._fetch(item)
        except BudgetExhausted:
            return Fetched(deferred=True)
        except (HubUnreachable, Cancelled):
            raise  # the whole run stops (crawl.Crawler.run)
        except GatedRepoError:  # /resolve refused a repo the listing did not mark gated
            why = "the token has no access" if self.client.has_token else "no token"
            return Fetched("gated", f"gated ({item.gated or 'access refused'}); {why}")
        except RepositoryNotFoundError:
            return Fetched("error", "repository not found (deleted or made private since listing)")
        except RevisionNotFoundError:
            return Fetched("error", "commit no longer available (repo changed during the crawl)")
        except RemoteEntryNotFoundError as e:
            return Fetched("error", f"file vanished: {describe(e)}")
        except LocalEntryNotFoundError as e:
            raise_if_write_failed(e, f"fetching {item.id}")
            return Fetched("error", f"transient: download failed: {describe(e.__cause__ or e)}")
        except UnsafeName as e:
            return Fetched("error", f"refused Hub data: {e}")
        except TransientError as e:
            raise_if_write_failed(e, f"fetching {item.id}")
            return Fetched("error", f"transient: {describe(e)}{_cause(e)}")
        except Exception as e:  # a bug or an unexpected answer must not kill the crawl (a failed write does)
            raise_if_write_failed(e, f"fetching {item.id}")
            return Fetched("error", f"transient: {describe(e)}")

    def _fetch(self, item: Listed) -> Fetched:
        entries: dict[str, Entry] = {}
        ggufs = _gguf_candidates(item)
        gguf_files: dict[str, tuple[int, str | None]] = {}
        # Every wanted name, whatever ``siblings`` says (one call either way): siblings never prove absence. Where
        # they show GGUF files and no tokenizer, they may still be truncated (HUB-API §0.1.11), so the tree (one
        # call too) names every file at this commit, each quant included.
        sha = _sha(item)
        listed = self.client.list_files(item.id, sha) if ggufs else self.client.paths_info(item.id, sha, WANTED_FILES)
        for it in listed:
            if isinstance(it, RepoFile) and gguf_names([it.path]):  # size and LFS sha256 before any byte is read
                if len(gguf_files) >= MAX_GGUF_NAMES:
                    continue
                lfs = getattr(it, "lfs", None)
                gguf_files[safe_name(it.path)] = (int(it.size or 0), safe_blob_id(lfs.sha256) if lfs else None)
                continue
            if not isinstance(it, RepoFile) or it.path not in WANTED_FILES:
                continue  # only names we asked for ever become local paths
            safe_name(it.path)
            lfs = getattr(it, "lfs", None)
            entries[it.path] = Entry(it.path, safe_blob_id(it.blob_id), int(it.size or 0),
                                     safe_blob_id(lfs.sha256) if lfs else None)
        out = Fetched(entries=entries)
        if not any(v in entries for v in VOCAB_FILES) and not (CONFIG_FILE in entries and _maybe_head(item)):
            if not gguf_files and siblings_may_hide_gguf(item):
                gguf_files = self._gguf_from_tree(item)
            if gguf_files:
                return self._gguf(item, out, gguf_files)
            out.status, out.reason = "no_tokenizer", "no tokenizer vocabulary file at the repo root"
            return out
        big = [e for e in entries.values() if e.size > self.max_file_bytes]
        if big:
            e = big[0]
            out.status = "too_large"
            out.reason = f"{e.filename}: {e.size} bytes is over the {self.max_file_bytes}-byte cap"
            return out
        if not item.gated:
            return self._download_all(item, out)

        gated = self._gated(item, out)
        if gated is not None:
            return gated
        try:  # a token: it may have been granted access
            return self._download_all(item, out)
        except GatedRepoError:
            return gated_waiting(item, out, self._missing(out), "the token has no access")

    def _download_all(self, item: Listed, out: Fetched) -> Fetched:
        for e in out.entries.values():
            got = self._blob(item, e)
            if got is not None:
                out.downloaded[e.blob_id] = got
                if not item.gated:
                    self.sources.setdefault(e.blob_id, item.id)
        return out

    def _gguf_from_tree(self, item: Listed) -> dict[str, tuple[int, str | None]]:
        """GGUF model files of a repo whose listing lost its siblings: one tree listing (one API call)."""
        files: dict[str, tuple[int, str | None]] = {}
        for it in self.client.list_files(item.id, _sha(item)):
            if isinstance(it, RepoFile) and gguf_names([it.path]) and len(files) < MAX_GGUF_NAMES:
                lfs = getattr(it, "lfs", None)
                files[safe_name(it.path)] = (int(it.size or 0), safe_blob_id(lfs.sha256) if lfs else None)
        return files

    def _gguf(self, item: Listed, out: Fetched, files: dict) -> Fetched:
        """A GGUF-only repo: one GGUF header, range-read (indexer/gguf/hub.py)."""
        read = self.gguf.read(item.id, _sha(item), files)
        out.gguf_files = {path: size for path, (size, _) in files.items()}
        if read is None:
            out.status, out.reason = "no_tokenizer", "no tokenizer files and no GGUF model file (projectors only)"
        else:
            out.gguf = read  # a malformed file too: the writer keeps its reason under its sha256
        return out

    def _missing(self, out: Fetched) -> list[str]:
        return sorted(e.filename for e in out.entries.values() if not self.store.has(e.blob_id))

    def _gated(self, item: Listed, out: Fetched) -> Fetched | None:
        """A gated repo: answered from blobs already held (identical public copies), else ``gated``
        naming what is missing; None when a token may download (it is tried, a 403 ends ``gated``).

        The Hub browses gated repos (paths-info gave the blob ids); only ``/resolve`` refuses them:
        401 without a token, 403 with one that has no access (HUB-API §0.1.10).
        """
        missing = self._missing(out)
        if not missing:
            out.from_copies = next((self.sources[e.blob_id] for e in out.entries.values()
                                    if e.blob_id in self.sources), "")
            return out
        if self.client.has_token:
            return None
        return gated_waiting(item, out, missing, "no token")

    def _blob(self, item: Listed, e: Entry):
        """Download a blob unless it is already stored (or being fetched by another worker)."""
        while True:
            with self._lock:
                if self.store.has(e.blob_id):
                    return None
                ev = self._inflight.get(e.blob_id)
                if ev is None:
                    ev = self._inflight[e.blob_id] = threading.Event()
                    break
            ev.wait()
        try:
            d = self.client.download(item.id, _sha(item), e.filename, e.blob_id, self.store,
                                     lfs_sha256=e.lfs_sha256, size=e.size, max_bytes=self.max_file_bytes)
            return d.size, d.sha256
        finally:
            with self._lock:
                self._inflight.pop(e.blob_id, None)
            ev.set()


MAX_GGUF_NAMES = 1000  # paths-info names asked for one repo's GGUF files


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".onnx", ".npz")


def siblings_may_hide_gguf(item: Listed) -> bool:
    """A listing whose ``siblings`` show no weights of any kind may have lost them (HUB-API §0.1.11: empty or
    truncated under server-side caching): GGUF names cannot be asked of paths-info, so the tree is listed."""
    return not any(str(n).lower().endswith(WEIGHT_SUFFIXES) for n in item.siblings or ())


def _gguf_candidates(item: Listed) -> list[str]:
    """GGUF model files worth a paths-info entry: only when the listing shows no tokenizer file."""
    if item.siblings is None or any(v in item.siblings for v in VOCAB_FILES):
        return []
    return gguf_names(item.siblings)[:MAX_GGUF_NAMES]


def _cause(e: BaseException) -> str:
    cause = e.__cause__
    return f" ({describe(cause)})" if cause is not None else ""
