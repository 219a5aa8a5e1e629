"""Every quantization a GGUF repo holds, through the crawl (hubsim + the real client) into the catalog, and out as
the setup that ``query`` and ``check --quant`` estimate and launch: ``-hf REPO:TAG`` (llama.cpp) or LM Studio's
download at the tag when the repo has a file of the type asked, the conversion chain with a note when it has none;
the estimate's quantization is always the command's."""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner
from crawlkit import crawl, set_meta
from ggufkit import write_vocab_gguf
from launchcheck import catalog_files, check
from test_engines import make_spm

from indexer.answer.query import run_query
from indexer.answer.speedup import Options
from indexer.catalog.compute import compute
from indexer.catalog.db import upgrade
from indexer.cli import cli
from indexer.gguf.predict import predict_gguf
from indexer.hubsim import HubServer

B, MB = 10**9, 1 << 20
TARGET, DRAFT = "quant/Big-7B-GGUF", "quant/Small-0.5B-GGUF"
# Big-7B's quantizer repo: five model files (Q5_K_M split in two shards, in its own folder), a projector
BIG = {"Big-7B-Q2_K.gguf": 40 * MB, "Big-7B-Q4_K_M.gguf": 64 * MB, "Big-7B-IQ4_XS.gguf": 60 * MB,
       "Q5_K_M/Big-7B-Q5_K_M.gguf": 0, "Big-7B-Q8_0.gguf": 96 * MB, "mmproj-Big-7B-f16.gguf": 8 * MB}
