"""Speculator heads (EAGLE, EAGLE-3, DFlash, DSpark, P-EAGLE) and built-in MTP: the public API.

``fit(head, target, engine)``, ``mtp(target, engine)`` and the launch commands dispatch to the engine's
:class:`~indexer.engines.headrules.HeadRules` (``Engine.heads`` in the registry: SGLang's in
``engines/sglang.py``, vLLM's in ``engines/vllm.py``); the facts come from :mod:`indexer.engines.headfacts`.
Heads as GGUF files have their own rule class (``GGUFHeadRules``: llama.cpp, Ollama), asked by answer/ggufheads.py.
Ranking, the JSON entries and ``--method all`` are here. On the query path: stdlib only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from . import ENGINES, HEAD_ENGINES
from .headfacts import (  # noqa: F401  (re-exported: the crawler, the imitation and the answer layer read them here)
    HEAD_ARCHS,
    HEAD_MODEL_TYPES,
    MTP_FIXED_LAYERS,
    SPECULATORS_ARCHS,
    base_models_from_tags,
    estimate_params,
    head_candidate,
    is_head_config,
    parse_head,
    target_shape,
)
from .headrules import (  # noqa: F401  (re-exported: the public names of the head API)
    ALGORITHMS,
    FORMATS,
    METHOD_ALGORITHMS,
    METHODS,
    MTP_LAYER_KEYS,
    NGRAM_REASON,
    TIERS,
    HeadFacts,
    HeadRules,
    Heads,
    HeadVerdict,
    TargetShape,
    tier,
)


def rules_of(engine: str, release: str | None = None) -> HeadRules:
    """The engine's head rules at ``release`` (default: its newest), with one clear error for an engine that
    loads no heads."""
    if engine not in HEAD_ENGINES:
        raise ValueError(f"engine must be one of {HEAD_ENGINES}, not {engine!r}")
    return _rules(ENGINES[engine].at(release).heads)


def _rules(heads: Heads) -> HeadRules:
    """An engine's ``heads`` where it loads heads as Hugging Face checkpoints (``HEAD_ENGINES``): its HeadRules."""
    assert isinstance(heads, HeadRules)
    return heads


def loads(head: HeadFacts, engine: str, release: str | None = None) -> tuple[bool, str, str, str | None]:
    """Whether the engine loads this head's format at all: (ok, detail, source at that release, engine method)."""
    rules = rules_of(engine, release)
    ok, detail, source, method = rules.loads(head)
    return ok, detail, rules.cite(source), method


def aux_limit(head: HeadFacts, engine: str, layers: int) -> tuple[int, int, str] | None:
    """Allowed (lowest, highest) aux layer id on this engine for a target of ``layers`` layers, with the source
    (the engines index differently: see each engine's ``eagle_aux_limit``)."""
    return rules_of(engine).aux_limit(head, layers)


def fit(head: HeadFacts, target: TargetShape, engine: str, *, target_lineage: Iterable[str] = (),
        head_lineage: Iterable[str] = (), release: str | None = None) -> HeadVerdict:
    """Whether ``head`` loads and runs on ``target`` under ``engine`` (sglang / vllm), and its tier."""
    return rules_of(engine, release).fit(head, target, target_lineage=target_lineage, head_lineage=head_lineage)


def mtp(target: TargetShape, engine: str, release: str | None = None) -> HeadVerdict:
    """Built-in multi-token prediction: the target is its own speculator (SGLang NEXTN/EAGLE, vLLM mtp)."""
    return rules_of(engine, release).mtp(target)


def launch(head: HeadFacts, target_id: str, engine: str, release: str | None = None) -> str:
    """The serve command in each engine's documented syntax."""
    return rules_of(engine, release).launch(head, target_id)


def mtp_launch(target: TargetShape, engine: str, release: str | None = None) -> str:
    """The serve command for the target's built-in MTP."""
    return rules_of(engine, release).mtp_launch(target)


def launch_tokens(head: HeadFacts | None, target: TargetShape, engine: str, release: str | None = None) -> int:
    """The draft tokens per round the launch command runs (``head`` None: the target's MTP)."""
    return rules_of(engine, release).launch_tokens(head, target)


def setup(head: HeadFacts | None, target: TargetShape, engine: str, release: str | None = None):
    """The Setup a head's launch command is made from (``head`` None: the target's built-in MTP)."""
    r = rules_of(engine, release)
    return r.mtp_setup(target) if head is None else r.head_setup(head, target.repo_id)


def ngram_launch(target_id: str, engine: str, release: str | None = None) -> str:
    """N-gram (prompt lookup) needs no draft: the engine's serve command for it."""
    return rules_of(engine, release).ngram_launch(target_id)


def ngram(target_id: str, engine: str, release: str | None = None) -> dict:
    """``--method ngram``: always available, needs nothing (says so), with its launch command."""
    return rules_of(engine, release).ngram(target_id)


