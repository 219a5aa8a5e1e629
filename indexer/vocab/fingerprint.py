"""Vocabulary fingerprints of a model directory, exactly as ``get_vocab()`` sees them.

Two implementations give the same answer:

* the **reference** loads ``AutoTokenizer.from_pretrained(dir, trust_remote_code=False)``
  and calls ``get_vocab()`` (slow: it builds the whole tokenizer);
* the **fast path** reads the tokenizer files directly. It only answers when it can
  prove that transformers would return the same mapping (a known tokenizer class, every
  added or special token already placed at a known id, no id conflicts); otherwise it
  falls back to the reference and says why (``fallback_reason``).

The fingerprint is sha256 of ``json.dumps(sorted(vocab.items(), key=(id, token)),
ensure_ascii=False)``, the oracle's definition, so catalogs built by either path agree.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path

from ..errors import NeedsReference
from ..files import (
    DEFAULT_MAX_FILE_BYTES,
    VOCAB_FILES,
    InputError,
    check_dir,
    check_size,
    orjson,
    read_json,
    read_optional_json,
)
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


@dataclass
class Fingerprint:
    vocab_sha256: str
    base_vocab_sha256: str
    vocab_len: int
    max_id: int | None
    id_holes: int | None
    hf_vocab_size: int | None
    added_tokens: list[dict]
    bos_token: str | None = None
    bos_token_id: int | None = None
    eos_token: str | None = None
    eos_token_id: int | None = None
    pad_token: str | None = None
    pad_token_id: int | None = None
    unk_token: str | None = None
    unk_token_id: int | None = None
    add_bos_token: bool | None = None
    add_eos_token: bool | None = None
    model_type: str | None = None
    tokenizer_class: str | None = None
    method: str = "fast"
    fallback_reason: str | None = None
    vocab: dict[str, int] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        """The catalog facts (everything but the vocabulary itself)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "vocab"}

    def canonical_bytes(self) -> bytes:
        return canonical_bytes(self.vocab)


def canonical_bytes(vocab: dict[str, int]) -> bytes:
    """The oracle's canonical serialization of a token->id mapping (the fingerprinted bytes)."""
    by_id = _dense_tokens(vocab)
    return _dense_canonical(by_id) if by_id is not None else _sorted_canonical(vocab)


def _sorted_canonical(vocab: dict[str, int]) -> bytes:
    """The definition itself: json.dumps of the items sorted by (id, token).

    A lone surrogate (possible in a JSON vocabulary, not in valid UTF-8) is kept as its
    surrogatepass bytes rather than crashing, where the definition has no answer.
    """
    items = sorted(vocab.items(), key=lambda kv: (kv[1], kv[0]))
    return json.dumps(items, ensure_ascii=False).encode("utf-8", "surrogatepass")


def vocab_sha256(vocab: dict[str, int]) -> str:
    return hashlib.sha256(canonical_bytes(vocab)).hexdigest()


def _dense_tokens(vocab: dict[str, int]) -> list[str] | None:
    """Tokens in id order when the ids are exactly 0..n-1 (and ints), else None."""
    ids = list(vocab.values())
    if set(map(type, ids)) - {int}:
        return None
    if ids == list(range(len(ids))):  # the usual file order: no per-token work at all
        return list(vocab)
    by_id: list[str | None] = [None] * len(vocab)
    try:
        for token, i in vocab.items():
            if by_id[i] is not None or i < 0:
                return None
            by_id[i] = token
    except IndexError:
        return None
    return by_id  # type: ignore[return-value]


def _dense_canonical(by_id: list[str]) -> bytes:
    """canonical_bytes() for ids 0..n-1, built by C-level operations only.

    orjson encodes strings exactly as ``json.dumps(ensure_ascii=False)`` does (checked by a
    fuzz test) and separates items with ``","``. Inside an encoded string a quote is always
    escaped, so that sequence marks an item boundary, except where an escaped quote is
    followed by a comma at the very end of a token: tokens ending in ``",`` (common in
    byte-level BPE vocabularies) are swapped for placeholders first and put back at the end.
    Escaped backslashes are masked (``\\\\`` -> NUL, which the encoder never emits raw) so
    that an escaped quote is recognisable, and the ids go in with one ``%`` formatting call.
    """
    n = len(by_id)
    if n == 0:
        return b"[]"
    awkward = [i for i, token in enumerate(by_id) if token[-2:] == '",']
    tokens = list(by_id) if awkward else by_id
    for k, i in enumerate(awkward):
        tokens[i] = f"\0{k}\0"  # encoded as \u0000k\u0000: no quote, comma or double backslash
    try:
        inner = orjson.dumps(tokens)[2:-2]
    except (TypeError, orjson.JSONEncodeError):  # lone surrogates and the like
        return _sorted_canonical(dict(zip(by_id, range(n))))
    masked = inner.replace(b"\\\\", b"\0")
    parts = masked.replace(b"%", b"%%").split(b'","')
    if len(parts) != n or b'\\","' in masked:  # cannot happen after the swap; stay exact anyway
        return _sorted_canonical(dict(zip(by_id, range(n))))
    for i in awkward:
        parts[i] = orjson.dumps(by_id[i])[1:-1].replace(b"\\\\", b"\0").replace(b"%", b"%%")
    text = b'[["' + (b'", %d], ["'.join(parts) % tuple(range(n - 1))) + b'", %d]]' % (n - 1)
    return text.replace(b"\0", b"\\\\")


