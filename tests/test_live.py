"""Live answers: `check` and `query` for Hub repos the catalog lacks, `query --live`, `--offline`,
gated and private repos, through the real client against the Hub imitation (its counters are the requests)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from indexer.catalog.compute import compute
from indexer.cli import cli
from indexer.crawl.loop import Crawler, CrawlOptions
from indexer.engines import ENGINES
from indexer.files import WANTED_FILES
from indexer.hubsim import HubServer
from indexer.hubsim.repos import HUB_META_FILE
from indexer.jobs.demo import DEMO_GATED, DEMO_GATED_COPY, DEMO_TARGET, build_demo_hub

DRAFT = "lumen-ai/Lumen-0.5B-Instruct"
MISMATCH = "corvid-labs/Corvid-1B"
PRIVATE_TARGET = "secret-lab/Secret-7B-Instruct"
PRIVATE_DRAFT = "secret-lab/Secret-0.5B-Instruct"
TOKEN = "hf_live_test_token"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """The demo hub plus two private copies (their config.json made unique, so their blobs are their own)."""
    root = tmp_path_factory.mktemp("live-hub")
    build_demo_hub(root)
    meta = json.loads((root / HUB_META_FILE).read_text())
    for src, dst in ((DEMO_TARGET, PRIVATE_TARGET), (DRAFT, PRIVATE_DRAFT)):
        shutil.copytree(root / src, root / dst)
        cfg = json.loads((root / dst / "config.json").read_text())
        cfg["_name_or_path"] = dst
        (root / dst / "config.json").write_text(json.dumps(cfg))
        meta[dst] = {**meta[src], "private": True}
    (root / HUB_META_FILE).write_text(json.dumps(meta))
    with HubServer(str(root)) as server:
        server.root = root
        yield server


@pytest.fixture()
def env(hub, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("INDEXER_FAMILIES", str(hub.root / "families.toml"))
    hub.reset_counts()
    return tmp_path


def run(*args, ok=(0, 1)):
    res = CliRunner().invoke(cli, [str(a) for a in args])
    assert res.exit_code in ok, (res.exit_code, res.output, res.stderr if hasattr(res, "stderr") else "")
    assert "Traceback" not in res.output
    return res


def requests(hub) -> int:
    return sum(v for k, v in hub.counts.items() if k in ("api", "resolve_get", "resolve_head"))


def wanted_blobs(hub, *repo_ids) -> set[str]:
    """The blob ids of the wanted files of these repos, as the imitation's paths-info reports them."""
    return {f.oid for rid in repo_ids for name, f in hub.repos[rid].files.items() if name in WANTED_FILES}


def repo_ids(db) -> set[str]:
    con = sqlite3.connect(db)
    try:
        return {r for (r,) in con.execute("SELECT repo_id FROM repos")}
    finally:
        con.close()


def blobs_held(db) -> set[str]:
    return {p.name for p in (Path(db).parent / "blobs").rglob("*") if p.is_file()}


def test_check_two_unseen_repos_on_no_catalog(hub, env):
    db = env / "catalog.db"
    res = run("check", "--db", db, DEMO_TARGET, DRAFT)
    assert res.exit_code == 0 and "WORKS" in res.output
    assert hub.counts["model_info"] == 2 and hub.counts["paths_info"] == 2 and hub.counts["api"] == 4
    assert hub.counts["resolve_head"] == 0
    assert hub.counts["resolve_get"] == len(wanted_blobs(hub, DEMO_TARGET, DRAFT))  # one GET per blob, shared once
    assert {DEMO_TARGET, DRAFT} <= repo_ids(db)
    hub.reset_counts()
    again = run("check", "--db", db, DEMO_TARGET, DRAFT)
    assert requests(hub) == 0
    assert again.output.splitlines()[:9] == res.output.splitlines()[:9]


def test_check_json_says_what_was_fetched(hub, env):
    res = run("check", "--db", env / "c.db", "--json", DEMO_TARGET, MISMATCH)
    out = json.loads(res.output)
    assert res.exit_code == 1 and out["verdicts"]["sglang"]["compatible"] is False
    assert out["live"]["fetched"] == sorted([DEMO_TARGET, MISMATCH]) and out["live"]["api_calls"] == 4


