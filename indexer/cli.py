"""The ``indexer`` command: a thin click layer over the library modules."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import __version__
from .cli_support import (
    SIGNALLED,
    IndexerGroup,
    check_db,
    check_db_folder,
    db_option,
    engine_option,
    exit_interrupted,
    fail,
    interrupt_on_signals,
    long_run,
    max_bytes_option,
    print_json,
    request_timeout_option,
    stop_handling_signals,
    valid_answer_limit,
    valid_limit,
    valid_output_dir,
    valid_output_file,
    valid_path,
    valid_repo_ids,
    valid_target,
    verbose_option,
)
from .engines import QUERY_METHODS


def _engine_versions(_ctx, _param, values):
    """Callback of --engine-version: {engine: release}; an unknown engine or release is one line, exit 2."""
    from .engines import parse_versions

    return parse_versions(values)


engine_version_option = click.option(
    "--engine-version", "engine_versions", multiple=True, metavar="ENGINE==VERSION", callback=_engine_versions,
    help="Answer for this release of an engine instead of the newest we have read (repeatable), e.g. "
         "vllm==0.33.0.")


@click.group(cls=IndexerGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version")
def cli():
    """Which draft models can speculate for which targets, per serving engine."""


@cli.group()
def db():
    """Create and upgrade the catalog schema."""


@db.command("upgrade")
@db_option
def db_upgrade(db):
    """Create the catalog or migrate it to the newest schema."""
    from .catalog.db import safe_url, upgrade

    click.echo(f"catalog at head: {safe_url(upgrade(db))}")


def speed_options(command):
    """The expected speed-up's options, shared by check and query (docs/speed.md)."""
    for option in reversed(SPEED_OPTIONS):
        command = option(command)
    return command


SPEED_OPTIONS = (
    click.option("--hardware", metavar="NAME",
                 help="The device the pair runs on (M4 Max, RTX 4090, H100 SXM, ...; `indexer hardware` lists "
                      "them). Default: one datacenter GPU, one consumer GPU and one Mac."),
    click.option("--bandwidth", type=click.FloatRange(min=1), metavar="GB/S",
                 help="Memory bandwidth of a device that is not listed (with --hardware: that device at this "
                      "bandwidth)."),
    click.option("--quant", "target_quant", metavar="TYPE",
                 help="The target's quantization (Q4_K_M, Q8_0, F16, 4bit, 8bit, bf16, fp8, int4, ...), over what "
                      "the repo declares."),
    click.option("--draft-quant", "draft_quant", metavar="TYPE", help="The draft's quantization, likewise."),
    click.option("--task", type=click.Choice(["code", "chat", "prose", "reasoning"]), default="chat",
                 show_default=True, help="What the text is like: drafts are accepted most on code, least on prose."),
    click.option("--draft-tokens", type=click.IntRange(min=1, max=64), default=None,
                 help="Draft tokens per round (default: the count the speed model finds best)."),
)


@cli.command()
@click.argument("directory", callback=valid_path)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--reference", is_flag=True, help="Use transformers' AutoTokenizer instead of the fast path.")
@max_bytes_option
def fingerprint(directory, as_json, reference, max_file_bytes):
    """Fingerprint the tokenizer and config of a local model DIRECTORY, or read a GGUF file's own facts
    (a .gguf file, or a directory holding one GGUF model and no tokenizer files)."""
    from .answer.render import render_fingerprint, render_gguf_facts
    from .answer.sides import local_facts

    facts, is_gguf = local_facts(directory, reference=reference, max_file_bytes=max_file_bytes)  # errors: exit 2
    if as_json:
        print_json(facts)
    else:
        click.echo(render_gguf_facts(facts) if is_gguf else render_fingerprint(facts))


