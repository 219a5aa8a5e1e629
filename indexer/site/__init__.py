"""The site: a datasette plugin whose pages answer from the same library calls as the CLI.

``/drafts`` and ``/drafts.json`` call :func:`indexer.answer.query.run_query` (what ``indexer query`` calls);
``/explain`` and ``/explain.json`` call :func:`indexer.answer.query.check` (what ``indexer check`` calls), then
:func:`indexer.answer.speedup.add_to_check` (what ``indexer check`` adds). Both take the CLI's speed options as URL
parameters (``SPEED_ARGS``), checked by the same :class:`indexer.answer.speedup.Options`.
A page opens one catalog reader and asks all its questions through it.
Nothing here re-implements a rule: the functions below only check URL parameters (indexer/answer/validate.py,
repo ids only) and translate them into the library's keyword arguments. The library's errors carry their
own HTTP status (indexer/errors.py); the hooks answer with it.

Wiring: ``datasette --plugins-dir indexer/site/plugins`` (``indexer serve`` and the published bundle
do this); the plugin adds its own templates to datasette's Jinja loader.
"""

from __future__ import annotations

from pathlib import Path

from ..answer import query
from ..answer.lookup import repo_ids_only
from ..answer.query import check, open_reader, run_query
from ..answer.speedup import Options, add_to_check
from ..answer.validate import ANSWER_MAX_LIMIT, limit, target
from ..catalog.db import readonly_url
from ..engines import parse_versions
from ..errors import IndexerError, SiteError  # noqa: F401  (re-exported: the hooks and tests import them here)

SITE_DIR = Path(__file__).resolve().parent
PLUGINS_DIR = SITE_DIR / "plugins"
TEMPLATES_DIR = SITE_DIR / "templates"
STATIC_DIR = SITE_DIR / "static"
HUB_URL = "https://huggingface.co"
DEFAULT_LIMIT = 10  # the CLI's --limit default
MAX_LIMIT = ANSWER_MAX_LIMIT
# URL parameter -> the CLI option it stands for (check and query: --hardware, --bandwidth, --quant, ...).
SPEED_ARGS = {"hardware": "hardware", "bandwidth": "bandwidth", "device_kind": "device_kind", "quant": "target_quant",
              "draft_quant": "draft_quant", "task": "task", "draft_tokens": "draft_tokens"}
MAX_DRAFT_TOKENS = 64  # the CLI's --draft-tokens range: 1 to 64


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _repo_id(args: dict, name: str) -> str:
    """A repo id (or Hub URL) from the URL, by its form alone: the server's disk is never consulted."""
    if not (args.get(name) or "").strip():
        raise SiteError(f"give ?{name}=owner/name")
    return target(args[name], name, local_dirs=False)


def speed_options(args: dict):
    """URL parameters -> the :class:`~indexer.answer.speedup.Options` the CLI builds from its speed options; an
    unknown hardware, quantization or task is the CLI's one line (BadInput: exit 2, HTTP 400). Blank means not given
    (the form's "reference devices")."""
    given = {key: args[name].strip() for name, key in SPEED_ARGS.items() if (args.get(name) or "").strip()}
    if "bandwidth" in given:
        try:
            given["bandwidth"] = float(given["bandwidth"])
        except ValueError:
            raise SiteError(f"bandwidth {given['bandwidth'][:40]!r} is not a number (GB/s)") from None
        if not 1 <= given["bandwidth"] < float("inf"):
            raise SiteError("bandwidth must be at least 1 (GB/s)")
    if "draft_tokens" in given:
        given["draft_tokens"] = limit(given["draft_tokens"], MAX_DRAFT_TOKENS, "draft_tokens")
    return Options(**given)


def speed_query(args: dict) -> dict:
    """The speed parameters a request gave (non-blank), to carry into the page's links."""
    return {name: args[name] for name in SPEED_ARGS if (args.get(name) or "").strip()}


