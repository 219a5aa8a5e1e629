"""The converter's vocabulary paths, one per ``set_vocab`` family (sentencepiece, LlamaHfVocab, gpt2 with
its pre-tokenizer hash, bert, t5, and the model-specific ones), reproduced over the HF files.

Pinned: ggml-org/llama.cpp@0c1e57098 as vendored in the llama-cpp-python 0.3.36 sdist (convert_hf_to_gguf.py,
conversion/*.py, gguf-py/gguf/vocab.py); line numbers are of those files. ``convert.py`` picks the path.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .. import deferred
from ..files import check_size
from .hf import ConverterError, NotModelled, load_hf_tokenizer, read_json, read_optional_json
from .prehash import CHKTXT, PRE_BY_HASH
from .written import SpecialVocab, Written

SPIECE_UNDERLINE = "\u2581"


def fail(e: BaseException) -> ConverterError:
    """The converter dies on ``e``: its words, on one line."""
    text = " ".join(str(e).split())[:500]  # one line
    return ConverterError(f"{type(e).__name__}: {text}" if text else type(e).__name__)


def does_token_look_special(token: str) -> bool:  # base.py:1557-1578
    """Added tokens that look special keep their text (no SentencePiece space) and count as control."""
    return (
        token in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
        or (token.startswith("<|") and token.endswith("|>"))
        or (token.startswith("<｜") and token.endswith("｜>"))
        or (token.startswith("<unused") and token.endswith(">"))
    )


def find_hparam(hparams: dict, keys):  # base.py:211-217
    """The first of the names a model family gives a setting; missing, the converter dies with this KeyError."""
    key = next((k for k in keys if k in hparams), None)
    if key is None:
        raise ConverterError(f"KeyError: 'could not find any of: {list(keys)}'")
    return hparams[key]


def _sentencepiece(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """_create_vocab_sentencepiece + _set_vocab_sentencepiece (base.py:2081-2181)."""
    path = directory / "tokenizer.model"
    if not path.is_file():
        raise FileNotFoundError(f"File not found: {path}")
    sp = _load_sentencepiece(path, max_bytes)
    n_sp = sp.vocab_size()
    key = next((k for k in ("vocab_size_per_layer_input", "vocab_size") if k in hparams), None)  # find_hparam
    vocab_size = (hparams[key] if key else None) or n_sp
    tokens = [f"[PAD{i}]" for i in range(vocab_size)]
    for i in range(min(n_sp, vocab_size)):  # ids >= vocab_size are dropped (base.py:2109-2111)
        tokens[i] = sp.IdToPiece(i)
    atj = read_optional_json(directory, "added_tokens.json", max_bytes) or {}
    for key, tid in atj.items():  # base.py:2130-2142
        if tid < vocab_size:
            tokens[tid] = key
    tc = read_optional_json(directory, "tokenizer_config.json", max_bytes) or {}
    for key, data in (tc.get("added_tokens_decoder") or {}).items():  # base.py:2144-2162
        tid = int(key)
        token = data["content"]
        if tid >= vocab_size:
            continue
        if not (data.get("special") or does_token_look_special(token)):
            token = token.replace(SPIECE_UNDERLINE, " ")
        tokens[tid] = token
    written = Written(model="llama", pre="default", tokens=tokens)
    SpecialVocab(directory, max_bytes, n_vocab=len(tokens)).add_to(written)
    return written


def _load_sentencepiece(path: Path, max_bytes: int):
    check_size(path, max_bytes)
    sp = deferred.sentencepiece.SentencePieceProcessor()
    try:
        sp.LoadFromFile(str(path))
    except Exception as e:
        raise fail(e) from None
    return sp


def _phi3(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """Phi3MiniModel.set_vocab (conversion/phi.py:44-146)."""
    tc = read_optional_json(directory, "tokenizer_config.json", max_bytes)
    if tc is not None:
        if "tokenizer_class" not in tc:
            raise ConverterError("KeyError: 'tokenizer_class'")
        if tc["tokenizer_class"] == "GPT2Tokenizer":
            return _gpt2(directory, hparams, max_bytes)
    path = directory / "tokenizer.model"
    if not path.is_file():
        raise ConverterError(f"ValueError: Error: Missing {path}")
    sp = _load_sentencepiece(path, max_bytes)
    vocab_size = hparams.get("vocab_size", sp.vocab_size())
    tokens = [f"[PAD{i}]" for i in range(vocab_size)]
    try:
        for i in range(sp.vocab_size()):  # no range check here: IndexError past vocab_size (phi.py:68)
            tokens[i] = sp.IdToPiece(i)
        for key, tid in (read_optional_json(directory, "added_tokens.json", max_bytes) or {}).items():
            if tid < vocab_size:  # phi.py:93-97
                tokens[tid] = key
        for key, data in ((tc or {}).get("added_tokens_decoder") or {}).items():  # phi.py:103-115
            tokens[int(key)] = data["content"]
        tj = read_optional_json(directory, "tokenizer.json", max_bytes)
        for data in (tj or {}).get("added_tokens", []):  # phi.py:117-130
            tokens[int(data["id"])] = data["content"]
    except IndexError as e:
        raise fail(e) from None
    written = Written(model="llama", pre="default", tokens=tokens)
    SpecialVocab(directory, max_bytes, n_vocab=len(tokens)).add_to(written)
    return written


def _llama_hf(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """gguf.LlamaHfVocab + _set_vocab_llama_hf (vocab.py:555-676, base.py:2183-2203)."""
    tokens = _llama_hf_tokens(directory, max_bytes)
    written = Written(model="llama", pre="default", tokens=tokens)
    SpecialVocab(directory, max_bytes, n_vocab=len(tokens)).add_to(written)
    return written


def _llama_hf_tokens(directory: Path, max_bytes: int) -> list[str]:
    """The token texts gguf.LlamaHfVocab gives (vocab.py:555-676): base vocabulary, then added tokens above it."""
    tj_path = directory / "tokenizer.json"
    if not tj_path.is_file():
        raise FileNotFoundError(str(tj_path))
    tj = read_json(tj_path, max_bytes)
    model = tj["model"]
    is_llama3 = model["type"] == "BPE" and model.get("ignore_merges", False) and not model.get("byte_fallback", True)
    if is_llama3:
        raise TypeError("Llama 3 must be converted with BpeVocab")
    if model["type"] != "BPE" or not model.get("byte_fallback", False):
        raise FileNotFoundError("Cannot find Llama BPE tokenizer")
    decoder = tj["decoder"]
    if decoder is None:
        raise TypeError("'NoneType' object is not subscriptable")  # caught by the caller, as in Python
    if decoder["type"] != "Sequence":
        raise FileNotFoundError("Cannot find Llama BPE tokenizer")
    tok = load_hf_tokenizer(directory, read_json(directory / "config.json", max_bytes), max_bytes)
    base = tok.base_size
    added = [t for t, i in sorted(tok.added.items(), key=lambda kv: kv[1]) if i >= base]
    reverse = {i: t for t, i in tok.vocab.items()}
    try:
        return [reverse[i] for i in range(base)] + added
    except KeyError as e:
        raise fail(e) from None


def pre_tokenizer_hash(tok) -> str:
    """chkhsh of get_vocab_base_pre (base.py:1637-1638): sha256 of str(tokenizer.encode(chktxt))."""
    return hashlib.sha256(str(tok.encode(CHKTXT)).encode()).hexdigest()


def _vocab_base(directory: Path, hparams: dict, max_bytes: int) -> tuple[list[str], list[str], str]:
    """get_vocab_base (base.py:1581-1626): texts, types ("normal", "control", "user", "unused") and pre."""
    tok = load_hf_tokenizer(directory, read_json(directory / "config.json", max_bytes), max_bytes)
    vocab_size = hparams.get("vocab_size", len(tok.vocab))
    if not max(tok.vocab.values()) < vocab_size:  # base.py:1587
        raise ConverterError("AssertionError (assert max(tokenizer.vocab.values()) < vocab_size)")
    pre = PRE_BY_HASH.get(pre_tokenizer_hash(tok))
    if pre is None:  # base.py:1943-1956
        raise ConverterError("NotImplementedError: BPE pre-tokenizer was not recognized - update get_vocab_base_pre()")
    reverse = {i: t for t, i in tok.vocab.items()}
    # ids the vocabulary lacks are padding (base.py:1598-1600)
    tokens = [reverse.get(i, f"[PAD{i}]") for i in range(vocab_size)]
    types = ["normal" if i in reverse else "unused" for i in range(vocab_size)]
    # added tokens (base.py:1601-1616), visited by id: where reverse[i] is an added token's content
    for i in sorted(i for c, i in tok.vocab.items() if c in tok.added and i < vocab_size and reverse[i] == c):
        token = tokens[i]
        if not tok.added_normalized.get(i, True):
            token = tok.decode_roundtrip(token)
        if tok.added_special.get(i) or does_token_look_special(token):
            types[i] = "control"
        else:
            token = token.replace(SPIECE_UNDERLINE, " ")
            types[i] = "user"
        tokens[i] = token
    return tokens, types, pre


def _gpt2(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """_set_vocab_gpt2 (base.py:1964-1972)."""
    tokens, _, pre = _vocab_base(directory, hparams, max_bytes)
    written = Written(model="gpt2", pre=pre, tokens=tokens)
    SpecialVocab(directory, max_bytes, load_merges=True).add_to(written)
    return written


def _bert(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """BertModel.set_vocab (conversion/bert.py:40-67): WordPiece in "phantom space" form, model "bert"."""
    tokens, types, pre = _vocab_base(directory, hparams, max_bytes)

    def phantom(tok: str, kind: str) -> str:
        if kind == "control":
            return tok
        return tok[2:] if tok.startswith("##") else SPIECE_UNDERLINE + tok

    written = Written(model="bert", pre=pre, tokens=list(map(phantom, tokens, types)))
    SpecialVocab(directory, max_bytes, n_vocab=len(tokens)).add_to(written)
    return written


def _sp_model_type(raw: bytes) -> int:
    """ModelProto.trainer_spec.model_type (sentencepiece_model.proto: field 2, then field 3; UNIGRAM = 1 default)."""
    def fields(buf: bytes):
        i = 0
        while i < len(buf):
            key, i = _varint(buf, i)
            num, wire = key >> 3, key & 7
            val: int | bytes
            if wire == 0:
                val, i = _varint(buf, i)
            elif wire == 2:
                n, i = _varint(buf, i)
                val, i = buf[i:i + n], i + n
            elif wire == 5:
                val, i = buf[i:i + 4], i + 4
            elif wire == 1:
                val, i = buf[i:i + 8], i + 8
            else:
                raise ValueError("not a SentencePiece model")
            yield num, val

    model_type = 1
    for num, val in fields(raw):
        if num == 2:
            for n2, v2 in fields(val):
                if n2 == 3:
                    model_type = v2
    return model_type


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def _t5(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """T5Model.set_vocab (conversion/t5.py:27-119): Unigram -> model "t5"; a BPE model -> SentencePiece path."""
    path = directory / "tokenizer.model"
    if not path.is_file():
        path = directory / "spiece.model"
    if not path.is_file():
        raise ConverterError(f"FileNotFoundError: File not found: {path}")
    check_size(path, max_bytes)
    kind = _sp_model_type(path.read_bytes())
    if kind == 2:  # t5.py:47-51
        if path.name != "tokenizer.model":
            raise ConverterError("AssertionError (assert tokenizer_path.name == 'tokenizer.model')")
        return _sentencepiece(directory, hparams, max_bytes)
    if kind != 1:
        raise ConverterError("AssertionError (assert sentencepiece_model.trainer_spec.model_type == 1)")
    sp = _load_sentencepiece(path, max_bytes)
    vocab_size = hparams.get("vocab_size", sp.vocab_size())
    tokens = [f"[PAD{i}]" for i in range(vocab_size)]
    try:
        for i in range(sp.vocab_size()):  # no range check (t5.py:66-83)
            tokens[i] = sp.IdToPiece(i)
    except IndexError as e:
        raise fail(e) from None
    for key, tid in (read_optional_json(directory, "added_tokens.json", max_bytes) or {}).items():
        if tid < vocab_size:  # t5.py:85-96
            tokens[tid] = key
    written = Written(model="t5", pre="default", tokens=tokens)
    SpecialVocab(directory, max_bytes, n_vocab=len(tokens)).add_to(written)
    return written


def _deepseek(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """DeepseekV2Model.set_vocab (conversion/deepseek.py:265-316): GPT-2 BPE; on any failure it reloads the
    tokenizer and accepts only the kimi-k2 tiktoken vocabulary, else NotImplementedError."""
    try:
        return _gpt2(directory, hparams, max_bytes)
    except NotModelled:
        raise
    except ConverterError:
        pass
    tok = load_hf_tokenizer(directory, read_json(directory / "config.json", max_bytes), max_bytes)
    pre = PRE_BY_HASH.get(pre_tokenizer_hash(tok))
    if pre is None:
        raise ConverterError("NotImplementedError: BPE pre-tokenizer was not recognized - update get_vocab_base_pre()")
    if pre == "kimi-k2":
        raise NotModelled("indexer does not model the kimi-k2 tiktoken vocabulary (deepseek.py:275-314)")
    raise ConverterError(f"NotImplementedError: Deepseek pre-tokenizer {pre!r} is not supported yet!")


def _stablelm(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """StableLMModel.set_vocab (conversion/stablelm.py:18-23): GPT-2 BPE with tokenizer.json, else Qwen's."""
    if (directory / "tokenizer.json").is_file():
        return _gpt2(directory, hparams, max_bytes)
    raise NotModelled("indexer does not model _set_vocab_qwen (tiktoken, remote code)")


