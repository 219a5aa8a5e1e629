"""What every ``indexer`` command shares: one-line failures, the common options and their input checks, the
signal handling of long runs, and the group that turns any project error into one line and its exit code."""

from __future__ import annotations

import sys

import click

from .engines import DEFAULT_ENGINE, ENGINE_NAMES
from .errors import EXIT_BAD_INPUT, IndexerError
from .files import DEFAULT_MAX_FILE_BYTES


def fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    """One clear line on stderr, never a traceback."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


# Commands that write the catalog: their --db is checked for write access (and a free lock) up front.
WRITES_CATALOG = {"upgrade", "crawl", "compute", "nightly", "demo"}
# Commands that make a new catalog, its folder included (nightly is the scheduled crawl); any other refuses a --db
# in a folder that does not exist.
CREATES_CATALOG = {"upgrade", "crawl", "demo", "nightly"}
# `check DIR DIR` needs no catalog: its server is reached only when a side is a repo id.
CATALOG_OPTIONAL = {"check"}
DB_META = "indexer.catalog.db"


def check_db(ctx: click.Context, _param, value):
    """--db callback: refuse a bad catalog before the command starts, and remember it for error messages."""
    from .catalog.db import preflight

    ctx.meta[DB_META] = value
    ctx.meta[DB_META] = preflight(value, write=ctx.command.name in WRITES_CATALOG,
                                  connect=ctx.command.name not in CATALOG_OPTIONAL,
                                  creates=ctx.command.name in CREATES_CATALOG)
    return value


def check_db_folder(_ctx, _param, value):
    """--db of ``pull``: a catalog path in a folder that does not exist is refused before anything is fetched."""
    from .catalog.db import check_folder, resolve_url, sqlite_path

    check_folder(value, sqlite_path(resolve_url(value)))
    return value


def db_option(f):
    """--db on every command that reads or writes the catalog, checked up front by :func:`check_db`."""
    return click.option(
        "--db",
        envvar="INDEXER_DB",
        default=None,
        callback=check_db,
        help="Catalog: a file path, sqlite:///PATH or postgresql://USER@HOST/DB "
             "(default data/catalog.db, env INDEXER_DB).",
    )(f)


def max_bytes_option(f):
    """--max-file-bytes: the cap on any tokenizer or config file read (bad input never fills memory)."""
    return click.option(
        "--max-file-bytes",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_FILE_BYTES,
        show_default=True,
        help="Refuse any tokenizer or config file larger than this.",
    )(f)


def valid_target(ctx: click.Context, param: click.Parameter, value):
    """Callback of every TARGET/DRAFT: checked once (answer.validate), one line and exit 2 when it cannot be right."""
    from .answer.validate import target

    return None if value is None else target(value, param.name)


def valid_repo_ids(_ctx, _param: click.Parameter, values):
    """Callback of --model: each a valid Hub repo id (answer.validate), one line and exit 2 otherwise."""
    from .answer.validate import repo_id

    return tuple(repo_id(v) for v in values)


def valid_path(_ctx, param: click.Parameter, value):
    """Callback of a local DIRECTORY/FILE argument: it exists and is readable, else one line and exit 2."""
    from .answer.validate import local_path

    return local_path(value, param.name)


def valid_output_file(_ctx, param: click.Parameter, value):
    """An output file whose directory is writable, checked before the work, not after."""
    from .answer.validate import output_file

    output_file(value, param.opts[0])
    return value


def valid_output_dir(_ctx, param: click.Parameter, value):
    """An output directory, checked before hours of work, not after (created when it is written)."""
    from .answer.validate import output_dir

    if value:
        output_dir(value, param.opts[0], create=False)
    return value


def valid_answer_limit(_ctx, _param: click.Parameter, value):
    """``query --limit``: 1..validate.ANSWER_MAX_LIMIT, the site's bound too."""
    from .answer.validate import ANSWER_MAX_LIMIT, limit

    return None if value is None else limit(value, ANSWER_MAX_LIMIT, name="--limit")


def valid_limit(_ctx, _param: click.Parameter, value):
    """--limit: 1..validate.MAX_LIMIT; a number the database cannot hold is bad input, not the catalog's fault."""
    from .answer.validate import limit

    return None if value is None else limit(value, name="--limit")


LONG_COMMANDS = {"demo", "crawl", "compute", "nightly", "pull", "publish"}  # each decorated with long_run
SIGNALLED: dict = {}  # the first SIGINT/SIGTERM a long command received ({"signum": n}), see interrupt_on_signals


