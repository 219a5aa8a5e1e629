"""predict_gguf and speculative_compatible against ../shared/corpus/oracle-engines.json (real llama.cpp)."""

import json

import pytest
from conftest import CORPUS, MODELS

from indexer.engines.llamacpp import speculative_compatible
from indexer.gguf.predict import GGUFVocab, predict_gguf

ENGINES = CORPUS / "oracle-engines.json"
pytestmark = pytest.mark.skipif(not ENGINES.is_file(), reason="../shared/corpus is absent")
FACTS = ("n_vocab", "add_bos", "add_eos", "bos", "eos", "pre", "tokens_sha256")


@pytest.fixture(scope="module")
def engines() -> dict:
    return json.loads(ENGINES.read_text())


@pytest.fixture(scope="module")
def predicted(engines) -> dict[str, GGUFVocab]:
    return {name: predict_gguf(MODELS / name) for name in engines["models"]}


def test_every_directory_converts_or_refuses_as_the_converter_does(predicted, engines):
    refused = 0
    for name, want in ((n, m["gguf"]) for n, m in engines["models"].items()):
        got = predicted[name]
        assert got.converted == want["converted"], (name, got.error)
        if not want["converted"]:
            refused += 1
            assert got.error == want["error"], name
            continue
        assert got.vocab_type == want["vocab_type_name"], name
        for key in FACTS:
            assert got.to_dict()[key] == want[key], (name, key)
    assert refused == len(engines["load_errors"]["llama.cpp_convert"])


def test_every_ordered_pair_gets_llama_cpps_verdict(predicted, engines):
    accept = {tuple(p) for p in engines["pairs"]["llama.cpp"]["accept"]}
    reject = {tuple(p[:2]) for p in engines["pairs"]["llama.cpp"]["reject"]}
    agree = 0
    for target, draft in sorted(accept | reject):
        ok, reasons = speculative_compatible(predicted[target], predicted[draft])
        assert ok == ((target, draft) in accept), (target, draft, reasons)
        assert reasons and all("0c1e57098" in r for r in reasons[:1])
        agree += 1
    assert agree == 552 == len(accept) + len(reject)
    assert len(accept) == engines["pair_counts"]["llama.cpp"]["accept"] == 60


def test_dict_round_trip_keeps_the_rules_inputs(predicted):
    for name, v in predicted.items():
        back = GGUFVocab.from_dict(json.loads(json.dumps(v.to_dict())), tokens=v.tokens)
        assert back == v, name
        assert back.tokens_sha256() == v.tokens_sha256()


def test_pairs_the_size_rule_refuses_but_llama_cpp_accepts(predicted, engines):
    """llama.cpp_vs_same_tokenizer: accepted pairs whose sizes or mappings differ (window 128, dropped tokens)."""
    diff = engines["llama.cpp_vs_same_tokenizer"]
    assert len(diff["llama.cpp_accepts_only"]) == 28 and not diff["same_tokenizer_accepts_only"]
    for target, draft in diff["llama.cpp_accepts_only"]:
        ok, reasons = speculative_compatible(predicted[target], predicted[draft])
        assert ok, (target, draft, reasons)
