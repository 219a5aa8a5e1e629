"""datasette hooks: the question pages, the redirects from the old canned queries, human cell labels."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from functools import partial
from urllib.parse import urlencode

from datasette import hookimpl
from datasette.plugins import pm
from datasette.utils.asgi import Response
from datasette.views.special import JsonDataView
from jinja2 import ChoiceLoader, FileSystemLoader
from markupsafe import Markup, escape

from .. import __version__
from ..answer import query
from ..answer.query import fmt_params, fmt_ratio
from ..answer.speedup import words
from ..engines import DEFAULT_ENGINE
from ..errors import IndexerError
from ..speed.hardware import DEVICES, REFERENCE, lookup
from ..speed.model import DEFAULT_TASK, TASKS
from ..vocab.agreement import percent
from . import (
    SPEED_ARGS,
    STATIC_DIR,
    TEMPLATES_DIR,
    SiteError,
    drafts,
    drafts_with_summary,
    explain,
    hub_url,
    speed_query,
)

SHORT_HASH = 12
HASH_COLUMNS = {"sha", "sha256", "vocab_sha256", "base_vocab_sha256", "blob_id", "config_blob", "key",
                "class_key", "draft_vocab_sha256", "target_vocab_sha256"}
PARAM_COLUMNS = {"params"}
COUNT_COLUMNS = {"downloads", "likes", "members", "repo_count", "vocab_len", "tli_intersection"}
REPO_ID_TABLES = {"repos"}
LIST_COLUMNS = {"tags", "architectures"}
# The repos table page leads with what a person looks for; every other column follows, in schema order.
FIRST_COLUMNS = {"repos": ("id", "repo_id", "status", "params", "downloads", "family", "author", "vocab_size",
                           "vocab_size_transformers", "tokenizer_id", "is_chat", "gated", "reason")}
COMPLETION_LIMIT = 20
# What one visitor's SQL may cost (the time is datasette's sql_time_limit_ms, jobs/publish.py DATASETTE_SETTINGS):
# no string or blob longer than this, in a result or on the way to one (SQLite's SQLITE_LIMIT_LENGTH, which also
# refuses a bigger cell a pulled catalog may hold); the crawl writes no cell near it (a tokenizer's added tokens,
# the longest, are tens of KB). With max_returned_rows, a query's rows stay under about 100 MB.
MAX_VALUE_BYTES = 1 << 20
BIG_ALLOCATIONS = ("zeroblob", "randomblob")  # their one argument is the size: refused outright
KEPT_QUERY_ARGS = {"drafts": ("target", "engine", "method", "all", "near_misses", "limit", *SPEED_ARGS),
                   "explain": ("target", "draft", *SPEED_ARGS)}


def catalog_database(datasette):
    """The served catalog: the first database backed by a file (``indexer serve`` serves one)."""
    for name, db in datasette.databases.items():
        if db.path and not name.startswith("_"):
            return name, db
    raise SiteError("no catalog is being served", 500)


def _args(request) -> dict:
    return {k: request.args.get(k) for k in request.args.keys()}


async def _call(fn, *args):
    return await asyncio.get_running_loop().run_in_executor(None, partial(fn, *args))


def _json(payload, status: int = 200) -> Response:
    # Same serialisation as the CLI's print_json (indent 2, non-ASCII kept, str() for the rest).
    body = json.dumps(payload, indent=2, ensure_ascii=False, default=str)
    return Response(body, status=status, content_type="application/json; charset=utf-8")


def _engines():

    return [(e, query.ENGINE_NAMES.get(e, e)) for e in query.ENGINES]


def _methods():
    return list(query.METHODS)


def _speed_form(args: dict) -> dict:
    """The speed pickers' choices (every device of ``speed.hardware.DEVICES``, the tasks) and the speed parameters
    the request gave, as a query-string tail for the page's links."""
    given = speed_query(args)
    devices: dict[str, list[str]] = {}  # kind -> names, in DEVICES' order
    for d in DEVICES:
        devices.setdefault(d.kind, []).append(d.name)
    hardware = given.get("hardware", "")
    if hardware:
        try:
            hardware = lookup(hardware).name  # "m4 max" selects "M4 Max"
        except IndexerError:
            pass  # the page says why; the picker keeps what was typed
    return {"devices": devices, "hardware": hardware, "hardware_listed": any(d.name == hardware for d in DEVICES),
            "reference_devices": ", ".join(REFERENCE), "tasks": TASKS,
            "task": given.get("task") or DEFAULT_TASK, "speed_qs": ("&" + urlencode(given)) if given else "",
            "more_speed": any(k in given for k in ("bandwidth", "device_kind", "quant", "draft_quant", "draft_tokens"))}


