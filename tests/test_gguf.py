"""Each rule of indexer.gguf.predict on small real tokenizers built here (no ../shared needed)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import sentencepiece as spm
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

from indexer.engines.llamacpp import speculative_compatible
from indexer.files import InputError
from indexer.gguf import prehash as gguf_prehash
from indexer.gguf.hf import load_hf_tokenizer
from indexer.gguf.predict import GGUFVocab, is_not_modelled, load_vocab, predict_gguf
from indexer.gguf.vocabpaths import pre_tokenizer_hash
from indexer.gguf.written import Written

LINES = [f"the quick brown fox jumps over the lazy dog {i}" for i in range(200)]


def write(path: Path, name: str, data) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / name).write_text(json.dumps(data))


def sentencepiece_dir(path: Path, *, vocab_size: int | None, config: dict | None = None, **files) -> Path:
    """A directory with a real tokenizer.model (40 pieces: <unk> <s> </s> first) and config.json."""
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(LINES), model_writer=model, vocab_size=40,
                                   model_type="bpe", minloglevel=2)
    path.mkdir(parents=True, exist_ok=True)
    (path / "tokenizer.model").write_bytes(model.getvalue())
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 2}
    if vocab_size is not None:
        cfg["vocab_size"] = vocab_size
    write(path, "config.json", {**cfg, **(config or {})})
    for name, data in files.items():
        write(path, name.replace("__", "."), data)
    return path


def bpe_dir(path: Path, *, vocab_size: int | None = None, byte_fallback: bool = False, added: tuple = (),
            config: dict | None = None, tokenizer_config: dict | None = None, post_processor=None) -> Path:
    """A byte-level BPE tokenizer.json (or a Llama-style byte-fallback one) and config.json."""
    words = ["<unk>", "<s>", "</s>"] + [f"Ġw{i}" for i in range(39)] + [chr(c) for c in range(97, 123)] + ["ab"]
    tok = Tokenizer(models.BPE(vocab={w: i for i, w in enumerate(words)}, merges=[("a", "b")], unk_token="<unk>",
                               byte_fallback=byte_fallback))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.Sequence([decoders.ByteFallback()]) if byte_fallback else decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True) for t in ("<unk>", "<s>", "</s>")])
    tok.add_tokens([AddedToken(t, special=True) for t in added])
    if post_processor is not None:
        tok.post_processor = post_processor
    path.mkdir(parents=True, exist_ok=True)
    tok.save(str(path / "tokenizer.json"))
    write(path, "tokenizer_config.json", {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>",
                                          "eos_token": "</s>", "unk_token": "<unk>", **(tokenizer_config or {})})
    size = vocab_size if vocab_size is not None else tok.get_vocab_size(with_added_tokens=True)
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 2, "vocab_size": size}
    write(path, "config.json", {**cfg, **(config or {})})
    return path


def known_hash(monkeypatch, directory: Path, pre: str = "gpt-2") -> None:
    """Register the toy tokenizer's chkhsh, as convert_hf_to_gguf_update.py would for a new model."""
    config = json.loads((directory / "config.json").read_text())
    monkeypatch.setitem(gguf_prehash.PRE_BY_HASH, pre_tokenizer_hash(load_hf_tokenizer(directory, config)), pre)


def vocab(**kw) -> GGUFVocab:
    base = dict(converted=True, error=None, vocab_type="spm", n_vocab=10, add_bos=True, add_eos=False, bos=1, eos=2,
                pre="default", tokens=tuple(f"t{i}" for i in range(10)))
    base.update(kw)
    if "tokens" not in kw and base["n_vocab"] != 10:
        base["tokens"] = tuple(f"t{i}" for i in range(base["n_vocab"]))
    return GGUFVocab(**base)


# ---------------------------------------------------------------- the SentencePiece path (base.py:2081-2181)

