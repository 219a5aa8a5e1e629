"""A ``measure`` result written into the catalog's ``measurements`` table (made or migrated to head first)."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import insert

from .. import __version__
from ..catalog.db import open_catalog
from ..catalog.models import Measurement


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
    engine = open_catalog(db, create=True)
    try:
        with engine.begin() as conn:
            return conn.execute(insert(Measurement).values(**row_of(result))).inserted_primary_key[0]
    finally:
        engine.dispose()