async def drafts_json(request, datasette):
    """``GET /drafts.json``: the JSON of ``indexer query``, errors with their own HTTP status."""
    try:
        _, db = catalog_database(datasette)
        return _json(await _call(drafts, str(db.path), _args(request)))
    except IndexerError as e:
        return _json(e.to_dict(), e.http_status)


async def explain_json(request, datasette):
    """``GET /explain.json``: the JSON of ``indexer check``, errors with their own HTTP status."""
    try:
        _, db = catalog_database(datasette)
        return _json(await _call(explain, str(db.path), _args(request)))
    except IndexerError as e:
        return _json(e.to_dict(), e.http_status)


async def drafts_page(request, datasette):
    """``GET /drafts``: the question form and, given a target, its drafts as a page."""
    args = _args(request)
    ctx = {"args": args, "engines": _engines(), "methods": _methods(), "result": None, "error": None,
           "summary": None, "engine": args.get("engine") or DEFAULT_ENGINE, **_speed_form(args)}
    status = 200
    if (args.get("target") or "").strip():
        try:
            _, db = catalog_database(datasette)
            ctx["result"], ctx["summary"] = await _call(drafts_with_summary, str(db.path), args)
        except IndexerError as e:
            ctx["error"], status = e.message, e.http_status
    return Response.html(await datasette.render_template("indexer_drafts.html", ctx, request=request),
                         status=status)


async def explain_page(request, datasette):
    """``GET /explain``: the pair form and, given a target and a draft, the check as a page."""
    args = _args(request)
    ctx = {"args": args, "result": None, "error": None, "engine_names": query.ENGINE_NAMES, **_speed_form(args)}
    status = 200
    if args.get("target") or args.get("draft"):
        try:
            _, db = catalog_database(datasette)
            ctx["result"] = await _call(explain, str(db.path), args)
        except IndexerError as e:
            ctx["error"], status = e.message, e.http_status
    return Response.html(await datasette.render_template("indexer_explain.html", ctx, request=request),
                         status=status)


async def about_page(request, datasette):
    """``GET /about``: what the site answers, with this version and the engines."""
    return Response.html(await datasette.render_template(
        "indexer_about.html", {"version": __version__, "engines": _engines()}, request=request))


async def repo_completion(request, datasette):
    """``/-/indexer/repos.json?q=TEXT``: repo ids containing TEXT (case-insensitive), for the target box."""
    text = (request.args.get("q") or "").strip()
    if not text:
        return _json({"repos": []})
    try:
        name, _ = catalog_database(datasette)
    except IndexerError as e:
        return _json(e.to_dict(), e.http_status)
    like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    prefix = like[1:]
    rows = await datasette.get_database(name).execute(
        "SELECT repo_id, status, params, downloads FROM repos WHERE repo_id LIKE :like ESCAPE '\\' "
        "ORDER BY (status = 'ok') DESC, (repo_id LIKE :prefix ESCAPE '\\' "
        "OR substr(repo_id, instr(repo_id, '/') + 1) LIKE :prefix ESCAPE '\\') DESC, "
        "COALESCE(downloads, 0) DESC, repo_id LIMIT :n",
        {"like": like, "prefix": prefix, "n": COMPLETION_LIMIT})
    return _json({"repos": [dict(r) for r in rows]})


async def site_css(request, datasette):
    """``GET /-/indexer/site.css``: the plugin's stylesheet, cached an hour."""
    return Response((STATIC_DIR / "site.css").read_text("utf-8"), content_type="text/css; charset=utf-8",
                    headers={"Cache-Control": "max-age=3600"})


def _redirect(page: str):
    async def view(request, datasette):
        fmt = request.url_vars.get("fmt") or ""
        keep = {k: v for k, v in _args(request).items() if k in KEPT_QUERY_ARGS[page] and v is not None}
        target = datasette.urls.path(f"/{page}{fmt}") + (f"?{urlencode(keep)}" if keep else "")
        return Response.redirect(target, status=301)

    return view


