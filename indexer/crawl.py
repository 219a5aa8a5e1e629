"""The crawl loop (DESIGN §3): list → (unchanged? stop) → resolve → fetch new blobs → fingerprint → row.

* Listing and every database write happen on the calling thread (SQLite); resolving
  (``get_paths_info`` pinned to the listed sha) and downloading run in a bounded thread pool.
* A repo whose listed sha equals the catalog's (and whose row is not an ``error``) costs nothing
  beyond its listing page, unless ``full``.
* Blobs are content-addressed under ``<catalog dir>/blobs/<blob_id>`` and downloaded once; a
  tokenizer file set (sorted (filename, blob id) pairs) is fingerprinted once; a config blob is
  parsed once per run.
* Every listed repo gets a row with a status; each repo is one transaction (repo row + any new
  blobs / file set / tokenizer), so a killed crawl rerun continues where it stopped.
* ``Tokenizer.repo_count`` is kept up to date by the crawler, in the same transaction.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import select, update

from .db import is_write_conflict, open_catalog, resolve_url, session_factory, sqlite_path
from .families import family_of, find_family, load_families
from .files import (
    CONFIG_FILE,
    DEFAULT_MAX_FILE_BYTES,
    TOKENIZER_FILES,
    VOCAB_FILES,
    WANTED_FILES,
    InputError,
    sha256_file,
)
from .hub import (
    DEFAULT_API_BUDGET,
    DEFAULT_RESOLVER_BUDGET,
    HubClient,
    TransientError,
    UnsafeName,
    is_commit_sha,
    safe_blob_id,
    safe_name,
)
from .models import Blob, CrawlRun, FileSet, Repo, Tokenizer

MAX_RUN_ERRORS = 200
CHAT_WORDS = ("instruct", "chat")


class CrawlInterrupted(Exception):
    """Ctrl-C / SIGTERM: the run was recorded as ``interrupted``; ``summary`` has the counts."""

    def __init__(self, summary: dict):
        super().__init__("crawl interrupted")
        self.summary = summary


class CrawlFailed(Exception):
    def __init__(self, message: str, summary: dict):
        super().__init__(message)
        self.summary = summary


@dataclass
class CrawlOptions:
    families: tuple[str, ...] = ()
    author: str | None = None
    search: str | None = None
    models: tuple[str, ...] = ()
    all: bool = False
    limit: int | None = None
    full: bool = False
    endpoint: str | None = None
    token: str | bool | None = None
    api_budget: int = DEFAULT_API_BUDGET
    resolver_budget: int = DEFAULT_RESOLVER_BUDGET
    workers: int = 4
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    quiet: bool = False
    retries: int = 5
    base_delay: float = 1.0
    blob_dir: str | None = None
    cache_dir: str | None = None

    def scope(self) -> str:
        parts = [f"family={f}" for f in self.families]
        if self.author:
            parts.append(f"author={self.author}")
        if self.search:
            parts.append(f"search={self.search}")
        parts += [f"model={m}" for m in self.models]
        if self.all:
            parts.append("all")
        if self.limit:
            parts.append(f"limit={self.limit}")
        if self.full:
            parts.append("full")
        return " ".join(parts)


@dataclass
class Entry:
    filename: str
    blob_id: str
    size: int
    lfs_sha256: str | None = None


@dataclass
class Fetched:
    """What a worker found out about one repo (no database access)."""

    status: str | None = None  # set when the repo ends before fingerprinting
    reason: str | None = None
    entries: dict[str, Entry] = field(default_factory=dict)
    downloaded: dict[str, tuple[int, str]] = field(default_factory=dict)  # blob id -> (size, sha256)


def _utc(dt) -> datetime | None:
    if dt is None:
        return None
    if dt.tzinfo is not None:
        dt = dt.astimezone(timezone.utc).replace(tzinfo=None)
    return dt


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


WRITE_ATTEMPTS = 4  # per repo, when concurrent crawls collide on a unique key or deadlock


def _base_model_ids(value) -> list[str] | None:
    if not value:
        return None
    if isinstance(value, dict):
        models = value.get("models") or []
        ids = [m.get("id") for m in models if isinstance(m, dict) and isinstance(m.get("id"), str)]
    elif isinstance(value, str):
        ids = [value]
    elif isinstance(value, list):
        ids = [m if isinstance(m, str) else m.get("id") for m in value if isinstance(m, (str, dict))]
        ids = [i for i in ids if isinstance(i, str)]
    else:
        return None
    return ids or None


def file_set_key(files: dict[str, str]) -> str:
    """sha256 of the sorted (filename, blob id) pairs of a tokenizer file set."""
    return hashlib.sha256(json.dumps(sorted(files.items()), separators=(",", ":")).encode()).hexdigest()


def catalog_dir(db: str | None) -> Path:
    path = sqlite_path(resolve_url(db))
    return path.parent if path is not None else Path("data")


class Crawler:
    def __init__(self, db: str | None, options: CrawlOptions, *, client: HubClient | None = None,
                 progress=None, engine=None):
        self.db = db
        self.opt = options
        self.engine = engine or open_catalog(db, create=True)  # a first crawl creates the catalog
        self.Session = session_factory(self.engine)
        base = catalog_dir(db)
        self.blob_dir = Path(options.blob_dir) if options.blob_dir else base / "blobs"
        cache = Path(options.cache_dir) if options.cache_dir else base / "cache" / "hf"
        self.client = client or HubClient(
            options.endpoint,
            token=options.token,
            cache_dir=cache,
            api_budget=options.api_budget,
            resolver_budget=options.resolver_budget,
            retries=options.retries,
            base_delay=options.base_delay,
        )
        self._own_client = client is None
        self.progress = progress
        self.families = load_families()
        for name in options.families:
            if find_family(name, self.families) is None:
                raise ValueError(f"unknown family {name!r} (see data/families.toml)")
        self.counts = {"listed": 0, "unchanged": 0, "new": 0, "changed": 0, "failed": 0}
        self.statuses: dict[str, int] = {}
        self.errors: list[dict] = []
        self.fingerprinted = 0
        self._fp_memo: dict[str, tuple] = {}  # file set key -> ("ok", fp) | (status, reason)
        self._config_memo: dict[str, object] = {}  # config blob -> ConfigFacts | InputError
        self._known_blobs: set[str] = set()  # committed rows in ``blobs``
        self._pending_blobs: set[str] = set()  # added in the open transaction
        self._file_sets: dict[str, tuple] = {}  # key -> (id, status, reason, tokenizer_id), committed
        self._pending_sets: dict[str, tuple] = {}
        self._scratch = Path(tempfile.mkdtemp(prefix="indexer-crawl-"))
        self._inflight: dict[str, threading.Event] = {}
        self._inflight_lock = threading.Lock()
        self.run_id: int | None = None
        self._started = 0.0
        from .tokenstore import TokenStore, default_root

        self.tokens = TokenStore(default_root(db))

    # -- scope -------------------------------------------------------------------------------------
    def _listing(self) -> Iterator:
        o = self.opt
        seen: set[str] = set()
        n = 0

        def emit(items: Iterable):
            nonlocal n
            for item in items:
                if item.id in seen:
                    continue
                seen.add(item.id)
                yield item
                n += 1
                if o.limit and n >= o.limit:
                    return

        def remaining():
            return (o.limit - n) if o.limit else None

        for model_id in o.models:
            if o.limit and n >= o.limit:
                return
            try:
                info = self.client.model_info(model_id)
            except Exception as e:  # a typo'd or vanished id: reported, no row
                self._record_error(model_id, f"model_info failed: {_describe(e)}")
                self.counts["failed"] += 1
                continue
            yield from emit([info])
        calls = []
        for name in o.families:
            fam = find_family(name, self.families)
            if fam is None:
                raise ValueError(f"unknown family {name!r} (see data/families.toml)")
            calls += [{"author": a} for a in fam.authors] + [{"search": s} for s in fam.search]
        if o.author or o.search:
            calls.append({"author": o.author, "search": o.search})
        if o.all:
            calls.append({})
        for kw in calls:
            if o.limit and n >= o.limit:
                return
            yield from emit(self.client.list_models(limit=remaining(), **kw))

    # -- main loop ---------------------------------------------------------------------------------
    def run(self) -> dict:
        self._started = time.monotonic()
        self._start_run()
        workers = max(1, self.opt.workers)
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="crawl")
        pending: dict[Future, tuple] = {}
        status = "ok"
        failure = None
        try:
            with self.Session() as session:
                for info in self._listing():
                    self.counts["listed"] += 1
                    job = self._triage(session, info)
                    if job is not None:
                        pending[pool.submit(self._resolve_fetch, info)] = job
                    while len(pending) >= workers * 4:
                        self._drain(session, pending, block=True)
                    self._drain(session, pending, block=False)
                    if self.counts["listed"] % 200 == 0:
                        self._save_run(session, "running")
                while pending:
                    self._drain(session, pending, block=True)
                session.commit()
        except KeyboardInterrupt:
            status = "interrupted"
        except Exception as e:  # the listing itself failed after the client's retries
            status = "failed"
            failure = f"{type(e).__name__}: {str(e)[:500]}"
            self._record_error(None, failure)
        finally:
            for fut in pending:
                fut.cancel()
            pool.shutdown(wait=status != "interrupted", cancel_futures=True)
            with self.Session() as session:
                self._save_run(session, status, final=True)
            if self._own_client:
                self.client.close()
            shutil.rmtree(self._scratch, ignore_errors=True)
        summary = self.summary(status)
        if status == "interrupted":
            raise CrawlInterrupted(summary)
        if status == "failed":
            raise CrawlFailed(failure or "crawl failed", summary)
        return summary

    def _drain(self, session, pending: dict, block: bool) -> None:
        if not pending:
            return
        done, _ = wait(list(pending), timeout=None if block else 0, return_when=FIRST_COMPLETED)
        for fut in done:
            info, existing_pk, kind = pending.pop(fut)
            try:
                fetched = fut.result()
            except Exception as e:  # a bug in a worker must not kill the crawl
                fetched = Fetched("error", f"internal: {_describe(e)}")
            self._finish(session, info, existing_pk, kind, fetched)

    def _triage(self, session, info):
        """Unchanged → bookkeeping only; decided without the Hub → row now; else a worker job."""
        row = session.execute(select(Repo).where(Repo.repo_id == info.id)).scalar_one_or_none()
        sha = getattr(info, "sha", None)
        if row is not None and not self.opt.full and sha and row.sha == sha and row.status != "error":
            self.counts["unchanged"] += 1
            self._refresh_listing_fields(row, info)
            session.commit()
            self._tick()
            return None
        kind = "new" if row is None else "changed"
        pk = row.id if row is not None else None
        early = self._early_status(info)
        if early is not None:
            self._finish(session, info, pk, kind, early)
            return None
        return info, pk, kind

    def _early_status(self, info) -> Fetched | None:
        """Outcomes the listing alone decides (0 requests)."""
        if not is_commit_sha(getattr(info, "sha", None)):
            return Fetched("error", f"listing gave no usable commit sha ({getattr(info, 'sha', None)!r})")
        if getattr(info, "disabled", False):
            return Fetched("error", "repo disabled on the Hub")
        if info.gated and not self.client.has_token:
            return Fetched("gated", f"gated ({info.gated}); no token to request access with")
        siblings = getattr(info, "siblings", None)
        if siblings is not None:
            names = {s.rfilename for s in siblings}
            if not any(v in names for v in VOCAB_FILES):
                return Fetched("no_tokenizer", "no tokenizer vocabulary file at the repo root")
        return None

    # -- worker side (no database) -----------------------------------------------------------------
    def _resolve_fetch(self, info) -> Fetched:
        from huggingface_hub.errors import (
            GatedRepoError,
            HfHubHTTPError,
            LocalEntryNotFoundError,
            RemoteEntryNotFoundError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )

        try:
            return self._resolve_fetch_inner(info)
        except GatedRepoError:
            return Fetched("gated", f"gated ({info.gated or 'access refused'}); the token has no access")
        except RepositoryNotFoundError:
            return Fetched("error", "repository not found (deleted or made private since listing)")
        except RevisionNotFoundError:
            return Fetched("error", "commit no longer available (repo changed during the crawl)")
        except RemoteEntryNotFoundError as e:
            return Fetched("error", f"file vanished: {_describe(e)}")
        except LocalEntryNotFoundError as e:
            cause = e.__cause__
            return Fetched("error", f"transient: download failed: {_describe(cause or e)}")
        except UnsafeName as e:
            return Fetched("error", f"refused Hub data: {e}")
        except (TransientError, HfHubHTTPError, OSError) as e:
            return Fetched("error", f"transient: {_describe(e)}")
        except Exception as e:
            return Fetched("error", f"transient: {_describe(e)}")

    def _resolve_fetch_inner(self, info) -> Fetched:
        from huggingface_hub.hf_api import RepoFile

        siblings = getattr(info, "siblings", None)
        wanted = list(WANTED_FILES)
        if siblings is not None:
            names = {s.rfilename for s in siblings}
            wanted = [w for w in wanted if w in names]
        items = self.client.paths_info(info.id, info.sha, wanted)
        entries: dict[str, Entry] = {}
        for it in items:
            if not isinstance(it, RepoFile) or it.path not in WANTED_FILES:
                continue  # only names we asked for ever become local paths
            safe_name(it.path)
            lfs = getattr(it, "lfs", None)
            entries[it.path] = Entry(it.path, safe_blob_id(it.blob_id), int(it.size or 0),
                                     safe_blob_id(lfs.sha256) if lfs else None)
        out = Fetched(entries=entries)
        if not any(v in entries for v in VOCAB_FILES):
            out.status, out.reason = "no_tokenizer", "no tokenizer vocabulary file at the repo root"
            return out
        big = [e for e in entries.values() if e.size > self.opt.max_file_bytes]
        if big:
            e = big[0]
            out.status = "too_large"
            out.reason = f"{e.filename}: {e.size} bytes is over the {self.opt.max_file_bytes}-byte cap"
            return out
        for e in entries.values():
            got = self._fetch_blob(info, e)
            if got is not None:
                out.downloaded[e.blob_id] = got
        return out

    def _fetch_blob(self, info, e: Entry):
        """Download a blob unless it is already in the blob dir (or being fetched by another worker)."""
        dest = self.blob_dir / e.blob_id
        while True:
            with self._inflight_lock:
                if dest.exists():
                    return None
                ev = self._inflight.get(e.blob_id)
                if ev is None:
                    ev = self._inflight[e.blob_id] = threading.Event()
                    break
            ev.wait()
        try:
            d = self.client.download(info.id, info.sha, e.filename, e.blob_id, self.blob_dir,
                                     lfs_sha256=e.lfs_sha256)
            return d.size, d.sha256
        finally:
            with self._inflight_lock:
                self._inflight.pop(e.blob_id, None)
            ev.set()

    # -- main-thread side --------------------------------------------------------------------------
    def _finish(self, session, info, existing_pk, kind, fetched: Fetched) -> None:
        for attempt in range(WRITE_ATTEMPTS):
            try:
                self._write_repo(session, info, existing_pk, fetched)
                break
            except KeyboardInterrupt:
                session.rollback()
                self._pending_blobs.clear()
                self._pending_sets.clear()
                raise
            except Exception as e:
                session.rollback()
                self._pending_blobs.clear()
                self._pending_sets.clear()
                if is_write_conflict(e) and attempt + 1 < WRITE_ATTEMPTS:
                    # Another crawl committed this repo, blob, file set or tokenizer first (or a deadlock
                    # victim): its rows are visible now, so the retry reuses them instead of inserting.
                    existing_pk = session.scalar(select(Repo.id).where(Repo.repo_id == info.id))
                    continue
                fetched = Fetched("error", f"internal: {_describe(e)}", fetched.entries)
                self._write_repo(session, info, existing_pk, fetched, fingerprint=False)
                break
        self.counts[kind] += 1
        self._tick()

    def _write_repo(self, session, info, existing_pk, fetched: Fetched, fingerprint: bool = True) -> None:
        now = _now()
        row = session.get(Repo, existing_pk) if existing_pk else None
        if row is None:  # added last: a half-filled row must never be flushed
            row = Repo(repo_id=info.id, first_seen_at=now)
        old_tok = row.tokenizer_id
        self._refresh_listing_fields(row, info)
        row.sha = info.sha
        status, reason = fetched.status, fetched.reason
        row.file_set_id = row.tokenizer_id = None
        row.config_blob = None
        entries = fetched.entries
        tok_files = {n: entries[n].blob_id for n in TOKENIZER_FILES if n in entries}
        facts = None
        chat_template = False
        if status is None and fingerprint:
            self._ensure_blobs(session, entries, fetched.downloaded, now)
            fs_id, status, reason, tok_id = self._file_set(session, tok_files, now)
            row.file_set_id, row.tokenizer_id = fs_id, tok_id
            if CONFIG_FILE in entries:
                row.config_blob = entries[CONFIG_FILE].blob_id
                facts = self._config(entries[CONFIG_FILE].blob_id)
                if isinstance(facts, InputError):
                    if status == "ok":
                        status, reason = facts.status, facts.message
                    facts = None
            elif status == "ok":
                reason = "no config.json"
            if "tokenizer_config.json" in entries:
                chat_template = self._has_chat_template(entries["tokenizer_config.json"].blob_id)
        row.status, row.reason = status, reason
        digest = getattr(info, "config", None) or {}
        if facts is not None:
            row.model_type, row.architectures = facts.model_type, facts.architectures
            row.vocab_size, row.vocab_size_transformers = facts.vocab_size, facts.vocab_size_transformers
            row.text_config_key = facts.text_config_key
        else:
            mt = digest.get("model_type") if isinstance(digest, dict) else None
            archs = digest.get("architectures") if isinstance(digest, dict) else None
            row.model_type = mt if isinstance(mt, str) else None
            row.architectures = archs if isinstance(archs, list) else None
            row.vocab_size = row.vocab_size_transformers = row.text_config_key = None
        tc = digest.get("tokenizer_config") if isinstance(digest, dict) else None
        name = info.id.split("/", 1)[-1].lower()
        row.is_chat = bool(
            "conversational" in (row.tags or [])
            or chat_template
            or (isinstance(tc, dict) and tc.get("chat_template"))
            or any(w in name for w in CHAT_WORDS)
        )
        row.updated_at = now
        row.crawl_run_id = self.run_id
        session.add(row)
        session.flush()
        if old_tok != row.tokenizer_id:
            for tok_id, delta in ((old_tok, -1), (row.tokenizer_id, 1)):
                if tok_id is not None:
                    session.execute(update(Tokenizer).where(Tokenizer.id == tok_id)
                                    .values(repo_count=Tokenizer.repo_count + delta))
        session.commit()
        self._known_blobs.update(self._pending_blobs)
        self._file_sets.update(self._pending_sets)
        self._pending_blobs.clear()
        self._pending_sets.clear()
        self.statuses[status] = self.statuses.get(status, 0) + 1
        if status == "error":
            self.counts["failed"] += 1
            self._record_error(info.id, reason)

    def _refresh_listing_fields(self, row: Repo, info) -> None:
        row.author = getattr(info, "author", None) or info.id.split("/", 1)[0]
        row.last_modified = _utc(getattr(info, "last_modified", None))
        row.created_at = _utc(getattr(info, "created_at", None))
        row.pipeline_tag = getattr(info, "pipeline_tag", None)
        row.library_name = getattr(info, "library_name", None)
        row.tags = list(info.tags) if getattr(info, "tags", None) is not None else None
        gated = getattr(info, "gated", None)
        row.gated = str(gated) if gated else None
        row.disabled = bool(getattr(info, "disabled", False))
        row.downloads = getattr(info, "downloads", None)
        row.likes = getattr(info, "likes", None)
        st = getattr(info, "safetensors", None)
        row.params = getattr(st, "total", None) if st else None
        row.base_models = _base_model_ids(getattr(info, "base_models", None))
        row.family = family_of(info.id, row.base_models or (), self.families)

    def _ensure_blobs(self, session, entries: dict[str, Entry], downloaded: dict, now) -> None:
        todo = {e.blob_id: e for e in entries.values() if e.blob_id not in self._known_blobs}
        if todo:
            found = session.scalars(select(Blob.blob_id).where(Blob.blob_id.in_(list(todo)))).all()
            self._known_blobs.update(found)
        for e in todo.values():
            if e.blob_id in self._known_blobs:
                continue
            path = self.blob_dir / e.blob_id
            if e.blob_id in downloaded:
                size, sha256 = downloaded[e.blob_id]
            elif path.exists():
                size, sha256 = path.stat().st_size, sha256_file(path)
            else:
                raise TransientError(f"blob {e.blob_id} of {e.filename} is missing locally")
            session.add(Blob(blob_id=e.blob_id, sha256=sha256, size=size, first_seen_at=now))
            self._pending_blobs.add(e.blob_id)

    def _file_set(self, session, tok_files: dict[str, str], now):
        key = file_set_key(tok_files)
        hit = self._file_sets.get(key)
        if hit is None:
            fs = session.execute(select(FileSet).where(FileSet.key == key)).scalar_one_or_none()
            if fs is not None:
                hit = self._file_sets[key] = (fs.id, fs.status, fs.reason, fs.tokenizer_id)
        if hit is not None:
            return hit
        memo = self._fp_memo.get(key)
        if memo is None:
            memo = self._fingerprint(tok_files)
            self._fp_memo[key] = memo
        if memo[0] == "error":  # not persisted: retried on the next run
            return None, "error", memo[1], None
        tokenizer_id = None
        if memo[0] == "ok":
            fp = memo[1]
            self.tokens.put_fingerprint(fp)
            tokenizer_id = self._tokenizer(session, fp, now)
            fs_status, fs_reason = "ok", None
        else:
            fs_status, fs_reason = memo
        fs = FileSet(key=key, files=dict(sorted(tok_files.items())), status=fs_status, reason=fs_reason,
                     tokenizer_id=tokenizer_id, created_at=now)
        session.add(fs)
        session.flush()
        hit = self._pending_sets[key] = (fs.id, fs_status, fs_reason, tokenizer_id)
        return hit

    def _fingerprint(self, tok_files: dict[str, str]) -> tuple:
        from .fingerprint import fingerprint_dir

        tmp = self._scratch_dir("fs")
        try:
            for name, blob in tok_files.items():
                _place(self.blob_dir / safe_blob_id(blob), tmp / safe_name(name))
            try:
                fp = fingerprint_dir(tmp, max_file_bytes=self.opt.max_file_bytes)
            except InputError as e:
                return e.status, e.message.replace(str(tmp), "<file set>")
            except Exception as e:
                return "error", f"fingerprint failed: {_describe(e)}"
            self.fingerprinted += 1
            return "ok", fp
        finally:
            _clear(tmp)

    def _tokenizer(self, session, fp, now) -> int:
        q = select(Tokenizer).where(Tokenizer.vocab_sha256 == fp.vocab_sha256)
        tok = session.execute(q).scalar_one_or_none()
        if tok is not None:
            return tok.id
        from .fingerprint import transformers_version

        facts = fp.to_dict()
        cols = {c.key for c in Tokenizer.__table__.columns}
        tok = Tokenizer(**{k: v for k, v in facts.items() if k in cols})
        tok.transformers_version = transformers_version()
        tok.repo_count = 0
        tok.created_at = now
        session.add(tok)
        session.flush()
        return tok.id

    def _config(self, blob_id: str):
        if blob_id in self._config_memo:
            return self._config_memo[blob_id]
        from .modelconfig import read_config

        tmp = self._scratch_dir("cfg")
        try:
            _place(self.blob_dir / safe_blob_id(blob_id), tmp / CONFIG_FILE)
            try:
                facts = read_config(tmp, self.opt.max_file_bytes)
            except InputError as e:
                facts = InputError(e.status, e.message.replace(str(tmp), "<config>"))
        finally:
            _clear(tmp)
        self._config_memo[blob_id] = facts
        return facts

    def _scratch_dir(self, name: str) -> Path:
        """A reusable empty directory (mkdtemp + rmtree per use is slow on some filesystems)."""
        path = self._scratch / name
        path.mkdir(exist_ok=True)
        _clear(path)
        return path

    def _has_chat_template(self, blob_id: str) -> bool:
        path = self.blob_dir / blob_id
        try:
            if path.stat().st_size > self.opt.max_file_bytes:
                return False
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return False
        return isinstance(data, dict) and bool(data.get("chat_template"))

    # -- run bookkeeping ---------------------------------------------------------------------------
    def _start_run(self) -> None:
        with self.Session() as session:
            # A run still "running" is one that was killed: nothing else can finish it.
            session.execute(update(CrawlRun).where(CrawlRun.status == "running").values(status="interrupted"))
            run = CrawlRun(started_at=_now(), status="running", scope=self.opt.scope(), errors=[])
            session.add(run)
            session.commit()
            self.run_id = run.id

    def _save_run(self, session, status: str, final: bool = False) -> None:
        run = session.get(CrawlRun, self.run_id)
        c = self.client.counts()
        for k, v in self.counts.items():
            setattr(run, k, v)
        run.api_calls, run.resolver_calls = c["api_calls"], c["resolver_calls"]
        run.bytes_downloaded = c["bytes_downloaded"]
        run.errors = list(self.errors)
        run.status = status
        if final:
            run.finished_at = _now()
        session.commit()

    def _record_error(self, repo_id, reason) -> None:
        if len(self.errors) < MAX_RUN_ERRORS:
            self.errors.append({"repo": repo_id, "reason": reason})

    def _tick(self) -> None:
        if self.progress is not None:
            self.progress.update(1)
            c = self.client.counts()
            self.progress.set_postfix(new=self.counts["new"], changed=self.counts["changed"],
                                      failed=self.counts["failed"], api=c["api_calls"], refresh=False)

    def summary(self, status: str) -> dict:
        c = self.client.counts()
        elapsed = time.monotonic() - self._started
        return {
            "run_id": self.run_id,
            "status": status,
            "scope": self.opt.scope(),
            **self.counts,
            "statuses": dict(sorted(self.statuses.items())),
            "api_calls": c["api_calls"],
            "list_calls": c["list_calls"],
            "resolver_calls": c["resolver_calls"],
            "bytes_downloaded": c["bytes_downloaded"],
            "client_retries": c["retries"],
            "file_sets_fingerprinted": self.fingerprinted,
            "seconds": round(elapsed, 3),
            "errors": self.errors[:20],
        }


def _clear(directory: Path) -> None:
    for child in directory.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def _place(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def _describe(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text[:300]}" if text else type(e).__name__


def crawl(db: str | None, options: CrawlOptions, *, progress: bool | None = None) -> dict:
    """Run one crawl; a tqdm bar on stderr unless quiet or stderr is not a terminal."""
    show = (not options.quiet and sys.stderr.isatty()) if progress is None else progress
    bar = None
    if show:
        from tqdm import tqdm

        bar = tqdm(total=options.limit, unit="repo", file=sys.stderr, dynamic_ncols=True)
    try:
        return Crawler(db, options, progress=bar).run()
    finally:
        if bar is not None:
            bar.close()
