"""The SQL of an answer's candidates: a target's class on an engine, the classes that work with it, and their
members ranked by size, lineage, kind and downloads (docs/ranking.md).

Every statement an answer reads about draft models is here, over one :class:`~indexer.catalog.reader.Reader`;
the answer's stages (indexer/answer/) work on the typed rows these functions return. Candidates are ranked from
the ``repo_classes (class_id, params)`` index of each class, or from the head of a class in download order
(``ix_repo_classes_class_rank``, migration 0010) when that provably holds the page.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..vocab.params import estimate_from_name
from .reader import Reader, int_list

RATIO_LOW, RATIO_HIGH = 1 / 50, 1 / 5  # the preferred size of a draft, as a share of the target's
WINDOW = "rc.params * 50 >= :tp AND rc.params * 5 <= :tp"  # the size inside RATIO_LOW..RATIO_HIGH, in integers
# The order inside one (win, lin, kind) rank, as ix_repo_classes_class_rank holds it (migration 0010).
DOWNLOAD_ORDER = "rc.gated, COALESCE(rc.downloads, 0) DESC, rc.repo_pk"
RANK_INDEX = "ix_repo_classes_class_rank"
HEAD_ROWS = 20  # head_rows reads this many rows of a class per row it ranks (a third are in the window)
HEAD_CLASSES = 8  # more classes than this (GGUF pairs): ranked from the (class_id, params) range
RANK_COLS = ("rc.repo_pk, rc.params, rc.downloads, rc.lineage_id, rc.author_id, rc.family_id, rc.is_chat, "
             "rc.gated, rc.class_id")
# The ranked columns: RANK_COLS and the three computed sort keys (in the size window, same lineage, same kind).
RANK_SELECT = (f"{RANK_COLS}, CASE WHEN {WINDOW} THEN 1 ELSE 0 END AS win, "
               "CASE WHEN rc.lineage_id = :lin OR rc.author_id = :aid OR rc.family_id = :fid THEN 1 ELSE 0 END AS lin, "
               "CASE WHEN rc.is_chat = :chat THEN 1 ELSE 0 END AS kind")
RANK_KEYS = ("pk", "params", "downloads", "lineage_id", "author_id", "family_id", "is_chat", "is_gated",
             "class_id", "win", "lin", "kind")  # the last three: ranked()'s computed sort columns
FACTS_JOIN = ("LEFT JOIN engine_facts e ON e.file_set_id = r.file_set_id "
              "AND e.config_blob = COALESCE(r.config_blob, '')")  # a repo's stored facts (its arch, its GGUF)
DETAIL_SQL = ("SELECT r.id, r.repo_id, r.author, r.family, r.gated, r.vocab_size, r.vocab_size_transformers, "
              "r.tokenizer_id, r.disabled, r.params, r.params_estimate_source, r.params_active_estimate, e.arch, "
              f"r.base_models, e.gguf FROM repos r {FACTS_JOIN} WHERE r.id IN ")
DETAIL_KEYS = ("pk", "repo_id", "author", "family", "gated", "vocab_size", "vocab_size_transformers",
               "tokenizer_id", "disabled", "hub_params", "estimate_source", "params_active", "arch", "base_models",
               "gguf")
# Only GGUF repos (no HF tokenizer) as drafts: a GGUF target on an engine that runs GGUF files on llama.cpp.
GGUF_DRAFTS_ONLY = "AND EXISTS (SELECT 1 FROM repos gr WHERE gr.id = rc.repo_pk AND gr.tokenizer_id IS NULL) "


@dataclass
class Member:
    """One class member as the ranking reads it (``RANK_KEYS``) with its repo's facts (``DETAIL_KEYS``)."""

    pk: int
    params: int | None
    downloads: int | None
    lineage_id: int | None
    author_id: int | None
    family_id: int | None
    is_chat: bool | None
    is_gated: bool | None
    class_id: int
    win: int = 0  # inside the size window (the ranked rows only)
    lin: int = 0  # same lineage, author or family
    kind: int = 0  # same kind (chat or base)
    repo_id: str = ""
    author: str | None = None
    family: str | None = None
    gated: str | None = None
    vocab_size: int | None = None
    vocab_size_transformers: int | None = None
    tokenizer_id: int | None = None
    disabled: bool | None = None
    hub_params: int | None = None  # the Hub's safetensors count
    estimate_source: str | None = None  # compute's estimate: "config" or "name"
    params_active: int | None = None
    arch: object = None  # engine_facts.arch: JSON text as stored (parsed by the verdict stage)
    base_models: object = None
    gguf: object = None  # engine_facts.gguf: JSON text as stored
    params_source: str | None = None  # "safetensors", "config" or "name"; None when the size is unknown


