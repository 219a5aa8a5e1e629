"""How far two vocabularies agree, and so whether a started draft speeds the target up.

Speculation runs on ids: the draft proposes ids, the target verifies them. An id the target emits
is lost only when it means something else to the draft, or does not exist there. So the measure
is taken on ``get_vocab()`` inverted to id -> strings:

* ``ids_common`` / ``ids_differ``: ids both sides define, and those whose strings differ;
* ``only_target`` / ``only_draft``: ids one side defines;
* ``ids_agreement``: (ids_common - ids_differ) / ids the target defines;
* ``text_agreement``: the share of the target's tokens over the shipped reference text
  (``indexer/vocab/reference_text``, tokenized by the target with ``add_special_tokens=False``) whose id
  has the same strings in the draft: the ceiling of acceptance relative to an identical vocabulary.

The counts are exact (``../shared/corpus/oracle-agreement.json`` defines them). The per-tokenizer id
counts over the text are computed once (:func:`count_text`) and kept in the token store, so a pair
costs no tokenization. :data:`WORKS_AT` and :data:`DEGRADED_AT` are the only thresholds.
"""

from __future__ import annotations

import os
from functools import lru_cache

from .. import deferred
from ..resources import package_path
from . import TRANSFORMERS_LOCK

WORKS_AT = 0.99  # text_agreement from which a started pair works (docs/engines.md "Outcomes")
DEGRADED_AT = 0.5  # ... from which it still pays, below which it is useless
EXAMPLES = 5  # differing ids shown with both strings
REFERENCE_PARTS = ("licences.txt", "translations.txt", "cjk.txt", "python.txt")

IDENTICAL, WORKS, DEGRADED, USELESS = "identical", "works", "degraded", "useless"


def grade(figure: float) -> str:
    """works / degraded / useless for an agreement figure: the one place the thresholds are applied."""
    if figure >= WORKS_AT:
        return WORKS
    return DEGRADED if figure >= DEGRADED_AT else USELESS


# ---------------------------------------------------------------- the reference text


@lru_cache(maxsize=1)
def reference_parts() -> tuple[str, ...]:
    """The reference text's parts, in order (package data: indexer/resources.py)."""
    root = package_path("vocab", "reference_text")
    return tuple(root.joinpath(name).read_text("utf-8") for name in REFERENCE_PARTS)


# The sha256 of the reference text's parts, each followed by a NUL byte (tests/test_agreement.py recomputes it):
# a constant, so that an answer naming it reads no 200 KB of text and loads no hashlib.
REFERENCE_SHA256 = "66524d59da9726eb0749da1d145cd93d64dfe4198b26246445958ddcde7eb338"


def reference_sha256() -> str:
    """Names the text the stored counts were taken over: counts of another text are stale."""
    return REFERENCE_SHA256


def load_tokenizer(directory):
    """The tokenizer transformers loads from ``directory`` (AutoTokenizer, trust_remote_code=False, local files
    only). Raises whatever transformers raises."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    with TRANSFORMERS_LOCK:  # the load; the tokenizers library then encodes without the GIL
        return deferred.transformers.AutoTokenizer.from_pretrained(str(directory), trust_remote_code=False,
                                                                  local_files_only=True)


def count_with(tok) -> dict[int, int]:
    """A loaded tokenizer's id counts over the reference text (add_special_tokens=False)."""
    counts: dict[int, int] = {}
    for part in reference_parts():
        for i in tok(part, add_special_tokens=False)["input_ids"]:
            counts[i] = counts.get(i, 0) + 1
    return counts


def count_text(directory) -> dict[int, int]:
    """The target-side id counts over the reference text, with the tokenizer transformers loads from
    ``directory``, in this process. Only for trusted files: a repo's own tokenizer is counted in a box
    (:mod:`indexer.vocab.tokenbox`), since a hostile one can panic, loop or exhaust memory here."""
    return count_with(load_tokenizer(directory))


# ---------------------------------------------------------------- a pair


def invert(vocab: dict[str, int]) -> dict[int, str | frozenset[str]]:
    """id -> its string, or the frozenset of its strings when several map to it (equal values compare
    equal, a string never equals a set)."""
    out: dict[int, str | frozenset[str]] = {}
    for s, i in vocab.items():
        prev = out.get(i)
        if prev is None:
            out[i] = s
        elif isinstance(prev, frozenset):
            out[i] = prev | {s}
        else:
            out[i] = frozenset((prev, s))
    return out


def _shown(value) -> str | list[str] | None:
    return sorted(value) if isinstance(value, frozenset) else value


def agreement(target: dict[str, int], draft: dict[str, int], counts: dict[int, int] | None = None,
              specials: dict[int, str] | None = None) -> dict:
    """The ``agreement`` object of a (target, draft) pair (check, query, site and --json alike).

    ``counts``: the target's id counts over the reference text (None: ``text_agreement`` is unknown and
    the grade rests on ``ids_agreement``, said by ``basis``). ``specials``: target ids worth a warning
    when they differ (its eos, chat-template and other special tokens), id -> what they are.
    """
    ti, di = invert(target), invert(draft)
    common = ti.keys() & di.keys()
    differ = sorted(i for i in common if ti[i] != di[i])
    only_t = sorted(ti.keys() - di.keys())
    only_d = sorted(di.keys() - ti.keys())
    ids_agreement = (len(common) - len(differ)) / len(ti) if ti else 0.0
    text = None
    if counts:
        total = sum(counts.values())
        same = sum(n for i, n in counts.items() if i in di and ti.get(i) == di[i])
        text = same / total if total else None
    identical = not differ and not only_t and not only_d
    changed = sorted(differ + only_t + only_d)
    return _result(
        identical=identical, text=text, ids_agreement=ids_agreement, ids_target=len(ti), ids_common=len(common),
        differ=differ, only_t=only_t, only_d=only_d,
        examples=[(i, _shown(ti.get(i)), _shown(di.get(i))) for i in changed[:EXAMPLES]],
        warnings=[_warning(what, i, _shown(ti.get(i)), _shown(di.get(i)))
                  for i, what in sorted((specials or {}).items()) if i in ti and ti.get(i) != di.get(i)])