def test_sentencepiece_pads_to_the_hparams_vocab_size(tmp_path):
    v = predict_gguf(sentencepiece_dir(tmp_path, vocab_size=43))
    assert (v.converted, v.vocab_type, v.n_vocab, v.pre) == (True, "spm", 43, "default")
    assert v.tokens[:3] == ("<unk>", "<s>", "</s>") and v.tokens[40:] == ("[PAD40]", "[PAD41]", "[PAD42]")
    # libllama's SPM defaults: add_bos on, add_eos off, bos 1, eos 2 (llama-vocab.cpp:1971-1980, 2430-2435)
    assert (v.add_bos, v.add_eos, v.bos, v.eos) == (True, False, 1, 2)


def test_sentencepiece_drops_ids_at_or_above_vocab_size(tmp_path):
    d = sentencepiece_dir(tmp_path, vocab_size=30, added_tokens__json={"<extra>": 35, "<kept>": 29},
                          tokenizer_config__json={"added_tokens_decoder": {
                              "31": {"content": "<x>", "special": True}, "28": {"content": "a▁b"}}})
    v = predict_gguf(d)
    assert v.n_vocab == 30 and "<extra>" not in v.tokens and "<x>" not in v.tokens
    assert v.tokens[29] == "<kept>"
    assert v.tokens[28] == "a b"  # a non-special added token is pre-normalized (base.py:2158)


def test_sentencepiece_without_vocab_size_uses_the_model(tmp_path):
    d = sentencepiece_dir(tmp_path, vocab_size=None, config={"model_type": "unknown-type"})
    assert predict_gguf(d).n_vocab == 40


def test_special_vocab_ids_from_config_and_add_flags_from_tokenizer_config(tmp_path):
    d = sentencepiece_dir(tmp_path, vocab_size=40, config={"bos_token_id": 3, "eos_token_id": 39},
                          tokenizer_config__json={"add_bos_token": False, "add_eos_token": True})
    v = predict_gguf(d)
    assert (v.bos, v.eos, v.add_bos, v.add_eos) == (3, 39, False, True)


def test_special_ids_out_of_range_are_skipped(tmp_path):
    d = sentencepiece_dir(tmp_path, vocab_size=40, config={"bos_token_id": 3, "eos_token_id": 40})
    v = predict_gguf(d)
    assert (v.bos, v.eos) == (3, 2)  # vocab.py:155-159 skips 40; libllama keeps its default 2


# ---------------------------------------------------------------- the Llama-HF path (vocab.py:555-676)

def test_byte_fallback_bpe_is_spm_sized_by_its_tokens_not_by_hparams(tmp_path):
    d = bpe_dir(tmp_path, vocab_size=200, byte_fallback=True, added=("<pad>",))
    v = predict_gguf(d)
    assert (v.converted, v.vocab_type, v.pre) == (True, "spm", "default")
    assert v.n_vocab == 70 and v.tokens[-1] == "<pad>"  # 69 base + 1 added, no [PAD] up to 200


def test_add_prefix_space_without_tokenizer_model_fails_as_under_transformers_4_57(tmp_path):
    d = bpe_dir(tmp_path, byte_fallback=True,
                tokenizer_config={"tokenizer_class": "LlamaTokenizer", "add_prefix_space": True})
    v = predict_gguf(d)
    assert not v.converted and v.error == "ValueError: Either model_file or model_proto must be specified."


# ---------------------------------------------------------------- the byte-level BPE path (base.py:1581-1972)

def test_unknown_pre_tokenizer_hash_is_refused_in_the_converters_words(tmp_path):
    v = predict_gguf(bpe_dir(tmp_path))
    assert not v.converted
    assert v.error == "NotImplementedError: BPE pre-tokenizer was not recognized - update get_vocab_base_pre()"


def test_added_token_beyond_vocab_size_fails_the_assert_first(tmp_path):
    d = bpe_dir(tmp_path, vocab_size=69, added=("<extra>",))
    v = predict_gguf(d)
    assert v.error == "AssertionError (assert max(tokenizer.vocab.values()) < vocab_size)"


