"""``indexer fingerprint``: the facts of a local model directory or GGUF file."""

from __future__ import annotations

import click

from ..answer.localdir import local_facts
from ..answer.render import render_fingerprint, render_gguf_facts
from .checks import valid_path
from .options import max_bytes_option
from .output import print_json


@click.command()
@click.argument("directory", callback=valid_path)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--reference", is_flag=True, help="Use transformers' AutoTokenizer instead of the fast path.")
@max_bytes_option
def fingerprint(directory, as_json, reference, max_file_bytes):
    """Fingerprint the tokenizer and config of a local model DIRECTORY, or read a GGUF file's own facts
    (a .gguf file, or a directory holding one GGUF model and no tokenizer files)."""
    facts, is_gguf = local_facts(directory, reference=reference, max_file_bytes=max_file_bytes)  # errors: exit 2
    if as_json:
        print_json(facts)
    else:
        click.echo(render_gguf_facts(facts) if is_gguf else render_fingerprint(facts))
