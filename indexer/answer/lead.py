"""The device leads: ``indexer query --hardware NAME`` without ``--engine`` answers for the engines that run on
that device, best estimate first, and any answer for a named device says whether its engine runs there.

Which engine runs on which kind of device is each engine's own fact (``Engine.device_kinds``, from the speed
profile in ``engines/<engine>.py``); a GGUF target counts as GGUF (LM Studio runs it off a Mac, on its llama.cpp
engine), a Hugging Face one as not.
"""

from __future__ import annotations

from .. import engines as registry
from ..catalog.reader import Reader
from .pipeline import drafts as answer_drafts
from .scope import Scope, engine_at, resolve
from .target import Target, resolve_target


def engines_on(kind: str, gguf: bool) -> list[str]:
    """The engines (registry order) that run draft models for such a target on a ``kind`` device."""
    return [name for name, e in registry.ENGINES.items()
            if e.refuses_drafts is None and e.profile_on(kind, gguf) is not None]


def lead(cat: Reader, target: str, resolved: Target | None, speed, limit: int,
         all_members: bool = False) -> tuple[Scope, list[dict], list[dict]]:
    """Every engine that runs on ``speed.device`` ranked by its best draft's tokens per second there (the target's
    speed times the estimate; unknown last): the
    best engine's scope, its drafts, and the ranking (one row per engine: its best draft and estimate)."""
    device = speed.device
    resolved = resolved or resolve_target(cat, target)
    gguf = bool(resolved.gguf_file)
    rows: list[dict] = []
    answers: dict[str, tuple[Scope, list[dict]]] = {}
    for order, name in enumerate(engines_on(device.kind, gguf)):
        q = resolve(cat, resolved, engine_at(name, None))
        drafts = answer_drafts(cat, q, speed, limit, all_members)
        answers[name] = (q, drafts)
        best = next((d for d in drafts if (d.get("speedup") or {}).get("estimate") is not None), None)
        s = (best or {}).get("speedup") or {}
        rows.append({"engine": name, "name": registry.ENGINE_NAMES[name], "estimate": s.get("estimate"),
                     "low": s.get("low"), "high": s.get("high"), "draft": (best or {}).get("repo_id"),
                     "draft_tokens": s.get("draft_tokens"), "target_quant": s.get("target_quant"),
                     "slower": s.get("slower"), "drafts": len(drafts),
                     "tok_s": round(s["target_tok_s"] * s["estimate"], 1) if s.get("target_tok_s") else None,
                     "why": None if best else (q.refused_target or ("no drafts" if not drafts else
                                                                    (drafts[0].get("speedup") or {}).get("why"))),
                     "_order": order})
    # Best first: the most tokens per second with the draft (a 1.4x on an unquantized eager target can be slower
    # than a 1.2x on a 4-bit one), then the estimate; engines with no figure last.
    rows.sort(key=lambda r: (r["estimate"] is None, -(r["tok_s"] or 0.0), -(r["estimate"] or 0.0), r["drafts"] == 0,
                             r["_order"]))
    for r in rows:
        r.pop("_order")
    if not rows:  # no engine runs draft models there: the default engine's answer, which says so
        q = resolve(cat, resolved, engine_at(registry.DEFAULT_ENGINE, None))
        return q, answer_drafts(cat, q, speed, limit, all_members), rows
    q, drafts = answers[rows[0]["engine"]]
    return q, drafts, rows


def device_block(q: Scope, speed, led: list[dict] | None) -> dict:
    """The ``hardware`` block of a query's answer: the device, whether the engine answered runs on it (and why
    not), the engines that do, and the lead's ranking when the engine was chosen for the device."""
    device = speed.device
    gguf = bool(q.target.gguf_file)
    here = engines_on(device.kind, gguf)
    runs = q.engine.profile_on(device.kind, gguf) is not None
    return {"name": device.name, "kind": device.kind, "note": speed.hardware_note, "runs": runs,
            "why": None if runs else q.engine.not_on(device.kind, gguf), "engines": here,
            "not_here": [n for n in registry.ENGINES if n not in here], "lead": led}
