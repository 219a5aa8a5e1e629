"""Local .gguf files in `fingerprint`, `check` and `query --target`: verdicts from the file's own facts."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from crawlkit import crawled_catalog, set_meta
from ggufkit import bpe_tokens, write_gguf, write_vocab_gguf
from test_engines import make_spm

from indexer.answer.query import run_query
from indexer.answer.rule_inputs import side_from_catalog
from indexer.cli import cli

B = 10**9
EXTRA = tuple(f"<extra_{i}>" for i in range(20))


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    root = tmp_path_factory.mktemp("gguf-local")
    hub = root / "hub"
    for repo_id, kw, params in (("spm/Big-7B", {}, 7 * B), ("spm/Small-0.5B", {}, B // 2),
                                ("spm/Chat-0.4B", {"added": EXTRA}, B // 3)):
        make_spm(hub / repo_id, **kw)
        set_meta(hub, repo_id, params=params)
    db = crawled_catalog(root, hub)
    return db, root


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_fingerprint_reads_the_file(tmp_path):
    p = write_gguf(tmp_path / "Tiny-Q4_K_M.gguf", tokens=bpe_tokens(300), pre="llama-bpe", chat_template="{{x}}")
    res = run("fingerprint", p, "--json")
    assert res.exit_code == 0, res.output
    facts = json.loads(res.stdout)
    assert facts["source"] == "read" and facts["n_vocab"] == 300 and facts["add_bos"] is True
    assert facts["quant"] == "Q4_K_M" and facts["has_chat_template"] is True
    assert run("fingerprint", tmp_path).exit_code == 0  # a directory holding one .gguf
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 20)
    res = run("fingerprint", bad)
    assert res.exit_code == 2 and "not a valid GGUF file" in res.output and "Traceback" not in res.output


def test_check_two_files_and_engines_that_load_no_gguf(tmp_path):
    t = write_gguf(tmp_path / "t.gguf", tokens=bpe_tokens(300))
    d = write_gguf(tmp_path / "d.gguf", tokens=bpe_tokens(300, {42: "renamed"}))
    res = run("check", t, d, "--engine", "llama.cpp", "--json")
    assert res.exit_code == 1
    out = json.loads(res.stdout)
    v = out["verdicts"]
    assert v["llama.cpp"]["outcome"] == "no_speculation" and "token 42 text differs" in v["llama.cpp"]["reasons"][0]
    assert v["lmstudio"]["outcome"] == "no_speculation" and "GGUF engine is llama.cpp" in v["lmstudio"]["reasons"][0]
    for name in ("sglang", "vllm", "transformers", "mlx"):
        assert v[name]["outcome"] == "refused" and v[name]["reasons"][0].startswith("not judged:")
    assert out["launch"]["llama.cpp"] == f"llama-server -m {t} -md {d} --spec-type draft-simple"
    # one renamed text of 300: re-converting the draft with the target's tokenizer files fixes both GGUF engines
    for name in ("llama.cpp", "lmstudio"):
        assert out["fixes"][name].startswith("re-convert the draft GGUF with the target's tokenizer files")
    assert all(out["fixes"][name] is None for name in ("sglang", "vllm", "transformers", "mlx"))
    text = run("check", t, d).output
    assert "no fix changes the outcome" not in text  # engines that load no GGUF said where to ask instead
    unrelated = write_gguf(tmp_path / "u.gguf", tokens=[f"u{i}" for i in range(300)])
    assert json.loads(run("check", t, unrelated, "--json").stdout)["fixes"]["llama.cpp"] is None
    same = run("check", t, write_gguf(tmp_path / "e.gguf", tokens=bpe_tokens(300)), "--engine", "llama.cpp",
               "--verbose")  # where the facts came from: a long reason, said under --verbose (and in --json)
    assert same.exit_code == 0 and "read from the header of" in same.output


def test_hf_directory_against_a_gguf_file_same_rule(catalog, tmp_path):
    db, root = catalog
    hf = root / "hub" / "spm" / "Big-7B"
    predicted = side_from_catalog("spm/Big-7B", db=db).gguf
    g = write_vocab_gguf(tmp_path / "Big-Q4_0.gguf", predicted)
    res = run("check", hf, g, "--engine", "llama.cpp", "--json")
    assert res.exit_code == 0, res.output
    reasons = json.loads(res.stdout)["verdicts"]["llama.cpp"]["reasons"]
    assert any("predicted, after conversion with convert_hf_to_gguf.py @" in r for r in reasons)
    assert any("read from" in r for r in reasons)
    off = write_vocab_gguf(tmp_path / "Big-noBOS-Q4_0.gguf", predicted, add_bos=False)
    res = run("check", hf, off, "--engine", "llama.cpp", "--json")
    assert json.loads(res.stdout)["verdicts"]["llama.cpp"]["reasons"][0].startswith("bos: add 1-0")
    lm = json.loads(run("check", hf, g, "--json").stdout)["verdicts"]["lmstudio"]
    assert lm["outcome"] == "refused" and "both must be GGUF" in lm["reasons"][0]


def test_query_target_gguf_answers_from_the_catalog(catalog, tmp_path):
    db, _ = catalog
    predicted = side_from_catalog("spm/Big-7B", db=db).gguf
    g = write_vocab_gguf(tmp_path / "Big-Q4_0.gguf", predicted)
    result = run_query(str(g), engine="llama.cpp", db=db)
    drafts = {d["repo_id"] for d in result["drafts"]}
    assert {"spm/Small-0.5B", "spm/Chat-0.4B"} <= drafts
    assert "read from the file" in result["target"]["note"]
    assert result["drafts"][0]["launch"].startswith("hf download spm/")
    assert f"-m {g} " in result["drafts"][0]["launch"]
    sg = run_query(str(g), engine="sglang", db=db)
    assert sg["drafts"] == [] and "not judged" in sg["refused"]
    other = write_vocab_gguf(tmp_path / "Other.gguf", predicted, rename={9: "zzz"})
    res = run("query", "--db", db, "--target", other, "--engine", "llama.cpp")
    assert res.exit_code == 3 and "no catalog repo has its GGUF vocabulary" in res.output
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00")
    res = run("query", "--db", db, "--target", bad)
    assert res.exit_code == 2 and res.output.count(str(bad)) == 1 and "not a valid GGUF file" in res.output, res.output
