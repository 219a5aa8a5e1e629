"""What every command prints the same way: a failure as one ``error:`` line, and ``--json``."""

from __future__ import annotations

import json
import sys

import click

from ..errors import EXIT_BAD_INPUT


def fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    """One clear line on stderr, never a traceback."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def print_json(data) -> None:
    """Every --json output: indented, UTF-8 as is, anything else by str()."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
