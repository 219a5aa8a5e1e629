"""The options several commands share, declared once: --db, --engine, --max-file-bytes, --request-timeout,
--verbose, --engine-version and the expected speed-up's options."""

from __future__ import annotations

import click

from ..engines import DEFAULT_ENGINE, ENGINE_NAMES, parse_versions
from ..files import DEFAULT_MAX_FILE_BYTES
from ..hub import DEFAULT_CALL_SECONDS
from .checks import check_db, valid_endpoint


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


def engine_option(help_text: str, by_device: bool = False):
    """--engine: one of the registry's engines, SGLang by default (the registry's DEFAULT_ENGINE); ``by_device``
    (query): no default, so that with --hardware the engines that run on that device are ranked."""
    if by_device:
        return click.option("--engine", type=click.Choice(list(ENGINE_NAMES)), default=None,
                            help=f"{help_text} Default: {DEFAULT_ENGINE}; with --hardware, every engine that runs "
                                 "on that device, fastest first, and the answer of the fastest.")
    return click.option("--engine", type=click.Choice(list(ENGINE_NAMES)), default=DEFAULT_ENGINE,
                        show_default=True, help=help_text)


def endpoint_option(help_text: str = "Hub endpoint (default: $HF_ENDPOINT)."):
    """--endpoint: the Hub or a mirror, from $HF_ENDPOINT by default; checked before the command starts."""
    return click.option("--endpoint", envvar="HF_ENDPOINT", callback=valid_endpoint, help=help_text)


def request_timeout_option(f):
    """--request-timeout: one deadline per Hub call with all its retries (hub.guard), so nothing hangs a run."""
    return click.option(
        "--request-timeout", type=click.FloatRange(min=0, min_open=True), default=DEFAULT_CALL_SECONDS,
        show_default=True,
        help="Seconds one Hub call may take with all its retries; a repo past it is recorded 'error' (transient) "
             "and retried next run.")(f)


def verbose_option(f):
    """--verbose: the Hub client's retries and waits on stderr instead of only in the log."""
    return click.option("--verbose", "-v", is_flag=True,
                        help="Show the Hub client's retries and waits on stderr (they go to the log otherwise).")(f)


def _engine_versions(_ctx, _param, values):
    """Callback of --engine-version: {engine: release}; an unknown engine or release is one line, exit 2."""
    return parse_versions(values)


engine_version_option = click.option(
    "--engine-version", "engine_versions", multiple=True, metavar="ENGINE==VERSION", callback=_engine_versions,
    help="Answer for this release of an engine instead of the newest we have read (repeatable), e.g. "
         "vllm==0.33.0.")




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
                 help="Memory bandwidth of a device that is not listed, with its --device-kind (with --hardware: "
                      "that device at this bandwidth)."),
    click.option("--device-kind", type=click.Choice(["apple", "nvidia", "amd", "cpu"]), default=None,
                 help="The kind of a device given by --bandwidth: it decides which engines run on it."),
    click.option("--quant", "target_quant", metavar="TYPE",
                 help="The target's quantization (Q4_K_M, Q8_0, F16, 4bit, 8bit, bf16, fp8, int4, ...), over what "
                      "the repo declares."),
    click.option("--draft-quant", "draft_quant", metavar="TYPE", help="The draft's quantization, likewise."),
    click.option("--task", type=click.Choice(["code", "chat", "prose", "reasoning"]), default="chat",
                 show_default=True, help="What the text is like: drafts are accepted most on code, least on prose."),
    click.option("--draft-tokens", type=click.IntRange(min=1, max=64), default=None,
                 help="Draft tokens per round (default: the count the speed model finds best)."),
)
