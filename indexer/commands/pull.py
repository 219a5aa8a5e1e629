"""``indexer pull``: the newest published catalog as the local one."""

from __future__ import annotations

import sys

import click

from ..jobs.pull import pull as run_pull
from .checks import check_db_folder
from .options import endpoint_option
from .output import print_json
from .signals import long_run


@click.command()
@click.option("--from", "repo", metavar="ORG/NAME",
              help="Dataset to pull (default: $INDEXER_CATALOG_REPO, else the project's published catalog).")
@click.option("--revision", default="main", show_default=True, help="Branch or commit of the dataset.")
@click.option("--db", envvar="INDEXER_DB", default=None, callback=check_db_folder,
              help="Catalog file to replace (default data/catalog.db, env INDEXER_DB).")
@endpoint_option()
@click.option("--json", "as_json", is_flag=True, help="Print what was done as JSON.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@long_run("pull")
def pull(repo, revision, db, endpoint, as_json, quiet):
    """Make the newest published catalog the local one: one request when it is unchanged; else download,
    verify (sha256, integrity, schema), migrate if older, and rename into place atomically.

    Exit status: 0 pulled or unchanged, 1 the download failed (the old catalog is kept), 2 bad input.
    """
    done = run_pull(db, repo=repo, revision=revision, endpoint=endpoint,
                    progress=not (quiet or as_json) and sys.stderr.isatty())  # a log gets no bar
    if as_json:
        print_json(done)
    elif done["status"] == "unchanged":
        click.echo(f"catalog {done['db']} is already {done['repo']} at {done['commit'][:12]} "
                   f"(sha256 {done['sha256'][:12]}): nothing downloaded; {_requests(done['requests'])}")
    else:
        migrated = f", migrated from schema {done['migrated_from']}" if done["migrated_from"] else ""
        click.echo(f"pulled {done['repo']} at {done['commit'][:12]} into {done['db']} ({done['bytes']} bytes, "
                   f"sha256 {done['sha256'][:12]} verified, {done['token_files']} token files{migrated}); "
                   f"{_requests(done['requests'])}")


def _requests(n: int) -> str:
    return f"{n} HTTP request{'' if n == 1 else 's'}"
