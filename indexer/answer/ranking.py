"""Ranked drafts from the precomputed classes (``indexer query --target X``), in milliseconds.

On the interactive path, so it imports nothing heavy: it reads through one
:class:`~indexer.catalog.reader.Reader` (stdlib ``sqlite3`` for SQLite catalogs), no ORM, no transformers.
Candidates come from the ``repo_classes (class_id, params)`` index of the target's class.

Ranking (see docs/ranking.md): a draft qualifies when the engine accepts the pair (same
class), it has strictly fewer parameters than the target (unknown parameters are only
listed with ``--all``) and it is not disabled. Qualifying drafts are ordered by: size ratio
inside 1/50..1/5 of the target, same lineage (shared base-model root, same author or same
family), same kind (chat or base), not gated, then downloads.
"""

from __future__ import annotations

import json
import re

from .. import engines as registry
from ..catalog.measurements import rows
from ..catalog.reader import NOT_GATED, Reader, int_list, json_value
from ..engines.archrules import SEVERITY
from ..engines.rules import fix_for
from ..engines.setup import plain, text
from ..errors import QueryError
from ..gguf import NOT_MODELLED
from ..speed.facts import quant_from_facts, shape_from_facts
from ..speed.model import Shape
from ..vocab.agreement import by_added, special_ids, summary
from ..vocab.params import estimate_from_name
from .archrank import ArchJudge
from .render import fmt_ratio, fmt_size
from .setup import choose, copies, copies_among
from .speedup import (
    Options,
    agreement_share,
    catalog_facts,
    estimate,
    gguf_facts,
    gguf_quant,
    measured_alpha,
    size_not_a_draft,
    with_launch,
)
from .target import Target, hub_gguf, resolve_target

ENGINES = tuple(registry.ENGINES)
ENGINE_NAMES = registry.ENGINE_NAMES
RATIO_LOW, RATIO_HIGH = 1 / 50, 1 / 5


def launch(engine: str, target: str, draft: str, draft_tokens: int | None = None) -> str:
    """The engine's launch command for two sides known by name (as stored; ``draft_tokens``: per round), as one
    shell line. An answer's commands come from its setups (answer/setup.py), estimated and printed alike."""

    entry = registry.ENGINES[engine]
    return text(entry.launch(plain(engine, entry.release, target, draft, draft_tokens)))


# The suffixes quants and copies add to a name (-GGUF, -AWQ, -4bit, -Q4_K_M, ...).
COPY_SUFFIXES = re.compile(r"([-_.](gguf|awq|gptq|exl2|mlx|fp8|int4|int8|bnb|\d+bit|q\d\w*|f16|bf16))+$")


def _stem(repo_id: str) -> str:
    """A repo's name without its org and the suffixes quants and copies add (-GGUF, -AWQ, -4bit, ...)."""
    return COPY_SUFFIXES.sub("", repo_id.split("/")[-1].lower())


def _download_key(r: dict) -> tuple:
    """DOWNLOAD_ORDER's key of a rank row, in Python."""
    return r["is_gated"], -(r["downloads"] or 0), r["pk"]


def _gated(g) -> bool:
    return g is not None and str(g) not in NOT_GATED


WINDOW = "rc.params * 50 >= :tp AND rc.params * 5 <= :tp"  # the size inside RATIO_LOW..RATIO_HIGH of the target's
# The order inside one (win, lin, kind) rank, as ix_repo_classes_class_rank holds it (migration 0010).
DOWNLOAD_ORDER = "rc.gated, COALESCE(rc.downloads, 0) DESC, rc.repo_pk"
RANK_INDEX = "ix_repo_classes_class_rank"
HEAD_ROWS = 20  # _head_rows reads this many rows of a class per row it ranks (a third are in the window)
HEAD_CLASSES = 8  # more classes than this (GGUF pairs): ranked from the (class_id, params) range
PROBE_ROWS = (4, 20)  # members has_candidates reads unranked, then more, before it ranks a class whose draft
# rows may refuse them
RANK_COLS = ("rc.repo_pk, rc.params, rc.downloads, rc.lineage_id, rc.author_id, rc.family_id, rc.is_chat, "
             "rc.gated, rc.class_id")
# The ranked columns: RANK_COLS and the three computed sort keys (in the size window, same lineage, same kind).
RANK_SELECT = (f"{RANK_COLS}, CASE WHEN {WINDOW} THEN 1 ELSE 0 END AS win, "
               "CASE WHEN rc.lineage_id = :lin OR rc.author_id = :aid OR rc.family_id = :fid THEN 1 ELSE 0 END AS lin, "
               "CASE WHEN rc.is_chat = :chat THEN 1 ELSE 0 END AS kind")
RANK_KEYS = ("pk", "params", "downloads", "lineage_id", "author_id", "family_id", "is_chat", "is_gated",
             "class_id", "win", "lin", "kind")  # the last three: _ranked's computed sort columns
FACTS_JOIN = ("LEFT JOIN engine_facts e ON e.file_set_id = r.file_set_id "
              "AND e.config_blob = COALESCE(r.config_blob, '')")  # a repo's stored facts (its arch, its GGUF)
DETAIL_SQL = ("SELECT r.id, r.repo_id, r.author, r.family, r.gated, r.vocab_size, r.vocab_size_transformers, "
              "r.tokenizer_id, r.disabled, r.params, r.params_estimate_source, r.params_active_estimate, e.arch, "
              f"r.base_models, e.gguf FROM repos r {FACTS_JOIN} WHERE r.id IN ")
