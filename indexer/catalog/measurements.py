"""The catalog's ``measurements`` table (migration 0011), read by ``check``; ``indexer measure`` writes it
(:mod:`indexer.measure.store`).

A pair's measurements on one engine are summed per device and task, each weighing as many runs as it made:
``summary`` is what ``check --json`` shows under ``verdicts.<engine>.measured`` (its words: answer/render.py).
"""

from __future__ import annotations

COLUMNS = ("target", "draft", "engine", "engine_version", "hardware", "target_quant", "draft_quant", "task",
           "draft_tokens", "acceptance", "drafted", "accepted", "rounds", "tokens", "tok_s", "tok_s_baseline",
           "speedup", "estimate", "runs", "prompts", "max_tokens", "same_text", "calibration", "measured_at",
           "tool_version")


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
