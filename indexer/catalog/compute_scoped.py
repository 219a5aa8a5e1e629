"""``compute`` for a few repos just written (a live answer): their engine facts, class memberships and the
caches, without rebuilding the classes of the whole catalog.

``catalog.compute.compute`` rebuilds every class from every repo: seconds on a catalog of 100,000 repos
(benchmarks/live.py measures it against this), too slow for one question. A repo added alone changes only its
own memberships, the member counts of its classes and its tokenizer's repo count, so this module writes exactly
those, with the same class keys (``engines.Engine.class_key``), the same facts in the same columns, and
lineage, author and family numbers that are equal exactly when the full compute's are (the answer compares
them for equality only). The engine-fact, agreement and pair steps are compute's own, which already only
extend their caches. A catalog computed this way answers as one computed in full (tests/test_live.py).
"""

from __future__ import annotations

import time

import orjson
from sqlalchemy import text

from ..engines import ENGINES, GGUF_CLASS_KEY
from ..vocab.params import estimate_from_name
from .compute import (
    LINEAGE_DEPTH,
    NOT_GATED,
    SIZE_WORDS,
    compute_llamacpp_pairs,
    derive_engine_facts,
)
from .compute_agreement import compute_agreement
from .compute_pairs import compute_pairs
from .db import open_catalog

# The narrow row of one ok repo, as compute's tmp_ok holds it (compute.py), for the given pks only.
NARROW_SQL = (
    "SELECT r.id, t.id, r.vocab_size, "
    "CASE WHEN e.text_config_error IS NULL THEN r.vocab_size_transformers END, "
    "CASE WHEN e.text_config_error IS NULL THEN COALESCE(e.vllm_vocab_size, r.vocab_size_transformers) END, "
    "t.hf_vocab_size, e.gguf_signature, e.gguf_n_vocab, COALESCE(r.params, r.params_estimate), r.downloads, "
    f"r.is_chat, CASE WHEN r.gated IS NULL OR r.gated IN {NOT_GATED} THEN FALSE ELSE TRUE END, "
    "COALESCE(r.disabled, FALSE), t.vocab_sha256, r.repo_id, r.author, r.family, r.base_models "
    "FROM repos r LEFT JOIN tokenizers t ON t.id = r.tokenizer_id LEFT JOIN engine_facts e "
    "ON e.file_set_id = r.file_set_id AND e.config_blob = COALESCE(r.config_blob, '') "
    "WHERE r.id = :pk AND r.status = 'ok' AND (t.id IS NOT NULL OR e.gguf_signature IS NOT NULL)")
ENGINE_LIST = ", ".join(f"'{name}'" for name in ENGINES)  # repo_classes' key is (engine, repo_pk)
# compute numbers the roots outside the catalog -1, -2, ... (fewer than the repos); a root first met here gets
# -(OUTSIDE_BASE + the pk of the repo that met it), which none of those can be.
OUTSIDE_BASE = 1 << 40
NARROW_KEYS = ("pk", "tok", "vs", "vst", "vllm_vs", "hf", "gguf_sig", "gguf_nv", "params", "downloads", "is_chat",
               "gated", "disabled", "vocab_sha", "repo_id", "author", "family", "base_models")


def compute_repos(db: str | None, repo_ids) -> dict:
    """Engine facts, class memberships and caches for ``repo_ids`` (rows just written); the stats."""
    started = time.perf_counter()
    engine = open_catalog(db)
    stats: dict = {"repos": 0, "memberships": 0}
    try:
        with engine.connect() as conn:
            with conn.begin():
                stats["engine_facts"] = derive_engine_facts(conn, db, repo_ids=list(repo_ids))
            changed = bool(stats["engine_facts"]["derived"])
            with conn.begin():
                for repo_id in repo_ids:
                    added, new_inputs = _add_repo(conn, repo_id)
                    stats["memberships"] += added
                    stats["repos"] += 1
                    changed = changed or new_inputs
            with conn.begin():
                stats["llamacpp_pairs"] = compute_llamacpp_pairs(conn, db)
            if changed:  # else the agreement and pair steps' inputs are as the last compute left them
                with conn.begin():
                    families = _families(conn)
                    stats["agreement"] = compute_agreement(conn, db, families)
                with conn.begin():
                    stats["pairs"] = compute_pairs(conn, db, families)
    finally:
        engine.dispose()
    stats["seconds"] = round(time.perf_counter() - started, 3)
    return stats


