"""``--method mtp|eagle3|dflash`` on an engine that runs speculator heads from GGUF files (llama.cpp): the
target's own MTP layers and the catalog's GGUF heads, from the header facts the crawl read
(``engine_facts.arch.head``: indexer/gguf/file.py), judged and launched (always with ``--spec-type``) by the engine's
head rules (``Engine.heads``, a ``GGUFHeadRules``). The JSON shape is the head answer's (headquery.py)."""

from __future__ import annotations

from .. import engines as registry
from ..catalog.headrows import gguf_repo, gguf_repos
from ..catalog.reader import Reader, json_value
from ..engines.headrules import GGUFHeadRules
from ..errors import QueryError
from ..vocab.archconfig import ArchFacts
from .lookup import find_repo_id, gguf_base
from .target import hub_gguf_name

KINDS = {"mtp": "mtp", "eagle3": "eagle3", "dflash": "dflash"}  # --method -> the header's head kind


def _row(r) -> dict:
    pk, repo_id, downloads, tags, bases, gguf, arch = r
    return {"pk": pk, "repo_id": repo_id, "downloads": downloads, "tags": json_value(tags) or [],
            "base_models": json_value(bases) or [], "gguf": json_value(gguf) or {},
            "arch": ArchFacts.from_dict(json_value(arch))}


def _declared(r: dict) -> set[str]:
    """The repos a GGUF file says it is made from or for: its quantized base, its base_models, base_model tags."""
    out = {b.lower() for b in r["base_models"] if isinstance(b, str)}
    out |= {t.rsplit(":", 1)[-1].lower() for t in r["tags"] if isinstance(t, str) and t.startswith("base_model:")}
    if (q := gguf_base(r["tags"])) is not None:
        out.add(q.lower())
    return out


def _name(r: dict) -> str:
    return hub_gguf_name(r["repo_id"], r["gguf"]) or r["repo_id"]


def gguf_target(cat: Reader, target: str) -> dict | None:
    """The catalog row of a GGUF repo whose header the crawl read (its facts), None for any other repo."""
    match = find_repo_id(cat.all, target, cat.dialect)
    row = gguf_repo(cat, match.repo_id)
    return _row(row) if row is not None else None


def shape_words(a: ArchFacts) -> str:
    """GGUF llama, 32 layers, embedding_length 4096 (what the header says; never a Python None)."""
    parts = [f"GGUF {a.gguf_arch or 'architecture unknown'}"]
    parts.append(f"{a.gguf_block_count} layers" if a.gguf_block_count else "layers not in its header")
    if a.gguf_embedding_length:
        parts.append(f"embedding_length {a.gguf_embedding_length}")
    return ", ".join(parts)


def target_block(t: dict) -> dict:
    """The ``target`` block of a GGUF target's head answer (the keys the head answer's block uses)."""
    a = t["arch"]
    return {"repo_id": t["repo_id"], "gguf_arch": a.gguf_arch, "params": None, "class": shape_words(a),
            "mtp_layers": (a.head or {}).get("nextn_predict_layers"), "block_count": a.gguf_block_count,
            "embedding_length": a.gguf_embedding_length, "note": None}


def hf_engine_refusal(engine: str, t: dict, method: str) -> str:
    """Why an engine that loads Hugging Face checkpoints answers no head for a GGUF target, and who does."""
    able = [name for name, e in registry.ENGINES.items() if e.heads.from_gguf and method in e.heads]
    base = gguf_base(t["tags"])
    return (f"{registry.ENGINE_NAMES[engine]} loads Hugging Face checkpoints, not GGUF files"
            + (f": ask for {base}, the repo this GGUF quantizes" if base else "")
            + (f"; this GGUF's {method} runs on {', '.join(able)} (--engine {able[0]})" if able else ""))


