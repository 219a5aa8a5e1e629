"""Devices people run speculative decoding on: memory bandwidth and FP32 compute, with sources.

A decode step of one stream reads every weight once, so its time is the bytes read over the memory bandwidth; a
verify pass of n tokens reads the same bytes but does n times the arithmetic, so its extra cost per token is set
by the compute. Both figures are the vendor's peak (FP32 shader TFLOPS for every kind, so that Apple, NVIDIA, AMD
and CPUs are measured alike); the model's calibrated efficiencies (``model.py``) turn peaks into what kernels reach.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace

from ..errors import BadInput

APPLE, NVIDIA, AMD, CPU = "apple", "nvidia", "amd", "cpu"


@dataclass(frozen=True)
class Hardware:
    """One device: its name, kind (which engines run on it), bandwidth (GB/s), FP32 TFLOPS, memory and sources."""

    name: str
    kind: str
    bandwidth_gbps: float
    tflops: float
    memory_gb: float | None
    source: str
    aliases: tuple = ()
    bf16: bool = True  # bfloat16 arithmetic in hardware (else emulated: model.py charges MLX's verify for it)


_WIKI_M = "https://en.wikipedia.org/wiki/Apple_{}"  # the chip pages' GPU tables: cores, FP32 TFLOPS, bandwidth
_NV_30 = "https://en.wikipedia.org/wiki/GeForce_30_series"  # 'Processing power (TFLOPS) single precision'
_NV_40 = "https://en.wikipedia.org/wiki/GeForce_40_series"
_NV_50 = "https://en.wikipedia.org/wiki/GeForce_50_series"
_NV_PRO = "https://en.wikipedia.org/wiki/Quadro"  # RTX A6000, RTX 6000 Ada: 'Memory bandwidth', 'Single precision'
_NV_DC = "https://en.wikipedia.org/wiki/Nvidia_Tesla"  # T4, V100, A10, L4, A100 40GB, H100 PCIe tables
_AMD_RX = "https://en.wikipedia.org/wiki/Radeon_RX_7000_series"
_AMD_RX6 = "https://en.wikipedia.org/wiki/Radeon_RX_6000_series"
_AMD_MI = "https://en.wikipedia.org/wiki/AMD_Instinct"
# The vendors' data sheets: memory bandwidth, FP32 TFLOPS and memory as each states them.
_NV_H100 = ("NVIDIA H100 Tensor Core GPU data sheet, H100 SXM column "
            "(https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet)")
_NV_H200 = "NVIDIA H200 product page, H200 SXM specifications (https://www.nvidia.com/en-us/data-center/h200/)"
_NV_A100 = ("NVIDIA A100 Tensor Core GPU data sheet, A100 80GB SXM column "
            "(https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
            "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf)")
_AMD_W7900 = ("AMD Radeon PRO W7900 specifications "
              "(https://www.amd.com/en/products/graphics/workstations/radeon-pro/w7900.html)")
_AMD_9070XT = ("AMD Radeon RX 9070 XT specifications "
               "(https://www.amd.com/en/products/graphics/desktops/radeon/9000-series/amd-radeon-rx-9070xt.html)")

# Apple's M1 and M2 GPUs have no bfloat16 arithmetic (bf16=False): MLX emulates it (awni in ml-explore/mlx-examples#186,
# on an M2 Ultra: "the non-native conversion from bfloat16 to float32", bf16 generation 18.9 against 29.3 tok/s in
# fp16; philipturner/metal-flash-attention#17: "earlier M1 chips (without hardware BF16 support)").
# Bandwidths of the Apple chips and the RTX 3060/3090/4090 are the figures collected with quotes in the project's
# shared measurements (speedups/measurements.json "hardware"); the A100 80GB, H100 SXM, H200, W7900 and RX 9070 XT
# cite their vendor's data sheet (the same figures the measurements quote from secondary pages); the rest and every
# TFLOPS figure come from the page named.
DEVICES = (
    Hardware("M1", APPLE, 68.25, 2.6, 16, _WIKI_M.format("M1"), ("apple m1", "m1 8-core gpu"), bf16=False),
    Hardware("M1 Pro", APPLE, 200, 5.2, 32, _WIKI_M.format("M1"), bf16=False),
    Hardware("M1 Max", APPLE, 400, 10.4, 64, _WIKI_M.format("M1"), bf16=False),
    Hardware("M1 Ultra", APPLE, 800, 20.8, 128, _WIKI_M.format("M1"), bf16=False),
    Hardware("M2", APPLE, 100, 3.6, 24, _WIKI_M.format("M2"), bf16=False),
    Hardware("M2 Pro", APPLE, 200, 6.8, 32, _WIKI_M.format("M2"), bf16=False),
    Hardware("M2 Max", APPLE, 400, 13.6, 96, _WIKI_M.format("M2"), bf16=False),
    Hardware("M2 Ultra", APPLE, 800, 27.2, 192, _WIKI_M.format("M2"), bf16=False),
    Hardware("M3", APPLE, 100, 4.1, 24, _WIKI_M.format("M3")),
    Hardware("M3 Pro", APPLE, 150, 7.4, 36, _WIKI_M.format("M3")),
    Hardware("M3 Max", APPLE, 400, 16.4, 128, _WIKI_M.format("M3")),
    Hardware("M3 Ultra", APPLE, 819, 32.8, 512, _WIKI_M.format("M3")),
    Hardware("M4", APPLE, 120, 4.3, 32, _WIKI_M.format("M4")),
    Hardware("M4 Pro", APPLE, 273, 9.2, 64, _WIKI_M.format("M4")),
    Hardware("M4 Max", APPLE, 546, 18.4, 128, _WIKI_M.format("M4")),
    Hardware("RTX 3060", NVIDIA, 360, 12.7, 12, _NV_30, ("rtx 3060 12gb", "geforce rtx 3060", "3060")),
    Hardware("RTX 3090", NVIDIA, 936, 35.6, 24, _NV_30, ("rtx 3090 24gb", "geforce rtx 3090", "3090")),
    Hardware("RTX 4090", NVIDIA, 1008, 82.6, 24, _NV_40, ("rtx 4090 24gb", "geforce rtx 4090", "4090")),
    Hardware("RTX 5090", NVIDIA, 1792, 104.8, 32, _NV_50, ("rtx 5090 32gb", "geforce rtx 5090", "5090")),
    Hardware("RTX 3070", NVIDIA, 448, 20.3, 8, _NV_30, ("geforce rtx 3070", "3070")),
    Hardware("RTX 3080", NVIDIA, 760, 29.8, 10, _NV_30, ("rtx 3080 10gb", "geforce rtx 3080", "3080")),
    Hardware("RTX 3080 Ti", NVIDIA, 912, 34.1, 12, _NV_30, ("geforce rtx 3080 ti", "3080 ti")),
    Hardware("RTX 3090 Ti", NVIDIA, 1008, 40.0, 24, _NV_30, ("geforce rtx 3090 ti", "3090 ti")),
    Hardware("RTX 4060 Ti", NVIDIA, 288, 22.1, 16, _NV_40, ("rtx 4060 ti 16gb", "geforce rtx 4060 ti", "4060 ti")),
    Hardware("RTX 4070", NVIDIA, 504, 29.1, 12, _NV_40, ("geforce rtx 4070", "4070")),
    Hardware("RTX 4070 Ti", NVIDIA, 504, 40.1, 12, _NV_40, ("geforce rtx 4070 ti", "4070 ti")),
    Hardware("RTX 4080", NVIDIA, 717, 48.7, 16, _NV_40, ("geforce rtx 4080", "4080")),
    Hardware("RTX 4080 Super", NVIDIA, 736, 52.2, 16, _NV_40, ("geforce rtx 4080 super", "4080 super")),
    Hardware("RTX 5070 Ti", NVIDIA, 896, 43.9, 16, _NV_50, ("geforce rtx 5070 ti", "5070 ti")),
    Hardware("RTX 5080", NVIDIA, 960, 56.3, 16, _NV_50, ("geforce rtx 5080", "5080")),
    Hardware("RTX A6000", NVIDIA, 768, 38.7, 48, _NV_PRO, ("a6000", "nvidia rtx a6000")),
    Hardware("RTX 6000 Ada", NVIDIA, 960, 91.1, 48, _NV_PRO, ("rtx 6000 ada generation", "6000 ada")),
    Hardware("T4", NVIDIA, 320, 8.1, 16, _NV_DC, ("nvidia t4", "tesla t4"), bf16=False),
    Hardware("V100", NVIDIA, 900, 15.7, 32, _NV_DC, ("v100 sxm2", "tesla v100", "nvidia v100", "v100 32gb"),
             bf16=False),
    Hardware("A10", NVIDIA, 600, 31.2, 24, _NV_DC, ("nvidia a10", "a10g", "nvidia a10g")),
    Hardware("L4", NVIDIA, 300, 30.3, 24, _NV_DC, ("nvidia l4",)),
    Hardware("A100 40GB", NVIDIA, 1555, 19.5, 40, _NV_DC, ("a100 40gb sxm", "a100-sxm4-40gb", "nvidia a100 40gb")),
    Hardware("H100 PCIe", NVIDIA, 2000, 51.2, 80, _NV_DC, ("h100 pcie 80gb", "nvidia h100 pcie")),
    Hardware("A100 80GB", NVIDIA, 2039, 19.5, 80, _NV_A100,
             ("a100", "a100 80gb sxm", "a100-sxm4-80gb", "a100 80gb sxm4", "nvidia a100 80gb", "a100 sxm")),
    Hardware("H100 SXM", NVIDIA, 3350, 67, 80, _NV_H100,
             ("h100", "h100 80gb", "h100 sxm5", "nvidia h100", "h100 sxm 80gb")),
    Hardware("H200", NVIDIA, 4800, 67, 141, _NV_H200,
             ("h200 141gb", "nvidia h200", "h200 sxm")),
    Hardware("L40S", NVIDIA, 864, 91.6, 48, "https://www.nvidia.com/en-us/data-center/l40s/", ("nvidia l40s",)),
    Hardware("Radeon Pro W7900", AMD, 864, 61.3, 48, _AMD_W7900,
             ("w7900", "radeon w7900", "amd radeon pro w7900")),
    Hardware("RX 7900 XTX", AMD, 960, 61.4, 24, _AMD_RX, ("radeon rx 7900 xtx", "7900 xtx")),
    Hardware("RX 7900 XT", AMD, 800, 51.5, 20, _AMD_RX, ("radeon rx 7900 xt", "7900 xt")),
    Hardware("RX 6800 XT", AMD, 512, 20.7, 16, _AMD_RX6, ("radeon rx 6800 xt", "6800 xt")),
    Hardware("MI300X", AMD, 5300, 163.4, 192, _AMD_MI, ("instinct mi300x", "amd mi300x")),
    Hardware("MI250X", AMD, 3277, 47.9, 128, _AMD_MI, ("instinct mi250x", "amd mi250x")),
    Hardware("RX 9070 XT", AMD, 640, 48.7, 16, _AMD_9070XT,
             ("radeon rx 9070 xt", "9070 xt", "rx9070xt", "r9700", "radeon ai pro r9700")),
    Hardware("Ryzen 9 7950X", CPU, 83.2, 2.5, None,
             "https://en.wikipedia.org/wiki/Ryzen (Zen 4, 16 cores; DDR5-5200 dual channel: 2 x 8 B x 5200 MT/s)",
             ("7950x", "ryzen 9 7950x (cpu)", "amd ryzen 9 7950x")),
    Hardware("cpu", CPU, 50, 1.0, None, "a generic desktop: dual-channel DDR4-3200 (2 x 8 B x 3200 MT/s = 51 GB/s)",
             ("generic cpu", "cpu only")),
)

# Three reference devices shown when no --hardware is given: one datacenter GPU, one consumer GPU, one Mac.
REFERENCE = ("H100 SXM", "RTX 4090", "M4 Max")
KINDS = (APPLE, NVIDIA, AMD, CPU)  # the --device-kind choices, in the order `indexer hardware` lists devices


def listed() -> list[Hardware]:
    """Every device as `indexer hardware` lists them: by kind (KINDS), then by memory bandwidth, then name."""
    return sorted(DEVICES, key=lambda d: (KINDS.index(d.kind), d.bandwidth_gbps, d.name))


def _key(name: str) -> str:
    """The name lowercased, each run of characters other than [a-z0-9] one space, stripped."""
    return re.sub(r"[^a-z0-9]+", " ", name.lower()).strip()


def _compact(name: str) -> str:
    """The name's letters and digits only, lowercased: "RTX-4090", "rtx4090" and "RTX 4090" are one key."""
    return re.sub(r"[^a-z0-9]+", "", name.lower())


