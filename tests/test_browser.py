"""The site in a real browser: headless Debian chromium driven over the DevTools protocol.

Chromium runs with ``--remote-debugging-pipe`` (DevTools messages on fds 3/4, NUL-separated JSON), so
the test types, clicks and reads the DOM with the stdlib only. A person's path through ``indexer demo``:
type part of a target, take the completion, pick an engine, see the drafts the CLI lists, open an
explain view. Screenshots land in the test's tmp dir; their paths are printed (pytest -s shows them).
Skipped only when chromium is not installed (`apt-get install chromium`).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from sample_catalog import NOT_SGLANG, SGLANG_DRAFTS, TARGET, ServedCatalog, build_sample_catalog

from indexer.cli import cli

CHROMIUM = next((p for p in ("/usr/bin/chromium", shutil.which("chromium") or "",
                             shutil.which("chromium-browser") or "") if p and Path(p).exists()), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
STEP_TIMEOUT = 30.0


class Browser:
    """One headless chromium page, driven over DevTools on a pipe."""

    def __init__(self, profile: Path):
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()
        # Move our ends out of the way, then give chromium its pipe ends as fds 3 (read) and 4 (write).
        high = [os.dup(fd) for fd in (to_chrome_r, from_chrome_w)]
        for fd in (to_chrome_r, from_chrome_w):
            os.close(fd)

        def fds():  # runs in the child, before it closes every fd not in pass_fds
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--remote-debugging-pipe", f"--user-data-dir={profile}",
                "--window-size=1280,1000", "--hide-scrollbars"]
        self.proc = subprocess.Popen(args, preexec_fn=fds, pass_fds=(3, 4), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        for fd in high:
            os.close(fd)
        self.out = os.fdopen(to_chrome_w, "wb", buffering=0)
        self.inp = os.fdopen(from_chrome_r, "rb", buffering=0)
        self.next_id = 0
        self.replies: dict[int, dict] = {}
        self.events: list[dict] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        target = self.call("Target.createTarget", url="about:blank", session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True, session=False)["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=1280, height=1000, deviceScaleFactor=1, mobile=False)

    def _read(self) -> None:
        buf = b""
        while True:
            chunk = self.inp.read(65536)
            if not chunk:
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self.cond:
                    if "id" in msg:
                        self.replies[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                    self.cond.notify_all()

    def call(self, method: str, session: bool = True, **params) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        self.out.write(json.dumps(msg).encode() + b"\0")
        with self.cond:
            if not self.cond.wait_for(lambda: self.next_id in self.replies, timeout=STEP_TIMEOUT):
                raise TimeoutError(method)
            reply = self.replies.pop(self.next_id)
        assert "error" not in reply, (method, reply["error"])
        return reply["result"]

    def goto(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_load()

    def wait_load(self) -> None:
        with self.cond:
            ok = self.cond.wait_for(lambda: any(e["method"] == "Page.loadEventFired" for e in self.events),
                                    timeout=STEP_TIMEOUT)
            self.events.clear()
        assert ok, "page did not load"

    def js(self, expression: str):
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in res, res["exceptionDetails"]
        return res["result"].get("value")

    def wait_js(self, expression: str):
        deadline = time.monotonic() + STEP_TIMEOUT
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"never true: {expression}")

    def click(self, selector: str, navigates: bool = False) -> None:
        box = self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView();"
                      " const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        assert box, selector
        if navigates:
            self.events.clear()
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)
        if navigates:
            self.wait_load()

    def type(self, selector: str, text: str) -> None:
        self.click(selector)
        for ch in text:  # one key at a time, as a person types: each fires an input event
            self.call("Input.dispatchKeyEvent", type="keyDown", text=ch, key=ch)
            self.call("Input.dispatchKeyEvent", type="keyUp", key=ch)

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
        print(f"screenshot: {path}")
        return path

    def close(self) -> None:
        try:
            self.call("Browser.close", session=False)
        except (TimeoutError, OSError, AssertionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.out.close()
        self.inp.close()


@pytest.fixture
def browser(tmp_path):
    b = Browser(tmp_path / "profile")
    yield b
    b.close()


@pytest.fixture(scope="module")
def demo_site(demo_catalog):
    with ServedCatalog(demo_catalog) as served:
        yield served


@pytest.fixture(scope="module")
def sample_site(tmp_path_factory):
    path = tmp_path_factory.mktemp("browser") / "catalog.db"
    build_sample_catalog(path)
    with ServedCatalog(path) as served:
        yield served


def outcome(verdict: dict) -> str:
    return (verdict.get("outcome") or ("works" if verdict["compatible"] else "rejected")).replace("_", " ")


def cli_json(*args) -> dict | None:
    res = CliRunner().invoke(cli, list(args))
    return json.loads(res.stdout) if res.exit_code in (0, 1) else None


def test_a_person_finds_a_draft_and_its_explanation(demo_site, browser, tmp_path):
    from indexer.answer.query import ENGINE_NAMES, ENGINES
    from indexer.jobs.demo import DEMO_TARGET

    answers = {e: cli_json("query", "--db", demo_site.db, "--target", DEMO_TARGET, "--engine", e, "--json")
               for e in ENGINES}
    # Pick, as a person would, an engine other than the default that has drafts for this target.
    engine = next(e for e in ENGINES[1:] if answers[e] and len(answers[e]["drafts"]) >= 2)
    expected = answers[engine]

    browser.goto(demo_site.base + "/")
    browser.screenshot(tmp_path / "home.png")
    assert browser.js("document.querySelector('#questions h3').textContent").startswith("Which draft")
    browser.click("#questions a.page-link[href='/drafts']", navigates=True)
    assert browser.js("location.pathname") == "/drafts"

    browser.type("#target", "lumen-7b-i")  # partial, and not in the repo's case
    browser.wait_js("!document.querySelector('#target-suggestions').hidden")
    suggestions = browser.js("[...document.querySelectorAll('#target-suggestions li')].map(li => li.dataset.value)")
    assert suggestions[0] == DEMO_TARGET, suggestions
    browser.screenshot(tmp_path / "completion.png")
    browser.click("#target-suggestions li:first-child")
    assert browser.js("document.querySelector('#target').value") == DEMO_TARGET

    options = browser.js("[...document.querySelectorAll('#engine option')].map(o => o.value)")
    assert options == list(ENGINES)
    browser.js("document.querySelector('#engine').focus()")
    for _ in range(options.index(engine)):  # down the engine list with the keyboard
        browser.call("Input.dispatchKeyEvent", type="rawKeyDown", key="ArrowDown", code="ArrowDown",
                     windowsVirtualKeyCode=40)
        browser.call("Input.dispatchKeyEvent", type="keyUp", key="ArrowDown", code="ArrowDown",
                     windowsVirtualKeyCode=40)
    assert browser.js("document.querySelector('#engine').value") == engine
    browser.click("#find", navigates=True)

    listed = browser.js("[...document.querySelectorAll('#drafts tr.draft')].map(tr => tr.dataset.repo)")
    assert listed == [d["repo_id"] for d in expected["drafts"]]
    first = expected["drafts"][0]
    row_text = browser.js("document.querySelector('#drafts tr.draft').innerText")
    assert "500M" in row_text and "1/14" in row_text and first["reasons"][0] in row_text
    assert browser.js("document.querySelector('#launch-1').textContent") == first["launch"]
    hub = browser.js("document.querySelector('#drafts tr.draft a.repo').href")
    assert hub == f"https://huggingface.co/{first['repo_id']}"
    summary = browser.js("document.querySelector('#summary').innerText")
    for e, answer in answers.items():
        n = len(answer["drafts"]) if answer else None
        assert (f"{ENGINE_NAMES[e]}: not possible" if n is None
                else f"{ENGINE_NAMES[e]}: {n} draft{'' if n == 1 else 's'}") in summary
    browser.screenshot(tmp_path / "drafts.png")

    browser.click("#drafts tr.draft a.explain", navigates=True)
    assert browser.js("location.pathname") == "/explain"
    verdicts = browser.js("Object.fromEntries([...document.querySelectorAll('#verdicts tr[data-engine]')]"
                          ".map(tr => [tr.dataset.engine, tr.querySelector('.verdict').textContent]))")
    check = cli_json("check", "--db", demo_site.db, DEMO_TARGET, first["repo_id"], "--json")["verdicts"]
    assert verdicts == {e: outcome(v) for e, v in check.items()}
    assert verdicts[engine] == "works"  # the page listed it as a draft for this engine
    browser.screenshot(tmp_path / "explain.png")

    # "other drafts for this target" leads back, on the default engine: its near misses, each with its fix.
    browser.click("#explanation a[href^='/drafts?target=']", navigates=True)
    assert browser.js("document.querySelector('#engine').value") == "sglang"
    misses = cli_json("query", "--db", demo_site.db, "--target", DEMO_TARGET, "--near-misses", "--json")
    rows = browser.js("[...document.querySelectorAll('#near-misses tbody tr')].map(tr => tr.innerText)")
    assert len(rows) == len(misses["near_misses"]) > 0
    for row, miss in zip(rows, misses["near_misses"]):
        assert miss["repo_id"] in row and (miss["fix"] or "no known fix") in row
    browser.screenshot(tmp_path / "drafts-sglang.png")


def test_a_person_picks_their_hardware_and_task(demo_site, browser, tmp_path):
    """Issue 28: the drafts page's pickers ask what `indexer query --hardware --task` asks, and answer the same."""
    from urllib.parse import urlencode

    from indexer.jobs.demo import DEMO_TARGET

    expected = cli_json("query", "--db", demo_site.db, "--target", DEMO_TARGET, "--engine", "llama.cpp",
                        "--hardware", "M4 Max", "--task", "code", "--json")
    browser.goto(f"{demo_site.base}/drafts?{urlencode({'target': DEMO_TARGET, 'engine': 'llama.cpp'})}")
    assert browser.js("document.querySelector('#hardware').value") == ""  # the reference devices
    browser.js("document.querySelector('#hardware').value = 'M4 Max'")
    browser.js("document.querySelector('#task').value = 'code'")
    browser.click("#find", navigates=True)
    assert browser.js("new URLSearchParams(location.search).get('hardware')") == "M4 Max"
    listed = browser.js("[...document.querySelectorAll('#drafts tr.draft')].map(tr => tr.dataset.repo)")
    assert listed == [d["repo_id"] for d in expected["drafts"]]
    cells = browser.js("[...document.querySelectorAll('#drafts td.speedup-cell')].map(td => td.innerText.trim())")
    assert cells == [f"≈{d['speedup']['estimate']:.1f}× ({d['speedup']['low']:.1f}–{d['speedup']['high']:.1f}×)"
                     + (" slower than no draft" if d["speedup"]["slower"] else "") for d in expected["drafts"]]
    assert browser.js("document.querySelector('#best-launch').textContent") == expected["drafts"][0]["launch"]
    assert browser.js("document.querySelector('#hardware').value") == "M4 Max"  # the answer keeps the question
    browser.screenshot(tmp_path / "drafts-m4-max.png")


