"""The model JSON the Hub imitation answers: the ``ModelInfo`` fields of a repo (model info and listings),
which ``expand`` values each endpoint accepts, and the listing's lossy ``siblings`` (HUB-API §0.1.11).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .repos import FileEntry, Repo
from .wire import HttpError

# ExpandModelProperty_T (huggingface_hub hf_api.py:159-191): what /api/models/{id} accepts.
EXPAND_MODEL = (
    "author", "baseModels", "cardData", "childrenModelCount", "config", "createdAt", "disabled", "downloads",
    "downloadsAllTime", "evalResults", "gated", "gguf", "inference", "inferenceProviderMapping", "lastModified",
    "library_name", "likes", "mask_token", "model-index", "pipeline_tag", "private", "resourceGroup",
    "safetensors", "sha", "siblings", "spaces", "tags", "transformersInfo", "trendingScore", "usedStorage",
    "widgetData",
)
# A listing refuses these (huggingface_hub PR #3182: "only accepted when using the /api/models/repo_id
# endpoint"); the 2.4.0 list_models docstring leaves them out (hf_api.py:2380).
LIST_REFUSED_EXPAND = ("baseModels", "childrenModelCount", "usedStorage")
EXPAND_LIST = tuple(e for e in EXPAND_MODEL if e not in LIST_REFUSED_EXPAND)
DEFAULT_LIST_FIELDS = (
    "likes",
    "trendingScore",
    "private",
    "downloads",
    "tags",
    "pipeline_tag",
    "library_name",
    "createdAt",
    "modelId",
)
FULL_LIST_FIELDS = ("author", "sha", "lastModified", "gated", "disabled", "siblings")
MODEL_INFO_FIELDS = (
    "private",
    "pipeline_tag",
    "library_name",
    "tags",
    "downloads",
    "likes",
    "modelId",
    "author",
    "sha",
    "lastModified",
    "gated",
    "disabled",
    "config",
    "cardData",
    "transformersInfo",
    "siblings",
    "spaces",
    "safetensors",
    "baseModels",
    "createdAt",
    "usedStorage",
)
TOKENIZER_CONFIG_DIGEST_KEYS = ("bos_token", "eos_token", "pad_token", "unk_token", "chat_template")


def validate_expand(values, allowed) -> None:
    """The Hub's answer to an ``expand`` value the endpoint does not serve (HUB-API §0.1.1)."""
    for value in values:
        if value not in allowed:
            raise HttpError(400, None, f'"expand" must be one of [{", ".join(allowed)}]')


def base_models(meta: dict) -> dict:
    """Metadata ``baseModels`` (id, list of ids, or the Hub's dict) in the real Hub's shape."""
    base = meta["baseModels"]
    if isinstance(base, dict):
        return base
    ids = [base] if isinstance(base, str) else list(base)
    return {"relation": meta.get("baseRelation", "finetune"), "models": [{"id": i} for i in ids]}


