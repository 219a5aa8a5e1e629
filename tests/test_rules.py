"""Engine rules on tiny tokenizers built by the tests (runs without ../shared)."""

import json

import pytest
from tokfactory import BASE_WORDS, make_model

from indexer.answer.localdir import side_from_dir
from indexer.engines.rules import check_pair
from indexer.vocab.fingerprint import fingerprint_dir


def verdicts(tmp_path, target_kw, draft_kw):
    t = side_from_dir(make_model(tmp_path / "t", **target_kw))
    d = side_from_dir(make_model(tmp_path / "d", **draft_kw))
    return check_pair(t, d)


def ok(result, engine):
    return result["verdicts"][engine]["compatible"]


def test_identical_models_work_on_every_engine_that_converts_them(tmp_path):
    r = verdicts(tmp_path, {}, {})
    assert all(ok(r, e) for e in ("sglang", "vllm", "transformers", "mlx", "lmstudio"))
    # A tiny byte-level BPE has no known pre-tokenizer hash: convert_hf_to_gguf.py refuses it.
    assert r["verdicts"]["llama.cpp"]["outcome"] == "refused"
    assert r["fix"] is None
    assert r["tli"]["ratio"] == 1.0


def test_chat_tokens_added_same_size_works_with_the_tokens_named(tmp_path):
    # Target has chat tokens, config vocab_size padded equally on both sides: every id of text agrees.
    r = verdicts(tmp_path, {"added": ["<|im_start|>", "<|im_end|>"], "vocab_size": 128},
                 {"vocab_size": 128})
    for engine in ("sglang", "vllm", "transformers", "mlx", "lmstudio"):
        assert r["verdicts"][engine]["outcome"] == "works" and ok(r, engine), engine
        assert r["fixes"][engine] is None
    assert "2 tokens differ" in r["verdicts"]["sglang"]["reasons"][0]
    assert "output stays correct" in r["verdicts"]["transformers"]["reasons"][0]
    assert any("'<|im_start|>'" in w and "does not exist" in w for w in r["agreement"]["warnings"])
    assert r["agreement"]["only_target"] == 2 and r["agreement"]["text_agreement"] == 1.0
    assert r["details"]["added_only_in_target"] == ["<|im_start|>", "<|im_end|>"]
    assert r["details"]["first_differing_ids"][0]["id"] == len(BASE_WORDS)
    assert "copy the target's tokenizer files" not in json.dumps(r)


def test_added_tokens_reordered_is_a_mapping_mismatch_that_works(tmp_path):
    r = verdicts(tmp_path, {"added": ["<|im_start|>", "<|im_end|>"]}, {"added": ["<|im_end|>", "<|im_start|>"]})
    assert ok(r, "sglang") and r["agreement"]["ids_differ"] == 2 and not r["agreement"]["identical"]
    assert r["details"]["added_only_in_target"] == [] and r["details"]["added_only_in_draft"] == []
    diff = r["details"]["first_differing_ids"]
    assert [x["id"] for x in diff] == [len(BASE_WORDS), len(BASE_WORDS) + 1]


def test_padded_vocab_size_fails_sglang_and_vllm_not_mlx(tmp_path):
    r = verdicts(tmp_path, {"vocab_size": 256}, {})
    assert not ok(r, "sglang") and not ok(r, "vllm") and not ok(r, "transformers")
    assert ok(r, "mlx")
    assert r["fix"] == r["fixes"]["sglang"] and r["fix"].startswith("resize the draft's embedding and lm_head")
    assert "use_heterogeneous_vocab" not in r["fixes"]["sglang"]  # SGLang has no TLI
    assert "use_heterogeneous_vocab" not in r["fixes"]["vllm"] and "resize" in r["fixes"]["vllm"]  # vLLM 0.34
    old = check_pair(side_from_dir(tmp_path / "t"), side_from_dir(tmp_path / "d"), {"vllm": "0.33.0"})
    assert "use_heterogeneous_vocab" in old["fixes"]["vllm"] and "resize" in old["fixes"]["vllm"]
    assert "assistant_tokenizer" in r["fixes"]["transformers"]  # sizes differ: universal assisted generation
    assert r["fixes"]["mlx"] is None


def test_multimodal_text_config_vocab_size_is_used(tmp_path):
    r = verdicts(tmp_path, {"text_config": True}, {})
    assert ok(r, "sglang") and ok(r, "vllm")
    side = side_from_dir(tmp_path / "t")
    assert side.vocab_size == len(BASE_WORDS)


