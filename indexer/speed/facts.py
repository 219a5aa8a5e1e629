"""A model's speed facts (:class:`model.Shape`, its quantization) from what the catalog or a directory holds.

The config's part is read once, with the architecture facts (``vocab.params.speed_facts``, stored in the catalog's
``engine_facts.arch``), so an answer reads no config file: the Hub's parameter count, when known, wins over the
estimate from the config, and scales its active share.
"""

from __future__ import annotations

from ..vocab.params import estimate_from_name, speed_facts
from . import quant
from .model import Shape


def shape_from_facts(facts: dict | None, params: int | None = None, active: int | None = None,
                     name: str | None = None) -> Shape | None:
    """The shape of a model from its stored speed facts and the best known parameter count; None without a size."""
    facts = facts or {}
    estimate = facts.get("params_estimate")
    total = params or estimate
    active = active or facts.get("active_estimate")
    if total is None and name:
        by_name = estimate_from_name(name)
        total, active = (by_name.total, by_name.active) if by_name else (None, None)
    if not total:
        return None
    if active and params and estimate and facts.get("active_estimate"):
        active = int(facts["active_estimate"] * params / estimate)  # the Hub's count scales our split
    return Shape(params=int(total), active=int(active) if active else None, layers=facts.get("layers"),
                 hidden=facts.get("hidden"), vocab=facts.get("vocab"), tied=facts.get("tied"),
                 experts=facts.get("experts"), experts_per_token=facts.get("experts_per_token"),
                 kv_per_token=facts.get("kv_per_token"), state_layers=facts.get("state_layers"),
                 state_bytes=facts.get("state_bytes"))


def shape_from_config(config: dict | None, params: int | None = None, name: str | None = None) -> Shape | None:
    """The shape a ``config.json`` describes (the benchmarks and tests build models from configs)."""
    return shape_from_facts(speed_facts(config) if isinstance(config, dict) else None, params, None, name)


def quant_from_facts(facts: dict | None, gguf_file_type: str | None = None) -> quant.Quant | None:
    """The quantization a repo declares: its GGUF file type, else its config.json's (MLX or quantization_config)."""
    declared = (facts or {}).get("quantization") or {}
    return quant.from_gguf_file_type(gguf_file_type) or quant.from_config(declared)
