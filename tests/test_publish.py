"""indexer serve / publish: datasette metadata, the site plugin, atomic compacted bundle, PostgreSQL export."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from click.testing import CliRunner
from sample_catalog import NOT_SGLANG, SGLANG_DRAFTS, TARGET, ServedCatalog, build_sample_catalog

from indexer.answer.query import run_query
from indexer.cli import cli
from indexer.jobs.publish import METADATA_PATH, bundle_command, load_metadata


@pytest.fixture
def catalog(tmp_path) -> Path:
    path = tmp_path / "catalog.db"
    build_sample_catalog(path)
    return path


def test_metadata_has_tables_facets_and_canned_queries():
    """The questions are the plugin's pages; the canned queries left are the ones no CLI answers."""
    meta = yaml.safe_load(METADATA_PATH.read_text())
    assert meta["title"] and meta["source"] and meta.get("description_html")
    db = meta["databases"]["catalog"]
    repos = db["tables"]["repos"]
    assert set(repos["facets"]) >= {"status", "model_type", "author", "vocab_size"}
    assert repos["label_column"] == "repo_id" and repos["sort_desc"] == "downloads"
    assert "params" in repos["columns"]
    assert db["tables"]["blobs"]["units"]["size"] == "byte"
    queries = db["queries"]
    assert {"largest_tokenizer_families", "crawl_history"} == set(queries)  # no second copy of a rule in SQL
    assert meta["about_url"] == "/about"
    assert "datasette-pretty-json" in meta["plugins"]
    assert "demo" in load_metadata("demo")["databases"]
    # The home page names every engine of the registry (LM Studio was once left out), and only those.
    from indexer.engines import ENGINES

    home = load_metadata()["description_html"]
    assert "@" not in home and all(e.display in home for e in ENGINES.values())
    columns = load_metadata()["databases"]["catalog"]["tables"]["compat_classes"]["columns"]["engine"]
    assert all(name in columns for name in ENGINES)


def test_publish_bundle_is_compact_atomic_and_complete(catalog, tmp_path):
    out = tmp_path / "site"
    res = CliRunner().invoke(cli, ["publish", str(out), "--db", str(catalog), "--json"])
    assert res.exit_code == 0, res.output
    manifest = json.loads(res.output)
    assert sorted(p.name for p in out.iterdir()) == [
        "Dockerfile", "catalog.db", "indexer", "manifest.json", "metadata.yml", "plugins", "requirements.txt",
        "serve.sh"]
    assert (out / "plugins" / "indexer_site.py").is_file() and (out / "indexer" / "site" / "templates").is_dir()
    assert manifest["tables"]["repos"] == 6 and manifest["sha256"] and manifest["token_lists"] is False
    con = sqlite3.connect(out / "catalog.db")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert con.execute("SELECT count(*) FROM repos").fetchone()[0] == 6
    con.close()
    serve_sh = (out / "serve.sh").read_text()
    assert bundle_command() in serve_sh
    assert "-m datasette serve -i catalog.db --metadata metadata.yml" in serve_sh
    assert "--plugins-dir plugins" in serve_sh
    assert os.access(out / "serve.sh", os.X_OK)
    assert "COPY catalog.db metadata.yml serve.sh" in (out / "Dockerfile").read_text()
    assert "datasette==" in (out / "requirements.txt").read_text()
    assert "catalog" in yaml.safe_load((out / "metadata.yml").read_text())["databases"]


def test_republish_replaces_the_file_atomically(catalog, tmp_path):
    out = tmp_path / "site"
    assert CliRunner().invoke(cli, ["publish", str(out), "--db", str(catalog)]).exit_code == 0
    reader = sqlite3.connect(f"file:{out / 'catalog.db'}?immutable=1", uri=True)
    assert reader.execute("SELECT count(*) FROM repos").fetchone()[0] == 6
    inode = (out / "catalog.db").stat().st_ino
    con = sqlite3.connect(catalog)
    con.execute("DELETE FROM repos WHERE status != 'ok'")
    con.commit()
    con.close()
    res = CliRunner().invoke(cli, ["publish", str(out), "--db", str(catalog)])
    assert res.exit_code == 0, res.output
    assert "published" in res.output and "serve.sh" in res.output
    assert (out / "catalog.db").stat().st_ino != inode  # a new file renamed into place
    # A reader that opened the old snapshot keeps reading it, whole.
    assert reader.execute("SELECT count(*) FROM repos").fetchone()[0] == 6
    reader.close()
    assert sqlite3.connect(out / "catalog.db").execute("SELECT count(*) FROM repos").fetchone()[0] == 5
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp file left