@hookimpl
def register_routes(datasette):
    """Plugin routes are matched before datasette's own (datasette 0.65 app.py:1219-1229), so the old
    canned-query URLs reach the redirects instead of the database's query view."""
    return [
        (r"^/drafts\.json$", drafts_json),
        (r"^/drafts$", drafts_page),
        (r"^/explain\.json$", explain_json),
        (r"^/explain$", explain_page),
        (r"^/about$", about_page),
        (r"^/-/indexer/repos\.json$", repo_completion),
        (r"^/-/indexer/site\.css$", site_css),
        (r"^/-/databases(\.(?P<format>json))?$", JsonDataView.as_view(datasette, "databases.json",
                                                                     partial(databases_json, datasette))),
        # Links already shared to the old canned queries keep working.
        (r"^/(?P<db>[^/]+)/drafts_for_target(?P<fmt>\.json)?$", _redirect("drafts")),
        (r"^/(?P<db>[^/]+)/explain_pair(?P<fmt>\.json)?$", _redirect("explain")),
    ]


@hookimpl
def startup(datasette):
    """Visitors' errors are answered, not logged with every frame's locals: datasette 0.65 handle_exception.py:25-26
    prints each exception a request raises through rich when rich is installed (typer brings it), so one
    timed-out or refused ``?sql=`` query wrote 80 KB to the server's log. A 500 still prints its plain
    traceback (:41-44). Read through the plugin manager: importing that module first would leave datasette's
    plugin list (plugins.py:31-33, which imports it) registering it half-made, without its handler."""
    pm.get_plugin("datasette.handle_exception").rich = None


@hookimpl
def prepare_connection(conn):
    """Every connection datasette opens (datasette 0.65 hookspecs.py:16): bound the memory one query may take and
    hide the server's paths from visitors' SQL."""
    if hasattr(conn, "setlimit"):  # Python 3.11+
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    conn.set_authorizer(_authorize)


def _authorize(action, arg1, arg2, _db, _trigger) -> int:
    """SQLite's authorizer: zeroblob(N) and randomblob(N) refused; ``pragma_database_list``'s ``file`` column (the
    catalog's absolute path; datasette allows the pragma function in a visitor's SQL) reads as NULL."""
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in BIG_ALLOCATIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_READ and arg1 == "pragma_database_list" and arg2 == "file":
        return sqlite3.SQLITE_IGNORE
    return sqlite3.SQLITE_OK


def databases_json(datasette):
    """``/-/databases.json`` (datasette 0.65 app.py:917-930) with each file's name, not its absolute path."""
    return [{**d, "path": os.path.basename(d["path"]) if d.get("path") else d.get("path")}
            for d in datasette._connected_databases()]


@hookimpl
def prepare_jinja2_environment(env, datasette):
    """Put the plugin's templates first (index.html override, the question pages) and add filters."""
    env.loader = ChoiceLoader([FileSystemLoader(str(TEMPLATES_DIR)), env.loader])
    env.filters["params"] = fmt_params
    env.filters["ratio"] = fmt_ratio
    env.filters["hub_url"] = hub_url
    env.filters["short_hash"] = lambda v: (v or "")[:SHORT_HASH]
    env.filters["speedup_words"] = _speedup_words
    env.filters["code"] = code_spans
    env.filters["plain"] = lambda text: str(text or "").replace("`", "")  # in an attribute: no markup, no backticks
    env.filters["agree_pct"] = _agree_pct


def code_spans(text) -> Markup:
    """The answer's words as HTML: escaped, each `span` in backticks a <code> element (never a literal
    backtick on the page; an unpaired one stays as it is)."""
    if text is None:
        return Markup("")
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an odd number of backticks: the last one has no pair
        last = parts.pop()
        parts[-1] += "`" + last
    return Markup("".join(f"<code>{escape(p)}</code>" if i % 2 else str(escape(p)) for i, p in enumerate(parts)))


def _agree_pct(a: dict) -> str:
    """A draft's agreement figure as the CLI words it: never 100.0% while tokens differ."""
    share = a["text_agreement"] if a["text_agreement"] is not None else a["ids_agreement"]
    return percent(share, bool(a["differing_ids"]))


def _speedup_words(s: dict) -> str:
    """check's speed-up line (answer/speedup.py ``words``), loaded when a page shows one."""
    return words(s)


