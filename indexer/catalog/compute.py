"""Compatibility classes per engine, by grouping (never all pairs).

Two repos are in the same class of an engine exactly when that engine's verdict is *works*
for the pair on the facts the catalog stores. The class key of each engine comes from the
registry (``indexer.engines``, ``Engine.class_key``), as columns of the narrow per-repo table:

| column   | meaning                                                            |
|----------|--------------------------------------------------------------------|
| vs       | SGLang's config vocab_size                                         |
| vst      | transformers' get_text_config().vocab_size                         |
| vllm_vs  | vLLM's text-config vocab_size (NULL when get_text_config() raises) |
| hf       | tokenizer.vocab_size (base vocabulary; MLX, LM Studio)             |
| tok      | the get_vocab() mapping (tokenizer id)                             |
| gguf_sig | the GGUF vocabulary signature (llama.cpp)                          |

Everything is set-based SQL inside one transaction (one pass over ``repos`` into a narrow
temporary table, then INSERT ... SELECT ... GROUP BY per engine), so a million repos take
seconds, not ORM objects per row. ``repo_classes`` carries the ranking facts so that
``indexer query`` ranks a class from one covering index.

Before that, the engine facts (vLLM's text config, vision_config, the GGUF vocabulary that
``convert_hf_to_gguf.py`` would write) are derived once per distinct (tokenizer file set,
config blob) from the blob store, into ``engine_facts``, the token lists into the token store.
llama.cpp accepts some pairs of different GGUF vocabularies (sizes within 128, ids below 5);
those are evaluated for candidate signature pairs only (a shared token-prefix bucket, which
every passing pair has) and cached in ``llamacpp_pairs``. Candidate tokenizer pairs and their TLI
intersections, cached in ``pair_verdicts``, are ``indexer.catalog.compute_pairs``. Which other tokenizers of
a size class a target's drafts may use (their vocabularies agree: works or degraded) is the agreement step
(``indexer.catalog.compute_agreement``).
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import orjson
from sqlalchemy import text

from ..engines import ENGINES, GGUF_CLASS_KEY, LLAMACPP_COMMIT, gguf_buckets, gguf_signature
from ..engines.llamacpp import speculative_compatible
from ..files import InputError, read_json
from ..gguf.predict import GGUFVocab, predict_gguf_facts
from ..scratch import scratch_dir
from ..vocab.archconfig import arch_facts
from ..vocab.fingerprint import transformers_version
from ..vocab.modelconfig import read_config
from ..vocab.params import estimate_from_name
from . import db
from .blobstore import BlobStore
from .blobstore import default_root as blob_root
from .compute_agreement import compute_agreement
from .compute_pairs import MAX_NEW_PAIRS, META_UPSERT, SKIP_EXISTING, compute_pairs
from .db import open_catalog
from .tokenstore import TokenStore, default_root

# What each size column of tmp_ok means, for class labels.
SIZE_WORDS = {"vs": "config vocab_size", "vst": "text-config vocab_size", "vllm_vs": "text-config vocab_size",
              "hf": "tokenizer.vocab_size"}
MAX_NEW_FACTS = 2000  # engine-fact derivations (one converter prediction each) per compute run
NOT_GATED = "(" + ", ".join(f"'{v}'" for v in db.NOT_GATED) + ")"  # SQL list of db.NOT_GATED
CLASS_INDEX = "ix_repo_classes_class_params"
CLASS_INDEX_COLUMNS = ("class_id, params, downloads, lineage_id, author_id, family_id, is_chat, gated, "
                       "disabled, repo_pk")
RANK_INDEX = "ix_repo_classes_class_rank"  # migration 0010: a class in the ranking's download order
RANK_INDEX_COLUMNS = "class_id, gated, COALESCE(downloads, 0) DESC, repo_pk"
LINEAGE_DEPTH = 16
NO_ARCH = {"source": "none"}  # no config.json to read: no architecture row can match (and none is retried)



def scan_repos(dbapi_conn) -> tuple[list[tuple[int, int, int | None, int | None, int | None]], dict[int, set[str]]]:
    """One pass over ``repos``: (pk, lineage id, author id, family id, size from the name when the repo
    has neither a count nor a config estimate) per ok repo, and the families of each tokenizer.

    The lineage root is found by following the first base model while it is in the catalog;
    the lineage id is the root repo's pk, or a negative number for a root outside it.
    Author and family ids are dense numbers of the strings (valid within one compute).
    """
    loads = orjson.loads
    pk_of: dict[str, int] = {}
    parent: dict[str, str] = {}
    ok: list[tuple[int, str, str | None, str | None, bool]] = []
    families: dict[int, set[str]] = {}
    cur = dbapi_conn.cursor()
    cur.execute("SELECT id, repo_id, base_models, author, family, tokenizer_id, status, "
                "params IS NULL AND params_estimate IS NULL, file_set_id FROM repos")
    for pk, repo_id, base, author, family, tok, status, unsized, fs in cur:
        pk_of[repo_id] = pk
        if base:
            try:
                bases = loads(base) if isinstance(base, (str, bytes)) else base
            except ValueError:
                bases = None
            if isinstance(bases, list) and bases and isinstance(bases[0], str) and bases[0] != repo_id:
                parent[repo_id] = bases[0]
        if status == "ok" and (tok is not None or fs is not None):  # a tokenizer, or a GGUF repo's own facts
            ok.append((pk, repo_id, author, family, unsized))
            if family is not None and tok is not None:
                families.setdefault(tok, set()).add(family)
    cur.close()
    outside: dict[str, int] = {}
    root_memo: dict[str, str] = {}

    def root(repo_id: str) -> str:
        chain: list[str] = []
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
        lid: int | None = pk
        if repo_id in parent:
            r = root(repo_id)
            lid = pk_of.get(r)
            if lid is None:
                lid = outside.setdefault(r, -(len(outside) + 1))
        aid = authors.setdefault(author, len(authors) + 1) if author is not None else None
        fid = fams.setdefault(family, len(fams) + 1) if family is not None else None
        named = estimate_from_name(repo_id) if unsized else None  # no count, no config estimate: the name's
        assert lid is not None  # the root's pk, or an outside root's negative id
        rows.append((pk, lid, aid, fid, named.total if named else None))
    return rows, families


def compute(db: str | None = None, *, progress: bool = False) -> dict:
    """Derive missing engine facts, rebuild compat_classes / repo_classes / repo counts, extend the pair caches."""
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
            with conn.begin():
                stats["engine_facts"] = derive_engine_facts(conn, db)
            say(f"engine facts: {stats['engine_facts']}")
            dbapi = conn.connection.dbapi_connection
            facts, families = scan_repos(dbapi)
            conn.commit()
            say(f"scanned repos: {len(facts)} ok")
            with conn.begin():
                write_lock(conn)  # the classes are rebuilt whole: one compute at a time
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
                # Without derived engine facts, vLLM's size is transformers' (they differ only by remaps).
                conn.exec_driver_sql(
                    "CREATE TEMPORARY TABLE tmp_ok (pk INTEGER PRIMARY KEY, tok INTEGER, vs INTEGER, "
                    "vst INTEGER, vllm_vs INTEGER, hf INTEGER, gguf_sig VARCHAR(64), gguf_nv INTEGER, "
                    "params BIGINT, downloads BIGINT, lineage_id INTEGER, "
                    "author_id INTEGER, family_id INTEGER, is_chat BOOLEAN, gated BOOLEAN, disabled BOOLEAN)")
                conn.exec_driver_sql(
                    "INSERT INTO tmp_ok SELECT r.id, t.id, r.vocab_size, "
                    "CASE WHEN e.text_config_error IS NULL THEN r.vocab_size_transformers END, "
                    "CASE WHEN e.text_config_error IS NULL THEN COALESCE(e.vllm_vocab_size, "
                    "r.vocab_size_transformers) END, "
                    "t.hf_vocab_size, e.gguf_signature, e.gguf_n_vocab, "
                    "COALESCE(r.params, r.params_estimate, x.name_params), r.downloads, "  # estimates rank too
                    "x.lineage_id, x.author_id, x.family_id, r.is_chat, "
                    f"CASE WHEN r.gated IS NULL OR r.gated IN {NOT_GATED} THEN FALSE ELSE TRUE END, "
                    "COALESCE(r.disabled, FALSE) FROM repos r LEFT JOIN tokenizers t ON t.id = r.tokenizer_id "
                    "JOIN tmp_repo x ON x.repo_pk = r.id LEFT JOIN engine_facts e ON e.file_set_id = r.file_set_id "
                    "AND e.config_blob = COALESCE(r.config_blob, '') WHERE r.status = 'ok' "
                    # a GGUF repo has no tokenizer: its engine facts were read from its GGUF header
                    "AND (t.id IS NOT NULL OR e.gguf_signature IS NOT NULL) ORDER BY r.id")
                say("narrow copy built")
                conn.exec_driver_sql(f"DROP INDEX IF EXISTS {CLASS_INDEX}")
                conn.exec_driver_sql(f"DROP INDEX IF EXISTS {RANK_INDEX}")
                conn.exec_driver_sql("DELETE FROM repo_classes")
                conn.exec_driver_sql("DELETE FROM compat_classes")
                for eng in ENGINES.values():
                    if not eng.class_key:  # the engine runs no draft model (Ollama): no classes
                        stats["memberships"][eng.name] = stats["classes"][eng.name] = 0
                        continue
                    insert_classes(ex, eng.name, eng.class_key)
                    on = " AND ".join(CLASS_JOIN[col] for col in eng.class_key)
                    res = ex(
                        "INSERT INTO repo_classes (engine, repo_pk, class_id, params, downloads, lineage_id, "
                        "author_id, family_id, is_chat, gated, disabled) "
                        "SELECT :e, o.pk, c.id, o.params, o.downloads, o.lineage_id, o.author_id, o.family_id, "
                        "o.is_chat, o.gated, o.disabled FROM tmp_ok o "
                        f"JOIN compat_classes c ON c.engine = :e AND {on} ORDER BY o.pk", {"e": eng.name})
                    stats["memberships"][eng.name] = res.rowcount
                    stats["classes"][eng.name] = ex("SELECT count(*) FROM compat_classes WHERE engine = :e",
                                                    {"e": eng.name}).scalar()
                    say(f"{eng.name}: {stats['classes'][eng.name]} classes, {res.rowcount} members")
                conn.exec_driver_sql(f"CREATE INDEX {CLASS_INDEX} ON repo_classes ({CLASS_INDEX_COLUMNS})")
                conn.exec_driver_sql(f"CREATE INDEX {RANK_INDEX} ON repo_classes ({RANK_INDEX_COLUMNS})")
                say("class index built")
                conn.exec_driver_sql("UPDATE tokenizers SET repo_count = 0")
                conn.exec_driver_sql("DROP TABLE IF EXISTS tmp_counts")
                conn.exec_driver_sql("CREATE TEMPORARY TABLE tmp_counts (tok INTEGER PRIMARY KEY, n INTEGER)")
                conn.exec_driver_sql("INSERT INTO tmp_counts SELECT tok, count(*) FROM tmp_ok WHERE tok IS NOT NULL "
                                     "GROUP BY tok")
                conn.exec_driver_sql(
                    "UPDATE tokenizers SET repo_count = (SELECT n FROM tmp_counts WHERE tok = tokenizers.id) "
                    "WHERE id IN (SELECT tok FROM tmp_counts)")
                conn.exec_driver_sql("DROP TABLE tmp_counts")
                stats["repos"] = conn.exec_driver_sql("SELECT count(*) FROM tmp_ok").scalar()
                conn.exec_driver_sql("DROP TABLE tmp_ok")
                conn.exec_driver_sql("DROP TABLE tmp_repo")
            say("classes committed")
            with conn.begin():
                stats["agreement"] = compute_agreement(conn, db, families)
            say(f"agreement: {stats['agreement']}")
            with conn.begin():
                stats["llamacpp_pairs"] = compute_llamacpp_pairs(conn, db)
            say(f"llama.cpp pairs: {stats['llamacpp_pairs']}")
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
                    "llamacpp_commit": LLAMACPP_COMMIT,
                })
            if sqlite:
                conn.exec_driver_sql("PRAGMA foreign_keys=ON")
                conn.commit()
    finally:
        engine.dispose()
    return stats


# How a class-key column of tmp_ok (o) matches compat_classes (c).
CLASS_JOIN = {"tok": "c.tokenizer_id = o.tok", "gguf_sig": "c.class_key = o.gguf_sig",
              **{col: f"c.vocab_size = o.{col}" for col in SIZE_WORDS}}


def insert_classes(ex, engine: str, key: tuple[str, ...]) -> None:
    """One compat_classes row per distinct value of the engine's class key among ok repos."""
    if key == GGUF_CLASS_KEY:
        ex("INSERT INTO compat_classes (engine, class_key, vocab_size, tokenizer_id, members, label) "
           "SELECT :e, g.sig, g.nv, NULL, g.n, 'GGUF vocabulary ' || substr(g.sig, 1, 12) || ', n_vocab ' "
           "|| CAST(g.nv AS TEXT) FROM (SELECT gguf_sig AS sig, max(gguf_nv) AS nv, count(*) AS n FROM tmp_ok "
           "WHERE gguf_sig IS NOT NULL GROUP BY gguf_sig) g ORDER BY g.sig", {"e": engine})
        return
    size, by = key
    if by != "tok" or size not in SIZE_WORDS:
        raise ValueError(f"{engine}: unsupported class key {key!r}")
    ex("INSERT INTO compat_classes (engine, class_key, vocab_size, tokenizer_id, members, label) "
       f"SELECT :e, CAST(g.size AS TEXT) || ':' || t.vocab_sha256, g.size, g.tok, g.n, "
       f"'{SIZE_WORDS[size]} ' || CAST(g.size AS TEXT) || ' and get_vocab() mapping ' "
       "|| substr(t.vocab_sha256, 1, 12) "
       f"FROM (SELECT {size} AS size, tok, count(*) AS n FROM tmp_ok WHERE {size} IS NOT NULL "
       f"GROUP BY {size}, tok) g JOIN tokenizers t ON t.id = g.tok ORDER BY g.size, g.tok", {"e": engine})


