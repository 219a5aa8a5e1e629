"""``indexer compute``'s agreement step: which tokenizers a target's drafts may use although their
``get_vocab()`` mappings differ, without comparing every pair.

Most tokenizers that an engine starts together share a base vocabulary and differ in added tokens. For
such a pair, only the target's added-token ids can mean something else in the draft, so when under 1% of
the target's tokens of the reference text (or, without counts, of its ids) are added tokens, *every*
draft with the same base vocabulary works with it: one flag per tokenizer (``tokenizers.agrees_by_base``),
and ``query`` joins on the base vocabulary. The rest is measured pair by pair with the same function
``check`` uses (:func:`indexer.vocab.agreement.agreement`, full vocabularies from the token store) into
``tokenizer_agreement``: targets whose text falls on added tokens (code tokenizers with whitespace
tokens), against their same-base drafts, and same-family tokenizers whose base vocabularies differ.
Different base vocabularies outside a family are recognised early as useless and never loaded.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from sqlalchemy import text

from ..scratch import scratch_dir
from ..vocab import agreement as agr
from ..vocab.tokenbox import FAILED, TokenizerBox
from .blobstore import BlobStore
from .blobstore import default_root as blob_root
from .compute_pairs import META_UPSERT, SKIP_EXISTING, candidate_pairs
from .tokenstore import TokenStore, default_root

MAX_NEW_AGREEMENTS = 5000  # pair measurements per compute run (the rest next run)
MAX_NEW_COUNTS = 50  # tokenizers counted from the blob store per run (catalogs crawled before counts existed)
META_KEY = "agreement_text_sha256"


def _json(value):
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def added_ids(added) -> set[int]:
    """A tokenizer's added-token ids (stored JSON or a list): the only ids a same-base draft may read otherwise."""
    return {t["id"] for t in _json(added) or () if isinstance(t, dict) and isinstance(t.get("id"), int)}


def share_on_added(counts: dict[int, int] | None, ids: set[int], vocab_len: int | None) -> tuple[float, str]:
    """The share of the target's tokens (text, else ids) that are added tokens, and which basis."""
    if counts:
        total = sum(counts.values())
        return (sum(n for i, n in counts.items() if i in ids) / total if total else 0.0), "text"
    return (len(ids) / vocab_len if vocab_len else 1.0), "ids"


def note_failure(conn, file_set_id: int, reason: str) -> list[str]:
    """Say on a file set and on its ok repos that its tokenizer failed on the reference text (their agreement
    rests on ids): "tokenizer failed on the reference text: REASON", after any reason they had. ``conn``: a
    Connection or a Session. Returns the repos' ids."""
    note = f"{FAILED}: {reason}"
    args = {"f": file_set_id, "n": note, "like": f"%{FAILED}%"}
    for table, key in (("file_sets", "id"), ("repos", "file_set_id")):
        conn.execute(text(f"UPDATE {table} SET reason = CASE WHEN reason IS NULL OR reason = '' THEN :n "
                          f"ELSE reason || '; ' || :n END WHERE {key} = :f AND status = 'ok' "
                          "AND (reason IS NULL OR reason NOT LIKE :like)"), args)
    return [r[0] for r in conn.execute(text("SELECT repo_id FROM repos WHERE file_set_id = :f AND status = 'ok' "
                                            "ORDER BY repo_id"), args)]


def _recount(conn, db: str | None, store, tid: int, sha: str, box) -> dict[int, int] | None:
    """Count a tokenizer crawled before counts existed (or whose count a run lost), from one of its file sets in
    the blob store, in ``box``; a tokenizer that fails on the text is noted on its file set and repos."""
    row = conn.execute(text("SELECT id, files FROM file_sets WHERE tokenizer_id = :t ORDER BY id LIMIT 1"),
                       {"t": tid}).first()
    files = _json(row[1]) if row else None
    if not files:
        return None
    with scratch_dir(prefix="indexer-count-") as tmp:
        try:
            BlobStore(blob_root(db)).export(files, tmp)
        except KeyError:
            return None
        failed = box.store_counts(store, sha, Path(tmp))
    if failed is not None:
        note_failure(conn, row[0], failed)
        return None
    return store.get_counts(sha, agr.reference_sha256())


