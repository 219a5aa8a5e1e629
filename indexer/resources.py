"""Files shipped inside the package: Alembic migrations, model families, the site's metadata.

Found beside the package's own modules, so a wheel installed into site-packages works like a checkout;
nothing is looked up beside the package (the user's own catalog and blobs default to ``data/`` under
the working directory, see :data:`indexer.catalog.db.DEFAULT_DB`).
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).parent


def package_path(*parts: str) -> Path:
    """A file or directory inside the installed ``indexer`` package, as a real path: Alembic and datasette take
    file-system paths, and pip installs a package unzipped, so its files lie beside this module."""
    return PACKAGE_DIR.joinpath(*parts)


MIGRATIONS_DIR = package_path("catalog", "migrations")
FAMILIES_PATH = package_path("data", "families.toml")
METADATA_PATH = package_path("data", "metadata.yml")
