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

import hashlib
import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path

from .files import (
    DEFAULT_MAX_FILE_BYTES,
    VOCAB_FILES,
    InputError,
    check_dir,
    check_size,
    read_json,
    read_optional_json,
)

SPECIAL_NAMES = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")
SPECIAL_LISTS = ("additional_special_tokens", "extra_special_tokens")

# Classes whose from_pretrained() mapping is "model vocab + declared added tokens + any
# missing special token appended", with the named-token defaults of their __init__.
SIMPLE_CLASSES: dict[str, dict[str, str | None]] = {
    "PreTrainedTokenizerFast": {},
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
# AutoTokenizer's choice when tokenizer_config.json names no class (common model types only).
CLASS_BY_MODEL_TYPE = {
    "llama": "LlamaTokenizer",
    "mistral": "LlamaTokenizer",
    "qwen2": "Qwen2Tokenizer",
    "qwen2_moe": "Qwen2Tokenizer",
    "gpt2": "GPT2Tokenizer",
    "gpt_neox": "GPTNeoXTokenizer",
    "gemma": "GemmaTokenizer",
    "gemma2": "GemmaTokenizer",
}
SPM_CLASSES = ("LlamaTokenizer",)  # SentencePiece-only directories whose conversion keeps piece ids


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


class NeedsReference(Exception):
    """The fast path cannot prove it matches transformers; the message says why."""


def canonical_bytes(vocab: dict[str, int]) -> bytes:
    """The oracle's canonical serialization of a token->id mapping."""
    items = sorted(vocab.items(), key=lambda kv: (kv[1], kv[0]))
    return json.dumps(items, ensure_ascii=False).encode("utf-8")


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
    """canonical_bytes() for ids 0..n-1, built by C-level string operations only.

    ``json.dumps(by_id)`` separates items with ``", "``. Inside an encoded string every
    quote is escaped, so once the escaped backslashes are masked (``\\`` -> NUL, which the
    encoder never emits raw), that sequence marks an item boundary unless a backslash
    precedes it (a token ending in ``", ``: the plain encoder handles those). The ids are
    interleaved with one ``%`` formatting call.
    """
    n = len(by_id)
    if n == 0:
        return b"[]"
    inner = json.dumps(by_id, ensure_ascii=False)[2:-2].replace("\\\\", "\0").replace("%", "%%")
    parts = None if '\\", "' in inner else inner.split('", "')
    if parts is None or len(parts) != n:
        return json.dumps(list(zip(by_id, range(n))), ensure_ascii=False).encode("utf-8")
    text = '[["' + ('", %d], ["'.join(parts) % tuple(range(n - 1))) + f'", {n - 1}]]'
    return text.replace("\0", "\\\\").encode("utf-8")


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


def _special_tokens(tc: dict, stm: dict, defaults: dict) -> tuple[dict[str, str | None], list[str]]:
    """Named special tokens (special_tokens_map.json over tokenizer_config.json over class defaults)."""
    named: dict[str, str | None] = {}
    for name in SPECIAL_NAMES:
        if name in stm:
            named[name] = _token_content(stm[name])
        elif name in tc:
            named[name] = _token_content(tc[name])
        else:
            named[name] = defaults.get(name)
    extra: list[str] = []
    for source in (tc, stm):
        for name in SPECIAL_LISTS:
            value = source.get(name)
            if isinstance(value, dict):
                value = list(value.values())
            if value is None:
                continue
            if not isinstance(value, list):
                raise InputError("malformed", f"{name} must be a list")
            extra.extend(t for t in (_token_content(v) for v in value) if t is not None)
    return named, extra


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


def _declared_class(tc: dict, directory: Path, max_bytes: int) -> str | None:
    cls = tc.get("tokenizer_class")
    if cls is None:
        config = read_optional_json(directory, "config.json", max_bytes)
        cls = CLASS_BY_MODEL_TYPE.get((config or {}).get("model_type"))
    if cls is not None and not isinstance(cls, str):
        raise InputError("malformed", "tokenizer_config.json: tokenizer_class must be a string")
    return cls[:-4] if cls and cls.endswith("Fast") and cls != "PreTrainedTokenizerFast" else cls


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


def _fast(directory: Path, max_bytes: int) -> Fingerprint:
    tc = read_optional_json(directory, "tokenizer_config.json", max_bytes) or {}
    stm = read_optional_json(directory, "special_tokens_map.json", max_bytes) or {}
    if tc.get("auto_map"):
        raise NeedsReference("tokenizer_config.json has auto_map (custom code)")
    if tc.get("from_slow"):
        raise NeedsReference("from_slow: transformers rebuilds the tokenizer from the slow files")
    cls = _declared_class(tc, directory, max_bytes)
    if cls not in SIMPLE_CLASSES:
        raise NeedsReference(f"tokenizer class {cls!r} is not one the fast path reproduces")

    tj = None
    if (directory / "tokenizer.json").is_file():
        tj = read_json(directory / "tokenizer.json", max_bytes)
        base, kind, file_added = _base_from_tokenizer_json(tj)
    elif (directory / "vocab.json").is_file() and (directory / "merges.txt").is_file():
        base = read_json(directory / "vocab.json", max_bytes)
        if set(map(type, base.values())) - {int}:
            raise InputError("malformed", "vocab.json: ids must be integers")
        check_size(directory / "merges.txt", max_bytes)
        kind, file_added = "BPE", []
    elif (directory / "tokenizer.model").is_file() and cls in SPM_CLASSES:
        check_size(directory / "tokenizer.model", max_bytes)
        base, kind = _base_from_sentencepiece(directory / "tokenizer.model"), "BPE"
        # Converting a .model, transformers registers the named specials it finds as added tokens.
        named, _ = _special_tokens(tc, stm, SIMPLE_CLASSES[cls])
        specials = {t for t in named.values() if t is not None and t in base}
        file_added = [{"id": base[t], "content": t, "special": True} for t in sorted(specials, key=base.get)]
    else:
        raise NeedsReference("no tokenizer.json, vocab.json+merges.txt or Llama tokenizer.model")

    by_id = _dense_tokens(base)
    if by_id is None:
        raise NeedsReference("base vocabulary ids are not exactly 0..n-1")
    n_base = len(by_id)

    # Added tokens land either on their own base entry or above the base, each once.
    extra: dict[int, str] = {}  # id -> content, beyond the base vocabulary
    extra_ids: dict[str, int] = {}
    added: dict[int, dict] = {}

    def place(i: int, content: str) -> None:
        owner = by_id[i] if 0 <= i < n_base else extra.get(i)
        where = base.get(content, extra_ids.get(content))
        if (owner is not None and owner != content) or (where is not None and where != i) or i < 0:
            raise NeedsReference(f"token {content!r} at id {i} conflicts with the vocabulary")
        if owner is None:
            extra[i], extra_ids[content] = content, i

    # tokenizer.json added_tokens: the backend holds them at these ids.
    for t in file_added:
        place(t["id"], t["content"])
        added[t["id"]] = t

    # Tokens transformers adds through add_tokens(): declared in added_tokens.json or the
    # config's added_tokens_decoder. New ones get the next free id, in declared-id order.
    declared: dict[int, dict] = {}
    atj = read_optional_json(directory, "added_tokens.json", max_bytes)
    for content, i in (atj or {}).items():
        if type(i) is not int:
            raise InputError("malformed", "added_tokens.json: ids must be integers")
        declared[i] = {"id": i, "content": content, "special": False}
    decoder = tc.get("added_tokens_decoder") or {}
    if not isinstance(decoder, dict):
        raise InputError("malformed", "tokenizer_config.json: added_tokens_decoder must be an object")
    for key, t in decoder.items():
        try:
            i = int(key)
        except ValueError:
            raise InputError("malformed", f"added_tokens_decoder key {key!r} is not an id") from None
        content = _token_content(t)
        if i in declared and declared[i]["content"] != content:
            raise NeedsReference(f"added_tokens.json and added_tokens_decoder disagree on id {i}")
        special = bool(t.get("special")) if isinstance(t, dict) else False
        declared[i] = {"id": i, "content": content, "special": special}
    next_id = max([n_base - 1, *extra]) + 1
    for i in sorted(declared):
        t = declared[i]
        known = base.get(t["content"], extra_ids.get(t["content"]))
        if known is None and i == next_id:
            place(i, t["content"])
            next_id += 1
        elif known != i:
            raise NeedsReference(f"added token {t['content']!r} declared at id {i} would not land there")
        added.setdefault(i, t)

    def in_vocab(token: str) -> bool:
        return token in base or token in extra_ids

    named, extra_specials = _special_tokens(tc, stm, SIMPLE_CLASSES[cls])
    pad = ((tj or {}).get("padding") or {}).get("pad_token")
    for token in [*named.values(), *extra_specials, pad]:
        if token is not None and not in_vocab(token):
            raise NeedsReference(f"special token {token!r} is not in the vocabulary (transformers appends it)")

    full_sha, base_sha, vocab = _fingerprints(base, list(extra_ids.items()), by_id)
    add_bos, add_eos = _add_bos_eos(tc, tj)
    return _build(
        vocab,
        full_sha=full_sha,
        base_sha=base_sha,
        hf_vocab_size=n_base,
        added=[added[i] for i in sorted(added)],
        named=named,
        add_bos=add_bos,
        add_eos=add_eos,
        model_type=kind,
        tokenizer_class=tc.get("tokenizer_class") or cls,
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
            message = f"tokenizer needs remote code, which is never run: {text[:200]}"
            raise InputError("needs_remote_code", message) from None
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
