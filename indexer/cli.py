"""The ``indexer`` command: a thin click layer over the library modules."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from . import __version__
from .engines import DEFAULT_ENGINE, ENGINE_NAMES
from .engines import HEAD_METHODS as QUERY_METHODS
from .files import DEFAULT_MAX_FILE_BYTES, InputError

EXIT_BAD_INPUT = 2


def fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    """One clear line on stderr, never a traceback."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


# Commands that write the catalog: their --db is checked for write access (and a free lock) up front.
WRITES_CATALOG = {"upgrade", "crawl", "compute", "nightly", "demo"}
# `check DIR DIR` needs no catalog: its server is reached only when a side is a repo id.
CATALOG_OPTIONAL = {"check"}
DB_META = "indexer.db"


def check_db(ctx: click.Context, _param, value):
    """--db callback: refuse a bad catalog before the command starts, and remember it for error messages."""
    from .db import preflight

    ctx.meta[DB_META] = value
    ctx.meta[DB_META] = preflight(value, write=ctx.command.name in WRITES_CATALOG,
                                  connect=ctx.command.name not in CATALOG_OPTIONAL)
    return value


def db_option(f):
    return click.option(
        "--db",
        envvar="INDEXER_DB",
        default=None,
        callback=check_db,
        help="Catalog: a file path, sqlite:///PATH or postgresql://USER@HOST/DB "
             "(default data/catalog.db, env INDEXER_DB).",
    )(f)


def max_bytes_option(f):
    return click.option(
        "--max-file-bytes",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_FILE_BYTES,
        show_default=True,
        help="Refuse any tokenizer or config file larger than this.",
    )(f)


def print_json(data) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