def _one(conn, sql: str, params: dict):
    return conn.execute(text(sql), params).first()


def _families(conn) -> dict[int, set[str]]:
    """The families of each tokenizer among ok repos (what compute's ``scan_repos`` gives its cache steps)."""
    out: dict[int, set[str]] = {}
    for tok, family in conn.execute(text(
            "SELECT DISTINCT tokenizer_id, family FROM repos WHERE status = 'ok' AND tokenizer_id IS NOT NULL "
            "AND family IS NOT NULL")):
        out.setdefault(tok, set()).add(family)
    return out


def _first(base, repo_id: str | None = None) -> str | None:
    """The primary parent in ``base_models`` (compute's ``scan_repos`` rule), or None."""
    if not base:
        return None
    try:
        bases = orjson.loads(base) if isinstance(base, (str, bytes)) else base
    except ValueError:
        return None
    if isinstance(bases, list) and bases and isinstance(bases[0], str) and bases[0] != repo_id:
        return bases[0]
    return None


def _root(conn, repo_id: str, first: str | None) -> str:
    """The lineage root: the first base followed while it is in the catalog (``scan_repos``'s walk)."""
    node, parent, depth = repo_id, first, 0
    while parent is not None and depth < LINEAGE_DEPTH:
        node, depth = parent, depth + 1
        row = _one(conn, "SELECT base_models FROM repos WHERE repo_id = :r", {"r": node})
        if row is None:
            break
        parent = _first(row[0], node)
    return node


def _children_lineage(conn, root: str) -> int | None:
    """The lineage number the catalog gives repos whose first base is ``root`` (None when it has none)."""
    for pk, base in conn.execute(text(
            "SELECT r.id, r.base_models FROM repos r WHERE r.status = 'ok' AND r.base_models IS NOT NULL "
            "AND CAST(r.base_models AS TEXT) LIKE :like"), {"like": f"%{root}%"}):  # a superset: the first base decides
        if _first(base) == root:
            row = _one(conn, f"SELECT lineage_id FROM repo_classes WHERE engine IN ({ENGINE_LIST}) AND repo_pk = :pk "
                             "LIMIT 1", {"pk": pk})
            if row is not None and row[0] is not None:
                return row[0]
    return None


def _dense(conn, column: str, value: str | None, pk: int) -> int | None:
    """The number the catalog gives ``value`` of repos.author / repos.family, else a new one: ``-pk``, which no
    other value has (compute numbers them 1, 2, ...; a repo's pk is its own)."""
    if value is None:
        return None
    row = _one(conn, f"SELECT rc.{column}_id FROM repos r JOIN repo_classes rc ON rc.engine IN ({ENGINE_LIST}) "
                     f"AND rc.repo_pk = r.id WHERE r.{column} = :v AND rc.{column}_id IS NOT NULL LIMIT 1",
               {"v": value})
    return row[0] if row is not None else -pk


def _lineage(conn, n: dict) -> int:
    """compute's lineage number for the new repo, renumbering the repos whose lineage it now roots."""
    first = _first(n["base_models"], n["repo_id"])
    if first is None:
        lid = n["pk"]
    else:
        root = _root(conn, n["repo_id"], first)
        row = _one(conn, "SELECT id FROM repos WHERE repo_id = :r", {"r": root})
        lid = row[0] if row is not None else _children_lineage(conn, root)
        if lid is None:  # a root outside the catalog no other repo shares: a number no other lineage has
            lid = -(OUTSIDE_BASE + n["pk"])
    outside = _children_lineage(conn, n["repo_id"])  # repos that derive from this repo had it outside
    if outside is not None and outside < 0 and outside != lid:
        conn.execute(text("UPDATE repo_classes SET lineage_id = :lid WHERE lineage_id = :old"),
                     {"lid": lid, "old": outside})
    return lid


