"""Shared test set-up: a hermetic Hugging Face environment and the corpus location."""

import json
import os
import tempfile
import types
from pathlib import Path

import pytest

# A closed local port: `query` and `check` ask the Hub for repos the catalog lacks (indexer/answer/live.py), so a
# test that does not point them at an imitation meets a refused connection instead of reaching the internet.
NO_HUB = "http://127.0.0.1:9"

# Before anything imports huggingface_hub: no telemetry, no Xet, no token, never offline, no real Hub.
os.environ.update(
    HF_ENDPOINT=NO_HUB,
    HF_HOME=tempfile.mkdtemp(prefix="indexer-hf-home-"),
    HF_HUB_DISABLE_TELEMETRY="1",
    HF_HUB_DISABLE_XET="1",
    HF_HUB_DISABLE_PROGRESS_BARS="1",
    TRANSFORMERS_VERBOSITY="error",
    TOKENIZERS_PARALLELISM="false",
)
for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE",
             "HF_HUB_CACHE", "INDEXER_DB", "INDEXER_TOKENS"):
    os.environ.pop(_var, None)

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus"
MODELS = CORPUS / "models"

needs_corpus = pytest.mark.skipif(not (CORPUS / "oracle.json").is_file(), reason="../shared/corpus is absent")


@pytest.fixture(scope="session")
def oracle() -> dict:
    if not (CORPUS / "oracle.json").is_file():
        pytest.skip("../shared/corpus is absent")
    return json.loads((CORPUS / "oracle.json").read_text())


@pytest.fixture(scope="session")
def corpus_dirs(oracle) -> list[Path]:
    return sorted(MODELS / name for name in oracle["models"])


@pytest.fixture(scope="session")
def corpus_sides(corpus_dirs) -> dict:
    """Every corpus directory as the rules see it, made once a run (several modules judge all 552 ordered pairs;
    a side keeps its reference-text counts and agreements once taken)."""
    from indexer.answer.localdir import side_from_dir  # after the environment above is set

    return {d.name: side_from_dir(d) for d in corpus_dirs}


@pytest.fixture(autouse=True)
def hermetic_client(monkeypatch):
    """No telemetry, no Xet, no token, never offline, even if a test changed the environment."""
    from huggingface_hub import constants

    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


@pytest.fixture
def no_client_sleep(monkeypatch):
    """Record the clients' own retry sleeps instead of sleeping (servers' sleeps are untouched): huggingface_hub's
    and our session's back-off, which still refuses a wait that would outlast its call."""
    import huggingface_hub.file_download
    import huggingface_hub.utils._http

    from indexer.hub import guard, session

    sleeps: list[float] = []
    fake_time = types.SimpleNamespace(sleep=sleeps.append)
    monkeypatch.setattr(huggingface_hub.utils._http, "time", fake_time)
    monkeypatch.setattr(huggingface_hub.file_download, "time", fake_time)

    def back_off(seconds: float) -> None:
        call = guard.current_call()
        if call is not None and seconds >= call.seconds_left():
            raise guard.CallTimedOut(f"{call.what}: no complete answer within {call.guard.call_seconds:g} s")
        sleeps.append(seconds)

    monkeypatch.setattr(session, "sleep_within_call", back_off)
    return sleeps


@pytest.fixture
def catalog(tmp_path) -> str:
    """A real, freshly migrated SQLite catalog; returns its path."""
    from indexer.catalog.db import upgrade

    path = tmp_path / "catalog.db"
    upgrade(str(path))
    return str(path)


@pytest.fixture(scope="session")
def demo_catalog(tmp_path_factory) -> Path:
    """The demo catalog (indexer.jobs.demo.build_demo_catalog, its hub in demo-hub/ beside it), built once per run: read
    it as it is; a test that writes copies it first (tests/hubkit.copy_catalog)."""
    from indexer.jobs.demo import build_demo_catalog

    db = tmp_path_factory.mktemp("demo") / "demo.db"
    build_demo_catalog(str(db), log=lambda _m: None)
    return db


@pytest.fixture(scope="session")
def corpus_crawl(tmp_path_factory) -> dict:
    """The corpus crawled from the imitation once per run, with every real-Hub behaviour on as by default
    (anonymous quotas, Xet headers, expand validation), recrawled unchanged, then computed. Keys: ``db``, ``xet``
    and ``limits`` (the imitation's), ``summary`` (the first crawl's), ``recrawl`` and ``recrawl_counts`` (the
    second's, and the requests it made), ``compute`` (the first compute's stats). Read it as it is; a test that
    writes copies it first (tests/hubkit.copy_catalog)."""
    if not (CORPUS / "oracle.json").is_file():
        pytest.skip("../shared/corpus is absent")
    from crawlkit import crawl

    from indexer.catalog.compute import compute
    from indexer.catalog.db import upgrade
    from indexer.hubsim import HubServer

    db = str(tmp_path_factory.mktemp("corpus") / "catalog.db")
    upgrade(db)
    with HubServer(str(MODELS)) as hub:
        out = {"db": db, "xet": hub.xet, "limits": hub.limits, "summary": crawl(db, hub)}
        hub.reset_counts()
        out["recrawl"] = crawl(db, hub)
        out["recrawl_counts"] = dict(hub.counts)
    out["compute"] = compute(db)
    return out


# ---------------------------------------------------------------- PostgreSQL (tests/test_pg.py)
# INDEXER_TEST_PG: a SQLAlchemy URL of a server where the tests may CREATE DATABASE; .ci/run starts a
# throw-away cluster and sets it. Each test gets its own fresh database, dropped afterwards.


@pytest.fixture
def pg_url() -> str:
    import uuid

    base = os.environ.get("INDEXER_TEST_PG")
    if not base:
        pytest.skip("INDEXER_TEST_PG is not set (.ci/run starts a throw-away PostgreSQL cluster and sets it)")
    import sqlalchemy as sa

    name = f"indexer_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield sa.engine.make_url(base).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def works_on_sglang(oracle) -> set[tuple[str, str]]:
    """Identical mappings at equal vocab_size, and equal-size pairs whose vocabularies agree
    (oracle-agreement.json's class): the pairs that work on SGLang."""
    agree = json.loads((CORPUS / "oracle-agreement.json").read_text())["pairs"]
    agreeing = {(p["target"], p["draft"]) for p in agree if p["cls"] == "works"}
    return ({tuple(p) for p in oracle["pairs"]["compatible"]}
            | {tuple(p) for p in oracle["pairs"]["mapping_mismatch"] if tuple(p) in agreeing})
