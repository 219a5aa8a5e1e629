"""``indexer crawl``: the Hub (or a scope of it) into the catalog."""

from __future__ import annotations

import sys

import click

from ..catalog.compute import compute
from ..catalog.db import CatalogError
from ..crawl.loop import CrawlFailed, CrawlInterrupted, CrawlOptions
from ..crawl.loop import crawl as run_crawl
from ..runlog import route_logs
from .checks import valid_limit, valid_repo_ids
from .options import db_option, endpoint_option, max_bytes_option, request_timeout_option, verbose_option
from .output import fail, print_json
from .signals import exit_interrupted, interrupt_on_signals, long_run


@click.command()
@click.option("--family", "families", multiple=True,
              help="A family of the families file (env INDEXER_FAMILIES; repeatable).")
@click.option("--author", help="Every repo of this author/organisation.")
@click.option("--search", help="Repos whose id contains this text.")
@click.option("--model", "models", multiple=True, callback=valid_repo_ids,
              help="One repo id (repeatable; model_info, no listing).")
@click.option("--all", "all_", is_flag=True,
              help="Every repo with pipeline_tag text-generation or image-text-to-text.")
@click.option("--limit", type=int, callback=valid_limit, help="Stop after this many listed repos.")
@click.option("--full", is_flag=True, help="Re-resolve repos whose sha did not change.")
@click.option("--full-listing", is_flag=True,
              help="List every scope to its end instead of stopping at its high-water mark (finds deleted "
                   "and renamed repos: only such a listing marks rows gone).")
@endpoint_option()
@click.option("--api-budget", type=click.IntRange(min=1), default=None,
              help="API calls per rate-limit window (default: the Hub's RateLimit-Policy; 500 anonymous, "
                   "1000 with a token until it is announced).")
@click.option("--resolver-budget", type=click.IntRange(min=1), default=None,
              help="Resolver (download) calls per window (default: announced; 3000 anonymous, 5000 with a token).")
@click.option("--max-minutes", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Hard time box: at this many minutes work in flight is abandoned and queued, the run ends "
                   "'partial' and the next one resumes.")
@click.option("--max-api-calls", type=click.IntRange(min=1), default=None,
              help="Stop starting repos after this many API calls (listing pages included).")
@click.option("--workers", type=click.IntRange(min=1, max=64), default=4, show_default=True,
              help="Parallel resolve+download workers.")
@max_bytes_option
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--no-compute", is_flag=True, help="Do not recompute compatibility classes afterwards.")
@request_timeout_option
@verbose_option
@db_option
@long_run("crawl")
def crawl(families, author, search, models, all_, limit, full, full_listing, endpoint, api_budget, resolver_budget,
          max_minutes, max_api_calls, workers, max_file_bytes, quiet, as_json, no_compute, request_timeout, verbose,
          db):
    """Crawl the Hub (or a scope of it) into the catalog: incremental by commit sha, resumable.

    Exit status: 0 ok or partial (a time-boxed run; the next one continues), 1 the run failed
    (every listing failed, the Hub cannot be reached, a catalog write failed, or nothing resolved and
    every repo failed), 2 bad input, 130 interrupted (SIGINT), 143 terminated (SIGTERM).
    """
    if not (families or author or search or models or all_):
        fail("give a scope: --family, --author, --search, --model or --all")
    opts = CrawlOptions(families=families, author=author, search=search, models=models, all=all_, limit=limit,
                        full=full, full_listing=full_listing, endpoint=endpoint, api_budget=api_budget,
                        resolver_budget=resolver_budget,
                        max_minutes=max_minutes, max_api_calls=max_api_calls, workers=workers,
                        max_file_bytes=max_file_bytes, quiet=quiet, call_timeout=request_timeout)
    route_logs(verbose)
    got = interrupt_on_signals()
    code = 0
    try:
        summary = run_crawl(db, opts)
    except CatalogError as e:
        fail(str(e))
    except ValueError as e:  # unknown family, ...
        fail(str(e))
    except CrawlInterrupted as e:
        summary, code = e.summary, 130
    except KeyboardInterrupt:  # before the run started: nothing to record
        exit_interrupted(got, "error: crawl interrupted before it started")
    except CrawlFailed as e:
        summary, code = e.summary, 1
        click.echo(f"error: {e}", err=True)
    if code == 0 and not no_compute:
        summary["compute"] = compute(db)
    if as_json:
        print_json(summary)
    else:
        click.echo(
            f"crawl run {summary['run_id']} {summary['status']}: listed {summary['listed']}, "
            f"unchanged {summary['unchanged']}, new {summary['new']}, changed {summary['changed']}, "
            f"failed {summary['failed']}, gone {summary['gone']}, unresolved {summary['unresolved']}"
            + (f", fetched by another crawl {summary['elsewhere']}" if summary.get("elsewhere") else "")
            + (f" ({summary['stopped']})" if summary.get("stopped") else "")
        )
        click.echo(f"  statuses: {', '.join(f'{k} {v}' for k, v in summary['statuses'].items()) or '-'}")
        click.echo(
            f"  API calls {summary['api_calls']}, resolver calls {summary['resolver_calls']}, "
            f"{summary['bytes_downloaded']} bytes downloaded, {summary['seconds']} s, "
            f"429s {summary['rate_limited']['api']} api / {summary['rate_limited']['resolvers']} resolvers"
        )
        for label, sc in (summary.get("scopes") or {}).items():
            click.echo(f"  scope {label}: listed {sc['listed']}, kept {sc['kept']} in {sc['pages']} page(s)"
                       + ("" if sc["complete"] else ", to be resumed"))
        if summary.get("from_copies"):
            click.echo(f"  gated repos answered from public copies (no download): {summary['from_copies']}")
        for err in summary["errors"][:10]:
            click.echo(f"  error {err['repo']}: {err['reason']}" if err.get("repo") else f"  error: {err['reason']}")
        if "compute" in summary:
            click.echo("  compatibility classes recomputed (indexer compute)")
    if code == 130:
        exit_interrupted(got)
    if code:
        sys.exit(code)
