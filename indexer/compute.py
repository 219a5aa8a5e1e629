"""Compatibility classes per engine, by grouping (never all pairs).

Two repos are in the same class of an engine exactly when that engine's rule (DESIGN §2)
accepts the pair on the facts the catalog stores:

| engine        | class key                                   |
|---------------|---------------------------------------------|
| sglang        | (config vocab_size, vocab_sha256)           |
| vllm          | vocab_size_transformers                     |
| transformers  | (vocab_size_transformers, vocab_sha256)     |
| mlx           | tokenizer hf_vocab_size                     |
| llama.cpp     | (GGUF n_vocab, vocab_sha256) + pair verdicts|

Everything is set-based SQL inside one transaction (one pass over ``repos`` into a narrow
temporary table, then INSERT ... SELECT ... GROUP BY per engine), so a million repos take
seconds, not ORM objects per row. ``repo_classes`` carries the ranking facts so that
``indexer query`` ranks a class from one covering index.
llama.cpp and TLI need token lists: they are evaluated only for candidate tokenizer pairs
(same base vocabulary, or vocab_len within 128 inside one family), bounded, and cached in
``pair_verdicts``.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime, timezone

from sqlalchemy import text

from .db import open_catalog
from .fingerprint import transformers_version
from .params import estimate_from_name

# Per engine: the size column of tmp_ok it compares, whether it also requires the same mapping,
# the label, and whether a repo lacking the size is left out (it always is).
ENGINE_RULES = {
    "sglang": ("vs", True, "'config vocab_size ' || CAST(g.size AS TEXT) || ' and get_vocab() mapping ' "
                           "|| substr(t.vocab_sha256, 1, 12)"),
    "vllm": ("vst", False, "'text-config vocab_size ' || CAST(g.size AS TEXT) || ' (mappings not compared)'"),
    "transformers": ("vst", True, "'text-config vocab_size ' || CAST(g.size AS TEXT) || ' and mapping ' "
                                  "|| substr(t.vocab_sha256, 1, 12)"),
    "mlx": ("hf", False, "'tokenizer.vocab_size ' || CAST(g.size AS TEXT) || ' (base vocabulary)'"),
    "llama.cpp": ("nv", True, "'identical tokenizer ' || substr(t.vocab_sha256, 1, 12) || ', GGUF n_vocab ' "
                              "|| CAST(g.size AS TEXT) || ' (paired tokenizers: see pair_verdicts)'"),
}
NOT_GATED = "('', 'false', 'False', '0', 'no')"
CLASS_INDEX = "ix_repo_classes_class_params"
CLASS_INDEX_COLUMNS = ("class_id, params, downloads, lineage_id, author_id, family_id, is_chat, gated, "
                       "disabled, repo_pk")
MAX_PARTNERS = 32  # candidate tokenizer pairs per tokenizer
MAX_NEW_PAIRS = 5000  # token-list evaluations per compute run
LINEAGE_DEPTH = 16


def _loads():
    try:
        import orjson

        return orjson.loads
    except ImportError:  # pragma: no cover
        import json

        return json.loads


def scan_repos(dbapi_conn) -> tuple[list[tuple[int, int, int | None, int | None, int | None]], dict[int, set[str]]]:
    """One pass over ``repos``: (pk, lineage id, author id, family id, size from the name when the repo
    has neither a count nor a config estimate) per ok repo, and the families of each tokenizer.

    The lineage root is found by following the first base model while it is in the catalog;
    the lineage id is the root repo's pk, or a negative number for a root outside it.
    Author and family ids are dense numbers of the strings (valid within one compute).
    """
    loads = _loads()
    pk_of: dict[str, int] = {}
    parent: dict[str, str] = {}
    ok: list[tuple[int, str, str | None, str | None]] = []
    families: dict[int, set[str]] = {}
    cur = dbapi_conn.cursor()
    cur.execute("SELECT id, repo_id, base_models, author, family, tokenizer_id, status, "
                "params IS NULL AND params_estimate IS NULL FROM repos")
    for pk, repo_id, base, author, family, tok, status, unsized in cur:
        pk_of[repo_id] = pk
        if base:
            try:
                bases = loads(base) if isinstance(base, (str, bytes)) else base
            except ValueError:
                bases = None
            if isinstance(bases, list) and bases and isinstance(bases[0], str) and bases[0] != repo_id:
                parent[repo_id] = bases[0]
        if status == "ok" and tok is not None:
            ok.append((pk, repo_id, author, family, unsized))
            if family is not None:
                families.setdefault(tok, set()).add(family)
    cur.close()
    outside: dict[str, int] = {}
    root_memo: dict[str, str] = {}

    def root(repo_id: str) -> str:
        chain = []
        node = repo_id
        while node in parent and node not in root_memo and len(chain) < LINEAGE_DEPTH:
            chain.append(node)
            node = parent[node]
        found = root_memo.get(node, node)
        for n in chain:
            root_memo[n] = found
        return found

    authors: dict[str, int] = {}
    fams: dict[str, int] = {}
    rows = []
    for pk, repo_id, author, family, unsized in ok:
        lid = pk
        if repo_id in parent:
            r = root(repo_id)
            lid = pk_of.get(r)
            if lid is None:
                lid = outside.setdefault(r, -(len(outside) + 1))
        aid = authors.setdefault(author, len(authors) + 1) if author is not None else None
        fid = fams.setdefault(family, len(fams) + 1) if family is not None else None
        named = estimate_from_name(repo_id) if unsized else None  # no count, no config estimate: the name's
        rows.append((pk, lid, aid, fid, named.total if named else None))
    return rows, families


def compute(db: str | None = None, *, progress: bool = False) -> dict:
    """Rebuild compat_classes / repo_classes / repo counts and extend the pair cache."""
    started = time.perf_counter()
    engine = open_catalog(db)
    sqlite = engine.dialect.name == "sqlite"
    stats: dict = {"classes": {}, "memberships": {}}

    def say(msg: str) -> None:
        if progress:
            print(f"[{time.perf_counter() - started:6.1f}s] {msg}", file=sys.stderr, flush=True)

    def ex(sql: str, params: dict | None = None):
        return conn.execute(text(sql), params or {})

    try:
        with engine.connect() as conn:
            if sqlite:
                conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
                conn.exec_driver_sql("PRAGMA cache_size=-262144")
                conn.exec_driver_sql("PRAGMA threads=2")
                conn.commit()
            dbapi = conn.connection.dbapi_connection
            facts, families = scan_repos(dbapi)
            conn.commit()
            say(f"scanned repos: {len(facts)} ok")
            with conn.begin():
                for tmp in ("tmp_repo", "tmp_ok"):
                    conn.exec_driver_sql(f"DROP TABLE IF EXISTS {tmp}")
                conn.exec_driver_sql("CREATE TEMPORARY TABLE tmp_repo (repo_pk INTEGER PRIMARY KEY, "
                                     "lineage_id INTEGER, author_id INTEGER, family_id INTEGER, name_params BIGINT)")
                cur = dbapi.cursor()
                mark = "?" if sqlite else "%s"
                cur.executemany(f"INSERT INTO tmp_repo VALUES ({mark}, {mark}, {mark}, {mark}, {mark})", facts)
                cur.close()
                del facts
                # One narrow row per ok repo: every later step reads this, not the wide repos table.
                conn.exec_driver_sql(
                    "CREATE TEMPORARY TABLE tmp_ok (pk INTEGER PRIMARY KEY, tok INTEGER, vs INTEGER, "
                    "vst INTEGER, hf INTEGER, nv INTEGER, params BIGINT, downloads BIGINT, lineage_id INTEGER, "
                    "author_id INTEGER, family_id INTEGER, is_chat BOOLEAN, gated BOOLEAN, disabled BOOLEAN)")
                conn.exec_driver_sql(
                    "INSERT INTO tmp_ok SELECT r.id, t.id, r.vocab_size, r.vocab_size_transformers, "
                    "t.hf_vocab_size, CASE WHEN COALESCE(r.vocab_size, 0) > COALESCE(t.max_id, -1) + 1 "
                    "THEN r.vocab_size ELSE COALESCE(t.max_id, -1) + 1 END, "
                    "COALESCE(r.params, r.params_estimate, x.name_params), r.downloads, "  # estimates rank too
                    "x.lineage_id, x.author_id, x.family_id, r.is_chat, "
                    f"CASE WHEN r.gated IS NULL OR r.gated IN {NOT_GATED} THEN FALSE ELSE TRUE END, "
                    "COALESCE(r.disabled, FALSE) FROM repos r JOIN tokenizers t ON t.id = r.tokenizer_id "
                    "JOIN tmp_repo x ON x.repo_pk = r.id WHERE r.status = 'ok' ORDER BY r.id")
                say("narrow copy built")
                conn.exec_driver_sql(f"DROP INDEX IF EXISTS {CLASS_INDEX}")
                conn.exec_driver_sql("DELETE FROM repo_classes")
                conn.exec_driver_sql("DELETE FROM compat_classes")
                for eng, (size, by_tok, label) in ENGINE_RULES.items():
                    if by_tok:
                        ex("INSERT INTO compat_classes (engine, class_key, vocab_size, tokenizer_id, members, label) "
                           f"SELECT :e, CAST(g.size AS TEXT) || ':' || t.vocab_sha256, g.size, g.tok, g.n, {label} "
                           f"FROM (SELECT {size} AS size, tok, count(*) AS n FROM tmp_ok WHERE {size} IS NOT NULL "
                           f"GROUP BY {size}, tok) g JOIN tokenizers t ON t.id = g.tok ORDER BY g.size, g.tok",
                           {"e": eng})
                        on = f"c.vocab_size = o.{size} AND c.tokenizer_id = o.tok"
                    else:
                        ex("INSERT INTO compat_classes (engine, class_key, vocab_size, tokenizer_id, members, label) "
                           f"SELECT :e, CAST(g.size AS TEXT), g.size, NULL, g.n, "
                           f"{label.replace('t.vocab_sha256', 'NULL')} FROM (SELECT {size} AS size, count(*) AS n "
                           f"FROM tmp_ok WHERE {size} IS NOT NULL GROUP BY {size}) g ORDER BY g.size", {"e": eng})
                        on = f"c.vocab_size = o.{size}"
                    res = ex(
                        "INSERT INTO repo_classes (engine, repo_pk, class_id, params, downloads, lineage_id, "
                        "author_id, family_id, is_chat, gated, disabled) "
                        "SELECT :e, o.pk, c.id, o.params, o.downloads, o.lineage_id, o.author_id, o.family_id, "
                        "o.is_chat, o.gated, o.disabled FROM tmp_ok o "
                        f"JOIN compat_classes c ON c.engine = :e AND {on} ORDER BY o.pk", {"e": eng})
                    stats["memberships"][eng] = res.rowcount
                    stats["classes"][eng] = ex("SELECT count(*) FROM compat_classes WHERE engine = :e",
                                               {"e": eng}).scalar()
                    say(f"{eng}: {stats['classes'][eng]} classes, {res.rowcount} members")
                conn.exec_driver_sql(f"CREATE INDEX {CLASS_INDEX} ON repo_classes ({CLASS_INDEX_COLUMNS})")
                say("class index built")
                conn.exec_driver_sql("UPDATE tokenizers SET repo_count = 0")
                conn.exec_driver_sql("DROP TABLE IF EXISTS tmp_counts")
                conn.exec_driver_sql("CREATE TEMPORARY TABLE tmp_counts (tok INTEGER PRIMARY KEY, n INTEGER)")
                conn.exec_driver_sql("INSERT INTO tmp_counts SELECT tok, count(*) FROM tmp_ok GROUP BY tok")
                conn.exec_driver_sql(
                    "UPDATE tokenizers SET repo_count = (SELECT n FROM tmp_counts WHERE tok = tokenizers.id) "
                    "WHERE id IN (SELECT tok FROM tmp_counts)")
                conn.exec_driver_sql("DROP TABLE tmp_counts")
                stats["repos"] = conn.exec_driver_sql("SELECT count(*) FROM tmp_ok").scalar()
                conn.exec_driver_sql("DROP TABLE tmp_ok")
                conn.exec_driver_sql("DROP TABLE tmp_repo")
            say("classes committed")
            with conn.begin():
                stats["pairs"] = compute_pairs(conn, db, families)
            say(f"pairs: {stats['pairs']}")
            stats["seconds"] = round(time.perf_counter() - started, 3)
            with conn.begin():
                write_meta(conn, {
                    "computed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "compute_seconds": str(stats["seconds"]),
                    "compute_repos": str(stats["repos"]),
                    "transformers_version": transformers_version() or "not installed",
                })
            if sqlite:
                conn.exec_driver_sql("PRAGMA foreign_keys=ON")
                conn.commit()
    finally:
        engine.dispose()
    return stats


def write_meta(conn, values: dict[str, str]) -> None:
    for key, value in values.items():
        conn.execute(text("DELETE FROM meta WHERE key = :k"), {"k": key})
        conn.execute(text("INSERT INTO meta (key, value) VALUES (:k, :v)"), {"k": key, "v": value})


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
    """Evaluate llama.cpp and TLI for candidate pairs whose token lists are in the store."""
    from .rules import Side, llamacpp, tli
    from .tokenstore import TokenStore, default_root

    store = TokenStore(default_root(db))
    toks = conn.exec_driver_sql(
        "SELECT id, base_vocab_sha256, vocab_len, vocab_sha256, add_bos_token, add_eos_token, bos_token_id, "
        "eos_token_id FROM tokenizers WHERE repo_count > 0").all()
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
        f = facts[tid]
        tok = {"vocab_sha256": f[3], "add_bos_token": f[4], "add_eos_token": f[5], "bos_token_id": f[6],
               "eos_token_id": f[7]}
        # Unpadded token lists: the n_vocab difference is checked at query time per repo.
        return Side(name=str(tid), vocab_size=None, vocab_size_transformers=None, tok=tok, vocab=vocabs[tid])

    rows, missing = [], no_tokens
    for a, b in todo:
        ta, tb = side(a), side(b)
        if ta is None or tb is None:
            missing += 1
            continue
        verdict = llamacpp(ta, tb)
        info = tli(ta, tb) or {}
        rows.append({"t": a, "d": b, "ok": verdict.compatible, "why": "; ".join(verdict.reasons),
                     "n": info.get("intersection"), "r": info.get("ratio")})
    if rows:
        conn.execute(text(
            "INSERT INTO pair_verdicts (target_tokenizer_id, draft_tokenizer_id, llamacpp_ok, "
            "llamacpp_reason, tli_intersection, tli_ratio) VALUES (:t, :d, :ok, :why, :n, :r)"), rows)
    return {"candidates": len(pairs), "cached": len(cached), "computed": len(rows),
            "no_tokens": missing}
