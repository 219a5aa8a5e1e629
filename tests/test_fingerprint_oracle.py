"""Fast path and reference against ../shared/corpus/oracle.json, for every directory and pair."""

import json

import pytest
from conftest import CORPUS, needs_corpus

from indexer.engines.rules import sglang
from indexer.vocab.fingerprint import fingerprint_dir

pytestmark = needs_corpus


@pytest.fixture(scope="module")
def fingerprints(corpus_dirs):
    return {d.name: (fingerprint_dir(d), fingerprint_dir(d, reference=True)) for d in corpus_dirs}


def test_every_directory_matches_oracle_on_both_paths(fingerprints, oracle):
    for name, (fast, ref) in fingerprints.items():
        want = oracle["models"][name]
        for fp in (fast, ref):
            assert fp.vocab_sha256 == want["vocab_sha256"], (name, fp.method)
            assert fp.vocab_len == want["len_vocab"], name
            assert fp.max_id == want["max_id"], name
            assert fp.id_holes == want["id_holes_below_max"], name
            assert fp.added_tokens == want["added_tokens"], (name, fp.method)
            for key in ("bos", "eos", "pad", "unk"):
                assert getattr(fp, f"{key}_token_id") == want[f"{key}_token_id"], (name, key, fp.method)


def test_fast_path_equals_reference_on_every_fact(fingerprints):
    for name, (fast, ref) in fingerprints.items():
        f, r = fast.to_dict(), ref.to_dict()
        for key in ("method", "fallback_reason"):
            f.pop(key), r.pop(key)
        assert f == r, name


def test_partition_by_fingerprint_equals_oracle_groups(fingerprints, oracle):
    ours: dict[str, set] = {}
    for name, (fast, _) in fingerprints.items():
        ours.setdefault(fast.vocab_sha256, set()).add(name)
    assert sorted(map(sorted, ours.values())) == sorted(map(sorted, oracle["vocab_groups"]))


def test_sglang_verdict_of_every_ordered_pair_equals_oracle(corpus_sides, oracle):
    sides = corpus_sides
    expected = {}
    agree = json.loads((CORPUS / "oracle-agreement.json").read_text())["pairs"]
    agreeing = {(p["target"], p["draft"]) for p in agree if p["cls"] in ("identical", "works")}
    for verdict, pairs in oracle["pairs"].items():
        for t, d in pairs:
            # Works: equal vocab_size and vocabularies that agree (identical, or in the agreement class).
            expected[(t, d)] = verdict == "compatible" or (verdict == "mapping_mismatch" and (t, d) in agreeing)
    assert len(expected) == len(sides) * (len(sides) - 1)
    for (t, d), want in expected.items():
        assert sglang(sides[t], sides[d]).compatible == want, (t, d)
        # The oracle's vocab_size is transformers' get_text_config(); SGLang's rule agrees on this corpus.
        assert sides[t].vocab_size_transformers == oracle["models"][t]["vocab_size"]
