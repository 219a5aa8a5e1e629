"""Content-addressed store of full vocabularies, beside the catalog (not published with it).

Two formats, both zlib-compressed and named by the sha256 of their content, so writing is
idempotent and reading can verify the content against its name:

* ``<root>/<sha[:2]>/<sha>.json.z``: a get_vocab() mapping, the canonical serialization whose
  sha256 *is* the vocabulary fingerprint;
* ``<root>/<sha[:2]>/<sha>.tokens.z``: a GGUF token list (the text of every id, in id order),
  named by ``tokens_sha256`` (sha256 of each token's UTF-8 text followed by a NUL byte, the
  definition of ../shared/corpus/oracle-engines.json), stored as a JSON list;
* ``<root>/<sha[:2]>/<sha>.counts.z``: the id counts of that vocabulary's tokenizer over the reference
  text (``indexer.vocab.agreement``), with the sha256 of the text they were taken over, as JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import zlib
from pathlib import Path

from .dburl import resolve_url, sqlite_file

DEFAULT_ROOT = "data/tokens"


def default_dir(db: str | None = None) -> str:
    """``tokens/`` next to a SQLite catalog; ``$INDEXER_TOKENS`` or data/tokens otherwise."""
    if os.environ.get("INDEXER_TOKENS"):
        return os.environ["INDEXER_TOKENS"]
    path = sqlite_file(resolve_url(db))
    return os.path.join(os.path.dirname(path) or ".", "tokens") if path is not None else DEFAULT_ROOT


def default_root(db: str | None = None) -> Path:
    """:func:`default_dir` as a Path."""
    return Path(default_dir(db))


class TokenStore:
    """Full vocabularies, GGUF token lists and id counts under one root, named by their sha256. Reading
    works on strings (``os.path``): a check reads the store and loads no pathlib."""

    def __init__(self, root: str | os.PathLike):
        self._dir = os.fspath(root)

    @property
    def root(self) -> Path:
        """The store's directory."""
        return Path(self._dir)

    def _file(self, sha: str, suffix: str) -> str:
        """Where the item ``sha`` of kind ``suffix`` is stored; refuses anything but a sha256 so no name escapes
        the root."""
        if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
            raise ValueError(f"not a sha256 fingerprint: {sha!r}")
        return os.path.join(self._dir, sha[:2], sha + suffix)

    def path(self, sha: str) -> Path:
        """Where a vocabulary is stored."""
        return Path(self._file(sha, ".json.z"))

    def has(self, sha: str) -> bool:
        """Whether the vocabulary is stored, so a fingerprint seen before is not written again."""
        return self.path(sha).exists()

    def put(self, sha: str, canonical: bytes) -> bool:
        """Store the canonical bytes of a vocabulary; False when it was already there."""
        dest = self.path(sha)
        if dest.exists():
            return False

        if hashlib.sha256(canonical).hexdigest() != sha:
            raise ValueError("canonical bytes do not match their fingerprint")
        _write_compressed(dest, canonical)
        return True

    def put_fingerprint(self, fp) -> bool:
        """Store a fingerprint's canonical vocabulary unless it is there (skips serializing)."""
        if self.has(fp.vocab_sha256):
            return False
        return self.put(fp.vocab_sha256, fp.canonical_bytes())

    def tokens_path(self, sha: str) -> Path:
        """Where a GGUF token list is stored, beside the vocabulary of the same name."""
        return self.path(sha).with_name(f"{sha}.tokens.z")

    def has_tokens(self, sha: str) -> bool:
        """Whether the GGUF token list is stored, so it is written once."""
        return self.tokens_path(sha).exists()

    def put_tokens(self, sha: str, tokens: list[str] | tuple[str, ...]) -> bool:
        """Store a GGUF token list under its ``tokens_sha256``; False when it was already there."""
        dest = self.tokens_path(sha)
        if dest.exists():
            return False
        if tokens_sha256(tokens) != sha:
            raise ValueError("token list does not match its tokens_sha256")
        data = json.dumps(list(tokens), ensure_ascii=False).encode("utf-8", "surrogatepass")
        _write_compressed(dest, data)
        return True

    def get_tokens(self, sha: str) -> list[str]:
        """The GGUF token list stored under ``sha`` (KeyError when absent)."""
        try:
            raw = zlib.decompress(_read(self._file(sha, ".tokens.z")))
        except FileNotFoundError:
            raise KeyError(sha) from None
        return json.loads(raw.decode("utf-8", "surrogatepass"))

    def counts_path(self, sha: str) -> Path:
        """Where the reference-text id counts of a vocabulary are stored."""
        return self.path(sha).with_name(f"{sha}.counts.z")

    def put_counts(self, sha: str, text_sha256: str, counts: dict[int, int]) -> None:
        """Store a tokenizer's id counts over the reference text (replacing counts of another text)."""
        data = json.dumps({"text_sha256": text_sha256, "counts": sorted(counts.items())}).encode()
        _write_compressed(self.counts_path(sha), data)

    def get_counts(self, sha: str, text_sha256: str) -> dict[int, int] | None:
        """The id counts stored for ``sha`` over the text ``text_sha256``; None when absent or stale."""
        try:
            data = json.loads(zlib.decompress(_read(self._file(sha, ".counts.z"))))
        except (OSError, ValueError, zlib.error):
            return None
        if not isinstance(data, dict) or data.get("text_sha256") != text_sha256:
            return None
        return {int(i): int(n) for i, n in data.get("counts") or ()}

    def get(self, sha: str) -> dict[str, int]:
        """The token->id mapping stored under ``sha``."""
        path = self._file(sha, ".json.z")
        try:
            raw = zlib.decompress(_read(path))
        except FileNotFoundError:
            raise KeyError(sha) from None
        return dict(json.loads(raw))