class ModelJson:
    """Part of :class:`~indexer.hubsim.server.HubServer`: a repo's ``ModelInfo`` JSON. Uses the server's
    ``store``, ``lossy_siblings`` and ``_json_cache``."""

    # Set by the class this is mixed into (declared here for the type checker).
    _json_cache: Any
    lossy_siblings: Any
    store: Any

    def _config_digest(self, repo: Repo) -> dict | None:
        """What the real Hub serves as ``config``: a digest of config.json (+ tokenizer_config bits)."""
        cfg = self._read_json(repo, "config.json")
        if not isinstance(cfg, dict):
            return None
        digest = {k: cfg[k] for k in ("architectures", "model_type", "auto_map") if k in cfg}
        tok = self._read_json(repo, "tokenizer_config.json")
        if isinstance(tok, dict):
            sub = {k: tok[k] for k in TOKENIZER_CONFIG_DIGEST_KEYS if k in tok}
            if sub:
                digest["tokenizer_config"] = sub
        return digest

    def _read_json(self, repo: Repo, path: str):
        """Parsed JSON file of a repo (None if absent/invalid), cached by content id."""
        fe = repo.files.get(path)
        if fe is None:
            return None
        if fe.blob_sha1 not in self._json_cache:
            try:
                with open(fe.abs_path, encoding="utf-8") as f:
                    self._json_cache[fe.blob_sha1] = json.load(f)
            except (OSError, ValueError, RecursionError):  # nested too deeply: unparsable, as invalid JSON
                self._json_cache[fe.blob_sha1] = None
        return self._json_cache[fe.blob_sha1]

    def _field(self, repo: Repo, name: str, blobs: bool = False):
        """One ModelInfo field; KeyError when the repo has no value for it (the key is then omitted)."""
        m = repo.meta
        simple = {
            "id": lambda: repo.id,
            "modelId": lambda: repo.id,
            "_id": lambda: m.get("_id") or hashlib.sha1(repo.id.encode()).hexdigest()[:24],
            "author": lambda: m.get("author", repo.owner),
            "sha": lambda: repo.sha,
            "lastModified": lambda: repo.last_modified,
            "createdAt": lambda: repo.created_at,
            "downloads": lambda: m.get("downloads", 0),
            "downloadsAllTime": lambda: m.get("downloadsAllTime", m.get("downloads", 0)),
            "likes": lambda: m.get("likes", 0),
            "trendingScore": lambda: m.get("trendingScore", 0),
            "private": lambda: repo.private,
            "disabled": lambda: repo.disabled,
            "gated": lambda: repo.gated,
            "pipeline_tag": lambda: m.get("pipeline_tag", "text-generation"),
            "library_name": lambda: m.get("library_name", "transformers"),
            "tags": lambda: self._tags(repo),
            "spaces": lambda: [],
            "usedStorage": lambda: sum(fe.reported_size for fe in repo.files.values()),
            "siblings": lambda: [self._sibling(fe, blobs) for fe in repo.files.values()],
            "cardData": lambda: self._card_data(repo),
            "childrenModelCount": lambda: sum(
                1 for r in self.store.repos.values()
                if r.meta.get("baseModels") and repo.id in [x["id"] for x in base_models(r.meta)["models"]]),
        }
        if name in simple:
            return simple[name]()
        if name == "config":
            digest = self._config_digest(repo)
            if digest is None:
                raise KeyError(name)
            return digest
        if name == "safetensors" and m.get("params"):
            n = int(m["params"])
            return {"parameters": {m.get("dtype", "BF16"): n}, "total": n}
        if name == "baseModels" and m.get("baseModels"):
            return base_models(m)
        if name == "transformersInfo" and m.get("library_name", "transformers") == "transformers":
            return {
                "auto_model": "AutoModelForCausalLM",
                "pipeline_tag": m.get("pipeline_tag", "text-generation"),
                "processor": "AutoTokenizer",
            }
        raise KeyError(name)

    @staticmethod
    def _tags(repo: Repo) -> list[str]:
        """The repo's tags plus ``base_model:<id>`` and ``base_model:<relation>:<id>`` for each base model
        its card declares (HUB-API §0.1.2), as the Hub adds them."""
        tags = list(repo.meta.get("tags", ["transformers", "text-generation"]))
        if repo.meta.get("baseModels"):
            base = base_models(repo.meta)
            for m in base["models"]:
                for tag in (f"base_model:{m['id']}", f"base_model:{base['relation']}:{m['id']}"):
                    if tag not in tags:
                        tags.append(tag)
        return tags

    @staticmethod
    def _card_data(repo: Repo) -> dict:
        card = dict(repo.meta.get("cardData") or {})
        if repo.meta.get("baseModels") and "base_model" not in card:
            ids = [x["id"] for x in base_models(repo.meta)["models"]]
            card["base_model"] = ids[0] if len(ids) == 1 else ids
        return card

    @staticmethod
    def _sibling(fe: FileEntry, blobs: bool) -> dict:
        sib: dict[str, object] = {"rfilename": fe.path}
        if blobs:
            sib.update(blobId=fe.oid, size=fe.reported_size)
            if fe.lfs:
                sib["lfs"] = {"sha256": fe.sha256, "size": fe.reported_size, "pointerSize": fe.pointer_size}
        return sib

    def _model_json(self, repo: Repo, fields, blobs: bool = False, listing: bool = False) -> dict:
        out = {"_id": self._field(repo, "_id"), "id": repo.id}
        for name in fields:
            try:
                out[name] = self._field(repo, name, blobs)
            except KeyError:
                pass
        if listing and "siblings" in out:
            out["siblings"] = self._listing_siblings(repo, out["siblings"])
        return out

    def _listing_siblings(self, repo: Repo, siblings: list) -> list:
        """A listing's ``siblings`` as the Hub's cache sometimes serves them (HUB-API §0.1.11: empty or
        truncated; huggingface_hub PR #3241, #3565): per repo from ``listing_siblings``, else for a
        ``lossy_siblings`` share of repos, chosen by a hash of id and sha (stable across pages)."""
        lossy = repo.meta.get("listing_siblings")
        if lossy is None and self.lossy_siblings > 0:
            h = int(hashlib.sha1(f"{repo.id}@{repo.sha}".encode()).hexdigest()[:8], 16)
            if h / 0xFFFFFFFF < self.lossy_siblings:
                lossy = "empty" if h % 2 else max(0, len(siblings) // 3)
        if lossy is None:
            return siblings
        return [] if lossy == "empty" else siblings[: int(lossy)]
