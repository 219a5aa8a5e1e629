"""``indexer hardware``: the devices ``--hardware`` names."""

from __future__ import annotations

import click

from ..answer.devices import devices_json, render_devices
from .output import print_json


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def hardware(as_json):
    """The devices --hardware names: kind, memory bandwidth, FP32 compute, memory, the source of the figures, and
    the engines that run on each kind (check and query estimate the speed-up on them).

    Exit status: 0.
    """
    result = devices_json()
    if as_json:
        print_json(result)
    else:
        click.echo(render_devices(result))
