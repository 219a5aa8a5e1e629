"""The fingerprinted bytes of a vocabulary: sha256 of ``json.dumps(sorted(vocab.items(), key=(id, token)),
ensure_ascii=False)`` (the oracle's definition), built without per-token Python work for the usual dense ids,
so catalogs built by either fingerprint path, and the token store, agree byte for byte.
"""

from __future__ import annotations

import hashlib
import json

from .. import deferred


def canonical_bytes(vocab: dict[str, int]) -> bytes:
    """The oracle's canonical serialization of a token->id mapping (the fingerprinted bytes)."""
    by_id = dense_tokens(vocab)
    return _dense_canonical(by_id) if by_id is not None else _sorted_canonical(vocab)


def _sorted_canonical(vocab: dict[str, int]) -> bytes:
    """The definition itself: json.dumps of the items sorted by (id, token).

    A lone surrogate (possible in a JSON vocabulary, not in valid UTF-8) is kept as its
    surrogatepass bytes rather than crashing, where the definition has no answer.
    """
    items = sorted(vocab.items(), key=lambda kv: (kv[1], kv[0]))
    return json.dumps(items, ensure_ascii=False).encode("utf-8", "surrogatepass")


def vocab_sha256(vocab: dict[str, int]) -> str:
    """The fingerprint of a token->id mapping: sha256 of its canonical bytes."""
    return hashlib.sha256(canonical_bytes(vocab)).hexdigest()


def dense_tokens(vocab: dict[str, int]) -> list[str] | None:
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
    orjson = deferred.orjson
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


def fingerprints(base: dict[str, int], extra: list[tuple[str, int]], by_id: list[str] | None = None):
    """(full sha, base sha, full vocab) for a base vocabulary plus tokens added beyond it.

    When the base ids are dense and every extra id lies above them, the full canonical
    text is the base text plus a tail, so the expensive serialization happens once.
    """
    by_id = by_id if by_id is not None else dense_tokens(base)
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
