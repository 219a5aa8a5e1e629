"""The site answers from the library: /drafts.json == `indexer query --json`, /explain.json == `indexer check --json`.

Datasette runs in-process with the plugin loaded from indexer/site/plugins (as `indexer serve` loads
it), over the demo catalog, the sample catalog and a catalog crawled from ../shared/corpus.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import subprocess
import sys
from urllib.parse import quote, urlencode

import pytest
from click.testing import CliRunner
from conftest import needs_corpus
from markupsafe import escape
from sample_catalog import NOT_SGLANG, SGLANG_DRAFTS, TARGET, build_sample_catalog

from indexer.answer.query import ENGINE_NAMES, ENGINES, run_query
from indexer.cli import cli

PAIRS_PER_CATALOG = 12


class Site:
    """An in-process datasette serving ``db`` immutably, with our metadata and plugin."""

    def __init__(self, db: str):
        from datasette.app import Datasette

        from indexer.jobs.publish import load_metadata
        from indexer.site import PLUGINS_DIR

        self.db = db
        self.ds = Datasette([], immutables=[db], metadata=load_metadata(db.rsplit("/", 1)[-1][:-3]),
                            plugins_dir=str(PLUGINS_DIR))

    def get(self, path: str, **params):
        if params:
            path += "?" + urlencode(params)
        return asyncio.run(self.ds.client.get(path))

    def json(self, path: str, **params):
        r = self.get(path, **params)
        assert r.headers["content-type"].startswith("application/json"), r.text[:500]
        return r.status_code, r.json()


def cli_json(*args) -> tuple[int, dict | None, str]:
    res = CliRunner().invoke(cli, list(args))
    try:
        return res.exit_code, json.loads(res.stdout), res.stderr
    except ValueError:
        return res.exit_code, None, res.stderr


def ok_targets(db: str) -> list[str]:
    import sqlite3

    con = sqlite3.connect(db)
    try:
        return [r for (r,) in con.execute("SELECT repo_id FROM repos WHERE status = 'ok' ORDER BY repo_id")]
    finally:
        con.close()


def assert_site_matches_cli(db: str, *, pairs: int = PAIRS_PER_CATALOG, targets: int | None = None) -> int:
    """Every target (or a seeded sample of ``targets`` of them) x every engine (ranked with near misses, and
    --all), and a sample of explained pairs."""
    site = Site(db)
    every = ok_targets(db)
    assert every
    targets = sorted(random.Random(7).sample(every, targets)) if targets and targets < len(every) else every
    compared = 0
    for target, engine in itertools.product(targets, ENGINES):
        for flags, params in ((["--all"], {"all": "1"}), (["--near-misses"], {"near_misses": "1"})):
            code, expected, err = cli_json("query", "--db", db, "--target", target, "--engine", engine,
                                           *flags, "--json")
            status, got = site.json("/drafts.json", target=target, engine=engine, **params)
            if code == 0:
                assert status == 200 and got == expected, (target, engine, flags)
            else:  # the same one line, as JSON
                assert status >= 400 and got["error"] == err.strip().removeprefix("error: "), (target, engine)
                assert got["exit_code"] == code
            compared += 1
    sample = list(itertools.permutations(every, 2))
    random.Random(10).shuffle(sample)
    for target, draft in sample[:pairs]:
        code, expected, _ = cli_json("check", "--db", db, target, draft, "--json")
        status, got = site.json("/explain.json", target=target, draft=draft)
        assert code in (0, 1) and status == 200 and got == expected, (target, draft)
        compared += 1
    return compared


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("site-sample") / "catalog.db"
    build_sample_catalog(path)
    return str(path)


@pytest.fixture(scope="module")
def demo_db(demo_catalog) -> str:
    return str(demo_catalog)


def test_sample_catalog_agrees_with_the_cli(sample_db):
    assert assert_site_matches_cli(sample_db, pairs=20) >= len(ENGINES) * 2 * 5


def test_demo_catalog_agrees_with_the_cli(demo_db):
    assert assert_site_matches_cli(demo_db) > 0


def outcome(verdict: dict) -> str:
    """The word the pages show for a verdict: the library's outcome when it gives one."""
    return (verdict.get("outcome") or ("works" if verdict["compatible"] else "rejected")).replace("_", " ")