MAX_ITEM_BYTES = 512 << 20  # one stored item, decompressed (the largest vocabularies are a few tens of MB)


def check_item(name: str, compressed: bytes) -> None:
    """Check a store file from elsewhere (a pulled ``tokens.tar``) against its name ``<sha[:2]>/<sha>.<kind>.z``:
    a vocabulary must hash to ``sha``, a token list's ``tokens_sha256`` must be ``sha``, id counts must be counts.
    Raises ValueError saying what is wrong; decompression stops at :data:`MAX_ITEM_BYTES`."""
    folder, _, file = name.partition("/")
    sha, _, kind = file.partition(".")
    if len(sha) != 64 or folder != sha[:2] or kind not in ("json.z", "tokens.z", "counts.z"):
        raise ValueError("not a token store name")
    z = zlib.decompressobj()
    try:
        raw = z.decompress(compressed, MAX_ITEM_BYTES + 1)
    except zlib.error as e:
        raise ValueError(f"not zlib data ({e})") from None
    if len(raw) > MAX_ITEM_BYTES or z.unconsumed_tail or not z.eof:
        raise ValueError(f"over {MAX_ITEM_BYTES} bytes decompressed, or cut short")
    if kind == "json.z":
        if hashlib.sha256(raw).hexdigest() != sha:
            raise ValueError("the vocabulary does not hash to its name")
        return
    try:
        data = json.loads(raw.decode("utf-8", "surrogatepass"))
    except ValueError as e:
        raise ValueError(f"not JSON ({str(e)[:80]})") from None
    if kind == "tokens.z":
        if not (isinstance(data, list) and all(isinstance(t, str) for t in data)) or tokens_sha256(data) != sha:
            raise ValueError("the token list does not hash to its name")
        return
    counts = data.get("counts") if isinstance(data, dict) else None
    text = data.get("text_sha256") if isinstance(data, dict) else None
    if not (isinstance(text, str) and isinstance(counts, list) and all(
            isinstance(c, list) and len(c) == 2 and all(type(x) is int and x >= 0 for x in c) for c in counts)):
        raise ValueError("not id counts ({\"text_sha256\": ..., \"counts\": [[id, n], ...]})")


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def tokens_sha256(tokens) -> str:
    """sha256 over each token's UTF-8 text + b"\\0", in id order (oracle-engines.json ``rules``)."""
    h = hashlib.sha256()
    for tok in tokens:
        h.update(tok.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def _write_compressed(dest: Path, data: bytes) -> None:
    """zlib-compress ``data`` into ``dest`` atomically (temp file + rename): readers never see half a file. The temp
    file is named by process and thread, so no other writer shares it (``tempfile``, which would name it at random,
    costs a query's start 5 ms of imports)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "wb") as f:
        f.write(zlib.compress(data, 6))
    os.replace(tmp, dest)
