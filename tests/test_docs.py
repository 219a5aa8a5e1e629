"""The docs: README.md short (what the tool answers, set-up, three examples, links); docs/commands.md every command
and option in its own section; every example in README.md and docs/*.md what the commands print now."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import click
import pytest

from indexer.cli import cli

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
COMMANDS = DOCS / "commands.md"
# The README and the docs its long version became; other docs may quote a transcript.
FROM_THE_README = ["README.md", "docs/commands.md", "docs/json.md", "docs/rules.md", "docs/performance.md"]
README_MAX_LINES = 150  # a few screens: what someone deciding to use the tool reads


def _examples():
    """docs/examples.py, the generator (a script beside the docs, not part of the package)."""
    spec = importlib.util.spec_from_file_location("readme_examples", DOCS / "examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _commands(group: click.Group, path=()):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*path, name))
        else:
            yield " ".join((*path, name)), cmd


def _options(cmd: click.Command) -> set[str]:
    return {opt for p in cmd.params if isinstance(p, click.Option) for opt in p.opts + p.secondary_opts
            if opt.startswith("--")}


def _sections(text: str) -> dict[str, str]:
    """``### `indexer NAME ...` `` heading -> its text up to the next heading."""
    sections = {}
    for m in re.finditer(r"^### `indexer ([a-z. ]+?)(?: [A-Z][A-Z ]*)?`.*?\n(.*?)(?=^##)", text, re.M | re.S):
        sections[m.group(1)] = m.group(2)
    return sections


def _options_paragraph(section: str) -> str:
    m = re.search(r"^(Scope options|Options):.*?(?=\n\n)", section, re.M | re.S)
    return m.group(0) if m else ""


def test_readme_starts_with_the_fresh_machine_commands():
    head = README.read_text()[:3000]
    assert "python3 -m venv --upgrade-deps .venv && .venv/bin/pip install . && .venv/bin/indexer demo" in head
    assert "python3 -m venv --upgrade-deps .venv && .venv/bin/pip install . && .venv/bin/indexer nightly" in head
    test_command = "python3 -m venv .venv && .venv/bin/pip install -e '.[test,postgres]' && .venv/bin/pytest -q -n auto"
    assert test_command in head
    assert "INDEXER_TEST_PG" in head and ".ci/run" in head
    assert test_command.rsplit("&& ", 1)[1] + "\n" in (ROOT / ".ci" / "run").read_text()  # what CI runs


def test_readme_is_short_and_says_what_it_answers_and_where_the_rest_is():
    text = README.read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    for engine in ("SGLang", "vLLM", "transformers", "llama.cpp", "MLX", "LM Studio", "Ollama"):
        assert engine in text.split("## ")[0], engine  # the intro names every engine the answers include
    assert len(_examples().FENCE_RE.findall(text)) == 3
    for doc in ("commands.md", "json.md", "rules.md", "performance.md"):
        assert f"](docs/{doc})" in text


def test_every_command_has_its_section_with_every_option():
    sections = _sections(COMMANDS.read_text())
    missing = []
    for name, cmd in _commands(cli):
        if name not in sections:
            missing.append(f"section `indexer {name}`")
            continue
        options = _options_paragraph(sections[name])
        assert options, f"section `indexer {name}` has no 'Options:' paragraph"
        missing += [f"{opt} in the section of `indexer {name}`" for opt in sorted(_options(cmd))
                    if f"`{opt}`" not in options]
    assert not missing, "docs/commands.md does not document: " + ", ".join(missing)


def test_no_section_lists_an_option_its_command_lacks():
    sections = _sections(COMMANDS.read_text())
    stale = []
    for name, cmd in _commands(cli):
        listed = set(re.findall(r"`(--[a-z-]+)`", _options_paragraph(sections.get(name, ""))))
        stale += [f"{opt} in `indexer {name}`" for opt in sorted(listed - _options(cmd))]
    assert not stale, "docs/commands.md lists options that do not exist: " + ", ".join(stale)


def test_the_section_parser_sees_every_heading():
    text = COMMANDS.read_text()
    headings = re.findall(r"^### `indexer ", text, re.M)
    assert len(_sections(text)) == len(headings) == len(list(_commands(cli)))


def test_every_doc_is_linked_and_every_link_exists():
    text = README.read_text()
    for doc in sorted(DOCS.glob("*.md")):
        assert f"](docs/{doc.name})" in text, f"README.md does not link docs/{doc.name}"
    for target in re.findall(r"\]\(((?:docs|deploy|tests)/[^)#]+)\)", text):
        assert (ROOT / target).exists(), target
    for doc in sorted(DOCS.glob("*.md")):  # a doc's links are relative to docs/
        for target in re.findall(r"\]\((?!https?:|#)([^)#\s]+)", doc.read_text()):
            assert (DOCS / target).exists(), f"{doc.name}: {target}"


