"""Bad input: one clear line on stderr, exit status 2, never a traceback."""

import json

import pytest
from click.testing import CliRunner
from tokfactory import make_model

from indexer.cli import cli


def run(*args):
    result = CliRunner().invoke(cli, list(args))
    return result


def assert_one_line_error(result, fragment):
    assert result.exit_code == 2, (result.output, result.exception)
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert fragment in lines[0]
    assert "Traceback" not in result.output


@pytest.fixture
def good(tmp_path):
    return make_model(tmp_path / "good")


def test_missing_directory(tmp_path):
    assert_one_line_error(run("fingerprint", str(tmp_path / "nope")), "no such directory")


def test_no_tokenizer_files(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "config.json").write_text("{}")
    assert_one_line_error(run("fingerprint", str(tmp_path / "empty")), "no tokenizer files")


def test_malformed_json(good):
    (good / "tokenizer.json").write_text('{"model": {"vocab": {"a": 0,}')
    assert_one_line_error(run("fingerprint", str(good)), "tokenizer.json: invalid JSON")


def test_non_utf8_json(good):
    (good / "tokenizer_config.json").write_bytes(b'{"bos_token": "\xff\xfe"}')
    assert_one_line_error(run("fingerprint", str(good)), "not UTF-8")


def test_wrong_json_types(good):
    (good / "tokenizer_config.json").write_text(json.dumps(["not", "an", "object"]))
    assert_one_line_error(run("fingerprint", str(good)), "expected a JSON dict")


def test_wrong_vocab_size_type(good, tmp_path):
    (good / "config.json").write_text(json.dumps({"vocab_size": "lots"}))
    assert_one_line_error(run("check", str(good), str(good)), "vocab_size must be a non-negative integer")


def test_file_over_the_size_cap(good):
    assert_one_line_error(run("fingerprint", str(good), "--max-file-bytes", "100"), "over the 100-byte cap")


def test_tokenizer_class_that_needs_remote_code(good):
    tc = json.loads((good / "tokenizer_config.json").read_text())
    tc.update(tokenizer_class="MyCustomTokenizer", auto_map={"AutoTokenizer": ["tok.MyCustomTokenizer", None]})
    (good / "tokenizer_config.json").write_text(json.dumps(tc))
    (good / "tok.py").write_text("raise SystemExit('remote code must never run')\n")
    assert_one_line_error(run("fingerprint", str(good)), "needs remote code")


def test_check_exit_codes(tmp_path):
    a = make_model(tmp_path / "a")
    b = make_model(tmp_path / "b", vocab_size=500)
    assert run("check", str(a), str(a)).exit_code == 0
    result = run("check", str(a), str(b), "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert set(data) >= {"target", "draft", "verdicts", "tli", "fix"}
    from indexer.engines import ENGINES

    assert set(data["verdicts"]) == set(ENGINES)
    assert set(data["verdicts"]["sglang"]) == {"compatible", "accepted", "outcome", "reasons", "vocabulary_outcome",
                                                "architecture", "version", "by_version", "versions", "speedup",
                                                "speedups", "measured"}
    assert set(data["tli"]) >= {"intersection", "ratio"}


def test_fingerprint_json_output(good):
    result = run("fingerprint", str(good), "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert len(data["vocab_sha256"]) == 64 and data["method"] == "fast"
    assert data["config"]["vocab_size"] == data["vocab_len"]
    ref = json.loads(run("fingerprint", str(good), "--json", "--reference").stdout)
    assert ref["vocab_sha256"] == data["vocab_sha256"] and ref["transformers_version"]
