"""What every command prints the same way: a failure as one ``error:`` line, and ``--json``."""

from __future__ import annotations

import sys

import click

from ..errors import EXIT_BAD_INPUT


def fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    """One clear line on stderr, never a traceback."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def print_json(data) -> None:
    """Every --json output (jsontext.answer_json, which the fast path prints too)."""
    from ..jsontext import answer_json

    click.echo(answer_json(data))
