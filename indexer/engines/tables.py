"""The tables each engine keeps in its own source, per release, as ``scripts/extract_tables.py`` extracted them
(:mod:`indexer.engines.extract`) into ``indexer/engines/data/<engine>/<release>.json``. The engine modules read
their registries, model-type lists and class-name exclusions here instead of copying them.
"""

from __future__ import annotations

import json
import os
import re

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
_CACHE: dict = {}
# A citation in a module's text: a path with one of SUFFIXES, a colon, a line or range, and more ranges after
# commas ("cache_utils.py:1082, 1162-1207").
CITED = re.compile(r"(?P<file>[A-Za-z_][\w./-]*\.(?:py|cpp|h|c|go|txt)):(?P<ranges>\d+(?:-\d+)?(?:, \d+(?:-\d+)?)*)"
                   r"(?![\w.-])")


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


def relined(engine: str, release: str) -> dict[str, str]:
    """The citations (read at another release) whose lines moved at ``release``: citation -> its ``file:line``
    there, as the audit re-pinned them (``audited.json``, :mod:`indexer.engines.audit`)."""
    key = (engine, "audited")
    if key not in _CACHE:
        path = os.path.join(DATA, engine.replace(".", ""), "audited.json")
        _CACHE[key] = json.load(open(path, encoding="utf-8")) if os.path.isfile(path) else {}
    return {k: v["at"] if isinstance(v, dict) else v for read_at in _CACHE[key].get(release, {}).values()
            for k, v in read_at.items() if v != "here"}


def ranges(text: str) -> list[tuple[int, int]]:
    """The line ranges of a citation's text: "12-14, 20" gives [(12, 14), (20, 20)]."""
    out = []
    for r in text.split(", "):
        a, _, b = r.partition("-")
        out.append((int(a), int(b or a)))
    return out


def reline(text: str, places: dict) -> str:
    """``text`` with each citation that moved at a release (``places``: citation -> its ``file:line`` there) at its
    place: ``"a.py:10-12, 40"`` with ``a.py:10-12`` at ``a.py:14-16`` becomes ``"a.py:14-16, 40"``."""
    if not places:
        return text

    def one(m: re.Match) -> str:
        parts: list[tuple[str, str]] = []
        for a, b in ranges(m["ranges"]):
            key = f"{m['file']}:{a}" + (f"-{b}" if b != a else "")
            file, _, lines = places.get(key, key).rpartition(":")
            if parts and parts[-1][0] == file:
                parts[-1] = (file, f"{parts[-1][1]}, {lines}")
            else:
                parts.append((file, lines))
        return "; ".join(f"{f}:{lines}" for f, lines in parts)

    return CITED.sub(one, text)