def _mpt(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """MPTModel.set_vocab (conversion/mpt.py:16-25): GPT-2 BPE, on any failure SentencePiece with add_bos off
    and EOS id 1 written after SpecialVocab."""
    try:
        return _gpt2(directory, hparams, max_bytes)
    except NotModelled:
        raise
    except ConverterError:
        pass
    written = _sentencepiece_strict(directory, hparams, max_bytes)
    written.add_special["bos"] = False
    written.special_ids["eos"] = 1
    return written


def _mistral3(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """Mistral3Model (conversion/mistral3.py:14-51): model_type "mistral4" delegates to DeepseekV2Model, any
    other to LlamaModel (model_type read after the text_config merge)."""
    if hparams.get("model_type") == "mistral4":
        return _deepseek(directory, hparams, max_bytes)
    return _llama(directory, hparams, max_bytes)


def _internlm2(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """InternLM2Model.set_vocab (conversion/internlm.py:21-144): SentencePiece up to hparams vocab_size (no
    padding: an id past the model is sentencepiece's IndexError), "\x00" -> "🐉", added_tokens.json appended,
    added tokens overwrite their ids, and "<|im_end|>" replaces the EOS when it is an added token."""
    path = directory / "tokenizer.model"
    if not path.is_file():  # internlm.py:35-37: logger.error + sys.exit(1)
        raise ConverterError(f"SystemExit: Error: Missing {path}")
    sp = _load_sentencepiece(path, max_bytes)
    vocab_size = hparams.get("vocab_size", sp.vocab_size())
    tokens = []
    for i in range(vocab_size):
        piece = sp.IdToPiece(i)  # IndexError past the model, as in the converter
        tokens.append("🐉" if piece == "\x00" else piece)
    tokens += list(read_optional_json(directory, "added_tokens.json", max_bytes) or {})
    chat_eos = None
    tc = read_optional_json(directory, "tokenizer_config.json", max_bytes) or {}
    tj = read_optional_json(directory, "tokenizer.json", max_bytes) or {}
    entries = [(int(k), d["content"]) for k, d in (tc.get("added_tokens_decoder") or {}).items()]
    entries += [(int(d["id"]), d["content"]) for d in tj.get("added_tokens", [])]
    for tid, content in entries:  # internlm.py:93-126
        if content == "<|im_end|>":
            chat_eos = tid
        tokens[tid] = content
    written = Written(model="llama", pre="default", tokens=tokens)
    special = SpecialVocab(directory, max_bytes, n_vocab=len(tokens))
    if "eos" not in special.special_token_ids:  # internlm.py:135 reads it unconditionally
        raise ConverterError("KeyError: 'eos'")
    if chat_eos is not None:
        special.special_token_ids["eos"] = chat_eos
    special.add_to(written)
    return written


def _sentencepiece_or_gpt2(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """try _set_vocab_sentencepiece except FileNotFoundError: _set_vocab_gpt2 (e.g. qwen.py:60-64)."""
    try:
        return _sentencepiece(directory, hparams, max_bytes)
    except FileNotFoundError:
        return _gpt2(directory, hparams, max_bytes)


def _llama(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """LlamaModel.__init__ and set_vocab (conversion/llama.py:36-161)."""
    if "draft_vocab_size" in hparams and hparams.get("num_hidden_layers") == 1:  # llama.py:47-59
        raise ConverterError("ValueError: EAGLE-3 model requires --target-model-dir to be specified. Please provide "
                             "the path to the target model directory to read config.json")
    origin = (read_json(directory / "config.json", max_bytes).get("architectures") or [None])[0]
    if origin == "GlmasrModel":
        raise NotModelled("indexer does not model _set_vocab_glmedge (llama.py:115-116)")
    if (directory / "tekken.json").is_file() and not (directory / "tokenizer.json").is_file():
        raise NotModelled("indexer does not model _set_vocab_mistral for tekken.json (llama.py:121-124)")
    tc = read_optional_json(directory, "tokenizer_config.json", max_bytes) or {}
    if tc.get("tokenizer_class") == "HybridDNATokenizer":
        raise NotModelled("indexer does not model _set_vocab_hybriddna (llama.py:132-133)")
    try:
        written = _sentencepiece(directory, hparams, max_bytes)
    except FileNotFoundError:
        try:
            written = _llama_hf(directory, hparams, max_bytes)
        except (FileNotFoundError, TypeError):
            written = _gpt2(directory, hparams, max_bytes)  # "Llama 3"
    if hparams.get("vocab_size", 32000) == 49152:  # llama.py:156-158, granite small models
        written.add_special["bos"] = False
    return written


# ---------------------------------------------------------------- state-space and hybrid models, Gemma 3n / 4


def _raw_hparams(directory: Path, max_bytes: int, *, llm_config: bool) -> dict:
    """The hparams of a class that reads config.json itself instead of AutoConfig (MambaModel.__init__,
    mamba.py:21-27; Mamba2Model.__init__, mamba.py:107-116, which also renames ``llm_config``), after
    TextModel.__init__ merges ``text_config`` (base.py:1352-1354)."""
    config = dict(read_json(directory / "config.json", max_bytes))
    if llm_config and "llm_config" in config:
        config["text_config"] = config["llm_config"]
    if isinstance(config.get("text_config"), dict):
        config = {**config, **config["text_config"]}
    return config


def _padded(hparams: dict, default_multiple: int) -> dict:
    """vocab_size rounded up to ``pad_vocab_size_multiple`` (mamba.py:30-35, :124-129): the [PAD{i}] rows the
    GGUF then holds count in n_vocab."""
    if "vocab_size" not in hparams:
        raise ConverterError("KeyError: 'vocab_size'")
    multiple = hparams.get("pad_vocab_size_multiple", default_multiple)
    return {**hparams, "vocab_size": -(hparams["vocab_size"] // -multiple) * multiple}


BUILTIN = "indexer does not model _set_vocab_builtin (base.py:2250-2275: the token list of llama.cpp's own "\
          "models/ggml-vocab-gpt-neox.gguf, used when the repo has neither tokenizer.json nor tokenizer.model)"


def _mamba(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """MambaModel.set_vocab (conversion/mamba.py:29-44), for Mamba and Falcon-Mamba: config.json as read, vocab_size
    padded to a multiple of 8; tokenizer.json -> GPT-2 BPE, else tokenizer.model -> SentencePiece."""
    padded = _padded(_raw_hparams(directory, max_bytes, llm_config=False), 8)
    if (directory / "tokenizer.json").is_file():
        return _gpt2(directory, padded, max_bytes)
    if (directory / "tokenizer.model").is_file():
        return _sentencepiece_strict(directory, padded, max_bytes)
    raise NotModelled(BUILTIN)


def _mamba2_vocab(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """Mamba2Model.set_vocab (conversion/mamba.py:123-141) on hparams already padded: tokenizer.model first, then
    tokenizer.json (the reverse of Mamba-1's order)."""
    if (directory / "tokenizer.model").is_file():
        return _sentencepiece_strict(directory, hparams, max_bytes)
    if (directory / "tokenizer.model.v3").is_file():  # mamba.py:134-136
        raise ConverterError(f"NotImplementedError: Please rename {directory / 'tokenizer.model.v3'} to "
                             f"{directory / 'tokenizer.model'}")
    if (directory / "tokenizer.json").is_file():
        return _gpt2(directory, hparams, max_bytes)
    raise NotModelled(BUILTIN)


def _mamba2(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """Mamba2Model (conversion/mamba.py:103-141): config.json as read, vocab_size padded to a multiple of 16."""
    return _mamba2_vocab(directory, _padded(_raw_hparams(directory, max_bytes, llm_config=True), 16), max_bytes)


def _granite_hybrid(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """GraniteHybridModel (Granite 4.0-H, Bamba; conversion/granite.py:391-531): Mamba2Model's hparams and
    set_vocab, padded to a multiple of 8 when some layer is not attention, else 1 (granite.py:528-531); the
    attention layers come from layer_types, attn_layer_indices, or attn_layer_period/offset (granite.py:438-456)."""
    raw = _raw_hparams(directory, max_bytes, llm_config=True)
    n_layers = find_hparam(raw, ["n_layers", "num_hidden_layers", "n_layer", "num_layers"])  # base.py:1356
    if layer_types := raw.get("layer_types"):
        attn = [i for i, kind in enumerate(layer_types) if kind == "attention"]
    else:
        attn = raw.get("attn_layer_indices") or []
        if not attn:
            period, offset = raw.get("attn_layer_period"), raw.get("attn_layer_offset")
            if not period:
                raise ConverterError("AssertionError: Didn't find attn_layer_indices or attn_layer_period")
            if offset is None:
                raise ConverterError("AssertionError: No attention layer offset set with attn_layer_period")
            attn = [i for i in range(n_layers) if i % period == offset]
    ssm = [i for i in range(n_layers) if i not in attn]
    raw["pad_vocab_size_multiple"] = 8 if ssm else 1
    return _mamba2_vocab(directory, _padded(raw, 16), max_bytes)


def _nemotron_h(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """NemotronHModel.set_vocab (conversion/nemotron.py:367-425): get_vocab_base's body (base.py:1581-1626) with
    vocab_size rounded up to a multiple of 8, model gpt2 with merges; AutoTokenizer runs with
    trust_remote_code=True (nemotron.py:376), so a repo whose tokenizer needs its own code is not modelled."""
    tc = read_optional_json(directory, "tokenizer_config.json", max_bytes) or {}
    config = read_json(directory / "config.json", max_bytes)
    tok_map = tc.get("auto_map")
    remote_tok = isinstance(tok_map, list) or (isinstance(tok_map, dict) and "AutoTokenizer" in tok_map)
    if remote_tok or (not tc.get("tokenizer_class") and config.get("auto_map")):
        raise NotModelled("indexer does not run the repo's tokenizer code, which NemotronH's set_vocab loads "
                          "(AutoTokenizer trust_remote_code=True, conversion/nemotron.py:376)")
    return _gpt2(directory, _padded({**hparams, "pad_vocab_size_multiple": 8}, 8), max_bytes)


def _jamba(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """JambaModel.set_vocab (conversion/jamba.py:18-23): tokenizer.model -> SentencePiece, else LlamaHfVocab with no
    fallback (a tokenizer.json it cannot read fails the conversion)."""
    if (directory / "tokenizer.model").is_file():
        return _sentencepiece_strict(directory, hparams, max_bytes)
    return _llama_hf(directory, hparams, max_bytes)


def _gemma3n(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """Gemma3NModel (conversion/gemma.py:486-530): altup_num_inputs must be 4 (:497; a config without it gets
    AutoConfig's default, 4 in transformers 4.57.6 Gemma3nTextConfig); set_vocab drops vocab_size_per_layer_input
    so the full vocab_size counts, then Gemma3Model.set_vocab (gemma.py:134-139)."""
    if hparams.get("altup_num_inputs", 4) != 4:
        raise ConverterError("AssertionError: Current conversion only supports 4 altup inputs")
    rest = {k: v for k, v in hparams.items() if k != "vocab_size_per_layer_input"}
    return _sentencepiece_or_gpt2(directory, rest, max_bytes)


def _gemma4(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """Gemma4Model.set_vocab (conversion/gemma.py:641-669): LlamaHfVocab's tokens (no fallback), tokenizer model
    "gemma4" with no pre key, SpecialVocab with merges and no n_vocab, then add_bos_token written true."""
    tokens = _llama_hf_tokens(directory, max_bytes)
    written = Written(model="gemma4", pre=None, tokens=tokens)
    SpecialVocab(directory, max_bytes, load_merges=True).add_to(written)
    written.add_special["bos"] = True  # gemma.py:669, after SpecialVocab (a later write overwrites)
    return written


def _glm_named(directory: Path, hparams: dict, max_bytes: int, names: tuple, *, remote: bool) -> Written:
    """get_vocab_base's GPT-2 BPE, then special ids by added-token name through SpecialVocab._set_special_token,
    which keeps an id already read from the files (gguf-py/gguf/vocab.py:149-159); an absent name is the
    converter's KeyError."""
    if remote:
        tc = read_optional_json(directory, "tokenizer_config.json", max_bytes) or {}
        tok_map = tc.get("auto_map")
        if isinstance(tok_map, list) or (isinstance(tok_map, dict) and "AutoTokenizer" in tok_map):
            raise NotModelled("indexer does not run the repo's tokenizer code, which Glm4Model.set_vocab loads "
                              "(AutoTokenizer trust_remote_code=True, conversion/glm.py:33)")
    written = _gpt2(directory, hparams, max_bytes)
    added = load_hf_tokenizer(directory, read_json(directory / "config.json", max_bytes), max_bytes).added
    for typ, name in names:
        if name not in added:
            raise ConverterError(f"KeyError: {name!r}")
        written.special_ids.setdefault(typ, added[name])
    return written


def _glm(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """_set_vocab_glm (conversion/base.py:2350-2365; GLM-4.5/4.6/4.7 MoE, GLM-4.7-Flash, GLM-5): bos [gMASK], eot
    <|user|>, unk <|endoftext|>, eom <|observation|>."""
    return _glm_named(directory, hparams, max_bytes, (("bos", "[gMASK]"), ("eot", "<|user|>"),
                                                      ("unk", "<|endoftext|>"), ("eom", "<|observation|>")),
                      remote=False)


def _glm4(directory: Path, hparams: dict, max_bytes: int) -> Written:
    """Glm4Model.set_vocab (conversion/glm.py:31-45; GLM-4-0414, GLM-4.1V): eos, eot, unk and bos by name, with
    the tokenizer loaded with trust_remote_code=True."""
    return _glm_named(directory, hparams, max_bytes, (("eos", "<|endoftext|>"), ("eot", "<|user|>"),
                                                      ("unk", "<|endoftext|>"), ("bos", "<|endoftext|>")),
                      remote=True)


PATHS = {
    "llama": _llama,
    "gpt2": _gpt2,
    "sentencepiece": lambda d, h, m: _sentencepiece_strict(d, h, m),
    "sentencepiece_or_gpt2": _sentencepiece_or_gpt2,
    "phi3": _phi3,
    "bert": _bert,
    "t5": _t5,
    "deepseek": _deepseek,
    "stablelm": _stablelm,
    "mpt": _mpt,
    "mistral3": _mistral3,
    "internlm2": _internlm2,
    "mamba": _mamba,
    "mamba2": _mamba2,
    "granite_hybrid": _granite_hybrid,
    "nemotron_h": _nemotron_h,
    "jamba": _jamba,
    "gemma3n": _gemma3n,
    "gemma4": _gemma4,
    "glm": _glm,
    "glm4": _glm4,
}


def _sentencepiece_strict(directory: Path, hparams: dict, max_bytes: int) -> Written:
    try:
        return _sentencepiece(directory, hparams, max_bytes)
    except FileNotFoundError as e:
        raise fail(e) from None