def _member(values: Iterable) -> Member:
    """A member with its size's source; a size from the name gives it its active parameters too."""
    m = Member(*values)
    if m.params is None:
        return m
    if m.hub_params is not None:
        m.params_source = "safetensors"
    elif m.estimate_source:
        m.params_source = m.estimate_source
    else:
        named = estimate_from_name(m.repo_id)
        m.params_active = named.active if named else None
        m.params_source = "name"
    return m


@dataclass
class TargetClass:
    """The target's compatibility class on one engine, and its dense ids for the ranking."""

    class_id: int | None
    lineage_id: int | None
    author_id: int | None
    family_id: int | None
    label: str
    members: int
    vocab_size: int | None


@dataclass
class RankKeys:
    """What the ranking SQL compares members with: the target's size (and its window), lineage, author, family and
    kind, the repo never suggested, and the members' condition (``draft_where``: GGUF repos only, or none)."""

    params: int | None
    lineage_id: int | None
    author_id: int | None
    family_id: int | None
    is_chat: bool | None
    exclude_pk: int
    draft_where: str = ""

    def sql_params(self) -> dict:
        """The statement's parameters: the target's size and its window (1/50 to 1/5), lineage, author, family."""
        tp = self.params
        return {"tp": tp, "tp3": tp * 3 if tp is not None else None, "lo": tp // 50 if tp is not None else None,
                "hi": tp // 5 + 1 if tp is not None else None, "lin": self.lineage_id, "aid": self.author_id,
                "fid": self.family_id, "chat": self.is_chat, "pk": self.exclude_pk}


# ---------------------------------------------------------------- the target's class and the classes that work


def target_classes(cat: Reader, pk: int, engines: Sequence[str]) -> dict[str, TargetClass]:
    """Engine -> the repo's class there, for ``engines`` (one statement; naming them lets it read the primary key
    (engine, repo_pk) instead of every engine's rows)."""
    names = {f"e{i}": engine for i, engine in enumerate(engines)}
    rows = cat.all(
        "SELECT rc.engine, rc.class_id, rc.lineage_id, rc.author_id, rc.family_id, c.label, c.members, c.vocab_size "
        "FROM repo_classes rc JOIN compat_classes c ON c.id = rc.class_id "
        f"WHERE rc.engine IN ({', '.join(':' + k for k in names)}) AND rc.repo_pk = :pk", {"pk": pk, **names})
    return {row[0]: TargetClass(*row[1:]) for row in rows}


def target_class(cat: Reader, engine: str, pk: int) -> TargetClass | None:
    """The repo's class on ``engine``, None when it has none."""
    row = cat.one(
        "SELECT rc.class_id, rc.lineage_id, rc.author_id, rc.family_id, c.label, c.members, c.vocab_size "
        "FROM repo_classes rc JOIN compat_classes c ON c.id = rc.class_id "
        "WHERE rc.engine = :e AND rc.repo_pk = :pk", {"pk": pk, "e": engine})
    return TargetClass(*row) if row is not None else None


def dense_id(cat: Reader, column: str, value: str | None) -> int | None:
    """compute's number for an author or family string (any repo that has it carries it)."""
    if value is None:
        return None
    assert column in ("author", "family")
    row = cat.one(f"SELECT rc.{column}_id FROM repos r JOIN repo_classes rc ON rc.repo_pk = r.id "
                  f"WHERE r.{column} = :v LIMIT 1", {"v": value})
    return row[0] if row else None


