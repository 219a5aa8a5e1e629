"""Stage 3 of an answer: the expected speed-up of a pair that runs, per engine, on the user's hardware.

The facts come from what the catalog (or a local directory, or a GGUF header) knows of each side: its size and
shape from config.json or the Hub's parameter count, its declared quantization, family, author and base models
(the draft's relation to the target). The model is :mod:`indexer.speed.model`; this module only gathers and words.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from .. import deferred
from ..catalog.measurements import rows, summary
from ..catalog.reader import Reader, json_value
from ..catalog.repofacts import gguf_files, speed_row
from ..engines import ENGINES
from ..engines import heads as rules
from ..engines.base import Engine
from ..engines.heads import HeadFacts, TargetShape
from ..engines.setup import DIR, FILE, GGUF, HF, noted, text
from ..errors import BadInput, CatalogError
from ..speed import hardware as hw
from ..speed import model, quant
from ..speed.facts import quant_from_facts, shape_from_facts
from ..vocab.params import estimate_from_name
from .lookup import local_gguf_arg, looks_like_dir
from .members import size_not_a_draft
from .setup import RUNTIME_FAMILIES, choose, copies, gguf_quant, side_source
from .sides import is_local

DEFAULT_HARDWARE = {  # the reference device an engine's drafts are ranked on when no --hardware is given
    model.SERVING: "H100 SXM", model.EAGER: "RTX 4090", model.GGML: "RTX 4090", model.MLX: "M4 Max"}


class Options:
    """The user's speed question: devices, task, quantization overrides and a fixed draft-token count."""

    def __init__(self, hardware: str | None = None, bandwidth: float | None = None, task: str = model.DEFAULT_TASK,
                 target_quant: str | None = None, draft_quant: str | None = None, draft_tokens: int | None = None,
                 measured: bool = True, device_kind: str | None = None):
        device = hw.lookup(hardware) if hardware else None
        self.hardware_note = hw.ambiguity(hardware) if hardware else None  # "H100 SXM (also: H100 PCIe)"
        if bandwidth is not None:
            device = hw.custom(bandwidth, device, device_kind)
        elif device_kind is not None:

            raise BadInput("--device-kind describes a device given by --bandwidth GB/s; a named --hardware has its "
                           "own kind (`indexer hardware`)")
        self.device = device  # None: the reference devices
        if task not in model.TASKS:

            raise BadInput(f"unknown task {task!r}; choose one of {', '.join(model.TASKS)}")
        self.task = task
        self.target_quant = quant.lookup(target_quant) if target_quant else None
        self.draft_quant = quant.lookup(draft_quant) if draft_quant else None
        self.draft_tokens = draft_tokens
        self.measured = measured  # the pair's measurements (indexer measure) take the acceptance prior's place

    def devices_for(self, engine: Engine, gguf: bool = False) -> list[hw.Hardware]:
        """The device asked for, else the reference devices of the kinds this engine runs on, the device of the
        runtime that runs the pair (``gguf``: a pair with a GGUF file) first. A kind where it runs only the other
        kind of pair stays listed (LM Studio off a Mac: GGUF only), so its estimate says why there is none."""
        entry = engine
        if self.device is not None:
            return [self.device]
        runs = entry.device_kinds(gguf)
        if not runs:
            return []
        profile = entry.profile_on(runs[0], gguf)
        assert profile is not None  # runs[0] is a kind it runs such a pair on
        first = DEFAULT_HARDWARE[profile.runtime]
        names = [first, *(n for n in hw.REFERENCE if n != first)]
        kinds = entry.device_kinds(None)
        return [hw.lookup(n) for n in names if hw.lookup(n).kind in kinds]


def catalog_facts(cat, repo_id: str) -> dict:
    """A catalog repo's speed facts: shape, declared quantization, family, author and base models (one query; the
    config's part was derived by ``compute`` into ``engine_facts.arch``)."""
    row = speed_row(cat, repo_id)
    if row is None:
        return {}
    params, estimate, active, family, author, bases, rid, arch, gguf, pk, is_chat, added = row
    speed = (json_value(arch) or {}).get("speed") if arch else None
    tag = gguf_quant(gguf)
    return {"shape": shape_from_facts(speed, params or estimate, active, rid), "gguf": tag is not None,
            "quant": quant_from_facts(speed, tag), "kind": GGUF if tag is not None else HF, "tag": tag, "pk": pk,
            "family": family, "author": author, "bases": json_value(bases) or [], "repo_id": rid,
            "files": gguf_files(cat, [pk]).get(pk, []) if tag is not None else [],
            "chat": None if is_chat is None else bool(is_chat), "reasons": writes_thinking(json_value(added))}


