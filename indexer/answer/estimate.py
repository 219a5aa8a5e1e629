"""Stage 3 of a draft-model answer: for each judged draft that runs, one setup (:mod:`indexer.answer.setup`: the
engine at its release, the device, where each side comes from and at which quantization, the draft tokens), the
speed model's estimate of that setup (:mod:`indexer.answer.speedup`), and the launch command printed from the same
setup, so that the estimate and the command cannot disagree.
"""

from __future__ import annotations

from copy import copy

from .. import deferred
from ..catalog.measurements import rows as measurements
from ..catalog.reader import Reader, json_value
from ..catalog.repofacts import added_tokens, gguf_files
from ..speed.facts import quant_from_facts, shape_from_facts
from ..speed.model import Shape
from .scope import Scope
from .setup import choose, copies, copies_among, launch
from .speedup import (
    Options,
    agreement_share,
    catalog_facts,
    estimate,
    gguf_facts,
    gguf_quant,
    measured_alpha,
    with_launch,
    writes_thinking,
)
from .target import hub_gguf
from .verdict import Judged


def add(cat: Reader, s: Scope, judged: list[Judged], speed: Options | None) -> None:
    """Each draft's ``speedup`` on the first device asked (or the engine's reference device), and its ``setup`` and
    ``launch``: the estimated setup's; where the device asked runs no such engine, the setup on the engine's own
    devices; an engine without a speed model launches the pair by name."""
    profile = s.engine.speed
    if profile is None:
        for j in judged:
            j.launch = launch(s.name, s.target.gguf_file or s.t["repo_id"], _launch_name(cat, s, j))
        return
    opts = speed or Options()
    target = target_facts(cat, s, speed)
    copies_of = _draft_copies(cat, s, judged, speed)
    files_of = gguf_files(cat, [j.member.pk for j in judged if gguf_quant(j.member.gguf) is not None]) if (
        opts.draft_quant is not None) else {}  # a GGUF draft's files: its file at the type asked (answer/setup.py)
    found: list[dict] | None = None  # the target's measurements (indexer measure), read once
    added = added_tokens(cat, sorted({j.member.tokenizer_id for j in judged if j.member.tokenizer_id is not None})
                         ) if target.get("reasons") else {}  # whether a draft reasons matters for one that does
    for j in judged:
        draft = draft_facts(s, j, copies_of)
        if j.member.tokenizer_id in added:
            draft["reasons"] = writes_thinking(added[j.member.tokenizer_id])
        if j.member.pk in files_of:
            draft["files"] = files_of[j.member.pk]
        measured = None
        if opts.measured:
            if found is None:
                found = measurements(cat, s.t["repo_id"], None)
            if found:
                measured = measured_alpha([m for m in found if m["draft"] == j.member.repo_id], opts)
        figures = estimate(s.engine, target, draft, opts, agreement_share({"agreement": j.agreement}),
                           first_only=True, measured=measured)
        figure = figures[0] if figures else None
        own = None
        if figure is not None and "launch" not in figure and opts.device is not None:
            own = _on_own_devices(s, target, draft, opts, j, measured)  # the device asked runs no such engine
        if figure is not None and "launch" in figure:
            j.setup, j.launch = figure.pop("setup"), figure.pop("launch")
        elif own is not None:
            j.setup, j.launch = own["setup"], own["launch"]
        else:
            chosen = with_launch(choose(s.engine, profile, None, target, draft, speed))
            j.setup, j.launch = chosen["setup"], chosen["launch"]
        j.speedup = figure


def _on_own_devices(s: Scope, target: dict, draft: dict, opts: Options, j: Judged, measured) -> dict | None:
    """The estimated setup of the engine's own first device, for a device asked that runs no such engine: the
    command printed beside "not on this device" is one whose speed-up the answer on that device would print."""
    own = copy(opts)
    own.device = None
    figures = estimate(s.engine, target, draft, own, agreement_share({"agreement": j.agreement}), first_only=True,
                       measured=measured)
    return figures[0] if figures and "launch" in figures[0] else None


