"""``indexer query --method eagle|eagle3|dflash|mtp|ngram|all`` and ``indexer check TARGET HEAD``, from the catalog.

On the interactive path like ``query``: stdlib only (no ORM, no transformers). The facts come from the crawl:
``heads`` rows (one per repo with status ``head``) and the target's ``repos`` columns (hidden size, layers, vocab
sizes, MTP layers); the rules are ``engines.heads`` through the engine registry (``Engine.heads``). Lineage is the
base-model chain in ``repos.base_models``: a head is ``lineage`` when its declared models and the target share a
repo of their chains (the root included).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .. import engines as registry
from ..catalog.headrows import HEAD_COLS, base_models, head_rows, target_row
from ..catalog.reader import Reader
from ..catalog.reader import json_value as _json
from ..engines import heads as rules
from ..engines.base import Engine
from ..engines.heads import HeadFacts, TargetShape
from ..engines.setup import Setup, Source, text
from ..errors import EXIT_NOT_FOUND, QueryError
from .ggufheads import gguf_target, hf_engine_refusal, target_block
from .ggufheads import method_query as gguf_method_query
from .lookup import find_repo_id
from .setup import side_source
from .speedup import Options, catalog_facts, head_estimate, with_copies

HEAD_METHODS = tuple(rules.METHOD_ALGORITHMS)  # eagle, eagle3, dflash
MAX_CHAIN = 20  # base-model hops followed (the Hub allows cycles in hand-written cards)

class HeadCatalog:
    """The catalog reads a head answer needs, over the request's :class:`~indexer.catalog.reader.Reader`."""

    def __init__(self, cat: Reader):
        self.cat = cat
        self._chains: dict[str, list[str]] = {}

    def resolve(self, text: str) -> dict:
        """The target's catalog row by repo id or near name, with ``note`` saying what was matched."""
        match = find_repo_id(self.cat.all, text, self.cat.dialect)  # RepoNotFound is a QueryError (exit 3, 404)
        out = target_row(self.cat, match.repo_id)
        out["architectures"] = _json(out["architectures"]) or []
        out["base_models"] = _json(out["base_models"]) or []
        out["note"] = f"{match.asked!r} matched {out['repo_id']}" if match.asked else None
        return out

    def target(self, text: str) -> tuple[dict, TargetShape]:
        """The row and shape of a target a head can attach to; heads and config-less repos are refused."""
        t = self.resolve(text)
        if t["status"] == "head":
            raise QueryError(f"{t['repo_id']} is a speculator head ({t['reason']}), not a target; "
                             f"`indexer check TARGET {t['repo_id']}` explains it against a target")
        if t["hidden_size"] is None and t["num_hidden_layers"] is None:
            why = f"status {t['status']}" + (f" ({t['reason']})" if t["reason"] else "")
            raise QueryError(f"{t['repo_id']} has no config facts in the catalog ({why}); recrawl it with "
                             f"`indexer crawl --model {t['repo_id']}`", EXIT_NOT_FOUND)
        shape = TargetShape(repo_id=t["repo_id"], model_type=t["model_type"], architectures=t["architectures"],
                            hidden_size=t["hidden_size"], num_hidden_layers=t["num_hidden_layers"],
                            vocab_size=t["vocab_size"], vocab_size_transformers=t["vocab_size_transformers"],
                            mtp_layers=t["mtp_layers"], mtp_key=t["mtp_key"], text_config_key=t["text_config_key"],
                            text_model_type=t["text_model_type"])
        return t, shape

    def heads(self, algorithms: tuple[str, ...] | None = None, repo_id: str | None = None
              ) -> tuple[list[HeadFacts], dict]:
        """Head facts (and downloads by id) of the catalog's heads, of some algorithms or one repo."""
        out, downloads = [], {}
        for row in head_rows(self.cat, algorithms, repo_id):
            repo, dl, archs, bases, *facts = row
            f = dict(zip(HEAD_COLS, facts, strict=True))
            f["aux_layer_ids"] = _json(f["aux_layer_ids"])
            out.append(HeadFacts(repo_id=repo, architectures=_json(archs) or [], base_models=_json(bases) or [], **f))
            downloads[repo] = dl
        return out, downloads

    def chain(self, repo_id: str) -> list[str]:
        """``repo_id`` and its base-model ancestors in the catalog (every parent, breadth first)."""
        key = repo_id.lower()
        if key not in self._chains:
            seen, todo = [repo_id], [repo_id]
            while todo and len(seen) < MAX_CHAIN:
                for parent in _json(base_models(self.cat, todo.pop(0))) or []:
                    if isinstance(parent, str) and parent.lower() not in {s.lower() for s in seen}:
                        seen.append(parent)
                        todo.append(parent)
            self._chains[key] = seen
        return self._chains[key]