def test_a_pair_that_fails_is_explained(demo_site, browser, tmp_path):
    from urllib.parse import urlencode

    from indexer.jobs.demo import DEMO_DRAFT_MISMATCH, DEMO_TARGET

    browser.goto(f"{demo_site.base}/explain?{urlencode({'target': DEMO_TARGET, 'draft': DEMO_DRAFT_MISMATCH})}")
    check = cli_json("check", "--db", demo_site.db, DEMO_TARGET, DEMO_DRAFT_MISMATCH, "--json")
    text = browser.js("document.querySelector('#explanation').innerText")
    assert check["verdicts"]["sglang"]["reasons"][0] in text and f"Fix: {check['fix']}" in text
    for engine, verdict in check["verdicts"].items():
        shown = browser.js(f"document.querySelector('tr[data-engine=\"{engine}\"] .verdict').textContent")
        assert shown == outcome(verdict), engine
    browser.screenshot(tmp_path / "explain-mismatch.png")


def test_table_pages_keep_datasette_with_human_labels(sample_site, browser, tmp_path):
    browser.goto(sample_site.base + "/catalog/repos?status=ok")
    assert browser.js("!!document.querySelector('details > dl.column-descriptions')")  # collapsed
    assert not browser.js("document.querySelector('details').open")
    heads = browser.js("[...document.querySelectorAll('table.rows-and-columns thead th')].map(th => th.dataset.column)")
    assert heads[:5] == ["id", "repo_id", "status", "params", "downloads"] and "sha" in heads  # leads with facts
    first_row = browser.js("[...document.querySelector('table.rows-and-columns tbody tr').children]"
                           ".map(td => td.className.split(' ')[0])")
    assert first_row[:4] == ["col-id", "col-repo_id", "col-status", "col-params"]  # cells moved with headers
    cells = browser.js("[...document.querySelectorAll('td.col-params')].map(td => td.innerText.trim())")
    assert "7B" in cells and "500M" in cells
    links = browser.js("[...document.querySelectorAll('td.col-repo_id a')].map(a => a.href)")
    assert f"https://huggingface.co/{TARGET}" in links
    assert browser.js("!!document.querySelector('a[href=\"/catalog/tokenizers/1\"]')")  # foreign keys still link
    assert browser.js("document.querySelector('.facet-info, .facets') !== null")  # facets still there
    browser.screenshot(tmp_path / "repos.png")
    # Long cells (JSON lists, hashes) neither stretch a row nor push the page past the window.
    browser.call("Emulation.setDeviceMetricsOverride", width=900, height=1000, deviceScaleFactor=1, mobile=False)
    for page in ("/catalog/repos", "/catalog/tokenizers", "/catalog/crawl_runs", f"/drafts?target={TARGET}",
                 f"/drafts?target={TARGET}&engine=llama.cpp", f"/explain?target={TARGET}&draft={NOT_SGLANG[0]}",
                 f"/drafts?target={TARGET}&hardware=H100+SXM&task=prose&draft_quant=F16&engine=llama.cpp"):
        browser.goto(sample_site.base + page)
        sizes = browser.js("({page: document.documentElement.scrollWidth, window: window.innerWidth, "
                           "row: Math.max(0, ...[...document.querySelectorAll('table tbody tr')]"
                           ".map(tr => tr.getBoundingClientRect().height))})")
        assert sizes["page"] <= sizes["window"], (page, sizes)
        assert sizes["row"] <= 160 or not page.startswith("/catalog/"), (page, sizes)  # raw table cells are capped
    browser.call("Emulation.clearDeviceMetricsOverride")
    browser.goto(f"{sample_site.base}/drafts?target={TARGET}&engine=sglang")
    listed = browser.js("[...document.querySelectorAll('#drafts tr.draft')].map(tr => tr.dataset.repo)")
    assert sorted(listed) == sorted(SGLANG_DRAFTS) and not set(listed) & set(NOT_SGLANG)
