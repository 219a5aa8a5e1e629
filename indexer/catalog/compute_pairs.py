"""``indexer compute``'s tokenizer pairs: which are worth a token-list check (same base vocabulary, or
same family and close in size, never all pairs), and their TLI intersections cached in ``pair_verdicts``.
The agreement step (``compute_agreement``) measures the same candidates.
"""

from __future__ import annotations

from sqlalchemy import text

from ..engines.rules import Side, tli
from .tokenstore import TokenStore, default_root

MAX_PARTNERS = 32  # candidate tokenizer pairs per tokenizer
MAX_NEW_PAIRS = 5000  # token-list evaluations per compute run


# Rows keyed by what they hold (a file set's engine facts, a pair's verdict, a meta key) may be written by two
# computes at once (two crawls that ended together, each computing): each reads what is missing, derives it, and
# inserts it. The second insert of a row is no error: it holds the same facts, so it is skipped (an upsert for
# meta, whose value is the latest run's). ON CONFLICT is SQLite's (3.24+, https://www.sqlite.org/lang_upsert.html)
# and PostgreSQL's (https://www.postgresql.org/docs/current/sql-insert.html#SQL-ON-CONFLICT) alike.
SKIP_EXISTING = " ON CONFLICT DO NOTHING"
META_UPSERT = "INSERT INTO meta (key, value) VALUES (:k, :v) ON CONFLICT (key) DO UPDATE SET value = excluded.value"


def candidate_pairs(tokenizers: list[tuple], families: dict[int, set[str]]) -> list[tuple[int, int]]:
    """Tokenizer pairs worth a token-list check: same base vocabulary, or same family and
    vocab_len within 128. Both directions; at most MAX_PARTNERS partners per tokenizer."""
    by_base: dict[str, list[int]] = {}
    lens: dict[int, int] = {}
    for tid, base, vlen in tokenizers:
        by_base.setdefault(base, []).append(tid)
        lens[tid] = vlen
    partners: dict[int, set[int]] = {}

    def add(a: int, b: int) -> None:
        if a != b and len(partners.setdefault(a, set())) < MAX_PARTNERS:
            partners[a].add(b)

    for ids in by_base.values():
        for a in ids:
            for b in ids:
                add(a, b)
    by_family: dict[str, list[int]] = {}
    for tid, fams in families.items():
        for fam in fams:
            by_family.setdefault(fam, []).append(tid)
    for ids in by_family.values():
        ids.sort(key=lambda i: lens.get(i, 0))
        for i, a in enumerate(ids):
            for b in ids[i + 1:]:
                if lens.get(b, 0) - lens.get(a, 0) > 128:
                    break
                add(a, b)
                add(b, a)
    return sorted((a, b) for a, bs in partners.items() for b in bs)


def compute_pairs(conn, db: str | None, families: dict[int, set[str]]) -> dict:
    """TLI intersections (vLLM's and transformers' counts) for candidate tokenizer pairs in the store.

    ``llamacpp_ok`` / ``llamacpp_reason`` stay NULL: llama.cpp is decided on GGUF vocabularies
    (``llamacpp_pairs``), not on get_vocab() mappings."""
    store = TokenStore(default_root(db))
    toks = conn.exec_driver_sql(
        "SELECT id, base_vocab_sha256, vocab_len, vocab_sha256 FROM tokenizers WHERE repo_count > 0").all()
    stored = [t for t in toks if store.has(t[3])]
    no_tokens = len(toks) - len(stored)
    toks = stored
    if not toks:
        return {"candidates": 0, "cached": 0, "computed": 0, "no_tokens": no_tokens}
    pairs = candidate_pairs([(t[0], t[1], t[2]) for t in toks], families)
    cached = {(a, b) for a, b in conn.exec_driver_sql(
        "SELECT target_tokenizer_id, draft_tokenizer_id FROM pair_verdicts")}
    facts = {t[0]: t for t in toks}
    todo = [p for p in pairs if p not in cached][:MAX_NEW_PAIRS]
    vocabs: dict[int, dict | None] = {}

    def side(tid: int) -> Side | None:
        if tid not in vocabs:
            if len(vocabs) > 64:
                vocabs.clear()
            try:
                vocabs[tid] = store.get(facts[tid][3])
            except (KeyError, OSError, ValueError):
                vocabs[tid] = None
        if vocabs[tid] is None:
            return None
        # Per tokenizer, not per repo: no vocab_size limit on the counted ids.
        return Side(name=str(tid), vocab_size=None, vocab_size_transformers=None,
                    tok={"vocab_sha256": facts[tid][3]}, vocab=vocabs[tid])

    rows, missing = [], no_tokens
    for a, b in todo:
        ta, tb = side(a), side(b)
        if ta is None or tb is None:
            missing += 1
            continue
        info = tli(ta, tb) or {}
        rows.append({"t": a, "d": b, "n": info.get("intersection"), "r": info.get("ratio")})
    if rows:
        conn.execute(text(
            "INSERT INTO pair_verdicts (target_tokenizer_id, draft_tokenizer_id, llamacpp_ok, "
            "llamacpp_reason, tli_intersection, tli_ratio) VALUES (:t, :d, NULL, NULL, :n, :r)"
            + SKIP_EXISTING), rows)
    return {"candidates": len(pairs), "cached": len(cached), "computed": len(rows),
            "no_tokens": missing}