def engine_fact(cat: Reader, pk: int, column: str):
    """One stored engine fact of a repo (``engine_facts.<column>``), None when it has none."""
    row = cat.one(f"SELECT e.{column} FROM repos r JOIN engine_facts e ON e.file_set_id = r.file_set_id "
                  "AND e.config_blob = COALESCE(r.config_blob, '') WHERE r.id = :pk", {"pk": pk})
    return row[0] if row else None


def gguf_pairs(cat: Reader, engine: str, class_id: int) -> list[tuple[int, str, int]]:
    """(class id, reason, members) of the GGUF vocabularies that pass common_speculative_are_compatible with the
    class's (llamacpp_pairs)."""
    return cat.all(
        "SELECT c.id, p.reason, c.members FROM llamacpp_pairs p JOIN compat_classes c ON c.engine = :e "
        "AND c.class_key = p.draft_signature JOIN compat_classes tc ON tc.id = :cid "
        "WHERE p.target_signature = tc.class_key AND p.compatible", {"e": engine, "cid": class_id})


def gguf_pairs_failing_once(cat: Reader, engine: str, class_id: int | None) -> list[tuple[int, str]]:
    """(class id, reason) of the GGUF vocabularies that fail exactly one of llama.cpp's checks with the class's."""
    return cat.all(
        "SELECT c.id, p.reason FROM llamacpp_pairs p JOIN compat_classes c ON c.engine = :e "
        "AND c.class_key = p.draft_signature JOIN compat_classes tc ON tc.id = :cid "
        "WHERE p.target_signature = tc.class_key AND NOT p.compatible AND p.failed_checks = 1",
        {"e": engine, "cid": class_id})


def same_size_classes(cat: Reader, engine: str, vocab_size: int, tokenizer_id: int | None) -> list[tuple]:
    """(class id, base vocabulary sha256, agreement grade, the target's agrees_by_base, members) of the other
    tokenizers' classes of this size, by id (compute's agreement step graded them)."""
    return cat.all(
        "SELECT c.id, k.base_vocab_sha256, a.grade, tk.agrees_by_base, c.members FROM compat_classes c "
        "JOIN tokenizers k ON k.id = c.tokenizer_id JOIN tokenizers tk ON tk.id = :tid "
        "LEFT JOIN tokenizer_agreement a ON a.target_tokenizer_id = :tid AND a.draft_tokenizer_id = c.tokenizer_id "
        "WHERE c.engine = :e AND c.vocab_size = :vs AND c.tokenizer_id <> :tid ORDER BY c.id",
        {"e": engine, "vs": vocab_size, "tid": tokenizer_id})


def same_size_bases(cat: Reader, engine: str, vocab_size: int, tokenizer_id: int | None) -> dict[int, str]:
    """Class id -> base vocabulary sha256 of the other tokenizers' classes of this size."""
    return dict(cat.all(
        "SELECT c.id, k.base_vocab_sha256 FROM compat_classes c JOIN tokenizers k ON k.id = c.tokenizer_id "
        "WHERE c.engine = :e AND c.vocab_size = :vs AND c.tokenizer_id <> :tid",
        {"e": engine, "vs": vocab_size, "tid": tokenizer_id}))


def other_sizes(cat: Reader, engine: str, vocab_size: int, tokenizer_id: int | None) -> dict[int, int]:
    """Class id -> vocab_size of the tokenizer's classes at another size."""
    return dict(cat.all(
        "SELECT id, vocab_size FROM compat_classes WHERE engine = :e AND tokenizer_id = :tid "
        "AND vocab_size <> :vs", {"e": engine, "vs": vocab_size, "tid": tokenizer_id}))


def members_of(cat: Reader, class_ids: list[int]) -> int:
    """How many repos the classes hold in all."""
    row = cat.one(f"SELECT SUM(members) FROM compat_classes WHERE id IN {int_list(class_ids)}")
    return int(row[0] or 0) if row else 0


