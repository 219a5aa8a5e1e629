"""The tokenizer llama.cpp's converter gets from ``AutoTokenizer.from_pretrained`` in its pinned environment.

The converter (``get_vocab_base``, ``LlamaHfVocab``) runs under transformers 4.57.6
(llama.cpp requirements/requirements-convert_legacy_llama.txt:5). We do not run it: this module builds the
same backend with the ``tokenizers`` library, following transformers 4.57.6 (``src/transformers/...``):

* the class: ``tokenizer_class`` of tokenizer_config.json or config.json (its ``Fast`` variant), else the
  config's ``model_type`` (models/auto/tokenization_auto.py, copied in indexer/gguf/tfmap.py);
* the backend: ``tokenizer.json`` (tokenization_utils_fast.py:115-117) unless ``from_slow`` applies, else the
  slow files converted (convert_slow_tokenizer.py:331-368 GPT2Converter with its add_bos template, :402-445
  Qwen2Converter); classes without a slow tokenizer fail there as 4.57.6 does (convert_slow_tokenizer.py:1853-1873);
  ``LlamaTokenizerFast`` forces ``from_slow`` when ``add_prefix_space`` is set
  (models/llama/tokenization_llama_fast.py:153-154), and the slow ``LlamaTokenizer`` then needs
  ``tokenizer.model``: without it sentencepiece raises "Either model_file or model_proto must be specified.";
* truncation and padding of tokenizer.json are not applied by ``encode()`` (tokenization_utils_fast.py:157-176
  keeps them for calls that ask for them);
* added tokens: ``added_tokens_decoder`` of tokenizer_config.json, or in legacy mode added_tokens.json and
  special_tokens_map.json (tokenization_utils_base.py:2276-2345), then every named special token not yet
  present (tokenization_utils_fast.py:180-207); a token already in the vocabulary keeps its id, a new one is
  appended by ``tokenizers``;
* ``update_post_processor`` of the Llama, CodeLlama, Gemma, Cohere and GPT-NeoX fast classes
  (models/llama/tokenization_llama_fast.py:173-199): BOS/EOS from ``add_bos_token``/``add_eos_token``.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import BPE

from ..errors import ConverterError, NotModelled
from ..files import DEFAULT_MAX_FILE_BYTES, InputError, check_size
from ..files import read_json as _read_json
from .tfconfig import CONFIG_MODEL_TYPES
from .tfmap import FAST_BY_MODEL_TYPE, KNOWN_CLASSES, SLOW_ONLY_MODEL_TYPES

_CACHE: ContextVar[dict | None] = ContextVar("gguf_json_cache", default=None)


@contextmanager
def file_cache():
    """Within one prediction, parse each JSON file once (the converter reads some of them three times)."""
    token = _CACHE.set({})
    try:
        yield
    finally:
        _CACHE.reset(token)


def read_json(path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES):
    """indexer.files.read_json, memoised inside file_cache(); callers must not mutate the result."""
    cache = _CACHE.get()
    if cache is None:
        return _read_json(path, max_bytes)
    key = (str(path), max_bytes)
    if key not in cache:
        cache[key] = _read_json(path, max_bytes)
    return cache[key]


def read_optional_json(directory: Path, name: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES):
    """A JSON file of the model directory, or None when it is absent (the converter treats both alike)."""
    path = directory / name
    return read_json(path, max_bytes) if path.is_file() else None


# Each fast class's __init__ defaults for the named special tokens (models/*/tokenization_*_fast.py).
CLASS_DEFAULTS: dict[str, dict[str, str | None]] = {
    "LlamaTokenizerFast": {"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"},
    "CodeLlamaTokenizerFast": {"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"},
    "GemmaTokenizerFast": {"unk_token": "<unk>", "bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>"},
    "GPT2TokenizerFast": {"unk_token": "<|endoftext|>", "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"},
    "GPTNeoXTokenizerFast": {"unk_token": "<|endoftext|>", "bos_token": "<|endoftext|>",
                             "eos_token": "<|endoftext|>"},
    "Qwen2TokenizerFast": {"unk_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"},
    "PreTrainedTokenizerFast": {},
    "BertTokenizerFast": {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                          "mask_token": "[MASK]"},
}
# update_post_processor() and its add_bos_token/add_eos_token defaults, per class.
POST_PROCESSOR_DEFAULTS = {
    "LlamaTokenizerFast": (True, False),
    "CodeLlamaTokenizerFast": (True, False),
    "GemmaTokenizerFast": (True, False),
    "CohereTokenizerFast": (True, False),
    "GPTNeoXTokenizerFast": (False, False),
}
SPM_BACKED = ("LlamaTokenizerFast", "CodeLlamaTokenizerFast", "GemmaTokenizerFast")
NAMED = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


@dataclass
class HFTokenizer:
    """What the converter reads off the transformers tokenizer."""

    backend: Tokenizer
    cls: str
    vocab: dict[str, int]  # tokenizer.vocab / get_vocab(): with added tokens
    base_size: int  # tokenizer.vocab_size: without added tokens
    added: dict[str, int]  # get_added_vocab()
    added_special: dict[int, bool]  # added_tokens_decoder[i].special
    added_normalized: dict[int, bool]
    all_special_ids: set[int]
    clean_up_tokenization_spaces: bool = False  # tokenization_utils_base.py:1454 (default False in 4.57.6)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` with the tokenizer's own special tokens, as ``tokenizer.encode`` gives them."""
        return self.backend.encode(text).ids

    def decode_roundtrip(self, token: str) -> str:
        """tokenizer.decode(tokenizer.encode(token, add_special_tokens=False)), base.py:1604."""
        text = self.backend.decode(self.backend.encode(token, add_special_tokens=False).ids, skip_special_tokens=False)
        if self.clean_up_tokenization_spaces:  # tokenization_utils_base.py:4112-4135
            for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                         (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
                text = text.replace(a, b)
        return text


def _token_fields(t: dict) -> dict:
    """AddedToken(**serialized): special defaults to False, normalized to ``not special`` (tokenizers)."""
    special = bool(t.get("special", False))
    return {"content": t["content"], "special": special, "normalized": bool(t.get("normalized", not special)),
            "lstrip": bool(t.get("lstrip", False)), "rstrip": bool(t.get("rstrip", False)),
            "single_word": bool(t.get("single_word", False))}


def _content(value) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def resolve_class(tc: dict, config: dict, directory: Path | None = None) -> str:
    """AutoTokenizer's class choice with use_fast=True (models/auto/tokenization_auto.py:1096-1189 in 4.57.6):
    tokenizer_config's ``tokenizer_class``, else AutoConfig (which refuses unknown model types,
    configuration_auto.py:1351-1384) and its ``tokenizer_class``, else the model type's fast class."""
    name = tc.get("tokenizer_class")
    if not (isinstance(name, str) and name):
        model_type = config.get("model_type")
        if model_type is None:  # configuration_auto.py:1373-1384: the longest type found in the path name
            where = str(directory or "")
            model_type = next((t for t in sorted(CONFIG_MODEL_TYPES, key=len, reverse=True) if t in where), None)
            if model_type is None:
                raise ConverterError(f"ValueError: Unrecognized model in {where}. Should have a `model_type` key "
                                     "in its config.json")
        elif model_type == "mistral" and "layer_types" in config:  # configuration_auto.py:1353-1357
            model_type = "ministral"
        if model_type not in CONFIG_MODEL_TYPES:
            raise ConverterError(f"ValueError: The checkpoint you are trying to load has model type `{model_type}` "
                                 "but Transformers does not recognize this architecture.")
        name = config.get("tokenizer_class")
        if not (isinstance(name, str) and name):
            if model_type in FAST_BY_MODEL_TYPE:
                return FAST_BY_MODEL_TYPE[model_type]
            if model_type in SLOW_ONLY_MODEL_TYPES:
                raise NotModelled(f"indexer does not model the slow tokenizer of model type {model_type}")
            raise ConverterError(f"ValueError: Unrecognized configuration class for model type {model_type!r} to "
                                 "build an AutoTokenizer.")
    if not name.endswith("Fast") and name + "Fast" in KNOWN_CLASSES:
        return name + "Fast"
    if name in KNOWN_CLASSES:
        if not name.endswith("Fast") and name != "PreTrainedTokenizerFast":
            raise NotModelled(f"indexer does not model the slow tokenizer class {name}")
        return name
    raise ConverterError(f"ValueError: Tokenizer class {name} does not exist or is not currently imported.")


def _read_merges_gpt2(path: Path) -> list[tuple]:
    # models/gpt2/tokenization_gpt2.py:159-161: the first line is skipped as a header, the last as empty.
    lines = path.read_text(encoding="utf-8").split("\n")[1:-1]
    return [tuple(line.split()) for line in lines]


def _read_merges_qwen2(path: Path) -> list[tuple]:
    # models/qwen2/tokenization_qwen2.py:178-185
    merges: list[tuple] = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        line = line.strip()
        if (i == 0 and line.startswith("#version:")) or not line:
            continue
        merges.append(tuple(line.split()))
    return merges


def _from_slow_files(directory: Path, cls: str, tc: dict, max_bytes: int):
    vocab_path, merges_path = directory / "vocab.json", directory / "merges.txt"
    if cls in SPM_BACKED:
        if not (directory / "tokenizer.model").is_file():
            # The slow class hands sentencepiece no model file.
            raise ConverterError("ValueError: Either model_file or model_proto must be specified.")
        raise NotModelled(f"indexer does not model transformers 4.57.6 converting {cls} from tokenizer.model")
    if cls == "PreTrainedTokenizerFast":  # no slow class: the tiktoken attempt reads vocab_file=None
        raise ConverterError("AttributeError: 'NoneType' object has no attribute 'endswith'")
    if cls == "GPTNeoXTokenizerFast":  # no slow class; vocab.json is no tiktoken file (convert_slow_tokenizer.py:1861)
        raise ConverterError("ValueError: Converting from SentencePiece and Tiktoken failed, if a converter for "
                             "SentencePiece is available, provide a model path with a SentencePiece tokenizer.model "
                             "file.")
    if cls not in ("GPT2TokenizerFast", "Qwen2TokenizerFast"):
        raise NotModelled(f"indexer does not model converting {cls}'s slow files to a fast tokenizer")
    if not (vocab_path.is_file() and merges_path.is_file()):  # the slow class opens vocab_file=None
        raise ConverterError("TypeError: expected str, bytes or os.PathLike object, not NoneType")
    check_size(merges_path, max_bytes)
    vocab = read_json(vocab_path, max_bytes)
    if cls == "Qwen2TokenizerFast":
        merges = _read_merges_qwen2(merges_path)
        tok = Tokenizer(BPE(vocab=vocab, merges=merges, dropout=None, unk_token=None, continuing_subword_prefix="",
                            end_of_word_suffix="", fuse_unk=False, byte_fallback=False))
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(
                r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""  # noqa: E501
            ), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=bool(tc.get("add_prefix_space", False)), use_regex=False),
        ])
        tok.decoder = decoders.ByteLevel()
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        return tok
    merges = _read_merges_gpt2(merges_path)
    tok = Tokenizer(BPE(vocab=vocab, merges=merges, dropout=None, continuing_subword_prefix="",
                        end_of_word_suffix="", fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=bool(tc.get("add_prefix_space", False)))
    tok.decoder = decoders.ByteLevel()
    bos = _content(tc.get("bos_token", "<|endoftext|>"))
    if tc.get("add_bos_token", False) and bos is not None and bos in vocab:  # convert_slow_tokenizer.py:354-363
        tok.post_processor = processors.TemplateProcessing(single=f"{bos}:0 $A:0", pair=f"{bos}:0 $A:0 $B:1",
                                                           special_tokens=[(bos, vocab[bos])])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def _bert_normalizer(backend, tc: dict) -> None:
    """BertTokenizerFast.__init__ rebuilds the normalizer from do_lower_case/strip_accents/tokenize_chinese_chars
    when they differ from tokenizer.json's (models/bert/tokenization_bert_fast.py:86-101 in 4.57.6)."""
    if backend.normalizer is None:
        return
    state = json.loads(backend.normalizer.__getstate__())
    wanted = {"lowercase": tc.get("do_lower_case", True), "strip_accents": tc.get("strip_accents"),
              "handle_chinese_chars": tc.get("tokenize_chinese_chars", True)}
    if any(state.get(k, v) != v for k, v in wanted.items()):
        kind = state.pop("type")
        backend.normalizer = getattr(normalizers, kind)(**{**state, **wanted})


def load_hf_tokenizer(directory: Path, config: dict, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> HFTokenizer:
    """AutoTokenizer.from_pretrained(directory) as transformers 4.57.6 builds it (see the module docstring)."""
    tc = read_optional_json(directory, "tokenizer_config.json", max_bytes) or {}
    try:
        cls = resolve_class(tc, config, directory)
    except ConverterError:
        if not (tc.get("auto_map") or config.get("auto_map")):
            raise
        # Only the repo's own code could load it; without trust_remote_code AutoTokenizer refuses
        # (dynamic_module_utils.py:735-771). The indexer never runs such code either.
        raise ConverterError(f"ValueError: The repository {directory} contains custom code which must be executed to "
                             "correctly load the model. Please pass the argument `trust_remote_code=True` to allow "
                             "custom code to be run.") from None
    tj_path = directory / "tokenizer.json"
    from_slow = bool(tc.get("from_slow")) or (cls in ("LlamaTokenizerFast", "CodeLlamaTokenizerFast")
                                              and tc.get("add_prefix_space") is not None)
    if tj_path.is_file() and not from_slow:
        check_size(tj_path, max_bytes)
        try:
            backend = Tokenizer.from_str(tj_path.read_text(encoding="utf-8"))
        except Exception as e:
            raise InputError("malformed", f"tokenizer.json: the tokenizers library cannot load it ({e})") from None
    elif from_slow and cls in SPM_BACKED and not (directory / "tokenizer.model").is_file():
        raise ConverterError("ValueError: Either model_file or model_proto must be specified.")
    else:
        backend = _from_slow_files(directory, cls, tc, max_bytes)
    backend.no_truncation()
    backend.no_padding()
    if cls == "BertTokenizerFast":
        _bert_normalizer(backend, tc)

    # Named special tokens: class defaults < tokenizer_config.json < special_tokens_map.json (legacy mode only).
    named: dict[str, str | None] = dict(CLASS_DEFAULTS.get(cls, {}))
    extra: list[str] = []
    for key in NAMED:
        if key in tc:
            named[key] = _content(tc[key])
    extra += [c for c in map(_content, tc.get("additional_special_tokens") or []) if c]
    declared: dict[int, dict] = {}  # id -> AddedToken fields
    decoder = tc.get("added_tokens_decoder")
    if isinstance(decoder, dict):
        for key, t in decoder.items():
            if isinstance(t, dict) and isinstance(t.get("content"), str):
                declared[int(key)] = _token_fields(t)
    else:
        stm = read_optional_json(directory, "special_tokens_map.json", max_bytes) or {}
        for key, value in stm.items():
            if key == "additional_special_tokens" and isinstance(value, list):
                extra += [c for c in map(_content, value) if c and c not in extra]
            elif key in NAMED:
                named[key] = _content(value)
        specials = {v for v in named.values() if v} | set(extra)
        atj = read_optional_json(directory, "added_tokens.json", max_bytes) or {}
        for content, i in atj.items():  # tokenization_utils_base.py:2316-2331
            if isinstance(i, int):
                special = content in specials
                declared[i] = {"content": content, "special": special, "normalized": not special}
        if tj_path.is_file():  # tokenization_utils_base.py:2335-2345
            for t in read_json(tj_path, max_bytes).get("added_tokens") or []:
                declared[t["id"]] = _token_fields(t)

    if cls == "CodeLlamaTokenizerFast":  # models/code_llama/tokenization_code_llama_fast.py:118-121
        for key, default in (("prefix_token", "▁<PRE>"), ("middle_token", "▁<MID>"), ("suffix_token", "▁<SUF>"),
                             ("eot_token", "▁<EOT>")):
            value = _content(tc[key]) if key in tc else default
            if value:
                extra.append(value)
    specials = {v for v in named.values() if v} | set(extra)
    to_add = [AddedToken(**{**f, "special": f["special"] or f["content"] in specials})
              for _, f in sorted(declared.items())]
    # all_special_tokens_extended order: bos, eos, unk, sep, pad, cls, mask, then the additional ones
    to_add += [AddedToken(c, special=True, normalized=False) for c in [*(named.get(k) for k in NAMED), *extra]
               if c and c not in {t.content for t in to_add}]
    if to_add:
        backend.add_tokens(to_add)

    if cls in POST_PROCESSOR_DEFAULTS:
        add_bos_default, add_eos_default = POST_PROCESSOR_DEFAULTS[cls]
        add_bos = tc.get("add_bos_token", add_bos_default)
        add_eos = tc.get("add_eos_token", add_eos_default)
        bos, eos = named.get("bos_token"), named.get("eos_token")
        for on, what, token in ((add_bos, "bos", bos), (add_eos, "eos", eos)):
            if on and token is None:  # e.g. models/gpt_neox/tokenization_gpt_neox_fast.py:149-155
                raise ConverterError(f"ValueError: add_{what}_token = True but {what}_token = None")
        single = ([f"{bos}:0"] if add_bos and bos else []) + ["$A:0"] + ([f"{eos}:0"] if add_eos and eos else [])
        pair = single + [s.replace("$A:0", "$B:1").replace(":0", ":1") for s in single]
        template_tokens = [(t, backend.token_to_id(t)) for t, on in ((bos, add_bos), (eos, add_eos))
                           if on and t is not None and backend.token_to_id(t) is not None]
        backend.post_processor = processors.TemplateProcessing(
            single=" ".join(single), pair=" ".join(pair), special_tokens=template_tokens
        )

    vocab = backend.get_vocab(with_added_tokens=True)
    decoder_now = backend.get_added_tokens_decoder()
    added = {t.content: i for i, t in sorted(decoder_now.items())}  # get_added_vocab(), id order
    special_ids = {vocab[c] for c in specials if c in vocab}
    return HFTokenizer(
        backend=backend,
        cls=cls,
        vocab=vocab,
        base_size=backend.get_vocab_size(with_added_tokens=False),
        added=added,
        added_special={i: bool(t.special) for i, t in decoder_now.items()},
        added_normalized={i: bool(t.normalized) for i, t in decoder_now.items()},
        all_special_ids=special_ids,
        clean_up_tokenization_spaces=bool(tc.get("clean_up_tokenization_spaces", False)),
    )
