"""Temporary directories that go away whole, Ctrl-C or not."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def scratch_dir(prefix: str, dir: str | os.PathLike | None = None) -> Iterator[str]:
    """A temporary directory removed whole on the way out, even when a Ctrl-C lands while it is being
    removed (``TemporaryDirectory`` leaves the rest behind then); the interrupt is raised after."""
    path = tempfile.mkdtemp(prefix=prefix, dir=dir)
    try:
        yield path
    finally:
        try:
            shutil.rmtree(path, ignore_errors=True)
        except KeyboardInterrupt:
            shutil.rmtree(path, ignore_errors=True)
            raise
