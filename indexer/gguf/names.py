"""Which .gguf files are models and which one a name picks, as llama-server's own ``-hf REPO[:QUANT]`` download
code reads names (common/download.cpp at llama.cpp@0c1e57098): the quant tag is the last ``[-.]TAG`` of the name
before ``.gguf`` and a ``-00001-of-00003`` suffix (:482-510 ``get_gguf_split_info``); split files keep all metadata
in shard 1; projectors, imatrix files and speculator heads are not models (:637-653 ``gguf_filename_is_model``).
Names only: no file is opened here but a directory's listing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from ..files import InputError

_SPLIT = re.compile(r"^(.+)-([0-9]{5})-of-([0-9]{5})$", re.IGNORECASE)  # common/download.cpp:483
_TAG = re.compile(r"[-.]([A-Z0-9_]+)$", re.IGNORECASE)  # common/download.cpp:484
_NOT_MODEL = ("mmproj", "imatrix", "mtp-", "eagle3-", "dflash-", "dspark-")  # common/download.cpp:647-652


def split_info(filename: str) -> tuple[str, int, int]:
    """(quant tag upper-cased or "", shard index, shard count), as llama-server parses a GGUF name."""
    prefix = filename.rsplit("/", 1)[-1]
    if not prefix.lower().endswith(".gguf"):
        return "", 1, 1
    prefix = prefix[:-5]
    index = count = 1
    m = _SPLIT.match(prefix)
    if m:
        prefix, index, count = m.group(1), int(m.group(2)), int(m.group(3))
    t = _TAG.search(prefix)
    return (t.group(1).upper() if t else ""), index, count


def is_model_file(filename: str) -> bool:
    """A .gguf that llama-server would load as a model (not a projector, imatrix or speculator head)."""
    name = filename.rsplit("/", 1)[-1]
    return name.lower().endswith(".gguf") and not any(w in name for w in _NOT_MODEL)


def choose_file(files: dict[str, int]) -> str | None:
    """The one GGUF to read of a repo's ``{path: size}``: shard 1 of each model, then the smallest.

    Every quant of a repo carries the same vocabulary keys; the smallest first shard costs the least when
    a read has to go long (a huge vocabulary)."""
    firsts = {p: s for p, s in files.items() if is_model_file(p) and split_info(p)[1] == 1}
    return min(firsts, key=lambda p: (firsts[p], p)) if firsts else None


def model_files(files: Mapping[str, int | None]) -> list[tuple[str, int, int | None]]:
    """A repo's GGUF model files as llama-server counts them, sorted by path: (path of shard 1, shards, total size;
    None when a shard's size is unknown or a shard is missing). A split model is one file: its shards share the
    prefix and count (common/download.cpp:525-540 ``get_split_files``); projectors and heads are not models."""
    sets: dict[tuple[str, int], dict[int, tuple[str, int | None]]] = {}
    for path, size in files.items():
        if not is_model_file(path):
            continue
        _, index, count = split_info(path)
        prefix = _SPLIT.sub(r"\1", path[:-5]) if count > 1 else path
        sets.setdefault((prefix, count), {})[index] = (path, size or None)
    out = []
    for (_, count), shards in sets.items():
        if 1 not in shards:
            continue  # llama-server loads a split model from its first shard only
        sizes = [shards[i][1] if i in shards else None for i in range(1, count + 1)]
        total = sum(s for s in sizes if s) if all(sizes) else None
        out.append((shards[1][0], count, total))
    return sorted(out)


def hf_matches(paths, tag: str) -> list[str]:
    """The model files ``-hf REPO:TAG`` can pick among ``paths``: shard 1 of each model whose path holds ``TAG``
    followed by ``.`` or ``-``, case-insensitive (common/download.cpp:655-673 ``find_best_model``, which takes the
    first of them in the Hub's tree order)."""
    pattern = re.compile(re.escape(tag) + "[.-]", re.IGNORECASE)
    return [p for p in paths if is_model_file(p) and pattern.search(p) and split_info(p)[1] == 1]


def local_gguf(path: str | Path) -> Path | None:
    """The .gguf a local argument names: the file itself, or the one model .gguf (shard 1) in a directory."""
    p = Path(path).expanduser()
    if p.is_file() and p.name.lower().endswith(".gguf"):
        return p
    if p.is_dir():
        found = {str(f): f.stat().st_size for f in p.iterdir() if f.is_file() and is_model_file(f.name)}
        if not found:
            return None
        firsts = [f for f in found if split_info(f)[1] == 1]
        if len(firsts) > 1:
            names = ", ".join(sorted(Path(f).name for f in firsts))
            raise InputError("error", f"{p}: holds {len(firsts)} GGUF models ({names}); name the file")
        return Path(firsts[0]) if firsts else None
    return None
