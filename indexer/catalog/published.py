"""What a published catalog may hold, applied to the copy that ``publish`` (the datasette bundle) and ``publish
--to-hub`` (the dataset's catalog.sqlite and tokens.tar) publish:

* no id of a repo that the published ``repos`` table does not hold: a crawl with a token can see private repos
  (``crawl --model ID``, ``query --target ID --live``), and the crawl already never names them in the scopes it
  records (crawl/runrecord.py); here, whatever an older catalog or another path left in ``crawl_runs`` (a scope's
  ``model=ID`` or ``drafts-for=ID``, an error naming a repo) is stripped, so a private id cannot leave even then;
* no token list that only gated repos have: a gated repo crawled with a granted token has its vocabulary in the
  token store, and publishing it would hand out what the gate guards. Its fingerprints and facts (the catalog's
  rows) are published; its token lists only when a public repo has the same list.
"""

from __future__ import annotations

import json
import re
import sqlite3

from .reader import NOT_GATED

UNNAMED = "(unnamed)"  # what a redacted id reads as
_NAMED = re.compile(r"\b(model|drafts-for)=([^\s(]\S*)")  # not "model=(2 unnamed)": the crawl's own count
# A repo whose token lists may be published: not gated, and not gone (deleted, or made private since).
_PUBLIC = ("r.status != 'gone' AND (r.gated IS NULL OR r.gated IN (" + ", ".join(f"'{v}'" for v in NOT_GATED)
           + "))")


def redact(con: sqlite3.Connection) -> dict:
    """Strip ``crawl_runs`` of every repo id the ``repos`` table does not hold (SQLite, a copy about to be
    published; ``secure_delete``, so the old text is not left in free pages). Returns what was changed."""
    held = {r[0] for r in con.execute("SELECT repo_id FROM repos")}
    con.execute("PRAGMA secure_delete = ON")
    scopes = errors = 0
    for run_id, scope, errs in con.execute("SELECT id, scope, errors FROM crawl_runs").fetchall():
        new_scope = _NAMED.sub(lambda m: m.group(0) if m.group(2) in held else f"{m.group(1)}={UNNAMED}",
                               scope or "")
        new_errs = errs
        try:
            listed = json.loads(errs) if isinstance(errs, str) else errs
        except ValueError:
            listed = None
        if isinstance(listed, list):
            kept = [e for e in listed if not isinstance(e, dict) or e.get("repo") is None or e.get("repo") in held]
            if len(kept) != len(listed):
                new_errs = json.dumps(kept)
                errors += len(listed) - len(kept)
        if new_scope != (scope or "") or new_errs != errs:
            scopes += new_scope != (scope or "")
            con.execute("UPDATE crawl_runs SET scope = ?, errors = ? WHERE id = ?",
                        (new_scope if scope is not None else scope, new_errs, run_id))
    con.commit()
    return {"scopes": scopes, "errors": errors}


def public_token_shas(con: sqlite3.Connection) -> set[str]:
    """The token store names (sha256) a published catalog may carry: vocabularies, reference-text counts and GGUF
    token lists of at least one public repo (not gated, not gone)."""
    return {r[0] for r in con.execute(
        f"SELECT t.vocab_sha256 FROM tokenizers t JOIN repos r ON r.tokenizer_id = t.id WHERE {_PUBLIC} "
        f"UNION SELECT e.gguf_tokens_sha256 FROM engine_facts e JOIN repos r ON r.file_set_id = e.file_set_id "
        f"WHERE e.gguf_tokens_sha256 IS NOT NULL AND {_PUBLIC}")}


def token_sha(name: str) -> str:
    """The sha256 a token store file is named by (``xx/<sha>.json.z``, ``.tokens.z``, ``.counts.z``)."""
    return name.rsplit("/", 1)[-1].split(".", 1)[0]
