"""Rule inputs (:class:`rules.Side`) for repos that are in the catalog."""

from __future__ import annotations

from sqlalchemy import select, text

from ..catalog.db import CatalogError, open_catalog, session_factory
from ..catalog.models import EngineFacts, Repo, Tokenizer
from ..catalog.tokenstore import TokenStore, default_root
from ..engines import Side
from ..files import InputError

TOKENIZER_FACTS = (
    "vocab_sha256", "base_vocab_sha256", "vocab_len", "max_id", "id_holes", "hf_vocab_size", "added_tokens",
    "bos_token", "bos_token_id", "eos_token", "eos_token_id", "pad_token", "pad_token_id", "unk_token",
    "unk_token_id", "add_bos_token", "add_eos_token", "model_type", "tokenizer_class", "method",
)


def tokenizer_facts(tok: Tokenizer) -> dict:
    """The same keys as ``Fingerprint.to_dict()`` (``fallback_reason`` is not stored)."""
    facts = {key: getattr(tok, key) for key in TOKENIZER_FACTS}
    facts["added_tokens"] = facts["added_tokens"] or []
    facts["fallback_reason"] = None
    return facts


def side_from_catalog(repo_id: str, *, db: str | None = None, with_vocab: bool = True) -> Side:
    """A catalog repo as a rule input; the token list comes from the token store when present.

    The repo is found as ``lookup.find_repo_id`` finds it (any case, a Hub URL, a bare name; a miss
    suggests the closest ids). A GGUF repo without tokenizer files whose ``base_model:quantized:<id>``
    tag names a catalogued base takes the tokenizer and config vocab sizes of that base, and says so
    in its name.
    """
    from .lookup import find_repo_id, gguf_base

    try:
        engine = open_catalog(db)
    except CatalogError as e:
        raise InputError("error", str(e)) from None
    try:
        with session_factory(engine)() as session:
            def rows(sql: str, params: dict) -> list[tuple]:
                return [tuple(r) for r in session.execute(text(sql), params)]

            match = find_repo_id(rows, repo_id, engine.dialect.name)  # RepoNotFound: exit 3, HTTP 404
            repo = session.scalar(select(Repo).where(Repo.repo_id == match.repo_id))
            name = match.repo_id
            # a GGUF repo whose header was read has its own facts (a file set); only others borrow a base's
            base_id = gguf_base(repo.tags) if repo.tokenizer_id is None and repo.file_set_id is None else None
            base = session.scalar(select(Repo).where(Repo.repo_id == base_id)) if base_id else None
            if base is not None and base.status == "ok" and base.tokenizer_id is not None:
                name = f"{repo.repo_id} (tokenizer of its base {base.repo_id})"
                repo = base
            tok = session.get(Tokenizer, repo.tokenizer_id) if repo.tokenizer_id is not None else None
            if tok is None and repo.status != "ok":
                why = f": {repo.reason}" if repo.reason else ""
                raise InputError(repo.status, f"{name} is in the catalog with status {repo.status}{why}")
            facts = tokenizer_facts(tok) if tok is not None else None
            ef = None
            if repo.file_set_id is not None:
                ef = session.scalar(select(EngineFacts).where(EngineFacts.file_set_id == repo.file_set_id,
                                                              EngineFacts.config_blob == (repo.config_blob or "")))
    finally:
        engine.dispose()
    store = TokenStore(default_root(db))
    vocab = None
    if with_vocab and facts is not None:
        try:
            vocab = store.get(facts["vocab_sha256"])
        except (KeyError, OSError, ValueError):
            vocab = None
    counts = None
    if facts is not None:
        from ..vocab.agreement import reference_sha256

        counts = store.get_counts(facts["vocab_sha256"], reference_sha256())
    side = Side(
        name=name,
        counts=counts,
        vocab_size=repo.vocab_size,
        vocab_size_transformers=repo.vocab_size_transformers,
        tok=facts,
        vocab=vocab,
        # Without derived engine facts, vLLM's size is transformers' (they differ only by remaps).
        vllm_vocab_size=repo.vocab_size_transformers,
        model_type=repo.model_type,
        gguf_missing="engine facts not derived yet: run `indexer compute`",
    )
    if ef is not None:
        side.vllm_vocab_size = ef.vllm_vocab_size
        side.text_config_error = ef.text_config_error
        side.has_vision_config = bool(ef.has_vision_config)
        side.gguf, side.gguf_missing = gguf_from_facts(ef, store)
        side.gguf_file = hub_gguf_name(repo.repo_id, ef.gguf)
    return side


def hub_gguf_name(repo_id: str, facts) -> str | None:
    """``REPO:QUANT`` for a GGUF repo read from its header (what llama-server -hf takes), else None."""
    if not isinstance(facts, dict) or facts.get("source") != "read":
        return None
    return f"{repo_id}:{facts['quant']}" if facts.get("quant") else repo_id


def gguf_from_facts(ef: EngineFacts, store: TokenStore):
    """The stored GGUF vocabulary (token list from the token store) as the rule reads it."""
    if ef.gguf is None:
        return None, ef.gguf_error or "no GGUF prediction"
    try:
        from ..gguf.predict import GGUFVocab
    except ImportError as e:
        return None, f"the GGUF prediction (indexer.gguf.predict) is not available: {e}"
    tokens = None
    if ef.gguf_converted and ef.gguf_tokens_sha256:
        try:
            tokens = tuple(store.get_tokens(ef.gguf_tokens_sha256))
        except (KeyError, OSError, ValueError):
            return None, "the GGUF token list is not in the token store: run `indexer compute`"
    return GGUFVocab.from_dict(ef.gguf, tokens), None
