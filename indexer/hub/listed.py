"""What the Hub says about a repo (:class:`Listed`, from a listing item or ``model_info``), and the checks
on names the Hub hands us before they touch the disk.

A listing refuses ``expand=baseModels`` (and ``childrenModelCount``, ``usedStorage``) with 400; only
``/api/models/{id}`` serves them (huggingface_hub PR #3182). ``LIST_EXPAND`` holds only what a listing
accepts; base models come from the ``base_model:<relation>:<id>`` tags instead (``base_models_from_tags``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from ..errors import UnsafeName

if TYPE_CHECKING:
    from huggingface_hub.hf_api import ExpandModelProperty_T

# What GET /api/models accepts in ``expand``: ExpandModelProperty_T (hf_api.py:159-191) minus
# baseModels, childrenModelCount and usedStorage, which only /api/models/{id} serves (PR #3182).
LIST_EXPAND: list[ExpandModelProperty_T] = [
    "sha", "lastModified", "createdAt", "downloads", "likes", "pipeline_tag", "library_name", "tags",
    "gated", "disabled", "private", "safetensors", "siblings", "config",
]
# ``--all``: the pipelines whose repos can be speculative-decoding targets or drafts
# (image-text-to-text repos have text towers that serve as targets too).
ALL_PIPELINES = ("text-generation", "image-text-to-text")
BASE_MODEL_RELATIONS = ("finetune", "quantized", "adapter", "merge")
_HEX = re.compile(r"^[0-9a-f]{40}$|^[0-9a-f]{64}$")
_SHA = re.compile(r"^[0-9a-f]{40}$")


def safe_name(name: str) -> str:
    """Validate a Hub-provided file name before it is used as (part of) a local path."""
    if not isinstance(name, str) or not name or len(name) > 255:
        raise UnsafeName(f"bad file name {name!r}")
    if name.startswith(("/", "~")) or "\\" in name or "\0" in name or re.match(r"^[A-Za-z]:", name):
        raise UnsafeName(f"unsafe file name {name!r}")
    if any(part in ("", ".", "..") for part in name.split("/")):
        raise UnsafeName(f"unsafe file name {name!r}")
    return name


def safe_blob_id(blob_id: str) -> str:
    """Validate a Hub-provided blob id (git sha1 or LFS sha256) before it names a file in the blob store."""
    if not isinstance(blob_id, str) or not _HEX.match(blob_id):
        raise UnsafeName(f"bad blob id {blob_id!r}")
    return blob_id


def is_commit_sha(sha) -> bool:
    """Whether ``sha`` is a full commit sha, so a download can be pinned to it."""
    return isinstance(sha, str) and bool(_SHA.match(sha))


def git_blob_sha1(data: bytes) -> str:
    """The git blob id of ``data``, to check a download against the id paths-info announced."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def base_models_from_tags(tags) -> tuple[list[str] | None, dict[str, str | None] | None]:
    """(ids, {id: relation}) from ``base_model:<id>`` / ``base_model:<relation>:<id>`` tags.

    The Hub adds both tags for every base model a card declares (HUB-API §0.2); the first id is the
    primary parent. A bare ``base_model:<id>`` without a relation tag keeps relation None.
    """
    ids: list[str] = []
    relations: dict[str, str] = {}
    for tag in tags or ():
        if not isinstance(tag, str) or not tag.startswith("base_model:"):
            continue
        rest = tag[len("base_model:"):]
        relation, sep, rid = rest.partition(":")
        if sep and relation in BASE_MODEL_RELATIONS:
            relations[rid] = relation
        else:
            rid = rest
        if rid and "/" in rid and rid not in ids:
            ids.append(rid)
    if not ids:
        return None, None
    return ids, {i: relations.get(i) for i in ids}


def _utc(dt) -> str | None:
    if dt is None:
        return None
    if dt.tzinfo is not None:
        dt = dt.astimezone(timezone.utc).replace(tzinfo=None)
    return dt.isoformat()


@dataclass
class Listed:
    """What a listing item (or model_info) says about a repo: everything the crawl needs, JSON-able,
    so an unresolved repo can be queued in the catalog and resumed without asking the Hub again."""

    id: str
    sha: str | None = None
    author: str | None = None
    created_at: str | None = None  # naive UTC ISO
    last_modified: str | None = None
    pipeline_tag: str | None = None
    library_name: str | None = None
    tags: list[str] | None = None
    gated: str | None = None
    disabled: bool = False
    private: bool = False
    downloads: int | None = None
    likes: int | None = None
    params: int | None = None
    siblings: list[str] | None = None
    config: dict = field(default_factory=dict)

    @classmethod
    def from_info(cls, info) -> Listed:
        """From huggingface_hub's ``ModelInfo`` (a listing item or ``model_info``), keeping only what the crawl uses."""
        st = getattr(info, "safetensors", None)
        sibs = getattr(info, "siblings", None)
        cfg = getattr(info, "config", None)
        gated = getattr(info, "gated", None)
        return cls(
            id=info.id,
            sha=getattr(info, "sha", None),
            author=getattr(info, "author", None),
            created_at=_utc(getattr(info, "created_at", None)),
            last_modified=_utc(getattr(info, "last_modified", None)),
            pipeline_tag=getattr(info, "pipeline_tag", None),
            library_name=getattr(info, "library_name", None),
            tags=list(info.tags) if getattr(info, "tags", None) is not None else None,
            gated=str(gated) if gated else None,
            disabled=bool(getattr(info, "disabled", False)),
            private=bool(getattr(info, "private", False)),
            downloads=getattr(info, "downloads", None),
            likes=getattr(info, "likes", None),
            params=getattr(st, "total", None) if st else None,
            siblings=[s.rfilename for s in sibs] if sibs is not None else None,
            config=cfg if isinstance(cfg, dict) else {},
        )

    def to_json(self) -> dict:
        """JSON for ``crawl_queue``, so the next run resumes the repo without asking the Hub again."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Listed:
        """Back from :meth:`to_json`, ignoring keys an older or newer version wrote."""
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})

    @staticmethod
    def when(value: str | None) -> datetime | None:
        """A stored naive-UTC ISO time back as a datetime (None stays None)."""
        return datetime.fromisoformat(value) if value else None
