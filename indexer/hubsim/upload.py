"""The Hub imitation's dataset endpoints and upload protocol, as huggingface_hub 2.4.0 speaks it with Xet off.

Each route and refusal follows docs/hub-upload.md (§ numbers below):

* ``POST /api/repos/create`` (§1): ``visibility`` (2.4.0) or ``private`` (older clients); 409 with ``url``;
  403 on a namespace the token cannot write;
* ``GET /api/datasets/ORG/NAME[/revision/REV]``, ``paths-info`` (form-encoded, ``lfs.oid/size/pointerSize``),
  ``refs``, ``commits`` (paged by ``Link``), ``tree`` (§3);
* ``POST .../preupload/main`` (§2.2): the server decides ``regular`` or ``lfs``; ``shouldIgnore`` always
  present; ``oid`` for a path that exists; a read-only token is refused here (403, ``X-Error-Message``);
* ``POST /datasets/ORG/NAME.git/info/lfs/objects/batch`` (§2.3): no ``actions`` for an object already stored;
  the upload ``href`` is a presigned URL on the CDN origin (the client sends it no token), then ``verify``;
* ``POST .../commit/main`` (§2.4-2.6): NDJSON; a stale ``parentCommit`` is 412, a regular file over 10 MiB is
  400 with the Hub's words, an ``lfsFile`` whose object was never uploaded is refused; the commit quota is 429
  with the Hub's words (§4);
* ``/datasets/ORG/NAME/resolve/REV/PATH`` (§3): ``X-Repo-Commit``; LFS files answer 302 to the CDN (another
  origin) with ``X-Linked-Etag`` = sha256 and ``X-Linked-Size``.

Tokens: ``HubServer(tokens={"tok": "write" | "read"})``; without that mapping any token writes. A missing repo
is 404 ``RepoNotFound`` with a token, 401 without (as for models).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import re
import time
from typing import Any
from urllib.parse import parse_qs, quote

import yaml

from .datasets import REGULAR_LIMIT, DatasetRepo, lfs_patterns, tracked
from .resolve import clean_repo_path
from .wire import HttpError, Response, json_response, token_of

SHA256 = re.compile(r"[0-9a-f]{64}")
STALE_PARENT = "The branch was updated since you opened this page. Please refresh and try again."
TOO_LARGE = ("Your push was rejected because it contains files larger than 10 MiB. Please use "
             "https://git-lfs.github.com/ to store large files.")
MISSING_OBJECT = ("Your push was rejected because an LFS pointer pointed to a file that does not exist. "
                  "For instance, this can happen if you used git push --no-verify to push your changes.")
COMMIT_QUOTA = "You have exceeded our hourly quotas for action: commit. We invite you to retry later."
READ_ONLY = "You must use a write token to upload to a repository."
NO_NAMESPACE = "You don't have the rights to create a dataset under this namespace"
LFS_JSON = "application/vnd.git-lfs+json"


class DatasetEndpoints:
    """Part of :class:`~indexer.hubsim.server.HubServer`: dataset repos and uploads. Uses the server's
    ``datasets`` (:class:`~indexer.hubsim.datasets.DatasetStore`), ``tokens``, ``dataset_namespaces``,
    ``commit_quota``, ``endpoint``, ``cdn_endpoint``, ``tree_page_size`` and ``_next_link``."""

    # Set by the class this is mixed into (declared here for the type checker).
    _commit_windows: Any
    _count: Any
    _file_response: Any
    _lock: Any
    _next_link: Any
    cdn_endpoint: Any
    commit_quota: Any
    dataset_namespaces: Any
    datasets: Any
    endpoint: Any
    tokens: Any
    tree_page_size: Any
    upload_secret: Any

    # -- who may do what -----------------------------------------------------------------------------
    def _role(self, headers) -> str | None:
        """``write``, ``read`` or None (no token); an unknown token is 401, as the Hub answers a bad token."""
        token = token_of(headers)
        if token is None:
            return None
        if self.tokens is None:
            return "write"
        if token not in self.tokens:
            raise HttpError(401, None, "Invalid credentials in Authorization header")
        return self.tokens[token]

    def _writable(self, repo_id: str) -> bool:
        return self.dataset_namespaces is None or repo_id.split("/")[0] in self.dataset_namespaces

    def _dataset(self, repo_id: str, headers) -> DatasetRepo:
        role = self._role(headers)
        repo = self.datasets.repos.get(repo_id)
        if repo is None or (repo.private and role is None):
            if role is None:
                raise HttpError(401, "RepoNotFound", "Repository not found",
                                {"WWW-Authenticate": 'Bearer realm="Authentication required", charset="UTF-8"'})
            raise HttpError(404, "RepoNotFound", "Repository not found")
        return repo

    def _writer(self, repo_id: str, headers) -> DatasetRepo:
        repo = self._dataset(repo_id, headers)
        role = self._role(headers)
        if role is None:
            raise HttpError(401, None, "You must be authenticated to upload to a repository.")
        if role != "write":
            raise HttpError(403, None, READ_ONLY)
        if not self._writable(repo_id):
            raise HttpError(403, None, f"You don't have the rights to write to {repo_id}")
        return repo

    @staticmethod
    def _commit_at(repo: DatasetRepo, rev: str):
        c = repo.at(rev)
        if c is None:
            raise HttpError(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        return c

    # -- /api ------------------------------------------------------------------------------------------
    def _dataset_api(self, method: str, segs: list[str], query: dict, body: bytes, headers) -> Response:
        """``/api/repos/create`` and ``/api/datasets/ORG/NAME/...`` (``segs`` after ``api``)."""
        if segs == ["repos", "create"] and method == "POST":
            return self._create_repo(body, headers)
        if segs == ["validate-yaml"] and method == "POST":
            return validate_yaml(body)
        if len(segs) < 3:
            raise HttpError(404, None, "Not Found")
        repo_id, rest = f"{segs[1]}/{segs[2]}", segs[3:]
        if method == "GET" and not rest:
            return self._dataset_info(repo_id, "main", query, headers)
        if method == "GET" and len(rest) == 2 and rest[0] == "revision":
            return self._dataset_info(repo_id, rest[1], query, headers)
        if method == "POST" and len(rest) == 2 and rest[0] == "paths-info":
            return self._dataset_paths_info(repo_id, rest[1], body, headers)
        if method == "GET" and rest == ["refs"]:
            repo = self._dataset(repo_id, headers)
            branch = {"name": "main", "ref": "refs/heads/main", "targetCommit": repo.head.oid}
            return json_response({"branches": [branch], "converts": [], "tags": []})
        if method == "GET" and len(rest) == 2 and rest[0] == "commits":
            return self._commits(repo_id, rest[1], query, headers)
        if method == "GET" and len(rest) >= 2 and rest[0] == "tree":
            return self._dataset_tree(repo_id, rest[1], "/".join(rest[2:]), query, headers)
        if method == "POST" and len(rest) == 2 and rest[0] == "preupload":
            return self._preupload(repo_id, rest[1], query, body, headers)
        if method == "POST" and len(rest) == 2 and rest[0] == "commit":
            return self._commit(repo_id, rest[1], query, body, headers)
        raise HttpError(404, None, "Not Found")

    def _create_repo(self, body: bytes, headers) -> Response:
        role = self._role(headers)
        if role is None:
            raise HttpError(401, None, "Invalid username or password.")
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            raise HttpError(400, None, "Invalid JSON body") from None
        if req.get("type") != "dataset":
            raise HttpError(400, None, "this imitation creates dataset repos only")
        name, org = req.get("name") or "", req.get("organization") or "hubsim"
        repo_id = f"{org}/{name}"
        url = f"{self.endpoint}/datasets/{repo_id}"
        if repo_id in self.datasets.repos:
            return json_response({"error": "You already created this dataset repo", "url": url}, 409)
        if role != "write" or not self._writable(repo_id):
            raise HttpError(403, None, NO_NAMESPACE)
        private = req.get("visibility") == "private" if "visibility" in req else bool(req.get("private"))
        self.datasets.create(repo_id, private)
        return json_response({"url": url, "name": repo_id, "id": repo_id})

    def _dataset_info(self, repo_id: str, rev: str, query: dict, headers) -> Response:
        repo = self._dataset(repo_id, headers)
        c = self._commit_at(repo, rev)
        blobs = (query.get("blobs") or ["false"])[-1].lower() == "true"
        siblings = []
        for path, fe in sorted(c.files.items()):
            s = {"rfilename": path}
            if blobs:
                s.update(size=fe.size, blobId=fe.oid)
                if fe.lfs:
                    s["lfs"] = {"size": fe.size, "sha256": fe.sha256, "pointerSize": fe.pointer_size}
            siblings.append(s)
        return json_response({
            "_id": hashlib.sha1(repo.id.encode()).hexdigest()[:24], "id": repo.id, "author": repo.id.split("/")[0],
            "sha": c.oid, "private": repo.private, "gated": False, "disabled": False, "lastModified": c.date,
            "createdAt": repo.created_at, "tags": [], "downloads": 0, "likes": 0, "siblings": siblings,
        })

    @staticmethod
    def _dataset_entry(c, path: str) -> dict | None:
        fe = c.files.get(path)
        if fe is not None:
            out = {"type": "file", "oid": fe.oid, "size": fe.size, "path": path}
            if fe.lfs:
                out["lfs"] = {"oid": fe.sha256, "size": fe.size, "pointerSize": fe.pointer_size}
            return out
        if path in c.dirs:
            return {"type": "directory", "oid": hashlib.sha1(path.encode()).hexdigest(), "size": 0, "path": path}
        return None

    def _dataset_paths_info(self, repo_id: str, rev: str, body: bytes, headers) -> Response:
        c = self._commit_at(self._dataset(repo_id, headers), rev)
        form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        out, seen = [], set()
        for p in form.get("paths", []):
            p = p.strip("/")
            entry = None if p in seen else self._dataset_entry(c, p)
            seen.add(p)
            if entry is not None:
                out.append(entry)
        return json_response(out)

    def _commits(self, repo_id: str, rev: str, query: dict, headers) -> Response:
        repo = self._dataset(repo_id, headers)
        c = self._commit_at(repo, rev)
        history = list(reversed(repo.commits[: repo.commits.index(c) + 1]))
        start = int((query.get("cursor") or ["0"])[-1] or 0)
        size = self.tree_page_size
        page = [{"id": x.oid, "authors": [{"user": "hubsim"}], "date": x.date, "title": x.title,
                 "message": x.message} for x in history[start * size:(start + 1) * size]]
        link = {}
        if (start + 1) * size < len(history):
            raw = f"/api/datasets/{repo.id}/commits/{quote(rev, safe='')}"
            link["Link"] = self._next_link(headers, raw, query, start + 1)
        return json_response(page, headers=link)

    def _dataset_tree(self, repo_id: str, rev: str, path: str, query: dict, headers) -> Response:
        c = self._commit_at(self._dataset(repo_id, headers), rev)
        path = path.strip("/")
        if path and path not in c.dirs:
            raise HttpError(404, "EntryNotFound", f"{path} does not exist", {"X-Repo-Commit": c.oid})
        recursive = (query.get("recursive") or ["false"])[-1].lower() == "true"
        prefix = path + "/" if path else ""
        names = sorted(p for p in [*c.dirs, *c.files]
                       if p.startswith(prefix) and (recursive or "/" not in p[len(prefix):]))
        return json_response([self._dataset_entry(c, p) for p in names])

    # -- upload --------------------------------------------------------------------------------------
    def _preupload(self, repo_id: str, rev: str, query: dict, body: bytes, headers) -> Response:
        repo = self._writer(repo_id, headers)
        c = self._commit_at(repo, rev)
        try:
            files = json.loads(body)["files"]
        except (ValueError, KeyError, TypeError):
            raise HttpError(400, None, "Invalid preupload body") from None
        patterns = lfs_patterns(_text(c.files.get(".gitattributes")))
        out = []
        for f in files:
            path, size = clean_repo_path(str(f.get("path", ""))), int(f.get("size") or 0)
            sample = base64.b64decode(f.get("sample") or "")
            lfs = size > 0 and (tracked(path, patterns) or size > REGULAR_LIMIT or b"\0" in sample)
            entry = {"path": path, "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False}
            old = c.files.get(path)
            if old is not None:
                entry["oid"] = old.sha256 if old.lfs else old.blob_sha1
            out.append(entry)
        return json_response({"files": out, "commitOid": c.oid})

    def _sign(self, repo_id: str, oid: str, size: int) -> str:
        return hmac.new(self.upload_secret, f"{repo_id}\n{oid}\n{size}".encode(), hashlib.sha256).hexdigest()

    def _dataset_git(self, method: str, segs: list[str], query: dict, body: bytes, headers) -> Response:
        """``/datasets/ORG/NAME.git/info/lfs/objects/{batch,verify}`` and ``/datasets/ORG/NAME/resolve/...``."""
        if len(segs) >= 6 and segs[3] == "resolve" and method in ("GET", "HEAD"):
            return self._dataset_resolve(method, f"{segs[1]}/{segs[2]}", segs[4], "/".join(segs[5:]), headers)
        if len(segs) == 7 and segs[2].endswith(".git") and segs[3:6] == ["info", "lfs", "objects"] \
                and method == "POST":
            repo = self._writer(f"{segs[1]}/{segs[2][:-4]}", headers)
            try:
                req = json.loads(body)
            except ValueError:
                raise HttpError(400, None, "Invalid JSON body") from None
            if segs[6] == "batch":
                return self._lfs_batch(repo, req)
            if segs[6] == "verify":
                if repo.objects.get(str(req.get("oid"))) != req.get("size"):
                    return json_response({"message": "Object does not exist"}, 404)
                return json_response({"success": True})
        raise HttpError(404, None, "Not Found")

    def _lfs_batch(self, repo: DatasetRepo, req: dict) -> Response:
        if req.get("operation") != "upload" or "basic" not in (req.get("transfers") or ["basic"]):
            raise HttpError(422, None, "Only basic uploads are imitated")
        objects = []
        for obj in req.get("objects") or []:
            oid, size = str(obj.get("oid", "")), obj.get("size")
            if not SHA256.fullmatch(oid) or not isinstance(size, int) or size < 0:
                objects.append({"oid": oid, "size": size, "error": {"code": 422, "message": "Invalid object"}})
                continue
            out = {"oid": oid, "size": size, "authenticated": True}
            if repo.objects.get(oid) != size:  # already stored: no actions, the client skips it
                href = (f"{self.cdn_endpoint}/lfs-upload/{oid}?repo={quote(repo.id)}&size={size}"
                        f"&X-Amz-Signature={self._sign(repo.id, oid, size)}")
                verify = f"{self.endpoint}/datasets/{repo.id}.git/info/lfs/objects/verify"
                out["actions"] = {"upload": {"href": href, "expires_in": 3600},
                                  "verify": {"href": verify, "expires_in": 3600}}
            objects.append(out)
        return Response(200, {"Content-Type": LFS_JSON}, json.dumps({"transfer": "basic", "objects": objects}).encode())

    def _cdn_upload(self, segs: list[str], query: dict, body: bytes) -> Response:
        """The presigned ``PUT`` of one LFS object: no token, the signature in the URL is the permission."""
        oid = segs[1] if len(segs) == 2 else ""
        repo_id, size = (query.get("repo") or [""])[-1], (query.get("size") or [""])[-1]
        sig = (query.get("X-Amz-Signature") or [""])[-1]
        if not SHA256.fullmatch(oid) or not size.isdigit() or not hmac.compare_digest(
                sig, self._sign(repo_id, oid, int(size))) or repo_id not in self.datasets.repos:
            raise HttpError(403, None, "SignatureDoesNotMatch")
        if len(body) != int(size) or hashlib.sha256(body).hexdigest() != oid:
            raise HttpError(400, None, "BadDigest: the content does not match its sha256 and size")
        self.datasets.put_object(self.datasets.repos[repo_id], oid, body)
        return Response(200, {"ETag": f'"{hashlib.md5(body).hexdigest()}"'})  # noqa: S324 - S3's ETag is an MD5

    def _commit(self, repo_id: str, rev: str, query: dict, body: bytes, headers) -> Response:
        repo = self._writer(repo_id, headers)
        if query.get("create_pr"):
            raise HttpError(400, None, "pull requests are not imitated")
        if rev != "main":
            raise HttpError(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        self._take_commit_quota(token_of(headers))
        try:
            lines = [json.loads(x) for x in body.decode("utf-8").splitlines() if x.strip()]
        except ValueError:
            raise HttpError(400, None, "Invalid NDJSON body") from None
        head = next((x["value"] for x in lines if x.get("key") == "header"), None)
        if not isinstance(head, dict) or not head.get("summary"):
            raise HttpError(400, None, "A commit needs a header with a summary")
        with self.datasets.lock:
            parent = head.get("parentCommit")
            if parent and not repo.head.oid.startswith(str(parent)):
                raise HttpError(412, None, STALE_PARENT)
            files = dict(repo.head.files)
            new_lfs = [self._apply(repo, files, x) for x in lines if x.get("key") != "header"]
            self._track(files, [p for p in new_lfs if p])
            c = self.datasets.commit(repo, files, head["summary"], head.get("description") or "")
        self._count("commits")
        url = f"{self.endpoint}/datasets/{repo.id}/commit/{c.oid}"
        return json_response({"success": True, "commitOid": c.oid, "commitUrl": url, "hookOutput": ""})

    def _apply(self, repo: DatasetRepo, files: dict, op: dict) -> str | None:
        """Apply one NDJSON operation to ``files``; the path of a new LFS file, for ``.gitattributes``."""
        key, value = op.get("key"), op.get("value") or {}
        path = clean_repo_path(str(value.get("path", "")))
        if key == "file":
            data = base64.b64decode(value.get("content") or "")
            if len(data) > REGULAR_LIMIT:
                raise HttpError(400, None, TOO_LARGE)
            files[path] = self.datasets.regular(path, data)
        elif key == "lfsFile":
            oid, size = str(value.get("oid", "")), value.get("size")
            if repo.objects.get(oid) is None or (size is not None and repo.objects[oid] != size):
                raise HttpError(400, None, MISSING_OBJECT)
            files[path] = self.datasets.lfs_entry(path, oid, repo.objects[oid])
            return path
        elif key == "deletedFile":
            if files.pop(path, None) is None:
                raise HttpError(404, "EntryNotFound", f"{path} does not exist")
        elif key == "deletedFolder":
            for p in [p for p in files if p.startswith(path.rstrip("/") + "/")]:
                del files[p]
        else:
            raise HttpError(400, None, f"Unknown operation {key!r}")
        return None

    def _track(self, files: dict, lfs_paths: list[str]) -> None:
        """Add a ``.gitattributes`` line for each LFS path no pattern tracks (huggingface.js api-commit.ts:109)."""
        text = _text(files.get(".gitattributes"))
        patterns = lfs_patterns(text)
        lines = [f"{p} filter=lfs diff=lfs merge=lfs -text\n" for p in lfs_paths if not tracked(p, patterns)]
        if lines:
            text = text + ("" if not text or text.endswith("\n") else "\n") + "".join(lines)
            files[".gitattributes"] = self.datasets.regular(".gitattributes", text.encode())

    def _take_commit_quota(self, token: str | None) -> None:
        """``commit_quota=(N, seconds)``: the N+1st commit of a token in a fixed window is 429 with Retry-After."""
        if self.commit_quota is None:
            return
        limit, window = self.commit_quota
        now = time.monotonic()
        with self._lock:
            start, used = self._commit_windows.get(token, (now, 0))
            if now - start >= window:
                start, used = now, 0
            if used >= limit:
                wait = max(1, math.ceil(window - (now - start)))
                raise HttpError(429, None, COMMIT_QUOTA, {"Retry-After": str(wait)})
            self._commit_windows[token] = (start, used + 1)

    # -- download ------------------------------------------------------------------------------------
    def _dataset_resolve(self, method: str, repo_id: str, rev: str, path: str, headers) -> Response:
        clean_repo_path(path)
        c = self._commit_at(self._dataset(repo_id, headers), rev)
        fe = c.files.get(path)
        if fe is None:
            raise HttpError(404, "EntryNotFound", "Entry not found", {"X-Repo-Commit": c.oid})
        common = {"X-Repo-Commit": c.oid, "Accept-Ranges": "bytes"}
        if fe.lfs:  # legacy LFS storage: no Xet headers (an object uploaded over LFS, docs/hub-upload.md §2.8)
            location = f"{self.cdn_endpoint}/cdn/{fe.sha256}?repo={quote(repo_id)}&file={quote(path)}"
            return Response(302, {**common, "Location": location, "X-Linked-Etag": f'"{fe.sha256}"',
                                  "X-Linked-Size": str(fe.size), "ETag": f'"{fe.oid}"'})
        resp = Response(200, {**common, "ETag": f'"{fe.blob_sha1}"', "Content-Type": "application/octet-stream"})
        return self._file_response(resp, fe, method, headers)


def validate_yaml(body: bytes) -> Response:
    """``POST /api/validate-yaml``, which ``create_commit`` sends before committing a README.md
    (huggingface_hub ``hf_api.py:5185-5192``, ``:11679-11719``): 400 with ``errors`` for metadata the Hub would
    not accept (YAML that does not parse or is no mapping; ``configs`` entries without ``config_name`` or
    ``data_files``), else ``warnings`` (an empty metadata block)."""
    try:
        content = json.loads(body)["content"]
    except (ValueError, KeyError, TypeError):
        raise HttpError(400, None, "Invalid body") from None
    m = re.match(r"^---\n(.*?)\n---\n", content, re.S)
    if m is None:
        return json_response({"warnings": [{"message": "empty or missing yaml metadata in repo card"}]})
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError as e:
        return json_response({"errors": [{"message": f"Invalid YAML: {e}"}]}, 400)
    errors = []
    if not isinstance(meta, dict):
        errors.append("the metadata must be a mapping")
    else:
        for cfg in meta.get("configs") or []:
            if not isinstance(cfg, dict) or not cfg.get("config_name") or not cfg.get("data_files"):
                errors.append('"configs" entries need "config_name" and "data_files"')
    if errors:
        return json_response({"errors": [{"message": e} for e in errors]}, 400)
    return json_response({"warnings": []})


def _text(fe) -> str:
    if fe is None:
        return ""
    with open(fe.abs_path, "rb") as f:
        return f.read().decode("utf-8", "replace")

