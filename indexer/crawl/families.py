"""Model families (``indexer/data/families.toml``, or ``$INDEXER_FAMILIES``): a repo's family, and crawl scopes."""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..resources import FAMILIES_PATH

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_PATH = FAMILIES_PATH


@dataclass(frozen=True)
class Family:
    """One ``[[family]]`` of families.toml: who publishes it, its name patterns and its crawl search terms."""

    name: str
    authors: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    search: tuple[str, ...] = field(default=())

    def matches_author(self, author: str | None) -> bool:
        """The repo's author is one of the family's (case-insensitive)."""
        return author is not None and author.lower() in (a.lower() for a in self.authors)

    def matches_name(self, name: str) -> bool:
        """The repo's name matches one of the family's shell patterns (case-insensitive)."""
        name = name.lower()
        return any(fnmatch.fnmatchcase(name, p.lower()) for p in self.patterns)


def load_families(path: str | os.PathLike | None = None) -> tuple[Family, ...]:
    """The families of ``path``, ``$INDEXER_FAMILIES`` or the packaged families.toml (parsed once)."""
    path = Path(path or os.environ.get("INDEXER_FAMILIES") or DEFAULT_PATH)
    return _load(str(path))


@lru_cache(maxsize=8)
def _load(path: str) -> tuple[Family, ...]:
    with open(path, "rb") as f:
        data = tomllib.load(f)
    out = []
    for item in data.get("family", []):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ValueError(f"{path}: every [[family]] needs a name")
        out.append(
            Family(
                name=item["name"],
                authors=tuple(item.get("authors", ())),
                patterns=tuple(item.get("patterns", ())),
                search=tuple(item.get("search", ())),
            )
        )
    return tuple(out)


def find_family(name: str, families=None) -> Family | None:
    """The family named ``name`` (case-insensitive), or None, for ``indexer crawl --family``."""
    for fam in families if families is not None else load_families():
        if fam.name.lower() == name.lower():
            return fam
    return None


def family_of(repo_id: str, base_models=(), families=None) -> str | None:
    """Author first, then base models' authors/names, then the repo's own name."""
    families = families if families is not None else load_families()
    author, _, name = repo_id.partition("/")
    for fam in families:
        if fam.matches_author(author):
            return fam.name
    for base in base_models or ():
        if not isinstance(base, str):
            continue
        b_author, _, b_name = base.partition("/")
        for fam in families:
            if fam.matches_author(b_author) or fam.matches_name(b_name or b_author):
                return fam.name
    for fam in families:
        if fam.matches_name(name or author):
            return fam.name
    return None
