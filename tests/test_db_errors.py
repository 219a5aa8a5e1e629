"""Every command answers a bad, unreachable, read-only or locked --db with one line and exit 2.

Real catalogs only: a catalog built by ``indexer demo`` (a local hub imitation, no internet),
a file we truly cannot write (chmod, and as root also without CAP_DAC_OVERRIDE via setpriv),
a SQLite write lock held by another connection, and a TCP port nobody listens on.
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from indexer.cli import cli
from indexer.jobs.demo import DEMO_DRAFT_MISMATCH, DEMO_TARGET

# (command line before --db); every one takes --db.
COMMANDS = {
    "db upgrade": ["db", "upgrade"],
    "check": ["check", DEMO_TARGET, DEMO_DRAFT_MISMATCH],
    "query": ["query", "--target", DEMO_TARGET],
    "compute": ["compute", "--quiet"],
    "crawl": ["crawl", "--model", "lumen-ai/Lumen-7B-Instruct", "--quiet", "--endpoint", "http://127.0.0.1:9"],
    "serve": ["serve", "--port", "0"],
    "publish": ["publish", "{tmp}/bundle"],
    "nightly": ["nightly", "--families", "Lumen", "--publish-dir", "", "--endpoint", "http://127.0.0.1:9"],
    "demo": ["demo", "--no-serve"],
}
WRITERS = ("db upgrade", "compute", "crawl", "nightly", "demo")
READERS = ("check", "query", "publish")  # serve would start datasette: its read path is the same as publish's


def args_for(name: str, db: str, tmp: Path) -> list[str]:
    return [a.replace("{tmp}", str(tmp)) for a in COMMANDS[name]] + ["--db", db]


def assert_one_line(result, code: int = 2, *, expect: str) -> str:
    """Exit ``code``, exactly one ``error:`` line on stderr containing ``expect``, no traceback."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == code, (result.exit_code, result.output)
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert expect in lines[0], lines[0]
    assert "Traceback" not in result.output
    return lines[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def demo_catalog(tmp_path_factory) -> Path:
    """The demo catalog (crawled from the local hub imitation and computed)."""
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    result = CliRunner().invoke(cli, ["demo", "--no-serve", "--db", str(path)])
    assert result.exit_code == 0, result.output
    return path


def copy_catalog(src: Path, dest_dir: Path) -> Path:
    dest_dir.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(src) as a, sqlite3.connect(dest_dir / src.name) as b:
        a.backup(b)  # the WAL's content too
    a.close()
    b.close()
    for extra in ("tokens", "blobs"):
        if (src.parent / extra).is_dir():
            shutil.copytree(src.parent / extra, dest_dir / extra)
    return dest_dir / src.name


@pytest.mark.parametrize("db", ["notascheme://x", "http://example.com/catalog.db"])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_unknown_scheme(name, db, tmp_path):
    result = CliRunner().invoke(cli, args_for(name, db, tmp_path))
    assert_one_line(result, expect="unknown database scheme")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_missing_postgres_driver_names_the_extra(name, tmp_path, monkeypatch):
    for mod in ("psycopg", "psycopg2"):
        monkeypatch.setitem(sys.modules, mod, None)  # what an interpreter without the driver sees on import
    line = assert_one_line(CliRunner().invoke(cli, args_for(name, "postgresql://indexer:s3cret@db.invalid/c",
                                                            tmp_path)),
                           expect="pip install 'psycopg[binary]'")
    assert "s3cret" not in line


@pytest.mark.parametrize("name", list(COMMANDS))
def test_refused_connection(name, tmp_path):
    pytest.importorskip("psycopg", reason="the postgres extra is not installed (see test_missing_postgres_driver)")
    db = f"postgresql://indexer:s3cret@127.0.0.1:{free_port()}/catalog"
    result = CliRunner().invoke(cli, args_for(name, db, tmp_path))
    line = assert_one_line(result, expect="unreachable")
    assert "s3cret" not in line and "start the database server" in line


@pytest.mark.parametrize("name", ["check", "query", "compute"])
def test_not_migrated(name, tmp_path):
    db = tmp_path / "empty.db"
    sqlite3.connect(db).close()
    db.touch()
    line = assert_one_line(CliRunner().invoke(cli, args_for(name, str(db), tmp_path)), expect="not migrated")
    assert f"indexer db upgrade --db {db}" in line


@pytest.mark.parametrize("name", list(COMMANDS))
def test_not_a_database(name, tmp_path):
    db = tmp_path / "notes.db"
    db.write_bytes(b"these are my notes, not a catalog\n" * 200)
    result = CliRunner().invoke(cli, args_for(name, str(db), tmp_path))
    line = assert_one_line(result, expect="is not a SQLite database")
    assert "`indexer pull` fetches the published catalog, `indexer demo` rebuilds" in line  # the next step
    assert db.read_bytes().startswith(b"these are my notes")  # nothing overwrote it


def test_missing_catalog_query_and_check(tmp_path):
    db = str(tmp_path / "nowhere.db")
    assert_one_line(CliRunner().invoke(cli, args_for("query", db, tmp_path)), expect="does not exist")
    assert_one_line(CliRunner().invoke(cli, args_for("check", db, tmp_path)), expect="does not exist")
    assert not (tmp_path / "nowhere.db").exists()


# ---------------------------------------------------------------- locked


@pytest.fixture
def locked_catalog(demo_catalog, tmp_path, monkeypatch):
    """A copy of the demo catalog while another connection holds its write lock."""
    db = copy_catalog(demo_catalog, tmp_path / "locked")
    monkeypatch.setenv("INDEXER_BUSY_TIMEOUT", "0.2")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("DELETE FROM meta WHERE 0")
    yield db
    holder.execute("ROLLBACK")
    holder.close()


@pytest.mark.parametrize("name", WRITERS)
def test_locked_catalog_writers_say_locked(name, locked_catalog, tmp_path):
    result = CliRunner().invoke(cli, args_for(name, str(locked_catalog), tmp_path))
    assert_one_line(result, expect="is locked by another writer")


@pytest.mark.parametrize("name", READERS)
def test_locked_catalog_readers_still_answer(name, locked_catalog, tmp_path):
    result = CliRunner().invoke(cli, args_for(name, str(locked_catalog), tmp_path))
    assert result.exit_code in ((0, 1) if name == "check" else (0,)), result.output
    assert "error" not in result.stderr
    if name == "query":
        assert "launch with the best draft" in result.stdout


# ---------------------------------------------------------------- read-only


def _can_drop_dac() -> bool:
    return os.geteuid() != 0 or shutil.which("setpriv") is not None


@pytest.fixture
def read_only_catalog(demo_catalog, tmp_path):
    """A copy of the demo catalog whose file and directory are not writable (mode 0444 / 0555)."""
    if not _can_drop_dac():
        pytest.skip("running as root without setpriv: no way to make a file read-only for this process")
    db = copy_catalog(demo_catalog, tmp_path / "ro")
    db.chmod(0o444)
    db.parent.chmod(0o555)
    yield db
    db.parent.chmod(0o755)
    db.chmod(0o644)


def run_cli_without_write_access(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess; as root without CAP_DAC_OVERRIDE, so file modes bind it too."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "INDEXER_"))}
    env.update(HOME=str(home), HF_HOME=str(home / "hf"), HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_XET="1")
    cmd = [sys.executable, "-c", "import sys; from indexer.cli import cli; sys.exit(cli(prog_name='indexer'))", *args]
    if os.geteuid() == 0:
        cmd = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)


def test_read_only_is_really_read_only(read_only_catalog, tmp_path):
    probe = "import sys; open(sys.argv[1], 'ab')"
    cmd = [sys.executable, "-c", probe, str(read_only_catalog)]
    if os.geteuid() == 0:
        cmd = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--", *cmd]
    assert subprocess.run(cmd, capture_output=True, timeout=60).returncode != 0


@pytest.mark.parametrize("name", WRITERS)
def test_read_only_catalog_writers_refuse_in_one_line(name, read_only_catalog, tmp_path):
    before = read_only_catalog.read_bytes()
    proc = run_cli_without_write_access(args_for(name, str(read_only_catalog), tmp_path), tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and "is read-only" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert read_only_catalog.read_bytes() == before


@pytest.mark.parametrize("name", READERS)
def test_read_only_catalog_readers_answer(name, read_only_catalog, tmp_path):
    proc = run_cli_without_write_access(args_for(name, str(read_only_catalog), tmp_path), tmp_path)
    assert proc.returncode in ((0, 1) if name == "check" else (0,)), proc.stderr
    assert "error" not in proc.stderr and "db upgrade" not in proc.stdout + proc.stderr
    if name == "query":
        assert "launch with the best draft" in proc.stdout
    if name == "check":
        assert "SGLang" in proc.stdout or "sglang" in proc.stdout
    if name == "publish":
        assert (tmp_path / "bundle" / "catalog.db").stat().st_size > 0
    assert stat.S_IMODE(read_only_catalog.stat().st_mode) == 0o444


# ---------------------------------------------------------------- check DIR DIR


def test_check_names_the_side_that_failed(tmp_path):
    from tokfactory import make_model

    good = make_model(tmp_path / "good")
    missing = tmp_path / "missing"
    line = assert_one_line(CliRunner().invoke(cli, ["check", str(missing), str(good)]), expect="target")
    assert line.startswith(f"error: target {missing}")
    line = assert_one_line(CliRunner().invoke(cli, ["check", str(good), str(missing)]), expect="draft")
    assert line.startswith(f"error: draft {missing}")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "tokenizer.json").write_text("{not json")
    line = assert_one_line(CliRunner().invoke(cli, ["check", str(good), str(tmp_path / "broken")]), expect="draft")
    assert str(tmp_path / "broken") in line


def test_check_dir_dir_needs_no_catalog_server(tmp_path):
    """A bad server in INDEXER_DB does not stop a check of two directories."""
    from tokfactory import make_model

    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    a, b = make_model(tmp_path / "a"), make_model(tmp_path / "b")
    result = CliRunner().invoke(cli, ["check", str(a), str(b), "--db", f"postgresql://u@127.0.0.1:{free_port()}/c"])
    assert result.exit_code == 0, result.output
    assert "WORKS          sglang" in result.stdout