# ---------------------------------------------------------------- tokenizers and pairs


def tokenizer_facts(cat: Reader, tokenizer_id: int | None) -> tuple:
    """(added tokens, hf_vocab_size, vocab_len, eos, bos, pad ids, text tokens, counts on added ids)."""
    row = cat.one("SELECT added_tokens, hf_vocab_size, vocab_len, eos_token_id, bos_token_id, "
                  "pad_token_id, text_tokens, added_text_counts FROM tokenizers WHERE id = :t", {"t": tokenizer_id})
    values: list[Any] = list(row) if row else [None] * 8
    for k in (0, 7):
        values[k] = json.loads(values[k]) if isinstance(values[k], (str, bytes)) else values[k]
    return (values[0] or [], *values[1:])


def measured_agreement(cat: Reader, target_tid: int | None, draft_tid: int | None) -> tuple | None:
    """(grade, basis, text_agreement, ids_agreement, differing_ids) compute measured for the pair, or None."""
    return cat.one("SELECT grade, basis, text_agreement, ids_agreement, differing_ids FROM "
                   "tokenizer_agreement WHERE target_tokenizer_id = :t AND draft_tokenizer_id = :d",
                   {"t": target_tid, "d": draft_tid})


def base_vocab(cat: Reader, tokenizer_id: int | None) -> tuple | None:
    """(base_vocab_sha256,) of a tokenizer, None when unknown."""
    return cat.one("SELECT base_vocab_sha256 FROM tokenizers WHERE id = :d", {"d": tokenizer_id})


def tli(cat: Reader, target_tid: int | None, draft_tid: int | None) -> dict | None:
    """The pair's token-level intersection (pair_verdicts), None when not computed."""
    row = cat.one("SELECT tli_intersection, tli_ratio FROM pair_verdicts WHERE target_tokenizer_id = :t "
                  "AND draft_tokenizer_id = :d", {"t": target_tid, "d": draft_tid})
    if row is None or row[0] is None:
        return None
    return {"intersection": row[0], "ratio": row[1]}


def repo_name(cat: Reader, pk: int) -> str | None:
    """A repo's id by its primary key."""
    row = cat.one("SELECT repo_id FROM repos WHERE id = :i", {"i": pk})
    return row[0] if row else None


# ---------------------------------------------------------------- copies: a repo's lineage in its class

_COPY_SELECT = "SELECT r.repo_id, r.base_models, e.gguf, e.arch, r.id"
_COPY_JOIN = ("JOIN repos r ON r.id = rc.repo_pk LEFT JOIN engine_facts e ON e.file_set_id = r.file_set_id "
              "AND e.config_blob = COALESCE(r.config_blob, '')")


def lineage_of(cat: Reader, engine: str, pk: int) -> list[tuple]:
    """(repo id, base_models, gguf, arch) of the other public members of the repo's class and lineage on
    ``engine``, most downloaded first: one query through the lineage index (``+rc.class_id`` keeps the planner of a
    catalog without statistics off the class index, which would read the whole class)."""
    return cat.all(
        f"{_COPY_SELECT} FROM repo_classes rc0 JOIN repo_classes rc "
        "ON +rc.class_id = rc0.class_id AND rc.lineage_id = rc0.lineage_id AND rc.repo_pk <> rc0.repo_pk "
        f"{_COPY_JOIN} WHERE rc0.engine = :e AND rc0.repo_pk = :pk "
        "AND NOT rc.disabled AND NOT rc.gated ORDER BY COALESCE(rc.downloads, 0) DESC, r.repo_id LIMIT 50",
        {"e": engine, "pk": pk})


