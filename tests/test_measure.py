"""`indexer measure`: acceptance and speed read from a running engine's own counters, kept in the catalog.

Each engine's server is its recorded wire format (tests/data/engine_wire/, from the engine's source at the release
the project mirrors) served on 127.0.0.1 by tests/enginesim.py; the measurement goes through the CLI into a copy of
the demo catalog, and `check` shows it.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from enginesim import EngineSim
from hubkit import copy_catalog

from indexer.cli import cli
from indexer.engines import SERVERS
from indexer.engines.server import prometheus

TARGET, DRAFT = "lumen-ai/Lumen-7B-Instruct", "lumen-ai/Lumen-0.5B-Instruct"


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


@pytest.fixture
def db(demo_catalog, tmp_path) -> str:
    return str(copy_catalog(demo_catalog, tmp_path / "cat"))


def measure(db: str, engine: str, *extra: str, baseline: bool = True, hardware: str = "M4 Max") -> dict:
    with EngineSim(engine) as spec, EngineSim(engine, speculative=False) as base:
        args = ["measure", TARGET, DRAFT, "--engine", engine, "--url", spec.url, "--task", "code",
                "--max-tokens", "64", "--db", db, "--json", *extra]
        if baseline:
            args += ["--baseline-url", base.url]
        if hardware:
            args += ["--hardware", hardware]
        code, out = run(*args)
        assert code == 0, out
        got = json.loads(out)
        got["_sent"] = spec.requests
        return got


def test_llama_server_timings_give_acceptance_and_speed(db):
    got = measure(db, "llama.cpp")
    m = got["measured"]
    # 4 code prompts, each: draft_n 60, draft_n_accepted 42; predicted_per_second 50 against 30 without the draft
    assert (m["drafted"], m["accepted"], m["acceptance"]) == (240, 168, 0.7)
    assert (m["tok_s"], m["tok_s_baseline"], m["speedup"]) == (50.0, 30.0, pytest.approx(1.667, abs=1e-3))
    assert m["engine_version"] == "b7123-0c1e57098" and m["runs"] == 1 and m["calibration"] is True
    assert all(b["temperature"] == 0 and b["max_tokens"] == 64 and b["ignore_eos"] for b in got["_sent"])
    assert len(got["_sent"]) == 4
    # the estimate is check's speedup object for the same device and task
    e = got["estimate"]
    assert e["hardware"] == "M4 Max" and e["task"] == "code" and e["estimate"] > 0
    assert "timings.draft_n, timings.draft_n_accepted" in got["sources"]


def test_vllm_counters_are_read_before_and_after(db):
    m = measure(db, "vllm")["measured"]
    # per request: 20 drafts of 3 tokens, 39 accepted; 64 tokens decoded in 0.42 s (0.7 s without the draft)
    assert (m["rounds"], m["drafted"], m["accepted"], m["draft_tokens"]) == (80, 240, 156, 3)
    assert m["acceptance"] == 0.65 and m["engine_version"] == "0.34.0"
    assert m["tok_s"] == pytest.approx(63 / 0.42, rel=1e-3) and m["tok_s_baseline"] == pytest.approx(90.0)


def test_sglang_spec_details_and_client_timing(db):
    m = measure(db, "sglang")["measured"]
    assert (m["drafted"], m["accepted"], m["rounds"], m["draft_tokens"]) == (252, 168, 84, 3)
    assert m["engine_version"] == "0.5.23" and m["tokens"] == 256
    assert m["tok_s"] > 0 and m["tok_s_baseline"] > 0 and m["speedup"] > 0  # timed here: no figure asserted


def test_lmstudio_turns_the_draft_off_per_request(db):
    got = measure(db, "lmstudio", baseline=False)
    m = got["measured"]
    assert (m["drafted"], m["accepted"], m["acceptance"]) == (280, 160, 0.5714)
    assert (m["tok_s"], m["tok_s_baseline"], m["speedup"]) == (48.0, 32.0, 1.5)
    assert m["target_quant"] == "4bit" and m["engine_version"].endswith("0.25.1")
    drafts = [b.get("draft_model") for b in got["_sent"]]
    assert drafts == [DRAFT] * 4 + [None] * 4  # the baseline is the same server without draft_model


def test_mlx_reports_no_acceptance_and_says_so(db):
    m = measure(db, "mlx")["measured"]
    assert m["acceptance"] is None and "not report" in m["not_reported"]
    assert m["engine_version"] == "0.32.2" and m["speedup"] > 0


def test_no_baseline_where_the_engine_cannot_switch_off_and_no_device(db):
    m = measure(db, "llama.cpp", baseline=False, hardware="")["measured"]
    assert m["speedup"] is None and "--baseline-url" in m["note"] and m["acceptance"] == 0.7
    assert m["calibration"] is False and "no --hardware" in m["why_not_calibration"]


def test_check_shows_the_measurement_beside_the_estimate_and_takes_its_acceptance(db):
    code, out = run("check", TARGET, DRAFT, "--db", db, "--json", "--hardware", "M4 Max", "--task", "code")
    prior = json.loads(out)["verdicts"]["llama.cpp"]["speedup"]
    first = measure(db, "llama.cpp")
    again = measure(db, "llama.cpp", "--runs", "2")
    assert first["estimate"] == again["estimate"] == prior  # measure compares with the estimate before feedback
    code, out = run("check", TARGET, DRAFT, "--db", db, "--json", "--hardware", "M4 Max", "--task", "code")
    fed = json.loads(out)["verdicts"]["llama.cpp"]["speedup"]
    # the measured 0.70 over 3 runs against the prior's one: most of the way from the prior to it
    assert abs(fed["acceptance"] - 0.7) < abs(prior["acceptance"] - 0.7) / 2 and "measured 0.70 over 3 runs" in \
        fed["why"]
    assert fed["high"] - fed["low"] < prior["high"] - prior["low"]
    code, out = run("query", "--target", TARGET, "--engine", "llama.cpp", "--db", db, "--json", "--hardware",
                    "M4 Max", "--task", "code", "--limit", "50")
    ranked = {d["repo_id"]: d["speedup"] for d in json.loads(out)["drafts"]}
    assert ranked[DRAFT]["acceptance"] == fed["acceptance"] and "measured 0.70 over 3 runs" in ranked[DRAFT]["why"]
    assert all("measured" not in s["why"] for d, s in ranked.items() if d != DRAFT)  # the pair's own, no other's
    code, out = run("check", TARGET, DRAFT, "--db", db, "--json", "--hardware", "M4 Max", "--task", "prose")
    assert json.loads(out)["verdicts"]["llama.cpp"]["speedup"]["why"].count("measured") == 0  # another text
    code, out = run("check", TARGET, DRAFT, "--db", db, "--json", "--hardware", "M4 Max", "--task", "code")
    got = json.loads(out)["verdicts"]["llama.cpp"]["measured"]
    assert got["runs"] == 3 and got["measurements"] == 2 and got["hardware"] == "M4 Max"
    assert got["speedup"] == pytest.approx(1.667, abs=1e-3) and got["acceptance"] == 0.7
    assert json.loads(out)["verdicts"]["vllm"]["measured"] is None
    code, text = run("check", TARGET, DRAFT, "--db", db, "--hardware", "M4 Max", "--task", "code")
    assert "measured 1.67× on M4 Max (3 runs, code); estimated" in text


def test_text_output_and_errors(db):
    with EngineSim("llama.cpp") as spec:
        code, out = run("measure", TARGET, DRAFT, "--engine", "llama.cpp", "--url", spec.url, "--max-tokens", "64",
                        "--db", db, "--hardware", "M4 Max", "--no-save")
    assert code == 0 and "acceptance: 0.70 (168/240" in out and "estimated: ≈" in out
    code, out = run("measure", TARGET, DRAFT, "--engine", "vllm", "--url", "http://127.0.0.1:9", "--db", db)
    assert code == 1 and out.count("\n") == 1 and out.startswith("error: cannot reach http://127.0.0.1:9")
    code, out = run("measure", TARGET, DRAFT, "--engine", "vllm", "--db", db)
    assert code == 2 and "--url is needed" in out
    with EngineSim("mlx") as spec:  # a path the engine does not serve is its 404, in one line
        code, out = run("measure", TARGET, DRAFT, "--engine", "lmstudio", "--url", spec.url, "--db", db)
    assert code == 1 and "HTTP 404" in out and out.count("\n") == 1


def test_every_server_cites_its_sources():
    for engine, server in SERVERS.items():
        assert server.sources and all(isinstance(v, str) and v for v in server.sources.values()), engine


def test_prometheus_sums_label_sets_and_ignores_longer_names():
    text = ('# TYPE a_total counter\na_total{engine="0"} 3\na_total{engine="1"} 4.5\na_total_other 100\n'
            'b_sum 2\n')
    assert prometheus(text, "a_total") == 7.5 and prometheus(text, "b_sum") == 2 and prometheus(text, "c") is None


# ---- transformers, run for real on CPU ---------------------------------------------------------------------------

TINY = """
import site, sys
site.addsitedir(sys.argv[1])
import torch
from transformers import AutoConfig, AutoModelForCausalLM
for path, seed in zip(sys.argv[2::2], sys.argv[3::2]):
    config = AutoConfig.from_pretrained(path)
    config.update(dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=False))
    torch.manual_seed(int(seed))
    AutoModelForCausalLM.from_config(config).save_pretrained(path)
