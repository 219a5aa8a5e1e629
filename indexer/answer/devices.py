"""``indexer hardware``: the devices ``--hardware`` names, with the figures the speed model reads and their sources.

Which engines run on a device comes from each engine's own module (``engines/<engine>.py`` ``speed``: the kinds
of device each of its runtimes runs on, read through ``Engine.device_kinds``), the one place ``check`` and
``query`` read it too, so the list says what they will estimate on each device.
"""

from __future__ import annotations

from .. import engines as registry
from ..speed.hardware import KINDS, REFERENCE, listed


def engines_by_kind() -> dict[str, list[str]]:
    """Device kind -> the engines (registry order) that run a pair on it (GGUF files only, for some)."""
    return {kind: [name for name, e in registry.ENGINES.items() if kind in e.device_kinds(None)] for kind in KINDS}


def gguf_only_by_kind() -> dict[str, list[str]]:
    """Device kind -> the engines that run only GGUF files there (LM Studio off a Mac: its llama.cpp engine)."""
    return {kind: [name for name, e in registry.ENGINES.items()
                   if kind in e.device_kinds(None) and kind not in e.device_kinds(False)] for kind in KINDS}


def devices_json() -> dict:
    """Every device (by kind, then bandwidth) with its figures, sources and engines."""
    kinds = engines_by_kind()
    devices = [{"name": d.name, "kind": d.kind, "bandwidth_gbps": d.bandwidth_gbps, "tflops_fp32": d.tflops,
                "memory_gb": d.memory_gb, "source": d.source, "aliases": list(d.aliases),
                "reference": d.name in REFERENCE, "engines": kinds[d.kind]} for d in listed()]
    return {"devices": devices, "reference": list(REFERENCE), "engines_by_kind": kinds,
            "gguf_only": gguf_only_by_kind(),
            "sources": {n: e.speed.source for n, e in registry.ENGINES.items() if e.speed is not None},
            "no_speed_model": [n for n, e in registry.ENGINES.items() if e.speed is None]}


def _num(x: float) -> str:
    return f"{x:g}"


def render_devices(result: dict) -> str:
    """A table of the devices, then which engines run on each kind of device."""
    rows = [(d["name"] + (" *" if d["reference"] else ""), d["kind"], _num(d["bandwidth_gbps"]), _num(d["tflops_fp32"]),
             f"{_num(d['memory_gb'])} GB" if d["memory_gb"] is not None else "-", d["source"])
            for d in result["devices"]]
    head = ("device", "kind", "GB/s", "FP32 TFLOPS", "memory", "source")
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(5)]
    right = (False, False, True, True, True)

    def line(r):
        cells = [f"{c:>{w}}" if ra else f"{c:{w}}" for c, w, ra in zip(r, widths, right)]
        return "  ".join(cells) + "  " + r[5]

    lines = [line(head), *(line(r) for r in rows)]
    lines.append(f"* a reference device: without --hardware, check and query answer for those of "
                 f"{', '.join(result['reference'])} that the engine runs on")
    lines.append("engines per kind of device:")
    for kind, names in result["engines_by_kind"].items():
        gguf_only = result["gguf_only"].get(kind, [])
        shown = [f"{n} (GGUF files only)" if n in gguf_only else n for n in names]
        lines.append(f"  {kind:7} {', '.join(shown) or 'none'}")
    lines.append("where each engine says so:")
    for name, source in result["sources"].items():
        lines.append(f"  {name}: {source}")
    if result["no_speed_model"]:
        lines.append(f"no speed model (no estimate on any device): {', '.join(result['no_speed_model'])}")
    lines.append("another device: --bandwidth GB/s --device-kind apple|nvidia|amd|cpu (with --hardware NAME: that "
                 "device at this bandwidth)")
    return "\n".join(lines)
