"""Stage 3 of an answer, its first half: the setup a pair runs as on an engine and device (engines/setup.py).

Each side's source and quantization are chosen here, once: the speed model estimates that setup
(:mod:`indexer.answer.speedup`) and the engine's module prints its launch command from it, so the two cannot
disagree. By the engine's runtime:

* GGUF (llama.cpp, LM Studio off a Mac): a GGUF repo or file runs as it is (``-hf REPO:TAG``, ``-m FILE``); an HF
  repo runs from a GGUF copy the catalog holds at the wanted quantization, else through the conversion chain to it
  (download, ``convert_hf_to_gguf.py``, ``llama-quantize``), which only makes the types llama.cpp's source lists;
* MLX: an MLX conversion (the repo itself, or a copy at the wanted bits), a float checkpoint as it is, else an
  ``mlx_lm.convert -q`` step;
* serving (vLLM, SGLang) and eager (transformers): the checkpoint as stored (a quantized one runs quantized), a
  copy at the wanted quantization, or FP8 quantized at load (serving engines only); anything else is not offered
  and the side runs as stored.

The wanted quantization is the user's ``--quant`` / ``--draft-quant``, else what the repo stores, else the engine's
usual one (``SpeedProfile``). Copies are the repos of the side's class and lineage on that engine whose base
models name it (``copies``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from ..catalog.classes import Member, lineage_of, lineages_in
from ..catalog.reader import json_value
from ..catalog.repofacts import gguf_files
from ..engines import ENGINES
from ..engines.base import Engine
from ..engines.llamacpp import hub_tag, makeable
from ..engines.setup import DIR, FILE, GGUF, HF, MLX, Setup, Source, plain, text
from ..speed import model, quant
from ..speed.facts import quant_from_facts

# Which kernel families each runtime loads, to tell whether a repo's own quantization applies on an engine.
RUNTIME_FAMILIES = {
    model.GGML: quant.GGUF_FAMILIES,
    model.MLX: (quant.FLOAT, quant.AFFINE),
    model.SERVING: (quant.FLOAT, quant.FP8, quant.INT4),
    model.EAGER: (quant.FLOAT, quant.FP8, quant.INT4),
}
_QUANT = re.compile(r'"quant": "([^"]+)"')  # json.dumps's spelling of the key, as the crawl wrote it


def gguf_quant(gguf) -> str | None:
    """The file type of the GGUF file a GGUF repo's header was read from (what llama-server -hf REPO:QUANT runs).
    Stored as JSON text (SQLite): read by a pattern, not parsed (the facts hold a whole token summary)."""
    if isinstance(gguf, dict):
        return gguf.get("quant") if gguf.get("source") == "read" else None
    if not gguf or '"source": "read"' not in gguf:
        return None
    m = _QUANT.search(gguf)
    return m.group(1) if m else None


RUNTIME_KIND = {model.GGML: GGUF, model.MLX: MLX}  # the copy kind each runtime loads without converting


def runs(runtime: str, q: quant.Quant, release: str) -> bool:
    """Whether the runtime can run an HF checkpoint at ``q`` by the steps or flags the commands give."""
    if runtime == model.GGML:

        return q.family in quant.GGUF_FAMILIES and makeable(q.name, release)
    if runtime == model.MLX:
        return q.family in (quant.FLOAT, quant.AFFINE)
    if runtime == model.SERVING:
        return q.family == quant.FLOAT or q.name == "fp8"
    return q.family == quant.FLOAT


def side_source(facts: dict, runtime: str, override: quant.Quant | None, default: str, release: str) -> Source:
    """Where one side comes from on this runtime, and the quantization it runs at (module docstring)."""
    repo = facts.get("repo_id") or "?"
    kind = facts.get("kind") or HF
    declared: quant.Quant | None = facts.get("quant")
    stored = declared.name if declared is not None else None
    families = _families(runtime)
    wanted = (quant.for_runtime(override, families) or override) if override is not None else None
    if kind == FILE:  # a local GGUF file runs as it is
        return Source(repo, FILE, stored or default, stored=stored)
    if kind == GGUF:  # a GGUF repo: the file whose header was read, else its file at the type asked
        listed = facts.get("tag")
        if wanted is None or listed is None or wanted.name.upper() == listed.upper():
            tag = wanted.name if wanted is not None else listed
            return Source(repo, GGUF, tag or stored or default, tag=tag, stored=stored)
        tag = hub_tag(facts.get("files") or [], wanted.name)
        if tag is not None:
            return Source(repo, GGUF, wanted.name, tag=tag, stored=wanted.name)
        return _unlisted(facts, runtime, wanted, release, Source(repo, GGUF, listed, tag=listed, stored=stored))
    loads_as_stored = declared is not None and runtime != model.GGML and quant.for_runtime(declared, families)
    if declared is not None and loads_as_stored and (wanted is None or wanted.name == declared.name):
        # a quantized checkpoint the runtime loads as it is: an MLX conversion, an FP8 or AWQ checkpoint
        return Source(repo, MLX if declared.family == quant.AFFINE and kind == HF else kind, declared.name,
                      stored=stored)
    want = wanted or quant.lookup(default)
    copies = facts.get("copies") or []
    copy_kind = RUNTIME_KIND.get(runtime, HF)
    for c in copies:  # a copy at the wanted quantization (a GGUF copy: its file of that type)
        if c["kind"] == copy_kind and c["quant"] is not None and c["quant"].name.upper() == want.name.upper():
            return Source(c["repo_id"], copy_kind, want.name, tag=c.get("tag"), stored=c["quant"].name)
        tag = hub_tag(c.get("files") or [], want.name) if c["kind"] == copy_kind == GGUF else None
        if tag is not None:
            return Source(c["repo_id"], GGUF, want.name, tag=tag, stored=want.name)
    if wanted is None and copy_kind != HF:
        for c in copies:  # no quantization asked: a copy the engine loads as it is, at its own
            if c["kind"] == copy_kind and c["quant"] is not None and c["quant"].family in families:
                return Source(c["repo_id"], copy_kind, c["quant"].name, tag=c.get("tag"), stored=c["quant"].name)
    if loads_as_stored and declared is not None:  # asked for another quantization, and no copy has it
        return Source(repo, kind, declared.name, stored=stored,
                      note=f"{repo}: stored at {declared.name}, and the catalog has no {want.name} copy; run as stored")
    if kind == DIR or runs(runtime, want, release):
        return Source(repo, kind, want.name, stored=stored)
    # asked for what these steps cannot make: the usual one, said
    note = f"{repo}: no {want.name} copy in the catalog, and these steps cannot make one; run at {default}"
    return Source(repo, kind, default, stored=stored, note=note if wanted is not None else None)


def _unlisted(facts: dict, runtime: str, wanted: quant.Quant, release: str, as_stored: Source) -> Source:
    """A GGUF repo asked at a type the catalog lists no file of (``files``: its model files; without them, the
    one whose header the crawl read): the model the repo was made from, converted to the type by the launch steps,
    when the repo names one base and the steps can make the type; else the file read. Either way the source says
    so (``note``)."""
    repo, bases = facts.get("repo_id") or "?", facts.get("bases") or []
    has = list(dict.fromkeys(q or p.rsplit("/", 1)[-1] for p, q in facts.get("files") or ())) or [as_stored.tag]
    missing = f"{repo}: the catalog lists no {wanted.name} file (only {', '.join(map(str, has))})"
    if bases and runtime == model.GGML and wanted.family in quant.GGUF_FAMILIES and runs(runtime, wanted, release):
        return Source(bases[0], HF, wanted.name, note=f"{missing}; made from {bases[0]}")
    return replace(as_stored, note=f"{missing}; run at {as_stored.tag}")


def _families(runtime: str) -> tuple:
    return RUNTIME_FAMILIES[runtime]


def choose(engine: Engine, profile, device, t: dict, d: dict, opts, draft_tokens: int | None = None) -> Setup:
    """The setup of a draft-model pair on ``engine`` (at its release) on ``device`` (a ``speed.hardware.Hardware``,
    or None), with ``profile`` the engine's ``SpeedProfile`` there; ``t``/``d`` the sides' speed facts
    (speedup.py)."""
    # whose tools make a GGUF file: this llama.cpp release, or the newest for another engine
    steps = engine.release if engine.name == "llama.cpp" else ENGINES["llama.cpp"].release
    target = side_source(t, profile.runtime, opts.target_quant if opts else None, profile.target_quant, steps)
    draft = side_source(d, profile.runtime, opts.draft_quant if opts else None, profile.draft_quant, steps)
    return Setup(engine.name, engine.release, target, draft, draft_tokens or (opts.draft_tokens if opts else None),
                 hardware=device.name if device is not None else None)


def launch(engine: str, target: str, draft: str, draft_tokens: int | None = None) -> str:
    """The engine's launch command for two sides known by name (as stored; ``draft_tokens``: per round), as one
    shell line: an engine without a speed model. An answer's other commands come from its setups (:func:`choose`),
    estimated and printed alike."""
    entry = ENGINES[engine]
    return text(entry.launch(plain(engine, entry.release, target, draft, draft_tokens)))


def copies(cat, pk: int | None, repo_id: str, engine: str) -> list[dict]:
    """The catalog's copies of a repo an engine can load in its place: members of the repo's class and lineage on
    ``engine`` whose base models name it, with what each is (GGUF repo and tag, MLX conversion, quantized HF
    checkpoint), most downloaded first. One query through the class index."""
    if pk is None or pk < 0:
        return []
    return _copies(cat, lineage_of(cat, engine, pk)).get(repo_id, [])


def copies_among(cat, members: list[Member], classes: Iterable[int] = ()) -> dict[str, list[dict]]:
    """:func:`copies` of several class members at once (a query's ranked drafts), from one query over their
    lineages in their classes and ``classes`` (the others the query ranks: a GGUF copy's own vocabulary may be
    another class that works with the target)."""
    class_ids = {*classes, *(m.class_id for m in members if m.class_id is not None)}
    lineages = {m.lineage_id for m in members if m.lineage_id is not None}
    if not class_ids or not lineages:
        return {}
    return _copies(cat, lineages_in(cat, sorted(class_ids), sorted(lineages)), {m.repo_id for m in members})


def _copies(cat, rows, wanted: set[str] | None = None) -> dict[str, list[dict]]:
    """repo id -> its copies among ``rows`` (repos whose base models name it), each with its kind and quant (a
    GGUF copy: the type of the file the crawl read, and its model files)."""
    out: dict[str, list[dict]] = {}
    found = []
    for rid, bases, gguf, arch, pk in rows:
        named = [b for b in (json_value(bases) or []) if wanted is None or b in wanted]
        if named:
            found.append((rid, named, gguf_quant(gguf), arch, pk))
    files = gguf_files(cat, [pk for _, _, tag, _, pk in found if tag is not None])
    for rid, named, tag, arch, pk in found:
        speed = (json_value(arch) or {}).get("speed") if arch else None
        q = quant_from_facts(speed, tag)
        kind = GGUF if tag is not None else MLX if q is not None and q.family == quant.AFFINE else HF
        for base in named:
            out.setdefault(base, []).append({"repo_id": rid, "kind": kind, "quant": q, "tag": tag,
                                             "files": files.get(pk, [])})
    return out
