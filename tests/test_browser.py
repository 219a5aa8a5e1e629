"""The published catalog in a real browser: headless Debian chromium against `indexer serve`.

Driven through chromium's own --dump-dom / --screenshot flags (no extra Python dependency).
Skipped only when chromium is not installed (`apt-get install chromium`).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest
from sample_catalog import NOT_SGLANG, SGLANG_DRAFTS, TARGET, ServedCatalog, build_sample_catalog

CHROMIUM = next((p for p in ("/usr/bin/chromium", shutil.which("chromium") or "",
                             shutil.which("chromium-browser") or "") if p and Path(p).exists()), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")


def chromium(tmp_path: Path, url: str, *, screenshot: Path | None = None) -> str:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1280,1000"]
    if screenshot is not None:
        args.append(f"--screenshot={screenshot}")
    else:
        args.append("--dump-dom")
    res = subprocess.run([*args, url], capture_output=True, text=True, timeout=120)
    if screenshot is not None:
        assert screenshot.is_file() and screenshot.stat().st_size > 1000, res.stderr[-2000:]
        assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert res.returncode == 0 and "<html" in res.stdout.lower(), res.stderr[-2000:]
    return res.stdout


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    path = tmp_path_factory.mktemp("browser") / "catalog.db"
    build_sample_catalog(path)
    with ServedCatalog(path) as served:
        yield served


def test_home_page(site, tmp_path):
    dom = chromium(tmp_path, site.base + "/")
    assert "Speculative-decoding compatibility catalog" in dom
    assert "Drafts for a target" in dom and "repos" in dom
    chromium(tmp_path, site.base + "/", screenshot=tmp_path / "home.png")


def test_repo_row_page(site, tmp_path):
    pk = next(r["id"] for r in site.json("/catalog/repos.json?_shape=array&_size=max") if r["repo_id"] == TARGET)
    url = f"{site.base}/catalog/repos/{pk}"
    dom = chromium(tmp_path, url)
    assert TARGET in dom
    table = chromium(tmp_path, f"{site.base}/catalog/repos?status=ok")
    assert 'href="/catalog/tokenizers/1"' in table  # foreign key: repo -> its tokenizer
    chromium(tmp_path, url, screenshot=tmp_path / "repo.png")


def test_drafts_for_target_canned_query(site, tmp_path):
    url = f"{site.base}/catalog/drafts_for_target?target={quote(TARGET)}&engine=sglang"
    dom = chromium(tmp_path, url)
    assert "Drafts for a target" in dom
    for draft in SGLANG_DRAFTS:
        assert draft in dom
    for other in NOT_SGLANG:
        assert other not in dom
    chromium(tmp_path, url, screenshot=tmp_path / "drafts.png")
