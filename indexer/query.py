"""``indexer query --target X``: ranked drafts from the precomputed classes, in milliseconds.

This is on the interactive path, so it imports nothing heavy: the stdlib ``sqlite3`` module
for SQLite catalogs (SQLAlchemy Core only for other URLs), no ORM, no transformers.
Candidates come from the ``repo_classes (class_id, params)`` index of the target's class.

Ranking (see docs/ranking.md): a draft qualifies when the engine accepts the pair (same
class), it has strictly fewer parameters than the target (unknown parameters are only
listed with ``--all``) and it is not disabled. Qualifying drafts are ordered by: size ratio
inside 1/50..1/5 of the target, same lineage (shared base-model root, same author or same
family), same kind (chat or base), not gated, then downloads.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import engines as registry

ENGINES = tuple(registry.ENGINES)  # the names, re-exported from the registry (the site imports them)
ENGINE_NAMES = registry.ENGINE_NAMES
RATIO_LOW, RATIO_HIGH = 1 / 50, 1 / 5
NOT_GATED = ("", "false", "False", "0", "no")
EXIT_NOT_FOUND = 3
__all__ = ["ENGINES", "ENGINE_NAMES", "Catalog", "Query", "QueryError", "launch", "render", "run_query"]


class QueryError(Exception):
    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.message = message
        self.code = code


def launch(engine: str, target: str, draft: str) -> str:
    """The engine's launch command, from the registry."""
    return registry.ENGINES[engine].launch(target, draft)


# ---------------------------------------------------------------- database access


def _resolve(db: str | None) -> str:
    db = db or os.environ.get("INDEXER_DB") or "data/catalog.db"
    if "://" in db:
        return db
    return f"sqlite:///{Path(db).expanduser().resolve()}"


class Catalog:
    """Named-parameter SQL (``:name``) over sqlite3, or SQLAlchemy Core for other URLs."""

    def __init__(self, db: str | None = None):
        url = _resolve(db)
        self.sa = None
        if url.startswith("sqlite:///"):
            path = url[len("sqlite:///"):]
            if path != ":memory:" and not Path(path).exists():
                raise QueryError(f"catalog {path} does not exist; "
                                 "run `indexer crawl` and `indexer compute` first")
            import sqlite3

            self.conn = sqlite3.connect(path)
            self.conn.execute("PRAGMA busy_timeout=30000")
        else:
            from sqlalchemy import create_engine

            self.sa = create_engine(url)
            self.conn = self.sa.connect()
        try:
            self.all("SELECT 1 FROM repo_classes LIMIT 1")
        except Exception as e:  # noqa: BLE001 - any driver's "no such table"
            raise QueryError(f"catalog {url} is not migrated or not computed ({e}); "
                             "run `indexer db upgrade` and `indexer compute`") from None

    def all(self, sql: str, params: dict | None = None) -> list[tuple]:
        if self.sa is not None:
            from sqlalchemy import text

            return [tuple(r) for r in self.conn.execute(text(sql), params or {})]
        return self.conn.execute(sql, params or {}).fetchall()

    def one(self, sql: str, params: dict | None = None):
        rows = self.all(sql, params)
        return rows[0] if rows else None

    def close(self) -> None:
        self.conn.close()
        if self.sa is not None:
            self.sa.dispose()


def _in(name: str, values: list, params: dict) -> str:
    keys = []
    for i, v in enumerate(values):
        params[f"{name}{i}"] = v
        keys.append(f":{name}{i}")
    return "(" + (", ".join(keys) or "NULL") + ")"


# ---------------------------------------------------------------- words


def fmt_params(n: int | None) -> str:
    if n is None:
        return "?"
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return str(n)


def fmt_ratio(r: float | None) -> str:
    if r is None:
        return "?"
    return f"1/{1 / r:.0f}" if 0 < r < 1 else f"{r:.2f}"


def _gated(g) -> bool:
    return g is not None and str(g) not in NOT_GATED


TARGET_SQL = (
    "SELECT r.id, r.repo_id, r.params, r.downloads, r.author, r.family, r.is_chat, r.gated, r.status, "
    "r.reason, r.vocab_size, r.vocab_size_transformers, r.tokenizer_id, t.vocab_sha256, t.base_vocab_sha256, "
    "t.max_id, t.vocab_len, t.hf_vocab_size FROM repos r LEFT JOIN tokenizers t ON t.id = r.tokenizer_id "
    "WHERE r.repo_id = :rid"
)
TARGET_KEYS = ("pk", "repo_id", "params", "downloads", "author", "family", "is_chat", "gated", "status",
               "reason", "vocab_size", "vocab_size_transformers", "tokenizer_id", "vocab_sha256",
               "base_vocab_sha256", "max_id", "vocab_len", "hf_vocab_size")
