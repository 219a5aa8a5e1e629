"""indexer nightly: lock, incremental crawl of the families, compute, integrity check, publish, report;
and the scheduling recipes in deploy/ and .github/workflows/."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from indexer.cli import cli
from indexer.jobs.demo import DEMO_TARGET, REPOS, build_demo_hub
from indexer.jobs.nightly import EXIT_LOCKED, exclusive_lock, lock_path_for

ROOT = Path(__file__).resolve().parents[1]
LUMEN_BASALT = sum(1 for r in REPOS if r[1] in ("Lumen", "Basalt"))  # the demo repos of the two families


@pytest.fixture
def demo_hub(tmp_path, monkeypatch):
    from indexer.hubsim import HubServer

    hub_dir = tmp_path / "hub"
    build_demo_hub(hub_dir)
    monkeypatch.setenv("INDEXER_FAMILIES", str(hub_dir / "families.toml"))
    with HubServer(str(hub_dir)) as hub:
        yield hub


def _nightly(tmp_path, endpoint, *extra):
    args = ["nightly", "--db", str(tmp_path / "catalog.db"), "--endpoint", endpoint,
            "--publish-dir", str(tmp_path / "site"), "--report", str(tmp_path / "report.json"), *extra]
    return CliRunner().invoke(cli, args)


def test_nightly_crawls_computes_publishes_and_reports(tmp_path, demo_hub):
    res = _nightly(tmp_path, demo_hub.endpoint, "--families", "Lumen,Basalt")
    assert res.exit_code == 0, res.output
    line = res.output.strip()
    assert "\n" not in line and line.startswith("nightly ok;") and "integrity ok" in line
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["status"] == "ok" and rep["families"] == ["Lumen", "Basalt"]
    assert [s for s in rep["steps"]] == ["migrate", "crawl", "compute", "integrity_check", "publish"]
    crawl = rep["steps"]["crawl"]["result"]
    assert crawl["listed"] == LUMEN_BASALT and crawl["new"] == LUMEN_BASALT  # the demo's Lumen + Basalt repos
    assert rep["steps"]["publish"]["result"]["tables"]["repos"] == LUMEN_BASALT
    site = sqlite3.connect(tmp_path / "site" / "catalog.db")
    drafts = {r[0] for r in site.execute(
        "SELECT d.repo_id FROM repos t JOIN repo_classes tc ON tc.repo_pk = t.id AND tc.engine = 'sglang' "
        "JOIN repo_classes dc ON dc.class_id = tc.class_id AND dc.engine = 'sglang' "
        "JOIN repos d ON d.id = dc.repo_pk WHERE t.repo_id = ? AND d.id != t.id", (DEMO_TARGET,))}
    assert drafts == {"lumen-ai/Lumen-0.5B-Instruct", "quietfox/Lumen-0.5B-Instruct-sft",
                      "lumen-ai/Lumen-70B-Instruct", "amberlab/Lumen-70B-Instruct"}  # the gated one via its copy
    site.close()

    # Second night, nothing changed: one listing page per scope (down to its high-water mark), nothing else.
    demo_hub.reset_counts()
    res = _nightly(tmp_path, demo_hub.endpoint, "--families", "Lumen", "--families", "Basalt")
    assert res.exit_code == 0, res.output
    crawl = json.loads((tmp_path / "report.json").read_text())["steps"]["crawl"]["result"]
    assert crawl["unchanged"] == crawl["listed"] and crawl["new"] == 0 and crawl["changed"] == 0
    assert crawl["resolver_calls"] == 0 and crawl["bytes_downloaded"] == 0
    assert crawl["api_calls"] == crawl["list_calls"] == len(crawl["scopes"])
    assert all(s["pages"] == 1 and s["complete"] for s in crawl["scopes"].values())

    # The weekly full listing walks every scope to its end (and finds deleted repos)
    res = _nightly(tmp_path, demo_hub.endpoint, "--families", "Lumen,Basalt", "--full-listing")
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["full_listing"] and rep["steps"]["crawl"]["result"]["listed"] == LUMEN_BASALT
    res = _nightly(tmp_path, demo_hub.endpoint, "--families", "Lumen,Basalt", "--full-listing-every", "7")
    assert json.loads((tmp_path / "report.json").read_text())["full_listing"] is False  # done a moment ago


def test_second_concurrent_run_exits_at_once(tmp_path):
    db = tmp_path / "catalog.db"
    lock = lock_path_for(str(db))
    assert lock == tmp_path / "catalog.db.lock"
    with exclusive_lock(lock):
        res = CliRunner().invoke(cli, ["nightly", "--db", str(db), "--endpoint", "http://127.0.0.1:9",
                                       "--report", str(tmp_path / "r.json")])
    assert res.exit_code == EXIT_LOCKED == 75
    assert "another nightly run holds" in res.output and str(lock) in res.output
    assert not (tmp_path / "r.json").exists()
    with exclusive_lock(lock):  # released: takes it again
        pass


def test_failure_exits_nonzero_with_a_report(tmp_path, demo_hub):
    res = _nightly(tmp_path, demo_hub.endpoint, "--families", "NoSuchFamily")
    assert res.exit_code == 1
    assert res.output.startswith("nightly failed;") and "NoSuchFamily" in res.output
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["status"] == "failed" and rep["steps"]["crawl"]["status"] == "failed"
    assert "publish" not in rep["steps"] and not (tmp_path / "site").exists()


def test_systemd_units_parse():
    import configparser

    def load(name):
        cp = configparser.ConfigParser(strict=False, interpolation=None)
        cp.optionxform = str
        cp.read_string((ROOT / "deploy" / name).read_text())
        return cp

    svc = load("indexer-nightly.service")
    assert {"Unit", "Service"} <= set(svc.sections())
    assert svc["Service"]["Type"] == "oneshot"
    assert "indexer nightly" in svc["Service"]["ExecStart"]
    assert "75" in svc["Service"]["SuccessExitStatus"]
    timer = load("indexer-nightly.timer")
    assert {"Unit", "Timer", "Install"} <= set(timer.sections())
    assert timer["Timer"]["OnCalendar"] and timer["Timer"]["Unit"] == "indexer-nightly.service"
    site = load("indexer-site.service")
    assert "serve.sh" in site["Service"]["ExecStart"]


def test_cron_line():
    lines = [ln for ln in (ROOT / "deploy" / "crontab").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert len(lines) == 1
    fields = lines[0].split(None, 5)
    assert len(fields) == 6
    for f in fields[:5]:
        assert re.fullmatch(r"[0-9*/,\-]+", f), f
    assert "indexer nightly" in fields[5]


def test_github_workflow():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "nightly.yml").read_text())
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads the key `on` as True
    assert len(on["schedule"][0]["cron"].split()) == 5
    steps = wf["jobs"]["nightly"]["steps"]
    assert any("indexer nightly" in (s.get("run") or "") for s in steps)
    upload = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert upload and "data/publish" in upload[0]["with"]["path"]
    run = next(s["run"] for s in steps if "indexer nightly" in (s.get("run") or ""))
    minutes = float(re.search(r"--max-minutes (\d+)", run).group(1))
    assert minutes < wf["jobs"]["nightly"]["timeout-minutes"] - 30  # room for compute, publish, cache save
    save = [s for s in steps if str(s.get("uses", "")).startswith("actions/cache/save")]
    assert save and save[0]["if"] == "always()" and "data/catalog.db" in save[0]["with"]["path"]
    restore = [s for s in steps if str(s.get("uses", "")).startswith("actions/cache/restore")]
    assert restore and restore[0]["with"]["path"] == save[0]["with"]["path"]


def test_time_boxed_nightly_is_partial_then_resumes(tmp_path, demo_hub):
    res = _nightly(tmp_path, demo_hub.endpoint, "--families", "Lumen,Basalt", "--max-api-calls", "4")
    assert res.exit_code == 0, res.output
    assert "partial: resumed next run" in res.output
    crawl = json.loads((tmp_path / "report.json").read_text())["steps"]["crawl"]["result"]
    assert crawl["status"] == "partial" and crawl["unresolved"] >= 1 and crawl["api_calls"] <= 5
    done = crawl["new"]
    res = _nightly(tmp_path, demo_hub.endpoint, "--families", "Lumen,Basalt")
    assert res.exit_code == 0, res.output
    crawl = json.loads((tmp_path / "report.json").read_text())["steps"]["crawl"]["result"]
    assert crawl["status"] == "ok" and crawl["resumed"] >= 1 and done + crawl["new"] == LUMEN_BASALT
