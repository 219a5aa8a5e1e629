"""Input validation at the edges, in one place: targets, repo ids, limits, output directories.

The CLI's options and the site's URL parameters go through these functions before anything reads the
catalog or the disk, so bad input is one line (``BadInput``: exit 2, HTTP 400) and never a traceback.
Messages show what was typed through :func:`shown`: control characters escaped, long text cut.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import BadInput
from .lookup import hub_url_path

# The Hub's repo id: huggingface_hub 2.4 utils/_validators.py:28 REPO_ID_REGEX and validate_repo_id (:97-152):
# an optional namespace and a name of 1..96 ASCII letters, digits, "-", "_", "."; neither starting nor ending
# with "-" or "."; no "--" or ".."; not ending in ".git".
REPO_ID = re.compile(r"(\b[\w\-.]{1,96}\b/)?\b[\w\-.]{1,96}\b", re.ASCII)
MAX_URL_CHARS = 2048  # a Hub page URL (repo id plus /tree/<rev>/<path>) is far shorter
# Linux limits (limits.h): a path is at most PATH_MAX bytes, each name in it at most NAME_MAX; longer ones
# make every file system call fail with ENAMETOOLONG, so they are refused here, before any call.
PATH_MAX, NAME_MAX = 4096, 255
# --limit: more than any listing or answer can hold (the Hub lists ~2M models); keeps numbers that the
# database's 64-bit integers cannot hold out of SQL.
MAX_LIMIT = 10_000_000
ANSWER_MAX_LIMIT = 500  # drafts per answer: `query --limit` and the site's ?limit= (one bound)
SHOWN_CHARS = 80


def shown(value: str) -> str:
    """``value`` safe to print in one line: quoted, control characters escaped, cut when long."""
    cut = value[:SHOWN_CHARS]
    text = repr(cut)
    if len(value) > SHOWN_CHARS:
        text += f"... ({len(value)} characters)"
    return text


def is_repo_id(text: str) -> bool:
    """Does ``text`` have the form of a Hub repo id (``name`` or ``owner/name``)? Purely syntactic."""
    return (bool(REPO_ID.fullmatch(text)) and "--" not in text and ".." not in text
            and not text.endswith(".git"))


def _is_hub_url(text: str) -> bool:

    return hub_url_path(text) is not None


def target(value: str | None, role: str = "target", *, local_dirs: bool = True) -> str:
    """A target or draft as typed: a repo id, a bare name, a Hub URL, or (``local_dirs``, the CLI) a path.

    Without ``local_dirs`` (the site) only the repo id's form is accepted, whatever exists on the server's
    disk: the answer must not tell a visitor which paths exist there.
    """
    text = (value or "").strip()
    kinds = "a Hub repo id (owner/name)" + (" or a local model directory" if local_dirs else "")
    if not text:
        raise BadInput(f"{role} is empty; give {kinds}")
    if not text.isprintable():  # control, format (zero-width) or line-separator characters
        raise BadInput(f"{role} {shown(text)} contains control characters; give {kinds}")
    if is_repo_id(text):
        return text
    if _is_hub_url(text):
        if len(text) > MAX_URL_CHARS:
            raise BadInput(f"{role} {shown(text)} is too long for a Hub URL; give {kinds}")
        return text
    if not local_dirs:
        raise BadInput(f"{role} {shown(text)}: give a Hub repo id (owner/name), not a path")
    return local_path(text, role, "is not a repo id, and ")


def repo_id(value: str | None, role: str = "--model") -> str:
    """A full Hub repo id (``owner/name``), as the Hub spells them: for options that name exactly one repo."""
    text = (value or "").strip()
    if not text or not text.isprintable():
        raise BadInput(f"{role} {shown(text)}: give a Hub repo id (owner/name)")
    if "/" not in text or not is_repo_id(text):
        raise BadInput(f"{role} {shown(text)} is not a Hub repo id (owner/name: letters, digits, '-', '_', '.')")
    return text


def local_path(value: str | os.PathLike, role: str = "directory", _not: str = "is ") -> str:
    """A path the OS can take (no control characters, within PATH_MAX/NAME_MAX); whether it exists is the
    caller's to say."""
    text = os.fspath(value)
    if any(c < " " or "\x7f" <= c <= "\x9f" for c in text):  # Unicode category Cc
        raise BadInput(f"{role} {shown(text)} contains control characters")
    if len(os.fsencode(text)) > PATH_MAX or any(len(os.fsencode(p)) > NAME_MAX for p in Path(text).parts):
        raise BadInput(f"{role} {shown(text)} {_not}too long for a path (at most {PATH_MAX} bytes, "
                       f"{NAME_MAX} per name)")
    return text


def limit(value: str | int | None, maximum: int = MAX_LIMIT, name: str = "limit") -> int:
    """A count from 1 to ``maximum`` (the CLI's ``--limit``, the site's ``?limit=`` with its own maximum)."""
    try:
        n = int(str(value).strip())
    except ValueError:
        raise BadInput(f"{name} {shown(str(value))} is not a number") from None
    if not 1 <= n <= maximum:
        raise BadInput(f"{name} must be between 1 and {maximum}")
    return n


def endpoint(value: str | None, role: str = "--endpoint") -> str | None:
    """A Hub endpoint: an http(s) URL with a host (the client would retry any other value as a network error)."""
    if value is None:
        return None
    text = value.strip()
    try:
        parts = urlsplit(text)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadInput(f"{role} {shown(text)} is not a Hub URL; give one such as https://huggingface.co")
    return text


def output_file(value: str | os.PathLike | None, role: str = "file") -> str | None:
    """A file to (re)write atomically: not a directory, in an existing writable directory. None stays None."""
    if value is None or value == "":
        return value

    path = Path(local_path(value, role)).expanduser()
    if path.is_dir():
        raise BadInput(f"{role} {path} is a directory; give a file path")
    parent = path.parent
    if not parent.is_dir():
        raise BadInput(f"{role} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise BadInput(f"{role} {path}: directory {parent} is not writable")
    return str(path)


def output_dir(value: str | os.PathLike, role: str = "OUTDIR", *, create: bool = True) -> Path:
    """A directory to write into, created when missing; a file in the way or no permission is one line.

    ``create=False`` only checks (a command's options, before its work): the nearest existing ancestor of
    a missing directory must be a writable directory.
    """
    out = Path(local_path(value, role)).expanduser()
    if out.exists() and not out.is_dir():
        raise BadInput(f"{role} {out} exists and is not a directory; give a directory")
    if not create:
        base = next((p for p in (out, *out.absolute().parents) if p.exists()), Path("/"))
        if not base.is_dir() or not os.access(base, os.W_OK | os.X_OK):
            raise BadInput(f"{role} {out}: {base} is not a writable directory")
        return out.absolute()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BadInput(f"{role} {out}: cannot create it ({e.strerror or type(e).__name__})") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise BadInput(f"{role} {out} is not writable")
    return out.resolve()