def rank_key(verdict: HeadVerdict, downloads: int | None = None) -> tuple:
    """Ranking of fitting heads: exact, then lineage, then shape; more downloads first within a tier."""
    return (TIERS.index(verdict.tier) if verdict.tier in TIERS else len(TIERS), -(downloads or 0))


def head_entry(head: HeadFacts, verdict: HeadVerdict, target_id: str, downloads: int | None = None,
               release: str | None = None) -> dict:
    """A fitting head in the JSON shape of a draft model entry (``drafts[]``: repo_id, reasons, launch)."""
    reasons = ([verdict.warning] if verdict.warning else []) + verdict.reasons
    return {"repo_id": head.repo_id, "params": head.params, "downloads": downloads, "algorithm": head.algorithm,
            "format": head.format, "tier": verdict.tier, "method": verdict.method, "reasons": reasons,
            "launch": launch(head, target_id, verdict.engine, release)}


def head_miss(head: HeadFacts, verdict: HeadVerdict, downloads: int | None = None) -> dict:
    """A near miss in the shape of a draft near miss: the failing check and its words."""
    return {"repo_id": head.repo_id, "params": head.params, "downloads": downloads, "algorithm": head.algorithm,
            "format": head.format, "failed_check": verdict.failed_check, "reason": verdict.reasons[0],
            "reasons": verdict.reasons[1:], "fix": None}


def fitting_heads(target: TargetShape, candidates: Iterable[HeadFacts], engine: str, method: str, *,
                  target_lineage: Iterable[str] = (), lineage_of=None, downloads: dict | None = None,
                  release: str | None = None) -> tuple[list[dict], list[dict]]:
    """(fits, near misses) among ``candidates`` for ``--method`` (eagle / eagle3 / dflash), ranked.

    ``lineage_of(repo_id) -> ids`` gives a head's declared models' base-model chain; ``downloads`` maps ids."""
    algorithms = METHOD_ALGORITHMS[method]
    target_lineage = list(target_lineage)
    downloads = downloads or {}
    fits, misses = [], []
    for head in candidates:
        if head.algorithm not in algorithms:
            continue
        head_lineage = [i for d in head.declared_for for i in (lineage_of(d) if lineage_of else ())]
        v = fit(head, target, engine, target_lineage=target_lineage, head_lineage=head_lineage, release=release)
        dl = downloads.get(head.repo_id)
        if v.fits:
            fits.append((rank_key(v, dl), head.repo_id, head_entry(head, v, target.repo_id, dl, release)))
        elif v.failed_check != "format":
            misses.append((-(dl or 0), head.repo_id, head_miss(head, v, dl)))
    return [e for *_, e in sorted(fits, key=lambda x: x[:2])], [e for *_, e in sorted(misses, key=lambda x: x[:2])]


def overview(target: TargetShape, candidates: Iterable[HeadFacts], engine: str, **kw) -> dict:
    """``--method all`` for one engine, without draft models (the draft query adds those): built-in MTP, fitting
    heads per method, n-gram."""
    candidates = list(candidates)
    m = mtp(target, engine)
    out: dict[str, Any] = {"engine": engine,
           "mtp": {"fits": m.fits, "reasons": m.reasons, "launch": mtp_launch(target, engine) if m.fits else None},
           "heads": {}, "ngram": ngram(target.repo_id, engine)}
    for method in METHOD_ALGORITHMS:
        out["heads"][method] = fitting_heads(target, candidates, engine, method, **kw)[0]
    return out


def explain(head: HeadFacts, target: TargetShape, releases: dict | None = None, **lineage) -> dict:
    """``indexer check TARGET HEAD`` material: every shape check, the lineage and the verdict per engine (each at
    its release in ``releases``, default its newest; ``version`` names it)."""
    out = {"head": head.to_dict(), "target": target.to_dict(), "engines": {}}
    for engine in HEAD_ENGINES:
        release = (releases or {}).get(engine)
        v = fit(head, target, engine, release=release, **lineage)
        out["engines"][engine] = {**v.to_dict(), "version": ENGINES[engine].at(release).release,
                                  "launch": launch(head, target.repo_id, engine, release) if v.fits else None}
    return out




# What an engine-registry entry references, per engine and --method: the engine's own name for the method,
# the functions that decide and launch it, and where the engine defines it (each engine's HeadRules.methods).
_FIT = {"mtp": mtp, "ngram": None}
_LAUNCH = {"mtp": mtp_launch, "ngram": ngram_launch}
HEAD_RULES = {
    name: {method: {"engine_method": engine_method, "fit": _FIT.get(method, fit),
                    "launch": _LAUNCH.get(method, launch), "source": source}
           for method, (engine_method, source) in _rules(ENGINES[name].heads).methods.items()}
    for name in HEAD_ENGINES
}
