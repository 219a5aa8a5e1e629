"""Vocabulary fingerprints of a model directory, exactly as ``get_vocab()`` sees them.

Two implementations give the same answer:

* the **reference** loads ``AutoTokenizer.from_pretrained(dir, trust_remote_code=False)``
  and calls ``get_vocab()`` (slow: it builds the whole tokenizer);
* the **fast path** reads the tokenizer files directly. It only answers when it can
  prove that transformers would return the same mapping (a known tokenizer class, every
  added or special token already placed at a known id, no id conflicts); otherwise it
  falls back to the reference and says why (``fallback_reason``).

The fingerprint is sha256 of ``json.dumps(sorted(vocab.items(), key=(id, token)),
ensure_ascii=False)``, the oracle's definition (``canonical.py``), so catalogs built by either path agree.
How transformers reads each tokenizer file, which the fast path follows, is ``tokenizer_files.py``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from importlib.metadata import version
from pathlib import Path

from .. import deferred
from ..errors import NeedsReference, is_panic
from ..files import (
    DEFAULT_MAX_FILE_BYTES,
    VOCAB_FILES,
    InputError,
    check_dir,
    check_size,
    has_tokenizer,
    read_json,
    read_optional_json,
)
from . import TRANSFORMERS_LOCK
from .canonical import canonical_bytes, dense_tokens, fingerprints, vocab_sha256
from .tokenizer_files import (
    BYTE_LEVEL_CLASSES,
    SIMPLE_CLASSES,
    SPM_CLASSES,
    VOCAB_JSON_CLASSES,
    add_bos_eos,
    base_from_sentencepiece,
    base_from_tokenizer_json,
    is_byte_level,
    place_sequentially,
    resolve_class,
    resolve_specials,
)


@dataclass
class Fingerprint:
    """What the catalog keeps about a directory's ``get_vocab()``: its shas, sizes, special and added tokens."""

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
        """The fingerprinted bytes of this vocabulary (their sha256 is ``vocab_sha256``)."""
        return canonical_bytes(self.vocab)


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
    specials = resolve_specials(tc, stm, SIMPLE_CLASSES[cls], decoder_mode)

    tj_added: list[dict] = []
    if tj is not None:
        base, kind, tj_added = base_from_tokenizer_json(tj)
        if cls in BYTE_LEVEL_CLASSES and not is_byte_level(tj):
            raise NeedsReference(f"{cls} with a tokenizer.json that is not byte-level")
    elif cls in VOCAB_JSON_CLASSES and (directory / "vocab.json").is_file() and (directory / "merges.txt").is_file():
        base = read_json(directory / "vocab.json", max_bytes)
        if set(map(type, base.values())) - {int}:
            raise InputError("malformed", "vocab.json: ids must be integers")
        check_size(directory / "merges.txt", max_bytes)
        kind = "BPE"
    elif cls in SPM_CLASSES and (directory / "tokenizer.model").is_file():
        check_size(directory / "tokenizer.model", max_bytes)
        base, kind = base_from_sentencepiece(directory / "tokenizer.model"), "BPE"
    else:
        raise NeedsReference(f"no tokenizer file that {cls} loads without conversion")
    by_id = dense_tokens(base)
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
    extra = place_sequentially(by_id, base, [], declared)
    if tj is not None and place_sequentially(by_id, base, tj_added, declared) != extra:
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
    full_sha, base_sha, vocab = fingerprints(base, list(extra_ids.items()), by_id)
    add_bos, add_eos = add_bos_eos(tc, tj)
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
    try:
        with TRANSFORMERS_LOCK:
            tok = deferred.transformers.AutoTokenizer.from_pretrained(str(directory), trust_remote_code=False,
                                                                      local_files_only=True)
    except BaseException as e:  # a tokenizers panic is a BaseException: one line too
        if not (isinstance(e, Exception) or is_panic(e)):
            raise
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
    add_bos, add_eos = add_bos_eos(tc, tj)
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
    """The installed transformers' version, recorded beside fingerprints (its rules are what they follow)."""
    try:
        return version("transformers")
    except Exception:
        return None