def _sized(entry: dict, target_params: int | None) -> dict:
    """The draft-entry keys the CLI table and the site read (a head's size is its own config estimate)."""
    p = entry.get("params")
    entry.update(params_source="config" if p is not None else None, params_active=None,
                 ratio=round(p / target_params, 4) if p is not None and target_params else None)
    return entry


def target_info(t: dict, shape: TargetShape, heads_known: int) -> dict:
    """The ``target`` block of a head answer, in the keys the draft answer's block uses."""
    params = t["params"] if t["params"] is not None else t["params_estimate"]
    source = "safetensors" if t["params"] is not None else t["params_estimate_source"]
    return {"repo_id": t["repo_id"], "params": params, "params_source": source, "params_active": None,
            "note": t["note"], "hidden_size": shape.hidden_size, "num_hidden_layers": shape.num_hidden_layers,
            "vocab_size": shape.vocab_size, "vocab_size_transformers": shape.vocab_size_transformers,
            "mtp_layers": shape.mtp_layers, "model_type": shape.model_type,
            "class": f"hidden size {shape.hidden_size}, {shape.num_hidden_layers} layers, vocab {shape.vocab_size}",
            "class_members": heads_known}


def _target_source(cat: Reader, repo_id: str, engine: Engine, opts: Options) -> tuple[dict, Source]:
    """A catalog target's speed facts and where ``engine`` loads it from when it drafts from the target itself
    (n-gram, built-in MTP): as a draft pair's target (a GGUF repo's file, a copy, the convert chain), or by name
    for an engine without a speed model."""
    facts = catalog_facts(cat, repo_id) or {"repo_id": repo_id}
    profile = engine.speed
    if profile is None:
        return facts, Source(repo_id)
    steps = engine.release if engine.name == "llama.cpp" else registry.ENGINES["llama.cpp"].release
    return facts, side_source(with_copies(cat, facts, engine, opts.target_quant), profile.runtime,
                              opts.target_quant, profile.target_quant, steps)


def ngram_query(cat: Reader, target: str, engine: Engine, speed) -> dict:
    """``--method ngram`` where n-gram drafting is not a head-rules engine's (llama-server's ``--spec-type
    ngram-simple``, transformers' ``prompt_lookup_num_tokens``): the target alone, loaded as a draft pair's target
    would be (a GGUF repo's file, a GGUF copy or the convert chain)."""
    g = gguf_target(cat, target)
    if g is not None:
        block = target_block(g)
    else:
        t, shape = HeadCatalog(cat).target(target)
        block = target_info(t, shape, 0)
    repo_id = block["repo_id"]
    opts = speed or Options()
    _, source = _target_source(cat, repo_id, engine, opts)
    name, where = engine.heads.methods["ngram"]
    setup = Setup(engine.name, engine.release, source, None, opts.draft_tokens, "ngram")
    steps = engine.launch(setup)
    entry = {"repo_id": repo_id, "params": None, "downloads": None, "method": name,
             "reasons": [rules.NGRAM_REASON, f"{name}: {where}"], "setup": {**setup.to_dict(), "steps": steps},
             "launch": text(steps)}
    _sized(entry, block["params"])
    return {"target": block, "engine": engine.name, "method": "ngram", "drafts": [entry], "near_misses": [],
            "note": None,
            "summary": {"engines_with_drafts": [], "engines_without_drafts": [], "engines_unknown": [],
                        "cheapest_fix": None},
            "refused": None, "unknown": None}


