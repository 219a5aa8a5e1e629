"""The SQL of a speculator-head answer (``query --method eagle|eagle3|dflash|mtp``, ``check TARGET HEAD``): a
target's config facts, the catalog's heads, a repo's base-model links and the GGUF repos whose headers were read.
The answer (indexer/answer/headquery.py, ggufheads.py) judges and words them.
"""

from __future__ import annotations

from .reader import Reader

TARGET_COLS = ("id", "repo_id", "status", "reason", "model_type", "architectures", "hidden_size", "num_hidden_layers",
               "vocab_size", "vocab_size_transformers", "mtp_layers", "mtp_key", "text_config_key",
               "text_model_type", "base_models", "params", "params_estimate", "params_estimate_source")
HEAD_COLS = ("algorithm", "format", "layer_model_type", "verifier", "hidden_size", "target_hidden_size", "vocab_size",
             "draft_vocab_size", "aux_layer_ids", "aux_key", "num_target_layers", "mask_token_id",
             "speculative_tokens", "params")
HEAD_SQL = ("SELECT r.repo_id, r.downloads, r.architectures, r.base_models, "
            + ", ".join(f"h.{c}" for c in HEAD_COLS) +
            " FROM heads h JOIN repos r ON r.id = h.repo_pk WHERE r.status = 'head' AND NOT r.disabled")
GGUF_REPOS = ("SELECT r.id, r.repo_id, r.downloads, r.tags, r.base_models, e.gguf, e.arch FROM repos r "
              "JOIN engine_facts e ON e.file_set_id = r.file_set_id AND e.config_blob = COALESCE(r.config_blob, '') "
              "WHERE r.tokenizer_id IS NULL AND e.arch IS NOT NULL")


def target_row(cat: Reader, repo_id: str) -> dict:
    """A repo's config facts as a head's target (``TARGET_COLS``); the repo must exist."""
    row = cat.one(f"SELECT {', '.join(TARGET_COLS)} FROM repos WHERE repo_id = :r", {"r": repo_id})
    return dict(zip(TARGET_COLS, row, strict=True))


def head_rows(cat: Reader, algorithms: tuple[str, ...] | None = None, repo_id: str | None = None) -> list[tuple]:
    """(repo id, downloads, architectures, base_models, *HEAD_COLS) of the catalog's heads that are not disabled,
    of some algorithms or one repo."""
    sql, params = HEAD_SQL, {}
    if algorithms:
        sql += " AND h.algorithm IN (" + ", ".join(f":a{i}" for i in range(len(algorithms))) + ")"
        params.update({f"a{i}": a for i, a in enumerate(algorithms)})
    if repo_id:
        sql += " AND r.repo_id = :rid"
        params["rid"] = repo_id
    return cat.all(sql, params)


def base_models(cat: Reader, repo_id: str):
    """The stored base_models of a repo (any case), None when the catalog lacks it."""
    row = cat.one("SELECT base_models FROM repos WHERE lower(repo_id) = :r", {"r": repo_id.lower()})
    return row[0] if row else None


def gguf_repo(cat: Reader, repo_id: str) -> tuple | None:
    """A GGUF repo whose header was read: (pk, repo id, downloads, tags, base_models, gguf, arch), or None."""
    return cat.one(GGUF_REPOS + " AND r.repo_id = :r", {"r": repo_id})


def gguf_repos(cat: Reader) -> list[tuple]:
    """Every GGUF repo whose header was read, as :func:`gguf_repo` gives one."""
    return cat.all(GGUF_REPOS)
