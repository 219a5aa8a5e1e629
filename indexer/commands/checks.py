"""The input checks of the options and arguments (click callbacks): a value that cannot be right is one line and
exit 2 before the command starts."""

from __future__ import annotations

import click

from ..answer.validate import (
    ANSWER_MAX_LIMIT,
    endpoint,
    limit,
    local_path,
    output_dir,
    output_file,
    repo_id,
    target,
)
from ..catalog.connect import preflight
from ..catalog.dburl import check_folder, resolve_url, sqlite_path

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
    ctx.meta[DB_META] = value
    ctx.meta[DB_META] = preflight(value, write=ctx.command.name in WRITES_CATALOG,
                                  connect=ctx.command.name not in CATALOG_OPTIONAL,
                                  creates=ctx.command.name in CREATES_CATALOG)
    return value


def check_db_folder(_ctx, _param, value):
    """--db of ``pull``: a catalog path in a folder that does not exist is refused before anything is fetched."""
    check_folder(value, sqlite_path(resolve_url(value)))
    return value


def valid_target(ctx: click.Context, param: click.Parameter, value):
    """Callback of every TARGET/DRAFT: checked once (answer.validate), one line and exit 2 when it cannot be right."""
    return None if value is None else target(value, param.name)


def valid_repo_ids(_ctx, _param: click.Parameter, values):
    """Callback of --model: each a valid Hub repo id (answer.validate), one line and exit 2 otherwise."""
    return tuple(repo_id(v) for v in values)


def valid_endpoint(_ctx, param: click.Parameter, value):
    """--endpoint (or $HF_ENDPOINT): an http(s) URL, one line and exit 2 otherwise."""
    return endpoint(value, param.opts[0])


def valid_path(_ctx, param: click.Parameter, value):
    """Callback of a local DIRECTORY/FILE argument: it exists and is readable, else one line and exit 2."""
    return local_path(value, param.name)


def valid_output_file(_ctx, param: click.Parameter, value):
    """An output file whose directory is writable, checked before the work, not after."""
    output_file(value, param.opts[0])
    return value


def valid_output_dir(_ctx, param: click.Parameter, value):
    """An output directory, checked before hours of work, not after (created when it is written)."""
    if value:
        output_dir(value, param.opts[0], create=False)
    return value


def valid_answer_limit(_ctx, _param: click.Parameter, value):
    """``query --limit``: 1..validate.ANSWER_MAX_LIMIT, the site's bound too."""
    return None if value is None else limit(value, ANSWER_MAX_LIMIT, name="--limit")


def valid_limit(_ctx, _param: click.Parameter, value):
    """--limit: 1..validate.MAX_LIMIT; a number the database cannot hold is bad input, not the catalog's fault."""
    return None if value is None else limit(value, name="--limit")
