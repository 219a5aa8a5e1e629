"""Rule inputs (:class:`rules.Side`) for repos that are in the catalog, read through the request's reader."""

from __future__ import annotations

from ..catalog.reader import Reader, json_value
from ..catalog.repofacts import TOKENIZER_FACTS, engine_facts_row, rule_row, tokenizer_row
from ..catalog.tokenstore import TokenStore, default_dir
from ..engines import Side
from ..errors import CatalogError, InputError
from ..gguf.vocab import GGUFVocab
from ..vocab.agreement import reference_sha256
from ..vocab.archconfig import ArchFacts
from .lookup import find_repo_id, gguf_base
from .target import hub_gguf_name

BOOLEAN_FACTS = ("add_bos_token", "add_eos_token")  # 0/1 from sqlite3: the rules and the JSON want booleans


def _flag(value) -> bool | None:
    return None if value is None else bool(value)


def tokenizer_facts(row: dict) -> dict:
    """The same keys as ``Fingerprint.to_dict()`` (``fallback_reason`` is not stored)."""
    facts = {key: row[key] for key in TOKENIZER_FACTS}
    facts["added_tokens"] = json_value(facts["added_tokens"]) or []
    for key in BOOLEAN_FACTS:
        facts[key] = _flag(facts[key])
    facts["fallback_reason"] = None
    return facts


def side_from_catalog(repo_id: str, *, db: str | None = None, with_vocab: bool = True,
                      reader: Reader | None = None) -> Side:
    """A catalog repo as a rule input; the token list comes from the token store when present.

    The repo is found as ``lookup.find_repo_id`` finds it (any case, a Hub URL, a bare name; a miss
    suggests the closest ids). A GGUF repo without tokenizer files whose ``base_model:quantized:<id>``
    tag names a catalogued base takes the tokenizer and config vocab sizes of that base, and says so
    in its name. ``reader``: the request's; else one is opened on ``db`` for this side.
    """
    if reader is None:
        try:
            cat = Reader(db, needs="repos")
        except CatalogError as e:
            raise InputError("error", e.message) from None
        try:
            return side_from_catalog(repo_id, with_vocab=with_vocab, reader=cat)
        finally:
            cat.close()

    cat = reader
    match = find_repo_id(cat.all, repo_id, cat.dialect)  # RepoNotFound: exit 3, HTTP 404
    repo = rule_row(cat, match.repo_id)
    assert repo is not None  # find_repo_id found it
    name = match.repo_id
    # a GGUF repo whose header was read has its own facts (a file set); only others borrow a base's
    base_id = gguf_base(repo["tags"]) if repo["tokenizer_id"] is None and repo["file_set_id"] is None else None
    base = rule_row(cat, base_id) if base_id else None
    if base is not None and base["status"] == "ok" and base["tokenizer_id"] is not None:
        name = f"{repo['repo_id']} (tokenizer of its base {base['repo_id']})"
        repo = base
    tok = None
    if repo["tokenizer_id"] is not None:
        tok = tokenizer_row(cat, repo["tokenizer_id"])
    if tok is None and repo["status"] != "ok":
        why = f": {repo['reason']}" if repo["reason"] else ""
        raise InputError(repo["status"], f"{name} is in the catalog with status {repo['status']}{why}")
    facts = tokenizer_facts(tok) if tok is not None else None
    ef = None
    if repo["file_set_id"] is not None:
        ef = engine_facts_row(cat, repo["file_set_id"], repo["config_blob"])
    store = TokenStore(default_dir(cat.db))
    vocab = None
    if with_vocab and facts is not None:
        try:
            vocab = store.get(facts["vocab_sha256"])
        except (KeyError, OSError, ValueError):
            vocab = None
    counts = None
    if facts is not None:

        counts = store.get_counts(facts["vocab_sha256"], reference_sha256())
    side = Side(
        name=name,
        counts=counts,
        vocab_size=repo["vocab_size"],
        vocab_size_transformers=repo["vocab_size_transformers"],
        tok=facts,
        vocab=vocab,
        # Without derived engine facts, vLLM's size is transformers' (they differ only by remaps).
        vllm_vocab_size=repo["vocab_size_transformers"],
        model_type=repo["model_type"],
        gguf_missing="engine facts not derived yet: run `indexer compute`",
    )
    if ef is not None:
        ef["gguf"] = json_value(ef["gguf"])
        side.vllm_vocab_size = ef["vllm_vocab_size"]
        side.text_config_error = ef["text_config_error"]
        side.has_vision_config = bool(ef["has_vision_config"])
        side.gguf, side.gguf_missing = gguf_from_facts(ef, store)
        side.gguf_file = hub_gguf_name(repo["repo_id"], ef["gguf"])
        side.arch = ArchFacts.from_dict(json_value(ef["arch"]))
    return side


def gguf_from_facts(ef: dict, store: TokenStore):
    """The stored GGUF vocabulary (token list from the token store) as the rule reads it."""
    if ef["gguf"] is None:
        return None, ef["gguf_error"] or "no GGUF prediction"
    tokens = None
    if ef["gguf_converted"] and ef["gguf_tokens_sha256"]:
        try:
            tokens = tuple(store.get_tokens(ef["gguf_tokens_sha256"]))
        except (KeyError, OSError, ValueError):
            return None, "the GGUF token list is not in the token store: run `indexer compute`"
    return GGUFVocab.from_dict(ef["gguf"], tokens), None
