"""The SQL of what an answer reads about one repo: the target's row (its size, vocabulary and tokenizer), the
repos that share a local side's tokenizer or GGUF vocabulary, a repo as the rules see it (its row, tokenizer and
engine facts), a repo's speed facts, and the crawl run that wrote it. The answer (indexer/answer/) words and
decides; these functions only read, through one :class:`~indexer.catalog.reader.Reader`.
"""

from __future__ import annotations

from .reader import Reader, int_list, json_value

TARGET_SQL = (
    "SELECT r.id, r.repo_id, r.params, r.downloads, r.author, r.family, r.is_chat, r.gated, r.status, "
    "r.reason, r.vocab_size, r.vocab_size_transformers, r.tokenizer_id, t.vocab_sha256, t.base_vocab_sha256, "
    "t.max_id, t.vocab_len, t.hf_vocab_size, r.params_estimate, r.params_active_estimate, "
    "r.params_estimate_source, r.tags FROM repos r LEFT JOIN tokenizers t ON t.id = r.tokenizer_id "
    "WHERE r.repo_id = :rid"
)
TARGET_KEYS = ("pk", "repo_id", "params", "downloads", "author", "family", "is_chat", "gated", "status",
               "reason", "vocab_size", "vocab_size_transformers", "tokenizer_id", "vocab_sha256",
               "base_vocab_sha256", "max_id", "vocab_len", "hf_vocab_size", "params_estimate",
               "params_active_estimate", "params_estimate_source", "tags")


REPO_COLS = ("id", "repo_id", "status", "reason", "tags", "tokenizer_id", "file_set_id", "config_blob", "vocab_size",
             "vocab_size_transformers", "model_type")  # a repo as the rules see it (answer/rule_inputs.py)
TOKENIZER_FACTS = (
    "vocab_sha256", "base_vocab_sha256", "vocab_len", "max_id", "id_holes", "hf_vocab_size", "added_tokens",
    "bos_token", "bos_token_id", "eos_token", "eos_token_id", "pad_token", "pad_token_id", "unk_token",
    "unk_token_id", "add_bos_token", "add_eos_token", "model_type", "tokenizer_class", "method",
)
ENGINE_FACT_COLS = ("vllm_vocab_size", "text_config_error", "has_vision_config", "gguf", "gguf_error",
                    "gguf_converted", "gguf_tokens_sha256", "arch")


def target_row(cat: Reader, repo_id: str) -> dict | None:
    """A repo's row as a target (``TARGET_KEYS``), None when the catalog lacks it."""
    row = cat.one(TARGET_SQL, {"rid": repo_id})
    return dict(zip(TARGET_KEYS, row, strict=True)) if row is not None else None


def tokenizer_by_sha(cat: Reader, vocab_sha256: str) -> int | None:
    """The id of the tokenizer with this get_vocab() sha256, None when no repo has it."""
    row = cat.one("SELECT id FROM tokenizers WHERE vocab_sha256 = :s", {"s": vocab_sha256})
    return row[0] if row else None


def twins(cat: Reader, tokenizer_id: int) -> list[tuple]:
    """(repo id, vocab_size, vocab_size_transformers, model_type) of the ok repos with this tokenizer, by repo id
    (which twin answers must not depend on the order a crawl inserted them)."""
    return cat.all("SELECT repo_id, vocab_size, vocab_size_transformers, model_type FROM repos "
                   "WHERE tokenizer_id = :t AND status = 'ok' ORDER BY repo_id LIMIT 5000", {"t": tokenizer_id})


def gguf_twin(cat: Reader, engine: str, signature: str) -> tuple | None:
    """(pk, repo id) of the first repo, by repo id, in the ``engine`` class with this GGUF signature."""
    return cat.one("SELECT r.id, r.repo_id FROM compat_classes c JOIN repo_classes rc ON rc.class_id = c.id "
                   "JOIN repos r ON r.id = rc.repo_pk WHERE c.engine = :e AND c.class_key = :s "
                   "ORDER BY r.repo_id LIMIT 1", {"s": signature, "e": engine})


