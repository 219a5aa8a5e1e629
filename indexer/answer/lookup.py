"""Finding the repo a person means: any letter case, a Hub URL, a bare name, a close misspelling.

Called by ``indexer query`` (``target.resolve_target``), the head answers (``headquery``) and the catalog side
of ``indexer check`` (``rule_inputs.side_from_catalog``), all over the request's
:class:`~indexer.catalog.reader.Reader`, so they take the same path: a ``rows(sql, params) -> list[tuple]``
callable and the SQL dialect's name. The probes themselves, each over an index, are ``catalog/repoids.py``.
"""

from __future__ import annotations

import json
import os
import re
from contextvars import ContextVar
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

from ..catalog import repoids
from ..catalog.repoids import Rows
from ..errors import InputError, RepoNotFound
from ..files import has_tokenizer
from ..gguf.names import local_gguf

# Web URLs of a model repo: https://huggingface.co/<org>/<name>[/tree/<rev>/...|/blob/...|/resolve/...]. The hosts are
# those the client treats as the Hub (huggingface_hub 2.4 constants.py:76-89 HF_URL_HOSTS: huggingface.co and its
# hf.co short domain); files live under /{repo_id}/resolve/{revision}/ (constants.py:70), so a segment after the
# name is a page of the repo, never part of its id.
_URL = re.compile(r"^(?:https?://)?(?:www\.)?(?:huggingface\.co|hf\.co)/(?P<path>[^?#]*)", re.IGNORECASE)
REPO_PAGES = {"tree", "blob", "resolve", "commit", "commits", "discussions", "settings", "edit", "raw"}
NOT_MODELS = {"datasets", "spaces", "collections", "papers", "docs", "organizations"}
SUGGESTIONS = 3
# The real Hub tags every repo whose card declares base_model with base_model:<id> and base_model:<relation>:<id>,
# relation finetune/quantized/adapter/merge (docs/hub-api.md section 0.1, item 2).
GGUF_BASE_TAG = "base_model:quantized:"


@dataclass(frozen=True)
class Match:
    """A catalog repo id found for what was typed, so the answer can say what it matched."""

    repo_id: str  # as stored in the catalog
    asked: str  # what the person typed, when it differs from repo_id (shown as "matched from")


# Off while the site answers: a web visitor's text is a repo id, never a path on the server (validate.target). The
# ContextVar ("indexer_local_dirs", default True) is made by the first repo_ids_only: a CLI process never enters one,
# so it never imports contextvars. dict.setdefault stores one var whichever thread
# comes first, so two requests never set different ones; before any exists, no block has turned the disk off.
_VARS: dict = {}


def _local_dirs_var():
    var = _VARS.get("local_dirs")
    if var is None:

        var = _VARS.setdefault("local_dirs", ContextVar("indexer_local_dirs", default=True))
    return var


class repo_ids_only:  # noqa: N801 - used as ``with repo_ids_only():``, as a contextlib.contextmanager was
    """Within this block no argument is taken for a local directory: the server's disk is never read.

    A class, not ``contextlib.contextmanager``: a query need not import contextlib."""

    def __enter__(self) -> None:
        self._var = _local_dirs_var()
        self._token = self._var.set(False)

    def __exit__(self, *exc) -> None:
        self._var.reset(self._token)


def looks_like_dir(arg: str) -> bool:
    """A CLI argument names a local directory (else it is a catalog repo id); never inside repo_ids_only()."""
    var = _VARS.get("local_dirs")
    if var is not None and not var.get():
        return False
    return arg.startswith((".", "/", "~")) or os.path.isdir(arg)


def local_gguf_arg(arg: str) -> Path | None:
    """The .gguf a local argument names: a .gguf file, or a directory with one GGUF model and no tokenizer
    files (a directory with tokenizer files is an HF model directory). Raises InputError when ambiguous."""
    p = Path(arg).expanduser()
    if p.is_dir() and has_tokenizer(p):
        return None
    if arg.lower().endswith(".gguf") and not p.is_file():
        raise InputError("error", f"{arg}: no such file")
    return local_gguf(p)


