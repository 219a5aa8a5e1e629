"""The Hub imitation's API endpoints: the model listing (filters, sorting, keyset and page cursors, deep
pages that fail), model info, paths-info and tree, each behind the repo lookup the Hub does (private repos
only with a token, revisions ``main`` or the commit).
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

from .modelinfo import (
    DEFAULT_LIST_FIELDS,
    EXPAND_LIST,
    EXPAND_MODEL,
    FULL_LIST_FIELDS,
    MODEL_INFO_FIELDS,
    validate_expand,
)
from .repos import Repo
from .resolve import clean_repo_path, xet_hash
from .wire import HttpError, Response, json_response, token_of

SORT_KEYS = {
    "downloads": lambda r: r.meta.get("downloads", 0),
    "likes": lambda r: r.meta.get("likes", 0),
    "lastModified": lambda r: r.last_modified,
    "createdAt": lambda r: r.created_at,
    "trendingScore": lambda r: r.meta.get("trendingScore", 0),
}


def _cursor(query: dict) -> int:
    value = (query.get("cursor") or ["0"])[-1] or "0"
    if not value.isdigit():
        raise HttpError(400, None, f"Invalid cursor: {value!r}")
    return int(value)


def _keyset_cursor(key, id_: str) -> str:
    """An opaque cursor after (sort key, _id), as the Hub's keyset pagination hands out."""
    return base64.urlsafe_b64encode(json.dumps([key, id_]).encode()).decode()


def _keyset_start(repos: list, raw: str, sort, id_of) -> int:
    """Index of the first repo after the cursor's (key, _id) in (key descending, _id ascending) order: a
    repo modified since the cursor was handed out moves above it instead of shifting the pages below."""
    if not raw:
        return 0
    try:
        key, id_ = json.loads(base64.urlsafe_b64decode(raw.encode()))
    except (ValueError, TypeError):
        raise HttpError(400, None, f"Invalid cursor: {raw!r}") from None
    for i, r in enumerate(repos):
        k = sort(r)
        if k < key or (k == key and id_of(r) > id_):
            return i
    return len(repos)


