"""``indexer query``: ranked drafts for a target on an engine."""

from __future__ import annotations

import click

from .. import deferred
from ..answer.query import render, run_query
from ..answer.speedup import Options
from ..engines import DEFAULT_ENGINE, QUERY_METHODS
from ..errors import IndexerError
from .checks import valid_answer_limit, valid_target
from .options import db_option, engine_option, engine_version_option, speed_options
from .output import print_json


@click.command()
@click.option("--target", required=True, callback=valid_target,
              help="Target: a repo id (any case), a Hub URL, a bare name, or a local model directory.")
@engine_option("Serving engine whose rule decides.", by_device=True)
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
          device_kind, target_quant, draft_quant, task, draft_tokens, engine_versions):
    """Ranked draft models for --target that work on the engine, with reasons and launch flags.

    A Hub target the catalog lacks (or no catalog at all) is fetched as the crawl fetches it and answered
    against the catalog's drafts; --live also fetches candidate drafts from the Hub.

    Exit status: 0 answered, 2 bad input or catalog, 3 target neither in the catalog nor on the Hub
    (or --offline).
    """
    speed = Options(hardware, bandwidth, task, target_quant, draft_quant, draft_tokens,
                    device_kind=device_kind)  # bad names: exit 2
    if engine is None and speed.device is None:
        engine = DEFAULT_ENGINE  # without a device there is nothing to rank engines on
    kw = dict(engine=engine, limit=limit, near_misses=near_misses, all_members=all_, db=db, method=method,
              speed=speed, release=engine_versions.get(engine) if engine else None)
    result = first = unlooked = None
    if not live_:
        try:
            result = run_query(target, **kw)  # errors (RepoNotFound: exit 3, ...): IndexerGroup
        except IndexerError as e:
            if not deferred.live.sides_to_fetch(db, target):  # not a Hub repo the catalog lacks: its answer stands
                raise
            first = e
        if result is not None and (result.get("summary") or {}).get("catalog_looked") is False:
            unlooked, result, live_ = result, None, True  # never looked for its drafts: look now, within --budget
    if result is None:  # the live path (answer/live.py)
        live = deferred.live
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
