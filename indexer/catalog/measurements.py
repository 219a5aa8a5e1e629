"""The catalog's ``measurements`` table (migration 0011): written by ``indexer measure``, read by ``check``.

A pair's measurements on one engine are summed per device and task, each weighing as many runs as it made:
``summary`` is what ``check --json`` shows under ``verdicts.<engine>.measured`` (its words: answer/render.py).
"""

from __future__ import annotations

from datetime import datetime, timezone

from .. import __version__
from .db import open_catalog

COLUMNS = ("target", "draft", "engine", "engine_version", "hardware", "target_quant", "draft_quant", "task",
           "draft_tokens", "acceptance", "drafted", "accepted", "rounds", "tokens", "tok_s", "tok_s_baseline",
           "speedup", "estimate", "runs", "prompts", "max_tokens", "same_text", "calibration", "measured_at",
           "tool_version")


def row_of(result: dict) -> dict:
    """The table row of one ``measure`` result."""


    m = result["measured"]
    return {"target": result["target"], "draft": result["draft"], "engine": result["engine"],
            "engine_version": m.get("engine_version"), "hardware": m.get("hardware"),
            "target_quant": m.get("target_quant"), "draft_quant": m.get("draft_quant"), "task": m["task"],
            "draft_tokens": m.get("draft_tokens"), "acceptance": m.get("acceptance"), "drafted": m.get("drafted"),
            "accepted": m.get("accepted"), "rounds": m.get("rounds"), "tokens": m.get("tokens"),
            "tok_s": m.get("tok_s"), "tok_s_baseline": m.get("tok_s_baseline"), "speedup": m.get("speedup"),
            "estimate": (result.get("estimate") or {}).get("estimate"), "runs": m["runs"],
            "prompts": m.get("prompts"), "max_tokens": m.get("max_tokens"), "same_text": m.get("same_text"),
            "calibration": bool(m.get("calibration")),
            "measured_at": datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0),
            "tool_version": __version__}


def save(result: dict, db: str | None) -> int:
    """Write the measurement into the catalog (made or migrated to head first); returns its row id."""
    from sqlalchemy import insert

    from .models import Measurement

    engine = open_catalog(db, create=True)
    try:
        with engine.begin() as conn:
            return conn.execute(insert(Measurement).values(**row_of(result))).inserted_primary_key[0]
    finally:
        engine.dispose()


def rows(reader, target: str, draft: str | None, engine: str | None = None) -> list[dict]:
    """The pair's measurements (``draft`` None: the target's with every draft; on one engine, or all), oldest
    first; [] for a catalog made before the table."""
    sql = f"SELECT {', '.join(COLUMNS)} FROM measurements WHERE target = :t"
    params = {"t": target}
    if draft is not None:
        sql += " AND draft = :d"
        params["d"] = draft
    if engine is not None:
        sql += " AND engine = :e"
        params["e"] = engine
    try:
        found = reader.all(sql + " ORDER BY measured_at, id", params)
    except Exception:  # noqa: BLE001 - any driver's "no such table": a catalog before migration 0011
        return []
    return [dict(zip(COLUMNS, r)) for r in found]


def summary(found: list[dict], hardware: str | None = None, task: str | None = None) -> dict | None:
    """The measured speed-up and acceptance of one device and task, each measurement weighing its runs: the device
    and task asked for, else those with the most runs. None when nothing was measured there."""
    if hardware is not None:
        found = [r for r in found if r["hardware"] == hardware]
    if task is not None:
        found = [r for r in found if r["task"] == task]
    if not found:
        return None
    groups: dict[tuple, list[dict]] = {}
    for r in found:
        groups.setdefault((r["hardware"], r["task"]), []).append(r)
    (device, task_), group = max(groups.items(), key=lambda kv: sum(r["runs"] for r in kv[1]))

    def mean(name: str) -> float | None:
        have = [(r[name], r["runs"]) for r in group if r[name] is not None]
        weight = sum(w for _, w in have)
        return round(sum(v * w for v, w in have) / weight, 3) if weight else None

    return {"speedup": mean("speedup"), "acceptance": mean("acceptance"), "tok_s": mean("tok_s"),
            "tok_s_baseline": mean("tok_s_baseline"), "hardware": device, "task": task_,
            "runs": sum(r["runs"] for r in group), "measurements": len(group),
            "engine_version": group[-1]["engine_version"], "draft_tokens": group[-1]["draft_tokens"],
            "calibration": all(r["calibration"] for r in group)}