class IndexerGroup(click.Group):
    """The one place where catalog problems become one line: whichever command meets a bad,
    unreachable, read-only or locked --db (CatalogError, or a driver exception that
    :func:`indexer.db.as_catalog_error` recognises) prints ``error: ...`` and exits 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except Exception as e:
            from .db import CatalogError, as_catalog_error

            err = as_catalog_error(e, ctx.meta.get(DB_META))
            if isinstance(err, CatalogError):
                fail(str(err))
            raise


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
    from .db import safe_url, upgrade

    click.echo(f"catalog at head: {safe_url(upgrade(db))}")


@cli.command()
@click.argument("directory")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--reference", is_flag=True, help="Use transformers' AutoTokenizer instead of the fast path.")
@max_bytes_option
def fingerprint(directory, as_json, reference, max_file_bytes):
    """Fingerprint the tokenizer and config of a local model DIRECTORY."""
    from .fingerprint import fingerprint_dir, transformers_version
    from .modelconfig import read_config

    try:
        fp = fingerprint_dir(directory, reference=reference, max_file_bytes=max_file_bytes)
        config = read_config(directory, max_file_bytes) if (Path(directory) / "config.json").is_file() else None
    except InputError as e:
        fail(e.message)
    facts = fp.to_dict()
    # The engines' text-config vocab sizes at top level too: they decide most verdicts.
    facts["vocab_size"] = config.vocab_size if config else None
    facts["vocab_size_transformers"] = config.vocab_size_transformers if config else None
    facts["config"] = config.to_dict() if config else None
    if reference or fp.method == "reference":
        facts["transformers_version"] = transformers_version()
    if as_json:
        print_json(facts)
        return
    added = facts.pop("added_tokens")
    for key, value in facts.items():
        if key == "config" and value:
            for ck, cv in value.items():
                click.echo(f"config.{ck:22} {cv}")
        else:
            click.echo(f"{key:29} {value}")
    click.echo(f"{'added_tokens':29} {len(added)}")
    for t in added[:50]:
        click.echo(f"  {t['id']:>8}  {t['content']!r}{'  (special)' if t['special'] else ''}")
    if len(added) > 50:
        click.echo(f"  ... {len(added) - 50} more (use --json)")


def engine_option(help_text: str):
    return click.option("--engine", type=click.Choice(list(ENGINE_NAMES)), default=DEFAULT_ENGINE,
                        show_default=True, help=help_text)


@cli.command()
@click.argument("target")
@click.argument("draft")
@engine_option("Engine whose verdict decides the exit status.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@db_option
@max_bytes_option
def check(target, draft, engine, as_json, db, max_file_bytes):
    """Verdict per engine for TARGET and DRAFT (local directories or catalog repo ids).

    When DRAFT is a speculator head in the catalog (status head): every shape check with its engine source, the
    lineage and the verdict per engine (SGLang, vLLM); exit 0 when it fits on --engine, 1 when not.

    Each verdict is works, degraded (starts; 50-99% of the target's text tokens mean the same in the draft),
    useless (starts, drafts rejected), refused (raises at launch) or no_speculation (llama-server serves
    without a draft). Exit status: 0 when the outcome on --engine is works (default SGLang: equal vocab_size
    and the vocabularies agree), 1 when not, 2 on bad input.
    """
    from .sides import check as check_sides

    head = _check_head(target, draft, engine, as_json, db)
    if head is not None:
        sys.exit(head)
    try:
        result = check_sides(target, draft, db=db, max_file_bytes=max_file_bytes)
    except InputError as e:
        fail(e.message)
    if as_json:
        print_json(result)
    else:
        click.echo(f"target: {result['target']}\ndraft:  {result['draft']}")  # as found: case, URL, GGUF base
        for name, verdict in result["verdicts"].items():
            click.echo(f"  {verdict['outcome'].upper():14} {name:13} {'; '.join(verdict['reasons'])}")
        det = result["details"]
        if det["added_only_in_target"]:
            click.echo(f"  added tokens only in target: {_short(det['added_only_in_target'])}")
        if det["added_only_in_draft"]:
            click.echo(f"  added tokens only in draft:  {_short(det['added_only_in_draft'])}")
        for diff in det["first_differing_ids"]:
            click.echo(f"  id {diff['id']}: target {diff['target']!r}, draft {diff['draft']!r}")
        tli = result["tli"]
        if tli is not None:
            both = "" if tli["same_count"] else f"; transformers counts {tli['intersection_transformers']}"
            click.echo(f"  TLI intersection: {tli['intersection']} tokens as vLLM counts them "
                       f"({tli['ratio']:.1%} of the draft){both}")
        if result["agreement"] is not None and not result["agreement"]["identical"]:
            from .agreement import summary

            click.echo(f"  agreement: {summary(result['agreement'])}")
        stuck = []
        for name, fix in result["fixes"].items():
            if fix:
                click.echo(f"  fix ({name}): {fix}")
            elif result["verdicts"][name]["outcome"] != "works":
                stuck.append(name)
        if stuck:
            click.echo(f"  no fix changes the outcome on: {', '.join(stuck)}")
    sys.exit(0 if result["verdicts"][engine]["compatible"] else 1)


def _check_head(target, draft, engine, as_json, db) -> int | None:
    """DRAFT is a speculator head in the catalog: explain it against TARGET (exit 0 when it fits on --engine,
    1 when not); None when it is no head (the draft-model check answers)."""
    from .headquery import explain_head, render_explain
    from .query import QueryError

    if Path(draft).is_dir():
        return None
    try:
        result = explain_head(db, target, draft)
    except QueryError as e:
        fail(e.message, e.code)
    if result is None:
        return None
    if as_json:
        print_json(result)
    else:
        click.echo(render_explain(result))
    verdict = result["engines"].get(engine)
    return 0 if verdict is not None and verdict["fits"] else 1


def _short(tokens: list[str], n: int = 8) -> str:
    shown = ", ".join(repr(t) for t in tokens[:n])
    return shown + (f", ... ({len(tokens)} in all)" if len(tokens) > n else "")


@cli.command()
@click.option("--family", "families", multiple=True, help="A family from data/families.toml (repeatable).")
@click.option("--author", help="Every repo of this author/organisation.")
@click.option("--search", help="Repos whose id contains this text.")
@click.option("--model", "models", multiple=True, help="One repo id (repeatable; model_info, no listing).")
@click.option("--all", "all_", is_flag=True,
              help="Every repo with pipeline_tag text-generation or image-text-to-text.")
@click.option("--limit", type=click.IntRange(min=1), help="Stop after this many listed repos.")
@click.option("--full", is_flag=True, help="Re-resolve repos whose sha did not change.")
@click.option("--endpoint", envvar="HF_ENDPOINT", help="Hub endpoint (default: $HF_ENDPOINT).")
@click.option("--api-budget", type=click.IntRange(min=1), default=None,
              help="API calls per rate-limit window (default: the Hub's RateLimit-Policy; 500 anonymous, "
                   "1000 with a token until it is announced).")
@click.option("--resolver-budget", type=click.IntRange(min=1), default=None,
              help="Resolver (download) calls per window (default: announced; 3000 anonymous, 5000 with a token).")
@click.option("--max-minutes", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Stop starting repos after this many minutes; the run ends 'partial' and the next one resumes.")
@click.option("--max-api-calls", type=click.IntRange(min=1), default=None,
              help="Stop starting repos after this many API calls (listing pages included).")
@click.option("--workers", type=click.IntRange(min=1, max=64), default=4, show_default=True,
              help="Parallel resolve+download workers.")
@max_bytes_option
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--no-compute", is_flag=True, help="Do not recompute compatibility classes afterwards.")
@db_option
def crawl(families, author, search, models, all_, limit, full, endpoint, api_budget, resolver_budget, max_minutes,
          max_api_calls, workers, max_file_bytes, quiet, as_json, no_compute, db):
    """Crawl the Hub (or a scope of it) into the catalog: incremental by commit sha, resumable.

    Exit status: 0 ok or partial (a time-boxed run; the next one continues), 1 the run failed
    (every listing failed, or nothing resolved and every repo failed), 2 bad input, 130 interrupted.
    """
    import signal

    from .crawl import CrawlFailed, CrawlInterrupted, CrawlOptions
    from .crawl import crawl as run_crawl
    from .db import CatalogError

    if not (families or author or search or models or all_):
        fail("give a scope: --family, --author, --search, --model or --all")
    opts = CrawlOptions(families=families, author=author, search=search, models=models, all=all_, limit=limit,
                        full=full, endpoint=endpoint, api_budget=api_budget, resolver_budget=resolver_budget,
                        max_minutes=max_minutes, max_api_calls=max_api_calls, workers=workers,
                        max_file_bytes=max_file_bytes, quiet=quiet)

    def _term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _term)
    code = 0
    try:
        summary = run_crawl(db, opts)
    except CatalogError as e:
        fail(str(e))
    except ValueError as e:  # unknown family, ...
        fail(str(e))
    except CrawlInterrupted as e:
        summary, code = e.summary, 130
    except CrawlFailed as e:
        summary, code = e.summary, 1
        click.echo(f"error: {e}", err=True)
    if code == 0 and not no_compute:
        try:
            from .compute import compute
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
            + (f" ({summary['stopped']})" if summary.get("stopped") else "")
        )
        click.echo(f"  statuses: {', '.join(f'{k} {v}' for k, v in summary['statuses'].items()) or '-'}")
        click.echo(
            f"  API calls {summary['api_calls']}, resolver calls {summary['resolver_calls']}, "
            f"{summary['bytes_downloaded']} bytes downloaded, {summary['seconds']} s, "
            f"429s {summary['rate_limited']['api']} api / {summary['rate_limited']['resolvers']} resolvers"
        )
        for err in summary["errors"][:10]:
            click.echo(f"  error {err['repo']}: {err['reason']}")
        if "compute" in summary:
            click.echo("  compatibility classes recomputed (indexer compute)")
    if code:
        sys.exit(code)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@db_option
def compute(as_json, quiet, db):
    """Rebuild the compatibility classes per engine and the cached pair verdicts."""
    from .compute import compute as run_compute
    from .db import CatalogError

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
@click.option("--target", required=True,
              help="Target: a repo id (any case), a Hub URL, a bare name, or a local model directory.")
@engine_option("Serving engine whose rule decides.")
@click.option("--limit", type=click.IntRange(min=1), default=10, show_default=True, help="How many drafts.")
@click.option("--near-misses", is_flag=True, help="Also list drafts that fail exactly one check, with a fix.")
@click.option("--all", "all_", is_flag=True,
              help="Every repo that works with the target on the engine, then the degraded ones, unranked.")
@click.option("--method", type=click.Choice(list(QUERY_METHODS)), default="draft", show_default=True,
              help="draft: separate draft models; eagle / eagle3 / dflash: speculator heads that fit the target; "
                   "mtp: the target's own MTP layers; ngram: prompt lookup (needs nothing); all: every option "
                   "per engine.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@db_option
def query(target, engine, limit, near_misses, all_, method, as_json, db):
    """Ranked draft models for --target that work on the engine, with reasons and launch flags.

    Exit status: 0 answered, 2 bad input or catalog, 3 target not in the catalog.
    """
    from .query import QueryError, render, run_query

    try:
        result = run_query(target, engine=engine, limit=limit, near_misses=near_misses, all_members=all_,
                           db=db, method=method)
    except QueryError as e:
        fail(e.message, e.code)
    if as_json:
        print_json(result)
    else:
        click.echo(render(result, all_members=all_, near_misses=near_misses))


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=8001, show_default=True,
              help="Port to listen on.")
@db_option
def serve(host, port, db):
    """Browse the catalog with datasette (read-only, immutable) until Ctrl-C or SIGTERM.

    Exit status: 0 stopped, 2 bad catalog or busy port.
    """
    from .db import CatalogError
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
@click.argument("outdir")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
@click.option("--with-tokens", is_flag=True,
              help="Also copy the token lists (tokens/), so the site's explain view can run llama.cpp's check.")
def publish(outdir, db, as_json, with_tokens):
    """Write a datasette bundle into OUTDIR: compacted catalog.db (atomic), the site plugin, metadata, serve.sh,
    Dockerfile. A PostgreSQL catalog is exported to a SQLite snapshot first.

    Exit status: 0 published, 2 bad catalog or OUTDIR.
    """
    from .db import CatalogError
    from .publish import PublishError
    from .publish import publish as run_publish

    try:
        manifest = run_publish(db, outdir, with_tokens=with_tokens)
    except (CatalogError, PublishError) as e:
        fail(str(e))
    if as_json:
        print_json(manifest)
        return
    repos = manifest["tables"].get("repos", 0)
    click.echo(f"published {manifest['outdir']}/catalog.db ({manifest['bytes']} bytes, {repos} repos, "
               f"sha256 {manifest['sha256'][:12]})")
    click.echo(f"serve it with: sh {manifest['outdir']}/serve.sh")


@cli.command()
@db_option
@click.option("--families", "families", multiple=True,
              help="Family from data/families.toml (repeatable or comma-separated; default: all of them).")
@click.option("--endpoint", envvar="HF_ENDPOINT", help="Hub endpoint or mirror (default: $HF_ENDPOINT).")
@click.option("--publish-dir", default="data/publish", show_default=True,
              help="Publish the bundle here afterwards ('' to skip).")
@click.option("--report", "report", default=None, help="Write the JSON report to this file.")
@click.option("--lock-file", default=None, help="Lock file (default: <catalog>.lock).")
@click.option("--max-minutes", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Time box of the crawl step; the rest of the scope is resumed on the next run.")
@click.option("--max-api-calls", type=click.IntRange(min=1), default=None,
              help="API-call box of the crawl step.")
def nightly(db, families, endpoint, publish_dir, report, lock_file, max_minutes, max_api_calls):
    """Crawl the families incrementally, compute, check integrity, publish, report (one run at a time).

    Exit status: 0 ok, 1 a step failed (see the report), 75 another run holds the lock.
    """
    from .nightly import EXIT_FAILED, EXIT_LOCKED, LockBusy
    from .nightly import nightly as run_nightly

    names = [n.strip() for item in families for n in item.split(",") if n.strip()]
    try:
        rep = run_nightly(db=db, families=names or None, endpoint=endpoint, publish_dir=publish_dir or None,
                          report=report, lock_file=lock_file, max_minutes=max_minutes,
                          max_api_calls=max_api_calls)
    except LockBusy as e:
        fail(str(e), EXIT_LOCKED)
    click.echo(rep["summary"])
    if rep["status"] != "ok":
        sys.exit(EXIT_FAILED)


@cli.command()
@click.option("--db", default="data/demo.db", show_default=True, callback=check_db,
              help="Catalog to build the demo into.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface datasette listens on.")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=8001, show_default=True,
              help="Port datasette listens on.")
@click.option("--no-serve", is_flag=True, help="Build the demo catalog and stop (do not start datasette).")
def demo(db, host, port, no_serve):
    """Offline tour: build a small demo hub, serve it locally, crawl it, compute, browse it in datasette.

    Exit status: 0 done or stopped, 1 the demo failed, 2 busy port.
    """
    from .db import CatalogError
    from .demo import DEMO_DRAFT_MISMATCH, DEMO_TARGET, build_demo_catalog, urls
    from .publish import PublishError, check_port, free_port, stop_on_signals
    from .publish import serve as run_serve

    if not no_serve:
        port = port or free_port(host)
        try:
            check_port(host, port)  # before minutes of work, and before any URL is printed
        except PublishError as e:
            fail(str(e))
    try:
        with stop_on_signals():  # SIGTERM mid-crawl: the hub imitation stops, its temp dir goes
            build_demo_catalog(db, log=lambda m: click.echo(m, err=True))
    except KeyboardInterrupt:
        fail("demo interrupted", 130)
    except Exception as e:
        fail(f"demo failed: {type(e).__name__}: {e}", 1)
    click.echo(f"demo catalog: {db}")
    click.echo("try:")
    click.echo(f"  indexer query --db {db} --target {DEMO_TARGET}")
    click.echo(f"  indexer check --db {db} {DEMO_TARGET} {DEMO_DRAFT_MISMATCH}")
    if no_serve:
        click.echo(f"  indexer serve --db {db}")
        return

    def ready(url):
        for name, link in urls(host, port, Path(db).stem).items():
            click.echo(f"  {name:18} {link}")
        click.echo("Ctrl-C to stop.", err=True)

    try:
        sys.exit(run_serve(db, host, port, on_ready=ready))
    except (CatalogError, PublishError) as e:
        fail(str(e))


def main():  # pragma: no cover
    cli()
