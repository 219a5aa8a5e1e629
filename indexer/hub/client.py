"""All Hugging Face Hub calls (docs/hub-api.md): listings, model info, paths-info, file trees, pinned
downloads and byte ranges, each through huggingface_hub on the paced, retried session of ``session.py``.

What the real Hub does that the client hides (docs/hub-api.md, from HUB-API.md §0.1), and how we cope here:

* A listing refuses ``expand=baseModels``: ``LIST_EXPAND`` (``listed.py``) holds only what a listing accepts.
* Every ``/resolve`` request counts against the resolvers quota and as a download in the Hub's statistics
  (HUB-API §0.1.12): ``download`` sends one GET per blob (no HEAD; paths-info already gave its id and size).

Pacing, timeouts and retries are ``session.py``'s; the names crawl code uses (``Listed``, the pacing and
guard errors) are importable from here too.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from urllib.parse import urlencode

from huggingface_hub import hf_hub_url
from huggingface_hub.hf_api import ModelInfo
from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status, http_stream_backoff

from .. import __version__
from ..errors import TransientError
from .guard import Cancelled, HubUnreachable
from .listed import LIST_EXPAND, Listed, git_blob_sha1, safe_blob_id, safe_name
from .pacing import BudgetExhausted, FixedWindow, least_seconds
from .session import LIBRARY_NAME, HubSession

__all__ = ["BudgetExhausted", "Cancelled", "FixedWindow", "HubClient", "HubUnreachable", "Listed", "least_seconds",
           "safe_blob_id", "safe_name"]

# A stable order for listings read over hours: the client maps "created_at" to sort=createdAt
# (hf_api.py:2468-2477); new repos do not shift the pages still to be read.
LIST_SORT = "created_at"
# The client's sort names (hf_api.py:2468-2477); others are sent as they are.
SORT_NAMES = {"last_modified": "lastModified", "trending_score": "trendingScore", "created_at": "createdAt"}
MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024  # files.DEFAULT_MAX_FILE_BYTES; callers pass their own cap


@dataclass
class Downloaded:
    """One stored blob: its id, size and sha256 (checked against the id or LFS oid the Hub announced)."""

    blob_id: str
    size: int
    sha256: str


class HubClient(HubSession):
    """The crawler's only door to the Hub."""

    def list_models(self, *, author=None, search=None, pipeline_tag=None, limit=None, filter=None,
                    sort: str = LIST_SORT) -> Iterator[Listed]:
        """Listed items in a stable order (``LIST_SORT``, or ``sort``), page by page through ``list_page``.

        ``filter``: tags every item carries, e.g. ``base_model:ORG/NAME`` (the Hub tags derived repos so,
        HUB-API §0.1.2; the client sends each as a ``filter`` parameter, hf_api.py ``list_models``)."""
        url: str | None = self.listing_url(author=author, search=search, pipeline_tag=pipeline_tag, sort=sort,
                                           filter=filter, limit=limit)
        n = 0
        while url:
            items, url = self.list_page(url)
            for item in items:
                if limit is not None and n >= limit:
                    return
                n += 1
                yield item

    def listing_url(self, *, author=None, search=None, pipeline_tag=None, sort: str = "lastModified",
                    filter=None, limit=None) -> str:
        """The first page of a listing, built as ``HfApi.list_models`` builds it (hf_api.py:2435-2490, sort names
        mapped as it maps them): the Hub sorts descending (``direction`` is gone, HUB-API §0.1.13) and pages by
        keyset on (key, _id)."""
        sort = SORT_NAMES.get(sort, sort)
        filters = [filter] if isinstance(filter, str) else list(filter or ())
        params = [("filter", f) for f in filters]
        params += [(k, v) for k, v in (("author", author), ("search", search), ("pipeline_tag", pipeline_tag),
                                       ("sort", sort), ("limit", limit)) if v]
        params += [("expand", e) for e in LIST_EXPAND]
        return f"{self.endpoint}/api/models?{urlencode(params)}"

    def list_page(self, url: str) -> tuple[list[Listed], str | None]:
        """One listing page and the next page's URL (``Link: rel="next"``, followed verbatim as the client's
        ``_paginate_pages`` does, utils/_pagination.py:40-53).

        Sent through the client's session but retried here, not by its ``http_backoff``: that sleeps a 429's
        whole ``Retry-After`` (utils/_http.py:534-561) whatever the run's deadline, while ``_with_retries`` holds
        the api bucket until the reset and refuses to wait past ``--max-minutes`` (``BudgetExhausted``: the
        caller keeps this page's URL and the next run reads on from it)."""
        headers = build_hf_headers(token=self._token, library_name=LIBRARY_NAME, library_version=__version__)

        def get():
            r = get_session().get(url, headers=headers)  # read whole, at most guard.MAX_ANSWER_BYTES decoded
            hf_raise_for_status(r)
            return r.json(), r.links.get("next", {}).get("url")

        page, next_url = self._with_retries("listing page", get)
        if not isinstance(page, list):
            raise TransientError(f"listing page is not a list: {str(page)[:100]}")
        items = []
        for item in page:
            if not isinstance(item, dict):
                raise TransientError(f"listing page holds {type(item).__name__}, not a repo: {str(item)[:100]}")
            item.setdefault("siblings", None)  # as list_models does (hf_api.py:2496-2497)
            items.append(Listed.from_info(ModelInfo(**item)))
        return items, next_url

    def model_info(self, repo_id: str) -> Listed:
        """A repo's facts as a listing item has them, retried here (the client does not retry model_info)."""
        return Listed.from_info(self._with_retries(
            f"model_info {repo_id}", lambda: self.api.model_info(repo_id, expand=list(LIST_EXPAND))))

    def paths_info(self, repo_id: str, sha: str, paths) -> list:
        """RepoFile/RepoFolder entries for those of ``paths`` that exist at commit ``sha``."""
        return self._with_retries(
            f"paths_info {repo_id}", lambda: self.api.get_paths_info(repo_id, list(paths), revision=sha)
        )

    def list_files(self, repo_id: str, sha: str, limit: int = 10_000) -> list:
        """The repo's files at commit ``sha`` (RepoFile entries with size, blob id and LFS sha256), from the
        tree listing ``snapshot_download`` trusts where a listing's ``siblings`` may be lossy (HUB-API §0.1.11;
        hf_api.py ``list_repo_tree``, paged by the client). Capped at ``limit`` entries."""
        return self._with_retries(f"tree {repo_id}", lambda: list(islice(
            self.api.list_repo_tree(repo_id, revision=sha, recursive=True), limit)))

    def download(self, repo_id: str, sha: str, filename: str, blob_id: str, store, *,
                 lfs_sha256: str | None = None, size: int | None = None,
                 max_bytes: int | None = None) -> Downloaded:
        """Fetch one file pinned to ``sha`` into ``store`` (a BlobStore) under ``blob_id``: one request.

        ``hf_hub_download`` sends a HEAD and then a GET (file_download.py:1068, ``_hf_hub_download_to_cache_dir``);
        both count against the resolvers quota and as downloads in the Hub's statistics (HUB-API §0.1.12).
        paths-info already gave the blob id, size and LFS sha256, so a single GET of the commit-pinned
        ``/resolve`` URL (``hf_hub_url``) through the client's own session and backoff
        (``utils/_http.py`` ``http_stream_backoff``, ``get_session``: our hooks pace it and set timeouts)
        follows the LFS redirect and is checked against the git blob sha1 or the LFS sha256.
        At most ``max_bytes`` (or the announced ``size``) are read: a lying body is cut off.
        """
        safe_name(filename)
        safe_blob_id(blob_id)
        limit = max_bytes or MAX_DOWNLOAD_BYTES
        if size:
            limit = min(limit, size)
        data = self._with_retries(f"download {repo_id}/{filename}",
                                  lambda: self._get_blob(repo_id, sha, filename, limit))
        sha256 = hashlib.sha256(data).hexdigest()
        if lfs_sha256 and sha256 != lfs_sha256:
            raise TransientError(f"{filename}: content sha256 {sha256[:12]} != LFS oid {lfs_sha256[:12]}")
        if not lfs_sha256 and git_blob_sha1(data) != blob_id:
            raise TransientError(f"{filename}: content does not match blob id {blob_id[:12]}")
        store.put(blob_id, data)
        return Downloaded(blob_id, len(data), sha256)


    def read_range(self, repo_id: str, sha: str, filename: str, start: int, end: int) -> bytes:
        """Bytes [start, end) of a file pinned to commit ``sha``: one GET with ``Range``, as the client's own
        ``HfFileSystemFile._fetch_range`` reads (hf_file_system.py:1575-1583). The Hub redirects an LFS file to
        its CDN, which answers 206 with ``Content-Range``; a server that ignores the range (200) is read only up
        to ``end`` and the connection closed, so a whole multi-GB file is never pulled."""
        safe_name(filename)
        if not 0 <= start < end:
            raise ValueError(f"bad range [{start}, {end})")
        url = hf_hub_url(repo_id, filename, revision=sha, endpoint=self.endpoint)
        headers = {**self.api._build_hf_headers(), "Range": f"bytes={start}-{end - 1}"}

        def get() -> bytes:
            with get_session().stream("GET", url, headers=headers) as r:
                if r.status_code >= 400:
                    r.read()
                    hf_raise_for_status(r)
                skip = 0
                if r.status_code == 206:
                    got = re.match(r"bytes (\d+)-", r.headers.get("Content-Range", ""))
                    if not got or int(got.group(1)) != start:
                        raise TransientError(f"{filename}: answer to Range {start}-{end - 1} starts elsewhere "
                                             f"({r.headers.get('Content-Range')!r})")
                else:
                    skip = start  # 200: the whole file from byte 0
                data = bytearray()
                for chunk in r.iter_bytes():
                    data += chunk
                    if len(data) >= skip + (end - start):
                        break
                return bytes(data[skip:skip + (end - start)])

        return self._with_retries(f"read {repo_id}/{filename} bytes {start}-{end - 1}", get)

    def _get_blob(self, repo_id: str, sha: str, filename: str, limit: int) -> bytes:
        url = hf_hub_url(repo_id, filename, revision=sha, endpoint=self.endpoint)
        headers = build_hf_headers(token=self._token, library_name=LIBRARY_NAME, library_version=__version__)
        # our _with_retries retries (429 after the announced reset, 5xx, transport errors): none here
        with http_stream_backoff("GET", url, headers=headers, retry_on_exceptions=(),
                                 retry_on_status_codes=()) as response:
            hf_raise_for_status(response)
            buf = bytearray()
            for chunk in response.iter_bytes(1 << 20):
                buf += chunk
                if len(buf) > limit:
                    raise TransientError(f"{filename}: more than the {limit} bytes announced or allowed")
        return bytes(buf)