THINKING_TOKENS = ("<think>", "</think>")  # QwQ, Qwen3 and DeepSeek-R1's distills add them to their tokenizers


def writes_thinking(added_tokens) -> bool | None:
    """Whether a tokenizer's added tokens (``tokenizers.added_tokens``: {id, content} or strings) delimit thinking
    traces, the text a reasoning model writes before its answer (None: its added tokens are unknown)."""
    if not isinstance(added_tokens, list):
        return None
    contents = {t.get("content") if isinstance(t, dict) else t for t in added_tokens}
    return any(token in contents for token in THINKING_TOKENS)


def tuned_apart(t: dict, d: dict) -> str | None:
    """What sets the draft's tuning apart from the target's (``model.tuning``), from the catalog's facts of each."""
    return model.tuning(t.get("chat"), d.get("chat"), t.get("reasons"), d.get("reasons"))


def arch_facts(result: dict, role: str, name: str) -> dict:
    """A local side's speed facts, from the architecture facts the check derived from its config.json."""
    arch = (result.get("details") or {}).get("architecture", {}).get(role) or {}
    speed = arch.get("speed")
    return {"shape": shape_from_facts(speed, None, None, name), "quant": quant_from_facts(speed), "family": None,
            "author": None, "bases": [], "repo_id": name, "kind": DIR}


def gguf_facts(path: str, file_type: str | None) -> dict:
    """A GGUF file's speed facts: its file type, and its size as parameters at that type's bits per weight."""
    q = quant.from_gguf_file_type(file_type)
    try:
        size = Path(path).stat().st_size
    except OSError:
        size = 0

    named = estimate_from_name(Path(path).name) or estimate_from_name(Path(path).parent.name)
    shape: model.Shape | None
    if named is not None:  # the size its name gives (a file's own size is its bytes at the type, the same)
        shape = model.Shape(params=int(named.total), active=named.active)
    else:
        shape = model.Shape(params=int(size * 8 / q.bpw)) if q and size > 1e7 else None
    return {"shape": shape, "quant": q, "family": None, "author": None, "bases": [], "repo_id": path, "gguf": True,
            "kind": FILE}


def relation(t: dict, d: dict) -> str:
    """sibling: the same lineage (one names the other, or both a common base) or same author and family;
    family: the same family, or a side whose lineage is unknown (a local file); other: anything else."""
    t_line = {t.get("repo_id"), *(t.get("bases") or [])} - {None}
    d_line = {d.get("repo_id"), *(d.get("bases") or [])} - {None}
    if t_line & d_line:
        return model.SIBLING
    if t.get("family") and t.get("family") == d.get("family"):
        return model.SIBLING if t.get("author") and t.get("author") == d.get("author") else model.FAMILY
    if t.get("author") and t.get("author") == d.get("author"):
        return model.FAMILY
    if not (t.get("family") or t.get("author")) or not (d.get("family") or d.get("author")):
        return model.FAMILY  # a local file or directory: its lineage is unknown, the shared vocabulary says a kin
    return model.OTHER


def _quant_for(declared: quant.Quant | None, override: quant.Quant | None, default: str, runtime: str) -> quant.Quant:
    families = RUNTIME_FAMILIES[runtime]
    if override is not None:
        return quant.for_runtime(override, families) or override
    if declared is not None:
        declared = quant.for_runtime(declared, families)
    return declared if declared is not None else quant.lookup(default)


def estimate(engine: Engine, t: dict, d: dict, opts: Options, agreement: float = 1.0, *,
             first_only: bool = False, measured: tuple[float, float] | None = None) -> list[dict]:
    """One estimate per device for a pair that runs on ``engine`` (at its release; its ``speedup`` JSON objects,
    each with the ``setup`` it estimates and its ``launch``); ``first_only``: the first device's (a query ranks on
    it); ``measured``: the pair's measured (α, runs) on the task."""
    def one(setup: model.Setup, ts: model.Shape, ds: model.Shape) -> model.Estimate:
        return model.estimate(ts, ds, setup, relation=relation(t, d), agreement=agreement, measured=measured,
                              tuned_apart=tuned_apart(t, d))

    return _per_device(engine, t, d, opts, one, first_only)