def draft_facts(s: Scope, j: Judged, copies_of: dict[str, list[dict]]) -> dict:
    """A draft's speed facts from its catalog row: shape, quantization, where it comes from, its relation."""
    m = j.member
    bases = json_value(m.base_models) or []
    speed = (json_value(m.arch) or {}).get("speed")
    tag = gguf_quant(m.gguf)
    draft = {"shape": shape_from_facts(speed, m.params, m.params_active, m.repo_id),
             "quant": quant_from_facts(speed, tag), "kind": "gguf" if tag is not None else "hf", "tag": tag,
             "family": m.family, "author": m.author, "bases": bases, "repo_id": m.repo_id,
             "chat": None if m.is_chat is None else bool(m.is_chat)}
    if s.keys.lineage_id is not None and m.lineage_id == s.keys.lineage_id:
        draft["bases"] = [*bases, s.t["repo_id"]]  # a shared lineage root: siblings
    if copies_of.get(m.repo_id):
        draft["copies"] = copies_of[m.repo_id]
    return draft


def target_facts(cat: Reader, s: Scope, speed: Options | None) -> dict:
    """The target's speed facts, with where it can come from: a local GGUF file or directory as it is, a catalog
    repo or one of its copies (answer/setup.py) where the engine would load a copy or convert."""
    t = s.t
    if s.target.gguf_file and t.get("pk", -1) == -1:  # a local file (a Hub one is REPO:QUANT)
        try:
            file_type = deferred.gguf_file.read_gguf(s.target.gguf_file).file_type
        except Exception:  # noqa: BLE001 - resolve_target read it already; unreadable now: no type
            file_type = None
        facts = gguf_facts(s.target.gguf_file, file_type)
        return {**facts, "family": t.get("family"), "author": t.get("author")}
    local = t.get("pk", -1) == -1
    facts = catalog_facts(cat, t["repo_id"]) if not local else {}
    if not facts.get("shape") and t["params"]:
        facts = {"shape": Shape(params=int(t["params"]), active=t.get("params_active")),
                 "quant": facts.get("quant"), "bases": [], "kind": facts.get("kind"), "tag": facts.get("tag")}
    facts.update({"family": t.get("family"), "author": t.get("author"), "repo_id": t["repo_id"]})
    if local:
        facts["kind"] = "dir"
    elif _wants_copies(s, speed):
        facts["copies"] = copies(cat, t["pk"], t["repo_id"], s.name)
    return facts


def _draft_copies(cat: Reader, s: Scope, judged: list[Judged], speed: Options | None) -> dict[str, list[dict]]:
    """Each HF draft's copies the engine could load in its place (answer/setup.py), read at once."""
    hf = [j.member for j in judged if j.member.tokenizer_id is not None or not s.engine.gguf_classes]
    if not (_wants_copies(s, speed, draft=True) and hf):
        return {}
    found = copies_among(cat, hf, s.class_ids + s.degraded_ids)
    return {m.repo_id: found.get(m.repo_id, []) for m in hf}


def _wants_copies(s: Scope, speed: Options | None, draft: bool = False) -> bool:
    """Whether a copy could change the setup: the engine loads GGUF or MLX files, or a quantization was asked."""
    profile = s.engine.speed
    asked = speed is not None and (speed.draft_quant if draft else speed.target_quant) is not None
    return profile is not None and (profile.runtime in ("ggml", "mlx") or profile.gguf is not None or asked)


def _launch_name(cat: Reader, s: Scope, j: Judged) -> str:
    """A GGUF repo draft launches as ``REPO:QUANT`` (llama-server -hfd); others by their repo id."""
    m = j.member
    if m.tokenizer_id is None and s.engine.gguf_classes:
        return hub_gguf(cat, m.pk, m.repo_id) or m.repo_id
    return m.repo_id
