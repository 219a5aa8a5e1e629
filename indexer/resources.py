"""Files shipped inside the package: Alembic migrations, model families, the site's metadata.

Found through ``importlib.resources`` so a wheel installed into site-packages works like a checkout;
nothing is looked up beside the package (the user's own catalog and blobs default to ``data/`` under
the working directory, see :data:`indexer.catalog.db.DEFAULT_DB`).
"""

from __future__ import annotations

from pathlib import Path

import indexer


def package_path(*parts: str) -> Path:
    """A file or directory inside the installed ``indexer`` package, as a real path.

    Alembic and datasette take file-system paths, so the package must be installed unzipped (pip always
    does); ``files("indexer")`` then is a plain ``pathlib.Path``: the directory of the package's
    ``__init__.py``, which is taken as is when it exists (``importlib.resources`` is slow
    to import), else asked of ``importlib.resources``.
    """

    origin = getattr(indexer.__spec__, "origin", None)
    if origin and Path(origin).is_file():
        return Path(origin).parent.joinpath(*parts)
    from importlib.resources import files  # here: slow to import, and a checkout or wheel never needs it

    return Path(str(files("indexer").joinpath(*parts)))


_SHIPPED = {"MIGRATIONS_DIR": ("catalog", "migrations"), "FAMILIES_PATH": ("data", "families.toml"),
            "METADATA_PATH": ("data", "metadata.yml")}


def __getattr__(name: str) -> Path:
    """MIGRATIONS_DIR, FAMILIES_PATH, METADATA_PATH: resolved when first used (PEP 562)."""
    if name in _SHIPPED:
        return package_path(*_SHIPPED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
