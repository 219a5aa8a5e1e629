"""What a newcomer reads: fingerprint's columns, error wording, one --limit bound."""

from __future__ import annotations

from click.testing import CliRunner

from indexer.cli import cli
from indexer.jobs.demo import DEMO_TARGET, build_demo_hub


def test_fingerprint_prints_no_python_reprs_and_keeps_its_columns(tmp_path):
    build_demo_hub(tmp_path / "hub")
    for path in (tmp_path / "hub" / DEMO_TARGET,
                 tmp_path / "hub" / "lumen-ai/Lumen-7B-Instruct-GGUF" / "Lumen-7B-Instruct-Q8_0.gguf"):
        res = CliRunner().invoke(cli, ["fingerprint", str(path)])
        assert res.exit_code == 0, res.output
        facts = [line for line in res.output.splitlines() if not line.startswith(" ")]
        assert not [line for line in facts if "{'" in line or "['" in line or ": None" in line], res.output
        starts = {len(line) - len(line.split("  ")[-1].lstrip()) for line in facts if "  " in line}
        values = {line.split()[0]: line[min(starts):] for line in facts}
        assert len({len(line.split()[0]) < min(starts) - 1 for line in facts}) == 1  # every key before the column
        assert all(not v.startswith(" ") for v in values.values())


def test_a_postgresql_error_shows_the_url_as_typed():
    from indexer.catalog.db import safe_url

    assert safe_url("postgresql+psycopg://u:pw@h/db") == "postgresql://u:***@h/db"
    res = CliRunner().invoke(cli, ["query", "--target", "a/b", "--db", "postgresql://u@127.0.0.1:9/db"])
    assert res.exit_code == 2 and "+psycopg" not in res.output and "postgresql://u@127.0.0.1:9/db" in res.output


def test_the_driver_hint_is_a_command_that_works_outside_a_checkout():
    from indexer.catalog.dburl import POSTGRES_FIX

    assert "indexer[postgres]" not in POSTGRES_FIX and "psycopg" in POSTGRES_FIX


def test_limit_has_one_range_on_the_cli_and_the_site():
    from indexer.answer.validate import ANSWER_MAX_LIMIT
    from indexer.site import MAX_LIMIT

    res = CliRunner().invoke(cli, ["query", "--target", DEMO_TARGET, "--limit", "100000"])
    assert res.exit_code == 2 and res.output == f"error: --limit must be between 1 and {MAX_LIMIT}\n"
    assert MAX_LIMIT == ANSWER_MAX_LIMIT


def test_check_says_one_short_line_per_engine_and_the_shared_facts_once(demo_catalog):
    args = ["check", "--db", str(demo_catalog), DEMO_TARGET, "lumen-ai/Lumen-0.5B"]
    short = CliRunner().invoke(cli, args)
    full = CliRunner().invoke(cli, [*args, "--verbose"])
    data = __import__("json").loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    assert short.exit_code == full.exit_code == 0
    engines = [line for line in short.output.splitlines() if line.split()[1:2] and line.split()[1] in data["verdicts"]]
    assert len(engines) == len(data["verdicts"]) and all(len(line) <= 130 for line in engines), engines
    sentence = "of the target's tokens over the reference text mean the same in the draft"
    assert short.output.count(sentence) == 1  # on the agreement line, not on five engines again
    assert full.output.count(sentence) > 1  # --verbose: every engine's reasons in full, as --json keeps them
    for name, verdict in data["verdicts"].items():
        assert "; ".join(verdict["reasons"]) in full.output, name


def test_a_local_target_error_names_its_path_once(demo_catalog, tmp_path):
    empty = tmp_path / "x"
    empty.mkdir()
    res = CliRunner().invoke(cli, ["query", "--db", str(demo_catalog), "--target", str(empty)])
    assert res.exit_code == 2 and res.output.count(str(empty)) == 1, res.output


def test_invalid_json_is_said_in_words_with_its_line_and_column(tmp_path):
    import shutil

    build_demo_hub(tmp_path / "hub")
    bad = tmp_path / "bad"
    shutil.copytree(tmp_path / "hub" / DEMO_TARGET, bad)
    text = (bad / "tokenizer.json").read_text()
    (bad / "tokenizer.json").write_text(text[: len(text) // 2])
    res = CliRunner().invoke(cli, ["fingerprint", str(bad)])
    assert res.exit_code == 2
    [line] = res.output.splitlines()
    assert "invalid JSON at line " in line and ", column " in line and line.endswith("(unterminated string)"), line


def test_the_site_says_too_little_as_the_cli_does(tmp_path, monkeypatch):
    """A catalog that never looked for a target's drafts: the CLI (offline) and the site say the same."""
    from test_site import Site

    from indexer.hubsim import HubServer

    build_demo_hub(tmp_path / "hub")
    db = str(tmp_path / "catalog.db")
    with HubServer(str(tmp_path / "hub")) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        res = CliRunner().invoke(cli, ["check", "--db", db, DEMO_TARGET, "corvid-labs/Corvid-1B"])
        assert res.exit_code in (0, 1), res.output
    res = CliRunner().invoke(cli, ["query", "--db", db, "--target", DEMO_TARGET, "--offline"])
    assert res.exit_code == 0 and "too little" in res.output
    page = Site(db).get("/drafts", target=DEMO_TARGET, engine="sglang").text
    assert "holds too little to answer" in page and "No drafts that" not in page


def test_check_fixes_are_short_lines_and_verbose_keeps_their_sources(demo_catalog):
    args = ["check", "--db", str(demo_catalog), DEMO_TARGET, "lumen-ai/Lumen-1.5B-Instruct"]
    short = CliRunner().invoke(cli, args).output.splitlines()
    full = CliRunner().invoke(cli, [*args, "--verbose"]).output
    data = __import__("json").loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    fixes = [line for line in short if line.startswith("  fix (")]
    assert len(fixes) == sum(1 for f in data["fixes"].values() if f) and all(len(f) <= 200 for f in fixes), fixes
    assert "vocab_mapping.py" not in "\n".join(short)  # the citation is --verbose's and --json's
    for fix in data["fixes"].values():
        assert fix is None or fix in full
    label = f"ollama {data['verdicts']['ollama']['version']}"
    assert [line for line in short if "ollama" in line.split()[1:2]] == [f"  REFUSED        {label:20} "
                                                                        "Ollama takes no separate draft models"]


def test_a_short_fix_drops_citations_not_instructions():
    from indexer.answer.render import short_fix

    fix = ("re-convert the draft GGUF with the target's tokenizer files (copy them into the draft's directory, then "
           "convert_hf_to_gguf.py), or run TLI (vLLM TLI, vllm/v1/spec_decode/vocab_mapping.py: method draft_model) "
           "(token intersection 558, 87.2% of the draft)")
    assert short_fix(fix) == ("re-convert the draft GGUF with the target's tokenizer files (copy them into the draft's "
                              "directory, then convert_hf_to_gguf.py), or run TLI")
