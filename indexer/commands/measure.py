"""``indexer measure``: a pair's acceptance and speed-up read from a running engine, kept in the catalog."""

from __future__ import annotations

import click

from ..errors import BadInput
from ..measure.local import measure_local
from ..measure.run import measure as measure_pair
from ..measure.run import render
from ..measure.store import save
from ..speed import hardware as hw
from ..speed import quant
from .options import db_option
from .output import print_json
from .signals import long_run

ENGINES = ("sglang", "vllm", "llama.cpp", "mlx", "lmstudio", "transformers")  # SERVERS, and transformers run here


@click.command()
@click.argument("target")
@click.argument("draft")
@click.option("--engine", required=True, type=click.Choice(ENGINES),
              help="The engine serving at --url (transformers: the pair runs here, from local directories).")
@click.option("--url", metavar="URL", help="The engine's server with the draft, e.g. http://127.0.0.1:8080.")
@click.option("--baseline-url", metavar="URL",
              help="The same target served without a draft (needed where the engine cannot turn speculation off "
                   "per request: all but LM Studio).")
@click.option("--hardware", metavar="NAME", help="The device the server runs on (`indexer hardware` lists them); "
                                                  "without it the measurement is kept but not used to calibrate.")
@click.option("--task", type=click.Choice(["code", "chat", "prose", "reasoning"]), default="chat",
              show_default=True, help="Which of the shipped prompt sets to send.")
@click.option("--max-tokens", type=click.IntRange(min=2, max=4096), default=128, show_default=True,
              help="Tokens per answer (greedy, the same with and without the draft).")
@click.option("--runs", type=click.IntRange(min=1, max=100), default=1, show_default=True,
              help="Passes over the prompt set.")
@click.option("--draft-tokens", type=click.IntRange(min=1, max=64), default=None,
              help="The draft length the server was launched with (read from the engine where it reports rounds; "
                   "transformers: the length to run, default 5).")
@click.option("--quant", "target_quant", metavar="TYPE", help="The target's quantization on the server.")
@click.option("--draft-quant", "draft_quant", metavar="TYPE", help="The draft's quantization on the server.")
@click.option("--timeout", type=click.FloatRange(min=1), default=600, show_default=True,
              help="Seconds to wait for one answer.")
@click.option("--no-save", is_flag=True, help="Do not write the measurement into the catalog.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@db_option
@long_run("measure")
def measure(target, draft, engine, url, baseline_url, hardware, task, max_tokens, runs, draft_tokens, target_quant,
            draft_quant, timeout, no_save, as_json, db):
    """Measure TARGET with DRAFT on a running engine: acceptance and decode speed read from the engine's own
    counters, with and without the draft, beside the estimate for the same setup (docs/measure.md).

    The measurement is written into the catalog (`indexer check TARGET DRAFT` then shows it), once it is complete.
    Exit status: 0 measured, 1 the server failed or did not answer, 2 bad input, 130 interrupted (nothing kept).
    """
    if hardware:
        hw.lookup(hardware)  # an unknown device: one line before any request
    for q in (target_quant, draft_quant):
        if q:
            quant.lookup(q)
    if engine == "transformers":

        result = measure_local(target, draft, hardware=hardware, task=task, max_tokens=max_tokens, runs=runs,
                               draft_tokens=draft_tokens, db=db)
    else:
        if not url:
            raise BadInput(f"--url is needed: the {engine} server running the pair")

        result = measure_pair(target, draft, engine, url, baseline_url=baseline_url, hardware=hardware, task=task,
                              max_tokens=max_tokens, runs=runs, draft_tokens=draft_tokens,
                              target_quant=target_quant, draft_quant=draft_quant, db=db, timeout=timeout)
    if not no_save:

        result["id"] = save(result, db)
    if as_json:
        print_json(result)
    else:

        click.echo(render(result))