def test_query_target_outside_catalog_uses_the_catalogs_drafts(hub, env):
    db = str(env / "catalog.db")
    Crawler(db, CrawlOptions(models=(DRAFT, MISMATCH), endpoint=hub.endpoint, quiet=True, token=False)).run()
    compute(db)
    hub.reset_counts()
    res = run("query", "--db", db, "--target", DEMO_TARGET, "--json")
    out = json.loads(res.output)
    assert hub.counts["api"] == 2 and hub.counts["model_info"] == 1
    assert [d["repo_id"] for d in out["drafts"]] == [DRAFT]
    hub.reset_counts()
    assert json.loads(run("query", "--db", db, "--target", DEMO_TARGET, "--json").output)["drafts"] == out["drafts"]
    assert requests(hub) == 0


def _answers(db: str, target: str) -> dict:
    from indexer.answer.query import run_query

    return {e: run_query(target, engine=e, db=db, near_misses=True, limit=20) for e in ENGINES}


def test_live_answers_equal_a_crawled_catalogs(hub, env):
    """query --live on an empty catalog, then the same repos crawled and computed in full: the same answers."""
    live_db = str(env / "live" / "catalog.db")
    (env / "live").mkdir()
    res = run("query", "--db", live_db, "--target", DEMO_TARGET, "--live", "--json")
    out = json.loads(res.output)
    assert requests(hub) <= 60 and out["live"]["requests"] == requests(hub)
    fetched = repo_ids(live_db)
    assert DRAFT in fetched and len(fetched) >= 4
    full_db = str(env / "full" / "catalog.db")
    (env / "full").mkdir()
    Crawler(full_db, CrawlOptions(models=tuple(sorted(fetched)), endpoint=hub.endpoint, quiet=True,
                                  token=False)).run()
    compute(full_db)
    assert repo_ids(full_db) == fetched
    assert _answers(live_db, DEMO_TARGET) == _answers(full_db, DEMO_TARGET)
    for rid in sorted(fetched):  # every fetched repo as a target too
        try:
            want = _answers(full_db, rid)
        except Exception as e:  # noqa: BLE001 - a repo with no class must fail the same way
            with pytest.raises(type(e)):
                _answers(live_db, rid)
            continue
        assert _answers(live_db, rid) == want, rid


def test_live_respects_the_budget_and_says_what_it_skipped(hub, env):
    res = run("query", "--db", env / "c.db", "--target", DEMO_TARGET, "--live", "--budget", "12", "--json")
    out = json.loads(res.output)
    assert requests(hub) <= 12
    assert out["live"]["skipped"].get("over the request budget", 0) + out["live"]["skipped"].get(
        "listings not asked (budget)", 0) > 0
    text = run("query", "--db", env / "d.db", "--target", DEMO_TARGET, "--live", "--budget", "12")
    assert "skipped:" in text.stderr and "of 12 requests spent" in text.stderr


def test_live_on_a_held_target_looks_only_for_new_drafts(hub, env):
    db = env / "c.db"
    run("query", "--db", db, "--target", DEMO_TARGET, "--live")
    hub.reset_counts()
    out = json.loads(run("query", "--db", db, "--target", DEMO_TARGET, "--live", "--json").output)
    assert hub.counts["model_info"] == 0 and hub.counts["paths_info"] == 0 and hub.counts["resolve_get"] == 0
    assert hub.counts["list"] == len(out["live"]["looked_in"])
    assert out["live"]["discovered"] == []


def test_offline_touches_nothing(hub, env, monkeypatch):
    db = env / "catalog.db"
    res = run("check", "--db", db, "--offline", DEMO_TARGET, DRAFT, ok=(2,))
    assert res.output.count("error:") == 1 and "indexer pull" in res.output
    assert not db.exists() and requests(hub) == 0
    res = run("query", "--db", db, "--target", DEMO_TARGET, "--offline", ok=(2,))
    assert "indexer pull" in res.output and not db.exists()
    run("check", "--db", db, DEMO_TARGET, DRAFT)
    hub.reset_counts()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    res = run("check", "--db", db, DEMO_TARGET, MISMATCH, ok=(3,))
    assert MISMATCH in res.output and "offline" in res.output
    res = run("query", "--db", db, "--target", MISMATCH, ok=(3,))
    assert "offline" in res.output
    assert "WORKS" in run("check", "--db", db, DEMO_TARGET, DRAFT).output  # the catalog still answers
    res = run("query", "--db", db, "--target", DEMO_TARGET, "--live")
    assert "offline" in res.stderr
    assert requests(hub) == 0 and MISMATCH not in repo_ids(db)


