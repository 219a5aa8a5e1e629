"""How transformers 5.24 reads a directory's tokenizer files: which class ``AutoTokenizer`` picks, the special
tokens after each file's precedence, whether encoding adds BOS/EOS, the base vocabulary of each file kind, and
where ``add_tokens()`` places the added ones. The fast fingerprint path (``fingerprint._fast``) is built on these.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path

from .. import deferred
from ..errors import NeedsReference
from ..files import InputError
from .hf_tables import (
    MODEL_IDS_TO_TOKENIZERS_BACKEND,
    MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS,
    TOKENIZER_CLASS_BY_MODEL_TYPE,
)

SPECIAL_NAMES = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")
SPECIAL_LISTS = ("additional_special_tokens", "extra_special_tokens")

# Classes whose from_pretrained() mapping is "model vocab + declared added tokens + any
# missing special token appended", with the named-token defaults of their __init__.
SIMPLE_CLASSES: dict[str, dict[str, str | None]] = {
    "TokenizersBackend": {},
    "LlamaTokenizer": {"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"},
    "Qwen2Tokenizer": {"unk_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"},
    "GPT2Tokenizer": {"unk_token": "<|endoftext|>", "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"},
    "GPTNeoXTokenizer": {
        "unk_token": "<|endoftext|>",
        "bos_token": "<|endoftext|>",
        "eos_token": "<|endoftext|>",
        "pad_token": "<|padding|>",
    },
    "GemmaTokenizer": {
        "unk_token": "<unk>",
        "bos_token": "<bos>",
        "eos_token": "<eos>",
        "pad_token": "<pad>",
        "mask_token": "<mask>",
    },
}
SPM_CLASSES = ("LlamaTokenizer",)  # SentencePiece-only directories whose conversion keeps piece ids
VOCAB_JSON_CLASSES = ("GPT2Tokenizer", "Qwen2Tokenizer", "GPTNeoXTokenizer")  # load vocab.json + merges.txt
BYTE_LEVEL_CLASSES = VOCAB_JSON_CLASSES  # their __init__ only accepts a byte-level tokenizer.json
BACKEND_CLASSES = ("TokenizersBackend", "PythonBackend", "PreTrainedTokenizer", "MistralCommonBackend")


def _token_content(value) -> str | None:
    """A special token as tokenizer_config.json writes it: a string or an AddedToken dict."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    raise InputError("malformed", f"special token {value!r} is neither a string nor an AddedToken object")


@dataclass
class Specials:
    """Special tokens as transformers 5 resolves them, plus every token it might append."""

    named: dict[str, str | None]  # bos/eos/unk/pad/... after precedence
    extra: set[str]  # additional/extra special tokens
    candidates: set[str]  # superset: any of these missing from the vocabulary gets appended


def _token_list(value) -> list[str]:
    if isinstance(value, dict):
        value = list(value.values())
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError("malformed", "additional/extra special tokens must be a list")
    return [t for t in map(_token_content, value) if t is not None]


def resolve_specials(tc: dict, stm: dict, defaults: dict, decoder_mode: bool) -> Specials:
    """tokenizer_config.json wins; special_tokens_map.json overrides it only in legacy mode (no
    added_tokens_decoder); a class default applies where neither names the token."""
    sources = [tc] if decoder_mode else [tc, stm]
    named: dict[str, str | None] = {}
    for name in SPECIAL_NAMES:
        value = defaults.get(name)
        for source in sources:
            if name in source:
                value = _token_content(source[name])
        named[name] = value
    extra: set[str] = set()
    candidates = {t for t in named.values() if t is not None}
    for source in (tc, stm):  # the superset looks at both files whatever the mode
        for name in SPECIAL_LISTS:
            tokens = _token_list(source.get(name))
            candidates.update(tokens)
            if source is tc or not decoder_mode:
                extra.update(tokens)
        for key, value in source.items():  # model-specific tokens such as image_token
            if key.endswith("_token") and isinstance(value, (str, dict)):
                token = _token_content(value)
                if token is not None:
                    candidates.add(token)
    return Specials(named, extra, candidates)


def add_bos_eos(tc: dict, tokenizer_json: dict | None) -> tuple[bool | None, bool | None]:
    """Whether encoding adds BOS/EOS: tokenizer_config flags, else the post-processor template."""
    post = (tokenizer_json or {}).get("post_processor") or {}
    if post.get("type") == "Sequence":
        post = next((p for p in post.get("processors") or [] if p.get("type") == "TemplateProcessing"), {})
    single = post.get("single") if post.get("type") == "TemplateProcessing" else None
    from_template: tuple[bool | None, bool | None] = (None, None)
    if isinstance(single, list) and single:
        from_template = ("SpecialToken" in single[0], "SpecialToken" in single[-1])
    elif tokenizer_json is not None:
        from_template = (False, False)
    flags = (tc.get("add_bos_token"), tc.get("add_eos_token"))
    return tuple(bool(f) if f is not None else t for f, t in zip(flags, from_template))  # type: ignore[return-value]


def _strip_fast(name: str) -> str:
    return name[:-4] if name.endswith("Fast") else name


def _canonical_class(name: str) -> str:
    name = _strip_fast(name)
    return "TokenizersBackend" if name in ("PreTrainedTokenizer", "TokenizersBackend", "BloomTokenizer") else name


