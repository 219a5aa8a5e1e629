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


DEEP = "[" * 150_000 + "]" * 150_000  # the JSON scanners recurse per level: nested too deeply to parse


@pytest.mark.parametrize("name", ["tokenizer.json", "tokenizer_config.json", "config.json"])
def test_json_nested_too_deeply_is_one_line(good, tmp_path, name):
    draft = make_model(tmp_path / "draft")
    (good / name).write_text(DEEP)
    assert_one_line_error(run("fingerprint", str(good)), f"{name}: JSON nested too deeply")
    assert_one_line_error(run("check", str(good), str(draft)), f"{name}: JSON nested too deeply")


@pytest.mark.parametrize("value", [["llama"], {"llama": 1}])
def test_model_type_of_another_type_is_one_line(good, tmp_path, value):
    draft = make_model(tmp_path / "draft")
    (good / "config.json").write_text(json.dumps({"model_type": value, "vocab_size": 123}))
    assert_one_line_error(run("fingerprint", str(good)), "config.json: model_type must be a string")
    assert_one_line_error(run("check", str(good), str(draft)), "config.json: model_type must be a string")


def test_a_size_no_model_has_is_out_of_range(good, tmp_path):
    draft = make_model(tmp_path / "draft")
    (good / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": 123,
                                                  "text_config": {"num_hidden_layers": 10**12}}))
    assert_one_line_error(run("check", str(good), str(draft)),
                          "config.json: text_config.num_hidden_layers 1000000000000 is out of range")


def test_the_crawl_records_deep_json_wrong_types_and_huge_sizes_as_malformed(tmp_path):
    from crawlkit import crawl, repos, write_repo

    from indexer.catalog.db import upgrade
    from indexer.hubsim import HubServer

    hub = tmp_path / "hub"
    write_repo(hub, "org/fine")
    (write_repo(hub, "org/deep-tokenizer") / "tokenizer.json").write_text(DEEP)
    (write_repo(hub, "org/deep-config") / "config.json").write_text('{"a":' * 150_000 + "1" + "}" * 150_000)
    write_repo(hub, "org/list-type", config={"model_type": ["llama"]})
    write_repo(hub, "org/huge", config={"num_hidden_layers": 10**12, "hidden_size": 4096})
    write_repo(hub, "org/huger", config={"num_hidden_layers": 32, "hidden_size": 4096, "vocab_size": 10**30})
    db = str(tmp_path / "catalog.db")
    upgrade(db)
    with HubServer(str(hub)) as server:
        summary = crawl(db, server)
    assert summary["status"] == "ok"
    rows = {k: (v["status"], v["reason"]) for k, v in repos(db).items()}
    assert rows["org/fine"][0] == "ok"
    assert rows["org/deep-tokenizer"] == ("malformed", "tokenizer.json: JSON nested too deeply")
    assert rows["org/deep-config"] == ("malformed", "config.json: JSON nested too deeply")
    assert rows["org/list-type"] == ("malformed", "config.json: model_type must be a string")
    assert rows["org/huge"] == ("malformed", "config.json: num_hidden_layers 1000000000000 is out of range "
                                             "(at most 2147483647)")
    assert rows["org/huger"][0] == "malformed" and "vocab_size" in rows["org/huger"][1]  # not an OverflowError