def _add_repo(conn, repo_id: str) -> tuple[int, bool]:
    """The repo's memberships in every engine's class (made when new), counts updated: (how many, whether the
    agreement and pair steps' inputs changed: a new class, a tokenizer's first repo, a tokenizer's new family)."""
    pk_row = _one(conn, "SELECT id FROM repos WHERE repo_id = :r", {"r": repo_id})
    if pk_row is None:
        return 0, False
    pk = pk_row[0]
    _drop_memberships(conn, pk)
    row = _one(conn, NARROW_SQL, {"pk": pk})
    if row is None:
        return 0, False  # not ok, or no facts: no class, as in compute
    n = dict(zip(NARROW_KEYS, row, strict=True))
    if n["params"] is None:
        named = estimate_from_name(repo_id)
        n["params"] = named.total if named else None
    facts = {"pk": pk, "params": n["params"], "downloads": n["downloads"], "lineage_id": _lineage(conn, n),
             "author_id": _dense(conn, "author", n["author"], pk),
             "family_id": _dense(conn, "family", n["family"], pk),
             "is_chat": n["is_chat"], "gated": bool(n["gated"]), "disabled": bool(n["disabled"])}
    added, changed = 0, _new_for_tokenizer(conn, n)
    for eng in ENGINES.values():
        cid, made = _class_id(conn, eng.name, eng.class_key, n)
        if cid is None:
            continue
        changed = changed or made
        conn.execute(text("UPDATE compat_classes SET members = members + 1 WHERE id = :c"), {"c": cid})
        conn.execute(text(
            "INSERT INTO repo_classes (engine, repo_pk, class_id, params, downloads, lineage_id, author_id, "
            "family_id, is_chat, gated, disabled) VALUES (:e, :pk, :c, :params, :downloads, :lineage_id, "
            ":author_id, :family_id, :is_chat, :gated, :disabled)"), {**facts, "e": eng.name, "c": cid})
        added += 1
    if n["tok"] is not None:
        conn.execute(text("UPDATE tokenizers SET repo_count = COALESCE(repo_count, 0) + 1 WHERE id = :t"),
                     {"t": n["tok"]})
    return added, changed


def _new_for_tokenizer(conn, n: dict) -> bool:
    """Is this repo its tokenizer's first counted repo, or the first of its family with it?"""
    if n["tok"] is None:
        return False
    count = _one(conn, "SELECT repo_count FROM tokenizers WHERE id = :t", {"t": n["tok"]})
    if not count or not count[0]:
        return True
    if n["family"] is None:
        return False
    return _one(conn, "SELECT 1 FROM repos WHERE tokenizer_id = :t AND family = :f AND status = 'ok' AND id <> :pk "
                      "LIMIT 1", {"t": n["tok"], "f": n["family"], "pk": n["pk"]}) is None


def _drop_memberships(conn, pk: int) -> None:
    """A repo written again: its old memberships leave their classes first."""
    where = f"engine IN ({ENGINE_LIST}) AND repo_pk = :pk"
    for (cid,) in conn.execute(text(f"SELECT class_id FROM repo_classes WHERE {where}"), {"pk": pk}).all():
        conn.execute(text("UPDATE compat_classes SET members = members - 1 WHERE id = :c"), {"c": cid})
    if conn.execute(text(f"DELETE FROM repo_classes WHERE {where}"), {"pk": pk}).rowcount:
        conn.execute(text("UPDATE tokenizers SET repo_count = repo_count - 1 WHERE id = "
                          "(SELECT tokenizer_id FROM repos WHERE id = :pk) AND repo_count > 0"), {"pk": pk})


def _class_id(conn, engine: str, key: tuple[str, ...], n: dict) -> tuple[int | None, bool]:
    """(id, made now) of the repo's class on ``engine`` (compute's ``insert_classes`` key and label)."""
    if not key:  # the engine runs no draft model (Ollama): no classes, as in compute
        return None, False
    if key == GGUF_CLASS_KEY:
        if n["gguf_sig"] is None:
            return None, False
        ck, size, tok = n["gguf_sig"], n["gguf_nv"], None
        label = f"GGUF vocabulary {ck[:12]}, n_vocab {size}"
    else:
        size_col, _ = key
        size, tok = n[size_col], n["tok"]
        if size is None or tok is None:
            return None, False
        ck = f"{size}:{n['vocab_sha']}"
        label = f"{SIZE_WORDS[size_col]} {size} and get_vocab() mapping {n['vocab_sha'][:12]}"
    row = _one(conn, "SELECT id FROM compat_classes WHERE engine = :e AND class_key = :k", {"e": engine, "k": ck})
    if row is not None:
        return row[0], False
    conn.execute(text("INSERT INTO compat_classes (engine, class_key, vocab_size, tokenizer_id, members, label) "
                      "VALUES (:e, :k, :s, :t, 0, :l)"), {"e": engine, "k": ck, "s": size, "t": tok, "l": label})
    return _one(conn, "SELECT id FROM compat_classes WHERE engine = :e AND class_key = :k",
                {"e": engine, "k": ck})[0], True