def speed_row(cat: Reader, repo_id: str) -> tuple | None:
    """(params, params_estimate, params_active_estimate, family, author, base_models, repo_id, arch, gguf, pk,
    is_chat, added_tokens): what the speed model reads of a repo (``engine_facts.arch`` holds what compute derived
    from its config; the tokenizer's added tokens say whether it writes thinking traces)."""
    return cat.one("SELECT r.params, r.params_estimate, r.params_active_estimate, r.family, r.author, "
                   "r.base_models, r.repo_id, e.arch, e.gguf, r.id, r.is_chat, t.added_tokens FROM repos r "
                   "LEFT JOIN engine_facts e "
                   "ON e.file_set_id = r.file_set_id AND e.config_blob = COALESCE(r.config_blob, '') "
                   "LEFT JOIN tokenizers t ON t.id = r.tokenizer_id WHERE r.repo_id = :r", {"r": repo_id})


def added_tokens(cat: Reader, tokenizer_ids: list[int]) -> dict[int, list]:
    """Tokenizers' added tokens (``tokenizers.added_tokens``), by tokenizer id, read at once."""
    if not tokenizer_ids:
        return {}
    marks = ", ".join(f":t{i}" for i in range(len(tokenizer_ids)))
    rows = cat.all(f"SELECT id, added_tokens FROM tokenizers WHERE id IN ({marks})",
                   {f"t{i}": t for i, t in enumerate(tokenizer_ids)})
    return {tid: json_value(added) for tid, added in rows}


def crawl_scope(cat: Reader, repo_id: str) -> str | None:
    """The scope of the crawl run that wrote the repo's row (None: unknown, or no such repo)."""
    row = cat.one("SELECT r.scope FROM repos p JOIN crawl_runs r ON r.id = p.crawl_run_id WHERE p.repo_id = :t",
                  {"t": repo_id})
    return row[0] if row is not None else None


def has_run(cat: Reader, scope: str) -> bool:
    """Whether a crawl run of this scope is recorded."""
    return cat.one("SELECT 1 FROM crawl_runs WHERE scope = :s", {"s": scope}) is not None


def gguf_files(reader, pks: list[int]) -> dict[int, list[tuple[str, str | None]]]:
    """GGUF repos' model files, (path, the type its name says), by repo pk and path (the ``gguf_files`` table);
    {} for a catalog made before the table (the answers then know only the file the crawl read)."""
    if not pks:
        return {}
    try:
        rows = reader.all(f"SELECT repo_pk, path, quant FROM gguf_files WHERE repo_pk IN {int_list(sorted(pks))} "
                          "ORDER BY repo_pk, path")
    except Exception:  # noqa: BLE001 - any driver's "no such table": a catalog before migration 0012
        return {}
    out: dict[int, list[tuple[str, str | None]]] = {}
    for pk, path, quant in rows:
        out.setdefault(pk, []).append((path, quant))
    return out


def rule_row(cat: Reader, repo_id: str) -> dict | None:
    """A repo's row as the rules see it (``REPO_COLS``), None when the catalog lacks it."""
    row = cat.one(f"SELECT {', '.join(REPO_COLS)} FROM repos WHERE repo_id = :r", {"r": repo_id})
    return dict(zip(REPO_COLS, row, strict=True)) if row else None


def tokenizer_row(cat: Reader, tokenizer_id: int) -> dict | None:
    """A tokenizer's stored fingerprint facts (``TOKENIZER_FACTS``), None when unknown."""
    row = cat.one(f"SELECT {', '.join(TOKENIZER_FACTS)} FROM tokenizers WHERE id = :t", {"t": tokenizer_id})
    return dict(zip(TOKENIZER_FACTS, row, strict=True)) if row else None


def engine_facts_row(cat: Reader, file_set_id: int, config_blob: str | None) -> dict | None:
    """The engine facts compute derived for a file set and config (``ENGINE_FACT_COLS``), None when not yet."""
    row = cat.one(f"SELECT {', '.join(ENGINE_FACT_COLS)} FROM engine_facts WHERE file_set_id = :f "
                  "AND config_blob = :c", {"f": file_set_id, "c": config_blob or ""})
    return dict(zip(ENGINE_FACT_COLS, row, strict=True)) if row else None
