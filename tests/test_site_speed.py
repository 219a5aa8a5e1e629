"""The site's speed question: /drafts and /explain take the CLI's speed options and give its answer.

The same in-process datasette as tests/test_site.py, over the demo catalog: /drafts.json == `indexer query --json`
and /explain.json == `indexer check --json` with the same --hardware, --task, --quant, --draft-quant,
--draft-tokens, --bandwidth; bad names are the CLI's one line with HTTP 400; the page has the pickers and the
speed-up column.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from markupsafe import escape
from test_site import Site, cli_json

from indexer.jobs.demo import DEMO_TARGET
from indexer.site.hooks import code_spans
from indexer.speed.hardware import DEVICES

# URL parameters and the CLI options they stand for.
FLAGS = {"hardware": "--hardware", "task": "--task", "quant": "--quant", "draft_quant": "--draft-quant",
         "draft_tokens": "--draft-tokens", "bandwidth": "--bandwidth"}
QUESTIONS = (  # (engine, speed parameters)
    ("llama.cpp", {"hardware": "M4 Max", "task": "code"}),
    ("llama.cpp", {"hardware": "H100 SXM", "task": "prose", "draft_quant": "F16"}),  # every draft slower
    ("llama.cpp", {"hardware": "rtx-3090", "quant": "q8_0", "draft_tokens": "3"}),  # a name as people write it
    ("sglang", {"hardware": "H100 SXM", "task": "reasoning"}),
    ("sglang", {"hardware": "M4 Max"}),  # SGLang does not run on a Mac: no figure, and why
    ("mlx", {"task": "chat"}),  # the reference devices
    ("vllm", {"hardware": "RTX 4090", "bandwidth": "500"}),
)


def flags(params: dict) -> list[str]:
    return [x for k, v in params.items() for x in (FLAGS[k], v)]


@pytest.fixture(scope="module")
def site(demo_catalog) -> Site:
    return Site(str(demo_catalog))


def ranked(answer: dict) -> list[tuple]:
    return [(d["repo_id"], (d["speedup"] or {}).get("estimate")) for d in answer["drafts"]]


def test_drafts_json_is_query_json_with_the_same_speed_options(site):
    slower = 0
    for engine, params in QUESTIONS:
        code, expected, err = cli_json("query", "--db", site.db, "--target", DEMO_TARGET, "--engine", engine,
                                       *flags(params), "--json")
        status, got = site.json("/drafts.json", target=DEMO_TARGET, engine=engine, **params)
        assert code == 0 and status == 200, (engine, params, err)
        # The drafts, their order and their expected speed-ups first (the words), then the whole answer.
        assert ranked(got) == ranked(expected) and ranked(got), (engine, params)
        assert got == expected, (engine, params)
        first = got["drafts"][0]["speedup"]
        if "hardware" in params:
            assert first["hardware"].startswith({"rtx-3090": "RTX 3090"}.get(params["hardware"], params["hardware"]))
        if first.get("estimate") is None:
            assert "does not run on" in first["why"]
        else:
            assert first["task"] == params.get("task", "chat")
        slower += sum(bool((d["speedup"] or {}).get("slower")) for d in got["drafts"])
    assert slower  # the slower-than-no-draft path is among the questions asked


def test_the_site_ranks_by_the_speed_question(site):
    """A different device or task gives a different answer, not the defaults: the parameters reach the model."""
    _, on_mac = site.json("/drafts.json", target=DEMO_TARGET, engine="llama.cpp", hardware="M4 Max", task="code")
    _, on_h100 = site.json("/drafts.json", target=DEMO_TARGET, engine="llama.cpp", hardware="H100 SXM",
                           task="prose", draft_quant="F16")
    assert ranked(on_mac) != ranked(on_h100)
    assert all(d["speedup"]["hardware"] == "M4 Max" and not d["speedup"]["slower"] for d in on_mac["drafts"][:1])
    assert all(d["speedup"]["slower"] for d in on_h100["drafts"])
    _, fixed = site.json("/drafts.json", target=DEMO_TARGET, engine="llama.cpp", draft_tokens="5")
    assert {d["speedup"]["draft_tokens"] for d in fixed["drafts"]} == {5}
    assert all("--spec-draft-n-max 5" in d["launch"] for d in fixed["drafts"])


def test_explain_json_is_check_json_with_the_same_speed_options(site):
    from indexer.jobs.demo import DEMO_DRAFT_MISMATCH

    for draft in ("lumen-ai/Lumen-0.5B-Instruct", DEMO_DRAFT_MISMATCH):
        for params in ({"hardware": "RTX 4090", "task": "code"}, {"hardware": "m1 max", "quant": "8bit"}, {}):
            code, expected, err = cli_json("check", "--db", site.db, DEMO_TARGET, draft, *flags(params), "--json")
            status, got = site.json("/explain.json", target=DEMO_TARGET, draft=draft, **params)
            assert code in (0, 1) and status == 200 and got == expected, (draft, params, err)
    # Every engine that runs the pair has its speed-up lines; the reference devices without --hardware.
    runs = [v for v in got["verdicts"].values() if v.get("speedups")]
    assert runs and all(len(v["speedups"]) >= 1 and v["speedup"] == v["speedups"][0] for v in runs)


@pytest.mark.parametrize("param,value,words", [
    ("hardware", "M4 Maxx", "unknown hardware 'M4 Maxx'; closest: M4 Max"),
    ("hardware", "TPU v5", "unknown hardware 'TPU v5'"),
    ("quant", "Q4_K_Q", "unknown quantization 'Q4_K_Q'; closest:"),
    ("draft_quant", "int3", "unknown quantization 'int3'"),
])
def test_an_unknown_name_is_the_clis_one_line_with_status_400(site, param, value, words):
    code, _, err = cli_json("query", "--db", site.db, "--target", DEMO_TARGET, FLAGS[param], value, "--json")
    cli_words = err.strip().removeprefix("error: ")
    assert code == 2 and cli_words.startswith(words) and "\n" not in cli_words
    for page in ("/drafts.json", "/explain.json"):
        status, got = site.json(page, target=DEMO_TARGET, draft="lumen-ai/Lumen-0.5B", **{param: value})
        assert status == 400 and got == {"error": cli_words, "exit_code": 2}, page
    r = site.get("/drafts", target=DEMO_TARGET, **{param: value})
    assert r.status_code == 400 and str(code_spans(cli_words)) in r.text and "Traceback" not in r.text
    assert 'id="hardware"' in r.text  # the form stays, to pick again


def test_other_bad_speed_parameters_are_one_line(site):
    for params, words in (({"task": "poetry"}, "unknown task 'poetry'; choose one of code, chat, prose, reasoning"),
                          ({"draft_tokens": "0"}, "draft_tokens must be between 1 and 64"),
                          ({"draft_tokens": "65"}, "draft_tokens must be between 1 and 64"),
                          ({"draft_tokens": "many"}, "draft_tokens 'many' is not a number"),
                          ({"bandwidth": "fast"}, "bandwidth 'fast' is not a number (GB/s)"),
                          ({"bandwidth": "0.5"}, "bandwidth must be at least 1 (GB/s)"),
                          ({"bandwidth": "nan"}, "bandwidth must be at least 1 (GB/s)")):
        status, got = site.json("/drafts.json", target=DEMO_TARGET, **params)
        assert status == 400 and got == {"error": words, "exit_code": 2}, params
    # Blank is not given: the form's "reference devices" and empty boxes ask what the CLI asks without options.
    _, expected, _ = cli_json("query", "--db", site.db, "--target", DEMO_TARGET, "--json")
    status, got = site.json("/drafts.json", target=DEMO_TARGET, hardware="", task="", quant=" ", draft_tokens="")
    assert status == 200 and got == expected


def test_drafts_page_has_the_pickers_and_the_speed_up_column(site):
    params = {"hardware": "m4 max", "task": "code"}  # as a person writes it
    _, expected, _ = cli_json("query", "--db", site.db, "--target", DEMO_TARGET, "--engine", "llama.cpp",
                              *flags(params), "--json")
    page = site.get("/drafts", target=DEMO_TARGET, engine="llama.cpp", **params).text
    picker = page.split('<select id="hardware" name="hardware">', 1)[1].split("</select>", 1)[0]
    options = re.findall(r'<option value="([^"]*)"', picker)
    assert options == ["", *(d.name for d in DEVICES)]
    assert '<option value="">reference devices (H100 SXM, RTX 4090, M4 Max)</option>' in picker
    assert '<option value="M4 Max" selected>' in picker and picker.count(" selected") == 1
    tasks = page.split('<select id="task" name="task">', 1)[1].split("</select>", 1)[0]
    assert re.findall(r'<option value="([^"]*)"', tasks) == ["code", "chat", "prose", "reasoning"]
    assert '<option value="code" selected>' in tasks
    assert "<th>Speed-up<br><small>(M4 Max, code)</small></th>" in page
    rows = page.split('<tr class="draft" data-repo="')[1:]
    assert [r.split('"', 1)[0] for r in rows] == [d["repo_id"] for d in expected["drafts"]]  # the CLI's order
    for row, d in zip(rows, expected["drafts"]):
        s = d["speedup"]
        cell = re.sub(r"<[^>]+>", "", row.split('class="speedup-cell">', 1)[1].split("</td>", 1)[0])
        slower = " slower than no draft" if s["slower"] else ""
        assert cell == f"≈{s['estimate']:.1f}× ({s['low']:.1f}–{s['high']:.1f}×){slower}"
    best = expected["drafts"][0]
    n = best["speedup"]["draft_tokens"]
    assert f"--spec-draft-n-max {n}" in best["launch"]
    block = page.split('id="best"', 1)[1].split("</div>", 1)[0]
    assert f"({n} draft token{'' if n == 1 else 's'})" in block and str(escape(best["launch"])) in block
    assert "Expected speed-up (ranked by it): ≈" in block and "on M4 Max" in block
    # Links out of the page keep the speed question: the JSON, the other engines, each explain.
    assert "&amp;hardware=m4+max&amp;task=code" in page.split('id="summary"', 1)[1].split("</p>", 1)[0]
    assert f"/explain?target={quote(DEMO_TARGET, safe='')}&amp;draft=" in page and \
        "&amp;hardware=m4+max&amp;task=code\">explain</a>" in page


def test_a_slower_draft_is_marked_and_never_offered_as_paying(site):
    params = {"hardware": "H100 SXM", "task": "prose", "draft_quant": "F16"}
    _, expected, _ = cli_json("query", "--db", site.db, "--target", DEMO_TARGET, "--engine", "llama.cpp",
                              *flags(params), "--json")
    assert expected["drafts"] and all(d["speedup"]["slower"] for d in expected["drafts"])
    page = site.get("/drafts", target=DEMO_TARGET, engine="llama.cpp", **params).text
    rows = page.split('<tr class="draft" data-repo="')[1:]
    assert rows and all("slower than no draft" in r.split("</tr>", 1)[0] for r in rows)
    block = page.split('id="best"', 1)[1].split("</div>", 1)[0]
    assert "No draft is expected to pay on H100 SXM" in block and "Launch with the best draft" not in block
    assert '<details class="speed-more" open>' in page and 'value="F16"' in page  # what was asked stays shown


def test_explain_page_shows_each_engines_speed_up(site):
    from indexer.answer.speedup import words

    params = {"hardware": "RTX 4090", "task": "code"}
    draft = "lumen-ai/Lumen-0.5B-Instruct"
    _, expected, _ = cli_json("check", "--db", site.db, DEMO_TARGET, draft, *flags(params), "--json")
    page = site.get("/explain", target=DEMO_TARGET, draft=draft, **params).text
    shown = 0
    for engine, v in expected["verdicts"].items():
        row = page.split(f'data-engine="{engine}"', 1)[1].split("</tr>", 1)[0]
        for s in v.get("speedups") or []:
            assert f"speed-up: {escape(words(s))}" in row, engine
            shown += 1
    assert shown >= 4
    assert '<option value="RTX 4090" selected>' in page


def test_old_canned_query_urls_keep_the_speed_question(site):
    r = site.get("/catalog/drafts_for_target.json", target=DEMO_TARGET, hardware="M4 Max", task="code")
    assert r.status_code == 301 and "hardware=M4+Max&task=code" in r.headers["location"]
    r = site.get("/catalog/explain_pair", target=DEMO_TARGET, draft="a/b", quant="Q8_0", draft_tokens="4")
    assert r.status_code == 301 and "quant=Q8_0&draft_tokens=4" in r.headers["location"]
