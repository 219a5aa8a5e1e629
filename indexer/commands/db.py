"""``indexer db``: create and upgrade the catalog schema."""

from __future__ import annotations

import click

from ..catalog.db import safe_url, upgrade
from .options import db_option


@click.group()
def db():
    """Create and upgrade the catalog schema."""


@db.command("upgrade")
@db_option
def db_upgrade(db):
    """Create the catalog or migrate it to the newest schema."""
    click.echo(f"catalog at head: {safe_url(upgrade(db))}")
