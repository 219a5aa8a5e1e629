"""``indexer publish``: a datasette bundle, or the catalog on a Hub dataset."""

from __future__ import annotations

import sys

import click

from ..jobs.hubpublish import publish_to_hub
from ..jobs.publish import publish as run_publish
from .options import db_option, endpoint_option
from .output import fail, print_json
from .signals import long_run


@click.command()
@click.argument("outdir", required=False)
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
@click.option("--with-tokens", is_flag=True,
              help="Also copy the token lists (tokens/), so the site's explain view can run llama.cpp's check.")
@click.option("--to-hub", "to_hub", metavar="ORG/NAME",
              help="Commit the snapshot, token store, manifest, Parquet tables and card to this Hub dataset "
                   "(token from HF_TOKEN).")
@endpoint_option("Hub endpoint for --to-hub (default: $HF_ENDPOINT).")
@long_run("publish")
def publish(outdir, db, as_json, with_tokens, to_hub, endpoint):
    """Write a datasette bundle into OUTDIR: compacted catalog.db (atomic), the site plugin, metadata, serve.sh,
    Dockerfile; or, with --to-hub ORG/NAME, publish the catalog to a Hub dataset in one commit (`indexer pull`
    fetches it). A PostgreSQL catalog is exported to a SQLite snapshot first.

    Exit status: 0 published (or unchanged), 1 the upload failed on the way, 2 bad catalog, OUTDIR, token or repo.
    """
    if not outdir and not to_hub:
        fail("give OUTDIR, or --to-hub ORG/NAME")
    if to_hub:

        done = publish_to_hub(db, to_hub, endpoint=endpoint, log=lambda m: click.echo(m, err=True),
                              progress=sys.stderr.isatty() and not as_json)  # one bar, on a terminal only
        if as_json:
            print_json(done)
        else:
            m = done["manifest"]
            verb = "unchanged, no new commit:" if done["status"] == "unchanged" else "published"
            click.echo(f"{verb} {done['repo']} at {done['commit'][:12]} ({m['snapshot']['bytes']} bytes, "
                       f"{m['counts'].get('repos', 0)} repos, sha256 {m['snapshot']['sha256'][:12]})")
        if not outdir:
            return
    manifest = run_publish(db, outdir, with_tokens=with_tokens)  # errors: IndexerGroup
    if as_json:
        print_json(manifest)
        return
    repos = manifest["tables"].get("repos", 0)
    click.echo(f"published {manifest['outdir']}/catalog.db ({manifest['bytes']} bytes, {repos} repos, "
               f"sha256 {manifest['sha256'][:12]})")
    click.echo(f"serve it with: sh {manifest['outdir']}/serve.sh")