RANK_COLS = ("rc.repo_pk, rc.params, rc.downloads, rc.lineage_id, rc.author_id, rc.family_id, rc.is_chat, "
             "rc.gated, rc.class_id")
RANK_KEYS = ("pk", "params", "downloads", "lineage_id", "author_id", "family_id", "is_chat", "is_gated",
             "class_id")
DETAIL_SQL = ("SELECT r.id, r.repo_id, r.author, r.family, r.gated, r.vocab_size, r.vocab_size_transformers, "
              "r.tokenizer_id, r.disabled FROM repos r WHERE r.id IN ")
DETAIL_KEYS = ("pk", "repo_id", "author", "family", "gated", "vocab_size", "vocab_size_transformers",
               "tokenizer_id", "disabled")

class Query:
    def __init__(self, cat: Catalog, target: str, engine: str):
        if engine not in ENGINES:
            raise QueryError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
        self.cat, self.engine, self.entry = cat, engine, registry.ENGINES[engine]
        row = cat.one(TARGET_SQL, {"rid": target})
        if row is None:
            raise QueryError(f"{target} is not in the catalog; add it with `indexer crawl --model {target}`",
                             EXIT_NOT_FOUND)
        self.t = dict(zip(TARGET_KEYS, row, strict=True))
        if self.t["status"] != "ok":
            why = f" ({self.t['reason']})" if self.t["reason"] else ""
            raise QueryError(f"{target} is in the catalog with status {self.t['status']}{why}, so it has no "
                             f"compatibility class; recrawl it with `indexer crawl --model {target}`",
                             EXIT_NOT_FOUND)
        cls = cat.one(
            "SELECT rc.class_id, rc.lineage_id, rc.author_id, rc.family_id, c.label, c.members, c.vocab_size "
            "FROM repo_classes rc JOIN compat_classes c ON c.id = rc.class_id "
            "WHERE rc.engine = :e AND rc.repo_pk = :pk", {"pk": self.t["pk"], "e": engine})
        if cls is None:
            why = self._no_class_reason()
            raise QueryError(f"{target} has no {engine} class ({why})")
        (self.class_id, self.lineage_id, self.author_id, self.family_id, self.label, self.members,
         self.size) = cls
        self.class_ids = [self.class_id]
        self.paired: dict[int, str] = {}
        self.refused_target: str | None = None
        refusing = self.entry.refuses_target_with
        if refusing and self._engine_fact(refusing):
            # The rule refuses every draft for this target (LM Studio: a vision_config target).
            self.refused_target = self.entry.rule(self._fact_side(refusing), self._fact_side(None)).reasons[0]
            self.class_ids = []
        elif self.entry.class_key == ("gguf_sig",):
            # Other GGUF vocabularies that pass common_speculative_are_compatible (llamacpp_pairs).
            for cid, reason in cat.all(
                    "SELECT c.id, p.reason FROM llamacpp_pairs p JOIN compat_classes c ON c.engine = :e "
                    "AND c.class_key = p.draft_signature JOIN compat_classes tc ON tc.id = :cid "
                    "WHERE p.target_signature = tc.class_key AND p.compatible", {"e": engine, "cid": self.class_id}):
                self.class_ids.append(cid)
                self.paired[cid] = reason
        self._roots: dict[int, str] = {}

    def _engine_fact(self, column: str):
        row = self.cat.one(f"SELECT e.{column} FROM repos r JOIN engine_facts e ON e.file_set_id = r.file_set_id "
                           "AND e.config_blob = COALESCE(r.config_blob, '') WHERE r.id = :pk", {"pk": self.t["pk"]})
        return row[0] if row else None

    @staticmethod
    def _fact_side(fact: str | None):
        side = registry.Side("", None, None, None)
        if fact:
            setattr(side, fact, True)
        return side

    def _no_class_reason(self) -> str:
        error = self._engine_fact("text_config_error")
        if error and "text_config_error" in self.entry.facts:
            return f"{error}: {ENGINE_NAMES[self.engine]} refuses it"
        if self.entry.class_key == ("gguf_sig",):
            gguf_error = self._engine_fact("gguf_error")
            if gguf_error:
                return f"it cannot be converted to GGUF: {gguf_error}"
        return "facts missing, or the catalog was changed since the last `indexer compute`; run it"

    # ------------------------------------------------------------ candidate SQL

    def _details(self, rows: list[dict]) -> list[dict]:
        """Join the few ranked rows with their repos facts (names, strings) by primary key."""
        out: dict[int, dict] = {}
        pks = [r["pk"] for r in rows]
        for i in range(0, len(pks), 5000):
            params: dict = {}
            sql = DETAIL_SQL + _in("p", pks[i:i + 5000], params)
            for row in self.cat.all(sql, params):
                out[row[0]] = dict(zip(DETAIL_KEYS, row, strict=True))
        return [{**r, **out[r["pk"]]} for r in rows if r["pk"] in out]

    def _ranked(self, class_ids: list[int], where: str, params: dict, limit: int | None) -> list[dict]:
        """Rank class members from the covering index alone, then fetch the winners' details."""
        if not class_ids:
            return []
        t = self.t
        params.update({"tp": t["params"], "lin": self.lineage_id, "aid": self.author_id, "fid": self.family_id,
                       "chat": t["is_chat"], "pk": t["pk"]})
        sql = (
            f"SELECT {RANK_COLS}, "
            "CASE WHEN rc.params * 50 >= :tp AND rc.params * 5 <= :tp THEN 1 ELSE 0 END AS win, "
            "CASE WHEN rc.lineage_id = :lin OR rc.author_id = :aid OR rc.family_id = :fid "
            "THEN 1 ELSE 0 END AS lin, "
            "CASE WHEN rc.is_chat = :chat THEN 1 ELSE 0 END AS kind "
            f"FROM repo_classes rc WHERE rc.class_id IN {_in('c', class_ids, params)} AND rc.repo_pk <> :pk "
            f"{where} "
            "ORDER BY win DESC, lin DESC, kind DESC, rc.gated, COALESCE(rc.downloads, 0) DESC, rc.repo_pk"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        rows = [dict(zip(RANK_KEYS, row, strict=False)) for row in self.cat.all(sql, params)]
        return self._details(rows)

    def drafts(self, limit: int) -> list[dict]:
        if self.t["params"] is None:
            return []
        rows = self._ranked(self.class_ids, "AND rc.params < :tp AND NOT rc.disabled", {}, limit)
        return [self._entry(r) for r in rows]

    def all_members(self) -> list[dict]:
        params: dict = {"pk": self.t["pk"]}
        sql = (f"SELECT {RANK_COLS} FROM repo_classes rc "
               f"WHERE rc.class_id IN {_in('c', self.class_ids, params)} AND rc.repo_pk <> :pk")
        rows = self._details([dict(zip(RANK_KEYS, row, strict=True)) for row in self.cat.all(sql, params)])
        rows.sort(key=lambda r: r["repo_id"])
        return [self._entry(r, ranked=False) for r in rows]

    def near_misses(self, limit: int) -> list[dict]:
        """Drafts for which this engine's verdict is useless or refused because exactly one fact
        differs (the mapping, or the size), or whose llama.cpp check fails once; each with its fix."""
        t, out = self.t, []
        if t["params"] is None or self.refused_target:
            return out
        base = "AND rc.params < :tp AND NOT rc.disabled"
        key = self.entry.class_key
        if key == ("gguf_sig",):
            fails = self.cat.all(
                "SELECT c.id, p.reason FROM llamacpp_pairs p JOIN compat_classes c ON c.engine = :e "
                "AND c.class_key = p.draft_signature JOIN compat_classes tc ON tc.id = :cid "
                "WHERE p.target_signature = tc.class_key AND NOT p.compatible AND p.failed_checks = 1",
                {"e": self.engine, "cid": self.class_id})
            for cid, reason in fails:
                for r in self._ranked([cid], base, {}, limit):
                    out.append(self._miss(r, "no_speculation", "token list",
                                          f"{reason}: llama-server serves without a draft", self._tli_fix(r)))
        elif self.size is not None:
            # useless: same size, another get_vocab() mapping (the engine starts, drafts are rejected).
            params = {"e": self.engine, "vs": self.size, "tid": t["tokenizer_id"]}
            others = dict(self.cat.all(
                "SELECT c.id, k.base_vocab_sha256 FROM compat_classes c JOIN tokenizers k ON k.id = c.tokenizer_id "
                "WHERE c.engine = :e AND c.vocab_size = :vs AND c.tokenizer_id <> :tid", params))
            for r in self._ranked(list(others), base, {}, limit):
                if others[r["class_id"]] == t["base_vocab_sha256"]:
                    reason = f"same size {self.size} and base vocabulary, but the added tokens differ"
                    fix = ("copy the target's tokenizer files into the draft directory (every target id < the "
                           "draft's vocab_size)" if t["max_id"] is not None and t["max_id"] < self.size else
                           "some target ids exceed the draft's vocab_size: resize the draft's embeddings or use TLI")
                else:
                    reason = f"same size {self.size}, but the get_vocab() mappings differ"
                    fix = self._tli_fix(r)
                out.append(self._miss(r, "useless", "mapping", reason, fix))
            # refused: the same mapping at another size (the engine raises at launch).
            sizes = dict(self.cat.all(
                "SELECT id, vocab_size FROM compat_classes WHERE engine = :e AND tokenizer_id = :tid "
                "AND vocab_size <> :vs", params))
            for r in self._ranked(list(sizes), base, {}, limit):
                ds = sizes[r["class_id"]]
                fix = "use TLI (vLLM `use_heterogeneous_vocab`, transformers tokenizer= and assistant_tokenizer=)"
                if ds < self.size:
                    fix += f", or pad the draft's embedding/lm_head to {self.size} rows"
                out.append(self._miss(r, "refused", "vocab_size", "same get_vocab() mapping, but the size differs: "
                                      f"target {self.size}, draft {ds}", fix))
        out.sort(key=lambda m: m["_rank"])
        for m in out:
            m.pop("_rank")
        return out[:limit]

    def _tli_fix(self, r: dict) -> str | None:
        row = self.cat.one("SELECT tli_intersection, tli_ratio FROM pair_verdicts WHERE target_tokenizer_id = :t "
                           "AND draft_tokenizer_id = :d", {"t": self.t["tokenizer_id"], "d": r["tokenizer_id"]})
        if row is None or row[0] is None:
            return "different vocabularies: use TLI (vLLM `use_heterogeneous_vocab`, greedy draft)"
        return f"use TLI (vLLM `use_heterogeneous_vocab`, greedy draft): token intersection {row[0]} ({row[1]:.1%})"

    # ------------------------------------------------------------ entries

    def _ratio(self, params) -> float | None:
        tp = self.t["params"]
        if params is None or not tp:
            return None
        return round(params / tp, 4)

    def _root_name(self, lineage_id: int) -> str:
        if lineage_id not in self._roots:
            row = None
            if lineage_id > 0:
                row = self.cat.one("SELECT repo_id FROM repos WHERE id = :i", {"i": lineage_id})
            self._roots[lineage_id] = row[0] if row else "a base model outside the catalog"
        return self._roots[lineage_id]

    def _accept_reason(self, r: dict) -> str:
        name = ENGINE_NAMES[self.engine]
        if r["class_id"] in self.paired:
            return f"{name} works: {self.paired[r['class_id']] or 'the GGUF vocabularies pass its check'}"
        return f"{name} works: {self.label} on both"

    def _reasons(self, r: dict, ranked: bool = True) -> list[str]:
        t = self.t
        reasons = [self._accept_reason(r)]
        ratio = self._ratio(r["params"])
        if ratio is None:
            reasons.append("parameter count unknown")
        elif ranked or ratio < 1:
            where = "inside" if RATIO_LOW <= ratio <= RATIO_HIGH else "outside"
            reasons.append(f"{fmt_params(r['params'])} parameters, {fmt_ratio(ratio)} of the target's "
                           f"{fmt_params(t['params'])} ({where} the preferred 1/50..1/5)")
        else:
            reasons.append(f"{fmt_params(r['params'])} parameters, not smaller than the target")
        if self.lineage_id is not None and r["lineage_id"] == self.lineage_id:
            reasons.append(f"same lineage: both derive from {self._root_name(r['lineage_id'])}")
        elif t["author"] and r["author"] == t["author"]:
            reasons.append(f"same author: {r['author']}")
        elif t["family"] and r["family"] == t["family"]:
            reasons.append(f"same family: {r['family']}")
        if t["is_chat"] is not None and r["is_chat"] is not None:
            kind = "chat" if r["is_chat"] else "base"
            reasons.append(f"same kind ({kind})" if bool(r["is_chat"]) == bool(t["is_chat"])
                           else f"different kind ({kind} draft)")
        if _gated(r["gated"]):
            reasons.append(f"gated ({r['gated']}): request access first")
        if r.get("disabled"):
            reasons.append("disabled on the Hub")
        reasons.append(f"{r['downloads'] if r['downloads'] is not None else 'unknown'} downloads")
        return reasons

    def _entry(self, r: dict, ranked: bool = True) -> dict:
        return {
            "repo_id": r["repo_id"],
            "params": r["params"],
            "ratio": self._ratio(r["params"]),
            "downloads": r["downloads"],
            "reasons": self._reasons(r, ranked),
            "launch": launch(self.engine, self.t["repo_id"], r["repo_id"]),
        }

    def _miss(self, r: dict, outcome: str, check: str, reason: str, fix: str | None) -> dict:
        e = self._entry(r)
        e.pop("launch")
        e["reasons"] = e["reasons"][1:]
        e.update({"outcome": outcome, "failed_check": check, "reason": reason, "fix": fix})
        ratio = e["ratio"]
        e["_rank"] = (not (ratio is not None and RATIO_LOW <= ratio <= RATIO_HIGH), -(r["downloads"] or 0))
        return e

    def target_info(self) -> dict:
        t = self.t
        return {
            "repo_id": t["repo_id"],
            "params": t["params"],
            "vocab_size": t["vocab_size"],
            "vocab_size_transformers": t["vocab_size_transformers"],
            "vocab_sha256": t["vocab_sha256"],
            "hf_vocab_size": t["hf_vocab_size"],
            "class": self.label,
            "class_members": self.members,
        }


def run_query(target: str, *, engine: str = "sglang", limit: int = 10, near_misses: bool = False,
              all_members: bool = False, db: str | None = None) -> dict:
    """The answer as the ``--json`` shape: target, engine, drafts, near_misses."""
    cat = Catalog(db)
    try:
        q = Query(cat, target, engine)
        drafts = q.all_members() if all_members else q.drafts(limit)
        return {
            "target": q.target_info(),
            "engine": engine,
            "drafts": drafts,
            "near_misses": q.near_misses(limit) if near_misses else [],
            "refused": q.refused_target,
        }
    finally:
        cat.close()


def render(result: dict, *, all_members: bool = False) -> str:
    """The readable table and the launch flags of the best draft."""
    t, engine = result["target"], result["engine"]
    lines = [f"target: {t['repo_id']} ({fmt_params(t['params'])} parameters)",
             f"engine: {ENGINE_NAMES[engine]}; class: {t['class']} ({t['class_members']} repos)"]
    drafts = result["drafts"]
    if result.get("refused"):
        lines.append(f"no drafts: {result['refused']}")
    elif not drafts:
        if t["params"] is None and not all_members:
            lines.append("no ranked drafts: the target's parameter count is unknown "
                         "(use --all to list the class)")
        else:
            lines.append("no drafts found" + ("" if all_members else " (try --all or --near-misses)"))
    else:
        width = min(60, max(len(d["repo_id"]) for d in drafts))
        lines.append(f"{'repo':{width}}  {'params':>7}  {'ratio':>6}  {'downloads':>10}  why")
        for d in drafts:
            why = "; ".join(d["reasons"][1:])
            dl = d["downloads"] if d["downloads"] is not None else "?"
            lines.append(f"{d['repo_id']:{width}}  {fmt_params(d['params']):>7}  {fmt_ratio(d['ratio']):>6}  "
                         f"{dl:>10}  {why}")
        lines.append(f"accepted because: {drafts[0]['reasons'][0]}")
        if not all_members:
            lines.append(f"launch with the best draft:\n  {drafts[0]['launch']}")
    if result["near_misses"]:
        lines.append("near misses (one check fails):")
        for m in result["near_misses"]:
            size = f"{fmt_params(m['params'])}, {fmt_ratio(m['ratio'])}"
            said = registry.ENGINES[engine].words.get(m["outcome"], m["outcome"])
            lines.append(f"  {m['repo_id']} ({size}) {m['outcome']} ({said}): {m['reason']}")
            if m["fix"]:
                lines.append(f"    fix: {m['fix']}")
    return "\n".join(lines)
