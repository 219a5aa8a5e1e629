"""``indexer demo``: the offline tour."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import click

from ..catalog.db import CatalogError
from ..errors import CrawlInterrupted
from ..jobs.demo import DEMO_DRAFT, DEMO_TARGET, build_demo_catalog, discard_damaged, urls
from ..jobs.publish import PublishError, check_port, free_port
from ..jobs.publish import serve as run_serve
from .checks import check_db
from .output import fail
from .signals import SIGNALLED, long_run, stop_handling_signals


def _activate_first() -> str:
    """" (activate the venv first: . .venv/bin/activate)" when the shell's ``indexer`` is not this one (a venv
    used by its path, not activated): the lines below then work as printed."""
    here = os.path.dirname(os.path.abspath(sys.argv[0]))
    found = shutil.which("indexer")
    if found and os.path.dirname(os.path.abspath(found)) == here:
        return ""
    activate = os.path.join(sys.prefix, "bin", "activate")
    rel = os.path.relpath(activate)
    return f" (activate the venv first: . {rel if not rel.startswith('..') else activate})"


def demo_db(ctx: click.Context, param, value):
    """--db of the demo: a damaged demo catalog is deleted (the demo rebuilds it), then the usual checks."""
    discard_damaged(value, log=lambda m: click.echo(m, err=True))
    return check_db(ctx, param, value)


@click.command()
@click.option("--db", default="data/demo.db", show_default=True, callback=demo_db,
              help="Catalog to build the demo into (a damaged one is rebuilt).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface datasette listens on.")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=8001, show_default=True,
              help="Port datasette listens on.")
@click.option("--no-serve", is_flag=True, help="Build the demo catalog and stop (do not start datasette).")
@long_run("demo")
def demo(db, host, port, no_serve):
    """Offline tour: build a small demo hub, serve it locally, crawl it, compute, browse it in datasette.

    Exit status: 0 done or stopped, 1 the demo failed, 2 busy port, 130 interrupted (Ctrl-C; 143 on SIGTERM):
    the next demo resumes.
    """
    if not no_serve:
        port = port or free_port(host)
        try:
            check_port(host, port)  # before minutes of work, and before any URL is printed
        except PublishError as e:
            fail(str(e))

    try:
        build_demo_catalog(db, log=lambda m: click.echo(m, err=True))
    except CrawlInterrupted:  # the crawl recorded it; the next demo resumes
        raise KeyboardInterrupt from None
    except Exception as e:
        fail(f"demo failed: {type(e).__name__}: {e}", 1)
    click.echo(f"demo catalog: {db}")
    click.echo(f"try{_activate_first()}:")
    click.echo(f"  indexer query --db {db} --target {DEMO_TARGET}")
    click.echo(f"  indexer check --db {db} {DEMO_TARGET} {DEMO_DRAFT}")  # a clean first answer: exit 0
    if no_serve:
        click.echo(f"  indexer serve --db {db}")
        return
    if SIGNALLED:
        raise KeyboardInterrupt  # a signal swallowed on the way: the demo was interrupted, not served
    stop_handling_signals()

    def ready(url):
        for name, link in urls(host, port, Path(db).stem).items():
            click.echo(f"  {name:18} {link}")
        click.echo("Ctrl-C to stop.", err=True)

    try:
        sys.exit(run_serve(db, host, port, on_ready=ready))
    except (CatalogError, PublishError) as e:
        fail(str(e))
