"""A hostile or broken Hub cannot hold a crawl past its time box or fill its memory.

Through the CLI in a subprocess (or the client in process), against the Hub imitation's fault injection: a
listing answered ``429 Retry-After: 86400``, and API answers that inflate past their cap (a gzip bomb) or never
end. Nothing asserts wall-clock time: the sleeps and requests are counted instead.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from crawlkit import run_cli, set_meta, six_repo_hub, write_repo

from indexer.errors import AnswerRefused, BudgetExhausted
from indexer.hub.guard import MAX_ANSWER_BYTES
from indexer.hubsim import HubServer

BOMB = MAX_ANSWER_BYTES * 2  # inflated; about a thousandth of it is sent


@pytest.fixture
def hub_dir(tmp_path):
    return six_repo_hub(tmp_path)


def run(args, tmp_path, timeout=90, **kw):
    return run_cli(args, tmp_path, timeout, **kw)


def query(db, sql):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def listing_gets(hub) -> list[int]:
    return [status for method, path, status in hub.request_log if method == "GET" and path.startswith("/api/models?")]


def test_a_listing_429_past_the_deadline_stops_the_crawl_and_keeps_its_place(hub_dir, tmp_path):
    """Retry-After: 86400 on the second page: the crawl stops at once (it does not sleep a day), says why, and the
    next run reads on from that page."""
    db = tmp_path / "c.db"
    args = ["crawl", "--author", "meta-llama", "--db", str(db), "--quiet", "--no-compute", "--json"]
    with HubServer(str(hub_dir), page_size=2) as hub:
        args += ["--endpoint", hub.endpoint]
        hub.add_fault("GET", r"^/api/models$", query_regex="cursor=", status=429,
                      headers={"Retry-After": "86400"}, times=None)
        proc = run(args + ["--max-minutes", "5"], tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert listing_gets(hub) == [200, 429]  # one refusal, not the client's five retries after a day's sleep
        summary = json.loads(proc.stdout)
        assert summary["status"] == "partial" and "past the run's deadline" in summary["stopped"]
        ((status, errors),) = query(db, "select status, errors from crawl_runs")
        assert status == "partial" and "asked to wait 86400 s" in errors
        ((resumes,),) = query(db, "select resumes from scope_cursors")
        assert len(json.loads(resumes)) == 1 and "cursor=" in json.loads(resumes)[0]["url"]
        # The first page's repos: written, or (in flight at the deadline, abandoned) queued for the next run.
        assert len(query(db, "select repo_id from repos union select repo_id from crawl_queue")) == 2

        hub.clear_faults()
        hub.request_log.clear()
        again = run(args, tmp_path)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["status"] == "ok"
    assert len(query(db, "select repo_id from repos where status = 'ok'")) == 6
    assert query(db, "select resumes from scope_cursors") == [("[]",)]


def test_a_listing_429_waits_in_the_bucket_without_a_deadline(hub_dir, tmp_path):
    """No time box: the 429 is waited out (the api bucket holds until the reset) and the page read again."""
    from indexer.hub.client import HubClient

    with HubServer(str(hub_dir), page_size=4) as hub, HubClient(hub.endpoint, token=False) as client:
        hub.add_fault("GET", r"^/api/models$", status=429, headers={"Retry-After": "1"})
        assert len(list(client.list_models(author="meta-llama"))) == 6
        assert listing_gets(hub) == [429, 200, 200]
        assert client.counts()["rate_limited"]["api"] == 1
        hub.add_fault("GET", r"^/api/models$", status=429, headers={"Retry-After": "3600"})
        import time

        client.set_budget(deadline=time.monotonic() + 30)
        with pytest.raises(BudgetExhausted, match="asked to wait 3600 s"):
            list(client.list_models(author="meta-llama"))


@pytest.mark.parametrize("kind", ["gzip_bomb", "endless"])
def test_a_listing_answer_past_its_cap_is_refused_and_the_crawl_goes_on(hub_dir, tmp_path, kind):
    """One scope's listing page inflates past the cap (or never ends): that listing is recorded as failed with the
    reason, and the other scope is crawled."""
    write_repo(hub_dir, "Qwen/model-q", words=[f"q{j}" for j in range(40)])
    set_meta(hub_dir, "Qwen/model-q", pipeline_tag="image-text-to-text")
    for i in range(6):
        set_meta(hub_dir, f"meta-llama/model-{i}", pipeline_tag="text-generation")
    db = tmp_path / "c.db"
    with HubServer(str(hub_dir)) as hub:
        hub.add_fault("GET", r"^/api/models$", query_regex="pipeline_tag=text-generation", kind=kind, size=BOMB,
                      times=None)
        proc = run(["crawl", "--all", "--db", str(db), "--quiet", "--no-compute", "--json",
                    "--endpoint", hub.endpoint], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["status"] == "partial"
    ((errors,),) = query(db, "select errors from crawl_runs")
    assert "listing pipeline_tag=text-generation failed" in errors and f"{MAX_ANSWER_BYTES}-byte cap" in errors
    assert query(db, "select repo_id, status from repos") == [("Qwen/model-q", "ok")]


def test_a_paths_info_bomb_is_the_repos_error_and_the_others_are_crawled(hub_dir, tmp_path):
    db = tmp_path / "c.db"
    with HubServer(str(hub_dir)) as hub:
        hub.add_fault("POST", r"/api/models/meta-llama/model-3/paths-info/", kind="gzip_bomb", size=BOMB,
                      times=None)
        proc = run(["crawl", "--author", "meta-llama", "--db", str(db), "--quiet", "--no-compute",
                    "--endpoint", hub.endpoint], tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = dict(query(db, "select repo_id, status || ': ' || coalesce(reason, '') from repos"))
    assert got.pop("meta-llama/model-3").startswith("error: ") and len(got) == 5
    (reason,) = query(db, "select reason from repos where repo_id = 'meta-llama/model-3'")[0]
    assert "cap (decoded)" in reason
    assert all(v.startswith("ok: ") for v in got.values()), got  # (these word lists lack the <unk> they name)


@pytest.mark.parametrize("kind", ["gzip_bomb", "endless"])
def test_model_info_and_tree_answers_are_capped_in_process(hub_dir, kind):
    """The client's own calls (model_info, the tree listing) read through the same cap."""
    from indexer.hub.client import HubClient

    with HubServer(str(hub_dir)) as hub, HubClient(hub.endpoint, token=False) as client:
        hub.add_fault("GET", r"^/api/models/meta-llama/model-1$", kind=kind, size=BOMB)
        with pytest.raises(AnswerRefused, match="cap"):
            client.model_info("meta-llama/model-1")
        sha = client.model_info("meta-llama/model-1").sha
        hub.add_fault("GET", r"/api/models/meta-llama/model-1/tree/", kind=kind, size=BOMB)
        with pytest.raises(AnswerRefused, match="cap"):
            client.list_files("meta-llama/model-1", sha)
        assert client.list_files("meta-llama/model-1", sha)


def test_an_answer_in_an_encoding_not_asked_for_is_refused(hub_dir):
    from indexer.hub.client import HubClient

    with HubServer(str(hub_dir)) as hub, HubClient(hub.endpoint, token=False) as client:
        hub.add_fault("GET", r"^/api/models/meta-llama/model-1$", status=200, headers={"Content-Encoding": "br"})
        with pytest.raises(AnswerRefused, match="'br'"):
            client.model_info("meta-llama/model-1")