def _warning(what: str, i: int, target, draft) -> str:
    return (f"the target's {what} {target!r} (id {i}) " + (f"means {draft!r}" if draft is not None else
                                                          "does not exist") + " in the draft")


def _result(*, identical: bool, text: float | None, ids_agreement: float, ids_target: int, ids_common: int,
            differ: list[int], only_t: list[int], only_d: list[int], examples: list[tuple],
            warnings: list[str]) -> dict:
    """The one shape of the ``agreement`` object, graded by :func:`grade` (text when known, else ids)."""
    figure = text if text is not None else ids_agreement
    return {
        "identical": identical,
        "class": IDENTICAL if identical else grade(figure),
        "basis": "identical" if identical else ("text" if text is not None else "ids"),
        "ids_target": ids_target,
        "ids_common": ids_common,
        "ids_differ": len(differ),
        "only_target": len(only_t),
        "only_draft": len(only_d),
        "ids_agreement": round(ids_agreement, 6),
        "text_agreement": None if text is None else round(text, 6),
        "text_sha256": reference_sha256() if text is not None else None,
        "differing_ids": len(differ) + len(only_t) + len(only_d),
        "examples": [{"id": i, "target": t, "draft": d} for i, t, d in examples],
        "warnings": warnings,
    }


def by_added(t_added: list[dict], d_added: list[dict], *, t_base: int | None, d_base: int | None,
             ids_target: int, counts: dict[int, int] | None = None, specials: dict[int, str] | None = None) -> dict:
    """:func:`agreement` for two tokenizers with the same base vocabulary, from their added tokens alone
    (what the catalog keeps): an id below a side's base size that it does not list as added is taken to
    hold the base vocabulary's string, which both sides share. Asked only of mappings known to differ, so
    never ``identical`` (when the added tokens agree, the difference lies where they cannot see)."""
    ta = {t["id"]: t["content"] for t in t_added or ()}
    da = {t["id"]: t["content"] for t in d_added or ()}

    def draft(i):
        return da[i] if i in da else (ta.get(i) if d_base is not None and i < d_base else None)

    differ = sorted(i for i in ta if draft(i) is not None and draft(i) != ta[i])
    only_t = sorted(i for i in ta if draft(i) is None)
    only_d = sorted(i for i in da if i not in ta and (t_base is None or i >= t_base))
    text = None
    if counts:
        total = sum(counts.values())
        lost = sum(counts.get(i, 0) for i in differ + only_t)
        text = (total - lost) / total if total else None
    ids_agreement = (ids_target - len(differ) - len(only_t)) / ids_target if ids_target else 0.0
    changed = sorted(differ + only_t + only_d)
    return _result(
        identical=False, text=text, ids_agreement=ids_agreement, ids_target=ids_target,
        ids_common=ids_target - len(only_t), differ=differ, only_t=only_t, only_d=only_d,
        examples=[(i, ta.get(i), draft(i) if i in ta else da.get(i)) for i in changed[:EXAMPLES]],
        warnings=[_warning(what, i, ta[i], draft(i))
                  for i, what in sorted((specials or {}).items()) if i in differ or i in only_t])


def special_ids(tok: dict | None) -> dict[int, str]:
    """The target ids whose difference deserves a warning, from fingerprint facts: eos/bos/pad and the
    special added tokens (chat templates are written in them: <|im_start|>, <|eot_id|>, ...)."""
    out: dict[int, str] = {}
    if not tok:
        return out
    for t in tok.get("added_tokens") or []:
        if t.get("special"):
            out[t["id"]] = "special token"
    for name in ("pad", "bos", "eos"):  # eos last: it names the id when it is several things
        i = tok.get(f"{name}_token_id")
        if i is not None:
            out[i] = f"{name} token"
    return out


def percent(share: float, differs: bool) -> str:
    """A share to one decimal that never reads 100.0% while tokens differ (it says "over 99.9%" then)."""
    text = f"{share:.1%}"
    return "over 99.9%" if differs and text == "100.0%" else text


def _token(text) -> str:
    """A token's text as a person reads it; a token the side lacks is said so, not as a Python None."""
    return "(absent)" if text is None else repr(text)


def summary(a: dict | None) -> str:
    """One line for a person: the figure and what differs."""
    if a is None:
        return "agreement unknown (no vocabulary in the token store)"
    if a["identical"]:
        return "identical get_vocab() mappings"
    differs = bool(a["differing_ids"])
    if a["text_agreement"] is not None:
        figure = (f"{percent(a['text_agreement'], differs)} of the target's tokens over the reference text mean the "
                  "same in the draft")
    else:
        figure = (f"{percent(a['ids_agreement'], differs)} of the target's ids mean the same in the draft (no token "
                  "counts: text agreement unknown)")
    shown = ", ".join(f"{e['id']}: {_token(e['target'])} vs {_token(e['draft'])}" for e in a["examples"])
    more = f", ... ({a['differing_ids']} in all)" if a["differing_ids"] > len(a["examples"]) else ""
    n = a["differing_ids"]
    return f"{figure}; {n} token{'s' if n != 1 else ''} differ ({shown}{more})"