@cli.command()
@click.argument("target", callback=valid_target)
@click.argument("draft", callback=valid_target)
@engine_option("Engine whose verdict decides the exit status.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@db_option
@max_bytes_option
@click.option("--offline", is_flag=True,
              help="Never touch the network (also HF_HUB_OFFLINE=1): answer from the catalog only.")
@speed_options
@engine_version_option
@click.option("--verbose", is_flag=True, help="Every engine's reasons in full (--json always has them).")
def check(target, draft, engine, as_json, db, max_file_bytes, offline, hardware, bandwidth, target_quant, draft_quant,
          task, draft_tokens, engine_versions, verbose):
    """Verdict per engine for TARGET and DRAFT (local directories or catalog repo ids).

    When DRAFT is a speculator head in the catalog (status head): every shape check with its engine source, the
    lineage and the verdict per engine (SGLang, vLLM); exit 0 when it fits on --engine, 1 when not.

    Each verdict is works, degraded (starts; 50-99% of the target's text tokens mean the same in the draft),
    useless (starts, drafts rejected), refused (raises at launch), no_speculation (llama-server serves
    without a draft), wrong_output (starts, the output can differ) or unknown (the indexer does not model the
    engine's path for a side: not a refusal). Exit status: 0 when the outcome on --engine is works (default
    SGLang: equal vocab_size and the vocabularies agree), 1 when not, 2 on bad input,
    3 when a repo is neither in the catalog nor on the Hub (or --offline).

    A Hub repo the catalog lacks is fetched as the crawl fetches it (at most 2 API calls and one download per
    file the blob store lacks) and written into the catalog, so the next check costs no request.
    """
    from .answer.query import check as check_pair
    from .answer.query import render_check, works_on
    from .answer.speedup import Options, add_to_check
    from .errors import IndexerError

    speed = Options(hardware, bandwidth, task, target_quant, draft_quant, draft_tokens)  # bad names: exit 2
    try:
        result = check_pair(target, draft, db=db, max_file_bytes=max_file_bytes,
                            releases=engine_versions)  # errors: IndexerGroup
    except IndexerError as e:
        from .answer import live  # the live path (answer/live.py), imported only here

        if not live.sides_to_fetch(db, target, draft):
            raise
        result, report = live.live_check(target, draft, db=db, max_file_bytes=max_file_bytes, offline_flag=offline,
                                         first=e, releases=engine_versions)
        result["live"] = report
        if not as_json:
            live.say(report)
    add_to_check(result, target, draft, db, speed)
    if as_json:
        print_json(result)
    else:
        click.echo(render_check(result, verbose=verbose))
    sys.exit(0 if works_on(result, engine) else 1)


@cli.command()
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
@click.option("--endpoint", envvar="HF_ENDPOINT", help="Hub endpoint (default: $HF_ENDPOINT).")
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
    from .catalog.db import CatalogError
    from .crawl.loop import CrawlFailed, CrawlInterrupted, CrawlOptions
    from .crawl.loop import crawl as run_crawl
    from .runlog import route_logs

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
        try:
            from .catalog.compute import compute
        except ImportError:
            compute = None
        if compute is not None:
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


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@db_option
@long_run("compute")
def compute(as_json, quiet, db):
    """Rebuild the compatibility classes per engine and the cached pair verdicts."""
    from .catalog.compute import compute as run_compute
    from .catalog.db import CatalogError

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


@cli.command()
@click.option("--target", required=True, callback=valid_target,
              help="Target: a repo id (any case), a Hub URL, a bare name, or a local model directory.")
@engine_option("Serving engine whose rule decides.")
@click.option("--limit", type=int, callback=valid_answer_limit, default=10, show_default=True,
              help="How many drafts (1-500).")
@click.option("--near-misses", is_flag=True, help="Also list drafts that fail exactly one check, with a fix.")
@click.option("--all", "all_", is_flag=True,
              help="Every repo that works with the target on the engine, then the degraded ones, unranked.")
@click.option("--method", type=click.Choice(list(QUERY_METHODS)), default="draft", show_default=True,
              help="draft: separate draft models; eagle / eagle3 / dflash: speculator heads that fit the target; "
                   "mtp: the target's own MTP layers; ngram: prompt lookup (needs nothing); all: every option "
                   "per engine.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--live", "live_", is_flag=True,
              help="Also look for candidate drafts on the Hub that the catalog lacks, and fetch them "
                   "(within --budget).")
@click.option("--budget", type=click.IntRange(min=1), default=60, show_default=True,
              help="Hub requests (API calls and downloads) a --live answer may spend in all.")
@click.option("--offline", is_flag=True,
              help="Never touch the network (also HF_HUB_OFFLINE=1): answer from the catalog only.")
@db_option
@speed_options
@engine_version_option
def query(target, engine, limit, near_misses, all_, method, as_json, live_, budget, offline, db, hardware, bandwidth,
          target_quant, draft_quant, task, draft_tokens, engine_versions):
    """Ranked draft models for --target that work on the engine, with reasons and launch flags.

    A Hub target the catalog lacks (or no catalog at all) is fetched as the crawl fetches it and answered
    against the catalog's drafts; --live also fetches candidate drafts from the Hub.

    Exit status: 0 answered, 2 bad input or catalog, 3 target neither in the catalog nor on the Hub
    (or --offline).
    """
    from .answer.query import render, run_query
    from .answer.speedup import Options
    from .errors import IndexerError

    speed = Options(hardware, bandwidth, task, target_quant, draft_quant, draft_tokens)  # bad names: exit 2
    kw = dict(engine=engine, limit=limit, near_misses=near_misses, all_members=all_, db=db, method=method,
              speed=speed, release=engine_versions.get(engine))
    result = first = unlooked = None
    if not live_:
        try:
            result = run_query(target, **kw)  # errors (RepoNotFound: exit 3, ...): IndexerGroup
        except IndexerError as e:
            from .answer.live import sides_to_fetch

            if not sides_to_fetch(db, target):  # not a Hub repo the catalog lacks: the catalog's answer stands
                raise
            first = e
        if result is not None and (result.get("summary") or {}).get("catalog_looked") is False:
            unlooked, result, live_ = result, None, True  # never looked for its drafts: look now, within --budget
    if result is None:  # the live path (answer/live.py), imported only here
        from .answer import live

        try:
            result = live.live_query(target, offline_flag=offline, discover=live_, budget=budget, first=first, **kw)
        except IndexerError as e:
            if unlooked is None:
                raise
            result = {**unlooked, "live": {"note": f"no candidate drafts were looked for: {e.message}"}}
        if not as_json:
            live.say(result.get("live") or {})
    if as_json:
        print_json(result)
    else:
        click.echo(render(result, all_members=all_, near_misses=near_misses))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def hardware(as_json):
    """The devices --hardware names: kind, memory bandwidth, FP32 compute, memory, the source of the figures, and
    the engines that run on each kind (check and query estimate the speed-up on them).

    Exit status: 0.
    """
    from .answer.devices import devices_json, render_devices

    result = devices_json()
    if as_json:
        print_json(result)
    else:
        click.echo(render_devices(result))


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=8001, show_default=True,
              help="Port to listen on.")