DETAIL_KEYS = ("pk", "repo_id", "author", "family", "gated", "vocab_size", "vocab_size_transformers",
               "tokenizer_id", "disabled", "hub_params", "estimate_source", "params_active", "arch", "base_models",
               "gguf")
POOL = 30  # drafts ranked by size and lineage that the speed model then orders (a page is at most this many)


def _at(engine: str, release: str | None):
    """The engine at ``release``. The catalog's classes are computed at the newest release: another release is
    answered from them only while its class key is the same (its architecture rows are judged here)."""
    newest = registry.ENGINES[engine]
    try:
        entry = newest.at(release)
    except ValueError as e:
        raise QueryError(str(e)) from None
    if entry.class_key != newest.class_key:
        raise QueryError(f"{engine} {release} groups vocabularies unlike {newest.release}, at which the catalog's "
                         f"classes are computed: ask `indexer check` for a pair at {release}")
    return entry


class Query:
    """One target on one engine: its class, the classes that work with it, and their ranked members."""

    def __init__(self, cat: Reader, target: str, engine: str, resolved: Target | None = None,
                 release: str | None = None, speed=None, probe_only: bool = False):
        """``probe_only``: the query only answers :meth:`has_candidates` (the summary line asks every engine),
        which reads the classes that agree with the target's only when the target's own class has no draft."""
        if engine not in ENGINES:
            raise QueryError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
        self.cat, self.engine, self.entry = cat, engine, _at(engine, release)
        self.target = resolved or resolve_target(cat, target)
        self.t = self.target.facts
        # The engine whose classes answer: the engine's own, or for a GGUF target on an engine that runs GGUF
        # files on llama.cpp (LM Studio) llama.cpp's, with GGUF repos alone as drafts (``runs_as`` says so).
        self.classes_of, self.runs_as, self.draft_where = engine, None, ""
        if self.target.gguf_file and self.entry.gguf_engine:
            self.classes_of = self.entry.gguf_engine
            self.runs_as = f"a GGUF target: its {self.classes_of} engine, GGUF drafts only"
            self.draft_where = ("AND EXISTS (SELECT 1 FROM repos gr WHERE gr.id = rc.repo_pk "
                                "AND gr.tokenizer_id IS NULL) ")
        self.rules = registry.ENGINES[self.classes_of] if self.classes_of != engine else self.entry
        gguf_refusal = self.entry.refuses_drafts or self._gguf_refusal()  # Ollama: no draft model at all
        cls: tuple | None = None if gguf_refusal else cat.one(
            "SELECT rc.class_id, rc.lineage_id, rc.author_id, rc.family_id, c.label, c.members, c.vocab_size "
            "FROM repo_classes rc JOIN compat_classes c ON c.id = rc.class_id "
            "WHERE rc.engine = :e AND rc.repo_pk = :pk", {"pk": self.target.class_pk, "e": self.classes_of})
        self.refused_target: str | None = None
        self.unknown_target = False  # refused_target is a gap in the indexer's model, not the engine's refusal
        if cls is None:
            # No class: the engine refuses the target itself (an answer, with no drafts), or facts are missing.
            refusal = gguf_refusal or self._refusal()
            if refusal is None:
                raise QueryError(f"{self.t['repo_id']} has no {engine} class (facts missing, or the catalog was "
                                 "changed since the last `indexer compute`; run it)")
            cls = (None, None, None, None, f"none: {refusal}", 0, None)
            self.refused_target = refusal
        (self.class_id, self.lineage_id, self.author_id, self.family_id, self.label, self.members,
         self.size) = cls
        if self.target.class_pk != self.t["pk"]:
            # A borrowed tokenizer: the lineage stays the base's, author and family are the target's own.
            self.author_id = self._dense_id("author", self.t["author"])
            self.family_id = self._dense_id("family", self.t["family"])
            if self.t["pk"] == -1:
                self.lineage_id = None
        self.class_ids = [self.class_id] if self.class_id is not None else []
        self.sizes: dict[int, int] = {self.class_id: self.members} if self.class_id is not None else {}  # members
        self.paired: dict[int, str] = {}
        refusing = self.entry.refuses_target_with
        # The engine's architecture rows (engines/archrules.py): the target's once, the draft's per draft.
        self.arch = ArchJudge(cat, self.entry, self.target.class_pk, bool(self.target.gguf_file), self.target.memo)
        if self.refused_target is None and refusing and self._engine_fact(refusing):
            # The rule refuses every draft for this target (LM Studio: a vision_config target).
            self.refused_target = self.entry.rule(self._fact_side(refusing), self._fact_side(None)).reasons[0]
            self.class_ids = []
        elif self.refused_target is None and self.arch.refusal():
            self.refused_target = self.arch.refusal()  # a stateful target on transformers, mlx-lm, ...
            self.class_ids = []
        elif self.class_id is not None and self.rules.gguf_classes:
            # Other GGUF vocabularies that pass common_speculative_are_compatible (llamacpp_pairs).
            for cid, reason, members in cat.all(
                    "SELECT c.id, p.reason, c.members FROM llamacpp_pairs p JOIN compat_classes c ON c.engine = :e "
                    "AND c.class_key = p.draft_signature JOIN compat_classes tc ON tc.id = :cid "
                    "WHERE p.target_signature = tc.class_key AND p.compatible",
                    {"e": self.classes_of, "cid": self.class_id}):
                self.class_ids.append(cid)
                self.paired[cid] = reason
                self.sizes[cid] = members
        # Same-size classes whose tokenizer agrees with the target's (compute's agreement step): their drafts
        # work (ranked with the class) or are degraded (listed after), like `check` says.
        self.grades: dict[int, dict] = {}
        self.degraded_ids: list[int] = []
        self._agreement_read = False
        if not probe_only:
            self._read_agreement()
        self._roots: dict[int, str] = {}
        self._added: dict[int, tuple] = {}
        self.speed = speed  # speedup.Options, or None for the reference devices
        self._target_speed: dict | None = None
        self._measurements: list[dict] | None = None  # the target's measurements (indexer measure), read once
        self._target_stem: str | None = None  # _stem of the target, for _copy_of_target

    def _agreeing_members(self) -> int:
        """Repos outside the target's class whose drafts work with it anyway: other GGUF vocabularies that pass
        llama.cpp's check, vocabularies that agree (the header says so, else its count reads as a contradiction
        of the drafts listed)."""
        others = [c for c in self.class_ids + self.degraded_ids if c != self.class_id]
        if not others:
            return 0
        row = self.cat.one(f"SELECT SUM(members) FROM compat_classes WHERE id IN {int_list(others)}")
        return int(row[0] or 0) if row else 0

    def _read_agreement(self) -> None:
        """Add the agreeing classes to the query's (once)."""
        if not self._agreement_read and self.class_ids and not self.rules.gguf_classes and self.size is not None:
            self._agreeing_classes()
        self._agreement_read = True

    def _agreeing_classes(self) -> None:
        t = self.t
        rows = self.cat.all(
            "SELECT c.id, k.base_vocab_sha256, a.grade, tk.agrees_by_base, c.members FROM compat_classes c "
            "JOIN tokenizers k ON k.id = c.tokenizer_id JOIN tokenizers tk ON tk.id = :tid "
            "LEFT JOIN tokenizer_agreement a ON a.target_tokenizer_id = :tid AND a.draft_tokenizer_id = c.tokenizer_id "
            "WHERE c.engine = :e AND c.vocab_size = :vs AND c.tokenizer_id <> :tid ORDER BY c.id",
            {"e": self.engine, "vs": self.size, "tid": t["tokenizer_id"]})
        for cid, base, grade, clean, members in rows:
            self.sizes[cid] = members
            if grade is None and clean and base == t["base_vocab_sha256"]:
                grade = registry.WORKS  # every same-base draft agrees >= WORKS_AT with this target
            if grade in (registry.WORKS, registry.DEGRADED):
                self.grades[cid] = {"grade": grade, "measured": not clean or base != t["base_vocab_sha256"]}
                (self.class_ids if grade == registry.WORKS else self.degraded_ids).append(cid)

    def _tokenizer_facts(self, tid: int) -> tuple:
        """(added tokens, hf_vocab_size, vocab_len, eos, bos, pad ids, text tokens, counts on added ids)."""
        if tid not in self._added:
            row = self.cat.one("SELECT added_tokens, hf_vocab_size, vocab_len, eos_token_id, bos_token_id, "
                               "pad_token_id, text_tokens, added_text_counts FROM tokenizers WHERE id = :t", {"t": tid})
            row = list(row) if row else [None] * 8
            for k in (0, 7):
                row[k] = json.loads(row[k]) if isinstance(row[k], (str, bytes)) else row[k]
            self._added[tid] = (row[0] or [], *row[1:])
        return self._added[tid]

    def pair_agreement(self, r: dict) -> dict | None:
        """The ``agreement`` object for a draft of an agreeing class (None: identical mapping): measured by
        compute when it had to, else from the added tokens of two tokenizers with one base vocabulary and
        the target's text counts on its added ids (catalog columns: the site needs no token store)."""
        if r["class_id"] not in self.grades:
            return None

        tid = self.t["tokenizer_id"]
        t_added, t_hf, t_len, eos, bos, pad, total, on_added = self._tokenizer_facts(tid)
        d_added, d_hf = self._tokenizer_facts(r["tokenizer_id"])[:2]
        counts = None
        if total:  # the base ids' share as one entry: only added ids can differ between same-base tokenizers
            counts = {int(i): n for i, n in (on_added or {}).items()}
            counts[-1] = total - sum(counts.values())
        specials = special_ids({"added_tokens": t_added, "eos_token_id": eos, "bos_token_id": bos,
                                "pad_token_id": pad})
        a = by_added(t_added, d_added, t_base=t_hf, d_base=d_hf, ids_target=t_len or 0, counts=counts,
                     specials=specials)
        if self.grades[r["class_id"]]["measured"]:
            row = self.cat.one("SELECT grade, basis, text_agreement, ids_agreement, differing_ids FROM "
                               "tokenizer_agreement WHERE target_tokenizer_id = :t AND draft_tokenizer_id = :d",
                               {"t": tid, "d": r["tokenizer_id"]})
            if row is not None:
                a.update({"class": row[0], "basis": row[1], "text_agreement": row[2], "ids_agreement": row[3],
                          "differing_ids": row[4]})
        a["class"] = self.grades[r["class_id"]]["grade"]
        return a

    def _gguf_refusal(self) -> str | None:
        """A GGUF file target: engines that load no GGUF say so (llama.cpp answers from the file's facts)."""
        return self.entry.refuses_gguf_target() if self.target.gguf_file else None

    def _dense_id(self, column: str, value: str | None) -> int | None:
        """compute's number for an author or family string (any repo that has it carries it)."""
        if value is None:
            return None
        row = self.cat.one(f"SELECT rc.{column}_id FROM repos r JOIN repo_classes rc ON rc.repo_pk = r.id "
                           f"WHERE r.{column} = :v LIMIT 1", {"v": value})
        return row[0] if row else None

    def _engine_fact(self, column: str):
        row = self.cat.one(f"SELECT e.{column} FROM repos r JOIN engine_facts e ON e.file_set_id = r.file_set_id "
                           "AND e.config_blob = COALESCE(r.config_blob, '') WHERE r.id = :pk",
                           {"pk": self.target.class_pk})
        return row[0] if row else None

    @staticmethod
    def _fact_side(fact: str | None):
        side = registry.Side("", None, None, None)
        if fact:
            setattr(side, fact, True)
        return side

    def _refusal(self) -> str | None:
        """Why the engine refuses this target whatever the draft, when it does (else facts are missing)."""
        error = self._engine_fact("text_config_error")
        if error and "text_config_error" in self.entry.facts:
            return f"{error}: {ENGINE_NAMES[self.engine]} refuses it"
        if self.rules.gguf_classes:
            gguf_error = self._engine_fact("gguf_error")
            if gguf_error and self.target.gguf_file:  # read facts: libllama's own words
                return f"the target's GGUF ({self.target.gguf_file}): {gguf_error}"
            if gguf_error and gguf_error.startswith(NOT_MODELLED):  # our gap: the answer is unknown, not "none"
                self.unknown_target = True
                return (f"the target's GGUF vocabulary is unknown: {gguf_error[len(NOT_MODELLED):]}; llama.cpp may "
                        "well convert it: this is not a refusal")
            if gguf_error:
                return f"the target cannot be converted to GGUF: {gguf_error}"
        return None

    # ------------------------------------------------------------ candidate SQL

    def _details(self, rows: list[dict]) -> list[dict]:
        """Join the few ranked rows with their repos facts (names, strings) by primary key."""
        out: dict[int, dict] = {}
        pks = [r["pk"] for r in rows]
        for i in range(0, len(pks), 5000):
            for row in self.cat.all(DETAIL_SQL + int_list(pks[i:i + 5000])):
                out[row[0]] = dict(zip(DETAIL_KEYS, row, strict=True))
        return [{**r, **out[r["pk"]]} for r in rows if r["pk"] in out]

    def _ranked(self, class_ids: list[int], where: str, params: dict, limit: int | None, offset: int = 0) -> list[dict]:
        """Rank class members from the covering index alone, then fetch the winners' details."""
        if not class_ids:
            return []
        t = self.t
        params.update(self.rank_params())
        if limit is None or t["params"] is None or offset:  # a later page (archrank.take): one plain query
            return self._details(self._rank_rows(class_ids, where, params, limit, offset))
        # Members inside the preferred ratio sort first: when they fill the page (a big class), the rest of the
        # class is never read. Each half is ranked from the head of each class in download order when that
        # provably holds the page (_head_rows), else from the index range on (class_id, params).
        inside = f"{where} AND rc.params BETWEEN :lo AND :hi AND {WINDOW}"
        rows = self._head_rows(class_ids, inside, params, limit)
        if rows is None:
            rows = self._rank_rows(class_ids, inside, params, limit)
        if len(rows) < limit:
            outside = f"{where} AND (CASE WHEN {WINDOW} THEN 1 ELSE 0 END) = 0"
            more = self._head_rows(class_ids, outside, params, limit - len(rows))
            rows += more if more is not None else self._rank_rows(class_ids, outside, params, limit - len(rows))
        return self._details(rows)

    def rank_params(self) -> dict:
        """The parameters of the ranking SQL: the target's size (and its window), lineage, author, family, kind."""
        tp = self.t["params"]
        return {"tp": tp, "tp3": tp * 3 if tp is not None else None, "lo": tp // 50 if tp is not None else None,
                "hi": tp // 5 + 1 if tp is not None else None, "lin": self.lineage_id, "aid": self.author_id,
                "fid": self.family_id, "chat": self.t["is_chat"], "pk": self.target.exclude_pk}

    def _rank_rows(self, class_ids: list[int], where: str, params: dict, limit: int | None,
                   offset: int = 0) -> list[dict]:
        """Ranked rows of ``class_ids`` passing ``where``."""
        sql = (f"SELECT {RANK_SELECT} FROM repo_classes rc WHERE rc.class_id IN {int_list(class_ids)} "
               f"AND rc.repo_pk <> :pk {where} ORDER BY win DESC, lin DESC, kind DESC, {DOWNLOAD_ORDER}")
        if limit is not None:
            sql += f" LIMIT {int(limit)}" + (f" OFFSET {int(offset)}" if offset else "")
        return [dict(zip(RANK_KEYS, row, strict=False)) for row in self.cat.all(sql, params)]

    def _head_rows(self, class_ids: list[int], where: str, params: dict, limit: int) -> list[dict] | None:
        """The first ``limit`` ranked rows passing ``where`` (which fixes ``win``), read from the head of each class
        in download order (ix_repo_classes_class_rank), a row at a time, up to ``HEAD_ROWS`` x ``limit`` rows a
        class; None when what was read does not provably hold them, then the caller ranks the range.

        Exact because the rank orders by (win, lin, kind) first, then in the index's order. A class stops being read
        once ``limit`` rows with the best lin and kind any row can have are taken: every later row of it comes after
        them. A class cut at the cap can still rank a later row before the page's last row, unless that last row
        has the best lin and kind and comes before the cut. Each row read is a row looked up in the table, the cost
        of a query at 1,000,000 repos: most pages are held by a few dozen rows, not by the cap."""
        head = HEAD_ROWS * limit
        if len(class_ids) > HEAD_CLASSES or all(self.sizes.get(c, head + 1) <= head for c in class_ids):
            return None  # many classes, or small ones: the range query reads them at once
        if not self.cat.has_index(RANK_INDEX):
            return None  # a catalog made before migration 0010 (`indexer db upgrade` adds the index)
        best = (int(any(params[k] is not None for k in ("lin", "aid", "fid"))), int(params["chat"] is not None))
        sql = (f"SELECT {RANK_SELECT}, CASE WHEN rc.repo_pk <> :pk {where} THEN 1 ELSE 0 END FROM repo_classes rc "
               f"WHERE rc.class_id = :hc ORDER BY {DOWNLOAD_ORDER} LIMIT {head}")
        rows: list[dict] = []
        cuts: list[tuple] = []  # the download key of the last row read of each class cut at the cap
        for cid in class_ids:
            params["hc"] = cid
            read = taken_best = 0
            row = None
            for row in self.cat.stream(sql, params):
                read += 1
                if not row[-1]:
                    continue
                rows.append(dict(zip(RANK_KEYS, row, strict=False)))
                taken_best += (rows[-1]["lin"], rows[-1]["kind"]) == best
                if taken_best == limit:
                    break
            else:
                if read == head and self.sizes.get(cid, head + 1) > head:
                    assert row is not None  # read == head > 0 rows
                    cuts.append(_download_key(dict(zip(RANK_KEYS, row, strict=False))))
        rows.sort(key=lambda r: (-r["win"], -r["lin"], -r["kind"], *_download_key(r)))
        rows = rows[:limit]
        if not cuts:
            return rows  # every class was read to its end or to a full page of its best rows
        if len(rows) < limit or (rows[-1]["lin"], rows[-1]["kind"]) != best:
            return None
        return rows if all(_download_key(rows[-1]) < cut for cut in cuts) else None

    def _take(self, class_ids: list[int], where: str, need: int) -> tuple[list[dict], list[dict]]:
        """Up to ``need`` ranked members no architecture row refuses, and the demoted ones apart (ranked after)."""
        where = self.draft_where + where
        if not self.arch.per_draft:
            return self._ranked(class_ids, where, {}, need), []
        return self.arch.take(lambda n, offset: self._ranked(class_ids, where, {}, n, offset), need)

    def drafts(self, limit: int) -> list[dict]:
        """Smaller drafts ranked on their size (the Hub's count, else compute's estimate from the config
        or the name), then the drafts of unknown size, marked "size unknown"."""
        if self.t["params"] is None:  # nothing to compare with: every member, sized ones first
            rows, later = self._take(self.class_ids, "AND NOT rc.disabled", limit)
            rows.sort(key=lambda r: r["params"] is None)
            more, more_later = self._take(self.degraded_ids, "AND NOT rc.disabled", limit - len(rows)) \
                if len(rows) < limit else ([], [])
            more.sort(key=lambda r: r["params"] is None)
            return self._ordered([*rows, *more, *later, *more_later], limit)
        rows, later = [], []
        pool = max(limit, POOL)
        for ids in (self.class_ids, self.degraded_ids):  # degraded drafts come after every working one
            # under 3/4 of the target's size (COPY_RATIO): a repo of its size (its base, a quant) is no draft
            # (:tp3 is 3 x the target's size, computed here: PostgreSQL multiplies a bound int4 in int4)
            for where in ("AND rc.params * 4 < :tp3 AND NOT rc.disabled",
                          "AND rc.params IS NULL AND NOT rc.disabled"):
                if len(rows) < pool:
                    got, demoted = self._take(ids, where, pool - len(rows))
                    rows += got
                    later += demoted
        rows = [r for r in rows if not self._copy_of_target(r)]
        later = [r for r in later if not self._copy_of_target(r)]
        return self._ordered([*rows, *later], limit)

    def _ordered(self, rows: list[dict], limit: int) -> list[dict]:
        """Entries by outcome (works, degraded, ..., wrong_output), demoted ones after the others of theirs, then
        by the expected speed-up on the chosen hardware: a draft expected to be slower than none comes after every
        draft expected to pay, marked; the size-and-lineage order (the SQL's) breaks ties."""
        entries = [self._entry(r) for r in rows]
        self._read_copies(rows)
        for e, r in zip(entries, rows):
            e["speedup"] = self._speedup(r, e)
            self._launch(e, r)
        order = {id(e): i for i, e in enumerate(entries)}

        def key(e):
            s = (e.get("speedup") or {}).get("estimate")
            return (SEVERITY.index(e["outcome"]), e["demoted"], s is not None and s < 1.0, -(s or 0.0), order[id(e)])

        entries.sort(key=key)
        return entries[:limit]

    # ------------------------------------------------------------ the expected speed-up (answer/speedup.py)

    def _copy_of_target(self, r: dict) -> str | None:
        """Why a class member is the target itself in another form (a quant, a copy, its size), else None."""
        t = self.t

        size = size_not_a_draft(t["params"], r.get("params"))
        if size:
            return size
        if self._target_stem is None:
            self._target_stem = _stem(t["repo_id"])
        stem = self._target_stem
        if stem and _stem(r["repo_id"]).startswith(stem):
            return "a copy or quant of the target"
        return None

    def _speed_facts(self) -> dict:
        """The target's speed facts, with where it can come from: a local GGUF file or directory as it is, a
        catalog repo or one of its copies (answer/setup.py) where the engine would load a copy or convert."""
        if self._target_speed is None:

            if self.target.gguf_file and self.t.get("pk", -1) == -1:  # a local file (a Hub one is REPO:QUANT)
                from ..gguf.file import read_gguf

                try:
                    file_type = read_gguf(self.target.gguf_file).file_type
                except Exception:  # noqa: BLE001 - resolve_target read it already; unreadable now: no type
                    file_type = None
                facts = gguf_facts(self.target.gguf_file, file_type)
                self._target_speed = {**facts, "family": self.t.get("family"), "author": self.t.get("author")}
                return self._target_speed
            local = self.t.get("pk", -1) == -1
            facts = catalog_facts(self.cat, self.t["repo_id"]) if not local else {}
            if not facts.get("shape") and self.t["params"]:

                facts = {"shape": Shape(params=int(self.t["params"]), active=self.t.get("params_active")),
                         "quant": facts.get("quant"), "bases": [], "kind": facts.get("kind"), "tag": facts.get("tag")}
            facts.update({"family": self.t.get("family"), "author": self.t.get("author"), "repo_id": self.t["repo_id"]})
            if local:
                facts["kind"] = "dir"
            elif self._wants_copies():

                facts["copies"] = copies(self.cat, self.t["pk"], self.t["repo_id"], self.engine)
            self._target_speed = facts
        return self._target_speed

    def _read_copies(self, rows: list[dict]) -> None:
        """Each HF draft's copies the engine could load in its place (answer/setup.py), read at once."""
        hf = [r for r in rows if r.get("tokenizer_id") is not None or not self.entry.gguf_classes]
        if self._wants_copies(draft=True) and hf:

            found = copies_among(self.cat, hf, self.class_ids + self.degraded_ids)
            for r in hf:
                r["_copies"] = found.get(r["repo_id"], [])

    def _wants_copies(self, draft: bool = False) -> bool:
        """Whether a copy of the target could change the setup: the engine loads GGUF or MLX files, or a
        quantization was asked."""
        profile = self.entry.speed
        opts = self.speed
        asked = opts is not None and (opts.draft_quant if draft else opts.target_quant) is not None
        return profile is not None and (profile.runtime in ("ggml", "mlx") or profile.gguf is not None or asked)

    def _speedup(self, r: dict, e: dict) -> dict | None:
        """The draft's expected speed-up on the first device asked (or the engine's reference device)."""
        if self.entry.speed is None:
            return None

        opts = self.speed or Options()
        bases = json_value(r.get("base_models")) or []
        speed = (json_value(r.get("arch")) or {}).get("speed")
        tag = gguf_quant(r.get("gguf"))
        draft = {"shape": shape_from_facts(speed, r.get("params"), r.get("params_active"), r["repo_id"]),
                 "quant": quant_from_facts(speed, tag), "kind": "gguf" if tag is not None else "hf", "tag": tag,
                 "family": r.get("family"),
                 "author": r.get("author"),
                 "bases": bases, "repo_id": r["repo_id"]}
        if self.lineage_id is not None and r.get("lineage_id") == self.lineage_id:
            draft["bases"] = [*bases, self.t["repo_id"]]  # a shared lineage root: siblings
        if r.get("_copies"):
            draft["copies"] = r["_copies"]
        r["_draft_facts"] = draft
        figures = estimate(self.engine, self._speed_facts(), draft, opts, agreement_share(e), first_only=True,
                           release=self.entry.release, measured=self._measured_alpha(r["repo_id"], opts))
        return figures[0] if figures else None

    def _measured_alpha(self, draft: str, opts) -> tuple[float, float] | None:
        """The draft's measured acceptance for this target on the task (``indexer measure``), fed back as check
        feeds it (answer/speedup.py ``measured_alpha``): one read of the target's measurements per query."""
        if not opts.measured:
            return None
        if self._measurements is None:

            self._measurements = rows(self.cat, self.t["repo_id"], None)
        if not self._measurements:
            return None

        return measured_alpha([m for m in self._measurements if m["draft"] == draft], opts)

    def has_candidates(self) -> bool:
        """Whether drafts() would list anything (one index probe; the summary line asks every engine). A query
        made ``probe_only`` probes the target's own class first, then, only if it has none, the agreeing ones."""
        if not self._agreement_read:
            probed = list(self.class_ids)
            if self._probe(probed):
                return True
            self._read_agreement()
            if self.class_ids == probed and not self.degraded_ids:
                return False  # no class agrees: the probe above was the whole answer
        return self._probe(self.class_ids + self.degraded_ids)  # degraded drafts are listed too

    def _probe(self, class_ids: list[int]) -> bool:
        """Whether any member of ``class_ids`` would be listed as a draft."""
        tp = self.t["params"]
        params = {"pk": self.target.exclude_pk, "tp": tp, "tp3": tp * 3 if tp is not None else None}
        size = "AND (rc.params * 4 < :tp3 OR rc.params IS NULL) " if tp is not None else ""
        members = (f"FROM repo_classes rc WHERE rc.class_id IN {int_list(class_ids)} "
                   f"AND rc.repo_pk <> :pk {size}{self.draft_where}AND NOT rc.disabled")
        if not self.arch.per_draft:
            return bool(self.cat.all(f"SELECT rc.repo_pk {members} LIMIT 1", params))
        # A draft row may refuse members: a few in index order usually hold one it takes (no ranking sort), a
        # few more if not; only when none does is the class ranked page by page as drafts() would. The rows read
        # their stored facts in the same statement (what the draft rows judge); which few come first does not
        # change the answer, since the ranking decides when they are all refused.
        probe = (f"SELECT e.arch FROM repos r {FACTS_JOIN} WHERE r.id IN (SELECT rc.repo_pk {members} LIMIT ")
        for n in PROBE_ROWS:
            rows = [{"arch": row[0]} for row in self.cat.all(probe + f"{n})", params)]
            if not rows:
                return False
            if any(not self.arch.refused(r) for r in rows):
                return True
            if len(rows) < n:
                break
        return any(self._take(class_ids, f"{size}AND NOT rc.disabled", 1))

    def all_members(self) -> list[dict]:
        """Every draft that works, then every degraded one (each group by repo id)."""
        params: dict = {"pk": self.target.exclude_pk}
        sql = (f"SELECT {RANK_COLS} FROM repo_classes rc "
               f"WHERE rc.class_id IN {int_list(self.class_ids + self.degraded_ids)} AND rc.repo_pk <> :pk "
               f"{self.draft_where}")
        rows = self._details([dict(zip(RANK_KEYS, row, strict=False)) for row in self.cat.all(sql, params)])
        rows = [r for r in rows if self.arch.refused(r) is None]  # an architecture row refuses the others
        out = [self._entry(r, ranked=False) for r in rows]
        self._read_copies(rows)
        for e, r in zip(out, rows):  # marked: never a ranked suggestion, listed here as every repo that works
            e["speedup"] = self._speedup(r, e)
            self._launch(e, r)
            e["not_a_draft"] = self._copy_of_target(r)
            if e["not_a_draft"]:
                e["reasons"].insert(1, f"not a draft: {e['not_a_draft']}")
        out.sort(key=lambda e: (SEVERITY.index(e["outcome"]), e["demoted"], e["repo_id"]))
        return out

    def near_misses(self, limit: int) -> list[dict]:
        """Drafts for which this engine's verdict is useless or refused because exactly one fact
        differs (the mapping, or the size), or whose llama.cpp check fails once; each with the fix that
        changes the outcome (rules.fix_for, the function `check` uses). Ranked like drafts, by one total
        order, so every --limit shows a prefix of the same list."""

        t = self.t
        out: list[dict] = []
        if self.refused_target:
            return out
        base = self.draft_where + ("AND rc.params < :tp AND NOT rc.disabled" if t["params"] is not None
                                   else "AND NOT rc.disabled")
        if self.rules.gguf_classes:
            fails = self.cat.all(
                "SELECT c.id, p.reason FROM llamacpp_pairs p JOIN compat_classes c ON c.engine = :e "
                "AND c.class_key = p.draft_signature JOIN compat_classes tc ON tc.id = :cid "
                "WHERE p.target_signature = tc.class_key AND NOT p.compatible AND p.failed_checks = 1",
                {"e": self.classes_of, "cid": self.class_id})
            for cid, reason in fails:
                for r in self._ranked([cid], base, {}, limit):
                    if r["tokenizer_id"] is not None and t["tokenizer_id"] is not None:
                        fix = fix_for(self.engine, registry.NO_SPECULATION, same_mapping=False,
                                      same_base=self._same_base(r), tli_info=self._tli(r), release=self.entry.release)
                    else:  # a GGUF repo: no HF tokenizer files to re-convert from, only other GGUF files
                        fix = ("a GGUF side has no HF tokenizer to compare: pick a draft GGUF converted from the "
                               "target's tokenizer files (or re-convert this draft with them)")
                    out.append(self._miss(r, registry.NO_SPECULATION, "token list",
                                          f"{reason}: llama-server serves without a draft", fix))
        elif self.size is not None:
            # useless: same size, a get_vocab() mapping that does not agree (the engine starts, drafts are rejected).
            params = {"e": self.engine, "vs": self.size, "tid": t["tokenizer_id"]}
            others = dict(self.cat.all(
                "SELECT c.id, k.base_vocab_sha256 FROM compat_classes c JOIN tokenizers k ON k.id = c.tokenizer_id "
                "WHERE c.engine = :e AND c.vocab_size = :vs AND c.tokenizer_id <> :tid", params))
            useless = [cid for cid in others if cid not in self.grades]
            for r in self._ranked(useless, base, {}, limit):
                same_base = others[r["class_id"]] == t["base_vocab_sha256"]
                reason = (f"same size {self.size} and base vocabulary, but the target's text falls on added tokens "
                          "the draft does not share" if same_base else
                          f"same size {self.size}, but the get_vocab() mappings disagree")
                fix = fix_for(self.engine, registry.USELESS, same_mapping=False, same_base=same_base,
                              sizes=(self.size, self.size), tli_info=self._tli(r), release=self.entry.release)
                if fix is None:  # a vocabulary no fix makes agree is no near miss: one fix must make it work
                    continue
                out.append(self._miss(r, registry.USELESS, "mapping", reason, fix))
            # refused: the same mapping at another size (the engine raises at launch).
            sizes = dict(self.cat.all(
                "SELECT id, vocab_size FROM compat_classes WHERE engine = :e AND tokenizer_id = :tid "
                "AND vocab_size <> :vs", params))
            for r in self._ranked(list(sizes), base, {}, limit):
                ds = sizes[r["class_id"]]
                fix = fix_for(self.engine, registry.REFUSED, same_mapping=True, same_base=True,
                              sizes=(self.size, ds), tli_info=self._tli(r), release=self.entry.release)
                out.append(self._miss(r, registry.REFUSED, "vocab_size", "same get_vocab() mapping, but the size "
                                      f"differs: target {self.size}, draft {ds}", fix))
        if self.arch.per_draft:  # drafts of the class that a draft row refuses (SGLang: a shorter context)
            for r, why in self.arch.misses(lambda n, offset: self._ranked(self.class_ids, base, {}, n, offset), limit):
                out.append(self._miss(r, registry.REFUSED, *why))
        out.sort(key=lambda m: m["_rank"])
        for m in out:
            m.pop("_rank")
        return out[:limit]

    def _same_base(self, r: dict) -> bool | None:
        row = self.cat.one("SELECT base_vocab_sha256 FROM tokenizers WHERE id = :d", {"d": r["tokenizer_id"]})
        return None if row is None else row[0] == self.t["base_vocab_sha256"]

    def _tli(self, r: dict) -> dict | None:
        row = self.cat.one("SELECT tli_intersection, tli_ratio FROM pair_verdicts WHERE target_tokenizer_id = :t "
                           "AND draft_tokenizer_id = :d", {"t": self.t["tokenizer_id"], "d": r["tokenizer_id"]})
        if row is None or row[0] is None:
            return None
        return {"intersection": row[0], "ratio": row[1]}

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
        a = r.get("agreement")
        if a is not None:

            said = "works" if a["class"] == registry.WORKS else "starts, degraded"
            return (f"{name} {said}: {(self.label or '').split(' and get_vocab()')[0]} on both; "
                    f"{summary(a)}" + "".join(f"; warning: {w}" for w in a["warnings"]))
        return f"{name} works: {self.label} on both"

    def _reasons(self, r: dict, ranked: bool = True) -> list[str]:
        t = self.t
        reasons = [self._accept_reason(r)]
        ratio = self._ratio(r["params"])
        size = fmt_size(r["params"], self._source(r), r.get("params_active"), long=True)
        if r["params"] is None:
            reasons.append("size unknown: no safetensors count, no usable config.json, no size in the name")
        elif ratio is None:
            reasons.append(f"{size}; the target's size is unknown")
        elif ranked or ratio < 1:
            # the ranking SQL's test, in integers: params * 50 >= target and params * 5 <= target
            inside = (r["params"] * round(1 / RATIO_LOW) >= t["params"]
                      and r["params"] * round(1 / RATIO_HIGH) <= t["params"])
            shown = fmt_ratio(ratio)
            if not inside and shown in ("1/5", "1/50"):  # rounds onto a bound it is just outside of
                shown = f"{'a little over' if shown == '1/5' else 'a little under'} {shown}"
            reasons.append(f"{size}, {shown} of the target's {fmt_size(t['params'], t['params_source'])}")
        else:
            reasons.append(f"{size}, not smaller than the target")
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

    @staticmethod
    def _source(r: dict) -> str | None:
        """safetensors (the Hub's count), config or name (compute's estimates), None when unknown."""
        if r["params"] is None:
            return None
        if r.get("hub_params") is not None:
            return "safetensors"
        if r.get("estimate_source"):
            return r["estimate_source"]

        named = estimate_from_name(r["repo_id"])
        r["params_active"] = named.active if named else None
        return "name"

    def _entry(self, r: dict, ranked: bool = True) -> dict:
        source = self._source(r)
        r["agreement"] = self.pair_agreement(r) if r.get("class_id") is not None else None
        return self.arch.apply({
            "repo_id": r["repo_id"],
            "outcome": r["agreement"]["class"] if r["agreement"] is not None else registry.WORKS,
            "agreement": r["agreement"],
            "params": r["params"],
            "params_source": source,
            "params_active": r.get("params_active"),
            "ratio": self._ratio(r["params"]),
            "downloads": r["downloads"],
            "reasons": self._reasons(r, ranked),
            "launch": None,  # the setup's (_launch)
            "_name": self._launch_name(r),
        }, r)

    def _launch_name(self, r: dict) -> str:
        """A GGUF repo draft launches as ``REPO:QUANT`` (llama-server -hfd); others by their repo id."""
        if r.get("tokenizer_id") is None and self.entry.gguf_classes:
            return hub_gguf(self.cat, r["pk"], r["repo_id"]) or r["repo_id"]
        return r["repo_id"]

    def _launch(self, e: dict, r: dict) -> None:
        """The entry's ``setup`` and ``launch``: the estimated setup's (speedup.py), moved out of its ``speedup``;
        where the device asked runs no such engine, the setup on the engine's own devices; an engine without a
        speed model launches the pair by name."""
        s = e.get("speedup") or {}
        if "launch" in s:
            e["setup"], e["launch"] = s.pop("setup"), s.pop("launch")
        elif self.entry.speed is not None and "_draft_facts" in r:

            chosen = choose(self.engine, self.entry.release, self.entry.speed, None, self._speed_facts(),
                            r["_draft_facts"], self.speed)
            e.update(with_launch(chosen))
        else:
            e["setup"] = None
            e["launch"] = launch(self.engine, self.target.gguf_file or self.t["repo_id"], e["_name"])
        e.pop("_name", None)

    def _miss(self, r: dict, outcome: str, check: str, reason: str, fix: str | None) -> dict:
        e = self._entry(r)
        e.pop("_name")
        e.pop("launch")
        e.pop("demoted")
        e["reasons"] = e["reasons"][1:]
        e.update({"outcome": outcome, "failed_check": check, "reason": reason, "fix": fix})
        e["_rank"] = (-r["win"], -r["lin"], -r["kind"], bool(r["is_gated"]), -(r["downloads"] or 0), r["pk"])
        return e

    def target_info(self) -> dict:
        """The ``target`` block of the JSON answer: the target's size, vocabulary and class."""
        t = self.t
        return {
            "repo_id": t["repo_id"],
            "params": t["params"],
            "params_source": t["params_source"],
            "params_active": t["params_active"],
            "note": self.target.note,
            "vocab_size": t["vocab_size"],
            "vocab_size_transformers": t["vocab_size_transformers"],
            "vocab_sha256": t["vocab_sha256"],
            "hf_vocab_size": t["hf_vocab_size"],
            "class": self.label,
            "class_members": self.members,
            "agreeing_members": self._agreeing_members(),
        }