def test_gated_repo_is_answered_from_public_copies(hub, env):
    db = env / "catalog.db"
    run("check", "--db", db, DEMO_GATED_COPY, DRAFT)
    hub.reset_counts()
    res = run("check", "--db", db, DEMO_GATED, DRAFT)
    assert res.exit_code == 0
    assert hub.counts["api"] == 2 and hub.counts["resolve_get"] == 0  # no token, nothing downloaded
    con = sqlite3.connect(db)
    status, reason = con.execute("SELECT status, reason FROM repos WHERE repo_id = ?", (DEMO_GATED,)).fetchone()
    con.close()
    assert status == "ok" and DEMO_GATED_COPY in (reason or "")


def test_gated_repo_without_copies_says_so(hub, env):
    db = env / "c.db"
    res = run("check", "--db", db, DEMO_GATED, DRAFT, ok=(2,))  # a catalog repo without a class (status gated)
    assert res.output.count("error:") == 1 and "gated" in res.output and "not held from any public copy" in res.output
    assert hub.counts["resolve_get"] == len(wanted_blobs(hub, DRAFT))  # the gated repo's files: never asked
    assert DEMO_GATED in repo_ids(db)  # a row with a status, waiting for public copies, as in the crawl


def test_private_repo_is_answered_but_never_stored(hub, env, monkeypatch):
    db = env / "catalog.db"
    run("check", "--db", db, DEMO_TARGET, DRAFT)
    before = blobs_held(db)
    own = {hub.repos[PRIVATE_DRAFT].files["config.json"].oid}
    assert not own & before
    res = run("check", "--db", db, DEMO_TARGET, PRIVATE_DRAFT, ok=(3,))  # no token: the Hub hides it
    assert "error:" in res.output
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    temps = set(Path(tempfile.gettempdir()).glob("indexer-private-*"))
    hub.reset_counts()
    res = run("check", "--db", db, "--json", DEMO_TARGET, PRIVATE_DRAFT)
    out = json.loads(res.output)
    assert res.exit_code == 0 and out["draft"] == PRIVATE_DRAFT and out["live"]["private"] == [PRIVATE_DRAFT]
    assert hub.counts["api"] == 2
    res = run("query", "--db", db, "--target", PRIVATE_TARGET, "--json")
    out = json.loads(res.output)
    assert out["target"]["repo_id"] == PRIVATE_TARGET and out["drafts"][0]["repo_id"] == DRAFT
    assert PRIVATE_TARGET in out["drafts"][0]["launch"]
    fresh = env / "fresh" / "catalog.db"
    fresh.parent.mkdir()  # a --db folder that does not exist is refused
    res = run("query", "--db", fresh, "--target", PRIVATE_TARGET, "--live", "--json")
    out = json.loads(res.output)  # on no catalog: public drafts found by its author and family
    assert out["target"]["repo_id"] == PRIVATE_TARGET and DRAFT in [d["repo_id"] for d in out["drafts"]]
    assert "secret-lab" not in "".join(sorted(repo_ids(fresh)))
    assert not {hub.repos[PRIVATE_TARGET].files["config.json"].oid} & blobs_held(fresh)
    ids = repo_ids(db)
    assert PRIVATE_TARGET not in ids and PRIVATE_DRAFT not in ids
    assert blobs_held(db) == before  # its blobs went to a temporary store, gone with it
    assert set(Path(tempfile.gettempdir()).glob("indexer-private-*")) == temps
    con = sqlite3.connect(db)
    try:
        dumped = "\n".join(con.iterdump())
    finally:
        con.close()
    assert "secret-lab" not in dumped and TOKEN not in dumped
    con = sqlite3.connect(fresh)
    try:  # the discovery's run is recorded without the private target's id (crawl_runs.scope)
        assert "secret-lab" not in "\n".join(con.iterdump())
        assert con.execute("SELECT count(*) FROM crawl_runs").fetchone()[0] >= 1
    finally:
        con.close()


def test_typo_and_bare_names_do_not_fetch(hub, env):
    db = env / "catalog.db"
    run("check", "--db", db, DEMO_TARGET, DRAFT)
    hub.reset_counts()
    res = run("query", "--db", db, "--target", "Lumen-7B-Instrukt", ok=(3,))
    assert "did you mean" in res.output and requests(hub) == 0
    res = run("check", "--db", db, DEMO_TARGET, "lumen-ai/Lumen-7B-Instrukt", ok=(3,))
    assert res.output.count("error:") == 1 and "Lumen-7B-Instrukt" in res.output
    assert hub.counts["model_info"] == 1 and hub.counts["paths_info"] == 0