def query_kwargs(args: dict) -> dict:
    """URL parameters -> the keyword arguments of ``run_query`` exactly as the CLI passes them."""
    by_device = not (args.get("engine") or "").strip() and (args.get("hardware") or "").strip()
    kwargs = {
        "engine": (args.get("engine") or query.DEFAULT_ENGINE).strip(),
        "near_misses": _flag(args.get("near_misses")),
        "all_members": _flag(args.get("all")),
        "limit": DEFAULT_LIMIT,
    }
    if args.get("limit"):

        kwargs["limit"] = limit(args["limit"], MAX_LIMIT)
    if kwargs["engine"] not in query.ENGINES:
        raise SiteError(f"unknown engine {kwargs['engine']!r}; choose one of {', '.join(query.ENGINES)}")
    method = (args.get("method") or "").strip()
    if method:
        methods = query.METHODS
        if method not in methods:
            raise SiteError(f"unknown method {method!r}; choose one of {', '.join(methods)}")
        kwargs["method"] = method
    versions = engine_versions(args)
    if kwargs["engine"] in versions:
        kwargs["release"] = versions[kwargs["engine"]]
    kwargs["speed"] = speed_options(args)
    if by_device and kwargs.get("method", "draft") == "draft":
        kwargs["engine"] = None  # as the CLI: a device and no engine ranks the engines that run there
    return kwargs


def engine_versions(args: dict) -> dict[str, str]:
    """``?engine_version=vllm==0.33.0`` (several: comma-separated) -> {engine: release}, as --engine-version;
    an unknown engine or release is the CLI's one line (HTTP 400)."""
    given = [v.strip() for v in (args.get("engine_version") or "").split(",") if v.strip()]
    return parse_versions(given)


def drafts(db: str, args: dict, reader=None) -> dict:
    """``GET /drafts.json``: the JSON of ``indexer query --target T --engine E [--all] --json``."""
    target = _repo_id(args, "target")
    kwargs = query_kwargs(args)
    with repo_ids_only():
        return run_query(target, db=db, reader=reader, **kwargs)


def drafts_with_summary(db: str, args: dict) -> tuple[dict, list[dict] | None]:
    """``GET /drafts``: the answer with its near misses and, unless it is the all-methods overview, the
    per-engine summary; every question through one reader, opened once the URL parameters are valid."""
    page_args = {**args, "near_misses": "1"}  # the page always shows near misses with their fix
    _repo_id(page_args, "target")  # bad parameters first, in the words /drafts.json has for them
    query_kwargs(page_args)
    with open_reader(db) as reader:
        result = drafts(db, page_args, reader)
        if result.get("method") == "all":  # the overview already covers every engine
            return result, None
        return result, engine_summary(db, result["target"]["repo_id"], args, reader)


def engine_summary(db: str, target: str, args: dict, reader=None) -> list[dict]:
    """How many ranked drafts and near misses each engine has for ``target`` (one line per engine)."""
    out: list[dict] = []
    for engine in query.ENGINES:
        try:
            res = drafts(db, {**args, "engine": engine, "near_misses": "1", "all": ""}, reader)
        except IndexerError as e:
            out.append({"engine": engine, "name": query.ENGINE_NAMES[engine], "error": e.message})
            continue
        out.append({"engine": engine, "name": query.ENGINE_NAMES[engine], "drafts": len(res["drafts"]),
                    "near_misses": len(res["near_misses"]), "unknown": res.get("unknown")})
    return out


def explain(db: str, args: dict) -> dict:
    """``GET /explain.json``: the JSON of ``indexer check T D --json`` with the same speed options."""
    target, draft = _repo_id(args, "target"), _repo_id(args, "draft")
    speed = speed_options(args)  # bad names first, as the CLI checks them before the pair
    # Read-only: the served file is immutable to datasette, and a published snapshot stays byte-identical.
    url = readonly_url(db)
    result = check(target, draft, db=url, local_dirs=False, releases=engine_versions(args))
    with repo_ids_only():
        return add_to_check(result, target, draft, url, speed)


def hub_url(repo_id: str) -> str:
    """The repo's page on the Hub, for links in the site's pages and cells."""
    return f"{HUB_URL}/{repo_id}"