@db_option
def serve(host, port, db):
    """Browse the catalog with datasette (read-only, immutable) until Ctrl-C or SIGTERM.

    Exit status: 0 stopped, 2 bad catalog or busy port.
    """
    from .catalog.db import CatalogError
    from .publish import PublishError, safe_url
    from .publish import serve as run_serve

    def ready(url):
        shown = safe_url(db) if db and "://" in db else db or "the catalog"
        click.echo(f"serving {shown} at {url} (Ctrl-C to stop)", err=True)

    try:
        sys.exit(run_serve(db, host, port, on_ready=ready))
    except (CatalogError, PublishError) as e:
        fail(str(e))


@cli.command()
@click.argument("outdir", required=False)
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
@click.option("--with-tokens", is_flag=True,
              help="Also copy the token lists (tokens/), so the site's explain view can run llama.cpp's check.")
@click.option("--to-hub", "to_hub", metavar="ORG/NAME",
              help="Commit the snapshot, token store, manifest, Parquet tables and card to this Hub dataset "
                   "(token from HF_TOKEN).")
@click.option("--endpoint", envvar="HF_ENDPOINT", help="Hub endpoint for --to-hub (default: $HF_ENDPOINT).")
@long_run("publish")
def publish(outdir, db, as_json, with_tokens, to_hub, endpoint):
    """Write a datasette bundle into OUTDIR: compacted catalog.db (atomic), the site plugin, metadata, serve.sh,
    Dockerfile; or, with --to-hub ORG/NAME, publish the catalog to a Hub dataset in one commit (`indexer pull`
    fetches it). A PostgreSQL catalog is exported to a SQLite snapshot first.

    Exit status: 0 published (or unchanged), 1 the upload failed on the way, 2 bad catalog, OUTDIR, token or repo.
    """
    from .publish import publish as run_publish

    if not outdir and not to_hub:
        fail("give OUTDIR, or --to-hub ORG/NAME")
    if to_hub:
        from .hubpublish import publish_to_hub

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