def test_demo_printed_pair_is_what_check_says(demo_db):
    """The issue's first contradiction: the URL `indexer demo` prints must say what `indexer check` says."""
    from indexer.jobs.demo import DEMO_DRAFT_MISMATCH, DEMO_TARGET

    site = Site(demo_db)
    _, expected, _ = cli_json("check", "--db", demo_db, DEMO_TARGET, DEMO_DRAFT_MISMATCH, "--json")
    status, got = site.json("/explain.json", target=DEMO_TARGET, draft=DEMO_DRAFT_MISMATCH)
    assert status == 200 and got == expected
    page = site.get("/explain", target=DEMO_TARGET, draft=DEMO_DRAFT_MISMATCH).text
    for engine, verdict in expected["verdicts"].items():
        row = page.split(f'data-engine="{engine}"', 1)[1].split("</tr>", 1)[0]
        assert f">{outcome(verdict)}</span>" in row and str(escape(verdict["reasons"][0])) in row, engine
    # ... and the drafts each engine's page lists are the CLI's, in the CLI's order (llama.cpp's ±128 window
    # and checked tokenizer pairs included), with the same count in the cross-engine summary.
    counts = {}
    for engine in ENGINES:
        code, expected, err = cli_json("query", "--db", demo_db, "--target", DEMO_TARGET, "--engine", engine,
                                       "--json")
        r = site.get("/drafts", target=DEMO_TARGET, engine=engine)
        if code:  # the engine cannot answer for this target: the page says why, in the CLI's words
            assert r.status_code >= 400 and str(escape(err.strip().removeprefix("error: "))) in r.text
            counts[engine] = None
            continue
        listed = [chunk.split('"', 1)[0] for chunk in r.text.split('<tr class="draft" data-repo="')[1:]]
        assert listed == [d["repo_id"] for d in expected["drafts"]], engine
        counts[engine] = len(listed)
        page = r.text
    # The README's headline answer: the identical mappings, then the same-base drafts whose vocabularies agree;
    # the target's own size (lumen-ai/Lumen-7B) is not a draft.
    assert counts["sglang"] == 3
    summary = page.split('id="summary"', 1)[1].split("</p>", 1)[0]
    for engine, n in counts.items():
        name = ENGINE_NAMES[engine]
        assert (f"{name}: not possible" if n is None else f"{name}</a>: {n} draft") in summary, engine


@needs_corpus
def test_corpus_catalog_agrees_with_the_cli(corpus_crawl):
    # 8 of the 24 targets for the rankings (every pair of them is judged by test_engines_oracle), all for the pairs.
    assert assert_site_matches_cli(corpus_crawl["db"], pairs=24, targets=8) >= len(ENGINES) * 2 * 8 + 24


def test_old_canned_query_urls_redirect(sample_db):
    site = Site(sample_db)
    r = site.get("/catalog/drafts_for_target", target=TARGET, engine="mlx", _shape="array")
    assert r.status_code == 301 and r.headers["location"] == f"/drafts?target={quote(TARGET, safe='')}&engine=mlx"
    r = site.get("/catalog/drafts_for_target.json", target=TARGET, engine="mlx")
    assert r.status_code == 301 and r.headers["location"].startswith("/drafts.json?")
    r = site.get("/catalog/explain_pair.json", target=TARGET, draft=NOT_SGLANG[0])
    assert r.status_code == 301 and r.headers["location"].startswith("/explain.json?target=")
    r = site.get("/catalog/explain_pair", target=TARGET, draft=NOT_SGLANG[0])
    assert r.status_code == 301 and r.headers["location"].startswith("/explain?target=")
    # Following them gives the new answers.
    status, got = site.json(r.headers["location"].replace("/explain?", "/explain.json?"))
    assert status == 200 and got == cli_json("check", "--db", sample_db, TARGET, NOT_SGLANG[0], "--json")[1]