def hub_url_path(text: str) -> str | None:
    """The path of a Hub URL (what follows the host, up to ``?`` or ``#``); None if ``text`` is not one."""
    m = _URL.match(text)
    return m.group("path") if m else None


def repo_ref(text: str) -> str:
    """``org/name`` (or a bare name) from what was typed: a repo id or a Hub URL of the repo or a page of it."""
    ref = text.strip()
    path = hub_url_path(ref)
    if path is not None:
        parts = [p for p in path.split("/") if p]
        if parts and parts[0] == "models":
            parts = parts[1:]
        if not parts:
            raise RepoNotFound(f"{text} names no repo")
        if parts[0] in NOT_MODELS:
            raise RepoNotFound(f"{text} is a Hub {parts[0].rstrip('s')} page, not a model repo")
        ref = "/".join(parts[:2]) if len(parts) > 1 and parts[1] not in REPO_PAGES else parts[0]
    return ref.strip("/")


def find_repo_id(rows: Rows, text: str, dialect: str = "sqlite", where: str = "this catalog") -> Match:
    """The catalog repo id ``text`` means, else :class:`RepoNotFound` with the closest ids."""
    ref = repo_ref(text)
    asked = text if text != ref else ""
    hit = repoids.exact(rows, ref)
    if hit is not None:
        return Match(hit, asked)
    hits = repoids.any_case(rows, ref)
    if not hits and "/" not in ref:
        hits = repoids.by_name(rows, ref, dialect)
    if len(hits) == 1:
        return Match(hits[0], text)
    if hits:
        raise RepoNotFound(f"{text} matches several repos: {', '.join(hits)}; give the full id", hits)
    close = suggest(rows, ref, dialect)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    add = (f"add it with `indexer crawl --model {ref}`" if "/" in ref
           else "give the full ORG/NAME id, or add the repo with `indexer crawl --model ORG/NAME`")
    raise RepoNotFound(f"{text} is not in {where}{hint} ({'or ' if close else ''}{add})", close)


def suggest(rows: Rows, ref: str, dialect: str = "sqlite", n: int = SUGGESTIONS) -> list[str]:
    """The catalog ids closest to ``ref``: candidates from prefix ranges of the two lookup indexes
    (same organisation; same start of the id; the name's first 3/4, 1/2, ... characters), scored with difflib."""
    low = ref.lower()
    org, _, name = low.rpartition("/")
    cands: set[str] = set()
    if org:
        cands.update(repoids.id_prefixed(rows, org + "/"))
        cands.update(repoids.id_prefixed(rows, low[:max(3, len(org) // 2)]))
    for k in sorted({len(name) - 1, 3 * len(name) // 4, len(name) // 2, 3}, reverse=True):
        if k >= 3:  # longest prefixes first: a long name's neighbours are not in the first rows of "mod"
            cands.update(repoids.name_prefixed(rows, name[:k], dialect))

    def score(cand: str) -> float:
        c = cand.lower()
        cname = c.rpartition("/")[2]
        best = SequenceMatcher(None, low, c).ratio()
        if not org:
            best = max(best, SequenceMatcher(None, name, cname).ratio())
        if name in cname:  # what was typed is part of the name (a suffix like -sft left out)
            best += 0.1
        return best

    scored = sorted(((score(c), c) for c in cands), key=lambda sc: (-sc[0], sc[1]))
    if not scored:
        return []
    floor = max(0.6, scored[0][0] - 0.1)  # only ids about as close as the closest
    return [c for s, c in scored if s >= floor][:n]


def gguf_base(tags) -> str | None:
    """The base a GGUF repo quantizes, from its ``base_model:quantized:<id>`` tag (first one wins).

    ``tags`` is the JSON column as a driver returns it: a list, or its text from stdlib sqlite3."""
    if isinstance(tags, str | bytes):
        try:
            tags = json.loads(tags)
        except ValueError:
            return None
    if not isinstance(tags, list):
        return None
    for tag in tags:
        if isinstance(tag, str) and tag.startswith(GGUF_BASE_TAG):
            return tag[len(GGUF_BASE_TAG):] or None
    return None
