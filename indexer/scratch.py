"""Temporary directories that go away whole, Ctrl-C or not."""

from __future__ import annotations

import os
import shutil
import tempfile


class scratch_dir:  # noqa: N801 (used as a function: ``with scratch_dir(prefix) as tmp``)
    """A temporary directory removed whole on the way out, Ctrl-C or not.

    ``tempfile.mkdtemp`` can be interrupted after it made the directory and before it returns its name (Python
    runs the signal handler at the next call), and ``TemporaryDirectory`` leaves the rest behind when a Ctrl-C lands
    while it removes one. Here the name is known before the directory is made, a Ctrl-C raised once ``mkdir``
    returned removes it before ``__enter__`` raises (``with`` calls no ``__exit__`` then), and a removal that is
    interrupted is done again; the interrupt is raised after."""

    def __init__(self, prefix: str, dir: str | os.PathLike | None = None):
        self.base = os.fspath(dir) if dir is not None else tempfile.gettempdir()
        self.prefix = prefix
        self.path: str | None = None

    def __enter__(self) -> str:
        while True:
            path = os.path.join(self.base, f"{self.prefix}{os.urandom(6).hex()}")
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                continue
            except KeyboardInterrupt:  # raised once mkdir returned: the directory is this one's
                shutil.rmtree(path, ignore_errors=True)
                raise
            self.path = path
            return path

    def __exit__(self, *exc) -> None:
        if self.path is None:
            return
        try:
            shutil.rmtree(self.path, ignore_errors=True)
        except KeyboardInterrupt:
            shutil.rmtree(self.path, ignore_errors=True)
            raise
