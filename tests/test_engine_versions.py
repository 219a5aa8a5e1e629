"""Issue 29: rules with release ranges, answering for a release (--engine-version), and the citation audit on
source trees the test writes (nothing is downloaded)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from tokfactory import make_model

from indexer.cli import cli
from indexer.engines import ENGINES, at, parse_versions, tables, versions_line
from indexer.engines.archrules import ArchRule, Ranged, TypeIn, at_release, holds, relined
from indexer.engines.audit import pieces
from indexer.engines.base import released
from indexer.errors import BadInput

# ---------------------------------------------------------------- selecting rows by release

RELEASES = ("1.0", "1.1", "2.0")
ROW = ArchRule("stateful", TypeIn("target", frozenset({"mamba"})), "refused", "raises", "src/a.py:10-12",
               anchors=("not supported",))


def toy(**fields):
    base = dict(name="toy", display="Toy", version="toy 2.0", sources={}, facts=(), rule=None, class_key=(),
                launch=None, sizes=None)
    return released(releases=RELEASES, **{**base, **fields})


def test_a_row_holds_from_since_until_the_release_it_stops_at():
    row = ArchRule("x", TypeIn("target", frozenset()), None, "", "", since="1.1", until="2.0")
    assert [holds(row, r, RELEASES) for r in RELEASES] == [False, True, False]
    assert [holds(ROW, r, RELEASES) for r in RELEASES] == [True, True, True]
    old, new = relined(ROW, "2.0", "src/b.py:40")
    assert at_release((old, new), "1.1", RELEASES) == (old,) and at_release((old, new), "2.0", RELEASES) == (new,)
    assert new.source == "src/b.py:40" and new.anchors == ROW.anchors and old.until == "2.0"


def test_an_engine_at_a_release_has_that_release_s_rows_and_values():
    gone = ArchRule("gone", TypeIn("target", frozenset({"rwkv"})), "refused", "raises", "src/a.py:3", until="2.0")
    e = toy(arch_rules=(ROW, gone), fix=(Ranged(value="old fix", until="2.0"), Ranged(value="new fix", since="2.0")))
    assert e.release == "2.0" and e.arch_rules == (ROW,) and e.fix == "new fix"
    old = e.at("1.0")
    assert old.release == "1.0" and old.version == "toy 1.0" and old.arch_rules == (ROW, gone) and old.fix == "old fix"
    assert e.at(None) is e and e.at("2.0") is e
    with pytest.raises(ValueError, match="known: 1.0, 1.1, 2.0"):
        e.at("3.0")


def test_every_engine_resolves_at_each_of_its_releases_and_defaults_to_the_newest():
    for name, e in ENGINES.items():
        assert e.releases and e.release == e.releases[-1], name
        for r in e.releases:
            got = e.at(r)  # a Ranged field with no row, or two, at a release raises here
            assert got.release == r and r in got.version, name
            for rows in e.ranged.values():
                for row in rows:
                    assert row.since in (None, *e.releases) and row.until in (None, *e.releases), (name, row)


def test_parse_versions_and_its_one_line_errors():
    assert parse_versions(["vllm==0.33.0", "transformers==5.24.0"]) == {"vllm": "0.33.0", "transformers": "5.24.0"}
    assert parse_versions(()) == {}
    with pytest.raises(BadInput, match=r"unknown vllm version '0.99'; known: 0.30.0, 0.31.0, 0.32.0, 0.33.0, 0.34.0"):
        parse_versions(["vllm==0.99"])
    with pytest.raises(BadInput, match="unknown engine 'tgi'; choose one of sglang, vllm"):
        parse_versions(["tgi==1"])
    with pytest.raises(BadInput, match="unknown vllm version ''"):
        parse_versions(["vllm"])
    assert at("vllm", "0.33.0").release == "0.33.0" and at("vllm").release == "0.34.0"


def test_versions_line():
    assert versions_line("transformers", {"5.24.0": "refused", "5.25.0": "works"}) == \
        "refused on transformers \u2264 5.24.0, works from 5.25.0"


def test_vllm_fixes_follow_the_release():
    old, new = at("vllm", "0.33.0"), at("vllm")
    assert "use_heterogeneous_vocab" in old.fix("useless", shared=False, sizes=(1, 1), tli="", tli_blocked=[])
    assert new.fix("useless", shared=False, sizes=(1, 1), tli="", tli_blocked=[]) is None
    assert "PeagleLlamaForCausalLM" in old.heads.head_classes and "PeagleLlamaForCausalLM" not in new.heads.head_classes
    assert "DSparkMiniMaxDraftModel" in new.heads.head_classes


# ---------------------------------------------------------------- the command line


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("versions")
    return str(make_model(root / "t", vocab_size=256)), str(make_model(root / "d"))


@pytest.mark.parametrize("spec, words", [("vllm==0.99", "unknown vllm version '0.99'; known: 0.30.0, 0.31.0, 0.32.0, "
                                                        "0.33.0, 0.34.0"),
                                         ("tgi==1", "unknown engine 'tgi'"),
                                         ("transformers", "known: 5.21.1, 5.22.2, 5.23.0, 5.24.0, 5.25.0")])
def test_check_and_query_refuse_an_unknown_release_in_one_line(pair, spec, words):
    for args in (["check", *pair], ["query", "--target", pair[0]]):
        res = CliRunner().invoke(cli, [*args, "--engine-version", spec])
        assert res.exit_code == 2, res.output
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], res.output


def test_check_answers_for_the_release_asked(pair):
    import json

    res = CliRunner().invoke(cli, ["check", *pair, "--json", "--engine-version", "vllm==0.33.0",
                                   "--engine-version", "mlx==d78bf58e"])
    data = json.loads(res.output)
    versions = {name: v["version"] for name, v in data["verdicts"].items()}
    assert versions == {"sglang": "0.5.23", "vllm": "0.33.0", "transformers": "5.25.0", "llama.cpp": "0c1e57098",
                        "mlx": "d78bf58e", "lmstudio": "08f0c075", "ollama": "fb307609"}
    assert "use_heterogeneous_vocab" in " ".join(data["verdicts"]["vllm"]["reasons"])
    text = CliRunner().invoke(cli, ["check", *pair]).output
    assert "vllm 0.34.0" in text and "use_heterogeneous_vocab" not in text


def test_the_site_takes_engine_version():
    from indexer.site import engine_versions, query_kwargs

    assert query_kwargs({"engine": "vllm", "engine_version": "vllm==0.33.0,mlx==d78bf58e"})["release"] == "0.33.0"
    assert "release" not in query_kwargs({"engine": "sglang", "engine_version": "vllm==0.33.0"})
    with pytest.raises(BadInput) as e:
        engine_versions({"engine_version": "vllm==9"})
    assert e.value.http_status == 400 and "known: 0.30.0, 0.31.0, 0.32.0, 0.33.0, 0.34.0" in e.value.message


# ---------------------------------------------------------------- the audit, on trees written here


def test_pieces_of_a_source_string():
    assert pieces("a/b.py:10-12, 40; c/d.py:7 (words, 9)") == [("a/b.py", 10, 12), ("a/b.py", 40, 40),
                                                              ("c/d.py", 7, 7)]
    assert pieces("vllm/x.py (no line)") == []


def test_vllm_0_34_refuses_p_eagle_heads_and_0_33_loads_them():
    from indexer.engines.heads import loads, parse_head
    from indexer.hubsim import heads as hubheads

    peagle = parse_head({**hubheads.speculators_eagle3("o/t", "LlamaForCausalLM", 4096, 32000, 32000, heads=32,
                                                       kv=8, inter=14336, aux=[2]),
                         "speculators_model_type": "peagle", "mask_token_id": 7}, "o/p")
    ok, detail, source, _ = loads(peagle, "vllm")
    assert not ok and "P-EAGLE" in detail and source == "transformers_utils/configs/speculators/algos.py:53-55"
    ok, _, _, method = loads(peagle, "vllm", "0.33.0")
    assert ok and method == "eagle3"
    eagle3 = parse_head(hubheads.speculators_eagle3("o/t", "LlamaForCausalLM", 4096, 32000, 32000, heads=32, kv=8,
                                                    inter=14336, aux=[2]), "o/e")
    assert loads(eagle3, "vllm")[0] and loads(eagle3, "vllm", "0.33.0")[0]


# ---------------------------------------------------------------- the older vLLM and SGLang releases


def _target(model_type: str, arch: str):
    from indexer.engines.headrules import TargetShape

    return TargetShape(repo_id="o/t", model_type=model_type, architectures=[arch], hidden_size=64,
                       num_hidden_layers=4, vocab_size=100, vocab_size_transformers=100, mtp_layers=1,
                       mtp_key="num_nextn_predict_layers", text_config_key=None)


@pytest.mark.parametrize("engine, release, model_type, arch, has", [
    # vLLM's hf_config_override learnt Step5 at 0.33.0 (extracted table mtp_rewrites)
    ("vllm", "0.32.0", "step5", "Step5ForCausalLM", False), ("vllm", "0.33.0", "step5", "Step5ForCausalLM", True),
    ("vllm", "0.30.0", "qwen3_5", "Qwen3_5ForConditionalGeneration", True),
    # SGLang's _config_draft_model learnt GigaChat 3.5 at 0.5.21 and ExaoneMoe at 0.5.22
    ("sglang", "0.5.20", "gigachat35", "GigaChat35ForCausalLM", False),
    ("sglang", "0.5.21", "gigachat35", "GigaChat35ForCausalLM", True),
    ("sglang", "0.5.21", "exaone_moe", "ExaoneMoeForCausalLM", False),
    ("sglang", "0.5.22", "exaone_moe", "ExaoneMoeForCausalLM", True),
])
def test_mtp_follows_each_release_s_rewrites(engine, release, model_type, arch, has):
    from indexer.engines.heads import rules_of

    ok, detail, source = rules_of(engine, release).mtp_support(_target(model_type, arch), arch)
    assert ok is has, detail
    rewrites = tables.values(engine, release, "mtp_rewrites")
    assert source.endswith(f"model_config.py:{rewrites[arch]}" if has and engine == "sglang" else
                           f"speculative.py:{rewrites[model_type]}" if has else source), source


def _capture_check(engine: str, release: str, algorithm: str, arch: str) -> dict:
    from indexer.engines.heads import parse_head, rules_of

    configs = {"eagle3": {"architectures": ["LlamaForCausalLMEagle3"]},
               "dflash": {"architectures": ["DFlashDraftModel"], "dflash_config": {"target_layer_ids": [1]}},
               "dspark": {"architectures": ["DSparkMiniMaxDraftModel"], "dflash_config": {"target_layer_ids": [1]}}}
    head = parse_head({**configs[algorithm], "model_type": "llama", "hidden_size": 64, "vocab_size": 100,
                       "draft_vocab_size": 100, "num_hidden_layers": 1}, "o/h")
    assert head.algorithm == algorithm
    verdict = rules_of(engine, release).fit(head, _target("x", arch))
    return next(c for c in verdict.checks if c["check"] == "target_arch")


@pytest.mark.parametrize("engine, release, algorithm, arch, captures", [
    # the VL class inherits Qwen3VLForConditionalGeneration's set_eagle3_layers_to_capture at every release; the
    # text class gained its own at 0.5.22
    ("sglang", "0.5.20", "eagle3", "Qwen3_5ForConditionalGeneration", True),
    ("sglang", "0.5.21", "eagle3", "Qwen3_5ForCausalLM", False),
    ("sglang", "0.5.22", "eagle3", "Qwen3_5ForCausalLM", True),
    # Mistral's class subclasses Llama's (the method is inherited)
    ("sglang", "0.5.23", "eagle3", "MistralForCausalLM", True),
    # DFlash at 0.5.23: MiniCPM-V 4.6 (through MiniCPMV's __getattr__), Beam and Muse Spark came; DeepSeek-V4 has
    # only set_dspark_layers_to_capture, so a DFlash head fails and a DSpark head captures
    ("sglang", "0.5.22", "dflash", "MiniCPMV4_6ForConditionalGeneration", False),
    ("sglang", "0.5.23", "dflash", "MiniCPMV4_6ForConditionalGeneration", True),
    ("sglang", "0.5.23", "dflash", "BeamForCausalLM", True),
    ("sglang", "0.5.23", "dflash", "MuseSparkForConditionalGeneration", True),
    ("sglang", "0.5.23", "dflash", "DeepseekV4ForCausalLM", False),
    ("sglang", "0.5.23", "dspark", "DeepseekV4ForCausalLM", True),
    ("sglang", "0.5.23", "eagle3", "Qwen2ForCausalLM", True),
    ("sglang", "0.5.23", "dflash", "Qwen2ForCausalLM", False),
    # an architecture SGLang does not register runs on its Transformers fallback, which captures nothing
    ("sglang", "0.5.23", "eagle3", "NoSuchForCausalLM", False),
    # vLLM: Granite's class implements SupportsEagle3 from 0.32.0, GraniteMoe's from 0.33.0
    ("vllm", "0.31.0", "eagle3", "GraniteForCausalLM", False),
    ("vllm", "0.32.0", "eagle3", "GraniteForCausalLM", True),
    ("vllm", "0.32.0", "dflash", "GraniteMoeForCausalLM", False),
    ("vllm", "0.33.0", "dflash", "GraniteMoeForCausalLM", True),
    ("vllm", "0.34.0", "eagle3", "Qwen3_5ForConditionalGeneration", True),  # vllm.models.qwen3_5, re-exported
    ("vllm", "0.34.0", "eagle3", "MistralForCausalLM", True),
    ("vllm", "0.34.0", "eagle3", "NoSuchForCausalLM", False),
])
def test_capture_follows_each_release_s_classes(engine, release, algorithm, arch, captures):
    """Whether the target's model class captures a head's hidden states is read from the release's classes (tables
    capture_classes, eagle3_classes): an entry missing from the table turns a fit into a refusal."""
    check = _capture_check(engine, release, algorithm, arch)
    assert check["ok"] is captures, check
    if captures:  # the check cites where the class gets the capture, at that release
        table = (tables.values("sglang", release, "capture_classes")["dspark" if algorithm == "dspark" and arch in
                 tables.values("sglang", release, "capture_classes")["dspark"] else
                 "eagle3" if algorithm == "eagle3" else "dflash"] if engine == "sglang"
                 else tables.values("vllm", release, "eagle3_classes"))
        where = table[arch].removeprefix("python/sglang/srt/").removeprefix("vllm/")
        assert check["source"].endswith(where), check


def test_every_registered_class_s_capture_is_the_table_s():
    """For every class each release registers, the EAGLE-3 check passes exactly when the extracted table lists it."""
    for engine, table in (("sglang", "capture_classes"), ("vllm", "eagle3_classes")):
        for release in ENGINES[engine].releases:
            t = tables.tables(engine, release)[table]
            capturing = t["values"]["eagle3"] if engine == "sglang" else t["values"]
            registered = tables.values(engine, release, "registered_models") if engine == "sglang" else t["registered"]
            assert len(capturing) > 40 and set(capturing) <= set(registered), (engine, release)
            for arch in sorted(registered)[::7]:
                assert _capture_check(engine, release, "eagle3", arch)["ok"] is (arch in capturing), (release, arch)


def test_vllm_heads_at_each_release_follow_its_registry():
    """DFlashQwen3XPressModel came with 0.33.0: 0.32.0's registry lacks it, and each release cites its own line."""
    from indexer.engines.heads import loads, parse_head

    head = parse_head({"architectures": ["DFlashQwen3XPressModel"], "model_type": "qwen3", "hidden_size": 64,
                       "vocab_size": 100, "num_hidden_layers": 1, "dflash_config": {"target_layer_ids": [1]}}, "o/d")
    assert loads(head, "vllm", "0.33.0")[0] and not loads(head, "vllm", "0.32.0")[0]
    eagle3 = parse_head({"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 64,
                         "vocab_size": 100, "draft_vocab_size": 100, "num_hidden_layers": 1}, "o/h")
    for release in ENGINES["vllm"].releases:
        ok, _, source, _ = loads(eagle3, "vllm", release)
        line = tables.values("vllm", release, "speculative_models")["LlamaForCausalLMEagle3"]["line"]
        assert ok and source == f"model_executor/models/registry.py:{line}", (release, source)