def test_query_answered_from_the_catalog_imports_no_hub_client(hub, env):
    db = env / "catalog.db"
    run("check", "--db", db, DEMO_TARGET, DRAFT)
    code = ("import sys; from click.testing import CliRunner; from indexer.cli import cli; "
            f"r = CliRunner().invoke(cli, ['query', '--db', {str(db)!r}, '--target', {DEMO_TARGET!r}]); "
            "assert r.exit_code == 0, r.output; "
            "print(sorted(m for m in sys.modules if m.startswith(('huggingface_hub', 'indexer.answer.live', "
            "'indexer.answer.candidates', 'indexer.crawl', 'indexer.hub.client', 'indexer.catalog.compute')))) ")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _all_answers(db: str, targets) -> dict:
    from indexer.answer.query import run_query
    from indexer.errors import IndexerError

    out = {}
    for t in targets:
        for e in ENGINES:
            try:
                out[t, e] = run_query(t, engine=e, db=db, near_misses=True, limit=50)
            except IndexerError as err:
                out[t, e] = (type(err).__name__, err.message)
    return out


@pytest.mark.parametrize("added", ["Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-0.5B-Instruct", "ft/derived", "variant/added",
                                   "meta-llama/Llama-3.2-1B", "gate/gated-chat"])
def test_scoped_compute_of_a_repo_added_late_equals_a_full_compute(tmp_path, added):
    """A repo written after the last compute, given its classes by compute_scoped, answers every target of the
    catalog exactly as a full compute does: lineage (a base added after its fine-tunes), author, family, counts."""
    from test_query import REPOS, build_catalog

    from indexer.catalog.compute_scoped import compute_repos

    full = build_catalog(tmp_path / "full.db")
    compute(full)
    targets = [r[0] for r in REPOS]
    want = _all_answers(full, targets)
    late = build_catalog(tmp_path / "late.db")
    con = sqlite3.connect(late)
    con.row_factory = sqlite3.Row
    row = dict(con.execute("SELECT * FROM repos WHERE repo_id = ?", (added,)).fetchone())
    con.execute("DELETE FROM repos WHERE repo_id = ?", (added,))
    con.commit()
    compute(late)
    con.execute(f"INSERT INTO repos ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    con.commit()
    con.close()
    stats = compute_repos(late, [added])
    # every engine with classes (Ollama runs no draft model) but llama.cpp (no GGUF facts here)
    assert stats["memberships"] == sum(bool(e.class_key) for e in ENGINES.values()) - 1
    assert _all_answers(late, targets) == want


def test_a_transient_failure_is_not_the_answer_forever(hub, env):
    """A fetch that failed (a 500 after the retries) leaves an error row; the next ask fetches the repo again, as
    the crawl resolves error rows again."""
    from indexer.answer.live import Live, ensure, sides_to_fetch

    db = str(env / "catalog.db")
    hub.add_fault("POST", rf"/api/models/{DRAFT}/paths-info", status=500, times=None)
    live = Live(db, endpoint=hub.endpoint, base_delay=0.01)
    try:
        ensure(live, [DRAFT])
        assert live.fetch.statuses[DRAFT] == "error"
    finally:
        live.close()
        hub.clear_faults()
    assert sides_to_fetch(db, DRAFT) == [DRAFT]
    hub.reset_counts()
    res = run("check", "--db", db, DEMO_TARGET, DRAFT)
    assert res.exit_code == 0 and hub.counts["paths_info"] == 2


def test_the_console_script_hands_a_catalog_miss_to_the_live_path(hub, env):
    """The console script fetches a repo the catalog lacks, and the next ask costs no request."""
    import os

    db = str(env / "c.db")
    cmd = [sys.executable, "-c", "from indexer.cli import main; main()", "check", DEMO_TARGET, DRAFT,
           "--db", db, "--json"]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["live"] and requests(hub) > 0
    hub.reset_counts()
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert again.returncode == 0 and requests(hub) == 0, again.stderr
    assert json.loads(again.stdout)["verdicts"] == json.loads(first.stdout)["verdicts"]


def test_a_catalog_that_never_looked_does_not_say_no_drafts(hub, env):
    """Issue 30 part 1: on a new catalog the target alone is no answer. Without --live, the query looks for its
    drafts on the Hub (within the default budget), and once it has looked the next query costs nothing."""
    db = env / "catalog.db"
    assert not db.exists()
    res = run("query", "--db", env / "catalog.db", "--target", DEMO_TARGET, "--json", ok=(0,))
    out = json.loads(res.output)
    assert DRAFT in [d["repo_id"] for d in out["drafts"]]
    assert out["summary"]["engines_with_drafts"] and "catalog_looked" not in out["summary"]
    assert out["live"]["looked_in"] and requests(hub) <= 60
    hub.reset_counts()
    again = json.loads(run("query", "--db", env / "catalog.db", "--target", DEMO_TARGET, "--json").output)
    assert requests(hub) == 0 and again["drafts"] == out["drafts"]


def test_a_target_fetched_alone_by_check_makes_query_look(hub, env):
    db = env / "catalog.db"
    run("check", "--db", db, DEMO_TARGET, MISMATCH)  # the catalog: the target and a draft of another family
    hub.reset_counts()
    res = run("query", "--db", db, "--target", DEMO_TARGET, ok=(0,))
    assert "no engine has drafts" not in res.output and DRAFT in res.output
    assert "looked for drafts in" in res.stderr and hub.counts["list"] > 0


def test_offline_a_catalog_that_never_looked_says_so_in_one_line(hub, env, monkeypatch):
    db = env / "catalog.db"
    run("check", "--db", db, DEMO_TARGET, MISMATCH)
    hub.reset_counts()
    res = run("query", "--db", db, "--target", DEMO_TARGET, "--offline", "--near-misses", ok=(0,))
    assert "no engine has drafts" not in res.output and "no drafts found" not in res.output
    assert "near misses: none" not in res.output
    [line] = [s for s in res.output.splitlines() if "too little" in s]
    assert "--live" in line and "indexer pull" in line
    out = json.loads(run("query", "--db", db, "--target", DEMO_TARGET, "--offline", "--json").output)
    assert out["summary"]["catalog_looked"] is False and requests(hub) == 0
    # the console script says the same
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import os

    cmd = [sys.executable, "-c", "from indexer.cli import main; main()", "query", "--target", DEMO_TARGET,
           "--db", str(db)]
    script = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert script.returncode == 0 and "too little" in script.stdout and "no engine has drafts" not in script.stdout
    assert requests(hub) == 0


def test_when_the_hub_cannot_be_asked_the_catalog_still_does_not_claim_no_drafts(hub, env, monkeypatch):
    db = env / "catalog.db"
    run("check", "--db", db, DEMO_TARGET, MISMATCH)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: connection refused
    res = run("query", "--db", db, "--target", DEMO_TARGET, ok=(0,))
    assert "too little" in res.output and "no engine has drafts" not in res.output
    assert "Traceback" not in res.stderr
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)  # a failed look is not a look: the next query looks
    res = run("query", "--db", db, "--target", DEMO_TARGET, ok=(0,))
    assert DRAFT in res.output


