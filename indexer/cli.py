"""The ``indexer`` command: a thin click layer over the library modules."""

from __future__ import annotations

import json
import sys

import click

from . import __version__
from .files import DEFAULT_MAX_FILE_BYTES, InputError

EXIT_BAD_INPUT = 2


def fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    """One clear line on stderr, never a traceback."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def db_option(f):
    return click.option(
        "--db",
        envvar="INDEXER_DB",
        default=None,
        help="Catalog: a file path or any SQLAlchemy URL (default data/catalog.db, env INDEXER_DB).",
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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
    from .db import CatalogError, upgrade

    try:
        url = upgrade(db)
    except CatalogError as e:
        fail(str(e))
    except Exception as e:  # unreachable server, bad URL, ...
        fail(f"cannot migrate {db or 'the catalog'}: {type(e).__name__}: {e}")
    click.echo(f"catalog at head: {url}")


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
        config = read_config(directory, max_file_bytes) if (_p(directory) / "config.json").is_file() else None
    except InputError as e:
        fail(e.message)
    facts = fp.to_dict()
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


def _p(path):
    from pathlib import Path

    return Path(path)


@cli.command()
@click.argument("target")
@click.argument("draft")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@db_option
@max_bytes_option
def check(target, draft, as_json, db, max_file_bytes):
    """Verdict per engine for TARGET and DRAFT (local directories or catalog repo ids).

    Exit status: 0 when SGLang STANDALONE accepts the pair, 1 when not, 2 on bad input.
    """
    from .rules import check_pair
    from .sides import resolve_side

    try:
        t = resolve_side(target, db=db, max_file_bytes=max_file_bytes)
        d = resolve_side(draft, db=db, max_file_bytes=max_file_bytes)
    except InputError as e:
        fail(e.message)
    result = check_pair(t, d)
    if as_json:
        print_json(result)
    else:
        click.echo(f"target: {target}\ndraft:  {draft}")
        for engine, verdict in result["verdicts"].items():
            mark = "OK  " if verdict["compatible"] else "FAIL"
            click.echo(f"  {mark} {engine:13} {'; '.join(verdict['reasons'])}")
        det = result["details"]
        if det["added_only_in_target"]:
            click.echo(f"  added tokens only in target: {_short(det['added_only_in_target'])}")
        if det["added_only_in_draft"]:
            click.echo(f"  added tokens only in draft:  {_short(det['added_only_in_draft'])}")
        for diff in det["first_differing_ids"]:
            click.echo(f"  id {diff['id']}: target {diff['target']!r}, draft {diff['draft']!r}")
        if result["tli"] is not None:
            click.echo(f"  TLI intersection: {result['tli']['intersection']} tokens "
                       f"({result['tli']['ratio']:.1%} of the draft)")
        if result["fix"]:
            click.echo(f"  fix: {result['fix']}")
    sys.exit(0 if result["verdicts"]["sglang"]["compatible"] else 1)


def _short(tokens: list[str], n: int = 8) -> str:
    shown = ", ".join(repr(t) for t in tokens[:n])
    return shown + (f", ... ({len(tokens)} in all)" if len(tokens) > n else "")


def main():  # pragma: no cover
    cli()