def test_sglang_rule_prefers_text_config_even_if_top_level_differs(tmp_path):
    path = make_model(tmp_path / "m", text_config=True)
    cfg = json.loads((path / "config.json").read_text())
    cfg["vocab_size"] = 999  # stale top-level value
    (path / "config.json").write_text(json.dumps(cfg))
    assert side_from_dir(path).vocab_size == len(BASE_WORDS)


def test_tli_intersection_normalizes_one_leading_marker(tmp_path):
    sp_words = ["<unk>", "<s>", "</s>"] + [f"▁w{i}" for i in range(60)] + [f"x{i}" for i in range(60)]
    r = verdicts(tmp_path, {}, {"words": sp_words})
    assert r["tli"]["intersection"] == 63  # 3 specials + 60 words equal after Ġ/▁ -> space
    assert r["tli"]["ratio"] == pytest.approx(63 / len(sp_words), abs=1e-4)
    assert not ok(r, "llama.cpp")


def test_llamacpp_needs_gguf_facts():
    from indexer.engines.rules import Side, llamacpp

    side = Side("x", 10, 10, {"vocab_sha256": "a"}, None, gguf_missing="not derived")
    v = llamacpp(side, side)
    assert not v.compatible and v.outcome == "refused" and "not derived" in v.reasons[0]


@pytest.mark.parametrize(
    "case",
    [
        {},
        {"added": ["<|im_start|>", "<|im_end|>"]},
        {"tokenizer_config": {"pad_token": "<pad>"}},  # special token not in vocab: transformers appends it
        {"tokenizer_config": {"tokenizer_class": "LlamaTokenizerFast"}},
        {"tokenizer_config": {"additional_special_tokens": ["<extra>"]}},
        {"special": ("<unk>", "<bos>", "<eos>")},  # class defaults absent from the vocabulary
    ],
)
def test_fast_path_matches_reference_or_falls_back(tmp_path, case):
    path = make_model(tmp_path / "m", **case)
    fast, ref = fingerprint_dir(path), fingerprint_dir(path, reference=True)
    assert fast.vocab_sha256 == ref.vocab_sha256
    assert fast.base_vocab_sha256 == ref.base_vocab_sha256
    assert fast.added_tokens == ref.added_tokens
    if "pad_token" in case.get("tokenizer_config", {}) or "additional_special_tokens" in case.get(
        "tokenizer_config", {}
    ):
        assert fast.method == "reference" and "not in the vocabulary" in fast.fallback_reason


def test_fast_canonical_serialization_equals_json_dumps_on_tricky_tokens():
    import random

    from indexer.vocab.canonical import _dense_canonical, _sorted_canonical

    every_ascii = [chr(c) for c in range(128)] + ["\u2028", "\ufeff", "é", "\U0001F600", "\ud800"]
    vocab = {t: i for i, t in enumerate(every_ascii)}
    assert _dense_canonical(list(vocab)) == _sorted_canonical(vocab)
    alphabet = ['a', '"', ',', ' ', '\\', '%', 'é', '\n', '\x01', 'Ġ', '/', '\x7f']
    rng = random.Random(1)
    for _ in range(5000):
        tokens = list({"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(8)})
        vocab = {t: i for i, t in enumerate(tokens)}
        assert _dense_canonical(list(vocab)) == _sorted_canonical(vocab), tokens


def test_vocab_size_left_to_the_config_class_default(tmp_path):
    path = make_model(tmp_path / "m")
    cfg = json.loads((path / "config.json").read_text())
    del cfg["vocab_size"]  # LlamaConfig's default is 32000
    (path / "config.json").write_text(json.dumps(cfg))
    side = side_from_dir(path)
    assert side.vocab_size == side.vocab_size_transformers == 32000


def test_text_config_without_vocab_size_uses_the_text_class_default(tmp_path):
    path = make_model(tmp_path / "m", text_config=True)
    cfg = json.loads((path / "config.json").read_text())
    del cfg["text_config"]["vocab_size"]
    cfg["vocab_size"] = 999  # a stale top-level value neither engine reads
    (path / "config.json").write_text(json.dumps(cfg))
    side = side_from_dir(path)
    assert side.vocab_size == side.vocab_size_transformers == 32000
