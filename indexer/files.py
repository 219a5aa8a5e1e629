"""Safe reading of the small files a model directory holds (tokenizer files, config.json).

Every failure becomes an :class:`InputError` whose ``status`` is one of the catalog's
repo statuses, so the crawler can record it and the CLI can print one clear line.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from . import deferred
from .errors import InputError

# Per file. Kept at 64 MiB, not lowered for tokenizer.json: real ones reach 33 MB (Gemma 3's 262,144 tokens), and
# the fast fingerprint of a 58 MB one peaks at 0.6 GB in-process (about ten times the file), so a lower cap would
# refuse real repos without changing the order of the worst case; counting with the repo's own tokenizer, which
# costs more, runs in the tokenizer box under its memory limit (vocab/tokenbox.py).
DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024

# Files that decide what get_vocab() returns, in the order transformers consults them.
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.model",
    "vocab.txt",
    "tekken.json",
)
# Files whose presence alone makes a directory a tokenizer directory.
VOCAB_FILES = ("tokenizer.json", "vocab.json", "tokenizer.model", "vocab.txt", "tekken.json")
CONFIG_FILE = "config.json"
WANTED_FILES = (CONFIG_FILE, *TOKENIZER_FILES)


def check_dir(path: str | os.PathLike) -> Path:
    """The path as a directory, or an InputError naming what is wrong with it."""
    p = Path(path)
    if not p.exists():
        raise InputError("error", f"{p}: no such directory")
    if not p.is_dir():
        raise InputError("error", f"{p}: not a directory")
    return p


def check_size(path: Path, max_bytes: int) -> int:
    """The file's size, refusing one over the cap before anything reads it."""
    size = path.stat().st_size
    if size > max_bytes:
        raise InputError("too_large", f"{path.name}: {size} bytes is over the {max_bytes}-byte cap")
    return size


def read_bytes(path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """The file's bytes, never more than the cap."""
    check_size(path, max_bytes)
    return path.read_bytes()


def read_json(path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES, expect: type = dict):
    """Parse a JSON file, insisting on UTF-8 and on the top-level type ``expect``."""
    raw = read_bytes(path, max_bytes)
    data = _FAILED
    orjson = deferred.orjson  # 2-3x faster than json on multi-megabyte tokenizer files
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass  # stdlib json re-parses: its message is precise (and it accepts what orjson refuses)
    if data is _FAILED:
        data = _parse_stdlib(path, raw)
    if expect is not None and not isinstance(data, expect):
        raise InputError(
            "malformed", f"{path.name}: expected a JSON {expect.__name__}, got {type(data).__name__}"
        )
    return data


_FAILED = object()


def _parse_stdlib(path: Path, raw: bytes):
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError("malformed", f"{path.name}: not UTF-8 ({e.reason} at byte {e.start})") from None
    try:
        data = json.loads(text)
    except RecursionError:  # CPython's scanner recurses per level (orjson stops at 1024 levels too)
        raise InputError("malformed", f"{path.name}: JSON nested too deeply") from None
    except json.JSONDecodeError as e:
        # json's msg may end in "at", meaning the position (json/decoder.py: "Unterminated string starting at"):
        # the position is said as line and column, and the words without their dangling "at".
        what = e.msg.removesuffix(" at").removesuffix(" starting").lower()
        raise InputError("malformed", f"{path.name}: invalid JSON at line {e.lineno}, column {e.colno} ({what})") \
            from None
    return data


def read_optional_json(directory: Path, name: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES, expect=dict):
    """A JSON file of the directory, or None when absent: most tokenizer files are optional."""
    path = directory / name
    return read_json(path, max_bytes, expect) if path.is_file() else None


def sha256_file(path: Path) -> str:
    """The file's sha256, read in 1 MiB chunks so a big file is never held whole."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fsync_dir(directory: Path) -> None:
    """Make a rename inside ``directory`` durable (POSIX: the directory entry is data of the directory);
    best effort where the platform cannot open a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def has_tokenizer(directory: Path) -> bool:
    """Whether a directory holds any file a vocabulary is read from (else it has nothing to fingerprint)."""
    return any((directory / name).is_file() for name in VOCAB_FILES)
