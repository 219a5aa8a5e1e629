"""Quantization names as people write them: bits per weight read per step, and the kernel family that verifies.

Bits per weight are the file's average over the weights a decode step reads (llama.cpp's K-quant "mixes" keep some
tensors at a higher type: Q4_K_M is about 4.85 bpw, ``gguf-py/gguf/constants.py`` GGML_QUANT_SIZES gives each block
type's bytes). The family decides how much arithmetic a verify pass adds per extra token (``model.py``): float
weights feed matrix units directly, block-quantized ones are unpacked per use.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from ..errors import BadInput

FLOAT, Q8, KQUANT, LEGACY, IQUANT, AFFINE, FP8, INT4 = ("float", "q8", "kquant", "legacy", "iquant", "affine", "fp8",
                                                         "int4")


@dataclass(frozen=True)
class Quant:
    """A quantization: its canonical name, bits per weight read, and its kernel family."""

    name: str
    bpw: float
    family: str


# GGML block sizes (gguf-py/gguf/constants.py GGML_QUANT_SIZES: bytes per block of 32 or 256 weights) give the block
# types' bpw: Q8_0 34 B/32 = 8.5, Q6_K 210/256 = 6.56, Q5_0 22/32 = 5.5, Q4_0 18/32 = 4.5, Q5_K 176/256 = 5.5,
# Q4_K 144/256 = 4.5, Q3_K 110/256 = 3.44, Q2_K 84/256 = 2.63, IQ4_XS 136/256 = 4.25; the _S/_M/_L mixes add the
# higher-type tensors of llama.cpp's src/llama-quant.cpp (averages as llama.cpp's quantize tool lists them).
_TABLE = (
    Quant("F32", 32, FLOAT), Quant("F16", 16, FLOAT), Quant("BF16", 16, FLOAT),
    Quant("Q8_0", 8.5, Q8), Quant("Q6_K", 6.56, KQUANT), Quant("Q6_K_L", 6.7, KQUANT),
    Quant("Q5_K_M", 5.69, KQUANT), Quant("Q5_K_S", 5.54, KQUANT), Quant("Q5_K_L", 5.9, KQUANT),
    Quant("Q5_0", 5.54, LEGACY), Quant("Q5_1", 6.04, LEGACY),
    Quant("Q4_K_M", 4.85, KQUANT), Quant("Q4_K_S", 4.58, KQUANT), Quant("Q4_K_L", 5.0, KQUANT),
    Quant("UD-Q4_K_XL", 4.9, KQUANT), Quant("Q4_0", 4.55, LEGACY), Quant("Q4_1", 5.0, LEGACY),
    Quant("Q1_0", 1.125, LEGACY),  # GGML_QUANT_SIZES: 18 bytes a block of 128 (gguf 0.19)
    Quant("Q3_K_L", 4.27, KQUANT), Quant("Q3_K_M", 3.91, KQUANT), Quant("Q3_K_S", 3.5, KQUANT),
    Quant("UD-Q3_K_XL", 4.0, KQUANT), Quant("Q2_K", 3.35, KQUANT), Quant("Q2_K_S", 3.0, KQUANT),
    Quant("UD-Q2_K_XL", 3.2, KQUANT),
    Quant("IQ4_XS", 4.25, IQUANT), Quant("IQ4_NL", 4.5, IQUANT), Quant("IQ3_M", 3.66, IQUANT),
    Quant("IQ3_S", 3.44, IQUANT), Quant("IQ3_XS", 3.3, IQUANT), Quant("IQ3_XXS", 3.06, IQUANT),
    Quant("IQ2_M", 2.7, IQUANT), Quant("IQ2_S", 2.5, IQUANT), Quant("IQ2_XS", 2.31, IQUANT),
    Quant("IQ2_XXS", 2.06, IQUANT), Quant("IQ1_M", 1.75, IQUANT), Quant("IQ1_S", 1.56, IQUANT),
    Quant("TQ1_0", 1.69, IQUANT), Quant("TQ2_0", 2.06, IQUANT), Quant("MXFP4", 4.25, IQUANT),
    Quant("NVFP4", 4.5, IQUANT),  # GGML_QUANT_SIZES: 36 bytes a block of 64 (gguf 0.19)
    # MLX affine quantization, group 64 with an fp16 scale and bias per group (mlx.nn.quantize): bits + 32/64.
    Quant("3bit", 3.5, AFFINE), Quant("4bit", 4.5, AFFINE), Quant("5bit", 5.5, AFFINE), Quant("6bit", 6.5, AFFINE),
    Quant("8bit", 8.5, AFFINE), Quant("mxfp4", 4.25, AFFINE),
    # Transformers / vLLM / SGLang checkpoints (quantization_config): AWQ and GPTQ int4 group 128 with a scale and
    # zero per group, FP8 and INT8 per-channel, NVFP4 (4 bits and an FP8 scale per 16).
    Quant("fp16", 16, FLOAT), Quant("bf16", 16, FLOAT), Quant("fp8", 8, FP8), Quant("int8", 8, FP8),
    Quant("int4", 4.25, INT4), Quant("awq", 4.25, INT4), Quant("gptq", 4.25, INT4), Quant("nvfp4", 4.5, INT4),
    # gpt-oss's checkpoints: MXFP4 experts, 4 bits and a shared 8-bit exponent per 32 (quant_method "mxfp4")
    Quant("mxfp4", 4.25, INT4),
)

_ALIASES = {"Q4_K": "Q4_K_M", "Q5_K": "Q5_K_M", "Q3_K": "Q3_K_M", "FP16": "F16", "FP32": "F32", "FLOAT16": "F16",
            "BFLOAT16": "BF16", "4BIT": "4bit", "8BIT": "8bit", "3BIT": "3bit", "6BIT": "6bit", "5BIT": "5bit",
            "MLX4": "4bit", "MLX8": "8bit", "INT4_AWQ": "awq", "INT4_GPTQ": "gptq", "W4A16": "int4",
            "W8A8": "int8", "FP8_E4M3": "fp8", "Q8": "Q8_0", "Q4": "Q4_K_M", "Q6": "Q6_K", "Q5": "Q5_K_M",
            "UD-Q4_K_XL": "UD-Q4_K_XL", "Q4_K_XL": "UD-Q4_K_XL", "Q3_K_XL": "UD-Q3_K_XL", "Q2_K_XL": "UD-Q2_K_XL",
            # gpt-oss GGUFs: MXFP4 experts (LlamaFileType MOSTLY_MXFP4_MOE); Q4_0 repacked for ARM (Q4_0_4_4, ..., no
            # longer written by llama.cpp, which repacks Q4_0 at load); bitsandbytes' 4- and 8-bit checkpoints
            # (from_config reads them as int4 and int8 too)
            "MXFP4_MOE": "MXFP4", "Q4_0_4_4": "Q4_0", "Q4_0_4_8": "Q4_0", "Q4_0_8_8": "Q4_0",
            "NF4": "int4", "BNB_4BIT": "int4", "BNB_NF4": "int4", "BNB_8BIT": "int8", "LLM_INT8": "int8"}
_BY_NAME = {q.name.upper(): q for q in _TABLE}  # a name runtimes share (bf16, mxfp4): the last; see for_runtime
GGUF_FAMILIES = (FLOAT, Q8, KQUANT, LEGACY, IQUANT)  # what a GGUF file's tensors are (llama.cpp's runtime)


def for_runtime(q: Quant, families: tuple) -> Quant | None:
    """``q``, or the quantization of the same name in one of ``families`` (GGUF's MXFP4, MLX's and a serving
    engine's mxfp4 are three); None when the runtime has none of that name."""
    if q.family in families:
        return q
    return next((o for o in _TABLE if o.name.upper() == q.name.upper() and o.family in families), None)


_BLOCK = re.compile(r"^(?:UD-)?(Q\d_K)(?:_[A-Z]+)?$")
# Prefixes of gguf's GGMLQuantizationType / LlamaFileType names (and our "MOSTLY_"/"ALL_" spellings), cut once.
_PREFIXES = re.compile(r"^(MOSTLY_|ALL_|GGML_TYPE_|LLAMA_FTYPE_MOSTLY_|LLAMA_FTYPE_ALL_)")


def block(q: Quant) -> str:
    """The block type a quantization's decode kernel unpacks: a K-quant mix by its main type (Q4_K_M, Q4_K_S and
    UD-Q4_K_XL are Q4_K), any other by its name. Decode speeds are measured per block type (model "unpack")."""
    m = _BLOCK.match(q.name)
    return m.group(1) if m else q.name


def _norm(name: str) -> str:
    s = name.strip().upper().replace("-", "_").replace(" ", "")
    s = _PREFIXES.sub("", s)
    s = s.replace("UD_", "UD-")
    return s


_SEEN: dict[str, Quant] = {}  # names already looked up (a query looks up its engine's defaults per draft)


def lookup(name: str) -> Quant:
    """The quantization a person names ("q4_k_m", "Q4_K", "MLX 4bit", "UD-Q4_K_XL", "fp8"); else a BadInput."""
    if name in _SEEN:
        return _SEEN[name]
    q = _lookup(name)
    _SEEN[name] = q
    return q


def _lookup(name: str) -> Quant:
    s = _norm(name).replace("MLX", "").strip("_") or _norm(name)
    s = _ALIASES.get(s, s)
    q = _BY_NAME.get(s.upper())
    if q is not None:
        return q

    close = difflib.get_close_matches(s.upper(), list(_BY_NAME), n=3, cutoff=0.5)
    names = [_BY_NAME[c].name for c in close] or ["Q4_K_M", "Q8_0", "4bit"]
    raise BadInput(f"unknown quantization {name!r}; closest: {', '.join(names)} (GGUF types such as Q4_K_M, MLX "
                   "4bit/8bit, or bf16/fp8/int4)")


def from_config(config: dict | None) -> Quant | None:
    """The quantization a config.json declares: MLX ``quantization`` {bits}, else ``quantization_config``."""
    if not isinstance(config, dict):
        return None
    mlx = config.get("quantization")
    if isinstance(mlx, dict) and isinstance(mlx.get("bits"), int):
        if "mxfp4" in str(mlx.get("mode") or ""):
            return for_runtime(lookup("mxfp4"), (AFFINE,))
        return lookup(f"{mlx['bits']}bit") if mlx["bits"] in (3, 4, 5, 6, 8) else None
    qc = config.get("quantization_config")
    if not isinstance(qc, dict):
        text = config.get("text_config")
        qc = text.get("quantization_config") if isinstance(text, dict) else None
    if not isinstance(qc, dict):
        return None
    method = str(qc.get("quant_method") or "").lower()
    bits = qc.get("bits") or qc.get("w_bit") or qc.get("num_bits")
    if method in ("fp8", "fbgemm_fp8") or "fp8" in str(qc.get("fmt") or ""):
        return lookup("fp8")
    if method == "mxfp4":
        return for_runtime(lookup("mxfp4"), (INT4,))
    if method in ("awq", "gptq", "autoround", "auto-round") or bits == 4:
        return lookup("int4")
    if method in ("bitsandbytes",):
        return lookup("int4") if qc.get("load_in_4bit") else lookup("int8")
    if "nvfp4" in method or "modelopt" in method:
        return lookup("nvfp4")
    if bits == 8 or method in ("compressed-tensors",):
        return lookup("int8")
    return None


def from_gguf_file_type(file_type: str | None) -> Quant | None:
    """The quantization of a GGUF file's ``general.file_type`` (llama.cpp's LlamaFileType name, MOSTLY_Q4_K_M)."""
    if not file_type:
        return None
    try:
        return for_runtime(lookup(file_type), GGUF_FAMILIES)
    except BadInput:
        return None