def lineages_in(cat: Reader, class_ids: list[int], lineages: list[int]) -> list[tuple]:
    """The same rows for every public member of ``lineages`` in ``class_ids``, most downloaded first (the lineage
    index, as :func:`lineage_of`)."""
    return cat.all(
        f"{_COPY_SELECT} FROM repo_classes rc {_COPY_JOIN} WHERE +rc.class_id IN {int_list(class_ids)} "
        f"AND rc.lineage_id IN {int_list(lineages)} AND NOT rc.disabled AND NOT rc.gated "
        "ORDER BY COALESCE(rc.downloads, 0) DESC, r.repo_id LIMIT 500")


# ---------------------------------------------------------------- ranked members


def details(cat: Reader, rows: list[tuple]) -> list[Member]:
    """The few ranked rows (``RANK_KEYS`` tuples, possibly without the computed sort columns) joined with their
    repos' facts by primary key."""
    out: dict[int, tuple] = {}
    pks = [r[0] for r in rows]
    for i in range(0, len(pks), 5000):
        for row in cat.all(DETAIL_SQL + int_list(pks[i:i + 5000])):
            out[row[0]] = row
    return [_member((*r, *(0,) * (len(RANK_KEYS) - len(r)), *out[r[0]][1:])) for r in rows if r[0] in out]


def ranked(cat: Reader, keys: RankKeys, sizes: dict[int, int], class_ids: list[int], where: str,
           limit: int | None, offset: int = 0) -> list[Member]:
    """Members of ``class_ids`` passing ``where``, ranked from the covering index alone, with the winners' details.
    ``sizes``: class id -> members (a class known small is read by the range query)."""
    if not class_ids:
        return []
    params = keys.sql_params()
    if limit is None or keys.params is None or offset:  # a later page (archrank.take): one plain query
        return details(cat, rank_rows(cat, class_ids, where, params, limit, offset))
    # Members inside the preferred ratio sort first: when they fill the page (a big class), the rest of the
    # class is never read. Each half is ranked from the head of each class in download order when that
    # provably holds the page (head_rows), else from the index range on (class_id, params).
    inside = f"{where} AND rc.params BETWEEN :lo AND :hi AND {WINDOW}"
    rows = head_rows(cat, sizes, class_ids, inside, params, limit)
    if rows is None:
        rows = rank_rows(cat, class_ids, inside, params, limit)
    if len(rows) < limit:
        outside = f"{where} AND (CASE WHEN {WINDOW} THEN 1 ELSE 0 END) = 0"
        more = head_rows(cat, sizes, class_ids, outside, params, limit - len(rows))
        rows += more if more is not None else rank_rows(cat, class_ids, outside, params, limit - len(rows))
    return details(cat, rows)


def rank_rows(cat: Reader, class_ids: list[int], where: str, params: dict, limit: int | None,
              offset: int = 0) -> list[tuple]:
    """Ranked rows (``RANK_KEYS``) of ``class_ids`` passing ``where``."""
    sql = (f"SELECT {RANK_SELECT} FROM repo_classes rc WHERE rc.class_id IN {int_list(class_ids)} "
           f"AND rc.repo_pk <> :pk {where} ORDER BY win DESC, lin DESC, kind DESC, {DOWNLOAD_ORDER}")
    if limit is not None:
        sql += f" LIMIT {int(limit)}" + (f" OFFSET {int(offset)}" if offset else "")
    return [tuple(row) for row in cat.all(sql, params)]


_WIN, _LIN, _KIND = (RANK_KEYS.index(k) for k in ("win", "lin", "kind"))


def _download_key(r: tuple) -> tuple:
    """DOWNLOAD_ORDER's key of a rank row, in Python."""
    return r[7], -(r[2] or 0), r[0]