@pytest.mark.parametrize("args", [("query", "--target", DEMO_TARGET), ("check", DEMO_TARGET, DRAFT),
                                  ("pull", "--from", "demo/catalog"), ("compute",), ("serve",),
                                  ("publish", "OUT")])
def test_a_catalog_in_a_missing_folder_is_one_error_line(hub, env, args):
    """Issue 30: `--db /nonexistent/dir/x.db` is refused before anything is fetched or created; only
    `db upgrade`, `crawl`, `nightly` and `demo` create catalogs (and their folders)."""
    missing = env / "nonexistent" / "dir"
    args = tuple(str(env / "out") if a == "OUT" else a for a in args)
    res = CliRunner().invoke(cli, [*args, "--db", str(missing / "x.db")])
    assert res.exit_code == 2 and "Traceback" not in res.output
    [line] = res.output.splitlines()
    assert line.startswith("error: ") and str(missing) in line and "does not exist" in line
    assert not (env / "nonexistent").exists() and requests(hub) == 0


def test_a_catalog_in_a_missing_folder_through_the_console_script(hub, env):
    import os

    missing = env / "nonexistent" / "x.db"
    for args in (["query", "--target", DEMO_TARGET], ["check", DEMO_TARGET, DRAFT]):
        cmd = [sys.executable, "-c", "from indexer.cli import main; main()", *args, "--db", str(missing)]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=os.environ.copy())
        assert res.returncode == 2 and res.stdout == "" and res.stderr.count("\n") == 1, res.stderr
    assert not missing.parent.exists() and requests(hub) == 0


def test_the_commands_that_create_catalogs_create_the_folder(hub, env):
    db = env / "made" / "here" / "catalog.db"
    res = CliRunner().invoke(cli, ["db", "upgrade", "--db", str(db)])
    assert res.exit_code == 0 and db.exists()
