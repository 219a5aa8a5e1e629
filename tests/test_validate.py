"""Input validation at the edges (indexer/answer/validate.py) and one error model (indexer/errors.py), through the CLI.

Long or strange input is one `error:` line and exit 2, before anything touches the disk or the catalog.
"""

from __future__ import annotations

import sqlite3

import pytest
from click.testing import CliRunner

from indexer import errors
from indexer.answer import validate
from indexer.cli import cli

LONG = "a" * 10_000


def run(*args):
    return CliRunner().invoke(cli, list(args))


def one_line(res, code: int) -> str:
    assert res.exit_code == code, res.output
    assert res.output.count("\n") == 1 and res.output.startswith("error: "), res.output
    assert "Traceback" not in res.output and "\x1b" not in res.output and len(res.output) < 400
    return res.output


@pytest.mark.parametrize("argv", [
    ["query", "--target", LONG],
    ["query", "--target", "a/" + "b" * 300],
    ["check", LONG, "owner/draft"],
    ["check", "owner/target", LONG],
    ["fingerprint", LONG],
])
def test_overlong_targets_and_paths_are_one_line(catalog, argv):
    out = one_line(run(*argv, *(["--db", catalog] if argv[0] != "fingerprint" else [])), 2)
    assert "too long for a path" in out and "characters)" in out


@pytest.mark.parametrize("value, words", [("", "is empty"), ("   ", "is empty"),
                                          ("ab\x1b[31mred", "control characters"), ("a\nb", "control characters")])
def test_empty_and_control_character_targets(catalog, value, words):
    out = one_line(run("query", "--target", value, "--db", catalog), 2)
    assert words in out
    if "control" in words:
        assert repr(value) in out  # escaped, never echoed raw
    out = one_line(run("check", "owner/target", value, "--db", catalog), 2)
    assert words in out and out.startswith("error: draft ")


@pytest.mark.parametrize("value", ["99999999999999999999", "0", "-3"])
def test_limit_out_of_range_blames_the_limit_not_the_catalog(catalog, value):
    for argv in (["query", "--target", "owner/x", "--limit", value], ["crawl", "--all", "--limit", value]):
        out = one_line(run(*argv, "--db", catalog), 2)
        assert "--limit must be between 1 and" in out and "catalog" not in out


@pytest.mark.parametrize("value", ["../etc", "justaname", "a/b/c", "ab\x07/c", "a--b/c"])
def test_crawl_model_takes_repo_ids_only(catalog, value):
    out = one_line(run("crawl", "--model", value, "--db", catalog), 2)
    assert "--model" in out and "repo id" in out


def test_nightly_checks_its_output_paths_before_any_work(catalog, tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("x")
    for option, value, words in (("--report", tmp_path, "is a directory"),
                                 ("--report", tmp_path / "no" / "r.json", "does not exist"),
                                 ("--lock-file", tmp_path, "is a directory"),
                                 ("--publish-dir", taken, "exists and is not a directory")):
        out = one_line(run("nightly", option, str(value), "--db", catalog, "--endpoint", "http://127.0.0.1:9"), 2)
        assert option in out and words in out
    assert taken.read_text() == "x"


def test_publish_onto_a_file_is_one_line(catalog, tmp_path):
    target = tmp_path / "taken"
    target.write_text("x")
    out = one_line(run("publish", str(target), "--db", catalog), 2)
    assert "exists and is not a directory" in out and target.read_text() == "x"


def test_serve_refuses_a_file_that_is_not_a_catalog_as_query_does(tmp_path):
    text = tmp_path / "notes.db"
    text.write_text("hello")
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (a)").connection.close()
    for path in (text, other):
        served = one_line(run("serve", "--db", str(path), "--port", "0"), 2)
        asked = one_line(run("query", "--target", "owner/x", "--db", str(path)), 2)
        assert served == asked


def test_repo_id_form_follows_the_hub():
    for ok in ("owner/name", "Qwen/Qwen2.5-0.5B-Instruct", "gpt2", "a.b_c-d/e"):
        assert validate.is_repo_id(ok), ok
    for bad in ("/etc", "./x", "~/m", "a/../b", "a/b/c", "a--b/c", "x/y.git", "-a/b", "a/" + "b" * 97, "a b/c"):
        assert not validate.is_repo_id(bad), bad


def test_every_error_carries_its_exit_code_and_http_status():
    """One hierarchy: the CLI and the site read these attributes, never the message."""
    classes = [errors.BadInput, errors.InputError, errors.CatalogError, errors.QueryError, errors.RepoNotFound,
               errors.PublishError, errors.PortBusy, errors.LockBusy, errors.CrawlFailed, errors.CrawlInterrupted,
               errors.SiteError, errors.TransientError, errors.UnsafeName, errors.BudgetExhausted,
               errors.NeedsReference, errors.AmbiguousTextConfig, errors.ConverterError, errors.NotModelled]
    for cls in classes:
        assert issubclass(cls, errors.IndexerError)
    assert (errors.RepoNotFound("x").exit_code, errors.RepoNotFound("x").http_status) == (3, 404)
    assert (errors.QueryError("x").exit_code, errors.QueryError("x").http_status) == (2, 400)
    assert errors.CatalogError("x").http_status == 503 and errors.LockBusy("p", "pid 1").exit_code == 75
    # The classes stay importable where they were defined before (small merges).
    from indexer.answer.lookup import RepoNotFound
    from indexer.answer.query import QueryError
    from indexer.catalog.db import CatalogError
    from indexer.crawl.loop import CrawlFailed
    from indexer.files import InputError

    assert (CrawlFailed, CatalogError, InputError, RepoNotFound, QueryError) == (
        errors.CrawlFailed, errors.CatalogError, errors.InputError, errors.RepoNotFound, errors.QueryError)


@pytest.mark.parametrize("command", [["crawl", "--model", "a/b"], ["nightly"], ["pull"]])
@pytest.mark.parametrize("value", ["notaurl", "ftp://hub.example", "http://", "huggingface.co"])
def test_an_endpoint_that_is_not_an_http_url_is_one_line_before_any_request(catalog, tmp_path, command, value):
    """The Hub client would retry such an endpoint six times as a network error; it is refused up front, from
    --endpoint or $HF_ENDPOINT alike."""
    db = str(tmp_path / "c.db")
    for args, env in (([*command, "--endpoint", value], {}), (command, {"HF_ENDPOINT": value})):
        res = CliRunner().invoke(cli, [*args, "--db", db], env=env)
        assert res.exit_code == 2, res.output
        assert res.output.strip() == f"error: --endpoint {value!r} is not a Hub URL; give one such as " \
                                     "https://huggingface.co"
    assert validate.endpoint("https://huggingface.co/") == "https://huggingface.co/"
    assert validate.endpoint("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
