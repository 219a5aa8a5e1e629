"""Content-addressed store of full vocabularies, beside the catalog (not published with it).

Each entry is the canonical serialization whose sha256 *is* the fingerprint, zlib-
compressed, at ``<root>/<sha[:2]>/<sha>.json.z``: writing is idempotent and reading can
verify the content against its name.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zlib
from pathlib import Path

from .db import resolve_url, sqlite_path

DEFAULT_ROOT = "data/tokens"


def default_root(db: str | None = None) -> Path:
    """``tokens/`` next to a SQLite catalog; ``$INDEXER_TOKENS`` or data/tokens otherwise."""
    if os.environ.get("INDEXER_TOKENS"):
        return Path(os.environ["INDEXER_TOKENS"])
    path = sqlite_path(resolve_url(db))
    return path.parent / "tokens" if path is not None else Path(DEFAULT_ROOT)


class TokenStore:
    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def path(self, sha: str) -> Path:
        if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
            raise ValueError(f"not a sha256 fingerprint: {sha!r}")
        return self.root / sha[:2] / f"{sha}.json.z"

    def has(self, sha: str) -> bool:
        return self.path(sha).exists()

    def put(self, sha: str, canonical: bytes) -> bool:
        """Store the canonical bytes of a vocabulary; False when it was already there."""
        dest = self.path(sha)
        if dest.exists():
            return False
        if hashlib.sha256(canonical).hexdigest() != sha:
            raise ValueError("canonical bytes do not match their fingerprint")
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=dest.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(zlib.compress(canonical, 6))
        os.replace(tmp, dest)
        return True

    def put_fingerprint(self, fp) -> bool:
        if self.has(fp.vocab_sha256):
            return False
        return self.put(fp.vocab_sha256, fp.canonical_bytes())

    def get(self, sha: str) -> dict[str, int]:
        """The token->id mapping stored under ``sha``."""
        path = self.path(sha)
        try:
            raw = zlib.decompress(path.read_bytes())
        except FileNotFoundError:
            raise KeyError(sha) from None
        return dict(json.loads(raw))
