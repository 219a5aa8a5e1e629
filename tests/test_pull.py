"""indexer pull: the published catalog becomes the local one, through the real huggingface_hub client against the
imitation: one request when unchanged, verified downloads, migration, refusals, and the old catalog kept through
corrupt and truncated downloads and a kill -9. A pulled catalog answers query and check exactly as the
crawler's catalog it was published from, for every engine and method, with local directories and .gguf files."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hubkit import ORG, WRITE, copy_catalog, dataset_hub, publish, remote_files, run, sha256, touch_catalog

from indexer.catalog.snapshot import known_revisions
from indexer.cli import cli
from indexer.engines import ENGINES, QUERY_METHODS
from indexer.jobs.demo import DEMO_DRAFT_MISMATCH, DEMO_GATED, DEMO_TARGET
from indexer.jobs.pull import DEFAULT_CATALOG_REPO

REPO = f"{ORG}/catalog"


@pytest.fixture
def db(demo_catalog, tmp_path) -> Path:
    return copy_catalog(demo_catalog, tmp_path / "cat")


@pytest.fixture
def hub(tmp_path):
    with dataset_hub(tmp_path / "hub") as server:
        yield server


def pull(dest: Path, hub, monkeypatch, *extra, token=None):
    dest.parent.mkdir(parents=True, exist_ok=True)  # pull refuses a --db folder that does not exist
    return run(["pull", "--from", REPO, "--db", str(dest), "--endpoint", hub.endpoint, "--json", *extra],
               monkeypatch, token)


def _answers(db: Path) -> bool:
    code = CliRunner().invoke(cli, ["query", "--db", str(db), "--target", DEMO_TARGET, "--json"]).exit_code
    return code == 0


def test_pull_downloads_verifies_and_then_costs_one_request(db, hub, monkeypatch, tmp_path):
    assert publish(db, hub, monkeypatch)[0] == 0
    dest = tmp_path / "fresh" / "catalog.db"
    code, out, err = pull(dest, hub, monkeypatch)
    assert code == 0, err
    done = json.loads(out)
    assert done["status"] == "pulled" and done["sha256"] == sha256(dest)
    assert sha256(dest) == sha256(Path(remote_files(hub)["catalog.sqlite"].abs_path))
    assert done["token_files"] == len(list((db.parent / "tokens").glob("*/*.z")))
    assert not list(dest.parent.glob(".pull-*"))  # staging removed
    hub.reset_counts()
    code, out, err = pull(dest, hub, monkeypatch)
    assert code == 0 and json.loads(out)["status"] == "unchanged", err
    assert len(hub.request_log) <= 2 and hub.counts["cdn_get"] == 0 and hub.counts["bytes_sent"] == 0
    assert json.loads(out)["requests"] == len(hub.request_log)  # pull says what it spent
    hub.reset_counts()
    code, out, err = run(["pull", "--from", REPO, "--db", str(dest), "--endpoint", hub.endpoint], monkeypatch, None)
    assert code == 0 and out.rstrip().endswith(f"; {len(hub.request_log)} HTTP request"
                                               + ("" if len(hub.request_log) == 1 else "s")), out
    # the state file lost: the local file is hashed instead and the snapshot not downloaded again (the token
    # store cannot be known to be the published one without the state, so it is fetched again)
    (dest.parent / "catalog.db.pulled.json").unlink()
    hub.reset_counts()
    before = dest.stat().st_ino
    code, out, _ = pull(dest, hub, monkeypatch)
    snap_sha = done["sha256"]
    assert code == 0 and json.loads(out)["downloaded_bytes"] == remote_files(hub)["tokens.tar"].size
    assert json.loads(out)["requests"] == len(hub.request_log)
    assert not any(p.startswith(f"/cdn/{snap_sha}") for _m, p, _s in hub.request_log)
    assert dest.stat().st_ino == before and sha256(dest) == snap_sha
    hub.reset_counts()
    assert json.loads(pull(dest, hub, monkeypatch)[1])["status"] == "unchanged" and len(hub.request_log) <= 2


def test_a_new_snapshot_replaces_the_old_one(db, hub, monkeypatch, tmp_path):
    assert publish(db, hub, monkeypatch)[0] == 0
    dest = tmp_path / "fresh" / "catalog.db"
    assert pull(dest, hub, monkeypatch)[0] == 0
    touch_catalog(db)
    assert publish(db, hub, monkeypatch)[0] == 0
    code, out, err = pull(dest, hub, monkeypatch)
    assert code == 0 and json.loads(out)["status"] == "pulled", err
    assert sha256(dest) == sha256(Path(remote_files(hub)["catalog.sqlite"].abs_path))
    assert json.loads(out)["token_files"] == 0  # the token store did not change: not downloaded again
    # --revision: an earlier commit's snapshot, by its id
    first = hub.datasets.repos[REPO].commits[1]
    code, out, err = pull(dest, hub, monkeypatch, "--revision", first.oid)
    assert code == 0 and json.loads(out)["commit"] == first.oid, err
    assert sha256(dest) == first.files["catalog.sqlite"].sha256


def _two_versions(db, hub, monkeypatch, tmp_path) -> tuple[Path, str]:
    """The local catalog at version 1, version 2 published; returns (local path, its sha256)."""
    assert publish(db, hub, monkeypatch)[0] == 0
    dest = tmp_path / "local" / "catalog.db"
    assert pull(dest, hub, monkeypatch)[0] == 0
    touch_catalog(db)
    assert publish(db, hub, monkeypatch)[0] == 0
    return dest, sha256(dest)


def test_a_corrupt_download_leaves_the_old_catalog_answering(db, hub, monkeypatch, tmp_path):
    dest, before = _two_versions(db, hub, monkeypatch, tmp_path)
    new_sha = json.loads((Path(remote_files(hub)["manifest.json"].abs_path)).read_text())["snapshot"]["sha256"]
    hub.add_fault("GET", rf"^/cdn/{new_sha}", kind="corrupt", times=None)
    code, out, err = pull(dest, hub, monkeypatch)
    assert code == 1 and "sha256" in err and err.count("error:") == 1, (out, err)
    assert sha256(dest) == before and _answers(dest)
    assert not list(dest.parent.glob(".pull-*"))
    hub.clear_faults()
    assert pull(dest, hub, monkeypatch)[0] == 0 and sha256(dest) != before


def test_a_truncated_download_leaves_the_old_catalog_answering(db, hub, monkeypatch, tmp_path):
    dest, before = _two_versions(db, hub, monkeypatch, tmp_path)
    new_sha = json.loads((Path(remote_files(hub)["manifest.json"].abs_path)).read_text())["snapshot"]["sha256"]
    hub.add_fault("GET", rf"^/cdn/{new_sha}", kind="truncate", times=None)
    code, out, err = pull(dest, hub, monkeypatch)
    assert code == 1 and err.count("error:") == 1 and "Traceback" not in err, (out, err)
    assert sha256(dest) == before and _answers(dest)


def test_kill_9_during_a_pull_leaves_the_old_catalog_and_the_next_pull_cleans_up(db, hub, monkeypatch, tmp_path):
    dest, before = _two_versions(db, hub, monkeypatch, tmp_path)
    new_sha = json.loads((Path(remote_files(hub)["manifest.json"].abs_path)).read_text())["snapshot"]["sha256"]
    hub.add_fault("GET", rf"^/cdn/{new_sha}", kind="stall", delay=None, times=1)
    env = {**os.environ, "HF_TOKEN": WRITE, "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", "from indexer.cli import cli; cli()", "pull", "--from", REPO,
                             "--db", str(dest), "--endpoint", hub.endpoint], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):  # until the snapshot's download has begun (the CDN GET is held open)
            if any(p.startswith(f"/cdn/{new_sha}") and s == 0 for _m, p, s in hub.request_log):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the pull never reached the download")
        assert list(dest.parent.glob(".pull-*"))  # it was staging
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert sha256(dest) == before and _answers(dest)
    code, out, err = pull(dest, hub, monkeypatch)
    assert code == 0 and json.loads(out)["status"] == "pulled", err
    assert not list(dest.parent.glob(".pull-*")) and sha256(dest) != before


def test_a_full_disk_during_the_download_leaves_the_old_catalog_answering(db, hub, monkeypatch, tmp_path):
    """The file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored) makes every write past 100 kB fail as a full disk does."""
    import resource

    dest, before = _two_versions(db, hub, monkeypatch, tmp_path)
    assert dest.stat().st_size > 100_000

    def small_disk():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))

    env = {**os.environ, "HF_TOKEN": WRITE, "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    proc = subprocess.run([sys.executable, "-c", "from indexer.cli import cli; cli()", "pull", "--from", REPO,
                           "--db", str(dest), "--endpoint", hub.endpoint], env=env, preexec_fn=small_disk,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stderr.count("error:") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "cannot write" in proc.stderr
    assert sha256(dest) == before and _answers(dest)
    assert not list(dest.parent.glob(".pull-*"))


def test_an_older_schema_is_migrated_and_a_newer_one_refused(hub, monkeypatch, tmp_path):
    from indexer.catalog.db import upgrade

    revisions = known_revisions()
    old = tmp_path / "old" / "catalog.db"
    upgrade(str(old), revision=revisions[-2])
    assert publish(old, hub, monkeypatch)[0] == 0
    dest = tmp_path / "local" / "catalog.db"
    code, out, err = pull(dest, hub, monkeypatch)
    assert code == 0, err
    done = json.loads(out)
    assert done["migrated_from"] == revisions[-2] and done["schema_revision"] == revisions[-1]
    con = sqlite3.connect(dest)
    assert con.execute("SELECT version_num FROM alembic_version").fetchone()[0] == revisions[-1]
    con.close()
    assert json.loads(pull(dest, hub, monkeypatch)[1])["status"] == "unchanged"  # a migrated copy counts as pulled

    future = tmp_path / "future" / "catalog.db"
    upgrade(str(future))
    con = sqlite3.connect(future)
    con.execute("UPDATE alembic_version SET version_num = 'ffff_from_the_future'")
    con.execute("INSERT INTO crawl_runs (started_at, finished_at, status, scope, listed, unchanged, new, changed, "
                "failed, api_calls, resolver_calls, bytes_downloaded) VALUES "
                "('2999-01-01 00:00:00', '2999-01-01 00:00:00', 'ok', 'x', 0, 0, 0, 0, 0, 0, 0, 0)")  # newer data
    con.commit()
    con.close()
    assert publish(future, hub, monkeypatch)[0] == 0
    before = sha256(dest)
    code, out, err = pull(dest, hub, monkeypatch)
    assert code == 2 and "upgrade indexer" in err and err.count("error:") == 1, err
    assert sha256(dest) == before


def test_source_default_env_override_and_bad_input(hub, monkeypatch, tmp_path, db):
    assert publish(db, hub, monkeypatch)[0] == 0
    dest = tmp_path / "x" / "catalog.db"
    dest.parent.mkdir()
    code, out, err = run(["pull", "--db", str(dest), "--endpoint", hub.endpoint, "--json"], monkeypatch, None,
                         INDEXER_CATALOG_REPO=REPO)
    assert code == 0 and json.loads(out)["repo"] == REPO, err
    monkeypatch.delenv("INDEXER_CATALOG_REPO")
    code, out, err = run(["pull", "--db", str(dest), "--endpoint", hub.endpoint], monkeypatch, None)
    assert code == 2 and DEFAULT_CATALOG_REPO in err and err.count("error:") == 1
    code, _, err = run(["pull", "--from", "not a repo", "--db", str(dest), "--endpoint", hub.endpoint], monkeypatch)
    assert code == 2 and err.count("error:") == 1
    code, _, err = run(["pull", "--from", REPO, "--db", "postgresql://u@h/db", "--endpoint", hub.endpoint],
                       monkeypatch)
    assert code == 2 and "SQLite" in err
    code, _, err = run(["pull", "--from", REPO, "--revision", "0" * 40, "--db", str(dest),
                        "--endpoint", hub.endpoint], monkeypatch)
    assert code == 2 and err.count("error:") == 1


def test_query_and_check_on_a_missing_catalog_point_to_pull(tmp_path):
    for args in (["query", "--target", DEMO_TARGET], ["check", DEMO_TARGET, DEMO_DRAFT_MISMATCH]):
        res = CliRunner().invoke(cli, [*args, "--db", str(tmp_path / "none.db")])
        assert res.exit_code == 2 and "indexer pull" in res.stderr and res.stderr.count("\n") == 1, res.stderr


# -- same answers --------------------------------------------------------------------------------------------


def _norm(text: str, db: Path) -> object:
    return json.loads(text.replace(str(db), "DB").replace(str(db.parent), "DIR"))


def _cli_json(args: list[str], db: Path):
    res = CliRunner().invoke(cli, [*args, "--db", str(db), "--json"])
    return res.exit_code, _norm(res.stdout, db) if res.stdout.strip() else res.stderr


def test_a_pulled_catalog_answers_exactly_as_the_crawlers(demo_catalog, hub, monkeypatch, tmp_path):
    """query (every engine, every --method) and check, for catalog repos, local directories and .gguf files."""
    src = copy_catalog(demo_catalog, tmp_path / "crawler")
    assert publish(src, hub, monkeypatch)[0] == 0
    dest = tmp_path / "pulled" / "catalog.db"
    assert pull(dest, hub, monkeypatch)[0] == 0
    hub_dir = demo_catalog.parent / "demo-hub"
    ggufs = sorted(hub_dir.rglob("*.gguf"))
    local = [hub_dir / DEMO_TARGET, hub_dir / DEMO_DRAFT_MISMATCH, ggufs[0]]
    targets = [DEMO_TARGET, DEMO_GATED, "lumen-ai/Lumen-7B-Instruct-GGUF", *map(str, local)]
    compared = 0
    for target in targets:
        for engine in ENGINES:
            for method in QUERY_METHODS:
                args = ["query", "--target", target, "--engine", engine, "--method", method]
                assert _cli_json(args, src) == _cli_json(args, dest), args
                compared += 1
    con = sqlite3.connect(src)
    ids = [r[0] for r in con.execute("SELECT repo_id FROM repos ORDER BY repo_id")]
    con.close()
    checks = [(DEMO_TARGET, d) for d in ids] + [(str(local[0]), DEMO_DRAFT_MISMATCH), (str(local[0]), str(ggufs[0])),
                                                 (DEMO_TARGET, str(local[1]))]
    differs_without_tokens = 0
    bare = copy_catalog(dest, tmp_path / "no-tokens", tokens=False)
    for t, d in checks:
        a, b = _cli_json(["check", t, d], src), _cli_json(["check", t, d], dest)
        assert a == b, (t, d)
        differs_without_tokens += _cli_json(["check", t, d], bare) != a
        compared += 1
    assert compared == len(targets) * len(ENGINES) * len(QUERY_METHODS) + len(checks)
    # the GGUF repos' model files come back whole (a --quant of a type a repo has runs its file), and are the
    # published Parquet's rows
    gguf_sql = ("SELECT r.repo_id, g.path, g.quant, g.parts, g.size FROM gguf_files g JOIN repos r ON r.id = "
                "g.repo_pk ORDER BY r.repo_id, g.path")
    held = {}
    for path in (src, dest):
        con = sqlite3.connect(path)
        held[path] = con.execute(gguf_sql).fetchall()
        con.close()
    assert held[src] == held[dest] and any(q == "Q8_0" for _, _, q, _, _ in held[dest])
    published = pq.read_table(remote_files(hub)["data/gguf_files.parquet"].abs_path).to_pylist()
    assert [tuple(r.values()) for r in published] == held[dest]
    args = ["query", "--target", DEMO_TARGET, "--engine", "llama.cpp", "--quant", "Q8_0"]
    code, pulled = _cli_json(args, dest)
    assert (code, pulled) == _cli_json(args, src) and code == 0
    assert "-hf lumen-ai/Lumen-7B-Instruct-GGUF:Q8_0 " in pulled["drafts"][0]["launch"]
    # the token store is what makes check equal: without it some verdicts change
    assert differs_without_tokens > 0


def test_the_site_of_a_pulled_catalog_answers_as_the_crawlers(demo_catalog, hub, monkeypatch, tmp_path):
    """``indexer serve`` on both: /drafts.json per engine and /explain.json give the same JSON."""
    import urllib.request
    from urllib.parse import quote

    from sample_catalog import ServedCatalog

    src = copy_catalog(demo_catalog, tmp_path / "crawler")
    assert publish(src, hub, monkeypatch)[0] == 0
    dest = tmp_path / "pulled" / "catalog.db"
    assert pull(dest, hub, monkeypatch)[0] == 0
    paths = [f"/drafts.json?target={quote(DEMO_TARGET)}&engine={e}" for e in ENGINES]
    paths += [f"/explain.json?target={quote(DEMO_TARGET)}&draft={quote(DEMO_DRAFT_MISMATCH)}",
              f"/drafts.json?target={quote(DEMO_TARGET)}&method=all"]

    def answers(db):
        with ServedCatalog(db) as site:
            out = []
            for p in paths:
                with urllib.request.urlopen(site.base + p, timeout=30) as r:
                    out.append(json.loads(r.read()))
            return out

    assert answers(src) == answers(dest)


def _upload(hub, tmp_path, files: dict[str, Path]) -> None:
    """Commit ``files`` (path in repo -> local file) over the head of the published catalog, with a manifest that
    names the snapshot committed (as a hostile or broken publisher could)."""
    import hashlib

    from indexer.hub.dataset import DatasetRepo

    repo = DatasetRepo(REPO, endpoint=hub.endpoint, token=WRITE)
    manifest = json.loads(Path(remote_files(hub)["manifest.json"].abs_path).read_text())
    if "catalog.sqlite" in files:
        data = files["catalog.sqlite"].read_bytes()
        manifest["snapshot"].update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    repo.commit({**files, "manifest.json": tmp_path / "manifest.json"}, repo.info().sha, "hostile")


def _hostile(db: Path, tmp_path: Path, sql: str) -> Path:
    out = tmp_path / "hostile.sqlite"
    out.unlink(missing_ok=True)
    con = sqlite3.connect(db)
    con.execute("VACUUM INTO ?", (str(out),))
    con.close()
    con = sqlite3.connect(out)
    con.executescript(sql)
    con.close()
    return out


HOSTILE = {
    "missing columns": ("CREATE TABLE r2 AS SELECT id, repo_id, sha, status FROM repos; DROP TABLE repos; "
                        "ALTER TABLE r2 RENAME TO repos;", "no column"),
    "a view with an endless recursive CTE": (
        "DROP TABLE tokenizers; CREATE VIEW tokenizers AS WITH RECURSIVE r(id) AS (SELECT 1 UNION ALL "
        "SELECT id + 1 FROM r) SELECT id, 'x' AS vocab_sha256 FROM r;", "an extra view 'tokenizers'"),
    "triggers on repos": ("CREATE TRIGGER no_crawl BEFORE INSERT ON repos BEGIN SELECT RAISE(ABORT, 'no'); END; "
                          "CREATE TRIGGER no_update BEFORE UPDATE ON repos BEGIN SELECT RAISE(ABORT, 'no'); END;",
                          "an extra trigger 'no_crawl'"),
    "an extra table": ("CREATE TABLE extra (x);", "an extra table 'extra'"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_snapshot_whose_schema_is_not_the_migrations_is_refused(db, hub, monkeypatch, tmp_path, case):
    """Each passes the sha256 and integrity checks; the schema check refuses it, in one line, and the old catalog
    still answers query (the same answer) with no staging left."""
    dest, before = _two_versions(db, hub, monkeypatch, tmp_path)
    answer = CliRunner().invoke(cli, ["query", "--db", str(dest), "--target", DEMO_TARGET, "--json"]).stdout
    sql, words = HOSTILE[case]
    _upload(hub, tmp_path, {"catalog.sqlite": _hostile(db, tmp_path, sql)})
    code, out, err = pull(dest, hub, monkeypatch)
    assert code == 1 and err.count("\n") == 1 and "schema is not the one revision" in err, err
    assert words in err and "the old catalog is kept" in err, err
    assert sha256(dest) == before and not list(dest.parent.glob(".pull-*"))
    again = CliRunner().invoke(cli, ["query", "--db", str(dest), "--target", DEMO_TARGET, "--json"])
    assert again.exit_code == 0 and again.stdout == answer


def test_a_token_store_file_whose_content_is_not_its_name_is_refused(db, hub, monkeypatch, tmp_path):
    """tokens.tar members are content-addressed: one with a valid name and another file's content is refused
    before anything is merged, and the old catalog and token store are kept."""
    import io
    import tarfile

    dest, before = _two_versions(db, hub, monkeypatch, tmp_path)
    store = dest.parent / "tokens"
    kept = {p: p.read_bytes() for p in store.rglob("*.z")}
    touch_catalog(db, minutes_later=2)
    assert publish(db, hub, monkeypatch)[0] == 0
    good = Path(remote_files(hub)["tokens.tar"].abs_path)
    bad = tmp_path / "tokens.tar"
    with tarfile.open(good) as src, tarfile.open(bad, "w") as out:
        members = [(m, src.extractfile(m).read()) for m in src.getmembers()]
        vocabs = [i for i, (m, _) in enumerate(members) if m.name.endswith(".json.z")]
        assert len(vocabs) >= 2
        a, b = vocabs[0], vocabs[1]
        members[a] = (members[a][0], members[b][1])  # a's name, b's content
        for m, data in members:
            m.size = len(data)
            out.addfile(m, io.BytesIO(data))
        wrong = members[a][0].name
    for p in store.rglob(f"*{Path(wrong).name}"):  # a pull only checks what it would write
        p.unlink()
        kept.pop(p)
    _upload(hub, tmp_path, {"tokens.tar": bad})
    code, out, err = pull(dest, hub, monkeypatch)
    assert code == 1 and err.count("\n") == 1 and f"{wrong} whose content does not match its name" in err, err
    assert sha256(dest) == before and _answers(dest)
    assert {p: p.read_bytes() for p in store.rglob("*.z")} == kept  # nothing merged
    assert not list(dest.parent.glob(".pull-*"))


def test_staging_left_by_a_killed_pull_goes_even_when_nothing_is_downloaded(db, hub, monkeypatch, tmp_path):
    assert publish(db, hub, monkeypatch)[0] == 0
    dest = tmp_path / "local" / "catalog.db"
    assert pull(dest, hub, monkeypatch)[0] == 0
    left = dest.parent / ".pull-catalog.db-0123abcd"
    (left / "meta").mkdir(parents=True)
    (left / "catalog.sqlite").write_bytes(b"x" * 1000)
    code, out, err = pull(dest, hub, monkeypatch)
    assert code == 0 and json.loads(out)["status"] == "unchanged", err
    assert not left.exists()


@pytest.mark.parametrize("kind", ["gzip_bomb", "endless"])
def test_a_dataset_info_answer_past_its_cap_is_one_line_and_the_old_catalog_kept(db, hub, monkeypatch, tmp_path,
                                                                                 kind):
    from indexer.hub.guard import MAX_ANSWER_BYTES

    dest, before = _two_versions(db, hub, monkeypatch, tmp_path)
    hub.add_fault("GET", rf"^/api/datasets/{REPO}", kind=kind, size=2 * MAX_ANSWER_BYTES, times=None)
    code, out, err = pull(dest, hub, monkeypatch)
    assert code == 1 and err.count("\n") == 1 and f"{MAX_ANSWER_BYTES}-byte cap" in err, err
    assert sha256(dest) == before and _answers(dest)


def test_a_manifest_past_its_cap_is_one_line_and_the_old_catalog_kept(db, hub, monkeypatch, tmp_path):
    """manifest.json is read into memory: one past MAX_JSON_BYTES (a valid JSON document padded with spaces) is
    refused in one line before it is parsed, and the old catalog is kept."""
    from indexer.hub.dataset import MAX_JSON_BYTES, DatasetRepo

    dest, before = _two_versions(db, hub, monkeypatch, tmp_path)
    big = tmp_path / "big" / "manifest.json"
    big.parent.mkdir()
    with big.open("w") as f:
        f.write("{}")
        f.truncate(MAX_JSON_BYTES + 1)  # NUL padding: never parsed, since it is refused by its size first
    repo = DatasetRepo(REPO, endpoint=hub.endpoint, token=WRITE)
    repo.commit({"manifest.json": big}, repo.info().sha, "hostile")
    code, out, err = pull(dest, hub, monkeypatch)
    assert code == 1 and err.count("\n") == 1 and f"{MAX_JSON_BYTES}-byte cap" in err, err
    assert sha256(dest) == before and _answers(dest)
