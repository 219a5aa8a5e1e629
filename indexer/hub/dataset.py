"""A Hub *dataset* repo as ``publish --to-hub`` and ``pull`` use it, through huggingface_hub 2.4.0 only.

Where each call's behaviour is written (docs/hub-upload.md):

* ``create_repo(repo_type="dataset", exist_ok=True)`` (§1) succeeds with a read-only token on an existing repo
  (``hf_api.py:4770-4781``): it is no write check; the preupload of ``create_commit`` is, and it comes before any
  byte is uploaded (§2.2, §4);
* ``create_commit`` does not retry its commit POST (``_commit_api.py:1064-1067``, §2.4): a 429 there is waited
  out here (``Retry-After``); a stale ``parent_commit`` is 412 (§2.5), a plain ``HfHubHTTPError``;
* ``dataset_info(files_metadata=True)`` is one API call that names the head commit and each file's LFS sha256
  (``hf_api.py:3273-3287``; ``RepoSibling.lfs``): the cheap first request of ``pull``;
* ``hf_hub_download(local_dir=...)`` unlinks the old file first and checks only the size (§3): callers download
  into a staging directory and hash the file themselves. The module function does not inherit an ``HfApi``
  token (§3), so it is passed.

Xet is off (``indexer/__init__.py`` sets ``HF_HUB_DISABLE_XET=1`` before huggingface_hub is imported; §2.8: with
Xet on and no Xet server the upload fails with no fallback). The token is passed to the client, never stored.
"""

from __future__ import annotations

import errno
import io
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

from huggingface_hub import CommitOperationAdd, HfApi, constants, hf_hub_download
from huggingface_hub.errors import (
    HfHubHTTPError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.utils import (
    are_progress_bars_disabled,
    disable_progress_bars,
    enable_progress_bars,
    validate_repo_id,
)
from tqdm import tqdm

from .. import __version__
from ..errors import DatasetError

LIBRARY_NAME = "indexer"
MAX_COMMIT_WAITS = 5  # 429s on the commit POST waited out before giving up
MAX_WAIT_SECONDS = 900.0
MAX_JSON_BYTES = 16 << 20  # a JSON file of the dataset repo read into memory (manifest.json)
DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EACCES, errno.EROFS, errno.EPERM)


def _status(e) -> int | None:
    return getattr(getattr(e, "response", None), "status_code", None)


def _server_message(e) -> str:
    resp = getattr(e, "response", None)
    msg = resp.headers.get("X-Error-Message") if resp is not None else None
    if not msg and resp is not None:
        try:
            msg = resp.json().get("error")
        except Exception:  # noqa: BLE001 - not JSON
            msg = None
    return msg or str(e).splitlines()[0]


def retry_after(e, default: float = 60.0) -> float:
    """Seconds a 429 asks to wait: ``Retry-After`` (integer seconds), else ``default``."""
    resp = getattr(e, "response", None)
    value = resp.headers.get("Retry-After") if resp is not None else None
    return float(value) if value and value.strip().isdigit() else default