@cli.command()
@click.option("--from", "repo", metavar="ORG/NAME",
              help="Dataset to pull (default: $INDEXER_CATALOG_REPO, else the project's published catalog).")
@click.option("--revision", default="main", show_default=True, help="Branch or commit of the dataset.")
@click.option("--db", envvar="INDEXER_DB", default=None, callback=check_db_folder,
              help="Catalog file to replace (default data/catalog.db, env INDEXER_DB).")
@click.option("--endpoint", envvar="HF_ENDPOINT", help="Hub endpoint (default: $HF_ENDPOINT).")
@click.option("--json", "as_json", is_flag=True, help="Print what was done as JSON.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@long_run("pull")
def pull(repo, revision, db, endpoint, as_json, quiet):
    """Make the newest published catalog the local one: one request when it is unchanged; else download,
    verify (sha256, integrity, schema), migrate if older, and rename into place atomically.

    Exit status: 0 pulled or unchanged, 1 the download failed (the old catalog is kept), 2 bad input.
    """
    from .pull import pull as run_pull

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


@cli.command()
@db_option
@click.option("--families", "families", multiple=True,
              help="Family of the families file (env INDEXER_FAMILIES; repeatable or comma-separated; default: all).")
@click.option("--endpoint", envvar="HF_ENDPOINT", help="Hub endpoint or mirror (default: $HF_ENDPOINT).")
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
    from .nightly import EXIT_FAILED, EXIT_LOCKED, LockBusy
    from .nightly import nightly as run_nightly
    from .runlog import route_logs

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


@cli.command()
@click.option("--db", default="data/demo.db", show_default=True, callback=check_db,
              help="Catalog to build the demo into.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface datasette listens on.")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=8001, show_default=True,
              help="Port datasette listens on.")
@click.option("--no-serve", is_flag=True, help="Build the demo catalog and stop (do not start datasette).")
@long_run("demo")
def demo(db, host, port, no_serve):
    """Offline tour: build a small demo hub, serve it locally, crawl it, compute, browse it in datasette.

    Exit status: 0 done or stopped, 1 the demo failed, 2 busy port.
    """
    from .catalog.db import CatalogError
    from .demo import DEMO_DRAFT, DEMO_TARGET, build_demo_catalog, urls
    from .publish import PublishError, check_port, free_port
    from .publish import serve as run_serve

    if not no_serve:
        port = port or free_port(host)
        try:
            check_port(host, port)  # before minutes of work, and before any URL is printed
        except PublishError as e:
            fail(str(e))
    from .errors import CrawlInterrupted

    try:
        build_demo_catalog(db, log=lambda m: click.echo(m, err=True))
    except CrawlInterrupted:  # the crawl recorded it; the next demo resumes
        raise KeyboardInterrupt from None
    except Exception as e:
        fail(f"demo failed: {type(e).__name__}: {e}", 1)
    click.echo(f"demo catalog: {db}")
    click.echo("try:")
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