def test_publish_refuses_bad_input(tmp_path):
    runner = CliRunner()
    res = runner.invoke(cli, ["publish", str(tmp_path / "o"), "--db", str(tmp_path / "missing.db")])
    assert res.exit_code == 2 and "does not exist" in res.output
    res = runner.invoke(cli, ["publish", str(tmp_path / "o"), "--db", "postgresql://u:secret@127.0.0.1:1/x"])
    assert res.exit_code == 2 and res.output.startswith("error: ") and res.output.count("\n") == 1
    assert "secret" not in res.output and ("psycopg" in res.output or "127.0.0.1" in res.output)
    res = runner.invoke(cli, ["serve", "--db", str(tmp_path / "missing.db")])
    assert res.exit_code == 2 and "does not exist" in res.output


def test_serve_answers_the_questions_and_redirects_old_links(catalog):
    with ServedCatalog(catalog) as site:
        got = site.json(f"/drafts.json?target={quote(TARGET)}&engine=sglang")
        assert sorted(d["repo_id"] for d in got["drafts"]) == sorted(SGLANG_DRAFTS)
        got = site.json(f"/drafts.json?target={quote(TARGET)}&engine=mlx&all=1")
        assert got == run_query(TARGET, engine="mlx", all_members=True, db=str(catalog))
        # An old canned-query link: urllib follows the 301 to the new JSON, which is `indexer check --json`.
        got = site.json(f"/catalog/explain_pair.json?target={quote(TARGET)}&draft={quote(NOT_SGLANG[0])}")
        res = CliRunner().invoke(cli, ["check", "--db", str(catalog), TARGET, NOT_SGLANG[0], "--json"])
        assert got == json.loads(res.stdout)
        sglang = got["verdicts"]["sglang"]
        assert sglang["compatible"] is False and "vocab_size" in sglang["reasons"][0]
        rows = site.json("/catalog/largest_tokenizer_families.json?_shape=array")
        assert rows[0]["Repos"] == 4
        assert site.json("/catalog/crawl_history.json?_shape=array")[0]["Status"] == "ok"
        facets = site.json("/catalog/repos.json?_facet=status")["facet_results"]
        assert "status" in facets
        plugins = {p["name"] for p in site.json("/-/plugins.json")}
        assert {"datasette-pretty-json", "indexer_site.py"} <= plugins
        # immutable: datasette refuses writes and the file is untouched
        assert site.json("/-/databases.json")[0]["is_mutable"] is False


