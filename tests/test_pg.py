"""The catalog on a real PostgreSQL server (INDEXER_TEST_PG; .ci/run starts a throw-away cluster).

Each test gets its own fresh database (the ``pg_url`` fixture in conftest.py). Blobs and token
lists of a server catalog live under ./data (or $INDEXER_TOKENS): the tests run in their tmp dir.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from click.testing import CliRunner
from conftest import MODELS, needs_corpus, works_on_sglang
from crawlkit import crawl, hermetic_env, write_repo
from test_crawl_corpus import shorter_context

from indexer.answer.query import ENGINES
from indexer.catalog.compute import compute
from indexer.catalog.db import current_revision, make_engine, upgrade
from indexer.catalog.models import Base
from indexer.cli import cli
from indexer.hubsim import HubServer
from indexer.hubsim.repos import split_flat_name


@pytest.fixture(autouse=True)
def _driver(request):
    if "sqlite" not in request.node.name:
        pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("INDEXER_TOKENS", str(tmp_path / "tokens"))
    return tmp_path


def invoke(args: list[str]):
    result = CliRunner().invoke(cli, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def test_pg_migrate_matches_models_and_is_idempotent(pg_url):
    for _ in range(2):
        result = invoke(["db", "upgrade", "--db", pg_url])
        assert result.exit_code == 0, result.output
    engine = make_engine(pg_url)
    try:
        assert engine.dialect.name == "postgresql"
        assert current_revision(engine) is not None
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    finally:
        engine.dispose()


def test_pg_errors_are_one_line(pg_url):
    missing = sa.engine.make_url(pg_url).set(database="indexer_no_such_db").render_as_string(hide_password=False)
    for args in (["query", "--target", "a/b"], ["compute"], ["check", "a/b", "c/d"]):
        result = invoke([*args, "--db", missing])
        lines = result.stderr.strip().splitlines()
        assert result.exit_code == 2 and len(lines) == 1 and "does not exist" in lines[0], result.stderr
    for args in (["query", "--target", "a/b"], ["compute"]):  # the fresh database has no tables yet
        result = invoke([*args, "--db", pg_url])
        assert result.exit_code == 2 and "not migrated" in result.stderr and "db upgrade" in result.stderr


def sqlite_and_pg_answers(db: str) -> dict:
    """Every target's ``query --all --json`` on every engine, without the backend-specific fields."""
    out = {}
    engine = make_engine(db)
    with engine.connect() as conn:
        targets = [r[0] for r in conn.exec_driver_sql("SELECT repo_id FROM repos WHERE status = 'ok'")]
    engine.dispose()
    for target, eng in itertools.product(sorted(targets), ENGINES):
        result = invoke(["query", "--db", db, "--target", target, "--engine", eng, "--all", "--json"])
        assert result.exit_code == 0, (target, eng, result.output)
        data = json.loads(result.stdout)
        out[target, eng] = sorted((d["repo_id"], tuple(d["reasons"])) for d in data["drafts"])
    return out