def _hub_link(repo_id: str, datasette, status: str | None = None) -> Markup:
    """The repo's Hub page, and its drafts page unless the catalog holds no files of it (a gated repo nobody
    could read: that page would only say so)."""
    hub = f'<a href="{escape(hub_url(repo_id))}" title="Hub page">{escape(repo_id)}</a>'
    if status == "gated":
        return Markup(f'{hub} <span class="dim" title="gated: no files read, so no drafts to show">gated</span>')
    drafts_url = datasette.urls.path("/drafts") + "?" + urlencode({"target": repo_id})
    return Markup(f'{hub} <a class="indexer-drafts-link" href="{escape(drafts_url)}">drafts</a>')


@hookimpl
def render_cell(row, value, column, table, database, datasette):
    """Human labels on the raw tables: params in words, Hub links, short hashes; the raw value stays in JSON."""
    if value is None or isinstance(value, bytes):
        return None
    if column == "repo_id" and table in REPO_ID_TABLES and isinstance(value, str):
        keys = row.keys() if hasattr(row, "keys") else ()
        status = row["status"] if "status" in keys else None
        return _hub_link(value, datasette, status if isinstance(status, str) else None)
    if column in PARAM_COLUMNS and isinstance(value, int):
        return Markup(f'<span title="{value:,} parameters">{escape(fmt_params(value))}</span>')
    if column in COUNT_COLUMNS and isinstance(value, int):
        return f"{value:,}"
    if column in HASH_COLUMNS and isinstance(value, str) and len(value) > SHORT_HASH + 4:
        return Markup(f'<code title="{escape(value)}">{escape(value[:SHORT_HASH])}…</code>')
    if column in LIST_COLUMNS and isinstance(value, str) and value.startswith("["):
        try:
            return ", ".join(str(v) for v in json.loads(value))
        except ValueError:
            return None
    if column == "base_models" and isinstance(value, str) and value.startswith("["):
        try:
            ids = [v for v in json.loads(value) if isinstance(v, str)]
        except ValueError:
            return None
        return Markup(", ".join(f'<a href="{escape(hub_url(i))}">{escape(i)}</a>' for i in ids))
    return None


@hookimpl
def extra_template_vars(datasette):
    """The engine and method lists every template's question form needs (datasette 0.65 hookspecs.py:51)."""
    return {"indexer_engines": _engines(), "indexer_methods": _methods(), "indexer_default_engine": DEFAULT_ENGINE}


@hookimpl
def menu_links(datasette):
    """The question pages in datasette's menu (datasette 0.65 hookspecs.py:124)."""
    return [{"href": datasette.urls.path("/drafts"), "label": "Drafts for a target"},
            {"href": datasette.urls.path("/explain"), "label": "Explain a pair"},
            {"href": datasette.urls.path("/about"), "label": "About"}]


@hookimpl
def extra_css_urls(datasette):
    """The plugin's stylesheet on every page (datasette 0.65 hookspecs.py:34)."""
    return [{"url": datasette.urls.path("/-/indexer/site.css")}]


COLLAPSE_JS = """
[['dl.column-descriptions', 'Column descriptions'], ['pre.wrapped-sql', 'Schema (SQL)']].forEach(function (p) {
  document.querySelectorAll(p[0]).forEach(function (el) {
    var d = document.createElement('details'), s = document.createElement('summary');
    s.textContent = p[1]; d.appendChild(s); el.parentNode.insertBefore(d, el); d.appendChild(el);
  });
});
"""
REORDER_COLUMNS_JS = """
(function (first) {
  function rank(cell) {
    var cls = [...cell.classList].find(function (k) { return k.indexOf('col-') === 0; });
    var i = cls ? first.indexOf(cls.slice(4)) : -1;
    return i < 0 ? first.length : i;
  }
  document.querySelectorAll('table.rows-and-columns tr').forEach(function (tr) {
    [...tr.children].map(function (c, i) { return [rank(c), i, c]; })
      .sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; })
      .forEach(function (x) { tr.appendChild(x[2]); });
  });
})(FIRST);
"""


@hookimpl
def extra_body_script(template, database, table, datasette):
    """Table pages: column descriptions and schema collapsed behind <details>, repos' key columns first."""
    if template != "table.html":
        return None
    script = COLLAPSE_JS
    if table in FIRST_COLUMNS:  # display order only: sorting, facets, filters and JSON are untouched
        script += REORDER_COLUMNS_JS.replace("FIRST", json.dumps(list(FIRST_COLUMNS[table])))
    return script