def interrupt_on_signals() -> dict:
    """The first SIGTERM or SIGINT raises KeyboardInterrupt in the main thread: the run is recorded as
    interrupted and reported. A second one exits at once (every repo is its own transaction, so nothing
    committed is lost). Returns the dict that remembers the first signal (:data:`SIGNALLED`).

    A KeyboardInterrupt raised where Python cannot propagate it (a weakref finalizer, a ``__del__``) is
    printed by ``sys.unraisablehook`` as a traceback and then lost: the hook drops it silently here, and
    :func:`long_run` still sees the signal in the dict."""
    import os
    import signal

    def handler(signum, _frame):
        if "signum" in SIGNALLED:
            os._exit(128 + signum)
        SIGNALLED["signum"] = signum
        raise KeyboardInterrupt

    if getattr(sys.unraisablehook, "__name__", "") != "_quiet_interrupts":
        default = sys.unraisablehook

        def _quiet_interrupts(unraisable):
            if not isinstance(unraisable.exc_value, KeyboardInterrupt):
                default(unraisable)

        sys.unraisablehook = _quiet_interrupts
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return SIGNALLED


def long_run(name: str):
    """Decorator of a long command (demo, crawl, compute, nightly, pull, publish): Ctrl-C or SIGTERM is one
    line, ``error: NAME interrupted``, and exit 130 (143), never a traceback, and never lost. Each command
    writes in transactions or renames into place, so an interrupted run leaves nothing half-written and the
    next run resumes."""
    import functools

    def deco(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            SIGNALLED.clear()
            got = interrupt_on_signals()
            try:
                result = f(*args, **kwargs)
            except KeyboardInterrupt:
                exit_interrupted(got, f"error: {name} interrupted")
            if got:  # swallowed on the way (a finalizer, a library's cleanup): the run was still interrupted
                exit_interrupted(got, f"error: {name} interrupted")
            return result

        return wrapper

    return deco


def stop_handling_signals() -> None:
    """Back to Python's own Ctrl-C (KeyboardInterrupt) and SIGTERM before a long command serves until stopped
    (demo): stopping a server is its normal end, not an interruption."""
    import signal

    SIGNALLED.clear()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def exit_interrupted(got: dict, message: str | None = None) -> None:
    """Exit 128 + the signal (143 SIGTERM, 130 SIGINT). Everything worth keeping is committed and reported
    by now; crawl workers still stuck in a stalled request are not waited for (issue 18)."""
    import logging
    import os
    import signal
    import threading
    import time

    if message:
        click.echo(message, err=True)
    code = 128 + got.get("signum", signal.SIGINT)
    give_up = time.monotonic() + 2.0
    for t in threading.enumerate():
        if t.name.startswith("crawl") and t is not threading.current_thread():
            t.join(max(0.0, give_up - time.monotonic()))
    if any(t.name.startswith("crawl") and t.is_alive() for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(code)
    sys.exit(code)


def request_timeout_option(f):
    """--request-timeout: one deadline per Hub call with all its retries (hub.guard), so nothing hangs a run."""
    from .hub.guard import DEFAULT_CALL_SECONDS

    return click.option(
        "--request-timeout", type=click.FloatRange(min=0, min_open=True), default=DEFAULT_CALL_SECONDS,
        show_default=True,
        help="Seconds one Hub call may take with all its retries; a repo past it is recorded 'error' (transient) "
             "and retried next run.")(f)


def verbose_option(f):
    """--verbose: the Hub client's retries and waits on stderr instead of only in the log."""
    return click.option("--verbose", "-v", is_flag=True,
                        help="Show the Hub client's retries and waits on stderr (they go to the log otherwise).")(f)


def print_json(data) -> None:
    """Every --json output (jsontext.answer_json, which the fast path prints too)."""
    from .jsontext import answer_json

    click.echo(answer_json(data))


class IndexerGroup(click.Group):
    """The one place where errors become one line: any :class:`~indexer.errors.IndexerError` a command lets
    through prints ``error: ...`` and exits with the error's own exit code; a driver exception that
    :func:`indexer.catalog.db.as_catalog_error` recognises is a CatalogError (exit 2)."""

    def invoke(self, ctx: click.Context):
        """Run the command; an IndexerError (or a driver error it words) becomes one line and its exit code."""
        try:
            return super().invoke(ctx)
        except IndexerError as e:
            fail(e.message, e.exit_code)
        except KeyboardInterrupt:  # Ctrl-C before a long command's own handling began (its --db check)
            if ctx.invoked_subcommand not in LONG_COMMANDS:
                raise
            fail(f"{ctx.invoked_subcommand} interrupted", 130)
        except Exception as e:
            from .catalog.db import as_catalog_error

            err = as_catalog_error(e, ctx.meta.get(DB_META))
            if isinstance(err, IndexerError):
                fail(err.message, err.exit_code)
            raise


def engine_option(help_text: str):
    """--engine: one of the registry's engines, SGLang by default (the registry's DEFAULT_ENGINE)."""
    return click.option("--engine", type=click.Choice(list(ENGINE_NAMES)), default=DEFAULT_ENGINE,
                        show_default=True, help=help_text)
