"""A repo's own tokenizer runs in a box (indexer/vocab/tokenbox.py): a panic, a run past the time limit or past
the memory limit is one reason, the box goes on, and neither the crawl, compute, the nightly nor `check` dies."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from click.testing import CliRunner
from conftest import MODELS
from tokfactory import BACKTRACKING_SHORT, make_hostile, make_memory_bomb, make_model

from indexer.cli import cli
from indexer.vocab.tokenbox import FAILED, TokenizerBox, TokenizerFailed

GOOD = MODELS / "isatyabrata__llama2-7b-chat-hf"


def test_the_box_answers_a_panic_a_memory_bomb_and_a_timeout_and_goes_on(tmp_path):
    hostile = make_hostile(tmp_path / "hostile")
    bomb = make_memory_bomb(tmp_path / "bomb")
    with TokenizerBox(memory_bytes=1 << 30) as box:
        with pytest.raises(TokenizerFailed) as e:
            box.count_text(hostile)
        assert not e.value.loading and e.value.reason.startswith("panicked: PanicException")
        assert "retry-limit-in-match" in e.value.reason
        good = box.count_text(GOOD)  # the same child goes on
        assert sum(good.values()) > 10_000
        with pytest.raises(TokenizerFailed) as e:
            box.count_text(bomb)
        assert not e.value.loading and "1024 MiB memory limit" in e.value.reason
        assert box.count_text(GOOD) == good  # a new child after the old one died
        box.seconds = 0.001
        with pytest.raises(TokenizerFailed) as e:
            box.count_text(GOOD)
        assert e.value.reason == "took longer than 0.001 s"
        box.seconds = 120
        assert box.count_text(GOOD) == good
        with pytest.raises(TokenizerFailed) as e:
            box.count_text(tmp_path / "missing")
        assert e.value.loading  # transformers cannot load it: not a failure on the text
    assert (box.counted, box.failed) == (3, 4)


def test_the_gguf_prediction_says_the_converter_dies_on_a_panic(tmp_path):
    """llama.cpp's converter encodes a short check text with the repo's tokenizer in-process (the same library
    panics there too): the prediction is "not converted", with the panic's words, not an escaped BaseException."""
    from indexer.gguf.predict import predict_gguf_facts

    path = make_model(tmp_path / "m", config={"num_hidden_layers": 2, "hidden_size": 64})
    make_hostile(path, pattern=BACKTRACKING_SHORT)
    vocab, why = predict_gguf_facts(path)
    assert why is None and not vocab.converted
    assert vocab.error.startswith("PanicException: Onig: Regex search error: retry-limit-in-match")


def test_check_of_a_hostile_directory_is_one_line(tmp_path):
    hostile = make_hostile(tmp_path / "hostile")
    draft = make_model(tmp_path / "draft")
    res = CliRunner().invoke(cli, ["check", str(hostile), str(draft)])
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and f"{FAILED}: panicked: " in lines[0], res.stderr
    assert "Traceback" not in res.output


def test_a_hostile_repo_neither_stops_the_nightly_nor_compute(tmp_path, monkeypatch):
    from indexer.hubsim import HubServer
    from indexer.jobs.demo import DEMO_TARGET, build_demo_hub

    hub_dir = tmp_path / "hub"
    build_demo_hub(hub_dir)
    evil = "lumen-ai/Lumen-0.5B-Instruct-evil"
    shutil.copytree(hub_dir / "lumen-ai/Lumen-0.5B-Instruct", hub_dir / evil)
    tj = json.loads((hub_dir / evil / "tokenizer.json").read_text())
    a, b = sorted(tj["model"]["vocab"])[:2]
    make_hostile(hub_dir / evil, swap=(a, b))
    monkeypatch.setenv("INDEXER_FAMILIES", str(hub_dir / "families.toml"))
    db = tmp_path / "catalog.db"
    with HubServer(str(hub_dir)) as hub:
        res = CliRunner().invoke(cli, ["nightly", "--db", str(db), "--endpoint", hub.endpoint, "--families", "Lumen",
                                       "--publish-dir", str(tmp_path / "site"),
                                       "--report", str(tmp_path / "report.json")])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["status"] == "ok" and list(report["steps"])[-1] == "publish"
    errors = report["steps"]["crawl"]["result"]["errors"]
    assert [e["repo"] for e in errors] == [evil] and errors[0]["reason"].startswith(f"{FAILED}: panicked: ")
    con = sqlite3.connect(tmp_path / "site" / "catalog.db")
    try:
        status, reason = con.execute("SELECT status, reason FROM repos WHERE repo_id = ?", (evil,)).fetchone()
        assert status == "ok" and reason.startswith(f"{FAILED}: panicked: PanicException")
        basis = con.execute("SELECT t.agreement_basis FROM repos r JOIN tokenizers t ON t.id = r.tokenizer_id "
                            "WHERE r.repo_id = ?", (evil,)).fetchone()[0]
        assert basis == "ids"  # no counts: its agreement rests on ids
        classes = dict(con.execute("SELECT r.repo_id, count(*) FROM repos r JOIN repo_classes c ON c.repo_pk = r.id "
                                   "GROUP BY r.repo_id"))
        assert classes[DEMO_TARGET] >= 6 and classes[evil] >= 6  # every repo computed, the hostile one too
        texts = con.execute("SELECT count(*) FROM tokenizers WHERE agreement_basis = 'text'").fetchone()[0]
        assert texts >= 2  # the others were counted in the same box
    finally:
        con.close()