@needs_corpus
def test_pg_corpus_crawl_compute_query_check_agree_with_oracle_and_sqlite(pg_url, in_tmp, oracle):
    ids = {name: "/".join(split_flat_name(name)) for name in oracle["models"]}
    sqlite_db = str(in_tmp / "sqlite" / "catalog.db")
    upgrade(pg_url)
    upgrade(sqlite_db)
    with HubServer(str(MODELS)) as hub:
        summary = crawl(pg_url, hub)
        crawl(sqlite_db, hub)
    assert summary["failed"] == 0 and summary["listed"] >= len(ids)
    stats = compute(pg_url)
    compute(sqlite_db)
    assert stats["repos"] == len(ids) and stats["pairs"]["computed"] > 0

    engine = make_engine(pg_url)
    with engine.connect() as conn:
        rows = {r[0]: r[1:] for r in conn.execute(sa.text(
            "SELECT r.repo_id, r.status, t.vocab_sha256, r.vocab_size_transformers FROM repos r "
            "LEFT JOIN tokenizers t ON t.id = r.tokenizer_id"))}
        assert conn.exec_driver_sql("SELECT count(*) - count(DISTINCT repo_id) FROM repos").scalar() == 0
    engine.dispose()
    for name, facts in oracle["models"].items():
        status, sha, vst = rows[ids[name]]
        assert (status, sha, vst) == ("ok", facts["vocab_sha256"], facts["vocab_size"]), name

    compatible: dict[str, set] = {name: set() for name in oracle["models"]}
    for t, d in works_on_sglang(oracle):
        if not shorter_context(t, d):  # the vocabulary oracle's pairs, less those SGLang's context check refuses
            compatible[t].add(ids[d])
    for name in oracle["models"]:
        result = invoke(["query", "--db", pg_url, "--target", ids[name], "--all", "--json"])
        assert result.exit_code == 0, result.output
        assert {d["repo_id"] for d in json.loads(result.stdout)["drafts"]} == compatible[name], name

    # Every engine answers the same on PostgreSQL as on SQLite, for every target.
    assert sqlite_and_pg_answers(pg_url) == sqlite_and_pg_answers(sqlite_db)

    t, d = next(p for p in oracle["pairs"]["compatible"] if not shorter_context(*p))
    result = invoke(["check", "--db", pg_url, ids[t], ids[d], "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["verdicts"]["sglang"]["compatible"]
    t, d = next(p for p in oracle["pairs"]["mapping_mismatch"] if tuple(p) not in works_on_sglang(oracle))
    result = invoke(["check", "--db", pg_url, ids[t], ids[d], "--verbose"])
    assert result.exit_code == 1 and "USELESS" in result.stdout and "slower than none" in result.stdout


@pytest.fixture(params=["postgresql", "sqlite"])
def any_catalog(request, tmp_path) -> str:
    """A fresh PostgreSQL database, or a SQLite file: the concurrency guarantee holds on both."""
    if request.param == "sqlite":
        return str(tmp_path / "shared" / "catalog.db")
    return request.getfixturevalue("pg_url")


def test_two_crawls_at_once(any_catalog, tmp_path):
    """Two crawler processes over the same hub into one database: no duplicate, no loss, no failure."""
    db = any_catalog
    hub_dir = tmp_path / "hub"
    for i in range(16):
        # Four tokenizers shared by many repos: both crawlers race to insert the same blobs,
        # file sets and tokenizers, and the same repos.
        write_repo(hub_dir, f"org{i % 3}/model-{i}", words=["<unk>", "<s>", "</s>"] + [f"w{i % 4}x{j}"
                                                                                        for j in range(30)])
    upgrade(db)
    env = hermetic_env(tmp_path)
    env["INDEXER_TOKENS"] = str(tmp_path / "tokens")
    with HubServer(str(hub_dir), page_size=5) as hub:
        procs = []
        for i in range(2):
            cwd = tmp_path / f"crawler{i}"
            cwd.mkdir()
            procs.append(subprocess.Popen(
                [sys.executable, "-c", "import sys; from indexer.cli import cli; sys.exit(cli(prog_name='indexer'))",
                 "crawl", "--all", "--endpoint", hub.endpoint, "--db", db, "--no-compute", "--quiet", "--json",
                 "--workers", "4"],
                cwd=cwd, env={**env, "HF_HOME": str(cwd / "hf")}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True))
        outs = [p.communicate(timeout=300) for p in procs]
    assert sum(json.loads(out)["new"] for out, _ in outs) == 16  # each repo fetched by one crawl only
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        summary = json.loads(out)
        assert summary["listed"] == 16 and summary["failed"] == 0, json.dumps(summary)
        assert summary["new"] + summary["changed"] + summary["unchanged"] + summary["elsewhere"] == 16, summary
    engine = make_engine(db)
    with engine.connect() as conn:
        q = conn.exec_driver_sql
        assert q("SELECT count(*), count(DISTINCT repo_id) FROM repos").one() == (16, 16)
        assert q("SELECT status, count(*) FROM repos GROUP BY status").all() == [("ok", 16)]
        assert q("SELECT count(*), count(DISTINCT vocab_sha256) FROM tokenizers").one() == (4, 4)
        assert q("SELECT count(*) FROM repos WHERE tokenizer_id IS NULL").scalar() == 0
        assert q("SELECT count(*) FROM file_sets").scalar() == 4
        runs = q("SELECT status FROM crawl_runs").scalars().all()
    engine.dispose()
    assert sorted(runs) == ["ok", "ok"]
    stats = compute(db)
    assert stats["repos"] == 16
    engine = make_engine(db)
    with engine.connect() as conn:  # compute owns Tokenizer.repo_count
        assert conn.exec_driver_sql("SELECT sum(repo_count) FROM tokenizers").scalar() == 16
    engine.dispose()


def test_pg_url_never_printed_with_password(pg_url):
    url = sa.engine.make_url(pg_url)
    if not url.password:
        url = url.set(password="s3cret")
    bad = url.set(database="indexer_no_such_db").render_as_string(hide_password=False)
    result = invoke(["query", "--target", "a/b", "--db", bad])
    assert result.exit_code == 2 and "s3cret" not in result.output and url.password not in result.stderr


def test_pg_read_only_role_reads_and_writers_fail_in_one_line(pg_url, in_tmp):
    """PostgreSQL's read-only catalog: a role with SELECT only. query/check answer; writers get one line."""
    import uuid

    from crawlkit import crawl as crawl_lib

    hub_dir = in_tmp / "hub"
    for i in range(3):
        write_repo(hub_dir, f"org/model-{i}")
    upgrade(pg_url)
    with HubServer(str(hub_dir)) as hub:
        crawl_lib(pg_url, hub)
    compute(pg_url)
    role = f"reader_{uuid.uuid4().hex[:8]}"
    url = sa.engine.make_url(pg_url)
    admin = sa.create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE ROLE {role} LOGIN")
        conn.exec_driver_sql(f'GRANT CONNECT ON DATABASE "{url.database}" TO {role}')
        conn.exec_driver_sql(f"GRANT USAGE ON SCHEMA public TO {role}")
        conn.exec_driver_sql(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    reader = url.set(username=role, password=None).render_as_string(hide_password=False)
    try:
        result = invoke(["query", "--db", reader, "--target", "org/model-0", "--all", "--json"])
        assert result.exit_code == 0, result.output
        assert {d["repo_id"] for d in json.loads(result.stdout)["drafts"]} == {"org/model-1", "org/model-2"}
        result = invoke(["check", "--db", reader, "org/model-0", "org/model-1"])
        assert result.exit_code == 0, result.output
        for args in (["compute", "--quiet"], ["crawl", "--model", "org/model-0", "--quiet", "--endpoint",
                                              "http://127.0.0.1:9"]):
            result = invoke([*args, "--db", reader])
            lines = result.stderr.strip().splitlines()
            assert result.exit_code == 2 and len(lines) == 1, result.output
            assert "the --db user may not do this" in lines[0] and "grant" in lines[0], lines[0]
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'REVOKE ALL ON DATABASE "{url.database}" FROM {role}')
            conn.exec_driver_sql(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}")
            conn.exec_driver_sql(f"REVOKE ALL ON SCHEMA public FROM {role}")
            conn.exec_driver_sql(f"DROP ROLE {role}")
        admin.dispose()


def test_pg_concurrent_upgrades_of_a_new_database_wait_for_each_other(pg_url, tmp_path):
    """Three `db upgrade` processes on one empty database: the advisory lock serialises them."""
    env = hermetic_env(tmp_path)
    procs = [subprocess.Popen([sys.executable, "-c", "from indexer.cli import cli; cli()", "db", "upgrade",
                               "--db", pg_url], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    engine = make_engine(pg_url)
    try:
        assert current_revision(engine) is not None
    finally:
        engine.dispose()


def test_pg_keeps_measurements_and_reads_them_back(pg_url):
    """`indexer measure` writes its row into a PostgreSQL catalog (migration 0011) and check's reader reads it."""
    from enginesim import EngineSim

    from indexer.catalog.measurements import rows, summary
    from indexer.catalog.reader import Reader

    assert invoke(["db", "upgrade", "--db", pg_url]).exit_code == 0
    with EngineSim("llama.cpp") as spec, EngineSim("llama.cpp", speculative=False) as base:
        result = invoke(["measure", "org/target", "org/draft", "--engine", "llama.cpp", "--url", spec.url,
                         "--baseline-url", base.url, "--hardware", "RTX 4090", "--task", "code", "--max-tokens", "64",
                         "--db", pg_url, "--json"])
    assert result.exit_code == 0, result.output
    with Reader(pg_url, needs="repos") as reader:
        found = rows(reader, "org/target", "org/draft", "llama.cpp")
    assert len(found) == 1 and found[0]["acceptance"] == 0.7 and found[0]["calibration"] is True
    assert summary(found)["speedup"] == 1.667 and summary(found)["hardware"] == "RTX 4090"