def test_bad_requests_get_one_line(sample_db, tmp_path, monkeypatch):
    site = Site(sample_db)
    status, got = site.json("/drafts.json", target="nobody/nothing")
    code, _, err = cli_json("query", "--db", sample_db, "--target", "nobody/nothing", "--json", "--offline")
    # The site never asks the Hub; the CLI's words are the site's, then why it did not ask the Hub.
    cli_words = err.strip().removeprefix("error: ")
    assert status == 404 and cli_words.startswith(got["error"] + "; the Hub is not asked offline") \
        and got["exit_code"] == code == 3
    status, got = site.json("/drafts.json", target=TARGET, engine="tensorrt")
    assert status == 400 and "unknown engine" in got["error"] and "\n" not in got["error"]
    status, got = site.json("/drafts.json")
    assert status == 400 and "target" in got["error"]
    status, got = site.json("/drafts.json", target=TARGET, limit="many")
    assert status == 400 and "limit" in got["error"]
    for path in ("/etc", "./data", "~/models", "a/../../etc", "C:\\models"):  # never the server's disk
        status, got = site.json("/drafts.json", target=path)
        assert status == 400 and "not a path" in got["error"]
        status, got = site.json("/explain.json", target=TARGET, draft=path)
        assert status == 400 and "not a path" in got["error"]
    # A repo id that also names a file or directory on the server is answered as a repo id, exactly as one
    # that names nothing there: the answer must not tell which paths exist.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models" / "llama").mkdir(parents=True)
    (tmp_path / "models" / "llama" / "config.json").write_text("{}")
    for existing, missing in (("models/llama", "models/alpaca"), ("models", "modelz")):
        for page in ("/drafts.json", "/explain.json"):
            args = {"target": TARGET, "draft": existing} if page == "/explain.json" else {"target": existing}
            status, got = site.json(page, **args)
            args = {"target": TARGET, "draft": missing} if page == "/explain.json" else {"target": missing}
            status2, got2 = site.json(page, **args)
            assert status == status2 == 404 and got["error"].replace(existing, missing) == got2["error"]
    # Long or strange input: one line and 400, never a 500.
    for bad, words in (("a" * 10_000, "not a path"), ("ab\x1b[31mred", "control characters"), (" ", "give ?target")):
        status, got = site.json("/drafts.json", target=bad)
        assert status == 400 and words in got["error"] and "\x1b" not in got["error"] and len(got["error"]) < 300
        r = site.get("/drafts", target=bad)
        assert r.status_code == (400 if bad.strip() else 200) and "Traceback" not in r.text  # blank: the form
    status, got = site.json("/drafts.json", target=TARGET, limit="99999999999999999999")
    assert status == 400 and "limit" in got["error"]
    status, got = site.json("/explain.json", target=TARGET, draft="nobody/nothing")
    assert status == 404 and "draft" in got["error"] and "nobody/nothing" in got["error"]
    r = site.get("/drafts", target="nobody/nothing")
    from indexer.site.hooks import code_spans  # the CLI's words, each `span` a <code>

    assert r.status_code == 404 and str(code_spans(cli_words.split("; the Hub is not asked")[0])) in r.text
    assert "<code>indexer crawl --model nobody/nothing</code>" in r.text
    assert "Traceback" not in r.text


def test_drafts_page_shows_words_ratio_reasons_launch_and_near_misses(sample_db):
    site = Site(sample_db)
    _, expected, _ = cli_json("query", "--db", sample_db, "--target", TARGET, "--near-misses", "--json")
    page = site.get("/drafts", target=TARGET, engine="sglang").text
    for d in expected["drafts"]:
        assert f'href="https://huggingface.co/{d["repo_id"]}"' in page
        assert str(escape(d["launch"])) in page
        for reason in d["reasons"]:
            assert str(escape(reason)) in page
    assert "7B" in page and "500M" in page and "1/14" in page and 'class="copy"' in page
    assert f"/explain?target={quote(TARGET, safe='')}&amp;draft=" in page
    assert 'id="near-misses"' in page and NOT_SGLANG[0] in page and "fix" in page.lower()
    mlx = len(run_query(TARGET, engine="mlx", db=sample_db)["drafts"])
    assert 'id="summary"' in page and f"{ENGINE_NAMES['mlx']}</a>: {mlx} draft" in page
    for d in SGLANG_DRAFTS:
        assert d in page


def test_completion_is_case_insensitive_and_ranks_ok_repos(sample_db):
    site = Site(sample_db)
    status, got = site.json("/-/indexer/repos.json", q="BIG-7b")
    ids = [r["repo_id"] for r in got["repos"]]
    assert status == 200 and ids == [TARGET, "acme/Big-7B-gguf"]
    assert got["repos"][1]["status"] == "no_tokenizer"
    assert site.json("/-/indexer/repos.json", q="100%_")[1] == {"repos": []}