_VENDOR_WORDS = ("apple", "nvidia", "geforce", "amd", "radeon")


_BY_NAME = {d.name: d for d in DEVICES}  # the exact names: a query's reference devices need nothing more
_BY_KEY: dict = {}


def _by_key() -> dict:
    """Every way of writing each device (made on the first name that is not exact)."""
    if not _BY_KEY:
        for d in DEVICES:
            for n in (d.name, *d.aliases):
                _BY_KEY[_key(n)] = d
                _BY_KEY[n] = d
                _BY_KEY[_key(n).replace("apple ", "").replace("nvidia ", "")] = d
        for d in DEVICES:  # the compact spellings (rtx4090, m4max), never over a spelled-out key
            for n in (d.name, *d.aliases):
                _BY_KEY.setdefault(_compact(n), d)
    return _BY_KEY


def lookup(name: str) -> Hardware:
    """The device a person means ("m4 max", "RTX-4090", "Apple M3 Pro"); unknown: a BadInput naming the closest."""
    if name in _BY_NAME:
        return _BY_NAME[name]
    keys = _by_key()
    if name in keys:
        return keys[name]
    key = _key(name)
    bare = key
    for word in _VENDOR_WORDS:
        bare = bare.replace(f"{word} ", "")
    for k in (key, bare, _compact(key), _compact(bare)):
        if k in keys:
            return keys[k]

    close = difflib.get_close_matches(key, list(keys), n=3, cutoff=0.5)
    names = list(dict.fromkeys(keys[c].name for c in close)) or [d.name for d in DEVICES[:3]]
    raise BadInput(f"unknown hardware {name!r}; closest: {', '.join(names)} (`indexer hardware` lists them all, "
                     "or give --bandwidth GB/s for another device)")


