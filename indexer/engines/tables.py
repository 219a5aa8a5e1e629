"""The tables each engine keeps in its own source, per release, as ``scripts/extract_tables.py`` extracted them
(:mod:`indexer.engines.extract`) into ``indexer/engines/data/<engine>/<release>.json``. The engine modules read
their registries, model-type lists and class-name exclusions here instead of copying them.
"""

from __future__ import annotations

import json
import os

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
_CACHE: dict = {}


def tables(engine: str, release: str) -> dict:
    """The extracted tables of ``engine`` at ``release`` (name -> {"source", "values", ...})."""
    key = (engine, release)
    if key not in _CACHE:
        with open(os.path.join(DATA, engine, f"{release}.json"), encoding="utf-8") as f:
            _CACHE[key] = json.load(f)["tables"]
    return _CACHE[key]


def values(engine: str, release: str, name: str):
    """One table's values."""
    return tables(engine, release)[name]["values"]


def source(engine: str, release: str, name: str) -> str:
    """One table's file:line."""
    return tables(engine, release)[name]["source"]


def releases(engine: str) -> tuple[str, ...]:
    """The releases extracted for ``engine`` (file names, unsorted order made stable)."""
    folder = os.path.join(DATA, engine)
    return tuple(sorted(n[:-5] for n in os.listdir(folder) if n.endswith(".json")))


def heads(engine: str, release: str, kinds=("eagle", "eagle3", "dflash", "dspark")) -> dict[str, str]:
    """The speculator registry's head classes at ``release``: class -> kind (eagle, eagle3, dflash, dspark)."""
    return {name: e["kind"] for name, e in values(engine, release, "speculative_models").items() if e["kind"] in kinds}