def head_estimate(engine: Engine, t: dict, head, opts: Options, draft_tokens: int, setup=None) -> list[dict]:
    """One estimate per device for a speculator head (its ``engines.heads.HeadFacts``) or, ``head`` None, the
    target's MTP layers, at the ``draft_tokens`` its launch command runs; a method without an acceptance figure gets
    a reason, not a number. With ``setup`` (the head rules' ``head_setup`` / ``mtp_setup``) each figure carries the
    setup it estimates, at the quantizations chosen for the device, and its launch command."""
    ts = t.get("shape")
    if head is None:
        method, shape = "mtp", model.mtp_shape(ts) if ts is not None else None
    else:
        method = head.algorithm
        shape = model.head_shape(head.params, head.hidden_size, head.vocab_size, model.HEAD_LAYERS.get(method, 1))
    if method not in model.HEAD_ACCEPT:
        return [{"hardware": device.name, "estimate": None,
                 "why": f"speed-up unknown: no measured acceptance for {method} heads"}
                for device in opts.devices_for(engine, bool(t.get("gguf")))[:1]]

    def one(setup: model.Setup, target: model.Shape, drafting: model.Shape) -> model.Estimate | None:
        return model.estimate_head(target, drafting, setup, method=method)

    return _per_device(engine, t, {"shape": shape, "quant": None}, opts, one, first_only=False, side="head",
                       draft_tokens=draft_tokens, separate=head is not None, head_setup=setup)


def _head_runs_as(setup, profile, device, t: dict, opts: Options):
    """A head's setup on a device: the target as a draft model's would run (answer/setup.py), the head at the
    draft quantization asked when the engine makes it (else its own weights); MTP drafts from the target as is."""
    llama = ENGINES["llama.cpp"].release
    target = side_source(t, profile.runtime, opts.target_quant, profile.target_quant, llama)
    draft = setup.draft
    if draft is not None and setup.method != "mtp":
        draft = side_source({"repo_id": draft.repo, "kind": HF, "quant": None}, profile.runtime, opts.draft_quant,
                            profile.draft_quant, llama)
    return replace(setup, target=target, draft=draft, hardware=device.name)


def _runs_at(side, families) -> quant.Quant:
    """The quantization a side of the chosen setup runs at (choose sets both sides')."""
    assert side is not None and side.quant is not None
    return quant.for_runtime(quant.lookup(side.quant), families) or quant.lookup(side.quant)


def _per_device(engine: Engine, t: dict, d: dict, opts: Options, one, first_only: bool, side: str = "draft",
                draft_tokens: int | None = None, separate: bool = True, head_setup=None) -> list[dict]:
    """``separate``: the drafting side is weights of its own beside the target's (a draft model, a head's file),
    not layers inside the target (MTP). Whether the pair's weights fit one device is said, not used: a weight
    count above the device's memory cannot run there as modelled (the KV cache and the runtime need more still),
    one below it may still not fit."""
    entry = engine
    if entry.speed is None:
        return []
    ts, ds = t.get("shape"), d.get("shape")
    out = []
    gguf = bool(t.get("gguf") or d.get("gguf"))  # LM Studio runs a GGUF pair on its llama.cpp engine
    devices = opts.devices_for(engine, gguf)
    for device in devices[:1] if first_only else devices:
        profile = entry.profile_on(device.kind, gguf)
        if profile is None:
            out.append({"hardware": device.name, "estimate": None, "why": entry.not_on(device.kind, gguf)})
            continue
        runs_as = None
        if side == "draft":  # the setup the command runs: its quantizations are the estimate's
            runs_as = choose(engine, profile, device, t, d, opts, draft_tokens)
        elif head_setup is not None:
            runs_as = _head_runs_as(head_setup, profile, device, t, opts)
        if ts is None or ds is None:
            which = "target" if ts is None else side
            out.append({"hardware": device.name, "estimate": None, "why": f"speed-up unknown: no size for the {which}"})
            continue
        if runs_as is not None:
            families = RUNTIME_FAMILIES[profile.runtime]

            tq = _runs_at(runs_as.target, families)
            dq = (_runs_at(runs_as.draft, families) if runs_as.draft is not None and runs_as.draft.quant else
                  _quant_for(d.get("quant"), opts.draft_quant, profile.draft_quant, profile.runtime))
        else:
            tq = _quant_for(t.get("quant"), opts.target_quant, profile.target_quant, profile.runtime)
            dq = _quant_for(d.get("quant"), opts.draft_quant, profile.draft_quant, profile.runtime)
        setup = model.Setup(device, profile.runtime, tq, dq, task=opts.task,
                            max_draft_tokens=profile.max_draft_tokens, draft_tokens=draft_tokens or opts.draft_tokens,
                            copies_state=profile.copies_state and side == "draft")
        e = one(setup, ts, ds)
        weights = (ts.params * tq.bpw + (ds.params * dq.bpw if separate else 0)) / 8e9
        fits = weights <= device.memory_gb if device.memory_gb else None
        why = e.why if fits is not False else (
            f"does not fit: the weights alone take {weights:.0f} GB, more than the {device.memory_gb:g} GB of one "
            f"{device.name} (several devices or offloading are not modelled); {e.why}")
        out.append({"estimate": e.estimate, "low": e.low, "high": e.high, "draft_tokens": e.draft_tokens,
                    "acceptance": e.acceptance, "hardware": device.name, "target_quant": tq.name,
                    "draft_quant": dq.name, "task": opts.task, "slower": e.estimate < 1.0,
                    "target_tok_s": e.target_tok_s, "weights_gb": round(weights, 1), "fits": fits, "why": why})
        if runs_as is not None:
            out[-1].update(with_launch(replace(runs_as, draft_tokens=e.draft_tokens)))
    return out