def _fingerprints(base: dict[str, int], extra: list[tuple[str, int]], by_id: list[str] | None = None):
    """(full sha, base sha, full vocab) for a base vocabulary plus tokens added beyond it.

    When the base ids are dense and every extra id lies above them, the full canonical
    text is the base text plus a tail, so the expensive serialization happens once.
    """
    by_id = by_id if by_id is not None else _dense_tokens(base)
    full = {**base, **dict(extra)} if extra else base
    if by_id is None or any(i < len(base) for _, i in extra) or len(full) != len(base) + len(extra):
        return vocab_sha256(full), vocab_sha256(base), full
    base_text = _dense_canonical(by_id)
    base_sha = hashlib.sha256(base_text).hexdigest()
    if not extra:
        return base_sha, base_sha, full
    tail = json.dumps(sorted(extra, key=lambda kv: (kv[1], kv[0])), ensure_ascii=False).encode("utf-8")
    full_text = base_text[:-1] + b", " + tail[1:] if by_id else tail
    return hashlib.sha256(full_text).hexdigest(), base_sha, full


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


def _specials(tc: dict, stm: dict, defaults: dict, decoder_mode: bool) -> Specials:
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


def _add_bos_eos(tc: dict, tokenizer_json: dict | None) -> tuple[bool | None, bool | None]:
    """Whether encoding adds BOS/EOS: tokenizer_config flags, else the post-processor template."""
    post = (tokenizer_json or {}).get("post_processor") or {}
    if post.get("type") == "Sequence":
        post = next((p for p in post.get("processors") or [] if p.get("type") == "TemplateProcessing"), {})
    single = post.get("single") if post.get("type") == "TemplateProcessing" else None
    from_template = (None, None)
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
    registered = TOKENIZER_CLASS_BY_MODEL_TYPE.get(model_type) if isinstance(model_type, str) else None
    incorrect = model_type in MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS
    if any(fnmatch.fnmatch(name_or_path.lower(), p) for p in MODEL_IDS_TO_TOKENIZERS_BACKEND):
        return "TokenizersBackend"
    if (
        hub
        and _strip_fast(hub) == "LlamaTokenizer"
        and _strip_fast(registered or "") != "MistralCommonBackend"
        and not incorrect
        and tokenizer_json is not None
        and _is_byte_level(tokenizer_json)
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


def _base_from_tokenizer_json(tj: dict) -> tuple[dict[str, int], str | None, list[dict]]:
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


def _base_from_sentencepiece(path: Path) -> dict[str, int]:
    import sentencepiece as spm

    proc = spm.SentencePieceProcessor()
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


def _is_byte_level(tj: dict) -> bool:
    return '"ByteLevel"' in json.dumps(tj.get("pre_tokenizer"))


def _place_sequentially(
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


def _fast(directory: Path, max_bytes: int) -> Fingerprint:
    """get_vocab() from the files, following transformers 5's loading modes exactly.

    * decoder mode (tokenizer_config.json has added_tokens_decoder): special_tokens_map.json
      and added_tokens.json are ignored; legacy mode merges them (and tokenizer.json's added
      tokens) into the declared added tokens.
    * With tokenizer.json, TokenizersBackend keeps the file's added tokens while model-specific
      classes rebuild the backend from vocab and merges. The class is resolved as AutoTokenizer
      does; as a safeguard against that resolution drifting, the fast path still answers only
      when both semantics give the same mapping.
    """
    tc = read_optional_json(directory, "tokenizer_config.json", max_bytes) or {}
    stm = read_optional_json(directory, "special_tokens_map.json", max_bytes) or {}
    if tc.get("auto_map"):
        raise NeedsReference("tokenizer_config.json has auto_map (custom code)")
    if tc.get("from_slow"):
        raise NeedsReference("from_slow: transformers rebuilds the tokenizer from the slow files")
    if (directory / "tekken.json").is_file():
        raise NeedsReference("Mistral tekken.json")
    config = read_optional_json(directory, "config.json", max_bytes) or {}
    tj = read_json(directory / "tokenizer.json", max_bytes) if (directory / "tokenizer.json").is_file() else None
    cls = resolve_class(tc, config, tj, str(directory))
    if cls not in SIMPLE_CLASSES:
        raise NeedsReference(f"tokenizer class {cls!r} is not one the fast path reproduces")
    decoder_mode = "added_tokens_decoder" in tc
    specials = _specials(tc, stm, SIMPLE_CLASSES[cls], decoder_mode)

    tj_added: list[dict] = []
    if tj is not None:
        base, kind, tj_added = _base_from_tokenizer_json(tj)
        if cls in BYTE_LEVEL_CLASSES and not _is_byte_level(tj):
            raise NeedsReference(f"{cls} with a tokenizer.json that is not byte-level")
    elif cls in VOCAB_JSON_CLASSES and (directory / "vocab.json").is_file() and (directory / "merges.txt").is_file():
        base = read_json(directory / "vocab.json", max_bytes)
        if set(map(type, base.values())) - {int}:
            raise InputError("malformed", "vocab.json: ids must be integers")
        check_size(directory / "merges.txt", max_bytes)
        kind = "BPE"
    elif cls in SPM_CLASSES and (directory / "tokenizer.model").is_file():
        check_size(directory / "tokenizer.model", max_bytes)
        base, kind = _base_from_sentencepiece(directory / "tokenizer.model"), "BPE"
    else:
        raise NeedsReference(f"no tokenizer file that {cls} loads without conversion")
    by_id = _dense_tokens(base)
    if by_id is None:
        raise NeedsReference("base vocabulary ids are not exactly 0..n-1")

    declared: dict[int, dict] = {}
    if decoder_mode:
        decoder = tc["added_tokens_decoder"]
        if not isinstance(decoder, dict):
            raise InputError("malformed", "tokenizer_config.json: added_tokens_decoder must be an object")
        for key, t in decoder.items():
            if not (isinstance(t, dict) and isinstance(t.get("content"), str)):
                raise NeedsReference(f"added_tokens_decoder entry {key!r} is not an AddedToken object")
            try:
                declared[int(key)] = {"id": int(key), "content": t["content"], "special": bool(t.get("special"))}
            except ValueError:
                raise InputError("malformed", f"added_tokens_decoder key {key!r} is not an id") from None
    else:
        atj = read_optional_json(directory, "added_tokens.json", max_bytes) or {}
        all_specials = {t for t in specials.named.values() if t is not None} | specials.extra
        for content, i in atj.items():
            if type(i) is not int:
                raise InputError("malformed", "added_tokens.json: ids must be integers")
            declared[i] = {"id": i, "content": content, "special": content in all_specials}
        for t in tj_added:
            declared[t["id"]] = t

    # Rebuilt-class semantics, and (with tokenizer.json) TokenizersBackend's: they must agree.
    extra = _place_sequentially(by_id, base, [], declared)
    if tj is not None and _place_sequentially(by_id, base, tj_added, declared) != extra:
        raise NeedsReference("tokenizer.json added tokens and the declared ones disagree")
    extra_ids = {content: i for i, content in extra.items()}
    missing = [t for t in specials.candidates if t not in base and t not in extra_ids]
    if missing:
        raise NeedsReference(f"special token {missing[0]!r} is not in the vocabulary (transformers appends it)")

    # Added tokens as transformers reports them: the declared ones (plus tokenizer.json's when the
    # backend is kept), every special token it registers, and named tokens always flagged special.
    added = dict(declared)
    if cls == "TokenizersBackend":
        for t in tj_added:
            added.setdefault(t["id"], t)
    named = {t for t in specials.named.values() if t}
    for i, t in list(added.items()):
        if t["content"] in named and not t["special"]:
            added[i] = {**t, "special": True}
    for token in sorted(named | specials.extra):
        i = base.get(token, extra_ids.get(token))
        if i is not None and i not in added:
            added[i] = {"id": i, "content": token, "special": True}
    full_sha, base_sha, vocab = _fingerprints(base, list(extra_ids.items()), by_id)
    add_bos, add_eos = _add_bos_eos(tc, tj)
    return _build(
        vocab,
        full_sha=full_sha,
        base_sha=base_sha,
        hf_vocab_size=len(by_id),
        added=[added[i] for i in sorted(added)],
        named=specials.named,
        add_bos=add_bos,
        add_eos=add_eos,
        model_type=kind,
        tokenizer_class=cls,
        method="fast",
    )


def _build(vocab, *, full_sha, base_sha, hf_vocab_size, added, named, add_bos, add_eos, model_type,
           tokenizer_class, method):
    ids = set(vocab.values())
    max_id = max(ids) if ids else None
    fp = Fingerprint(
        vocab_sha256=full_sha,
        base_vocab_sha256=base_sha,
        vocab_len=len(vocab),
        max_id=max_id,
        id_holes=(max_id + 1 - len(ids)) if ids else None,
        hf_vocab_size=hf_vocab_size,
        added_tokens=added,
        add_bos_token=add_bos,
        add_eos_token=add_eos,
        model_type=model_type,
        tokenizer_class=tokenizer_class,
        method=method,
        vocab=vocab,
    )
    for name in ("bos", "eos", "pad", "unk"):
        token = named.get(f"{name}_token")
        setattr(fp, f"{name}_token", token)
        setattr(fp, f"{name}_token_id", vocab.get(token) if token is not None else None)
    return fp


def _reference(directory: Path, max_bytes: int) -> Fingerprint:
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    for name in VOCAB_FILES + ("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "merges.txt"):
        if (directory / name).is_file():
            check_size(directory / name, max_bytes)
    tc = read_optional_json(directory, "tokenizer_config.json", max_bytes) or {}
    tj = read_optional_json(directory, "tokenizer.json", max_bytes)
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(str(directory), trust_remote_code=False, local_files_only=True)
    except Exception as e:
        text = " ".join(str(e).split())
        if "trust_remote_code" in text or "custom code" in text or tc.get("auto_map"):
            # Name the code, not transformers' sentence (it repeats the local path, twice).
            auto = (tc.get("auto_map") or {}) if isinstance(tc.get("auto_map"), dict) else {}
            code = auto.get("AutoTokenizer") or tc.get("tokenizer_class")
            code = ", ".join(c for c in code if c) if isinstance(code, list) else code
            why = f"tokenizer_config.json auto_map: {code}" if auto else f"tokenizer class {code or '?'}"
            raise InputError("needs_remote_code", f"tokenizer needs remote code, which is never run ({why})") from None
        message = f"transformers cannot load the tokenizer: {type(e).__name__}: {text[:300]}"
        raise InputError("malformed", message) from None
    vocab = tok.get_vocab()
    added = [
        {"id": int(i), "content": t.content, "special": bool(t.special)}
        for i, t in sorted(tok.added_tokens_decoder.items())
    ]
    named = {f"{n}_token": (None if getattr(tok, f"{n}_token", None) is None else str(getattr(tok, f"{n}_token")))
             for n in ("bos", "eos", "pad", "unk")}
    backend = getattr(tok, "_tokenizer", None)
    base = backend.get_vocab(with_added_tokens=False) if backend is not None else vocab
    kind = None
    if tj is not None:
        kind = (tj.get("model") or {}).get("type")
    elif backend is not None:
        kind = type(backend.model).__name__
    add_bos, add_eos = _add_bos_eos(tc, tj)
    return _build(
        vocab,
        full_sha=vocab_sha256(vocab),
        base_sha=vocab_sha256(base),
        hf_vocab_size=getattr(tok, "vocab_size", None),
        added=added,
        named=named,
        add_bos=add_bos,
        add_eos=add_eos,
        model_type=kind,
        tokenizer_class=type(tok).__name__,
        method="reference",
    )


def has_tokenizer(directory: Path) -> bool:
    return any((directory / name).is_file() for name in VOCAB_FILES)


def fingerprint_dir(
    path: str | os.PathLike, *, reference: bool = False, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> Fingerprint:
    """Fingerprint a directory of tokenizer files (fast path unless ``reference``)."""
    directory = check_dir(path)
    if not has_tokenizer(directory):
        raise InputError("no_tokenizer", f"{directory}: no tokenizer files (tokenizer.json, vocab.json, ...)")
    if not reference:
        try:
            return _fast(directory, max_file_bytes)
        except NeedsReference as why:
            fp = _reference(directory, max_file_bytes)
            fp.fallback_reason = str(why)
            return fp
    return _reference(directory, max_file_bytes)


def transformers_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("transformers")
    except Exception:
        return None
