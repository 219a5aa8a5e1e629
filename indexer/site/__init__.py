"""The site: a datasette plugin whose pages answer from the same library calls as the CLI.

``/drafts`` and ``/drafts.json`` call :func:`indexer.query.run_query` (what ``indexer query`` calls);
``/explain`` and ``/explain.json`` call :func:`indexer.sides.check` (what ``indexer check`` calls).
Nothing here re-implements a rule: the functions below only translate URL parameters into the
library's keyword arguments and the library's exceptions into an HTTP status.

Wiring: ``datasette --plugins-dir indexer/site/plugins`` (``indexer serve`` and the published bundle
do this); the plugin adds its own templates to datasette's Jinja loader.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

SITE_DIR = Path(__file__).resolve().parent
PLUGINS_DIR = SITE_DIR / "plugins"
TEMPLATES_DIR = SITE_DIR / "templates"
STATIC_DIR = SITE_DIR / "static"
HUB_URL = "https://huggingface.co"
DEFAULT_LIMIT = 10  # the CLI's --limit default
MAX_LIMIT = 500
NOT_FOUND = re.compile(r"\bnot in (the|this) catalog\b")  # the lookup's words for a repo id it cannot find


class SiteError(Exception):
    """Bad request parameters or an unanswerable question: one line and an HTTP status."""

    def __init__(self, message: str, status: int = 400, exit_code: int = 2):
        super().__init__(message)
        self.message, self.status, self.exit_code = message, status, exit_code

    def to_dict(self) -> dict:
        return {"error": self.message, "exit_code": self.exit_code}


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _looks_local(value: str) -> bool:
    """Would the library read this from the server's disk? (Every rule it uses, and any existing path.)"""
    from ..sides import looks_like_dir

    if value.startswith(("http://", "https://")):
        return False
    checks = [looks_like_dir]
    try:
        from ..lookup import looks_like_dir as lookup_looks_like_dir  # the query's own rule, when present

        checks.append(lookup_looks_like_dir)
    except ImportError:
        pass
    return (any(check(value) for check in checks) or value.startswith("\\") or ".." in value.split("/")
            or Path(value).expanduser().exists())


def _repo_id(args: dict, name: str) -> str:
    """A repo id from the URL; never a path (the server must not read its own filesystem)."""
    value = (args.get(name) or "").strip()
    if not value:
        raise SiteError(f"give ?{name}=owner/name")
    if _looks_local(value):
        raise SiteError(f"{name} {value!r}: give a Hub repo id (owner/name), not a path")
    return value


def query_kwargs(args: dict) -> dict:
    """URL parameters -> the keyword arguments of ``run_query`` exactly as the CLI passes them."""
    from .. import query

    kwargs = {
        "engine": (args.get("engine") or "sglang").strip(),
        "near_misses": _flag(args.get("near_misses")),
        "all_members": _flag(args.get("all")),
        "limit": DEFAULT_LIMIT,
    }
    if args.get("limit"):
        try:
            kwargs["limit"] = int(args["limit"])
        except ValueError:
            raise SiteError(f"limit {args['limit']!r} is not a number") from None
        if not 1 <= kwargs["limit"] <= MAX_LIMIT:
            raise SiteError(f"limit must be between 1 and {MAX_LIMIT}")
    if kwargs["engine"] not in query.ENGINES:
        raise SiteError(f"unknown engine {kwargs['engine']!r}; choose one of {', '.join(query.ENGINES)}")
    method = (args.get("method") or "").strip()
    if method:
        methods = available_methods()
        if not methods:
            raise SiteError("this version of indexer answers for draft models only; drop ?method=")
        if method not in methods:
            raise SiteError(f"unknown method {method!r}; choose one of {', '.join(methods)}")
        kwargs["method"] = method
    return kwargs


def available_methods() -> tuple:
    """Speculation methods the query can be asked for: ``indexer.query.METHODS`` (else ``indexer.heads``'),
    and only once ``run_query`` takes ``method`` (otherwise the drop-down would promise what it cannot do)."""
    from .. import query

    if "method" not in inspect.signature(query.run_query).parameters:
        return ()
    methods = getattr(query, "METHODS", None)
    if methods is None:
        try:
            from .. import heads

            methods = getattr(heads, "METHODS", None)
        except ImportError:
            methods = None
    return tuple(methods or ())


def drafts(db: str, args: dict) -> dict:
    """``GET /drafts.json``: the JSON of ``indexer query --target T --engine E [--all] --json``."""
    from ..query import QueryError, run_query

    target = _repo_id(args, "target")
    kwargs = query_kwargs(args)
    try:
        return run_query(target, db=db, **kwargs)
    except QueryError as e:
        raise SiteError(e.message, 404 if e.code == 3 else 400, e.code) from None


def engine_summary(db: str, target: str, args: dict) -> list[dict]:
    """How many ranked drafts and near misses each engine has for ``target`` (one line per engine)."""
    from .. import query

    out = []
    for engine in query.ENGINES:
        try:
            res = drafts(db, {**args, "engine": engine, "near_misses": "1", "all": ""})
        except SiteError as e:
            out.append({"engine": engine, "name": query.ENGINE_NAMES[engine], "error": e.message})
            continue
        out.append({"engine": engine, "name": query.ENGINE_NAMES[engine], "drafts": len(res["drafts"]),
                    "near_misses": len(res["near_misses"])})
    return out


def explain(db: str, args: dict) -> dict:
    """``GET /explain.json``: the JSON of ``indexer check T D --json``."""
    from ..db import readonly_url
    from ..files import InputError
    from ..sides import check

    target, draft = _repo_id(args, "target"), _repo_id(args, "draft")
    head = _explain_head(readonly_url(db), target, draft)
    if head is not None:
        return head
    try:
        # Read-only: the served file is immutable to datasette, and a published snapshot stays byte-identical.
        return check(target, draft, db=readonly_url(db), local_dirs=False)
    except InputError as e:
        status = 404 if NOT_FOUND.search(e.message) else 400
        raise SiteError(e.message, status, 2) from None


def _explain_head(db: str, target: str, head: str) -> dict | None:
    """``indexer check TARGET HEAD`` when the "draft" is a speculator head in the catalog (else None)."""
    from ..headquery import explain_head
    from ..query import QueryError

    try:
        return explain_head(db, target, head)
    except QueryError as e:
        raise SiteError(e.message, 404 if e.code == 3 else 400, e.code) from None


def hub_url(repo_id: str) -> str:
    return f"{HUB_URL}/{repo_id}"