def own_mtp_query(cat: Reader, target: str, engine: Engine, speed, *, near_misses: bool = False) -> dict:
    """``--method mtp`` where built-in MTP is not a head-rules engine's (transformers' ``generate(use_mtp=True)``):
    the engine's verdict on the target's own MTP layers, and where they fit the setup, its estimate and script."""
    t, shape = HeadCatalog(cat).target(target)
    v = engine.heads.mtp(shape)
    block = target_info(t, shape, 1)
    found, misses, note = [], [], None
    entry = {"repo_id": t["repo_id"], "params": None, "downloads": None, "algorithm": "mtp", "format": "built-in",
             "method": v.method}
    if v.fits:
        opts = speed or Options()
        facts, source = _target_source(cat, t["repo_id"], engine, opts)
        setup = replace(engine.heads.mtp_setup(shape), target=source)
        figures = head_estimate(engine, facts, None, opts, setup.draft_tokens or 1, setup)
        steps = engine.launch(setup)
        found = [{**entry, "tier": "exact", "reasons": v.reasons, "setup": {**setup.to_dict(), "steps": steps},
                  "launch": text(steps), "speedup": figures[0] if figures else None}]
        found[0]["launch"] = (found[0]["speedup"] or {}).get("launch") or found[0]["launch"]
    else:
        note = "; ".join(v.reasons)
        misses = [{**entry, "failed_check": v.failed_check, "reason": v.reasons[0], "reasons": v.reasons[1:],
                   "fix": None}] if near_misses else []
    for e in (*found, *misses):
        _sized(e, block["params"])
    return {"target": block, "engine": engine.name, "method": "mtp", "drafts": found, "near_misses": misses,
            "note": note, "summary": {"engines_with_drafts": [], "engines_without_drafts": [], "engines_unknown": [],
                                      "cheapest_fix": None},
            "refused": None, "unknown": None}


def _not_loading(engine: str, method: str) -> str:
    what = {"ngram": "does no n-gram (prompt lookup) speculation", "mtp": "does not run a target's built-in MTP "
            "layers"}.get(method, "loads no speculator heads")
    heads = registry.ENGINES[engine].heads
    if heads and heads.from_gguf:  # it runs some heads from GGUF files, not this kind
        what = f"runs no {method} heads (only {', '.join(heads)}, from GGUF files)"
    able = [name for name, e in registry.ENGINES.items() if method in e.heads]
    raise QueryError(f"{registry.ENGINE_NAMES[engine]} {what} (--method {method}); "
                     f"choose --engine {' or '.join(able or registry.HEAD_ENGINES)}")


