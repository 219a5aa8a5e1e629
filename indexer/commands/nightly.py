"""``indexer nightly``: the scheduled crawl, compute and publish."""

from __future__ import annotations

import sys

import click

from ..jobs.nightly import EXIT_FAILED, EXIT_LOCKED, LockBusy
from ..jobs.nightly import nightly as run_nightly
from ..runlog import route_logs
from .checks import valid_output_dir, valid_output_file
from .options import db_option, endpoint_option, request_timeout_option, verbose_option
from .output import fail
from .signals import exit_interrupted, interrupt_on_signals, long_run


@click.command()
@db_option
@click.option("--families", "families", multiple=True,
              help="Family of the families file (env INDEXER_FAMILIES; repeatable or comma-separated; default: all).")
@endpoint_option("Hub endpoint or mirror (default: $HF_ENDPOINT).")
@click.option("--publish-dir", default="data/publish", show_default=True, callback=valid_output_dir,
              help="Publish the bundle here afterwards ('' to skip).")
@click.option("--to-hub", "to_hub", metavar="ORG/NAME", help="Also publish to this Hub dataset (token from HF_TOKEN).")
@click.option("--report", "report", default=None, callback=valid_output_file,
              help="Write the JSON report to this file.")
@click.option("--lock-file", default=None, callback=valid_output_file, help="Lock file (default: <catalog>.lock).")
@click.option("--max-minutes", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Time box of the crawl step; the rest of the scope is resumed on the next run.")
@click.option("--max-api-calls", type=click.IntRange(min=1), default=None,
              help="API-call box of the crawl step.")
@click.option("--full-listing", is_flag=True, help="List every scope to its end (finds deleted and renamed repos).")
@click.option("--full-listing-every", "full_every", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="DAYS", help="Do a full listing when the last complete one is older than DAYS.")
@request_timeout_option
@verbose_option
@long_run("nightly")
def nightly(db, families, endpoint, publish_dir, to_hub, report, lock_file, max_minutes, max_api_calls, full_listing,
            full_every, request_timeout, verbose):
    """Crawl the families incrementally, compute, check integrity, publish, report (one run at a time).

    Exit status: 0 ok, 1 a step failed (see the report), 75 another run holds the lock, 130/143 stopped by
    SIGINT/SIGTERM (the crawl run is marked interrupted and the report written).
    """
    names = [n.strip() for item in families for n in item.split(",") if n.strip()]
    route_logs(verbose)
    got = interrupt_on_signals()
    try:
        rep = run_nightly(db=db, families=names or None, endpoint=endpoint, publish_dir=publish_dir or None,
                          report=report, lock_file=lock_file, max_minutes=max_minutes,
                          max_api_calls=max_api_calls, request_timeout=request_timeout,
                          full_listing=full_listing, full_listing_every=full_every, to_hub=to_hub)
    except LockBusy as e:
        fail(str(e), EXIT_LOCKED)
    except KeyboardInterrupt:  # before the run began: no report to write
        exit_interrupted(got, "error: nightly interrupted before it started")
    click.echo(rep["summary"])
    if rep["status"] == "interrupted":
        exit_interrupted(got)
    if rep["status"] != "ok":
        sys.exit(EXIT_FAILED)