def write_meta(conn, values: dict[str, str]) -> None:
    """Replace these ``meta`` rows: when, how long and with which transformers and llama.cpp classes were computed."""
    for key, value in values.items():
        conn.execute(text(META_UPSERT), {"k": key, "v": value})


def write_lock(conn) -> None:
    """Take the catalog's write lock at the start of this transaction, so that a second compute waits for it
    instead of failing. SQLite: BEGIN IMMEDIATE (a transaction that read first cannot start writing once another
    writer committed: SQLITE_BUSY at once, https://www.sqlite.org/lang_transaction.html); PostgreSQL: a lock on
    the class tables that conflicts with itself and not with readers (EXCLUSIVE,
    https://www.postgresql.org/docs/current/explicit-locking.html#LOCKING-TABLES)."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        conn.exec_driver_sql("LOCK TABLE compat_classes, repo_classes IN EXCLUSIVE MODE")


# ---------------------------------------------------------------- engine facts


def facts_of_dir(directory: Path, tokens) -> dict:
    """engine_facts columns for one exported model directory; the GGUF token list goes to ``tokens``."""
    row: dict = {"vllm": None, "tce": None, "vis": False, "arch": NO_ARCH}
    if (directory / "config.json").is_file():
        try:
            cfg = read_config(directory)
            row.update(vllm=cfg.vllm_vocab_size, tce=cfg.text_config_error, vis=cfg.has_vision_config,
                       arch=cfg.arch.to_dict() if cfg.arch else NO_ARCH)
        except InputError as e:
            row["tce"] = e.message
    g, missing = predict_gguf_facts(directory)
    row.update(conv=False, gerr=missing, nv=None, tsha=None, gguf=None, sig=None, hi=None, lo=None)
    if g is not None:
        row.update(conv=bool(g.converted), gerr=g.error, gguf=g.to_dict())
        if g.converted and g.tokens is not None:
            tsha = g.tokens_sha256()
            tokens.put_tokens(tsha, g.tokens)
            hi, lo = gguf_buckets(g.tokens)
            row.update(nv=g.n_vocab, tsha=tsha, sig=gguf_signature(g, tsha), hi=hi, lo=lo)
    return row


def derive_engine_facts(conn, db: str | None, limit: int = MAX_NEW_FACTS, repo_ids=None) -> dict:
    """engine_facts for every (file set, config blob) of an ok repo that has none yet, from the blob store
    (``repo_ids``: of those repos only; catalog/compute_scoped.py)."""
    loads = orjson.loads
    only, params = "", {}
    if repo_ids is not None:
        only = " AND r.repo_id IN (" + (", ".join(f":r{i}" for i in range(len(repo_ids))) or "NULL") + ")"
        params = {f"r{i}": rid for i, rid in enumerate(repo_ids)}
    todo = conn.execute(text(
        # DISTINCT over the ids only: PostgreSQL has no equality operator for json (file_sets.files).
        "SELECT x.fs, x.cb, f.files FROM (SELECT DISTINCT r.file_set_id AS fs, COALESCE(r.config_blob, '') AS cb "
        "FROM repos r LEFT JOIN engine_facts e ON e.file_set_id = r.file_set_id "
        "AND e.config_blob = COALESCE(r.config_blob, '') WHERE r.status = 'ok' AND r.tokenizer_id IS NOT NULL "
        f"AND r.file_set_id IS NOT NULL AND e.id IS NULL{only}) x JOIN file_sets f ON f.id = x.fs "
        "ORDER BY x.fs, x.cb"), params).all()
    blobs, tokens = BlobStore(blob_root(db)), TokenStore(default_root(db))
    rows, missing = [], 0
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    for fsid, config_blob, files in todo[:limit]:
        files = loads(files) if isinstance(files, (str, bytes)) else files
        with scratch_dir(prefix="indexer-facts-") as tmp:
            try:
                blobs.export(files, tmp)
                if config_blob:
                    blobs.export({"config.json": config_blob}, tmp)
            except KeyError:
                missing += 1  # blobs not stored (another machine's crawl): retried next run
                continue
            row = facts_of_dir(Path(tmp), tokens)
        rows.append({**row, "fs": fsid, "cb": config_blob, "commit": LLAMACPP_COMMIT, "at": now})
    if rows:
        conn.execute(text(
            "INSERT INTO engine_facts (file_set_id, config_blob, vllm_vocab_size, text_config_error, "
            "has_vision_config, gguf_converted, gguf_error, gguf_n_vocab, gguf_tokens_sha256, gguf, gguf_signature, "
            "gguf_bucket_hi, gguf_bucket_lo, llamacpp_commit, derived_at, arch) VALUES (:fs, :cb, :vllm, :tce, :vis, "
            ":conv, :gerr, :nv, :tsha, :gguf, :sig, :hi, :lo, :commit, :at, :arch)" + SKIP_EXISTING),
            [{**r, "gguf": _dumps(r["gguf"]), "arch": _dumps(r["arch"])} for r in rows])
    return {"pending": len(todo), "derived": len(rows), "blobs_missing": missing,
            "left": max(0, len(todo) - limit), "arch_backfilled": backfill_arch(conn, db, blobs)}


def backfill_arch(conn, db: str | None, blobs) -> int:
    """Architecture facts for engine_facts rows derived before they existed (catalog revision 0009): read again
    from the stored config blob and the file set's tokenizer_config.json, no converter and no re-crawl. A GGUF
    repo's row (no config blob) gets its facts from the stored header facts when they carry them."""
    loads = orjson.loads
    todo = conn.exec_driver_sql(
        "SELECT e.id, e.config_blob, f.files, e.gguf FROM engine_facts e JOIN file_sets f ON f.id = e.file_set_id "
        "WHERE e.arch IS NULL ORDER BY e.id").all()
    updates = []
    for eid, config_blob, files, gguf in todo:
        arch = NO_ARCH
        if config_blob:
            files = loads(files) if isinstance(files, (str, bytes)) else files
            wanted = {"config.json": config_blob}
            if isinstance(files, dict) and files.get("tokenizer_config.json"):
                wanted["tokenizer_config.json"] = files["tokenizer_config.json"]
            with scratch_dir(prefix="indexer-arch-") as tmp:
                try:
                    blobs.export(wanted, tmp)
                    config = read_json(Path(tmp) / "config.json")
                    tc = read_json(Path(tmp) / "tokenizer_config.json") if "tokenizer_config.json" in wanted else None
                except (KeyError, InputError):
                    continue  # blobs not stored here, or a config no engine reads: retried next run
            if isinstance(config, dict):
                arch = arch_facts(config, tc if isinstance(tc, dict) else None).to_dict()
        else:
            g = loads(gguf) if isinstance(gguf, (str, bytes)) else gguf
            if isinstance(g, dict) and isinstance(g.get("arch"), dict):
                arch = g["arch"]
        updates.append({"id": eid, "arch": _dumps(arch)})
    if updates:
        conn.execute(text("UPDATE engine_facts SET arch = :arch WHERE id = :id"), updates)
    return len(updates)