def test_vllm_before_0_33_does_not_lower_the_target_s_context():
    """_limit_max_model_len_to_draft came with 0.33.0; before, the draft's max_model_len is capped instead."""
    rows = {r: [row for row in ENGINES["vllm"].at(r).arch_rules if row.check == "shorter draft context"]
            for r in ENGINES["vllm"].releases}
    assert all(len(v) == 1 for v in rows.values())
    assert "keeps the target's max_model_len" in rows["0.32.0"][0].says and rows["0.32.0"][0].demote
    assert "lowers the target's max_model_len" in rows["0.33.0"][0].says
    assert rows["0.31.0"][0].source == "vllm/config/speculative.py:1550-1556, 1627-1664"  # re-pinned there


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_older_releases_cite_every_check_at_its_lines_there(engine):
    """A head rule's citation written in a method body (hidden size, vocabulary, aux layers, the loader) is given at
    the release asked, where the audit re-pinned it (tables.relined): no check at an older release cites the line a
    moved citation has at the release it was read at."""
    from indexer.engines.audit import pieces
    from indexer.engines.heads import loads, mtp, parse_head, rules_of

    base = {"model_type": "llama", "hidden_size": 64, "vocab_size": 100, "draft_vocab_size": 100,
            "num_hidden_layers": 1}
    heads = [parse_head({**base, **extra}, f"o/h{i}") for i, extra in enumerate((
        {"architectures": ["LlamaForCausalLMEagle3"], "eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 1]}},
        {"architectures": ["LlamaForCausalLMEagle"]},
        {"architectures": ["DFlashDraftModel"], "dflash_config": {"target_layer_ids": [1]}},
        {"architectures": ["LlamaForCausalLMEagle3"], "speculators_model_type": "eagle3",
         "speculators_config": {"verifier": {"name_or_path": "o/t"}},
         "transformer_layer_config": {"model_type": "llama"}},
    ))]
    target = _target("deepseek_v3", "DeepseekV3ForCausalLM")
    older = ENGINES[engine].releases[:-2 if engine == "vllm" else -1]
    moved_somewhere = 0
    for release in older:
        stale = tables.relined(engine, release)
        rules = rules_of(engine, release)
        sources = [c["source"] for h in heads for c in rules.fit(h, target).checks]
        sources += [loads(h, engine, release)[2] for h in heads] + [c["source"] for c in mtp(target, engine,
                                                                                                 release).checks]
        cited = {f"{f}:{a}" + (f"-{b}" if b != a else "") for s in sources for f, a, b in pieces(s)}
        assert not cited & set(stale), (release, sorted(cited & set(stale)))
        moved_somewhere += len(stale)
    assert moved_somewhere  # the older releases have moved citations to re-line
