"""The ``indexer`` command: one click group whose commands (``indexer/commands/``, one module each) are
imported only when they run, so ``indexer query`` loads query's code and not crawl's or publish's."""

from __future__ import annotations

import importlib

import click

from . import __version__
from .catalog.dberrors import as_catalog_error
from .commands.checks import DB_META
from .commands.output import fail
from .errors import IndexerError

# Every command: the module of indexer.commands that defines it, under the same name.
COMMANDS = ("check", "compute", "crawl", "db", "demo", "fingerprint", "hardware", "measure", "nightly", "publish",
            "pull", "query", "serve")
# The long ones, each decorated with commands.signals.long_run: Ctrl-C is one line and exit 130.
LONG_COMMANDS = {"demo", "crawl", "compute", "nightly", "pull", "publish", "measure"}


class IndexerGroup(click.Group):
    """The commands, loaded on demand; and the one place where errors become one line: any
    :class:`~indexer.errors.IndexerError` a command lets through prints ``error: ...`` and exits with the error's
    own exit code; a driver exception that :func:`indexer.catalog.db.as_catalog_error` recognises is a
    CatalogError (exit 2)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command, without importing any: ``--help`` lists them all."""
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command's module, imported now: a command loads only its own code."""
        if cmd_name not in COMMANDS:
            return None
        return getattr(importlib.import_module(f"{__package__}.commands.{cmd_name}"), cmd_name)

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

            err = as_catalog_error(e, ctx.meta.get(DB_META))
            if isinstance(err, IndexerError):
                fail(err.message, err.exit_code)
            raise


@click.group(cls=IndexerGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version")
def cli():
    """Which draft models can speculate for which targets, per serving engine."""


def main() -> None:
    """The console script."""
    cli()
