"""``indexer compute``: the compatibility classes and cached pair verdicts."""

from __future__ import annotations

import click

from ..catalog.compute import compute as run_compute
from ..catalog.db import CatalogError
from .options import db_option
from .output import fail, print_json
from .signals import long_run


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@db_option
@long_run("compute")
def compute(as_json, quiet, db):
    """Rebuild the compatibility classes per engine and the cached pair verdicts."""
    try:
        stats = run_compute(db, progress=not quiet and not as_json)
    except CatalogError as e:
        fail(str(e))
    if as_json:
        print_json(stats)
        return
    click.echo(f"classified {stats['repos']} repos in {stats['seconds']} s")
    for engine, n in stats["classes"].items():
        click.echo(f"  {engine:13} {n} classes, {stats['memberships'][engine]} members")
    f = stats["engine_facts"]
    click.echo(f"  engine facts: {f['derived']} derived, {f['blobs_missing']} without stored blobs, "
               f"{f['left']} left for the next run")
    a = stats["agreement"]
    click.echo(f"  vocabulary agreement: {a['flagged']} tokenizers measured ({a['agree_by_base']} agree with every "
               f"same-base draft), {a['measured']} pairs measured, {a['left']} left for the next run")
    lp = stats["llamacpp_pairs"]
    click.echo(f"  llama.cpp pairs: {lp['computed']} computed of {lp['candidates']} new candidates")
    p = stats["pairs"]
    click.echo(f"  TLI pair verdicts: {p['computed']} computed, {p['cached']} cached, "
               f"{p['no_tokens']} skipped (token lists not stored), {p['candidates']} candidates")
