"""The Hub imitation's file serving: ``/resolve`` (gated and disabled repos refused, LFS files redirected
to the CDN port with the LFS and Xet headers, small files served) and the CDN, both answering byte ranges.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any
from urllib.parse import quote

from .repos import FileEntry, Repo
from .wire import HttpError, Response, token_of


def clean_repo_path(path: str) -> str:
    """Reject anything that could escape the repo: absolute paths, ``..``, ``.``, empty segments, NUL."""
    if not path or path.startswith("/") or "\\" in path or "\0" in path:
        raise HttpError(400, None, f"Invalid path: {path!r}")
    if any(seg in ("", ".", "..") for seg in path.split("/")):
        raise HttpError(400, None, f"Invalid path: {path!r}")
    return path


def _parse_range(header: str, size: int) -> tuple[int, int] | None:
    """``bytes=a-b`` / ``bytes=a-`` / ``bytes=-n`` -> inclusive (start, end); None if unusable."""
    m = re.fullmatch(r"\s*bytes=(\d*)-(\d*)\s*", header or "")
    if not m or (not m.group(1) and not m.group(2)):
        return None
    if m.group(1):
        start = int(m.group(1))
        end = int(m.group(2)) if m.group(2) else size - 1
    else:
        start, end = max(0, size - int(m.group(2))), size - 1
    end = min(end, size - 1)
    if start > end:
        raise HttpError(416, None, "Range not satisfiable", {"Content-Range": f"bytes */{size}"})
    return start, end


def xet_hash(fe: FileEntry) -> str:
    """A stand-in Xet content hash (64 hex); real ones are Merkle hashes of the file's chunks."""
    return hashlib.sha256(b"xet:" + fe.sha256.encode()).hexdigest()


class FileServing:
    """Part of :class:`~indexer.hubsim.server.HubServer`: ``/resolve`` and the CDN. Uses the server's
    ``store``, ``xet``, ``host``, ``port``, ``cdn_endpoint`` and repo lookup (``_repo``, ``_check_revision``:
    :class:`~indexer.hubsim.api.ApiEndpoints`)."""

    # Set by the class this is mixed into (declared here for the type checker).
    _check_revision: Any
    _repo: Any
    cdn_endpoint: Any
    datasets: Any
    host: Any
    port: Any
    store: Any
    xet: Any

    @staticmethod
    def _check_gate(repo: Repo, headers) -> None:
        """``/resolve`` of a gated repo (HUB-API §0.1.8, §0.1.10): 401 GatedRepo without a token, 403 GatedRepo
        with a token that was not granted access (metadata ``gated_access``: the tokens that were). Listing,
        model info, tree and paths-info stay open, as on the Hub."""
        token = token_of(headers)
        if token is None:
            raise HttpError(401, "GatedRepo", f"Access to model {repo.id} is restricted. You must have access to "
                            "it and be authenticated to access it. Please log in.")
        if token not in (repo.meta.get("gated_access") or ()):
            raise HttpError(403, "GatedRepo", f"Access to model {repo.id} is restricted and you are not in the "
                            f"authorized list. Visit https://huggingface.co/{repo.id} to ask for access.")

    def _resolve(self, method: str, repo_id: str, rev: str, path: str, headers) -> Response:
        clean_repo_path(path)
        repo = self._repo(repo_id, headers)
        if repo.gated:
            self._check_gate(repo, headers)
        if repo.disabled:
            raise HttpError(403, None, "Access to this resource is disabled.")
        self._check_revision(repo, rev)
        fe = repo.files.get(path)
        if fe is None:
            raise HttpError(404, "EntryNotFound", "Entry not found", {"X-Repo-Commit": repo.sha})
        common = {"X-Repo-Commit": repo.sha, "Accept-Ranges": "bytes"}
        if fe.lfs:
            location = f"{self.cdn_endpoint}/cdn/{fe.sha256}?repo={quote(repo.id)}&file={quote(path)}"
            lfs = {
                **common,
                "Location": location,
                "X-Linked-Etag": f'"{fe.sha256}"',
                "X-Linked-Size": str(fe.size),
                "ETag": f'"{fe.oid}"',
            }
            if self.xet:  # HUB-API §0.1.3: what huggingface.co sends for a file stored in Xet
                host = headers.get("Host") or f"{self.host}:{self.port}"
                lfs["X-Xet-Hash"] = xet_hash(fe)
                lfs["Link"] = (f'<http://{host}/api/models/{quote(repo.id)}/xet-read-token/{repo.sha}>; '
                               'rel="xet-auth"')
            return Response(302, lfs)
        resp = Response(200, {**common, "ETag": f'"{fe.blob_sha1}"'})
        resp.headers["Content-Type"] = "application/octet-stream"
        return self._file_response(resp, fe, method, headers)

    def _file_response(self, resp: Response, fe: FileEntry, method: str, headers) -> Response:
        resp.file = fe
        if method == "GET" and headers.get("Range"):
            rng = _parse_range(headers["Range"], fe.size)
            if rng:
                resp.status, resp.file_range = 206, rng
                resp.headers["Content-Range"] = f"bytes {rng[0]}-{rng[1]}/{fe.size}"
        return resp

    def _cdn(self, method: str, segs: list[str], headers) -> Response:
        if method not in ("GET", "HEAD") or len(segs) != 2 or segs[0] != "cdn":
            raise HttpError(404, None, "Not Found")
        fe = self.store.by_sha256.get(segs[1]) or self.datasets.object_entry(segs[1])
        if fe is None:
            raise HttpError(404, None, "Not Found")
        resp = Response(200, {"ETag": f'"{fe.sha256}"', "Content-Type": "application/octet-stream"})
        return self._file_response(resp, fe, method, headers)