def method_query(cat: Reader, target: str, engine: str, method: str, *, limit: int = 10, near_misses: bool = False,
                 all_members: bool = False, release: str | None = None, speed=None) -> dict:
    """``--method eagle|eagle3|dflash|mtp|ngram`` on one engine, in the JSON shape of the draft answer."""
    heads = registry.ENGINES[engine].heads
    if method not in heads:
        _not_loading(engine, method)
    own_ngram = method == "ngram" and not isinstance(heads, rules.HeadRules)  # not a serving flag of head rules
    if own_ngram and heads.from_gguf:  # llama-server's --spec-type ngram-simple: any target it can load
        return ngram_query(cat, target, registry.ENGINES[engine].at(release), speed)
    if heads.from_gguf:  # heads the engine runs from GGUF files (llama.cpp)

        return gguf_method_query(cat, target, engine, method, limit=limit, near_misses=near_misses,
                                 all_members=all_members)

    g = gguf_target(cat, target)
    if g is not None:  # a GGUF repo: this engine loads Hugging Face checkpoints; say who runs the GGUF
        why = hf_engine_refusal(engine, g, method)
        return {"target": target_block(g), "engine": engine, "method": method, "drafts": [], "near_misses": [],
                "note": why, "summary": {"engines_with_drafts": [], "engines_without_drafts": [],
                                         "engines_unknown": [], "cheapest_fix": None},
                "refused": why, "unknown": None}
    if own_ngram:  # transformers' prompt lookup
        return ngram_query(cat, target, registry.ENGINES[engine].at(release), speed)
    if method == "mtp" and not isinstance(heads, rules.HeadRules):  # transformers' generate(use_mtp=True)
        return own_mtp_query(cat, target, registry.ENGINES[engine].at(release), speed, near_misses=near_misses)
    hc = HeadCatalog(cat)
    t, shape = hc.target(target)
    misses: list[dict] = []
    note = None
    if method == "ngram":
        found = [rules.ngram(t["repo_id"], engine, release)]
        known = 0
    elif method == "mtp":
        v = rules.mtp(shape, engine, release)
        known = 1
        if v.fits:
            found = [{"repo_id": t["repo_id"], "params": None, "downloads": None, "algorithm": "mtp",
                      "format": "built-in", "tier": "exact", "method": v.method, "reasons": v.reasons,
                      "launch": rules.mtp_launch(shape, engine, release)}]
        else:
            found = []
            note = "; ".join(v.reasons)
            misses = [{"repo_id": t["repo_id"], "params": None, "downloads": None, "algorithm": "mtp",
                       "format": "built-in", "failed_check": v.failed_check, "reason": v.reasons[0],
                       "reasons": v.reasons[1:], "fix": None}] if near_misses else []
    else:
        candidates, downloads = hc.heads(rules.METHOD_ALGORITHMS[method])
        known = len(candidates)
        found, missed = rules.fitting_heads(shape, candidates, engine, method, target_lineage=hc.chain(t["repo_id"]),
                                            lineage_of=hc.chain, downloads=downloads, release=release)
        if not all_members:
            found = found[:limit]
        misses = missed[:limit] if near_misses else []
    tp = target_info(t, shape, known)["params"]
    for e in (*found, *misses):
        _sized(e, tp)
    if method != "ngram" and found:
        estimate = _Estimator(cat, shape, speed, release)
        facts = {} if method == "mtp" else {h.repo_id: h for h in candidates}
        for e in found:
            e["speedup"] = estimate.head(engine, None if method == "mtp" else facts[e["repo_id"]])
            e["launch"] = (e["speedup"] or {}).get("launch") or e["launch"]  # the estimated setup's command
    return {"target": target_info(t, shape, known), "engine": engine, "method": method,
            "drafts": found, "near_misses": misses, "note": note,
            "summary": {"engines_with_drafts": [], "engines_without_drafts": [], "engines_unknown": [],
                        "cheapest_fix": None},
            "refused": None, "unknown": None}