def head_rows(cat: Reader, sizes: dict[int, int], class_ids: list[int], where: str, params: dict,
              limit: int) -> list[tuple] | None:
    """The first ``limit`` ranked rows passing ``where`` (which fixes ``win``), read from the head of each class
    in download order (ix_repo_classes_class_rank), a row at a time, up to ``HEAD_ROWS`` x ``limit`` rows a
    class; None when what was read does not provably hold them, then the caller ranks the range.

    Exact because the rank orders by (win, lin, kind) first, then in the index's order. A class stops being read
    once ``limit`` rows with the best lin and kind any row can have are taken: every later row of it comes after
    them. A class cut at the cap can still rank a later row before the page's last row, unless that last row
    has the best lin and kind and comes before the cut. Each row read is a row looked up in the table, the cost
    of a query at 1,000,000 repos: most pages are held by a few dozen rows, not by the cap."""
    head = HEAD_ROWS * limit
    if len(class_ids) > HEAD_CLASSES or all(sizes.get(c, head + 1) <= head for c in class_ids):
        return None  # many classes, or small ones: the range query reads them at once
    if not cat.has_index(RANK_INDEX):
        return None  # a catalog made before migration 0010 (`indexer db upgrade` adds the index)
    best = (int(any(params[k] is not None for k in ("lin", "aid", "fid"))), int(params["chat"] is not None))
    sql = (f"SELECT {RANK_SELECT}, CASE WHEN rc.repo_pk <> :pk {where} THEN 1 ELSE 0 END FROM repo_classes rc "
           f"WHERE rc.class_id = :hc ORDER BY {DOWNLOAD_ORDER} LIMIT {head}")
    rows: list[tuple] = []
    cuts: list[tuple] = []  # the download key of the last row read of each class cut at the cap
    for cid in class_ids:
        params["hc"] = cid
        read = taken_best = 0
        row = None
        for row in cat.stream(sql, params):
            read += 1
            if not row[-1]:
                continue
            rows.append(tuple(row[:-1]))
            taken_best += (rows[-1][_LIN], rows[-1][_KIND]) == best
            if taken_best == limit:
                break
        else:
            if read == head and sizes.get(cid, head + 1) > head:
                assert row is not None  # read == head > 0 rows
                cuts.append(_download_key(row))
    rows.sort(key=lambda r: (-r[_WIN], -r[_LIN], -r[_KIND], *_download_key(r)))
    rows = rows[:limit]
    if not cuts:
        return rows  # every class was read to its end or to a full page of its best rows
    if len(rows) < limit or (rows[-1][_LIN], rows[-1][_KIND]) != best:
        return None
    return rows if all(_download_key(rows[-1]) < cut for cut in cuts) else None


def every_member(cat: Reader, class_ids: list[int], exclude_pk: int, draft_where: str = "") -> list[Member]:
    """Every member of ``class_ids`` but the target, unranked, with its details."""
    sql = (f"SELECT {RANK_COLS} FROM repo_classes rc "
           f"WHERE rc.class_id IN {int_list(class_ids)} AND rc.repo_pk <> :pk {draft_where}")
    return details(cat, [tuple(row) for row in cat.all(sql, {"pk": exclude_pk})])


def _members_sql(class_ids: list[int], keys: RankKeys) -> tuple[str, dict]:
    tp = keys.params
    params = {"pk": keys.exclude_pk, "tp": tp, "tp3": tp * 3 if tp is not None else None}
    size = "AND (rc.params * 4 < :tp3 OR rc.params IS NULL) " if tp is not None else ""
    return (f"FROM repo_classes rc WHERE rc.class_id IN {int_list(class_ids)} "
            f"AND rc.repo_pk <> :pk {size}{keys.draft_where}AND NOT rc.disabled"), params


def any_member(cat: Reader, class_ids: list[int], keys: RankKeys) -> bool:
    """Whether any member of ``class_ids`` is a draft by size and state (one index probe)."""
    members, params = _members_sql(class_ids, keys)
    return bool(cat.all(f"SELECT rc.repo_pk {members} LIMIT 1", params))


def first_archs(cat: Reader, class_ids: list[int], keys: RankKeys, n: int) -> list:
    """The stored architecture facts (``engine_facts.arch``) of the first ``n`` such members in index order."""
    members, params = _members_sql(class_ids, keys)
    probe = f"SELECT e.arch FROM repos r {FACTS_JOIN} WHERE r.id IN (SELECT rc.repo_pk {members} LIMIT "
    return [row[0] for row in cat.all(probe + f"{n})", params)]