"""


def _indexer_with_torch(site: str, *args: str):
    import subprocess
    import sys

    code = (f"import site, sys; site.addsitedir({site!r}); sys.argv = ['indexer', *{list(args)!r}]; "
            "from indexer.cli import main; main()")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)


def test_transformers_runs_the_pair_here_and_an_identical_draft_accepts_everything(tmp_path):
    import shutil
    import subprocess
    import sys

    from enginevenv import torch_site
    from tokfactory import make_text_model

    site = str(torch_site())
    target, other = make_text_model(tmp_path / "target"), make_text_model(tmp_path / "other")
    built = subprocess.run([sys.executable, "-c", TINY, site, str(target), "1", str(other), "2"],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    same = tmp_path / "same"
    shutil.copytree(target, same)  # the very weights of the target
    db = str(tmp_path / "cat.db")
    runs = {}
    for name, draft in (("same", same), ("other", other)):
        r = _indexer_with_torch(site, "measure", str(target), str(draft), "--engine", "transformers", "--task",
                                "code", "--max-tokens", "12", "--draft-tokens", "3", "--hardware", "cpu",
                                "--db", db, "--json")
        assert r.returncode == 0, r.stderr[-2000:] + r.stdout[-2000:]
        runs[name] = json.loads(r.stdout)["measured"]
    m = runs["same"]
    assert m["acceptance"] == 1.0 and m["drafted"] == m["accepted"] > 0 and m["same_text"] is True
    assert m["draft_tokens"] == 3 and m["tok_s"] > 0 and m["tok_s_baseline"] > 0 and m["engine_version"]
    o = runs["other"]
    assert o["same_text"] is True  # greedy verification: the target's own text, whatever the draft proposes
    assert o["acceptance"] < 1.0


def test_transformers_without_torch_is_one_line(tmp_path):
    """Where torch is not installed (this venv), the measurement is refused in one line, before transformers is
    imported (its import would print a banner about the missing torch first)."""
    import importlib.util
    import os
    import subprocess
    import sys

    from tokfactory import make_text_model

    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed in this venv")
    model = make_text_model(tmp_path / "model")
    code = "import sys; sys.argv[0] = 'indexer'; from indexer.cli import main; main()"
    env = {k: v for k, v in os.environ.items() if k != "TRANSFORMERS_VERBOSITY"}  # as a user runs it
    r = subprocess.run([sys.executable, "-c", code, "measure", str(model), str(model), "--engine", "transformers"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == ["error: --engine transformers needs torch and transformers importable here "
                                     "(pip install torch transformers)"]


# ---- kept and shared: publish, pull, the site --------------------------------------------------------------------

def _measurements(path) -> list[tuple]:
    import sqlite3

    from indexer.catalog.measurements import COLUMNS

    con = sqlite3.connect(path)
    try:
        return con.execute(f"SELECT {', '.join(COLUMNS)} FROM measurements ORDER BY id").fetchall()
    finally:
        con.close()


def test_published_measurements_are_pulled_back_unchanged_and_local_ones_kept(db, tmp_path, monkeypatch):
    from pathlib import Path

    import pyarrow.parquet as pq
    from hubkit import ORG, dataset_hub, publish, remote_files
    from hubkit import run as hub_run

    measure(db, "llama.cpp")
    measure(db, "vllm", hardware="")
    published = _measurements(db)
    assert len(published) == 2
    with dataset_hub(tmp_path / "hub") as hub:
        code, out, err = publish(Path(db), hub, monkeypatch)
        assert code == 0, err
        files = remote_files(hub)
        table = pq.read_table(files["data/measurements.parquet"].abs_path).to_pylist()
        assert [(r["engine"], r["acceptance"], r["calibration"]) for r in table] == [("llama.cpp", 0.7, True),
                                                                                    ("vllm", 0.65, False)]
        card = Path(files["README.md"].abs_path).read_text()
        assert "data/measurements.parquet" in card and "`measurements` what `indexer measure` read" in card
        # a fresh pull: the published rows, unchanged
        dest = tmp_path / "fresh" / "catalog.db"
        dest.parent.mkdir()
        pull = ["pull", "--from", f"{ORG}/catalog", "--db", str(dest), "--endpoint", hub.endpoint, "--json"]
        code, out, err = hub_run(pull, monkeypatch, None)
        assert code == 0, err
        assert _measurements(dest) == published
        # a measurement made here, then a pull of a newer snapshot: the local row is kept beside the published
        measure(str(dest), "sglang")
        local = _measurements(dest)[-1]
        measure(db, "lmstudio", baseline=False)
        assert publish(Path(db), hub, monkeypatch)[0] == 0
        code, out, err = hub_run(pull, monkeypatch, None)
        assert code == 0, err
        assert json.loads(out)["kept_measurements"] == 1
        got = _measurements(dest)
        assert got[:3] == _measurements(db) and got[3] == local and len(got) == 4


def test_measurements_that_name_device_and_release_refine_that_devices_factors(db):
    from indexer.measure.calibration import cases
    from indexer.speed import calibrate, model
    from indexer.speed.hardware import APPLE, NVIDIA

    measure(db, "llama.cpp")  # M4 Max, release reported, a baseline: calibration grade
    measure(db, "vllm", hardware="")  # no device: kept, never used to calibrate
    measure(db, "llama.cpp", baseline=False)  # no speed-up to fit
    found = cases(db)
    assert len(found) == 1
    c = found[0]
    assert (c.hardware, c.setup.runtime, c.speedup, c.alpha) == ("M4 Max", model.GGML, 1.667, 0.7)
    fitted = calibrate.calibrate(found, model.PRIORS, 200)
    key = (model.GGML, APPLE)
    assert (fitted["tau"][key], fitted["overhead"][key]) != (model.PRIORS["tau"][key], model.PRIORS["overhead"][key])
    assert fitted["tau"][(model.SERVING, NVIDIA)] == model.PRIORS["tau"][(model.SERVING, NVIDIA)]


def test_ctrl_c_is_one_line_exit_130_and_nothing_kept(db):
    import signal
    import subprocess
    import sys
    import time

    with EngineSim("llama.cpp", pause=8) as spec:
        p = subprocess.Popen([sys.executable, "-c", "from indexer.cli import main; main()", "measure", TARGET, DRAFT,
                              "--engine", "llama.cpp", "--url", spec.url, "--db", db],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not spec.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and err.strip() == "error: measure interrupted" and "Traceback" not in err + out
    assert _measurements(db) == []


def test_the_site_lists_the_measurements_with_their_columns_described(db):
    from test_site import Site

    measure(db, "llama.cpp")
    site = Site(db)
    name = db.rsplit("/", 1)[-1][:-3]
    page = site.get(f"/{name}/measurements")
    assert page.status_code == 200 and "What `indexer measure` read from a running engine" in page.text
    status, got = site.json(f"/{name}/measurements.json", _shape="objects")
    assert status == 200 and [(r["engine"], r["acceptance"], r["hardware"]) for r in got["rows"]] == [
        ("llama.cpp", 0.7, "M4 Max")]


def test_a_server_that_drafts_nothing_is_said(db):
    with EngineSim("llama.cpp", speculative=False) as plain:
        code, out = run("measure", TARGET, DRAFT, "--engine", "llama.cpp", "--url", plain.url, "--baseline-url",
                        plain.url, "--db", db, "--no-save", "--max-tokens", "64")
    assert code == 0 and "the server drafted nothing" in out and "acceptance:" not in out
