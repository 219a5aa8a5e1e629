"""``indexer check``: the verdict per engine for a target and a draft."""

from __future__ import annotations

import sys

import click

from .. import deferred
from ..answer.query import check as check_pair
from ..answer.query import render_check, works_on
from ..answer.speedup import Options, add_to_check
from ..errors import IndexerError
from .checks import valid_target
from .options import db_option, engine_option, engine_version_option, max_bytes_option, speed_options
from .output import print_json


@click.command()
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
def check(target, draft, engine, as_json, db, max_file_bytes, offline, hardware, bandwidth, device_kind, target_quant,
          draft_quant, task, draft_tokens, engine_versions, verbose):
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
    speed = Options(hardware, bandwidth, task, target_quant, draft_quant, draft_tokens,
                    device_kind=device_kind)  # bad names: exit 2
    try:
        result = check_pair(target, draft, db=db, max_file_bytes=max_file_bytes,
                            releases=engine_versions)  # errors: IndexerGroup
    except IndexerError as e:
        live = deferred.live
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