def compute_agreement(conn, db: str | None, families: dict[int, set[str]], limit: int = MAX_NEW_AGREEMENTS,
                      max_counts: int = MAX_NEW_COUNTS) -> dict:
    """Flag new tokenizers, then measure the pairs the flag does not settle (at most ``limit`` per run)."""
    started = time.perf_counter()
    store, ref = TokenStore(default_root(db)), agr.reference_sha256()
    old = conn.execute(text("SELECT value FROM meta WHERE key = :k"), {"k": META_KEY}).scalar()
    if old != ref:  # another reference text: every figure is stale
        conn.exec_driver_sql("DELETE FROM tokenizer_agreement")
        conn.exec_driver_sql("UPDATE tokenizers SET agrees_by_base = NULL, agreement_basis = NULL, text_tokens = NULL, "
                             "added_text_counts = NULL")
        conn.execute(text(META_UPSERT), {"k": META_KEY, "v": ref})
    new = conn.exec_driver_sql("SELECT id, vocab_sha256, vocab_len, added_tokens FROM tokenizers "
                               "WHERE repo_count > 0 AND agrees_by_base IS NULL ORDER BY id").all()
    flags, recounted = [], 0
    box = TokenizerBox()  # one child process for the run's counts, started on the first (vocab/tokenbox.py)
    try:
        for tid, sha, vocab_len, added in new:
            counts = store.get_counts(sha, ref)
            if counts is None and recounted < max_counts and store.has(sha):
                recounted += 1
                counts = _recount(conn, db, store, tid, sha, box)
            ids = added_ids(added)
            share, basis = share_on_added(counts, ids, vocab_len)
            on_added = {str(i): n for i, n in sorted((counts or {}).items()) if i in ids}
            flags.append({"t": tid, "ok": agr.grade(1.0 - share) == agr.WORKS, "b": basis,
                          "n": sum(counts.values()) if counts else None,
                          "c": json.dumps(on_added) if counts else None})
    finally:
        box.close()
    if flags:
        conn.execute(text("UPDATE tokenizers SET agrees_by_base = :ok, agreement_basis = :b, text_tokens = :n, "
                          "added_text_counts = :c WHERE id = :t"), flags)

    toks = conn.exec_driver_sql("SELECT id, base_vocab_sha256, vocab_len, vocab_sha256, agrees_by_base "
                                "FROM tokenizers WHERE repo_count > 0").all()
    by_base: dict[str, list[int]] = {}
    for tid, base, _, _, _ in toks:
        by_base.setdefault(base, []).append(tid)
    info = {t[0]: t for t in toks}
    starts: dict[int, set] = {}  # tokenizer -> (engine, size) classes it is in: two that share one start together
    for eng, size, tid in conn.exec_driver_sql(
            "SELECT engine, vocab_size, tokenizer_id FROM compat_classes WHERE tokenizer_id IS NOT NULL"):
        starts.setdefault(tid, set()).add((eng, size))
    wanted = {(t, d) for t, base, _, _, clean in toks if not clean for d in by_base[base] if d != t}
    wanted |= {(t, d) for t, d in candidate_pairs([(t[0], t[1], t[2]) for t in toks], families)
               if info[t][1] != info[d][1]}
    wanted = {(t, d) for t, d in wanted if starts.get(t, set()) & starts.get(d, set())}
    done = {tuple(r) for r in conn.exec_driver_sql(
        "SELECT target_tokenizer_id, draft_tokenizer_id FROM tokenizer_agreement")}
    todo = sorted(wanted - done)
    rows, missing = _measure(todo[:limit], info, store, ref)
    if rows:
        conn.execute(text(
            "INSERT INTO tokenizer_agreement (target_tokenizer_id, draft_tokenizer_id, grade, basis, text_agreement, "
            "ids_agreement, differing_ids) VALUES (:t, :d, :g, :b, :ta, :ia, :n)"
            + SKIP_EXISTING), rows)
    return {"flagged": len(flags), "agree_by_base": sum(f["ok"] for f in flags), "recounted": recounted,
            "pairs_wanted": len(wanted), "measured": len(rows), "no_vocabulary": missing,
            "left": max(0, len(todo) - limit), "seconds": round(time.perf_counter() - started, 3)}


def _measure(pairs: list[tuple[int, int]], info: dict, store, ref: str) -> tuple[list[dict], int]:
    """agreement() for each pair, target-major so each target's vocabulary and counts load once."""
    vocabs: dict[int, dict | None] = {}

    def vocab(tid: int) -> dict | None:
        if tid not in vocabs:
            if len(vocabs) > 64:
                vocabs.clear()
            try:
                vocabs[tid] = store.get(info[tid][3])
            except (KeyError, OSError, ValueError):
                vocabs[tid] = None
        return vocabs[tid]

    rows: list = []
    missing = 0
    counts_of: dict = {}
    for t, d in pairs:
        tv, dv = vocab(t), vocab(d)
        if tv is None or dv is None:
            missing += 1  # check cannot measure it either: not listed, as check says useless
            continue
        if t not in counts_of:
            counts_of.clear()
            counts_of[t] = store.get_counts(info[t][3], ref)
        a = agr.agreement(tv, dv, counts_of[t])
        grade = agr.WORKS if a["identical"] else a["class"]
        rows.append({"t": t, "d": d, "g": grade, "b": a["basis"], "ta": a["text_agreement"],
                     "ia": a["ids_agreement"], "n": a["differing_ids"]})
    return rows, missing