def test_home_asks_the_questions_first_and_tables_keep_human_labels(sample_db):
    site = Site(sample_db)
    home = site.get("/").text
    assert home.index('id="questions"') < home.index("Browse the raw tables") < home.index("repo_classes")
    assert 'action="/drafts"' in home and 'action="/explain"' in home and 'name="repo_id__contains"' in home
    assert 'href="/about"' in home and "https://github.com/" not in home
    assert site.get("/about").status_code == 200
    table = site.get("/catalog/repos", status="ok").text
    assert f'<a href="https://huggingface.co/{TARGET}"' in table and ">7B</span>" in table
    assert f">{'0' * 40}<" not in table and f'title="{"0" * 40}">000000000000…' in table  # full sha in the title
    assert "Column descriptions" in table  # collapsed behind <details> by the plugin's script
    raw = site.json("/catalog/repos.json", _shape="array", repo_id=TARGET)[1]
    assert raw[0]["params"] == 7 * 10**9  # JSON keeps the raw value
    search = site.get("/catalog/repos", repo_id__contains="small").text
    assert SGLANG_DRAFTS[0] in search and TARGET not in search.split("<tbody>", 1)[1]


def test_the_method_drop_down_lists_every_method_the_query_takes(sample_db, monkeypatch):
    from indexer.answer import query

    site = Site(sample_db)
    page = site.get("/drafts", target=TARGET).text
    assert 'id="method"' in page
    assert all(f'<option value="{m}">' in page for m in query.METHODS), query.METHODS
    monkeypatch.setattr(query, "METHODS", ("draft", "eagle3"))
    page = site.get("/drafts").text
    assert 'id="method"' in page and '<option value="eagle3">eagle3</option>' in page
    assert '<option value="dflash">' not in page
    status, got = site.json("/drafts.json", target=TARGET, method="medusa")
    assert status == 400 and "medusa" in got["error"]


def test_an_estimated_size_reads_as_words_in_the_heading():
    """'~7B parameters (estimated from the name)', not '~7B estimated from the name parameters'."""
    import re

    from jinja2 import DictLoader, Environment

    from indexer.site.hooks import prepare_jinja2_environment

    env = Environment(loader=DictLoader({"t.html": '{% import "_indexer_macros.html" as m %}'
                                                   '{{ m.params(t, " parameters") }}|{{ m.params(t) }}'}))
    prepare_jinja2_environment(env, None)
    for source, words in (("name", "~7B parameters (estimated from the name)"), ("safetensors", "7B parameters")):
        heading, cell = env.get_template("t.html").render(t={"params": 7 * 10**9, "params_source": source}).split("|")
        assert re.sub(r"<[^>]+>", "", heading).strip() == words
        assert "parameters" not in re.sub(r"<[^>]+>", "", cell)  # table cells: the column says the unit