def overview_all(cat: Reader, target: str, drafts: Callable[[str, str], list[dict]], *, limit: int = 3,
                 speed=None) -> dict:
    """``--method all``: per engine, built-in MTP, the fitting heads per method, draft models and n-gram, each with
    its expected speed-up where the speed model has one, and the ``best`` of them on the first device.

    ``drafts(repo_id, engine)`` gives the draft models (the answer API's ranking on the same reader); ``speed``: the
    speed question (answer/speedup.py ``Options``; None: the engines' reference devices)."""
    g = gguf_target(cat, target)
    if g is not None:
        return _overview_gguf(cat, g, drafts, limit)
    hc = HeadCatalog(cat)
    t, shape = hc.target(target)
    candidates, downloads = hc.heads()
    facts = {h.repo_id: h for h in candidates}
    out: dict[str, Any] = {"target": target_info(t, shape, len(candidates)), "method": "all", "engines": {}}
    estimate = _Estimator(cat, shape, speed)
    for engine, entry in registry.ENGINES.items():
        view: dict = {"engine": engine, "name": registry.ENGINE_NAMES[engine]}
        if isinstance(entry.heads, rules.HeadRules):
            ov = rules.overview(shape, candidates, engine, target_lineage=hc.chain(t["repo_id"]),
                                lineage_of=hc.chain, downloads=downloads)
            view.update(mtp=ov["mtp"], heads={m: hs[:limit] for m, hs in ov["heads"].items()}, ngram=ov["ngram"])
            if view["mtp"]["fits"]:
                view["mtp"]["speedup"] = estimate.head(engine, None)
                view["mtp"]["launch"] = (view["mtp"]["speedup"] or {}).get("launch") or view["mtp"]["launch"]
            for hs in view["heads"].values():
                for h in hs:
                    h["speedup"] = estimate.head(engine, facts[h["repo_id"]])
                    h["launch"] = (h["speedup"] or {}).get("launch") or h["launch"]
        else:
            ngram = _own_ngram(cat, t["repo_id"], entry, speed)
            mtp = _own_mtp(cat, t["repo_id"], entry, speed)
            heads = [m for m in entry.heads if m != "ngram"]
            view.update(mtp=mtp, heads=None, ngram=ngram,
                        note="runs speculator heads from GGUF files only: ask "
                        f"--method {'|'.join(heads)} --engine {engine} with a GGUF repo as the target"
                        if entry.heads.from_gguf and heads else "loads no speculator heads")
        try:
            view["drafts"] = drafts(t["repo_id"], engine)
        except QueryError as e:
            view["drafts"], view["drafts_error"] = [], e.message
        view["best"] = _best_way(view)
        out["engines"][engine] = view
    return out


def _own_ngram(cat: Reader, target: str, entry: Engine, speed) -> dict | None:
    """The n-gram entry of an engine whose n-gram drafting is its own (``ngram_query``), None where it has none."""
    if "ngram" not in entry.heads or isinstance(entry.heads, rules.HeadRules):
        return None
    return ngram_query(cat, target, entry, speed)["drafts"][0]


def _own_mtp(cat: Reader, target: str, entry: Engine, speed) -> dict | None:
    """The built-in MTP line of an engine whose MTP is its own (``own_mtp_query``), None where it has none."""
    if "mtp" not in entry.heads or isinstance(entry.heads, rules.HeadRules) or entry.heads.from_gguf:
        return None
    v = entry.heads.mtp(HeadCatalog(cat).target(target)[1])
    if not v.fits:
        return {"fits": False, "reasons": v.reasons, "launch": None}
    d = own_mtp_query(cat, target, entry, speed)["drafts"][0]
    return {"fits": True, "reasons": d["reasons"], "launch": d["launch"], "speedup": d["speedup"]}


