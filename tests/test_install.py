"""The package ships what it reads: migrations and data are inside it and listed in its package-data.

`.ci/run` proves the same end to end (wheel, fresh venv, `db upgrade` and `demo` from another directory).
"""

from __future__ import annotations

import fnmatch
import sys
from pathlib import Path

import indexer
from indexer import resources
from indexer.crawl import families
from indexer.jobs import publish

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(indexer.__file__).resolve().parent


def test_shipped_files_live_inside_the_package():
    for path in (resources.MIGRATIONS_DIR, families.DEFAULT_PATH, publish.METADATA_PATH):
        assert path.resolve().is_relative_to(PACKAGE), path
        assert path.exists(), path
    assert (resources.MIGRATIONS_DIR / "env.py").is_file()


def test_package_data_lists_every_shipped_file():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["indexer"]
    for sub in ("catalog/migrations", "data", "vocab/reference_text"):
        for path in (PACKAGE / sub).rglob("*"):
            if path.is_dir() or "__pycache__" in path.parts:
                continue
            rel = path.relative_to(PACKAGE).as_posix()
            assert any(fnmatch.fnmatchcase(rel, glob) for glob in config), f"{rel} is not in package-data"