def test_importing_the_hooks_first_leaves_datasette_its_error_handler():
    """A process that imports the site's hooks before datasette's plugin list (a test, a script) still has datasette's
    own exception handler registered: without it every failing query is a 500."""
    probe = ("import indexer.site.hooks\nfrom datasette.plugins import pm\n"
             "print(' '.join(i.plugin_name for i in pm.hook.handle_exception.get_hookimpls()))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.stdout.split() == ["datasette.handle_exception"], proc.stderr[-500:]


def test_a_visitors_failing_sql_is_answered_not_logged(sample_db, capfd):
    """A visitor's refused or failing query is a 400 with its reason, and writes nothing to the server's output
    (datasette printed each one with every frame's locals, 80 KB a query)."""
    site, name = Site(sample_db), sample_db.rsplit("/", 1)[-1][:-3]
    capfd.readouterr()
    endless = "with recursive c(i) as (select 1 union all select i + 1 from c) select count(*) from c"
    for query in ("select * from no_such_table", "select zeroblob(10)", endless):
        r = site.get(f"/{name}.json", sql=query)
        assert r.status_code == 400 and r.json()["ok"] is False, (query, r.text[:300])
    assert "took too long" in r.json()["error"]
    out, err = capfd.readouterr()
    assert len(out) + len(err) < 1000 and "Traceback" not in out + err, (out + err)[:500]


def test_a_visitors_sql_is_bounded_and_sees_no_server_path(sample_db):
    """zeroblob/randomblob refused, no value over 1 MiB (site/hooks.py prepare_connection), and the catalog's
    absolute path in neither /-/databases.json nor pragma_database_list()."""
    from indexer.site.hooks import MAX_VALUE_BYTES

    site, name = Site(sample_db), sample_db.rsplit("/", 1)[-1][:-3]
    directory = sample_db.rsplit("/", 1)[0]

    def sql(query):
        r = site.get(f"/{name}.json", sql=query, _shape="array")
        return r.status_code, r.text

    for query in ("select length(zeroblob(999000000)) as n", "select hex(randomblob(999000000)) as n",
                  "select length(ZEROBLOB(10)) as n"):
        status, text = sql(query)
        assert status == 400 and "not authorized" in text, (query, text[:300])
    status, text = sql(f"select length(printf('%.*c', {MAX_VALUE_BYTES + 1}, 'x')) as n")
    assert status == 200 and json.loads(text) == [{"n": None}]  # over the limit: NULL
    status, text = sql(f"select length(printf('%.*c', {MAX_VALUE_BYTES // 2}, 'x')) as n")
    assert status == 200 and json.loads(text) == [{"n": MAX_VALUE_BYTES // 2}]
    status, text = sql("select 1 as n from repos limit 1")
    assert status == 200 and json.loads(text) == [{"n": 1}]  # an ordinary query is untouched
    status, text = sql("select name, file from pragma_database_list()")
    assert status == 200 and json.loads(text)[0] == {"name": "main", "file": None}, text
    r = site.get("/-/databases.json")
    assert r.status_code == 200 and [d["path"] for d in r.json() if d["name"] == name] == [f"{name}.db"]
    assert directory not in r.text and directory not in site.get("/-/databases").text


def _visible_text(html: str) -> str:
    import re
    from html import unescape

    html = re.sub(r"<(script|style)\b.*?</\1>", "", html, flags=re.S)
    return unescape(re.sub(r"<[^>]+>", " ", html))


def test_no_page_shows_a_literal_backtick_and_a_gated_repo_links_no_drafts_page(demo_db):
    """The CLI's `code` spans are <code> on the pages (never a backtick a visitor reads), the footer's source
    included; a gated repo nobody could read links its Hub page only, and asked for anyway, the page's next step is
    a <code> command, not a backtick-quoted one."""
    gated = "corvid-labs/Corvid-70B-Instruct"
    site = Site(demo_db)
    for path, params in [("/", {}), ("/about", {}), ("/drafts", {}), ("/drafts", {"target": TARGET}),
                         ("/drafts", {"target": "lumen-ai/Lumen-7B-Instruct", "hardware": "M4 Max",
                                      "engine": "sglang"}),
                         ("/drafts", {"target": gated}), ("/explain", {"target": gated, "draft": TARGET}),
                         (f"/{demo_db.rsplit('/', 1)[-1][:-3]}/repos", {})]:
        r = site.get(path, **params)
        assert "`" not in _visible_text(r.text), (path, params)
    r = site.get("/drafts", target=gated)
    assert r.status_code == 404 and f"<code>indexer crawl --model {gated}</code>" in r.text
    table = site.get(f"/{demo_db.rsplit('/', 1)[-1][:-3]}/repos").text
    assert f'href="https://huggingface.co/{gated}"' in table
    assert quote(gated, safe="") not in table and f"target={gated}" not in table  # no drafts link for it


def test_an_engine_off_the_device_names_the_device_of_its_command(demo_db):
    """SGLang asked on a Mac: the page says so, and that its command is the setup estimated on H100 SXM (the one
    `indexer query --hardware "H100 SXM"` prints), as the CLI says."""
    from indexer.jobs.demo import DEMO_TARGET

    site = Site(demo_db)
    r = site.get("/drafts", target=DEMO_TARGET, engine="sglang", hardware="M4 Max")
    assert r.status_code == 200 and "Not on M4 Max:" in r.text
    assert "The command below runs the setup estimated on H100 SXM." in r.text
    _, there, _ = cli_json("query", "--db", demo_db, "--target", DEMO_TARGET, "--engine", "sglang", "--hardware",
                           "H100 SXM", "--json")
    assert f'<code id="best-launch">{escape(there["drafts"][0]["launch"])}</code>' in r.text
