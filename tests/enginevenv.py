"""Cached venvs that hold one engine release, for the tests that run the engine (tests/test_engine_run.py).

Layout under ``$INDEXER_ENGINE_VENVS`` (default ``~/.cache/indexer-engine-venvs``), kept between runs (CI clones
afresh but runs on the same machine, so only the first run builds):

* ``torch-2.13.0``: a venv with ``pip install torch==2.13.0``, the CPU build that lies on this machine's disk (a
  plain ``torch`` would fetch a multi-GB CUDA build);
* ``transformers-VER``: a venv with ``pip install transformers==VER`` that sees the torch venv's packages through
  a ``.pth`` file, so each release costs its own small install and torch is installed once.

Each is built in a temporary directory and renamed into place under a lock, so concurrent runs build it once and
never see half a venv. When no torch 2.13.0 file is available without the network the test skips (the one
reason it may); any other failure to build is an error.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

TORCH = "2.13.0"
ROOT = Path(os.environ.get("INDEXER_ENGINE_VENVS") or Path.home() / ".cache" / "indexer-engine-venvs")


def _site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


BUILT = ".indexer-built"  # written last: a venv without it is half-built and is built again


def _works(python: Path, modules: str) -> bool:
    return python.is_file() and subprocess.run([str(python), "-c", f"import {modules}"],
                                               capture_output=True).returncode == 0


def _pip(python: Path, *args: str) -> None:
    r = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"pip install {' '.join(args)} failed: {r.stderr[-2000:]}")


def torch_file_available() -> bool:
    """torch==2.13.0 resolves without the network (a wheel in pip's find-links)."""
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--no-deps", "-q",
                        f"torch=={TORCH}"], capture_output=True, text=True)
    return r.returncode == 0


def _build(name: str, setup) -> Path:
    """ROOT/name, built by ``setup(tmp_venv)`` unless present; returns its python."""
    final = ROOT / name
    ROOT.mkdir(parents=True, exist_ok=True)
    with open(ROOT / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (final / BUILT).is_file():
            shutil.rmtree(final, ignore_errors=True)
            tmp = Path(tempfile.mkdtemp(prefix=f"{name}.", dir=ROOT))
            try:
                subprocess.run([sys.executable, "-m", "venv", "--clear", str(tmp)], check=True, capture_output=True)
                setup(tmp)
                (tmp / BUILT).write_text("")
                tmp.chmod(0o755)  # mkdtemp's 0700 otherwise
                tmp.rename(final)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    return final / "bin" / "python"


def torch_site() -> Path:
    """The site-packages of the torch venv (built once; skips the test when no torch file is on this machine), to
    add to another interpreter's path (``site.addsitedir``)."""
    python = ROOT / f"torch-{TORCH}" / "bin" / "python"
    if not (python.parent.parent / BUILT).is_file():
        if not torch_file_available():
            pytest.skip(f"no torch {TORCH} file on this machine (pip install torch==2.13.0 would download a CUDA "
                        "build)")
        python = _build(f"torch-{TORCH}", lambda v: _pip(v / "bin" / "python", f"torch=={TORCH}"))
    return _site_packages(python.parent.parent)


def engine_venv(engine: str, version: str) -> Path:
    """The python of a venv with torch and ``engine==version`` (transformers only, for now)."""
    if engine != "transformers":
        raise ValueError(f"no engine venv for {engine}")
    python = ROOT / f"transformers-{version}" / "bin" / "python"
    if (python.parent.parent / BUILT).is_file():
        return python
    if not torch_file_available():
        pytest.skip(f"cannot build the transformers {version} venv: no torch {TORCH} file on this machine "
                    "(pip install torch==2.13.0 would download a CUDA build)")
    torch_python = _build(f"torch-{TORCH}", lambda v: _pip(v / "bin" / "python", f"torch=={TORCH}"))

    def setup(v: Path) -> None:
        # relative to this site-packages (site.addpackage joins it with the .pth's directory): the venv is renamed
        # from its temporary name, a sibling of its final one, and the whole cache may move
        site = _site_packages(v)
        (site / "_indexer_torch.pth").write_text(os.path.relpath(_site_packages(torch_python.parent.parent), site)
                                                 + "\n")
        _pip(v / "bin" / "python", f"transformers=={version}")
        if not _works(v / "bin" / "python", "torch, transformers"):
            raise RuntimeError(f"the transformers {version} venv cannot import torch")

    return _build(f"transformers-{version}", setup)


if __name__ == "__main__":  # .ci/run builds test_engine_run's venvs beside the test run (it uses one core)
    from test_engine_run import VERSIONS

    for v in sys.argv[1:] or VERSIONS:
        try:
            engine_venv("transformers", v)
        except pytest.skip.Exception as e:
            print(f"not built: {e}", file=sys.stderr)