def with_launch(setup) -> dict:
    """A figure's ``setup`` (with its ``steps``) and ``launch`` (the steps as one shell line), from the engine's
    module: the command runs what was estimated."""
    steps = noted(setup, ENGINES[setup.engine].launch(setup))  # what differs from what was asked, said
    return {"setup": {**setup.to_dict(), "steps": steps}, "launch": text(steps)}


def words(s: dict) -> str:
    """≈1.8× (1.4–2.2×) on M4 Max, Q4_K_M target, 8 draft tokens; or why there is no figure."""
    if s.get("estimate") is None:
        return f"{s['hardware']}: {s['why']}"
    slower = " SLOWER than no draft" if s["slower"] else ""
    digits = 2 if round(s["estimate"], 1) == 1.0 else 1  # "≈0.97× SLOWER", never "≈1.0× SLOWER"
    unfit = f" (DOES NOT FIT one device: {s['weights_gb']:.0f} GB of weights)" if s.get("fits") is False else ""
    return (f"≈{s['estimate']:.{digits}f}× ({s['low']:.1f}–{s['high']:.1f}×){slower} on {s['hardware']}{unfit}, "
            f"{s['target_quant']} target, {s['draft_tokens']} draft token{'' if s['draft_tokens'] == 1 else 's'}")


RUNS = ("works", "degraded", "useless")  # outcomes where the engine drafts and the output is right


def side_facts(arg: str, shown: str, reader, result: dict, role: str) -> dict:
    """The speed facts of one side of a check: a GGUF file's header, a directory's config, or the catalog's row."""
    if is_local(arg) or looks_like_dir(arg):
        gguf_path = local_gguf_arg(arg)
        if gguf_path is not None:
            try:
                file_type = deferred.gguf_file.read_gguf(gguf_path).file_type
            except Exception:  # noqa: BLE001 - the check read it already; an unreadable header only means no figure
                file_type = None
            return gguf_facts(str(gguf_path), file_type)
        return arch_facts(result, role, shown)
    if reader is None:
        return {}
    return catalog_facts(reader, shown.split(" (")[0])


def not_a_draft(t: dict, d: dict) -> str | None:
    """Why the draft of a check is no draft: the target itself, or a model of its size or larger."""
    if t.get("repo_id") and t.get("repo_id") == d.get("repo_id"):
        return "the target itself"
    ts, ds = t.get("shape"), d.get("shape")
    return size_not_a_draft(ts.params if ts else None, ds.params if ds else None)


def agreement_share(result: dict) -> float:
    """The share of the target's tokens (over the reference text) that mean the same in the draft."""
    a = result.get("agreement")
    if not a or a.get("identical"):
        return 1.0
    share = a.get("text_agreement")
    return float(share if share is not None else a.get("ids_agreement") or 0.0)


