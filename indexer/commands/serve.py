"""``indexer serve``: browse the catalog with datasette."""

from __future__ import annotations

import sys

import click

from ..catalog.db import CatalogError
from ..jobs.publish import PublishError, safe_url
from ..jobs.publish import serve as run_serve
from .options import db_option
from .output import fail


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=8001, show_default=True,
              help="Port to listen on.")
@db_option
def serve(host, port, db):
    """Browse the catalog with datasette (read-only, immutable) until Ctrl-C or SIGTERM.

    Exit status: 0 stopped, 2 bad catalog or busy port.
    """
    def ready(url):
        shown = safe_url(db) if db and "://" in db else db or "the catalog"
        click.echo(f"serving {shown} at {url} (Ctrl-C to stop)", err=True)

    try:
        sys.exit(run_serve(db, host, port, on_ready=ready))
    except (CatalogError, PublishError) as e:
        fail(str(e))
