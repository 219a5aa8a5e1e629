"""One setup: what a pair runs as on an engine. The speed model estimates it and the engine's module prints its launch
command from it (``Engine.launch(setup)``), so the figure and the command cannot disagree.

A :class:`Setup` names the engine and release, the device, where each side's weights come from (:class:`Source`:
an HF repo, a GGUF repo and the file's tag, an MLX conversion, a local file or directory), the quantization each
side runs at, and the draft tokens per round. Build one directly, e.g. for a measurement::

    Setup("llama.cpp", "0c1e57098", Source("org/Model-GGUF", GGUF, "Q4_K_M", tag="Q4_K_M"),
          Source("org/Small", HF, "Q8_0"), draft_tokens=3, hardware="RTX 4090")

``answer/setup.py`` chooses the sources of a query's pairs from the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass

HF, GGUF, MLX, FILE, DIR = "hf", "gguf", "mlx", "file", "dir"  # where a side's weights come from
FLOATS = ("bf16", "fp16", "F16", "BF16", "F32")  # quantizations that are the checkpoint's own float weights


@dataclass(frozen=True)
class Source:
    """One side of a setup: the repo (or local path) the engine loads, what it is, and the quantization it runs at.

    ``kind``: ``hf`` (a Transformers checkpoint), ``gguf`` (a GGUF repo: ``tag`` is the quant tag llama-server's
    ``-hf REPO:TAG`` picks), ``mlx`` (an MLX conversion), ``file`` (a local GGUF file), ``dir`` (a local
    checkpoint directory). ``quant``: the quantization the estimate assumes (a :mod:`indexer.speed.quant` name);
    ``stored``: the repo's own quantization when it declares one (None: float weights, or unknown). An ``hf`` side
    whose ``quant`` is not its stored one is converted by the launch steps (llama.cpp, MLX) or quantized when the
    engine loads it (vLLM and SGLang fp8)."""

    repo: str
    kind: str = HF
    quant: str | None = None
    tag: str | None = None
    stored: str | None = None
    note: str | None = None  # why the side is not what was asked (a GGUF repo without the asked type's file)

    def to_dict(self) -> dict:
        """The source as the JSON answer and the measurements table keep it (``note`` only when there is one)."""
        d = {"repo": self.repo, "kind": self.kind, "quant": self.quant, "tag": self.tag, "stored": self.stored}
        return {**d, "note": self.note} if self.note else d


@dataclass(frozen=True)
class Setup:
    """Where and how a pair runs: engine and release, both sources, the draft tokens per round (None: the engine's
    own default), the method (``draft_model``, or a head's: eagle, eagle3, mtp, dflash) and the device's name."""

    engine: str
    release: str
    target: Source
    draft: Source | None = None
    draft_tokens: int | None = None
    method: str = "draft_model"
    hardware: str | None = None

    def to_dict(self) -> dict:
        """The ``setup`` object of the JSON answers (docs/json.md)."""
        return {"engine": self.engine, "release": self.release, "hardware": self.hardware, "method": self.method,
                "target": self.target.to_dict(), "draft": self.draft.to_dict() if self.draft else None,
                "draft_tokens": self.draft_tokens}


def source_from_dict(d: dict | None) -> Source | None:
    """A source from its ``to_dict`` form (None stays None)."""
    return Source(**d) if d else None


def from_dict(d: dict) -> Setup:
    """A setup from its ``to_dict`` form."""
    target = source_from_dict(d["target"])
    assert target is not None  # every setup has a target
    return Setup(d["engine"], d["release"], target, source_from_dict(d.get("draft")),
                 d.get("draft_tokens"), d.get("method") or "draft_model", d.get("hardware"))


def named(name: str, quant: str | None = None) -> Source:
    """A side known only by the name a command takes: a local ``.gguf`` file, ``REPO:TAG`` or a ``…-GGUF`` repo
    (a GGUF repo), a local directory, else an HF repo."""
    if name.lower().endswith(".gguf"):
        return Source(name, FILE, quant)
    repo, _, tag = name.partition(":")
    if name.startswith(("/", ".")):
        return Source(name, DIR, quant)
    if tag or "gguf" in repo.lower():
        return Source(repo, GGUF, quant or (tag or None), tag=tag or None)
    return Source(name, HF, quant)


def plain(engine: str, release: str, target: str, draft: str | None, draft_tokens: int | None = None,
          method: str = "draft_model") -> Setup:
    """A setup of two sides known only by name (:func:`named`), at the quantizations they are stored in."""
    return Setup(engine, release, named(target), named(draft) if draft else None, draft_tokens, method)


def noted(setup: Setup, steps: list[str]) -> list[str]:
    """The steps with the sources' notes as a shell comment after the last one (what differs from what was asked)."""
    notes = [s.note for s in (setup.target, setup.draft) if s is not None and s.note]
    comment = f"  # {'; '.join(notes)}"
    if not notes or not steps or steps[-1].endswith(comment):  # nothing to say, or said by the engine's module
        return steps
    return [*steps[:-1], f"{steps[-1]}{comment}"]


def is_float(quant: str | None) -> bool:
    """A float quantization (the checkpoint's own weights): nothing to quantize."""
    return quant is None or quant.upper() in {q.upper() for q in FLOATS}


def requantized(src: Source | None) -> str | None:
    """The quantization an HF side runs at that its checkpoint does not store (None: it runs as stored, or in
    float): what a serving engine quantizes at load (FP8) or the steps convert to."""
    if src is None or src.kind != HF or is_float(src.quant) or src.quant == src.stored:
        return None
    return src.quant


def text(steps: list[str]) -> str:
    """The steps as one shell line (each runs only if the one before succeeded)."""
    return " && ".join(steps)