def add_to_check(result: dict, target: str, draft: str, db: str | None, opts: Options) -> dict:
    """Each running verdict of a draft-model check gains ``speedup`` (the first device) and ``speedups`` (each);
    a pair's ``launch`` becomes the first estimated device's setup, named in ``launch_on``; ``hardware_note``: which
    device a short name took ("H100 SXM (also: H100 PCIe)")."""
    if opts.hardware_note:
        result["hardware_note"] = opts.hardware_note
    if result.get("kind") == "head":
        return _add_to_head_check(result, db, opts)

    try:
        reader = Reader(db, needs="repos")
    except CatalogError:
        reader = None
    measured: list[dict] = []
    sides: dict[str, tuple[dict, dict]] = {}
    try:
        t = side_facts(target, result["target"], reader, result, "target")
        d = side_facts(draft, result["draft"], reader, result, "draft")
        if reader is not None:

            measured = rows(reader, result["target"].split(" (")[0], result["draft"].split(" (")[0])
            sides = {name: (with_copies(reader, t, ENGINES[name], opts.target_quant),
                            with_copies(reader, d, ENGINES[name], opts.draft_quant))
                     for name, v in result["verdicts"].items() if v["outcome"] in RUNS and ENGINES[name].speed}
    finally:
        if reader is not None:
            reader.close()
    result["not_a_draft"] = not_a_draft(t, d)
    share = agreement_share(result)
    for name, verdict in result["verdicts"].items():
        verdict["measured"] = _measured(measured, name, opts)
        if verdict["outcome"] not in RUNS or ENGINES[name].speed is None:
            verdict["speedup"], verdict["speedups"] = None, []
            continue
        ts, ds = sides.get(name, (t, d))
        alpha = measured_alpha(measured, opts) if opts.measured else None
        figures = estimate(ENGINES[name].at(verdict.get("version")), ts, ds, opts, share, measured=alpha)
        verdict["speedups"] = figures
        verdict["speedup"] = figures[0] if figures else None
        launched = next((f for f in figures if f.get("launch") and f.get("estimate") is not None), None)
        if launched is not None and name in (result.get("launch") or {}):  # the command of an estimated setup
            result["launch"][name] = launched["launch"]
            result.setdefault("launch_on", {})[name] = launched["hardware"]
    return result


def with_copies(reader, facts: dict, engine: Engine, asked) -> dict:
    """A catalog HF repo's facts with its copies ``engine`` could load in its place (answer/setup.py), where they
    could change the setup: the engine loads GGUF or MLX files, or a quantization was asked."""
    profile = engine.speed
    if profile is None or facts.get("kind") != HF or not facts.get("pk") or not (
            profile.runtime in (model.GGML, model.MLX) or profile.gguf is not None or asked is not None):
        return facts

    return {**facts, "copies": copies(reader, facts["pk"], facts["repo_id"], engine.name)}


def measured_alpha(found: list[dict], opts: Options) -> tuple[float, float] | None:
    """The pair's measured acceptance on the task asked for, over every engine's calibration-grade measurements,
    each weighing its runs: (α, runs), or None. Acceptance belongs to the pair and the text, not to the device."""
    rows = [(r["acceptance"], r["runs"]) for r in found
            if r["task"] == opts.task and r["acceptance"] is not None and r["calibration"]]
    runs = sum(n for _, n in rows)
    return (sum(a * n for a, n in rows) / runs, runs) if runs else None


def _measured(found: list[dict], engine: str, opts: Options) -> dict | None:
    """The pair's measurements on ``engine`` (``indexer measure``), on the device asked for (else the one measured
    most) and the task asked for, when there are any."""
    mine = [r for r in found if r["engine"] == engine]
    if not mine:
        return None
    device = opts.device.name if opts.device is not None else None
    return summary(mine, device, opts.task) or (summary(mine, device) if device else summary(mine))


def _add_to_head_check(result: dict, db: str | None, opts: Options) -> dict:
    """``check TARGET HEAD``: each engine the head fits gains ``speedups`` (per device) and ``speedup`` (the first),
    at the draft length of its launch command."""
    head, shape = HeadFacts(**result["head"]), TargetShape(**result["target"])
    reader = Reader(db, needs="repos")
    try:
        t = catalog_facts(reader, shape.repo_id)
    finally:
        reader.close()
    for engine, verdict in result["engines"].items():
        if not verdict["fits"] or ENGINES[engine].speed is None:
            verdict["speedup"], verdict["speedups"] = None, []
            continue
        tokens = rules.launch_tokens(head, shape, engine, verdict.get("version"))
        verdict["speedups"] = head_estimate(ENGINES[engine].at(verdict.get("version")), t, head, opts, tokens,
                                            rules.setup(head, shape, engine, verdict.get("version")))
        verdict["speedup"] = verdict["speedups"][0] if verdict["speedups"] else None
    return result
