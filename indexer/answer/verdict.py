"""Stage 2 of a draft-model answer: the engine's verdict on each candidate, as ``check`` gives it: the vocabulary
(its class works with the target's, or agrees: works or degraded, with the agreement), then the architecture rows
(:mod:`indexer.answer.archrank`). Near misses are the drafts one fact away from working, each with the fix
(``rules.fix_for``, the function `check` uses).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import engines as registry
from ..catalog import classes as sql
from ..catalog.classes import Member
from ..catalog.reader import Reader
from ..engines.rules import fix_for
from ..vocab.agreement import by_added, special_ids
from .archrank import ArchVerdict
from .members import ranked
from .scope import Scope


@dataclass
class Judged:
    """One candidate with its verdict; the setup-and-estimate stage fills in the rest."""

    member: Member
    outcome: str
    agreement: dict | None  # the vocabularies' agreement (None: one mapping)
    arch: ArchVerdict
    speedup: dict | None = None  # stage 3: the estimate on the first device asked
    setup: dict | None = None  # stage 3: the setup the estimate and the launch command are of
    launch: str | None = None
    not_a_draft: str | None = None  # ``query --all``: why a member that works is no draft

    @property
    def demoted(self) -> bool:
        """Whether an architecture row moved the draft below the others."""
        return self.arch.demoted


@dataclass
class Miss:
    """A near miss: a candidate, the outcome this engine gives it, the one check it fails, why and the fix."""

    judged: Judged
    outcome: str
    failed_check: str
    reason: str
    fix: str | None

    @property
    def rank(self) -> tuple:
        """The order of near misses: size window, lineage, kind, public first, downloads, then id."""
        m = self.judged.member
        return -m.win, -m.lin, -m.kind, bool(m.is_gated), -(m.downloads or 0), m.pk


def judge(cat: Reader, s: Scope, members: list[Member]) -> list[Judged]:
    """Each candidate's verdict on the scope's engine."""
    out = []
    for m in members:
        agreement = pair_agreement(cat, s, m)
        base = agreement["class"] if agreement is not None else registry.WORKS
        arch = s.arch.judge(base, m)
        out.append(Judged(m, arch.outcome, agreement, arch))
    return out


def pair_agreement(cat: Reader, s: Scope, m: Member) -> dict | None:
    """The ``agreement`` object for a draft of an agreeing class (None: identical mapping): measured by compute
    when it had to, else from the added tokens of two tokenizers with one base vocabulary and the target's text
    counts on its added ids (catalog columns: the site needs no token store)."""
    if m.class_id not in s.grades:
        return None
    tid = s.t["tokenizer_id"]
    t_added, t_hf, t_len, eos, bos, pad, total, on_added = sql.tokenizer_facts(cat, tid)
    d_added, d_hf = sql.tokenizer_facts(cat, m.tokenizer_id)[:2]
    counts = None
    if total:  # the base ids' share as one entry: only added ids can differ between same-base tokenizers
        counts = {int(i): n for i, n in (on_added or {}).items()}
        counts[-1] = total - sum(counts.values())
    specials = special_ids({"added_tokens": t_added, "eos_token_id": eos, "bos_token_id": bos,
                            "pad_token_id": pad})
    a = by_added(t_added, d_added, t_base=t_hf, d_base=d_hf, ids_target=t_len or 0, counts=counts,
                 specials=specials)
    if s.grades[m.class_id]["measured"]:
        row = sql.measured_agreement(cat, tid, m.tokenizer_id)
        if row is not None:
            a.update({"class": row[0], "basis": row[1], "text_agreement": row[2], "ids_agreement": row[3],
                      "differing_ids": row[4]})
    a["class"] = s.grades[m.class_id]["grade"]
    return a


def near_misses(cat: Reader, s: Scope, limit: int) -> list[Miss]:
    """Drafts for which this engine's verdict is useless or refused because exactly one fact differs (the
    mapping, or the size), or whose llama.cpp check fails once; each with the fix that changes the outcome.
    Ranked like drafts, by one total order, so every --limit shows a prefix of the same list."""
    t = s.t
    out: list[Miss] = []
    if s.refused_target:
        return out
    base = s.keys.draft_where + ("AND rc.params < :tp AND NOT rc.disabled" if t["params"] is not None
                                 else "AND NOT rc.disabled")
    release = s.engine.release

    def miss(m: Member, outcome: str, check: str, reason: str, fix: str | None) -> Miss:
        return Miss(judge(cat, s, [m])[0], outcome, check, reason, fix)

    if s.rules.gguf_classes:
        for cid, reason in sql.gguf_pairs_failing_once(cat, s.classes_of, s.class_id):
            for m in ranked(cat, s, [cid], base, limit):
                if m.tokenizer_id is not None and t["tokenizer_id"] is not None:
                    fix = fix_for(s.name, registry.NO_SPECULATION, same_mapping=False,
                                  same_base=_same_base(cat, s, m), tli_info=_tli(cat, s, m), release=release)
                else:  # a GGUF repo: no HF tokenizer files to re-convert from, only other GGUF files
                    fix = ("a GGUF side has no HF tokenizer to compare: pick a draft GGUF converted from the "
                           "target's tokenizer files (or re-convert this draft with them)")
                out.append(miss(m, registry.NO_SPECULATION, "token list",
                                f"{reason}: llama-server serves without a draft", fix))
    elif s.size is not None:
        # useless: same size, a get_vocab() mapping that does not agree (the engine starts, drafts are rejected).
        others = sql.same_size_bases(cat, s.name, s.size, t["tokenizer_id"])
        useless = [cid for cid in others if cid not in s.grades]
        for m in ranked(cat, s, useless, base, limit):
            same_base = others[m.class_id] == t["base_vocab_sha256"]
            reason = (f"same size {s.size} and base vocabulary, but the target's text falls on added tokens "
                      "the draft does not share" if same_base else
                      f"same size {s.size}, but the get_vocab() mappings disagree")
            fix = fix_for(s.name, registry.USELESS, same_mapping=False, same_base=same_base,
                          sizes=(s.size, s.size), tli_info=_tli(cat, s, m), release=release)
            if fix is None:  # a vocabulary no fix makes agree is no near miss: one fix must make it work
                continue
            out.append(miss(m, registry.USELESS, "mapping", reason, fix))
        # refused: the same mapping at another size (the engine raises at launch).
        sizes = sql.other_sizes(cat, s.name, s.size, t["tokenizer_id"])
        for m in ranked(cat, s, list(sizes), base, limit):
            ds = sizes[m.class_id]
            fix = fix_for(s.name, registry.REFUSED, same_mapping=True, same_base=True,
                          sizes=(s.size, ds), tli_info=_tli(cat, s, m), release=release)
            out.append(miss(m, registry.REFUSED, "vocab_size", "same get_vocab() mapping, but the size "
                            f"differs: target {s.size}, draft {ds}", fix))
    if s.arch.per_draft:  # drafts of the class that a draft row refuses (SGLang: a shorter context)
        for m, why in s.arch.misses(lambda n, offset: ranked(cat, s, s.class_ids, base, n, offset), limit):
            out.append(miss(m, registry.REFUSED, *why))
    out.sort(key=lambda x: x.rank)
    return out[:limit]


def _same_base(cat: Reader, s: Scope, m: Member) -> bool | None:
    row = sql.base_vocab(cat, m.tokenizer_id)
    return None if row is None else row[0] == s.t["base_vocab_sha256"]


def _tli(cat: Reader, s: Scope, m: Member) -> dict | None:
    return sql.tli(cat, s.t["tokenizer_id"], m.tokenizer_id)
