"""Stage 5 of a draft-model answer, its JSON half: each draft and near miss as the answer's entry, with its reasons
in words (why the engine accepts it, its size against the target's, lineage, kind, gating, downloads, and the
architecture rows). :mod:`indexer.answer.render` prints the text from these entries.
"""

from __future__ import annotations

from typing import Any

from .. import engines as registry
from ..catalog.classes import RATIO_HIGH, RATIO_LOW
from ..catalog.reader import NOT_GATED
from ..vocab.agreement import summary
from .render import fmt_ratio, fmt_size
from .scope import Scope
from .verdict import Judged, Miss

ENGINE_NAMES = registry.ENGINE_NAMES
OUTSIDE = "a base model outside the catalog"  # the lineage root of a lineage the catalog does not hold


def entry(s: Scope, j: Judged, root: str | None, ranked: bool = True) -> dict:
    """A draft's JSON entry. ``root``: the repo id of the target's lineage root, when the catalog holds it."""
    m = j.member
    first, *rest = reasons(s, j, root, ranked)
    marked = [f"not a draft: {j.not_a_draft}"] if not ranked and j.not_a_draft else []  # query --all
    e: dict[str, Any] = {
        "repo_id": m.repo_id,
        "outcome": j.outcome,
        "agreement": j.agreement,
        "params": m.params,
        "params_source": m.params_source,
        "params_active": m.params_active,
        "ratio": ratio(s, m.params),
        "downloads": m.downloads,
        # the first stays why the class accepts it; the rows that decided the outcome right after it
        "reasons": [first, *marked, *j.arch.deciding, *rest, *j.arch.notes],
        "launch": j.launch,
        "demoted": j.demoted,
        "speedup": j.speedup,
        "setup": j.setup,
    }
    if not ranked:  # query --all: listed here as every repo that works, marked when it is no draft
        e["not_a_draft"] = j.not_a_draft
    return e


def miss_entry(s: Scope, miss: Miss, root: str | None) -> dict:
    """A near miss's JSON entry: the draft's facts, the check it fails, why and the fix."""
    e = entry(s, miss.judged, root)
    for k in ("launch", "demoted", "speedup", "setup"):
        e.pop(k)
    e["reasons"] = e["reasons"][1:]
    e.update({"outcome": miss.outcome, "failed_check": miss.failed_check, "reason": miss.reason, "fix": miss.fix})
    return e


def ratio(s: Scope, params) -> float | None:
    """The draft's size as a fraction of the target's (None when either size is unknown)."""
    tp = s.t["params"]
    if params is None or not tp:
        return None
    return round(params / tp, 4)


def accept_reason(s: Scope, j: Judged) -> str:
    """Why the engine accepts the pair: its class, a GGUF pair llama.cpp's check passes, or the agreement."""
    name = ENGINE_NAMES[s.name]
    cid = j.member.class_id
    if cid in s.paired:
        return f"{name} works: {s.paired[cid] or 'the GGUF vocabularies pass its check'}"
    a = j.agreement
    if a is not None:
        said = "works" if a["class"] == registry.WORKS else "starts, degraded"
        return (f"{name} {said}: {(s.label or '').split(' and get_vocab()')[0]} on both; "
                f"{summary(a)}" + "".join(f"; warning: {w}" for w in a["warnings"]))
    return f"{name} works: {s.label} on both"


def reasons(s: Scope, j: Judged, root: str | None, ranked: bool = True) -> list[str]:
    """The vocabulary's reasons for a draft: why it is accepted, its size, lineage, kind, gating, downloads."""
    t, m = s.t, j.member
    out = [accept_reason(s, j)]
    r = ratio(s, m.params)
    size = fmt_size(m.params, m.params_source, m.params_active, long=True)
    if m.params is None:
        out.append("size unknown: no safetensors count, no usable config.json, no size in the name")
    elif r is None:
        out.append(f"{size}; the target's size is unknown")
    elif ranked or r < 1:
        # the ranking SQL's test, in integers: params * 50 >= target and params * 5 <= target
        inside = (m.params * round(1 / RATIO_LOW) >= t["params"]
                  and m.params * round(1 / RATIO_HIGH) <= t["params"])
        shown = fmt_ratio(r)
        if not inside and shown in ("1/5", "1/50"):  # rounds onto a bound it is just outside of
            shown = f"{'a little over' if shown == '1/5' else 'a little under'} {shown}"
        out.append(f"{size}, {shown} of the target's {fmt_size(t['params'], t['params_source'])}")
    else:
        out.append(f"{size}, not smaller than the target")
    if s.keys.lineage_id is not None and m.lineage_id == s.keys.lineage_id:
        out.append(f"same lineage: both derive from {root or OUTSIDE}")
    elif t["author"] and m.author == t["author"]:
        out.append(f"same author: {m.author}")
    elif t["family"] and m.family == t["family"]:
        out.append(f"same family: {m.family}")
    if t["is_chat"] is not None and m.is_chat is not None:
        kind = "chat" if m.is_chat else "base"
        out.append(f"same kind ({kind})" if bool(m.is_chat) == bool(t["is_chat"])
                   else f"different kind ({kind} draft)")
    if m.gated is not None and str(m.gated) not in NOT_GATED:
        out.append(f"gated ({m.gated}): request access first")
    if m.disabled:
        out.append("disabled on the Hub")
    out.append(f"{m.downloads if m.downloads is not None else 'unknown'} downloads")
    return out