def resolve_class(tc: dict, config: dict, tokenizer_json: dict | None, name_or_path: str) -> str:
    """The class AutoTokenizer.from_pretrained(name_or_path) instantiates (transformers 5.24's rules).

    ``name_or_path`` is what from_pretrained() was given: transformers matches it, not the
    config's own ``_name_or_path``, against its list of checkpoints forced to TokenizersBackend.
    """
    hub = tc.get("tokenizer_class") or config.get("tokenizer_class")
    if hub is not None and not isinstance(hub, str):
        raise InputError("malformed", "tokenizer_class must be a string")
    model_type = config.get("model_type") or ""
    if not isinstance(model_type, str):  # AutoConfig looks it up by value: transformers cannot load it either
        raise InputError("malformed", "config.json: model_type must be a string")
    registered = TOKENIZER_CLASS_BY_MODEL_TYPE.get(model_type)
    incorrect = model_type in MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS
    if any(fnmatch.fnmatch(name_or_path.lower(), p) for p in MODEL_IDS_TO_TOKENIZERS_BACKEND):
        return "TokenizersBackend"
    if (
        hub
        and _strip_fast(hub) == "LlamaTokenizer"
        and _strip_fast(registered or "") != "MistralCommonBackend"
        and not incorrect
        and tokenizer_json is not None
        and is_byte_level(tokenizer_json)
    ):
        return "TokenizersBackend"
    if hub and model_type and registered and _strip_fast(registered) != _strip_fast(hub):
        chosen = _canonical_class(registered if incorrect else hub)
        if _strip_fast(registered) not in BACKEND_CLASSES and chosen != "TokenizersBackend":
            return chosen
        if _strip_fast(registered) == "MistralCommonBackend":
            raise NeedsReference("Mistral model types may load MistralCommonBackend")
        return "TokenizersBackend"
    if hub:
        return _canonical_class(hub)
    return _canonical_class(registered) if registered else "TokenizersBackend"


def base_from_tokenizer_json(tj: dict) -> tuple[dict[str, int], str | None, list[dict]]:
    """(model vocabulary, model type, added tokens) of a tokenizer.json: what the backend starts from."""
    model = tj.get("model")
    if not isinstance(model, dict):
        raise InputError("malformed", "tokenizer.json: no model section")
    vocab = model.get("vocab")
    kind = model.get("type")
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        if not all(isinstance(p, list) and p and isinstance(p[0], str) for p in vocab):
            raise InputError("malformed", "tokenizer.json: model.vocab list entries must be [piece, score]")
        base = {}
        for i, p in enumerate(vocab):
            if p[0] in base:
                raise NeedsReference("duplicate piece in Unigram vocab")
            base[p[0]] = i
    elif isinstance(vocab, dict):
        base = vocab
        if set(map(type, base.values())) - {int}:
            raise InputError("malformed", "tokenizer.json: model.vocab ids must be integers")
    else:
        raise InputError("malformed", "tokenizer.json: model.vocab is missing")
    added = tj.get("added_tokens") or []
    if not isinstance(added, list) or not all(
        isinstance(t, dict) and type(t.get("id")) is int and isinstance(t.get("content"), str) for t in added
    ):
        raise InputError("malformed", "tokenizer.json: added_tokens must be a list of {id, content}")
    return base, kind, [{"id": t["id"], "content": t["content"], "special": bool(t.get("special"))} for t in added]


def base_from_sentencepiece(path: Path) -> dict[str, int]:
    """Piece -> id of a tokenizer.model, as the SentencePiece conversion keeps them (duplicates: reference)."""
    proc = deferred.sentencepiece.SentencePieceProcessor()
    try:
        proc.Load(str(path))
    except Exception as e:
        raise InputError("malformed", f"tokenizer.model: not a SentencePiece model ({e})") from None
    base = {}
    for i in range(proc.GetPieceSize()):
        piece = proc.IdToPiece(i)
        if piece in base:
            raise NeedsReference("duplicate SentencePiece piece")
        base[piece] = i
    return base


def is_byte_level(tj: dict) -> bool:
    """Whether a tokenizer.json pre-tokenizes byte-level (the vocab.json classes accept nothing else)."""
    return '"ByteLevel"' in json.dumps(tj.get("pre_tokenizer"))


def place_sequentially(
    by_id: list[str], base: dict[str, int], preplaced: list[dict], declared: dict[int, dict]
) -> dict[int, str]:
    """Tokens beyond the base after ``add_tokens()``: preplaced ones keep their ids, declared
    ones land on their existing entry or the next free id, in declared-id order.

    Raises NeedsReference unless every token ends up exactly at the id it was declared with.
    """
    n_base = len(by_id)
    extra: dict[int, str] = {}
    where: dict[str, int] = {}

    def lookup(content: str) -> int | None:
        return base.get(content, where.get(content))

    for t in preplaced:
        i, content = t["id"], t["content"]
        owner = by_id[i] if 0 <= i < n_base else extra.get(i)
        if i < 0 or owner not in (None, content) or lookup(content) not in (None, i):
            raise NeedsReference(f"added token {content!r} at id {i} conflicts with the vocabulary")
        if owner is None:
            extra[i], where[content] = content, i
    next_id = max([n_base - 1, *extra]) + 1
    for i in sorted(declared):
        content = declared[i]["content"]
        known = lookup(content)
        if known is None and i == next_id:
            extra[i], where[content] = content, i
            next_id += 1
        elif known != i:
            raise NeedsReference(f"added token {content!r} declared at id {i} would not land there")
    return extra