def test_bpe_pads_to_vocab_size_and_uses_libllama_bpe_defaults(tmp_path, monkeypatch):
    d = bpe_dir(tmp_path, vocab_size=75)
    known_hash(monkeypatch, d)
    v = predict_gguf(d)
    assert (v.converted, v.vocab_type, v.pre, v.n_vocab) == (True, "bpe", "gpt-2", 75)
    assert v.tokens[69:] == tuple(f"[PAD{i}]" for i in range(69, 75))
    # no add_* in the files: BPE defaults off; ids from tokenizer_config via tokenizer.json's added_tokens
    assert (v.add_bos, v.add_eos, v.bos, v.eos) == (False, False, 1, 2)


def test_bpe_default_bos_eos_is_11_when_nothing_names_them(tmp_path, monkeypatch):
    d = bpe_dir(tmp_path, tokenizer_config={"bos_token": None, "eos_token": None})
    known_hash(monkeypatch, d)
    v = predict_gguf(d)
    assert (v.bos, v.eos) == (11, 11)  # llama-vocab.cpp:2030-2031


def test_template_processing_turns_add_bos_on(tmp_path, monkeypatch):
    post = processors.TemplateProcessing(single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", 1)])
    d = bpe_dir(tmp_path, post_processor=post)
    known_hash(monkeypatch, d)
    assert predict_gguf(d).add_bos is True  # vocab.py:245-257


def test_llama3_pre_tokenizer_turns_add_bos_on_in_libllama(tmp_path, monkeypatch):
    d = bpe_dir(tmp_path, tokenizer_config={"bos_token": None})
    known_hash(monkeypatch, d, pre="llama-bpe")
    assert predict_gguf(d).add_bos is True  # llama-vocab.cpp:2175-2185


def test_bpe_without_merges_does_not_load(tmp_path, monkeypatch):
    d = bpe_dir(tmp_path)
    tj = json.loads((d / "tokenizer.json").read_text())
    tj["model"]["merges"] = []
    write(d, "tokenizer.json", tj)
    known_hash(monkeypatch, d)
    assert predict_gguf(bpe_dir(tmp_path / "with-merges")).converted  # same hash, merges present
    v = predict_gguf(d)  # no merges anywhere: libllama refuses the GGUF (llama-vocab.cpp:2000-2004)
    assert not v.converted and "cannot find tokenizer merges" in v.error


# ---------------------------------------------------------------- refusals before any vocabulary

def test_unsupported_architecture(tmp_path):
    d = sentencepiece_dir(tmp_path, vocab_size=40, config={"architectures": ["NoSuchForCausalLM"]})
    assert predict_gguf(d).error == "Model NoSuchForCausalLM is not supported"


def test_an_architecture_mapped_to_a_module_that_registers_no_text_model_fails(tmp_path):
    """TEXT_MODEL_MAP sends GraniteSpeech to conversion/granite.py, which registers only its MmprojModel under that
    name: get_model_class raises KeyError (conversion/__init__.py:399), not the "not supported" exit."""
    d = sentencepiece_dir(tmp_path, vocab_size=40, config={"architectures": ["GraniteSpeechForConditionalGeneration"],
                                                           "num_hidden_layers": 2})
    v = predict_gguf(d)
    assert not v.converted and v.error == "KeyError: 'GraniteSpeechForConditionalGeneration'"


def test_supported_but_unmodelled_architecture_says_so(tmp_path):
    d = sentencepiece_dir(tmp_path, vocab_size=40, config={"architectures": ["Rwkv7ForCausalLM"]})
    v = predict_gguf(d)
    assert not v.converted and v.error.startswith("not modelled:") and is_not_modelled(v)
    assert not is_not_modelled(predict_gguf(bpe_dir(tmp_path / "bpe")))  # a real refusal


def test_missing_layer_count_is_the_converters_key_error(tmp_path):
    d = sentencepiece_dir(tmp_path, vocab_size=40)
    cfg = json.loads((d / "config.json").read_text())
    del cfg["num_hidden_layers"]
    write(d, "config.json", cfg)
    assert predict_gguf(d).error.startswith("KeyError: 'could not find any of:")


def test_bad_input_is_an_input_error(tmp_path):
    with pytest.raises(InputError):
        predict_gguf(tmp_path / "absent")
    d = sentencepiece_dir(tmp_path / "m", vocab_size=40)
    (d / "config.json").write_text("{not json")
    with pytest.raises(InputError):
        predict_gguf(d)


def test_file_size_cap(tmp_path):
    d = sentencepiece_dir(tmp_path, vocab_size=40)
    with pytest.raises(InputError) as e:
        predict_gguf(d, max_file_bytes=100)
    assert e.value.status == "too_large"


# ---------------------------------------------------------------- libllama's load (llama-vocab.cpp)

def test_empty_text_becomes_empty_marker_and_duplicates_abort():
    v = load_vocab(Written(model="llama", pre="default", tokens=["a", "", "b"]))
    assert v.tokens == ("a", "[EMPTY_1]", "b")
    dup = load_vocab(Written(model="llama", pre="default", tokens=["a", "b", "a"]))
    assert not dup.converted and "GGML_ASSERT" in dup.error
    # a written text ends at a NUL for libllama (C string, ggml/src/gguf.cpp:1096-1099; checked on libllama 0.3.36)
    nul = load_vocab(Written(model="llama", pre="default", tokens=["a", "\0x", "b\0c"]))
    assert nul.tokens == ("a", "[EMPTY_1]", "b")
    assert not load_vocab(Written(model="llama", pre="default", tokens=["a", "a\0c"])).converted


def test_default_special_ids_out_of_range_are_disabled():
    v = load_vocab(Written(model="llama", pre="default", tokens=["a", "b"]))
    assert (v.bos, v.eos) == (1, -1)


def test_unknown_pre_is_a_load_error():
    v = load_vocab(Written(model="gpt2", pre="nonesuch", tokens=["a"], has_merges=True))
    assert not v.converted and "unknown pre-tokenizer type: 'nonesuch'" in v.error


# ---------------------------------------------------------------- common_speculative_are_compatible

def test_identical_vocabularies_are_compatible():
    ok, reasons = speculative_compatible(vocab(), vocab())
    assert ok and "0c1e57098" in reasons[0]


def test_vocab_type_must_match():
    ok, reasons = speculative_compatible(vocab(), vocab(vocab_type="bpe"))
    assert not ok and reasons[0].startswith("vocab_type spm != bpe")


def test_bos_compared_only_when_added():
    assert speculative_compatible(vocab(add_bos=False, bos=1), vocab(add_bos=False, bos=7))[0]
    ok, reasons = speculative_compatible(vocab(bos=1), vocab(bos=7))
    assert not ok and reasons[0].startswith("bos: add 1-1, id 1-7")
    assert not speculative_compatible(vocab(add_bos=True), vocab(add_bos=False))[0]


def test_eos_compared_only_when_added():
    assert speculative_compatible(vocab(eos=2), vocab(eos=9))[0]  # a base draft for an instruct target
    assert not speculative_compatible(vocab(add_eos=True, eos=2), vocab(add_eos=True, eos=9))[0]
    assert not speculative_compatible(vocab(add_eos=True), vocab(add_eos=False))[0]


def test_size_window_is_128():
    small = vocab(n_vocab=10)
    assert speculative_compatible(vocab(n_vocab=138), small)[0]
    ok, reasons = speculative_compatible(small, vocab(n_vocab=139))
    assert not ok and reasons[0].startswith("n_vocab 10 vs 139: difference 129 > 128")


def test_first_five_ids_are_not_compared_but_the_sixth_is():
    other = tuple(["x0", "x1", "x2", "x3", "x4"] + [f"t{i}" for i in range(5, 10)])
    assert speculative_compatible(vocab(), vocab(tokens=other))[0]
    changed = tuple(f"t{i}" if i != 5 else "y" for i in range(10))
    ok, reasons = speculative_compatible(vocab(), vocab(tokens=changed))
    assert not ok and reasons[0].startswith("token 5 text differs: 't5' vs 'y'")


def test_text_compared_as_c_strings():
    a = tuple(f"t{i}" if i != 6 else "ab\0c" for i in range(10))
    b = tuple(f"t{i}" if i != 6 else "ab\0d" for i in range(10))
    assert speculative_compatible(vocab(tokens=a), vocab(tokens=b))[0]  # strcmp stops at NUL


def test_a_side_that_did_not_convert():
    bad = GGUFVocab.from_dict({"converted": False, "error": "Model X is not supported"})
    ok, reasons = speculative_compatible(vocab(), bad)
    assert not ok and reasons[0].startswith("cannot be converted to GGUF: the draft: Model X is not supported")


def test_to_dict_carries_tokens_sha256_not_tokens():
    v = vocab()
    d = v.to_dict()
    assert "tokens" not in d and d["tokens_sha256"] == v.tokens_sha256()
    import hashlib

    assert d["tokens_sha256"] == hashlib.sha256(b"".join(t.encode() + b"\0" for t in v.tokens)).hexdigest()


def test_a_tokenizer_class_transformers_4_57_lacks_is_the_converters_error(tmp_path):
    d = bpe_dir(tmp_path, tokenizer_config={"tokenizer_class": "TokenizersBackend"})  # a transformers 5 name
    v = predict_gguf(d)
    assert v.error == "ValueError: Tokenizer class TokenizersBackend does not exist or is not currently imported."


def test_model_type_picks_the_fast_class_and_its_post_processor(tmp_path, monkeypatch):
    """GPTNeoXTokenizerFast rebuilds the post-processor from add_bos_token (default off)."""
    post = processors.TemplateProcessing(single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", 1)])
    d = bpe_dir(tmp_path, post_processor=post, config={"model_type": "gpt_neox"},
                tokenizer_config={"tokenizer_class": None})
    tok = load_hf_tokenizer(d, json.loads((d / "config.json").read_text()))
    assert tok.cls == "GPTNeoXTokenizerFast" and tok.encode("ab") == [68]
    d2 = bpe_dir(tmp_path / "llama", post_processor=post, tokenizer_config={"tokenizer_class": "LlamaTokenizer"})
    assert load_hf_tokenizer(d2, {"model_type": "llama"}).encode("ab") == [1, 68]


# ---------------------------------------------------------------- WordPiece (bert.py:40-67) and Unigram (t5.py:27-119)

def wordpiece_dir(path: Path) -> Path:
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "fox", "##es", "a"]
    tok = Tokenizer(models.WordPiece(vocab={w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
                                                       special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok.add_special_tokens([AddedToken(t, special=True) for t in words[:5]])
    path.mkdir(parents=True, exist_ok=True)
    tok.save(str(path / "tokenizer.json"))
    write(path, "tokenizer_config.json", {"tokenizer_class": "BertTokenizer"})
    write(path, "config.json", {"architectures": ["BertModel"], "model_type": "bert", "num_hidden_layers": 2,
                                "vocab_size": 12})
    return path


def test_wordpiece_is_wpm_in_phantom_space_form(tmp_path, monkeypatch):
    d = wordpiece_dir(tmp_path)
    assert predict_gguf(d).error.startswith("NotImplementedError: BPE pre-tokenizer")  # the hash is checked too
    known_hash(monkeypatch, d, pre="jina-v1-en")
    v = predict_gguf(d)
    assert (v.converted, v.vocab_type, v.n_vocab) == (True, "wpm", 12)
    assert v.tokens[:9] == ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "▁the", "▁fox", "es", "▁a")
    assert v.tokens[9:] == ("▁[PAD9]", "▁[PAD10]", "▁[PAD11]")
    # TemplateProcessing [CLS] $A [SEP]: BOS := [CLS] and EOS := [SEP], both added (vocab.py:245-280)
    assert (v.add_bos, v.bos, v.add_eos, v.eos) == (True, 2, True, 3)


def test_unigram_sentencepiece_is_ugm_with_t5_defaults(tmp_path):
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(LINES), model_writer=model, vocab_size=40,
                                   model_type="unigram", minloglevel=2)
    (tmp_path / "spiece.model").write_bytes(model.getvalue())
    write(tmp_path, "config.json", {"architectures": ["T5ForConditionalGeneration"], "model_type": "t5",
                                    "num_layers": 2, "vocab_size": 42})
    v = predict_gguf(tmp_path)
    assert (v.converted, v.vocab_type, v.n_vocab, v.tokens[-1]) == (True, "ugm", 42, "[PAD41]")
    assert (v.add_bos, v.add_eos, v.bos, v.eos) == (False, True, -1, 1)  # llama-vocab.cpp:2036-2046, 2443-2446
    write(tmp_path, "config.json", {"architectures": ["T5ForConditionalGeneration"], "num_layers": 2,
                                    "vocab_size": 30})
    assert predict_gguf(tmp_path).error == "IndexError: list assignment index out of range"  # t5.py has no range check


def test_unnormalized_added_token_is_decoded_back_with_transformers_clean_up(tmp_path, monkeypatch):
    d = bpe_dir(tmp_path, vocab_size=80, tokenizer_config={"clean_up_tokenization_spaces": True})
    tj = json.loads((d / "tokenizer.json").read_text())
    tj["added_tokens"].append({"id": 69, "content": "x ,y", "single_word": False, "lstrip": False, "rstrip": False,
                               "normalized": False, "special": False})
    write(d, "tokenizer.json", tj)
    known_hash(monkeypatch, d)
    v = predict_gguf(d)
    assert v.tokens[69] == "x,y"  # decode(encode(t)) then clean_up_tokenization (base.py:1600-1606)


def test_deepseek_v2_retries_and_names_an_unsupported_pre_tokenizer(tmp_path, monkeypatch):
    cfg = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3"}
    d = bpe_dir(tmp_path, config=cfg)
    assert predict_gguf(d).error.startswith("NotImplementedError: BPE pre-tokenizer was not recognized")
    d = bpe_dir(tmp_path / "big", vocab_size=69, added=("<extra>",), config=cfg)  # the gpt2 attempt asserts
    known_hash(monkeypatch, d)
    assert predict_gguf(d).error == "NotImplementedError: Deepseek pre-tokenizer 'gpt-2' is not supported yet!"


def test_mpt_falls_back_to_sentencepiece_with_its_own_special_ids(tmp_path):
    d = sentencepiece_dir(tmp_path, vocab_size=40, config={"architectures": ["MPTForCausalLM"], "model_type": "mpt",
                                                           "n_layers": 2})
    v = predict_gguf(d)
    assert (v.converted, v.vocab_type, v.add_bos, v.eos) == (True, "spm", False, 1)  # mpt.py:19-24


def test_architecture_table_is_consistent():
    from indexer.engines import tables
    from indexer.gguf import LLAMACPP_COMMIT
    from indexer.gguf.archs import MAPPED_UNREGISTERED, SUPPORTED, VOCAB_PATH
    from indexer.gguf.vocabpaths import PATHS

    # the converter's registry, extracted at the pinned commit: TEXT_MODEL_MAP's 269 names, 267 with a text class
    mapped = tables.values("llamacpp", LLAMACPP_COMMIT, "text_model_map")
    assert SUPPORTED | MAPPED_UNREGISTERED == set(mapped) and not SUPPORTED & MAPPED_UNREGISTERED
    assert len(mapped) == 269 and len(SUPPORTED) == 267
    registered = tables.values("llamacpp", LLAMACPP_COMMIT, "converter_architectures")
    assert registered["LlamaForCausalLM"].startswith("conversion/llama.py:")
    assert set(VOCAB_PATH) <= SUPPORTED
    assert {kind for kind, _ in VOCAB_PATH.values()} <= set(PATHS)
    assert all(ref.startswith("conversion/") for _, ref in VOCAB_PATH.values())


def test_without_tokenizer_class_an_unknown_model_type_stops_autotokenizer(tmp_path):
    d = bpe_dir(tmp_path, config={"model_type": "brand_new_lm"}, tokenizer_config={"tokenizer_class": None})
    v = predict_gguf(d)  # transformers 4.57.6's AutoConfig does not know the type (configuration_auto.py:1359-1370)
    assert v.error.startswith("ValueError: The checkpoint you are trying to load has model type `brand_new_lm`")


def test_remote_tokenizer_code_is_never_run(tmp_path):
    d = bpe_dir(tmp_path, tokenizer_config={"tokenizer_class": "MyTokenizer",
                                            "auto_map": {"AutoTokenizer": ["tok.MyTokenizer", None]}})
    assert "trust_remote_code=True" in predict_gguf(d).error
    d = bpe_dir(tmp_path / "local", tokenizer_config={"auto_map": {"AutoTokenizer": ["tok.X", None]}})
    assert predict_gguf(d).error.startswith("NotImplementedError: BPE pre-tokenizer")  # the local class is used


def test_mistral3_takes_the_llama_path(tmp_path):
    cfg = {"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
           "text_config": {"model_type": "mistral", "num_hidden_layers": 2, "vocab_size": 43}}
    v = predict_gguf(sentencepiece_dir(tmp_path, vocab_size=None, config=cfg))
    assert (v.converted, v.vocab_type, v.n_vocab) == (True, "spm", 43)  # vocab_size from the merged text_config


def slow_gpt2_dir(path: Path, merges: str, tokenizer_config: dict | None = None) -> Path:
    vocab = {c: i for i, c in enumerate(["<|endoftext|>", "a", "b", "c", "ab", "bc"])}
    write(path, "vocab.json", vocab)
    (path / "merges.txt").write_text(merges)
    write(path, "config.json", {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_layer": 2})
    if tokenizer_config is not None:
        write(path, "tokenizer_config.json", tokenizer_config)
    return path


def test_vocab_json_and_merges_are_converted_as_gpt2converter_does(tmp_path):
    load = lambda d: load_hf_tokenizer(d, json.loads((d / "config.json").read_text()))  # noqa: E731
    with_header = load(slow_gpt2_dir(tmp_path / "h", "#version: 0.2\na b\nb c\n"))
    assert with_header.cls == "GPT2TokenizerFast" and with_header.encode("ab") == [4]
    # tokenization_gpt2.py:160 always drops the first line: without a header, the first merge is lost
    assert load(slow_gpt2_dir(tmp_path / "n", "a b\nb c\n")).encode("ab") == [1, 2]
    bos = load(slow_gpt2_dir(tmp_path / "b", "#version: 0.2\na b\n", {"add_bos_token": True}))
    assert bos.encode("ab") == [0, 4]  # convert_slow_tokenizer.py:354-363


def test_a_class_without_a_slow_tokenizer_cannot_read_vocab_json(tmp_path):
    d = slow_gpt2_dir(tmp_path, "#version: 0.2\na b\n", {"tokenizer_class": "PreTrainedTokenizerFast"})
    assert predict_gguf(d).error == "AttributeError: 'NoneType' object has no attribute 'endswith'"


def test_a_token_the_writer_cannot_encode_fails_the_conversion(tmp_path):
    d = sentencepiece_dir(tmp_path, vocab_size=41, added_tokens__json={"\ud800": 40})
    v = predict_gguf(d)
    assert v.error.startswith("UnicodeEncodeError: 'utf-8' codec can't encode character '\\ud800'")


def test_internlm2_appends_added_tokens_and_takes_im_end_as_eos(tmp_path):
    cfg = {"architectures": ["InternLM2ForCausalLM"], "model_type": "internlm2", "bos_token_id": 1,
           "eos_token_id": 2}
    d = sentencepiece_dir(tmp_path, vocab_size=40, config=cfg, added_tokens__json={"<|im_start|>": 40,
                                                                                    "<|im_end|>": 41},
                          tokenizer_config__json={"added_tokens_decoder": {
                              "41": {"content": "<|im_end|>", "special": True}}})
    v = predict_gguf(d)
    assert (v.converted, v.n_vocab, v.tokens[40:], v.eos) == (True, 42, ("<|im_start|>", "<|im_end|>"), 41)
    cfg["vocab_size"] = 45  # past the SentencePiece model: sentencepiece raises
    write(d, "config.json", {**cfg, "num_hidden_layers": 2})
    assert predict_gguf(d).error.startswith("IndexError")