def method_query(cat: Reader, target: str, engine: str, method: str, *, limit: int = 10, near_misses: bool = False,
                 all_members: bool = False) -> dict:
    """The target's own MTP layers (``mtp``) and every catalog GGUF head of the method's kind, fitting ones ranked
    by lineage then downloads, the others as near misses with the failed check."""
    entry = registry.ENGINES[engine]
    heads = entry.heads
    assert isinstance(heads, GGUFHeadRules)  # headquery sends only engines whose heads are GGUF files here
    spec_type, source = heads.methods[method]
    match = find_repo_id(cat.all, target, cat.dialect)
    row = gguf_repo(cat, match.repo_id)
    if row is None:
        raise QueryError(f"{match.repo_id} is not a GGUF repo whose header the catalog read: "
                         f"{entry.display} runs {method} heads from GGUF files (ask for a GGUF repo of it)")
    t = _row(row)
    if t["arch"].head and not t["arch"].head.get("embedded"):
        raise QueryError(f"{t['repo_id']} is a {t['arch'].head['kind']} head ({t['arch'].gguf_arch}), not a target")
    found, missed = [], []
    if method == "mtp":  # the target's own MTP layers first
        checks = heads.fit(method, None, t["arch"])
        reasons = [*(f"{detail} ({src})" for _, _, detail, src in checks), f"--spec-type {spec_type}: {source}"]
        failed = next((c for c in checks if not c[1]), None)
        if failed is None:
            found.append(_entry(t, "exact", reasons, heads.launch(_name(t), None, spec_type), spec_type,
                                "built-in"))
        else:  # said in the note; listed with --near-misses
            missed.append({**_entry(t, None, reasons, None, spec_type, "built-in"), "failed_check": failed[0],
                           "reason": f"{failed[2]} ({failed[3]})", "fix": None})
    ours = _declared(t) | {t["repo_id"].lower()}
    for r in (_row(x) for x in gguf_repos(cat)):
        h = r["arch"].head if r["arch"] else None
        if not h or h.get("embedded") or h.get("kind") != KINDS[method] or r["pk"] == t["pk"]:
            continue
        checks = heads.fit(method, h, t["arch"])
        tier = "lineage" if _declared(r) & ours else "shape"
        reasons = [f"{check}: {detail} ({src})" for check, ok, detail, src in checks]
        failed = next((c for c in checks if not c[1]), None)
        if failed is None:
            found.append(_entry(r, tier, reasons, heads.launch(_name(t), _name(r), spec_type), spec_type))
        else:
            missed.append({**_entry(r, None, reasons, None, spec_type), "failed_check": failed[0],
                           "reason": f"{failed[2]} ({failed[3]})", "fix": None})
    order = {"exact": 0, "lineage": 1, "shape": 2}
    found.sort(key=lambda e: (order.get(e["tier"], 3), -(e["downloads"] or 0), e["repo_id"]))
    if not all_members:
        found = found[:limit]
    return {"target": target_block(t),
            "engine": engine, "method": method, "drafts": found, "near_misses": missed[:limit] if near_misses else [],
            "note": None if found else _none_fits(method, t, missed),
            "summary": {"engines_with_drafts": [], "engines_without_drafts": [], "engines_unknown": [],
                        "cheapest_fix": None},
            "refused": None, "unknown": None}


def _none_fits(method: str, t: dict, missed: list[dict]) -> str:
    """Why nothing fits: for mtp the target's own layers first, then the catalog's heads."""
    heads = f"no GGUF {method} head in the catalog fits {t['repo_id']}"
    own = next((m for m in missed if m["format"] == "built-in"), None)
    return f"{own['reason']}; {heads}" if own else heads


def _entry(r: dict, tier: str | None, reasons: list[str], launch: str | None, spec_type: str,
           fmt: str = "gguf") -> dict:
    """A head (or the target's own MTP layers) in the head answer's entry shape; ``method``: the --spec-type."""
    return {"repo_id": r["repo_id"], "params": None, "downloads": r["downloads"],
            "algorithm": ((r["arch"].head if r["arch"] else None) or {}).get("kind"), "format": fmt, "tier": tier,
            "method": spec_type, "reasons": reasons, "launch": launch}
