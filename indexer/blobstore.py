"""Content-addressed store of downloaded Hub files (tokenizer files, config.json), by git blob id.

The crawler writes each blob once; fingerprinting, config parsing and the engine-fact
derivation in ``compute`` read it back through this one API, so the on-disk layout
(plain files today) can change without touching its readers.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .db import resolve_url, sqlite_path
from .hub import safe_blob_id, safe_name


def default_root(db: str | None = None) -> Path:
    """``blobs/`` next to a SQLite catalog; data/blobs otherwise."""
    path = sqlite_path(resolve_url(db))
    return (path.parent if path is not None else Path("data")) / "blobs"


class BlobStore:
    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def path(self, blob_id: str) -> Path:
        return self.root / safe_blob_id(blob_id)

    def has(self, blob_id: str) -> bool:
        return self.path(blob_id).exists()

    def read(self, blob_id: str) -> bytes:
        """The blob's bytes; KeyError when it is not stored."""
        try:
            return self.path(blob_id).read_bytes()
        except FileNotFoundError:
            raise KeyError(blob_id) from None

    def size(self, blob_id: str) -> int:
        """Bytes of the blob as downloaded."""
        return self.path(blob_id).stat().st_size

    def export(self, files: dict[str, str], directory: str | os.PathLike) -> Path:
        """Lay out ``{filename: blob_id}`` as real files in ``directory`` (for fingerprinting)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for name, blob_id in files.items():
            src, dst = self.path(blob_id), directory / safe_name(name)
            if not src.exists():
                raise KeyError(blob_id)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
        return directory