def ambiguity(name: str) -> str | None:
    """When ``name`` is an alias that other devices' names also start with ("H100": H100 SXM and H100 PCIe), the
    device taken and the others: "H100 SXM (also: H100 PCIe)"; None when the name is one device's own."""
    taken = lookup(name)
    asked = _compact(name)
    if asked == _compact(taken.name):
        return None
    others = [d.name for d in DEVICES if d is not taken and _compact(d.name).startswith(asked)]
    return f"{taken.name} (also: {', '.join(others)})" if others else None


def custom(bandwidth_gbps: float, base: Hardware | None = None, kind: str | None = None) -> Hardware:
    """A device given by its bandwidth (``--bandwidth``): the named device at that bandwidth, else a device of
    ``kind`` (its kind decides which engines run on it, so it is never guessed) with a GPU's compute ratio."""
    if base is not None:
        if kind is not None and kind != base.kind:
            raise BadInput(f"--device-kind {kind} contradicts --hardware {base.name!r}, a {base.kind} device")
        return replace(base, bandwidth_gbps=bandwidth_gbps, name=f"{base.name} at {bandwidth_gbps:g} GB/s")
    if kind is None:
        raise BadInput(f"--bandwidth {bandwidth_gbps:g} needs the kind of device (it decides which engines run on "
                       f"it): add --device-kind {'|'.join(KINDS)}, or name it with --hardware")
    if kind not in KINDS:
        raise BadInput(f"unknown device kind {kind!r}; choose one of {', '.join(KINDS)}")
    return Hardware(f"{bandwidth_gbps:g} GB/s {kind} device", kind, bandwidth_gbps, bandwidth_gbps / 25, None,
                    "--bandwidth (compute assumed 1 TFLOPS per 25 GB/s, a GPU's ratio)")
