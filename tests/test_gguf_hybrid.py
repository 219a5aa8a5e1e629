"""Issue 29 part 5: llama.cpp's converter paths for state-space, hybrid, Gemma 3n/4 and GLM architectures (Mamba,
Falcon-Mamba, Mamba-2, Granite 4.0-H, Bamba, Nemotron-H, Jamba, Gemma 3n, Gemma 4, GLM-4, GLM-4.5+), held to what
llama.cpp's own converter classes wrote for the same directories (tests/data/gguf_hybrid_oracle.json, made by
benchmarks/gguf_hybrid_real.py), and the ``unknown`` outcome for a path the indexer still does not model: it is
never counted as refused or works, in check, query and the summary."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from crawlkit import crawled_catalog, set_meta
from hybridkit import CASES, CORPUS, ORACLE, write_case

from indexer.answer.localdir import side_from_dir
from indexer.answer.query import run_query
from indexer.answer.render import render, render_check
from indexer.cli import cli
from indexer.engines import ENGINES, UNKNOWN, verdicts
from indexer.engines.archrules import SEVERITY, worst
from indexer.gguf.archs import SUPPORTED, VOCAB_PATH
from indexer.gguf.predict import is_not_modelled, predict_gguf

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="needs ../shared/corpus")
FIELDS = ("vocab_type", "n_vocab", "add_bos", "add_eos", "bos", "eos", "pre", "tokens_sha256")
NOT_MODELLED_CASES = {"mamba-vocab-json-only"}  # _set_vocab_builtin: llama.cpp's own gpt-neox vocabulary file


@pytest.fixture(scope="module")
def oracle():
    return json.loads(ORACLE.read_text())["cases"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_converter_path_writes_what_the_real_converter_writes(tmp_path, oracle, name):
    got = predict_gguf(write_case(tmp_path, name))
    want = oracle[name]
    if name in NOT_MODELLED_CASES:
        assert is_not_modelled(got), got.error
        assert want["converted"]  # the real converter did write it: unknown is the honest answer
        return
    assert got.converted == want["converted"], (got.error, want.get("error"))
    if not want["converted"]:
        real = want["error"]  # the converter's last line; a bare type when the assert has no message
        assert got.error == real if ": " in real else got.error.split(":")[0].split(" (")[0] == real, got.error
        return
    assert {k: getattr(got, k) if k != "tokens_sha256" else got.tokens_sha256() for k in FIELDS} == \
        {k: want[k] for k in FIELDS}


def test_the_hybrid_architectures_are_modelled():
    for arch in ("NemotronHForCausalLM", "MambaForCausalLM", "FalconMambaForCausalLM", "Mamba2ForCausalLM",
                 "GraniteMoeHybridForCausalLM", "BambaForCausalLM", "JambaForCausalLM",
                 "Gemma4ForConditionalGeneration", "Gemma4ForCausalLM", "Gemma3nForConditionalGeneration",
                 "Glm4MoeForCausalLM", "Glm4ForCausalLM"):
        assert arch in SUPPORTED and arch in VOCAB_PATH, arch


# ---------------------------------------------------------------- unknown: a path the indexer does not model

def _unmodelled(path, arch: str = "Rwkv7ForCausalLM"):
    """The GPT-NeoX tokenizer with an architecture the converter supports and the indexer does not model."""
    write_case(path.parent, "mamba-neox")
    (path.parent / "mamba-neox").rename(path)
    (path / "config.json").write_text(json.dumps({"architectures": [arch], "model_type": "rwkv7",
                                                  "num_hidden_layers": 2, "vocab_size": 50277}))
    assert arch in SUPPORTED and arch not in VOCAB_PATH
    return path


def test_unknown_is_not_a_refusal_and_not_works(tmp_path):
    target = side_from_dir(_unmodelled(tmp_path / "rwkv"))
    draft = side_from_dir(write_case(tmp_path, "mamba-neox"))
    v = verdicts(target, draft)["llama.cpp"]
    assert v.outcome == UNKNOWN and not v.accepted and not v.compatible
    assert "not a refusal" in v.reasons[0] and "Rwkv7ForCausalLM" in v.reasons[0]
    assert ENGINES["llama.cpp"].words[UNKNOWN]
    # a refusal by an architecture row still wins over unknown; every started outcome ranks below it
    assert worst(UNKNOWN, "refused") == "refused" and worst("wrong_output", UNKNOWN) == UNKNOWN
    assert SEVERITY.index(UNKNOWN) == len(SEVERITY) - 2


def test_check_says_unknown_and_offers_no_fix_for_it(tmp_path):
    t, d = _unmodelled(tmp_path / "rwkv"), write_case(tmp_path, "mamba-neox")
    r = CliRunner().invoke(cli, ["check", str(t), str(d), "--engine", "llama.cpp", "--json"])
    assert r.exit_code == 1, r.output  # not works
    out = json.loads(r.output)
    assert out["verdicts"]["llama.cpp"]["outcome"] == "unknown"
    assert not out["verdicts"]["llama.cpp"]["accepted"]
    from indexer.answer.query import check

    text = render_check(check(str(t), str(d)))
    assert "UNKNOWN        llama.cpp" in text
    stuck = [line for line in text.splitlines() if line.startswith("  no fix changes the outcome on")]
    assert all("llama.cpp" not in line for line in stuck)


def test_a_modelled_hybrid_pair_gets_the_engines_verdict(tmp_path):
    """Nemotron-H and Mamba targets with the same GPT-NeoX tokenizer: both convert to 50280 tokens."""
    v = verdicts(side_from_dir(write_case(tmp_path, "nemotron-h-neox")), side_from_dir(write_case(tmp_path,
                                                                                                 "mamba-neox")))
    assert v["llama.cpp"].outcome == "works", v["llama.cpp"].reasons


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    root = tmp_path_factory.mktemp("unknown-hub")
    hub = root / "hub"
    _unmodelled(hub / "blink" / "RWKV-7-3B")
    set_meta(hub, "blink/RWKV-7-3B", params=3 * 10**9)
    for repo_id, case, params in (("state/mamba-130m", "mamba-neox", 130 * 10**6),
                                  ("nv/Nemotron-H-8B", "nemotron-h-neox", 8 * 10**9)):
        (hub / repo_id).parent.mkdir(parents=True, exist_ok=True)
        write_case(hub / repo_id.split("/")[0], case).rename(hub / repo_id)
        set_meta(hub, repo_id, params=params)
    db = crawled_catalog(root, hub)
    return db


def test_query_says_unknown_not_no_drafts(catalog):
    res = run_query("blink/RWKV-7-3B", engine="llama.cpp", db=catalog)
    assert res["drafts"] == [] and res["refused"] is None
    assert "Rwkv7ForCausalLM" in res["unknown"] and "not a refusal" in res["unknown"]
    assert "llama.cpp" in res["summary"]["engines_unknown"]
    assert "llama.cpp" not in res["summary"]["engines_without_drafts"] + res["summary"]["engines_with_drafts"]
    text = render(res)
    assert "drafts unknown:" in text and "no drafts:" not in text and "unknown on llama.cpp" in text


def test_query_a_modelled_hybrid_target_finds_its_draft(catalog):
    res = run_query("nv/Nemotron-H-8B", engine="llama.cpp", db=catalog)
    assert [d["repo_id"] for d in res["drafts"]] == ["state/mamba-130m"] and res["unknown"] is None