class ApiEndpoints:
    """Part of :class:`~indexer.hubsim.server.HubServer`: the ``/api/models`` endpoints. Uses the server's
    ``store``, ``page_size``, ``tree_page_size``, ``auto_reload``, ``xet``, ``host``, ``port``,
    ``deep_listing_504`` and the model JSON (:class:`~indexer.hubsim.modelinfo.ModelJson`)."""

    # Set by the class this is mixed into (declared here for the type checker).
    _field: Any
    deep_listing_504: tuple[int, int | None] | None
    _lock: Any
    _model_json: Any
    auto_reload: Any
    host: Any
    page_size: Any
    port: Any
    reload: Any
    store: Any
    tree_page_size: Any
    xet: Any

    def _repo(self, repo_id: str, headers=None) -> Repo:
        """The repo a request names; a missing or (without a token) private one answers 401 RepoNotFound."""
        repo = self.store.repos.get(repo_id)
        if repo is None or (repo.private and token_of(headers) is None):
            raise HttpError(
                401,
                "RepoNotFound",
                "Repository not found",
                {"WWW-Authenticate": 'Bearer realm="Authentication required", charset="UTF-8"'},
            )
        return repo

    @staticmethod
    def _check_revision(repo: Repo, rev: str) -> None:
        if rev not in ("main", repo.sha):
            raise HttpError(404, "RevisionNotFound", f"Invalid rev id: {rev}")

    def _list_models(self, query: dict, headers) -> Response:
        raw_cursor = (query.get("cursor") or [""])[-1]
        validate_expand(query.get("expand", []), EXPAND_LIST)
        if self.auto_reload and not raw_cursor:
            self.reload()
        with_token = token_of(headers) is not None
        repos = [r for r in self.store.repos.values() if with_token or not r.private]
        q1 = {k: v[-1] for k, v in query.items()}
        if "author" in q1:
            repos = [r for r in repos if r.owner.lower() == q1["author"].lower()]
        if "search" in q1:
            repos = [r for r in repos if q1["search"].lower() in r.id.lower()]
        if "pipeline_tag" in q1:
            repos = [r for r in repos if self._field(r, "pipeline_tag") == q1["pipeline_tag"]]
        for f in query.get("filter", []):
            repos = [r for r in repos if f in self._tags_for_filter(r)]
        if "gated" in q1:
            want = q1["gated"].lower() == "true"
            repos = [r for r in repos if bool(r.gated) == want]
        sort = SORT_KEYS.get(q1.get("sort", ""))
        if sort is not None:  # descending, ties by _id (HUB-API §0.1.13)
            repos.sort(key=lambda r: self._field(r, "_id"))
            repos.sort(key=sort, reverse=True)
            cursor = _keyset_start(repos, raw_cursor, sort, lambda r: self._field(r, "_id"))
        else:
            cursor = _cursor(query)
        size = self.page_size
        if q1.get("limit", "").isdigit() and int(q1["limit"]) > 0:
            size = min(size, int(q1["limit"]))
        if self.deep_listing_504 is not None and cursor >= self.deep_listing_504[0]:
            self._deep_fault()
        page = repos[cursor : cursor + size]

        if "expand" in query:
            fields = query["expand"]
        else:
            fields = list(DEFAULT_LIST_FIELDS)
            if q1.get("full", "").lower() == "true":
                fields += FULL_LIST_FIELDS
            if q1.get("config", "").lower() == "true":
                fields.append("config")
            if q1.get("cardData", "").lower() == "true":
                fields.append("cardData")
        items = [self._model_json(r, fields, listing=True) for r in page]
        link = {}
        if cursor + size < len(repos):
            last = page[-1]
            nxt = (_keyset_cursor(sort(last), self._field(last, "_id")) if sort is not None
                   else str(cursor + size))
            link["Link"] = self._next_link(headers, "/api/models", query, nxt)
        return json_response(items, headers=link)

    def _deep_fault(self) -> None:
        with self._lock:
            assert self.deep_listing_504 is not None  # called only while the fault is set
            depth, times = self.deep_listing_504
            if times is not None:
                self.deep_listing_504 = (depth, times - 1) if times > 1 else None
        raise HttpError(504, None, "Gateway Time-out")

    def _tags_for_filter(self, repo: Repo) -> set:
        return {*self._field(repo, "tags"), *(self._field(repo, k) for k in ("pipeline_tag", "library_name"))}

    def _next_link(self, headers, path: str, query: dict, cursor) -> str:
        """Absolute URL repeating every original parameter: the client follows it verbatim."""
        host = headers.get("Host") or f"{self.host}:{self.port}"
        params = [(k, v) for k, vals in query.items() if k != "cursor" for v in vals]
        params.append(("cursor", str(cursor)))
        return f'<http://{host}{quote(path)}?{urlencode(params)}>; rel="next"'

    def _model_info(self, repo_id: str, rev: str, query: dict, headers) -> Response:
        validate_expand(query.get("expand", []), EXPAND_MODEL)
        repo = self._repo(repo_id, headers)
        self._check_revision(repo, rev)
        blobs = (query.get("blobs") or ["false"])[-1].lower() == "true"
        fields = query.get("expand") or MODEL_INFO_FIELDS
        return json_response(self._model_json(repo, fields, blobs=blobs))

    def _entry(self, repo: Repo, path: str, expand: bool) -> dict | None:
        if path in repo.files:
            fe = repo.files[path]
            out = {"type": "file", "oid": fe.oid, "size": fe.reported_size, "path": path}
            if fe.lfs:
                out["lfs"] = {"oid": fe.sha256, "size": fe.reported_size, "pointerSize": fe.pointer_size}
                if self.xet:
                    out["xetHash"] = xet_hash(fe)
        elif path in repo.dirs:
            out = {"type": "directory", "oid": repo.dirs[path], "size": 0, "path": path}
        else:
            return None
        if expand:
            out["lastCommit"] = {"id": repo.sha, "title": "Upload folder", "date": repo.last_modified}
        return out

    def _paths_info(self, repo_id: str, rev: str, body: bytes, headers) -> Response:
        repo = self._repo(repo_id, headers)
        self._check_revision(repo, rev)
        form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        expand = (form.get("expand") or ["false"])[-1].lower() == "true"
        out, seen = [], set()
        for p in form.get("paths", []):
            p = p.strip("/")
            if p in seen:
                continue
            seen.add(p)
            entry = self._entry(repo, p, expand)
            if entry is not None:
                out.append(entry)
        return json_response(out)

    def _tree(self, repo_id: str, rev: str, path: str, query: dict, headers) -> Response:
        repo = self._repo(repo_id, headers)
        self._check_revision(repo, rev)
        path = path.strip("/")
        if path:
            clean_repo_path(path)
            if path not in repo.dirs:
                raise HttpError(404, "EntryNotFound", f"{path} does not exist", {"X-Repo-Commit": repo.sha})
        recursive = (query.get("recursive") or ["false"])[-1].lower() == "true"
        expand = (query.get("expand") or ["false"])[-1].lower() == "true"
        prefix = path + "/" if path else ""
        names = sorted(
            p
            for p in [*repo.dirs, *repo.files]
            if p.startswith(prefix) and (recursive or "/" not in p[len(prefix) :])
        )
        cursor = _cursor(query)
        size = self.tree_page_size
        items = [self._entry(repo, p, expand) for p in names[cursor : cursor + size]]
        link = {}
        if cursor + size < len(names):
            raw = f"/api/models/{repo.id}/tree/{quote(rev, safe='')}"
            raw += f"/{quote(path, safe='')}" if path else ""
            link["Link"] = self._next_link(headers, raw, query, cursor + size)
        return json_response(items, headers=link)
