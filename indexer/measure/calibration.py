"""A catalog's measurements as calibration rows: what ``indexer measure`` kept, in the shape of the shared published
measurements (``calibrate.Case``), so that a fit over both refines the factors of the devices and runtimes they
ran on (``benchmarks/speedup.py --catalog DB``).

Only rows that can calibrate: ``calibration`` true (a named device, a reported release), a speed-up (a baseline
was measured), a quantization the model knows, and both models' shapes in the catalog.
"""

from __future__ import annotations

from ..answer.speedup import catalog_facts, relation, tuned_apart
from ..catalog.measurements import COLUMNS
from ..catalog.reader import Reader
from ..engines import ENGINES, speed_profile
from ..errors import IndexerError
from ..speed import model
from ..speed.calibrate import Case

SOURCE = "indexer measure"  # the source of these rows: one source, for leave-one-source-out


def calibration_rows(reader) -> list[dict]:
    """The catalog's calibration-grade measurements as rows of the shared measurements' shape."""
    try:
        found = [dict(zip(COLUMNS, r)) for r in reader.all(
            f"SELECT {', '.join(COLUMNS)} FROM measurements WHERE calibration AND speedup IS NOT NULL ORDER BY id")]
    except Exception:  # noqa: BLE001 - a catalog from before migration 0011
        return []
    return [{"target": r["target"], "draft": r["draft"], "engine": r["engine"], "hardware": r["hardware"],
             "quant": r["target_quant"], "draft_quant": r["draft_quant"], "task": r["task"],
             "draft_tokens": r["draft_tokens"], "speedup": r["speedup"], "acceptance": r["acceptance"],
             "acceptance_def": "accepted / drafted", "tok_s_baseline": r["tok_s_baseline"],
             "source": f"{SOURCE} {r['engine_version']}", "usable": True, "ran_release": True} for r in found]


def cases(db: str | None) -> list:
    """``calibrate.Case`` of each calibration-grade measurement whose models and quantization are known."""
    out = []
    with Reader(db, needs="repos") as reader:
        for row in calibration_rows(reader):
            t, d = catalog_facts(reader, row["target"]), catalog_facts(reader, row["draft"])
            if not (t.get("shape") and d.get("shape")) or row["engine"] not in ENGINES:
                continue
            profile = ENGINES[row["engine"]].speed
            row["quant"] = row["quant"] or (profile.target_quant if profile else None)
            row["draft_quant"] = row["draft_quant"] or (profile.draft_quant if profile else None)
            row["source"] = SOURCE  # one source for leave-one-source-out, whatever the release
            try:
                out.append(Case(row, t["shape"], d["shape"], model.kin(relation(t, d), tuned_apart(t, d)),
                                speed_profile))
            except (IndexerError, KeyError, TypeError, ValueError):
                continue  # a quantization or device the model does not know
    return out
