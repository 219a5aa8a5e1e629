"""Files shipped inside the package: Alembic migrations, model families, the site's metadata.

Found through ``importlib.resources`` so a wheel installed into site-packages works like a checkout;
nothing is looked up beside the package (the user's own catalog and blobs default to ``data/`` under
the working directory, see :data:`indexer.db.DEFAULT_DB`).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def package_path(*parts: str) -> Path:
    """A file or directory inside the installed ``indexer`` package, as a real path.

    Alembic and datasette take file-system paths, so the package must be installed unzipped (pip always
    does); ``files("indexer")`` then is a plain ``pathlib.Path``.
    """
    return Path(str(files("indexer").joinpath(*parts)))


MIGRATIONS_DIR = package_path("migrations")
FAMILIES_PATH = package_path("data", "families.toml")
METADATA_PATH = package_path("data", "metadata.yml")