def test_bundle_serve_sh_runs(catalog, tmp_path):
    from sample_catalog import free_port, wait_http

    out = tmp_path / "site"
    assert CliRunner().invoke(cli, ["publish", str(out), "--db", str(catalog), "--with-tokens"]).exit_code == 0
    assert (out / "tokens").is_dir()
    port = free_port()
    env = {**os.environ, "PORT": str(port), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.Popen(["sh", str(out / "serve.sh")], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        body = wait_http(f"http://127.0.0.1:{port}/catalog/repos.json?_shape=array&status=ok")
        assert TARGET in {r["repo_id"] for r in json.loads(body)}
        # The bundled plugin answers from the bundled library.
        body = wait_http(f"http://127.0.0.1:{port}/drafts.json?target={quote(TARGET)}")
        assert sorted(d["repo_id"] for d in json.loads(body)["drafts"]) == sorted(SGLANG_DRAFTS)
        before = (out / "catalog.db").read_bytes()
        body = wait_http(f"http://127.0.0.1:{port}/explain.json?target={quote(TARGET)}&draft={quote(NOT_SGLANG[1])}")
        # The snapshot stays byte-identical (no switch to WAL, no -wal/-shm beside it): datasette -i trusts it.
        assert (out / "catalog.db").read_bytes() == before
        assert not [p.name for p in out.iterdir() if p.name.startswith("catalog.db-")]
        res = CliRunner().invoke(cli, ["check", "--db", str(catalog), TARGET, NOT_SGLANG[1], "--json"])
        assert json.loads(body) == json.loads(res.stdout)  # --with-tokens: the same answer as the live catalog
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=10)


def test_serve_reports_a_busy_port_before_claiming_to_serve(catalog):
    import socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        res = CliRunner().invoke(cli, ["serve", "--db", str(catalog), "--port", str(port)])
    assert res.exit_code == 2
    assert res.output.startswith(f"error: cannot listen on 127.0.0.1:{port}") and res.output.count("\n") == 1
    assert "serving" not in res.output and "--port" in res.output


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_a_signal_stops_serve_datasette_and_its_temp_dir(catalog, tmp_path, signame):
    import signal

    from sample_catalog import CliProcess, free_port, port_closed

    port = free_port()
    run = CliProcess(["serve", "--db", str(catalog), "--port", str(port)], tmp_path / "tmp")
    try:
        line = run.wait_for("serving")
        assert f"http://127.0.0.1:{port}/" in line
        assert json.loads(wait_json(f"http://127.0.0.1:{port}/-/versions.json"))  # it said so once it answered
        assert len(run.session_processes()) == 2  # indexer serve and its datasette
        assert [p.name for p in (tmp_path / "tmp").iterdir()][0].startswith("indexer-serve-")
        os.kill(run.proc.pid, getattr(signal, signame))
        assert run.proc.wait(timeout=30) == 0
        assert port_closed(port)
        assert run.session_processes() == []  # datasette is not left behind, re-parented to PID 1
        assert list((tmp_path / "tmp").iterdir()) == []
    finally:
        run.close()


def wait_json(url: str) -> bytes:
    import urllib.request

    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read()


@pytest.fixture
def pg_catalog(pg_url, tmp_path, monkeypatch):
    """A fresh PostgreSQL database (conftest's pg_url), filled like the sample."""
    monkeypatch.setenv("INDEXER_TOKENS", str(tmp_path / "tokens"))  # a PostgreSQL catalog has no file beside it
    build_sample_catalog(pg_url)
    return pg_url


def test_publish_and_serve_a_postgresql_catalog(pg_catalog, tmp_path):
    import sqlalchemy as sa

    from indexer.catalog.models import Base

    out = tmp_path / "site"
    res = CliRunner().invoke(cli, ["publish", str(out), "--db", pg_catalog, "--json"])
    assert res.exit_code == 0, res.output
    manifest = json.loads(res.stdout)
    src = sa.create_engine(pg_catalog)
    with src.connect() as conn:
        expected = {t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar()
                    for t in Base.metadata.sorted_tables}
    src.dispose()
    assert expected["repos"] == 6 and expected["repo_classes"] > 0
    assert {t: manifest["tables"][t] for t in expected} == expected  # every row of every table exported
    assert manifest["source"].startswith("postgresql") and str(out) not in manifest["source"]
    con = sqlite3.connect(out / "catalog.db")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert con.execute("SELECT count(*) FROM alembic_version").fetchone()[0] == 1
    con.close()
    # The snapshot answers like the PostgreSQL catalog itself, through the site.
    for engine in ("sglang", "mlx", "lmstudio"):  # (llama.cpp needs GGUF facts from stored blobs: none here)
        assert run_query(TARGET, engine=engine, all_members=True, db=str(out / "catalog.db")) == \
            run_query(TARGET, engine=engine, all_members=True, db=pg_catalog)
    with ServedCatalog(pg_catalog) as site:  # serve exports a snapshot into its temp dir first
        got = site.json(f"/drafts.json?target={quote(TARGET)}&engine=mlx&all=1")
        assert got == run_query(TARGET, engine="mlx", all_members=True, db=pg_catalog)
        got = site.json(f"/explain.json?target={quote(TARGET)}&draft={quote(NOT_SGLANG[0])}")
        res = CliRunner().invoke(cli, ["check", "--db", pg_catalog, TARGET, NOT_SGLANG[0], "--json"])
        assert got == json.loads(res.stdout)  # token lists found via INDEXER_TOKENS, as the CLI finds them
        assert got["tli"] is not None