class DatasetRepo:
    """One dataset repo on one endpoint, with one token (or none: public reads)."""

    def __init__(self, repo_id: str, *, endpoint: str | None = None, token: str | None = None):
        constants.HF_HUB_DISABLE_XET = True  # as HubSession does, for a process that imported the client first
        if constants.HF_HUB_OFFLINE:
            raise DatasetError("HF_HUB_OFFLINE is set: the Hub cannot be reached; unset it to publish or pull")
        try:
            validate_repo_id(repo_id)
            if repo_id.count("/") != 1:
                raise ValueError("give ORG/NAME")
        except ValueError as e:
            raise DatasetError(f"{repo_id!r} is not a dataset repo id (ORG/NAME): {str(e).splitlines()[0]}") from None
        self.repo_id = repo_id
        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
        self._token = token
        self.api = HfApi(endpoint=self.endpoint, token=token or False, library_name=LIBRARY_NAME,
                         library_version=__version__)

    def _fail(self, e, doing: str) -> DatasetError:
        """One line for a refused or failed call: access problems exit 2, the rest (network, 5xx) exit 1."""
        status = _status(e)
        if isinstance(e, RepositoryNotFoundError):
            return DatasetError(f"dataset {self.repo_id} not found on {self.endpoint} (or the token cannot see it)")
        if isinstance(e, RevisionNotFoundError):
            return DatasetError(f"dataset {self.repo_id} has no revision named so: {_server_message(e)}")
        if status in (401, 403):
            what = "no token was given (set HF_TOKEN to a write token)" if not self._token else "the token was refused"
            return DatasetError(f"cannot {doing} {self.repo_id}: {status} {_server_message(e)} ({what})")
        if isinstance(e, HfHubHTTPError) and status is not None and status < 500:
            return DatasetError(f"cannot {doing} {self.repo_id}: {status} {_server_message(e)}")
        return DatasetError(f"cannot {doing} {self.repo_id} on {self.endpoint}: {type(e).__name__}: "
                            f"{str(e).splitlines()[0] if str(e) else ''}", exit_code=1)

    def ensure(self) -> None:
        """Create the (public) dataset repo unless it exists: ``create_repo(exist_ok=True)``."""
        try:
            self.api.create_repo(self.repo_id, repo_type="dataset", exist_ok=True, private=False)
        except Exception as e:  # noqa: BLE001 - worded by _fail
            raise self._fail(e, "create") from None

    def info(self, revision: str = "main"):
        """``dataset_info`` with file metadata: the commit ``revision`` resolves to and each file's LFS facts."""
        try:
            return self.api.dataset_info(self.repo_id, revision=revision, files_metadata=True)
        except Exception as e:  # noqa: BLE001
            raise self._fail(e, "read") from None

    def download(self, path: str, sha: str, local_dir: Path) -> Path:
        """``hf_hub_download`` of one file at commit ``sha`` into ``local_dir`` (a progress bar for big files)."""
        try:
            return Path(hf_hub_download(self.repo_id, path, repo_type="dataset", revision=sha,
                                        local_dir=str(local_dir), endpoint=self.endpoint, token=self._token or False,
                                        library_name=LIBRARY_NAME, library_version=__version__))
        except Exception as e:  # noqa: BLE001
            if isinstance(e, OSError) and e.errno in DISK_ERRNOS:  # full disk, no permission: not the Hub's fault
                raise DatasetError(f"cannot write into {local_dir}: {e.strerror or e}", exit_code=1) from None
            raise self._fail(e, f"download {path} of") from None

    def read_json(self, path: str, sha: str, scratch: Path) -> dict | None:
        """A JSON file of the repo at ``sha`` (None when the repo has no such file)."""
        try:
            local = hf_hub_download(self.repo_id, path, repo_type="dataset", revision=sha, local_dir=str(scratch),
                                    endpoint=self.endpoint, token=self._token or False,
                                    library_name=LIBRARY_NAME, library_version=__version__)
        except RemoteEntryNotFoundError:
            return None
        except Exception as e:  # noqa: BLE001
            raise self._fail(e, f"read {path} of") from None
        size = Path(local).stat().st_size
        if size > MAX_JSON_BYTES:  # a manifest is a few KB: a bigger file is not one, and is not read into memory
            raise DatasetError(f"{self.repo_id}: {path} is {size} bytes, over the {MAX_JSON_BYTES}-byte cap of a "
                               "manifest", exit_code=1)
        try:
            return json.loads(Path(local).read_text("utf-8"))
        except ValueError:
            return None

    def commit(self, files: dict[str, Path], parent: str, message: str, *, sleep=time.sleep,
               max_wait: float = MAX_WAIT_SECONDS, progress: bool = False) -> str:
        """One commit of ``files`` (path in repo -> local file) on top of ``parent``; returns the new commit id.

        A 429 on the commit is waited out (``Retry-After``) and the commit sent again, up to MAX_COMMIT_WAITS
        times; a 412 (``parent`` is no longer the head) raises :class:`StaleParent` for the caller to re-read.
        The client's own bars (one per LFS file and one over them) are off; ``progress``: one bar of the bytes
        read for the upload instead (a terminal only: a log gets no escape codes).
        """
        ops = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(f)) for p, f in sorted(files.items())]
        waits = 0
        while True:
            try:
                with _one_bar(ops, progress):
                    info = self.api.create_commit(self.repo_id, ops, commit_message=message, repo_type="dataset",
                                                  parent_commit=parent)
                return info.oid
            except Exception as e:  # noqa: BLE001
                status = _status(e)
                if status == 412:
                    raise StaleParent(_server_message(e)) from None
                if status == 429 and waits < MAX_COMMIT_WAITS:
                    waits += 1
                    sleep(min(retry_after(e), max_wait))
                    continue
                raise self._fail(e, "commit to") from None


class _Counted(io.BufferedReader):
    """A file whose reads advance a progress bar (``CommitOperationAdd.as_file`` yields a buffered reader as is,
    huggingface_hub 2.4.0 ``_commit_api.py``; a path would get the client's own bar)."""

    def __init__(self, path: str, bar):
        super().__init__(io.FileIO(path, "rb"))
        self.bar = bar

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.bar.update(len(data))
        return data


@contextmanager
def _one_bar(ops, progress: bool):
    """The client's bars off for the commit; with ``progress`` one bar of every file's bytes instead."""
    was_off = are_progress_bars_disabled()
    disable_progress_bars()
    bar, opened = None, []
    try:
        if progress:
            bar = tqdm(total=sum(os.path.getsize(op.path_or_fileobj) for op in ops), unit="B", unit_scale=True,
                       desc="upload", dynamic_ncols=True)
            for op in ops:  # upload_info (sizes, sha256) was read from the path already
                op.path_or_fileobj = _Counted(op.path_or_fileobj, bar)
                opened.append(op.path_or_fileobj)
        yield
    finally:
        for f in opened:
            f.close()
        for op, f in zip(ops, opened, strict=False):
            op.path_or_fileobj = f.raw.name
        if bar is not None:
            bar.close()
        if not was_off:
            enable_progress_bars()


class StaleParent(DatasetError):
    """The branch moved since its head was read (HTTP 412): read it again before committing."""
