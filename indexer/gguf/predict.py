"""llama.cpp's view of a model's vocabulary, as its converter makes the GGUF and libllama reads it.

Pinned: ggml-org/llama.cpp@0c1e57098 (vendored in the llama-cpp-python 0.3.36 sdist). ``predict_gguf`` runs
the converter's vocabulary path in pure Python (indexer/gguf/convert.py and vocabpaths.py, rules with
file:line there), then applies what libllama's ``llama_vocab::impl::load`` does with those keys
(src/llama-vocab.cpp, cited below).
The rule that compares two of them, ``common_speculative_are_compatible``, is the llama.cpp engine's
(indexer/engines/llamacpp.py). docs/llamacpp.md lists every rule.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..files import DEFAULT_MAX_FILE_BYTES, InputError, check_dir
from . import LLAMACPP_COMMIT, NOT_MODELLED  # the pin and the not-modelled prefix (indexer/gguf/__init__.py)
from .convert import convert
from .hf import ConverterError, NotModelled, file_cache
from .vocab import (
    KNOWN_BPE_PRE,
    LLAMA_TOKEN_NULL,
    PRE_ADD_BOS,
    PRE_NO_BOS,
    VOCAB_TYPE_NAMES,
    GGUFVocab,
    is_not_modelled,
    refused,
)

if TYPE_CHECKING:
    from .written import Written

def load_vocab(written: Written) -> GGUFVocab:
    """What libllama makes of the written keys (llama_vocab::impl::load, src/llama-vocab.cpp:1939-2720)."""
    add_bos = add_eos = False  # member defaults, llama-vocab.cpp:1831-1832
    if written.model == "llama":  # :1971-1980
        vocab_type, bos, eos = 1, 1, 2
        add_bos, add_eos = True, False  # :2430-2435
    elif written.model == "gpt2":  # :1991-2035
        vocab_type, bos, eos = 2, 11, 11
        if not written.has_merges:
            return refused("llama.cpp cannot load the GGUF: cannot find tokenizer merges in model file")
        pre = written.pre or "default"
        if pre not in KNOWN_BPE_PRE:
            return refused(f"llama.cpp cannot load the GGUF: unknown pre-tokenizer type: '{pre}'")
        add_bos = pre in PRE_ADD_BOS
        if pre in PRE_NO_BOS:
            bos = LLAMA_TOKEN_NULL
    elif written.model == "bert":  # :1981-1990, :2437-2442
        vocab_type, bos, eos = 3, 101, LLAMA_TOKEN_NULL
        add_bos, add_eos = True, False
    elif written.model == "t5":  # :2036-2046, :2443-2446
        vocab_type, bos, eos = 4, LLAMA_TOKEN_NULL, 1
        add_bos, add_eos = False, True
    elif written.model == "gemma4":  # :2110-2149: BPE with merges, no default ids, tokenized as pre 'gemma4'
        vocab_type, bos, eos = 2, LLAMA_TOKEN_NULL, LLAMA_TOKEN_NULL
        if not written.has_merges:
            return refused("llama.cpp cannot load the GGUF: cannot find tokenizer merges in model file")
    else:
        return refused(f"{NOT_MODELLED}libllama loading tokenizer model '{written.model}'")

    # :2509-2515: a text is read as a C string (ends at a NUL: gguf_get_arr_str, ggml/src/gguf.cpp:1096-1099); an
    # empty text becomes "[EMPTY_i]"; token_to_id must then be a bijection (GGML_ASSERT :2540).
    tokens = tuple(t.partition("\0")[0] if "\0" in t else t for t in written.tokens)
    if "" in tokens:
        tokens = tuple(t if t else f"[EMPTY_{i}]" for i, t in enumerate(tokens))
    if len(set(tokens)) != len(tokens):
        seen: set[str] = set()
        for dup in tokens:
            if dup in seen:
                break
            seen.add(dup)
        return refused(f"llama.cpp aborts loading the GGUF: GGML_ASSERT(id_to_token.size() == token_to_id.size()) "
                       f"(token text {dup!r} appears twice)")
    n = len(tokens)
    # :2602-2624: a default id out of range is disabled; a written id in range replaces it, else is ignored.
    ids = {"bos": bos, "eos": eos}
    for typ in ids:
        if ids[typ] >= 0 and ids[typ] >= n:
            ids[typ] = LLAMA_TOKEN_NULL
        new = written.special_ids.get(typ)
        if new is not None and new < n:
            ids[typ] = new
    # :2627-2636: tokenizer.ggml.add_bos_token / add_eos_token override the type defaults.
    add_bos = written.add_special.get("bos", add_bos)
    add_eos = written.add_special.get("eos", add_eos)
    if written.model == "gemma4":  # :2651-2657: a gemma4 pre-tokenizer forces add_bos on
        add_bos = True
    return GGUFVocab(True, None, VOCAB_TYPE_NAMES[vocab_type], n, add_bos, add_eos, ids["bos"], ids["eos"],
                     written.pre, tokens)


def predict_gguf(directory, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> GGUFVocab:
    """What ``convert_hf_to_gguf.py --vocab-only`` writes for a local model directory, as libllama reads it.

    Bad files raise :class:`InputError`; what the converter itself refuses comes back as ``converted=False``.
    """
    # The converter (convert, hf, vocabpaths, written and their tables: about half a bare Python's start) only

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    d = check_dir(directory)
    try:
        with file_cache():
            _, written = convert(d, max_file_bytes)
    except NotModelled as e:
        return refused(f"{NOT_MODELLED}{e}")
    except ConverterError as e:
        return refused(str(e))
    except InputError:
        raise
    return load_vocab(written)


def predict_gguf_facts(directory, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES):
    """(GGUFVocab, None), or (None, why) when the prediction itself fails: one engine's GGUF verdict must not
    abort the other engines' verdicts for the same model."""
    try:
        return predict_gguf(directory, max_file_bytes=max_file_bytes), None
    except InputError as e:
        return None, f"the GGUF prediction cannot read the files: {e.message}"
    except Exception as e:  # noqa: BLE001 - one engine's prediction must not abort the other verdicts
        return None, f"the GGUF prediction failed: {type(e).__name__}: {e}"



__all__ = ["LLAMACPP_COMMIT", "NOT_MODELLED", "GGUFVocab", "is_not_modelled", "predict_gguf", "predict_gguf_facts",
           "DEFAULT_MAX_FILE_BYTES"]
