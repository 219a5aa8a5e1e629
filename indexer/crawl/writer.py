"""The writer side of a crawl: one transaction per repo, on the crawl's main thread (SQLite).

It owns the caches that make a crawl cheap (blobs known to the catalog, tokenizer file sets,
fingerprints, parsed configs) and keeps them consistent with the database through one
commit/rollback path (``_transaction``): entries added inside a repo's transaction become visible
to later repos only when it commits.

Engine facts flow generically: every field of ``modelconfig.ConfigFacts.to_dict()`` is copied onto
the ``repos`` column of the same name when there is one. ``Tokenizer.repo_count`` is not touched
here: ``compute`` owns it (it recounts from the ok rows).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import fields
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import delete, func, select

from ..catalog.blobstore import BlobStore
from ..catalog.compute_agreement import note_failure
from ..catalog.db import insert_or_skip, is_write_conflict
from ..catalog.models import (
    Blob,
    BlobWait,
    CrawlQueue,
    EngineFacts,
    FileSet,
    GGUFModelFile,
    Head,
    Repo,
    Tokenizer,
)
from ..engines import LLAMACPP_COMMIT, gguf_buckets, gguf_signature
from ..engines.heads import parse_head, target_shape
from ..files import CONFIG_FILE, TOKENIZER_FILES, InputError
from ..gguf.names import model_files, split_info
from ..hub.client import Listed, TransientError
from ..hub.listed import base_models_from_tags
from ..speed.quant import from_gguf_file_type
from ..vocab.agreement import reference_sha256
from ..vocab.fingerprint import fingerprint_dir, transformers_version
from ..vocab.modelconfig import ConfigFacts, check_dimensions, read_config
from ..vocab.tokenbox import TokenizerBox
from .families import family_of
from .fetch import COPY_NOTE, MISSING_MARK, Entry, Fetched, describe
from .writefail import raise_if_write_failed

CHAT_WORDS = ("instruct", "chat")
REPO_COLUMNS = frozenset(c.key for c in Repo.__table__.columns)
HEAD_COLUMNS = tuple(c.key for c in Head.__table__.columns if c.key != "repo_pk")
# TargetShape fields stored on repos (model_type, architectures, vocab sizes come from ConfigFacts).
TARGET_SHAPE_COLUMNS = ("hidden_size", "num_hidden_layers", "mtp_layers", "mtp_key", "text_model_type")


WRITE_ATTEMPTS = 4  # per repo, when concurrent crawls collide on a unique key or deadlock


def now_utc() -> datetime:
    """The current UTC time without tzinfo, as the catalog's DateTime columns store it."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def file_set_key(files: dict[str, str]) -> str:
    """sha256 of the sorted (filename, blob id) pairs of a tokenizer file set."""
    return hashlib.sha256(json.dumps(sorted(files.items()), separators=(",", ":")).encode()).hexdigest()


def _config_fact_columns() -> list[str]:
    return [f.name for f in fields(ConfigFacts) if f.name in REPO_COLUMNS]