SMALL = {"Small-0.5B-Q8_0.gguf": 9 * MB, "Small-0.5B-Q4_K_M.gguf": 6 * MB}


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("gguf-quants")
    hub = root / "hub"
    for repo_id, params in (("spm/Big-7B", 7 * B), ("spm/Small-0.5B", B // 2)):
        make_spm(hub / repo_id)
        set_meta(hub, repo_id, params=params)
    for repo, files, base in ((TARGET, BIG, "spm/Big-7B"), (DRAFT, SMALL, "spm/Small-0.5B")):
        vocab = predict_gguf(hub / base)
        for name, size in files.items():
            split = {"split_max_tensors": 1, "n_tensors": 2} if size == 0 else {}
            path = write_vocab_gguf(hub / repo / name, vocab, file_type=10, **split)
            if size:
                with open(path, "r+b") as f:
                    f.truncate(size)
        set_meta(hub, repo, tags=["gguf", f"base_model:quantized:{base}"])
    db = str(root / "catalog.db")
    upgrade(db)
    with HubServer(str(hub)) as server:
        crawl(db, server)
    compute(db)
    return db, hub


def test_the_catalog_lists_every_model_file_once(hub):
    db, hub_dir = hub
    assert sorted(p.name for p in (hub_dir / TARGET / "Q5_K_M").iterdir()) == [
        "Big-7B-Q5_K_M-00001-of-00002.gguf", "Big-7B-Q5_K_M-00002-of-00002.gguf"]  # the writer's shard names
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT path, quant, parts, size FROM gguf_files g JOIN repos r ON r.id = g.repo_pk "
                           "WHERE r.repo_id = ? ORDER BY path", (TARGET,)).fetchall()
    assert [r[:3] for r in rows] == [("Big-7B-IQ4_XS.gguf", "IQ4_XS", 1), ("Big-7B-Q2_K.gguf", "Q2_K", 1),
                                     ("Big-7B-Q4_K_M.gguf", "Q4_K_M", 1), ("Big-7B-Q8_0.gguf", "Q8_0", 1),
                                     ("Q5_K_M/Big-7B-Q5_K_M-00001-of-00002.gguf", "Q5_K_M", 2)]
    assert rows[3][3] == 96 * MB  # the Hub's size; the split one's is both shards'
    shards = sum((hub_dir / TARGET / "Q5_K_M" / n).stat().st_size for n in ("Big-7B-Q5_K_M-00001-of-00002.gguf",
                                                                             "Big-7B-Q5_K_M-00002-of-00002.gguf"))
    assert rows[4][3] == shards
    assert catalog_files(db)[DRAFT] == [("Small-0.5B-Q4_K_M.gguf", "Q4_K_M"), ("Small-0.5B-Q8_0.gguf", "Q8_0")]


def _best(db: str, engine: str, **quants) -> dict:
    found = run_query(TARGET, engine=engine, db=db, speed=Options(hardware="RTX 4090", **quants))
    return next(d for d in found["drafts"] if d["repo_id"] == DRAFT)


@pytest.mark.parametrize("engine", ["llama.cpp", "lmstudio"])
def test_query_runs_the_file_of_the_type_asked(hub, engine):
    db, _ = hub
    files = catalog_files(db)
    for asked, tag in (("Q5_K_M", "Q5_K_M"), ("iq4_xs", "IQ4_XS"), ("Q8_0", "Q8_0"), ("Q4_K", "Q4_K_M")):
        d = _best(db, engine, target_quant=asked, draft_quant="Q4_K_M")
        target, draft = d["setup"]["target"], d["setup"]["draft"]
        assert (target["repo"], target["kind"], target["tag"], target["quant"]) == (TARGET, "gguf", tag, tag)
        assert (draft["repo"], draft["tag"], draft["quant"]) == (DRAFT, "Q4_K_M", "Q4_K_M")
        assert (d["speedup"]["target_quant"], d["speedup"]["draft_quant"]) == (tag, "Q4_K_M")  # the estimate's
        assert len(d["setup"]["steps"]) == 1 and "#" not in d["launch"]  # nothing to make, nothing to say
        if engine == "llama.cpp":
            assert d["launch"].startswith(f"llama-server -hf {TARGET}:{tag} -hfd {DRAFT}:Q4_K_M ")
        else:
            assert f"target = get('{TARGET}', 'gguf', '{tag}')" in d["launch"]
        assert check(d["setup"], d["setup"]["steps"], files) == ([], [])


@pytest.mark.parametrize("engine", ["llama.cpp", "lmstudio"])
def test_query_makes_a_type_the_repo_lacks_and_says_so(hub, engine):
    db, _ = hub
    d = _best(db, engine, target_quant="Q6_K")
    target, steps = d["setup"]["target"], d["setup"]["steps"]
    assert (target["repo"], target["kind"], target["quant"]) == ("spm/Big-7B", "hf", "Q6_K")
    assert d["speedup"]["target_quant"] == "Q6_K"
    assert steps[0] == "hf download spm/Big-7B --local-dir Big-7B"
    assert "llama-quantize Big-7B-F16.gguf Big-7B-Q6_K.gguf Q6_K" in steps
    assert steps[-1].endswith(f"  # {TARGET}: the catalog lists no Q6_K file (only IQ4_XS, Q2_K, Q4_K_M, Q8_0, "
                              "Q5_K_M); made from spm/Big-7B")
    assert check(d["setup"], steps, catalog_files(db)) == ([], [])


@pytest.mark.parametrize("engine", ["llama.cpp", "lmstudio"])
def test_check_estimates_and_launches_the_same_file(hub, engine):
    db, _ = hub
    files = catalog_files(db)
    for asked, listed in (("Q8_0", True), ("Q6_K", False)):
        res = CliRunner().invoke(cli, ["check", "--db", db, TARGET, DRAFT, "--engine", engine, "--quant", asked,
                                       "--draft-quant", "Q4_K_M", "--hardware", "RTX 4090", "--json"])
        assert res.exit_code == 0, res.output
        figure = json.loads(res.stdout)["verdicts"][engine]["speedup"]
        setup = figure["setup"]
        assert figure["target_quant"] == setup["target"]["quant"] == asked
        assert figure["draft_quant"] == setup["draft"]["quant"] == "Q4_K_M"
        assert (setup["target"]["repo"] == TARGET) is listed and (":Q8_0 " in figure["launch"]
                                                                   or "'Q8_0')" in figure["launch"]) is listed
        assert ("the catalog lists no Q6_K file" in figure["launch"]) is not listed
        assert check(setup, setup["steps"], files) == ([], [])
        text = CliRunner().invoke(cli, ["check", "--db", db, TARGET, DRAFT, "--engine", engine, "--quant", asked,
                                        "--draft-quant", "Q4_K_M", "--hardware", "RTX 4090"])
        assert text.exit_code == 0 and f"{asked} target" in text.output
        query = CliRunner().invoke(cli, ["query", "--db", db, "--target", TARGET, "--engine", engine, "--quant",
                                         asked, "--draft-quant", "Q4_K_M", "--hardware", "RTX 4090", "--json"])
        assert query.exit_code == 0, query.output
        entry = next(d for d in json.loads(query.stdout)["drafts"] if d["repo_id"] == DRAFT)
        assert entry["launch"] == figure["launch"] and entry["speedup"]["target_quant"] == asked  # query = check


def test_a_repo_without_its_file_list_runs_the_file_read(hub, tmp_path):
    """A catalog crawled before the list (its rows gone): the file whose header was read, as before."""
    db, _ = hub
    old = tmp_path / "old.db"
    with sqlite3.connect(db) as src, sqlite3.connect(old) as dst:
        src.backup(dst)
        dst.execute("DELETE FROM gguf_files")
    d = _best(str(old), "llama.cpp", target_quant="Q8_0")
    assert d["setup"]["target"]["repo"] == "spm/Big-7B" and d["speedup"]["target_quant"] == "Q8_0"
    assert "the catalog lists no Q8_0 file (only Q5_K_M)" in d["launch"]  # its smallest first shard


def test_the_migration_makes_older_gguf_repos_recrawl(hub, tmp_path):
    """Migration 0012 on a catalog at 0011: its GGUF repos lose their commit sha, so the next crawl lists them."""
    from indexer.catalog.db import upgrade as up

    db = str(tmp_path / "c.db")
    up(db, "0011")
    with sqlite3.connect(db) as con:
        con.execute("INSERT INTO repos (id, repo_id, sha, status, reason, disabled) VALUES "
                    "(1, 'q/A-GGUF', 'abc', 'ok', 'GGUF repo: facts read from A-Q4_K_M.gguf', 0), "
                    "(2, 'h/B', 'def', 'ok', NULL, 0)")
    up(db)
    with sqlite3.connect(db) as con:
        assert dict(con.execute("SELECT repo_id, sha FROM repos")) == {"q/A-GGUF": None, "h/B": "def"}


def test_a_repo_made_private_keeps_no_file_list(tmp_path):
    """A GGUF repo that turns private is ``gone``, and its files leave the catalog with it (nothing to publish)."""
    hub = tmp_path / "hub"
    make_spm(hub / "spm/Big-7B")
    vocab = predict_gguf(hub / "spm/Big-7B")
    for name in ("Big-7B-Q4_K_M.gguf", "Big-7B-Q8_0.gguf"):
        write_vocab_gguf(hub / "quant/Hidden-7B-GGUF" / name, vocab)
    db = str(tmp_path / "c.db")
    upgrade(db)
    with HubServer(str(hub)) as server:
        crawl(db, server)
        assert len(catalog_files(db)["quant/Hidden-7B-GGUF"]) == 2
        set_meta(hub, "quant/Hidden-7B-GGUF", private=True)
        server.reload()
        assert crawl(db, server, token="hf_owner")["private"] == 1
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT status FROM repos WHERE repo_id = 'quant/Hidden-7B-GGUF'").fetchone() == ("gone",)
        assert con.execute("SELECT count(*) FROM gguf_files").fetchone() == (0,)


def test_gguf_files_on_postgresql(hub, pg_url, tmp_path, monkeypatch):
    """The same crawl into PostgreSQL: the file list and the setup answer alike."""
    pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")
    _, hub_dir = hub
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("INDEXER_TOKENS", str(tmp_path / "tokens"))
    upgrade(pg_url)
    with HubServer(str(hub_dir)) as server:
        crawl(pg_url, server)
    compute(pg_url)
    d = _best(pg_url, "llama.cpp", target_quant="Q5_K_M")
    assert d["launch"].startswith(f"llama-server -hf {TARGET}:Q5_K_M ") and d["speedup"]["target_quant"] == "Q5_K_M"


@pytest.mark.parametrize("target", [TARGET, "spm/Big-7B"])
def test_ngram_runs_on_llama_server_and_transformers(hub, target):
    """--method ngram needs no draft: llama-server's --spec-type ngram-simple (the GGUF repo's file, also for its
    HF base) and transformers' prompt lookup (an HF repo only), each command checked against its setup."""
    db, _ = hub
    files = catalog_files(db)
    got = run_query(target, engine="llama.cpp", method="ngram", db=db, speed=Options(target_quant="Q8_0"))
    [d] = got["drafts"]
    assert d["launch"] == f"llama-server -hf {TARGET}:Q8_0 --spec-type ngram-simple"
    assert check(d["setup"], d["setup"]["steps"], files) == ([], [])
    tokens = run_query(target, engine="llama.cpp", method="ngram", db=db, speed=Options(draft_tokens=16))
    assert tokens["drafts"][0]["launch"].endswith(" --spec-type ngram-simple --spec-ngram-simple-size-m 16")
    assert check(tokens["drafts"][0]["setup"], tokens["drafts"][0]["setup"]["steps"], files) == ([], [])
    hf = run_query(target, engine="transformers", method="ngram", db=db)
    if target == TARGET:  # transformers loads Hugging Face checkpoints: it names the base
        assert hf["drafts"] == [] and "spm/Big-7B" in hf["refused"]
    else:
        [d] = hf["drafts"]
        assert "prompt_lookup_num_tokens=10" in d["launch"] and "assistant" not in d["launch"]
        assert check(d["setup"], d["setup"]["steps"]) == ([], [])
    r = CliRunner().invoke(cli, ["query", "--db", db, "--target", target, "--engine", "mlx", "--method", "ngram"])
    assert r.exit_code == 2 and "llama.cpp" in r.output and "transformers" in r.output
