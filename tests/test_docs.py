"""README.md documents every command and every option of the `indexer` CLI."""

from __future__ import annotations

from pathlib import Path

import click

from indexer.cli import cli

README = Path(__file__).resolve().parents[1] / "README.md"


def _commands(group: click.Group, path=()):
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*path, name))
        else:
            yield (*path, name), cmd


def test_readme_starts_with_the_fresh_machine_commands():
    text = README.read_text()
    head = text[:1500]
    assert "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/indexer demo" in head
    assert "indexer nightly" in head and "indexer crawl --family qwen" in head
    assert ".venv/bin/pytest -q" in text[:2500]


def test_every_command_and_option_is_documented():
    text = README.read_text()
    missing = []
    for path, cmd in _commands(cli):
        name = " ".join(path)
        if f"indexer {name}" not in text:
            missing.append(f"command `indexer {name}`")
        for param in cmd.params:
            if isinstance(param, click.Option):
                for opt in param.opts + param.secondary_opts:
                    if opt.startswith("--") and f"`{opt}`" not in text and f"{opt} " not in text:
                        missing.append(f"option {opt} of `indexer {name}`")
    assert not missing, "README.md does not mention: " + ", ".join(missing)


def test_readme_has_json_shapes_and_rules():
    text = README.read_text()
    for key in ('"verdicts"', '"tli"', '"intersection"', '"ratio"', '"fix"', '"drafts"', '"near_misses"',
                '"repo_id"', '"params"', '"downloads"', '"reasons"', '"launch"'):
        assert key in text, key
    for engine in ("SGLang `STANDALONE`", "vLLM `draft_model`", "llama.cpp speculative", "MLX-LM"):
        assert engine in text
    assert "HF_ENDPOINT" in text and "postgresql://" in text