def _headings(path) -> set[str]:
    return {_anchor(h) for h in re.findall(r"^#{1,3} (.+)$", path.read_text(), re.M)}


def test_every_anchor_exists():
    for doc in [README, *sorted(DOCS.glob("*.md"))]:
        text = doc.read_text()
        for anchor in re.findall(r"\]\(#([^)]+)\)", text):
            assert anchor in _headings(doc), f"{doc.name}: #{anchor}"
        for target, anchor in re.findall(r"\]\(([\w./-]+\.md)#([^)]+)\)", text):
            assert anchor in _headings(doc.parent / target), f"{doc.name}: {target}#{anchor}"


def _anchor(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_printed_output_lives_only_in_generated_blocks():
    """A `$ ` line outside a ```console block would be an example nobody runs; stale words stay out."""
    text = "".join((ROOT / p).read_text() for p in FROM_THE_README)
    ex = _examples()
    for block in re.findall(r"^```(\w*)\n(.*?)^```\n", text, re.M | re.S):
        if block[0] != "console":
            assert not re.search(r"^\$ ", block[1], re.M), block[1][:200]
    assert len(ex.FENCE_RE.findall(text)) >= 12
    for stale in ("token bucket", "token-bucket", "publishing is skipped", "drafts_for_target?",
                  "copied from real runs", "largest_tokenizer_families"):
        assert stale not in text, stale


def test_generated_blocks_are_current():
    """Blocks rendered from the code (engine table, demo URLs, crontab line) equal what the code renders now."""
    ex = _examples()
    text = "".join(p.read_text() for p in ex.docs())
    names = [m.group(2) for m in ex.GENERATED_RE.finditer(text)]
    assert sorted(names) == sorted(ex.GENERATORS)
    for name, render in ex.GENERATORS.items():
        assert f"<!-- generated: {name} -->\n{render()}<!-- /generated -->" in text, name


def test_engine_table_is_the_registry():
    from indexer.engines import ENGINES

    table = _examples().engine_table()
    for name, e in ENGINES.items():
        assert f"| `{name}` | {e.display} | {e.version} |" in table
        for source in e.sources.values():
            assert source in table


def test_the_docs_have_json_shapes():
    text = (DOCS / "json.md").read_text()
    for key in ('"verdicts"', '"tli"', '"intersection"', '"ratio"', '"fix"', '"drafts"', '"near_misses"',
                '"repo_id"', '"params"', '"params_source"', '"downloads"', '"reasons"', '"launch"', '"summary"'):
        assert key in text, key
    commands = COMMANDS.read_text()
    assert "HF_ENDPOINT" in commands and "postgresql://" in commands


def test_mask_hides_only_run_dependent_values():
    ex = _examples()
    a = ("crawl 0.138 s, 429s 0 api; pid 370 since 2026-12-01T10:07:28Z at http://127.0.0.1:34425 "
         "(180224 bytes, 8 repos, sha256 3061d6b1d63b)")
    b = ("crawl 1.5 s, 429s 0 api; pid 9 since 2026-12-02T01:00:00Z at http://127.0.0.1:41000 "
         "(180225 bytes, 8 repos, sha256 aaaaaaaaaaaa)")
    assert ex.mask(a) == ex.mask(b)
    assert ex.mask("listed 8, new 8") != ex.mask("listed 8, new 9")
    assert ex.mask("(180224 bytes, 8 repos") != ex.mask("(180224 bytes, 9 repos")


EXAMPLE_DOCS = ["README.md", "docs/commands.md", "docs/json.md"]


def test_these_are_the_docs_with_examples():
    ex = _examples()
    assert [str(p.relative_to(ROOT)) for p in ex.docs() if ex.FENCE_RE.search(p.read_text())] == EXAMPLE_DOCS


@pytest.mark.skipif(not (shutil.which("jq") and shutil.which("curl")),
                    reason="the docs' examples use jq and curl (apt-get install jq curl)")
@pytest.mark.parametrize("doc", EXAMPLE_DOCS)
def test_examples_are_what_the_commands_print(doc):
    """Runs every `$` line of a doc in a fresh directory (docs/examples.py) and compares, masked."""
    diff = _examples().diff((ROOT / doc).read_text(), doc)
    assert not diff, f"{doc} differs from what its commands print; run python docs/examples.py\n" + diff


def test_check_catches_a_drifted_output():
    ex = _examples()
    text = "```console\n$ indexer --version\nindexer, version 0.0.0-drifted\n```\n"
    d = ex.diff(text)
    assert "-indexer, version 0.0.0-drifted" in d and "+indexer, version" in d