class CatalogWriter:
    """Writes fetched repos into the catalog on the main thread, one transaction per repo."""

    def __init__(self, store: BlobStore, tokens, families, max_file_bytes: int):
        self.store, self.tokens, self.families = store, tokens, families
        self.max_file_bytes = max_file_bytes
        self.fingerprinted = 0
        self._fp_memo: dict[str, tuple] = {}  # file set key -> ("ok", fp) | (status, reason)
        self._config_memo: dict[str, object] = {}  # config blob -> ConfigFacts | InputError
        self._known_blobs: set[str] = set()  # committed rows in ``blobs``
        self._pending_blobs: set[str] = set()  # added in the open transaction
        self._file_sets: dict[str, tuple] = {}  # key -> (id, status, reason, tokenizer_id), committed
        self._pending_sets: dict[str, tuple] = {}
        self._scratch = Path(tempfile.mkdtemp(prefix="indexer-write-"))
        self._fact_columns = _config_fact_columns()
        self._counting: ThreadPoolExecutor | None = None  # the thread that counts the reference text per vocabulary
        self._box: TokenizerBox | None = None  # ... in this child process (vocab/tokenbox.py), started with it
        self._counts: list = []  # (future: a failure's reason or None, file set key)

    def close(self, wait: bool = True) -> None:
        """Let the reference-text counts finish (``wait``: the run ended normally, compute reads them next),
        end the tokenizer box, then remove the scratch directory that blobs are exported into for fingerprinting."""
        if self._counting is not None:
            self._counting.shutdown(wait=wait, cancel_futures=not wait)
            self._counting = None
        if self._box is not None:
            self._box.close()
            self._box = None
        shutil.rmtree(self._scratch, ignore_errors=True)

    def wait_for_counts(self, session) -> list[tuple[str, str]]:
        """Wait for this run's reference-text counts; a failed write there (a full disk) fails the run. A tokenizer
        that failed on the text is noted on its file set and repos (committed here); returns (repo id, reason)."""
        noted = []
        for fut, key in self._counts:
            exc = fut.exception()
            if exc is not None:
                raise_if_write_failed(exc, "counting the reference text")
                continue
            reason = fut.result()
            fs_id = session.scalar(select(FileSet.id).where(FileSet.key == key)) if reason else None
            if fs_id is not None:
                with self._transaction(session):
                    noted += [(rid, reason) for rid in note_failure(session, fs_id, reason)]
        self._counts.clear()
        return noted

    def _count_later(self, vocab_sha256: str, tok_files: dict[str, str]) -> None:
        """Count the reference text with this vocabulary's tokenizer on a thread of its own: it
        was 20 of the main thread's 29 s in a crawl of 84 repos (0.8 s per vocabulary), and only compute reads
        it (token store). The thread waits on the tokenizer box (vocab/tokenbox.py: a child process with a time
        and a memory limit, since the tokenizer is the repo's own), while the fetch workers wait for the rate
        limit. A count an interrupted run lost is recounted by compute."""
        if self.tokens.get_counts(vocab_sha256, reference_sha256()) is not None:
            return
        if self._counting is None:
            self._counting = ThreadPoolExecutor(max_workers=1, thread_name_prefix="crawl-count")
        box = self._box = self._box or TokenizerBox()
        directory = self._scratch / f"count-{len(self._counts)}"
        directory.mkdir()
        self.store.export(tok_files, directory)

        def count() -> str | None:
            try:
                return box.store_counts(self.tokens, vocab_sha256, directory)
            finally:
                shutil.rmtree(directory, ignore_errors=True)

        self._counts.append((self._counting.submit(count), file_set_key(tok_files)))

    @contextmanager
    def _transaction(self, session):
        """Commit the repo's changes and publish its cache entries, or roll both back."""
        try:
            yield
            session.commit()
        except BaseException:
            session.rollback()
            self._pending_blobs.clear()
            self._pending_sets.clear()
            raise
        self._known_blobs.update(self._pending_blobs)
        self._file_sets.update(self._pending_sets)
        self._pending_blobs.clear()
        self._pending_sets.clear()

    transaction = _transaction  # one repo's claim (indexer/crawl/claims.py) commits the same way

    # -- the per-repo transaction ----------------------------------------------------------------
    def write(self, session, item: Listed, existing_pk: int | None, fetched: Fetched, run_id: int,
              queued: bool = False) -> tuple[str | None, str | None]:
        """Write the repo's row (and new blobs / file set / tokenizer); returns (status, reason)."""
        for attempt in range(WRITE_ATTEMPTS):
            try:
                with self._transaction(session):
                    return self._write_repo(session, item, existing_pk, fetched, run_id, queued, fingerprint=True)
            except KeyboardInterrupt:
                raise
            except Exception as e:
                raise_if_write_failed(e, f"writing {item.id}")  # a full disk is the run's failure, not this repo's
                if is_write_conflict(e) and attempt + 1 < WRITE_ATTEMPTS:
                    # Another crawl committed this repo, blob, file set or tokenizer first (or this was a
                    # deadlock victim): its rows are visible now, so the retry reuses them instead of inserting.
                    existing_pk = session.scalar(select(Repo.id).where(Repo.repo_id == item.id))
                    continue
                fetched = Fetched("error", f"internal: {describe(e)}", fetched.entries)
                break
        with self._transaction(session):
            return self._write_repo(session, item, existing_pk, fetched, run_id, queued, fingerprint=False)

    def touch_unchanged(self, session, row: Repo, item: Listed, run_id: int, queued: bool = False) -> None:
        """An unchanged repo: refresh what the listing says (downloads, likes, tags), nothing else."""
        with self._transaction(session):
            self.listing_fields(row, item)
            if queued:
                session.execute(delete(CrawlQueue).where(CrawlQueue.repo_id == item.id))

    def mark_gone(self, session, rows: list[Repo], reason: str, run_id: int) -> None:
        """Record repos as ``gone`` and drop their blob waits, so no later copy revives them."""
        with self._transaction(session):
            for row in rows:
                row.status, row.reason = "gone", reason
                row.updated_at, row.crawl_run_id = now_utc(), run_id
            # a gone (deleted, moved, now private) repo waits for nothing: it must not be revived by a copy
            session.execute(delete(BlobWait).where(BlobWait.repo_id.in_([r.repo_id for r in rows])))
            # nor lists files: a repo made private must not show what it holds
            session.execute(delete(GGUFModelFile).where(GGUFModelFile.repo_pk.in_([r.id for r in rows])))

    def dequeue(self, session, repo_id: str) -> None:
        """Drop a repo from the crawl queue once nothing is left to retry (e.g. it turned private)."""
        with self._transaction(session):
            session.execute(delete(CrawlQueue).where(CrawlQueue.repo_id == repo_id))

    def queue(self, session, items: list[Listed], run_id: int) -> None:
        """Remember listed repos this run could not resolve (the next run starts with them)."""
        with self._transaction(session):
            for item in items:
                session.merge(CrawlQueue(repo_id=item.id, item=item.to_json(), queued_at=now_utc(),
                                         crawl_run_id=run_id))

    def _write_repo(self, session, item: Listed, existing_pk, fetched: Fetched, run_id: int, queued: bool,
                    fingerprint: bool) -> tuple[str | None, str | None]:
        now = now_utc()
        row = session.get(Repo, existing_pk) if existing_pk else None
        if row is None:  # added last: a half-filled row must never be flushed
            row = Repo(repo_id=item.id, first_seen_at=now)
        self.listing_fields(row, item)
        row.sha = item.sha
        status, reason = fetched.status, fetched.reason
        row.file_set_id = row.tokenizer_id = None
        row.config_blob = None
        entries = fetched.entries
        tok_files = {n: entries[n].blob_id for n in TOKENIZER_FILES if n in entries}
        facts = None
        chat_template = False
        head = shape = None
        if status is None and fingerprint and fetched.gguf is not None:  # a GGUF-only repo: its header's facts
            status, reason = self._gguf_repo(session, row, fetched.gguf, now)
            file = fetched.gguf.file
            chat_template = bool(file is not None and file.has_chat_template)
        if status is None and fingerprint:
            self._ensure_blobs(session, entries, fetched.downloaded, now)
            raw = self._config_json(entries[CONFIG_FILE].blob_id) if CONFIG_FILE in entries else None
            head = parse_head(raw, item.id, item.tags or ()) if raw is not None else None
            if head is not None:  # a speculator head: its config is the fact, it needs no tokenizer
                status, reason = "head", f"speculator head: {head.algorithm}, {head.format} format"
            elif not tok_files:  # fetched only because the listing looked like a head
                status, reason = "no_tokenizer", "no tokenizer vocabulary file at the repo root"
            else:
                fs_id, status, reason, tok_id = self._file_set(session, tok_files, now)
                row.file_set_id, row.tokenizer_id = fs_id, tok_id
                shape = target_shape(raw, item.id) if raw is not None else None
            if CONFIG_FILE in entries and head is None:
                row.config_blob = entries[CONFIG_FILE].blob_id
                facts = self._config(entries[CONFIG_FILE].blob_id)
                if isinstance(facts, InputError):
                    if status == "ok":
                        status, reason = facts.status, facts.message
                    facts = shape = None  # its sizes too: they come from the same refused file
            elif status == "ok":
                reason = "no config.json"
            if "tokenizer_config.json" in entries:
                chat_template = self._has_chat_template(entries["tokenizer_config.json"].blob_id)
        if status == "ok" and fetched.from_copies is not None:
            copy = self._public_copy(session, item.id, row.file_set_id, entries, fetched.from_copies)
            note = COPY_NOTE.format(copy=copy)
            reason = f"{note}; {reason}" if reason else note
        row.status, row.reason = status, reason
        self._config_facts(row, facts, item.config)
        if head is not None:
            row.config_blob = entries[CONFIG_FILE].blob_id
        for key in TARGET_SHAPE_COLUMNS:
            setattr(row, key, getattr(shape, key) if shape is not None else None)
        tc = item.config.get("tokenizer_config")
        name = item.id.split("/", 1)[-1].lower()
        row.is_chat = bool(
            "conversational" in (row.tags or [])
            or chat_template
            or (isinstance(tc, dict) and tc.get("chat_template"))
            or any(w in name for w in CHAT_WORDS)
        )
        row.updated_at = now
        row.crawl_run_id = run_id
        session.add(row)
        if queued:
            session.execute(delete(CrawlQueue).where(CrawlQueue.repo_id == item.id))
        self._blob_wait(session, item, fetched, now)
        session.flush()
        self._head_row(session, row.id, head, existed=existing_pk is not None)
        self._gguf_file_rows(session, row.id, fetched.gguf_files if status == "ok" else {},
                             existed=existing_pk is not None)
        return status, reason

    def _gguf_repo(self, session, row: Repo, read, now) -> tuple[str, str | None]:
        """Link the repo to its GGUF's file set (keyed by the LFS sha256), creating the set and its engine
        facts (read, not predicted; token list into the token store) the first time the file is seen."""
        key = read.key
        hit = self._file_sets.get(key) or self._pending_sets.get(key)
        if hit is None:
            fs = session.execute(select(FileSet).where(FileSet.key == key)).scalar_one_or_none()
            if fs is not None:
                hit = self._file_sets[key] = (fs.id, fs.status, fs.reason, fs.tokenizer_id)
        if hit is None:
            if read.file is None and read.status == "ok":
                raise TransientError(f"GGUF {read.filename}: sha256 {read.sha256[:12]} marked known, not in catalog")
            new = insert_or_skip(session, FileSet, key=key, files={read.filename: read.sha256}, status=read.status,
                                 reason=read.error if read.status != "ok" else f"GGUF {read.filename}", created_at=now)
            fs = session.execute(select(FileSet).where(FileSet.key == key)).scalar_one()
            if new and read.file is not None:  # else the transaction that wrote the set wrote its facts
                self._gguf_facts(session, fs.id, read.file, now)
            hit = self._pending_sets[key] = (fs.id, fs.status, fs.reason, None)
        fs_id, status, fs_reason, _ = hit
        row.file_set_id = fs_id
        return status, (read.reason() if status == "ok" else fs_reason)

    def _gguf_facts(self, session, fs_id: int, file, now) -> None:
        v = file.vocab
        tsha = sig = hi = lo = None
        if v.converted and v.tokens is not None:
            tsha = v.tokens_sha256()
            self.tokens.put_tokens(tsha, v.tokens)
            sig, (hi, lo) = gguf_signature(v, tsha), gguf_buckets(v.tokens)
        insert_or_skip(  # a compute may have derived them meanwhile
            session, EngineFacts,
            file_set_id=fs_id, config_blob="", vllm_vocab_size=None, text_config_error=None, has_vision_config=False,
            gguf_converted=v.converted, gguf_error=v.error, gguf_n_vocab=v.n_vocab, gguf_tokens_sha256=tsha,
            gguf=file.to_dict(), gguf_signature=sig, gguf_bucket_hi=hi, gguf_bucket_lo=lo,
            llamacpp_commit=LLAMACPP_COMMIT, derived_at=now, arch=file.arch)

    def refresh_gated_notes(self, session) -> None:
        """Make gated notes independent of the order work happened in (workers race, runs get killed):
        waiting repos name what the store still lacks; repos answered from copies name the first public
        repo (by id) with the same file set. Run when no download is in flight (end of a run)."""
        with self._transaction(session):
            for wait in session.scalars(select(BlobWait)).all():
                row = session.execute(select(Repo).where(Repo.repo_id == wait.repo_id)).scalar_one_or_none()
                if row is None or row.status != "gated" or MISSING_MARK not in (row.reason or ""):
                    continue
                missing = sorted(n for n, (blob, _, _) in wait.entries.items() if not self.store.has(blob))
                reason = row.reason.split(MISSING_MARK)[0] + MISSING_MARK + ", ".join(missing)
                if reason != row.reason:
                    row.reason = reason
            prefix = COPY_NOTE.split("{copy}")[0]
            answered = session.scalars(select(Repo).where(Repo.status == "ok", Repo.gated.is_not(None),
                                                          Repo.reason.like(prefix + "%"))).all()
            sets = {r.file_set_id for r in answered if r.file_set_id is not None}
            first = dict(session.execute(
                select(Repo.file_set_id, func.min(Repo.repo_id))
                .where(Repo.file_set_id.in_(sets), Repo.gated.is_(None), Repo.status == "ok")
                .group_by(Repo.file_set_id)).all()) if sets else {}
            for r in answered:
                copy = first.get(r.file_set_id)
                if copy is None:
                    continue
                note = COPY_NOTE.format(copy=copy)
                rest = r.reason.split("nothing downloaded", 1)[1]
                if r.reason != note + rest:
                    r.reason = note + rest

    @staticmethod
    def _blob_wait(session, item: Listed, fetched: Fetched, now) -> None:
        """A gated repo missing some blobs waits for public copies; any other outcome ends its wait."""
        session.execute(delete(BlobWait).where(BlobWait.repo_id == item.id))
        if fetched.waiting:
            entries = {e.filename: [e.blob_id, e.size, e.lfs_sha256] for e in fetched.entries.values()}
            session.add(BlobWait(repo_id=item.id, sha=item.sha, item=item.to_json(), entries=entries, since=now))

    @staticmethod
    def _public_copy(session, repo_id: str, file_set_id, entries: dict[str, Entry], hint: str) -> str:
        """One public repo holding the same files: the run's own download, else the catalog."""
        if hint:
            return hint
        public = (Repo.repo_id != repo_id, Repo.gated.is_(None), Repo.status == "ok")
        if file_set_id is not None:
            found = session.scalar(select(Repo.repo_id).where(Repo.file_set_id == file_set_id, *public).limit(1))
            if found:
                return found
        blobs = [e.blob_id for e in entries.values()]
        found = session.scalar(select(Repo.repo_id).where(Repo.config_blob.in_(blobs), *public).limit(1))
        return found or "an earlier crawl"

    @staticmethod
    def _head_row(session, repo_pk: int, head, existed: bool) -> None:
        """The repo's ``heads`` row follows its latest config: replaced, or removed when it is no head."""
        if existed:
            session.execute(delete(Head).where(Head.repo_pk == repo_pk))
        if head is not None:
            facts = head.to_dict()
            session.add(Head(repo_pk=repo_pk, **{k: facts[k] for k in HEAD_COLUMNS}))
            session.flush()

    @staticmethod
    def _gguf_file_rows(session, repo_pk: int, files: dict[str, int], existed: bool) -> None:
        """The repo's ``gguf_files`` rows follow its latest tree: every GGUF model file (a split model once) with
        the type its name says; none for a repo that is no GGUF repo now."""
        if existed:
            session.execute(delete(GGUFModelFile).where(GGUFModelFile.repo_pk == repo_pk))
        for path, parts, size in model_files(files):
            tag = split_info(path)[0]
            quant = tag if tag and from_gguf_file_type(tag) is not None else None
            session.add(GGUFModelFile(repo_pk=repo_pk, path=path, quant=quant, parts=parts, size=size))
        session.flush()

    def _config_json(self, blob_id: str) -> dict | None:
        """config.json as a dict (None when it is not one), read once per blob; the fetch capped its size."""
        key = "json:" + blob_id
        if key not in self._config_memo:
            try:
                data = json.loads(self.store.read(blob_id))
                if isinstance(data, dict):
                    check_dimensions(data)  # no head or shape from sizes no model has (read_config says why)
            except (OSError, ValueError, KeyError, RecursionError, InputError):  # nested too deeply: not a config
                data = None
            self._config_memo[key] = data if isinstance(data, dict) else None
        data = self._config_memo[key]
        return data if isinstance(data, dict) else None

    def _config_facts(self, row: Repo, facts, digest: dict) -> None:
        """Every ConfigFacts field onto its same-named column; the listing's digest when unparsed."""
        if facts is not None:
            for key, value in facts.to_dict().items():
                if key in REPO_COLUMNS:
                    setattr(row, key, value)
            return
        for key in self._fact_columns:
            setattr(row, key, None)
        mt, archs = digest.get("model_type"), digest.get("architectures")
        row.model_type = mt if isinstance(mt, str) else None
        row.architectures = archs if isinstance(archs, list) else None

    def listing_fields(self, row: Repo, item: Listed) -> None:
        """Copy the listing's facts (author, dates, tags, gated) onto the repo's row."""
        row.author = item.author or item.id.split("/", 1)[0]
        row.last_modified = Listed.when(item.last_modified)
        row.created_at = Listed.when(item.created_at)
        row.pipeline_tag = item.pipeline_tag
        row.library_name = item.library_name
        row.tags = item.tags
        row.gated = item.gated
        row.disabled = item.disabled
        row.downloads = item.downloads
        row.likes = item.likes
        row.params = item.params
        row.base_models, row.base_model_relations = base_models_from_tags(item.tags)
        row.family = family_of(item.id, row.base_models or (), self.families)

    # -- caches ------------------------------------------------------------------------------------
    def _ensure_blobs(self, session, entries: dict[str, Entry], downloaded: dict, now) -> None:
        todo = {e.blob_id: e for e in entries.values() if e.blob_id not in self._known_blobs}
        if todo:
            found = session.scalars(select(Blob.blob_id).where(Blob.blob_id.in_(list(todo)))).all()
            self._known_blobs.update(found)
        for e in todo.values():
            if e.blob_id in self._known_blobs or e.blob_id in self._pending_blobs:
                continue
            if e.blob_id in downloaded:
                size, sha256 = downloaded[e.blob_id]
            elif self.store.has(e.blob_id):
                data = self.store.read(e.blob_id)
                size, sha256 = len(data), hashlib.sha256(data).hexdigest()
            else:
                raise TransientError(f"blob {e.blob_id} of {e.filename} is missing locally")
            insert_or_skip(session, Blob, blob_id=e.blob_id, sha256=sha256, size=size, first_seen_at=now)
            self._pending_blobs.add(e.blob_id)

    def _file_set(self, session, tok_files: dict[str, str], now):
        key = file_set_key(tok_files)
        hit = self._file_sets.get(key) or self._pending_sets.get(key)
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
        insert_or_skip(session, FileSet, key=key, files=dict(sorted(tok_files.items())), status=fs_status,
                       reason=fs_reason, tokenizer_id=tokenizer_id, created_at=now)
        fs = session.execute(select(FileSet).where(FileSet.key == key)).scalar_one()  # ours, or the other crawl's
        hit = self._pending_sets[key] = (fs.id, fs.status, fs.reason, fs.tokenizer_id)
        return hit

    def _fingerprint(self, tok_files: dict[str, str]) -> tuple:
        tmp = self._scratch_dir("fs")
        self.store.export(tok_files, tmp)
        try:
            fp = fingerprint_dir(tmp, max_file_bytes=self.max_file_bytes)
        except InputError as e:
            return e.status, _without_dir(e.message, tmp)
        except Exception as e:
            raise_if_write_failed(e)
            return "error", f"fingerprint failed: {describe(e)}"
        self.fingerprinted += 1
        self._count_later(fp.vocab_sha256, tok_files)  # once per vocabulary: pairs then cost no tokenization
        return "ok", fp

    def _tokenizer(self, session, fp, now) -> int:
        q = select(Tokenizer).where(Tokenizer.vocab_sha256 == fp.vocab_sha256)
        tok = session.execute(q).scalar_one_or_none()
        if tok is not None:
            return tok.id

        facts = fp.to_dict()
        cols = {c.key for c in Tokenizer.__table__.columns}
        values = {k: v for k, v in facts.items() if k in cols and k != "repo_count"}
        insert_or_skip(session, Tokenizer, **values, transformers_version=transformers_version(), created_at=now)
        return session.execute(q).scalar_one().id  # ours, or the other crawl's (the same vocabulary)

    def _config(self, blob_id: str):
        if blob_id in self._config_memo:
            return self._config_memo[blob_id]

        tmp = self._scratch_dir("cfg")
        self.store.export({CONFIG_FILE: blob_id}, tmp)
        try:
            facts: ConfigFacts | InputError = read_config(tmp, self.max_file_bytes)
        except InputError as e:
            facts = InputError(e.status, _without_dir(e.message, tmp))
        self._config_memo[blob_id] = facts
        return facts

    def _scratch_dir(self, name: str) -> Path:
        """A reusable empty directory (mkdtemp + rmtree per use is slow on some filesystems)."""
        path = self._scratch / name
        if path.exists():
            shutil.rmtree(path)
        path.mkdir()
        return path

    def _has_chat_template(self, blob_id: str) -> bool:
        try:
            if self.store.size(blob_id) > self.max_file_bytes:
                return False
            data = json.loads(self.store.read(blob_id))
        except (OSError, ValueError, KeyError, RecursionError):
            return False
        return isinstance(data, dict) and bool(data.get("chat_template"))


def _without_dir(message: str, directory: Path) -> str:
    """A reason without the scratch directory the files were read from: it means nothing in the catalog."""
    message = message.removeprefix(f"{directory}: ")
    return message.replace(f"{directory}/", "").replace(str(directory), "the repo's files")