def _overview_gguf(cat: Reader, g: dict, drafts: Callable[[str, str], list[dict]], limit: int) -> dict:
    """``--method all`` for a GGUF repo, from its header facts: the engines that run heads from GGUF files
    (llama.cpp, Ollama) give its MTP layers and the catalog's GGUF heads; the others say they load Hugging Face
    checkpoints; every engine's draft models as for any target."""
    views: dict[str, dict] = {}
    out = {"target": target_block(g), "method": "all", "engines": views}
    for engine, entry in registry.ENGINES.items():
        view: dict = {"engine": engine, "name": registry.ENGINE_NAMES[engine], "ngram": None}
        if entry.heads.from_gguf:
            heads: dict = {}
            mtp = None
            view["ngram"] = _own_ngram(cat, g["repo_id"], entry, None)
            for method in (m for m in entry.heads if m != "ngram"):
                answer = gguf_method_query(cat, g["repo_id"], engine, method, limit=limit, near_misses=True)
                own = [e for e in answer["drafts"] if e["format"] == "built-in"]
                if method == "mtp":
                    missed = [m for m in answer["near_misses"] if m["format"] == "built-in"]
                    mtp = ({"fits": True, "launch": own[0]["launch"], "reasons": own[0]["reasons"]} if own else
                           {"fits": False, "reasons": [missed[0]["reason"] if missed else "no MTP layers"]})
                found = [e for e in answer["drafts"] if e["format"] != "built-in"][:limit]
                if found or method != "mtp":  # no MTP drafter: the mtp line above says it once
                    heads[method] = found
            view.update(mtp=mtp, heads=heads)
        elif entry.heads:
            view.update(mtp=None, heads=None, note=hf_engine_refusal(engine, g, "mtp").split("; this")[0])
        else:
            view.update(mtp=None, heads=None, note="loads no speculator heads")
        try:
            view["drafts"] = drafts(g["repo_id"], engine)
        except QueryError as e:
            view["drafts"], view["drafts_error"] = [], e.message
        view["best"] = _best_way(view)
        views[engine] = view
    return out


class _Estimator:
    """The target's speed facts, read once, and the first device's estimate of a head or MTP on an engine."""

    def __init__(self, cat: Reader, shape: TargetShape, speed, release: str | None = None):
        self.cat, self.shape, self.speed, self.release = cat, shape, speed, release
        self._facts: dict | None = None

    def head(self, engine: str, head: HeadFacts | None) -> dict | None:
        """``head`` None: the target's built-in MTP."""
        if registry.ENGINES[engine].speed is None:
            return None

        if self._facts is None:
            self._facts = catalog_facts(self.cat, self.shape.repo_id)
        tokens = rules.launch_tokens(head, self.shape, engine, self.release)
        figures = head_estimate(registry.ENGINES[engine].at(self.release), self._facts, head, self.speed or Options(),
                                tokens,
                                rules.setup(head, self.shape, engine, self.release))
        return figures[0] if figures else None


def _best_way(view: dict) -> dict | None:
    """The way to speculate with the highest estimate on the first device: MTP, a head or the best draft model."""
    ways = []
    if view.get("mtp") and view["mtp"].get("fits"):
        ways.append(("mtp", None, view["mtp"].get("speedup")))
    for method, hs in (view.get("heads") or {}).items():
        ways += [(method, h["repo_id"], h.get("speedup")) for h in hs]
    if view.get("drafts"):
        ways.append(("draft", view["drafts"][0]["repo_id"], view["drafts"][0].get("speedup")))
    known = [w for w in ways if w[2] and w[2].get("estimate") is not None]
    if not known:
        return None
    method, repo_id, speed = max(known, key=lambda w: w[2]["estimate"])
    return {"method": method, "repo_id": repo_id, "estimate": speed["estimate"], "hardware": speed["hardware"],
            "compared": len(known)}


def explain_head(cat: Reader, target: str, head: str, releases: dict | None = None) -> dict | None:
    """``indexer check TARGET HEAD`` when HEAD is a catalog head: every check, the lineage, a verdict per engine.
    None when HEAD is not a head in the catalog (the draft-model check answers then)."""
    hc = HeadCatalog(cat)
    try:
        h = hc.resolve(head)
    except QueryError:
        return None
    if h["status"] != "head":
        return None
    facts, _ = hc.heads(repo_id=h["repo_id"])
    if not facts:
        return None
    t, shape = hc.target(target)
    lineage = {"target_lineage": hc.chain(t["repo_id"]),
               "head_lineage": [i for d in facts[0].declared_for for i in hc.chain(d)]}
    out = rules.explain(facts[0], shape, releases, **lineage)
    out["lineage"] = lineage
    out["declared_for"] = facts[0].declared_for
    out["kind"] = "head"
    return out