def _dumps(value) -> str | None:

    return None if value is None else json.dumps(value, ensure_ascii=False)


def compute_llamacpp_pairs(conn, db: str | None, limit: int = MAX_NEW_PAIRS) -> dict:
    """common_speculative_are_compatible for candidate pairs of different GGUF signatures.

    Candidates share a token-prefix bucket (``engines.gguf_buckets``): every passing pair does,
    so the cache holds every passing pair (up to ``limit`` new evaluations per run)."""
    loads = orjson.loads
    # One row per signature (its buckets follow from its tokens), so popular signatures do not multiply.
    sigs = ("(SELECT DISTINCT gguf_signature AS s, gguf_bucket_hi AS hi, gguf_bucket_lo AS lo FROM engine_facts "
            "WHERE gguf_signature IS NOT NULL)")
    bucket_pairs = " UNION ".join(
        f"SELECT a.s AS t, b.s AS d FROM {sigs} a JOIN {sigs} b ON a.{x} = b.{y} AND a.s <> b.s"
        for x, y in (("hi", "hi"), ("hi", "lo"), ("lo", "hi")))
    todo = conn.exec_driver_sql(
        f"SELECT c.t, c.d FROM ({bucket_pairs}) c LEFT JOIN llamacpp_pairs p ON p.target_signature = c.t "
        f"AND p.draft_signature = c.d WHERE p.target_signature IS NULL ORDER BY c.t, c.d LIMIT {int(limit) + 1}").all()
    if not todo:
        return {"candidates": 0, "computed": 0, "compatible": 0, "no_tokens": 0, "more_left": False}

    store = TokenStore(default_root(db))
    memo: dict[str, object] = {}

    def vocab(sig: str):
        if sig not in memo:
            if len(memo) > 64:
                memo.clear()
            row = conn.execute(text("SELECT gguf, gguf_tokens_sha256 FROM engine_facts WHERE gguf_signature = :s "
                                    "LIMIT 1"), {"s": sig}).one()
            facts = loads(row[0]) if isinstance(row[0], (str, bytes)) else row[0]
            try:
                memo[sig] = GGUFVocab.from_dict(facts, tuple(store.get_tokens(row[1])))
            except (KeyError, OSError, ValueError):
                memo[sig] = None
        return memo[sig]

    rows, missing = [], 0
    for t, d in todo[:limit]:
        tv, dv = vocab(t), vocab(d)
        if tv is None or dv is None:
            missing += 1
            continue
        ok, reasons = speculative_compatible(tv, dv)
        rows.append({"t": t, "d": d, "ok": ok, "why": "; ".join(reasons) or None,
                     "n": 0 if ok else max(1, len(reasons))})
    if rows:
        conn.execute(text("INSERT INTO llamacpp_pairs (target_signature, draft_signature, compatible, reason, "
                          "failed_checks) VALUES (:t, :d, :ok, :why, :n)" + SKIP_EXISTING), rows)
    return {"candidates": len(todo), "computed": len(rows), "compatible": sum(r["ok"] for r in rows),
            "no_tokens": missing, "more_left": len(todo) > limit}
