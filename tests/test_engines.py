"""The engine registry and every correction in docs/engines.md, on small tokenizers (runs without ../shared)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers
from tokfactory import BASE_WORDS, make_model, make_text_model

from indexer import engines as registry
from indexer.answer.localdir import side_from_dir
from indexer.cli import cli
from indexer.engines.rules import check_pair
from indexer.engines.setup import HF, MLX, Source, plain, text
from indexer.resources import METADATA_PATH

LAYERS = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128,
          "max_position_embeddings": 128}
SPM_WORDS = (["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)] + ["▁"]
             + [f"▁w{i}" for i in range(60)] + [f"p{i}" for i in range(40)])


def make_spm(path: Path, *, words: list[str] | None = None, added: tuple[str, ...] = (), vocab_size: int | None = None,
             tokenizer_config: dict | None = None, config: dict | None = None) -> Path:
    """A Llama-family byte-fallback BPE (what convert_hf_to_gguf.py writes as a SentencePiece 'llama' vocab)."""
    words = list(words or SPM_WORDS)
    tok = Tokenizer(models.BPE(vocab={w: i for i, w in enumerate(words)}, merges=[], unk_token="<unk>",
                               byte_fallback=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.add_special_tokens([AddedToken(t, special=True) for t in ("<unk>", "<s>", "</s>")])
    if added:
        tok.add_special_tokens([AddedToken(t, special=True) for t in added])
    path.mkdir(parents=True, exist_ok=True)
    tok.save(str(path / "tokenizer.json"))
    tc = {"tokenizer_class": "LlamaTokenizerFast", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
          "add_bos_token": True, "add_eos_token": False, **(tokenizer_config or {})}
    (path / "tokenizer_config.json").write_text(json.dumps(tc))
    size = vocab_size if vocab_size is not None else tok.get_vocab_size(with_added_tokens=True)
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": size, **LAYERS,
           **(config or {})}
    (path / "config.json").write_text(json.dumps(cfg))
    return path


def pair(tmp_path, make_t, make_d) -> dict:
    return check_pair(side_from_dir(make_t(tmp_path / "t")), side_from_dir(make_d(tmp_path / "d")))


def outcome(result: dict, engine: str) -> str:
    return result["verdicts"][engine]["outcome"]


def reasons(result: dict, engine: str) -> str:
    return " ".join(result["verdicts"][engine]["reasons"])


# ---------------------------------------------------------------- one registry


def _choices(command: str) -> list[str]:
    opt = next(p for p in cli.get_command(click.Context(cli), command).params if p.name == "engine")
    return list(opt.type.choices)


def test_every_part_names_exactly_the_registry_engines(tmp_path):
    from indexer.answer import query
    from indexer.catalog import models
    from indexer.engines import rules

    names = list(registry.ENGINES)
    assert list(models.ENGINES) == names
    assert list(query.ENGINES) == names and list(query.ENGINE_NAMES) == names
    assert list(rules.RULES) == names
    assert _choices("check") == names and _choices("query") == names
    result = check_pair(side_from_dir(make_model(tmp_path / "a")), side_from_dir(make_model(tmp_path / "b")))
    assert list(result["verdicts"]) == names
    from test_query import build_catalog

    from indexer.catalog.compute import compute

    stats = compute(build_catalog(tmp_path / "catalog.db"))
    assert list(stats["classes"]) == names and list(stats["memberships"]) == names
    # The site's metadata may name only registry engines (the site reads indexer.engines).
    metadata = METADATA_PATH.read_text()
    for values in re.findall(r"values\s*((?:\('[^']+'\)\s*,?\s*)+)", metadata):
        assert set(re.findall(r"'([^']+)'", values)) <= set(names)


def test_each_entry_is_complete():
    for name, e in registry.ENGINES.items():
        assert e.name == name and e.display and e.version and e.facts
        assert e.sources and all(re.search(r"\.(py|cpp|go)(:\d+)?", ref) for ref in e.sources.values()), name
        assert e.words[registry.WORKS] and e.words.get(registry.REFUSED), name
        assert registry.USELESS in e.words or registry.NO_SPECULATION in e.words, name
        cmd = text(e.launch(plain(name, e.release, "org/Target-7B", "org/Draft-0.5B")))
        assert "Target-7B" in cmd and "Draft-0.5B" in cmd, name
        assert e.class_key in (("gguf_sig",), ()) or e.class_key[1] == "tok", name
        assert bool(e.class_key) != bool(e.refuses_drafts), name  # no classes exactly when no draft model runs


def test_verdict_shape_and_outcomes():
    v = registry.Verdict(registry.USELESS, ["x"])
    assert v.to_dict() == {"compatible": False, "accepted": True, "outcome": "useless", "version": None,
                           "reasons": ["x"], "vocabulary_outcome": "useless", "architecture": []}
    assert registry.Verdict(registry.NO_SPECULATION, []).accepted is False
    assert registry.Verdict(registry.WORKS, []).compatible is True


# ---------------------------------------------------------------- SGLang


def test_sglang_same_size_unrelated_mapping_starts_and_is_useless(tmp_path):
    r = pair(tmp_path, lambda p: make_text_model(p), lambda p: make_text_model(p, shuffle=1))
    v = r["verdicts"]["sglang"]
    assert v == {**v, "accepted": True, "compatible": False, "outcome": "useless"}
    assert "slower than none" in reasons(r, "sglang")
    assert outcome(r, "vllm") == outcome(r, "transformers") == outcome(r, "mlx") == "useless"
    assert r["fixes"]["sglang"] is None and r["fixes"]["vllm"] is None  # vLLM 0.34 has no TLI
    t, d = side_from_dir(tmp_path / "t"), side_from_dir(tmp_path / "d")
    assert "use_heterogeneous_vocab" in check_pair(t, d, {"vllm": "0.33.0"})["fixes"]["vllm"]


def test_sglang_mapping_differs_only_above_vocab_size_works_and_says_so(tmp_path):
    n = len(BASE_WORDS)
    r = pair(tmp_path, lambda p: make_model(p, added=["<pad>"], vocab_size=n), lambda p: make_model(p, vocab_size=n))
    assert outcome(r, "sglang") == "works" and r["verdicts"]["sglang"]["compatible"]
    assert f"ids >= vocab_size {n} only" in reasons(r, "sglang")
    assert r["fix"] is None


def test_sglang_different_size_is_refused(tmp_path):
    r = pair(tmp_path, lambda p: make_model(p, vocab_size=256), make_model)
    assert outcome(r, "sglang") == "refused" and "raises ValueError" in reasons(r, "sglang")


@pytest.mark.parametrize("key", ["llm_config", "language_config", "thinker_config"])
def test_sglang_sub_config_priority_over_text_config(tmp_path, key):
    path = make_model(tmp_path / "m", text_config=True)
    cfg = json.loads((path / "config.json").read_text())
    sub = {"vocab_size": 4242, "num_attention_heads": 4}
    cfg[key] = {"text_config": sub} if key == "thinker_config" else sub
    (path / "config.json").write_text(json.dumps(cfg))
    side = side_from_dir(path)
    assert side.vocab_size == 4242  # SGLang: thinker > llm > language > text
    assert side.vocab_size_transformers == len(BASE_WORDS)  # get_text_config(): text_config


def test_sglang_llava_causal_lm_keeps_the_top_level(tmp_path):
    path = make_model(tmp_path / "m", text_config=True,
                      config={"architectures": ["LlavaLlamaForCausalLM"], "vocab_size": 777})
    assert side_from_dir(path).vocab_size == 777


# ---------------------------------------------------------------- vLLM and transformers


def test_get_text_config_ambiguity_is_an_error_verdict(tmp_path):
    sub = {"vocab_size": len(BASE_WORDS), "num_attention_heads": 4}
    r = pair(tmp_path, lambda p: make_model(p, text_config=True, config={"decoder": sub}), make_model)
    for engine in ("vllm", "transformers"):
        assert outcome(r, engine) == "refused", engine
        assert "ambiguous" in reasons(r, engine) and "decoder, text_config" in reasons(r, engine)
        assert r["fixes"][engine] is None  # neither resizing nor TLI helps a config the engine cannot read
    assert outcome(r, "sglang") == "works"  # SGLang's own priority is not ambiguous


@pytest.mark.parametrize("model_type,key", [("ovis", "llm_config"), ("deepseek_vl_v2", "language_config")])
def test_vllm_model_type_remaps(tmp_path, model_type, key):
    path = make_model(tmp_path / "m", config={"model_type": model_type, key: {"vocab_size": 5151}})
    side = side_from_dir(path)
    assert side.vllm_vocab_size == 5151
    assert side.vocab_size_transformers == len(BASE_WORDS)  # transformers reads the top level


def test_vllm_refusal_names_tli_and_its_constraints(tmp_path):
    """vLLM 0.33.0 had TLI (use_heterogeneous_vocab); 0.34.0 removed it, and says so."""
    pair(tmp_path, lambda p: make_model(p, vocab_size=256), make_model)
    t, d = side_from_dir(tmp_path / "t"), side_from_dir(tmp_path / "d")
    old = " ".join(registry.ENGINES["vllm"].at("0.33.0").verdict(t, d).reasons)
    assert "use_heterogeneous_vocab" in old and "greedy" in old
    new = " ".join(registry.ENGINES["vllm"].verdict(t, d).reasons)
    assert "use_heterogeneous_vocab" not in new and "no vocabulary translation" in new
    t.tok = {**t.tok, "unk_token_id": None, "eos_token_id": None}
    v = registry.ENGINES["vllm"].at("0.33.0").rule(t, d)
    assert "neither an unk nor an eos token" in " ".join(v.reasons)


def test_transformers_uag_only_when_sizes_differ(tmp_path):
    r = pair(tmp_path, lambda p: make_model(p, vocab_size=256), make_model)
    assert outcome(r, "transformers") == "refused"
    assert "universal assisted generation" in reasons(r, "transformers")
    same = pair(tmp_path / "s", lambda p: make_model(p, words=list(reversed(BASE_WORDS))), make_model)
    assert outcome(same, "transformers") == "useless"
    assert "assistant_tokenizer raises" in reasons(same, "transformers")
    assert "output stays correct" in reasons(same, "transformers")
    assert same["fixes"]["transformers"] is None  # equal sizes: assistant_tokenizer raises, nothing helps


# ---------------------------------------------------------------- MLX and LM Studio


def test_mlx_generate_refuses_server_only_warns(tmp_path):
    r = pair(tmp_path, lambda p: make_model(p, words=BASE_WORDS + ["extra"]), make_model)
    assert outcome(r, "mlx") == "refused"
    assert "mlx_lm.generate raises" in reasons(r, "mlx") and "mlx_lm.server only warns" in reasons(r, "mlx")


def test_mlx_notes_a_model_type_mlx_lm_cannot_load(tmp_path):
    r = pair(tmp_path, lambda p: make_model(p, config={"model_type": "falcon"}), make_model)
    assert outcome(r, "mlx") == "works"  # the vocabulary rule decides; the load failure is said
    assert "mlx_lm.load refuses the target's model_type 'falcon'" in reasons(r, "mlx")
    assert registry.mlx_model_type_supported("mistral") and registry.mlx_model_type_supported("qwen2_5_vl")


def test_lmstudio_never_drafts_for_a_vision_target(tmp_path):
    r = pair(tmp_path, lambda p: make_model(p, config={"vision_config": {"hidden_size": 8}}), make_model)
    assert outcome(r, "mlx") == "works" and outcome(r, "lmstudio") == "refused"
    assert "vision_config" in reasons(r, "lmstudio")
    back = check_pair(side_from_dir(tmp_path / "d"), side_from_dir(tmp_path / "t"))
    assert outcome(back, "lmstudio") == "works"  # a vision draft is fine


# ---------------------------------------------------------------- TLI


def test_tli_counted_as_vllm_and_as_transformers(tmp_path):
    sp = ["<unk>", "<s>", "</s>"] + [f"▁w{i}" for i in range(60)] + [f"x{i}" for i in range(60)] + ["▁"]
    words = BASE_WORDS + ["Ġ"]
    # The target's two added tokens sit above its config vocab_size: vLLM drops them, transformers does not.
    r = pair(tmp_path, lambda p: make_model(p, words=words, added=["x1", "x2"], vocab_size=len(words)),
             lambda p: make_model(p, words=sp))
    tli = r["tli"]
    assert tli["intersection_vllm"] == 64  # 3 specials + 60 words + the bare marker, equal after Ġ/▁ -> " "
    assert tli["intersection_transformers"] == 66  # ▁ -> Ġ, then exact lookup: x1, x2 also count
    assert not tli["same_count"] and tli["ratio"] == pytest.approx(64 / len(sp), abs=1e-4)
    text = CliRunner().invoke(cli, ["check", str(tmp_path / "t"), str(tmp_path / "d")]).stdout
    # vLLM 0.34.0 has no TLI: only transformers' count is said; vLLM 0.33.0's is said with both
    assert "TLI intersection: 66 tokens as transformers' assisted generation counts them" in text
    assert "(vLLM 0.34.0 has no TLI)" in text and "as vLLM" not in text
    text = CliRunner().invoke(cli, ["check", str(tmp_path / "t"), str(tmp_path / "d"),
                                    "--engine-version", "vllm==0.33.0"]).stdout
    assert "TLI intersection: 64 tokens as vLLM 0.33.0 counts them" in text and "transformers counts 66" in text


def test_vllm_tli_first_id_wins(tmp_path):
    from indexer.engines.rules import vllm_tli

    t = {"Ġa": 0, " a": 1, "b": 2}
    d = {" a": 5, "b": 0}
    # target: "Ġa" (id 0) and " a" (id 1) both normalize to " a"; the first id (0) wins.
    assert vllm_tli(t, d, 1, None) == 1  # " a" -> target id 0 < 1 counts, "b" -> id 2 does not


# ---------------------------------------------------------------- llama.cpp


def test_llamacpp_accepts_sizes_within_128(tmp_path):
    n = len(SPM_WORDS)
    extra = tuple(f"<extra_{i}>" for i in range(128))
    r = pair(tmp_path, lambda p: make_spm(p, added=extra), make_spm)
    assert outcome(r, "llama.cpp") == "works" and r["verdicts"]["llama.cpp"]["compatible"]
    assert outcome(r, "sglang") == "refused"  # config vocab_size differs
    assert r["details"]["gguf"]["target"]["n_vocab"] == n + 128 and r["details"]["gguf"]["draft"]["n_vocab"] == n
    far = pair(tmp_path / "far", lambda p: make_spm(p, added=(*extra, "<one_more>")), make_spm)
    assert outcome(far, "llama.cpp") == "no_speculation"
    assert "difference 129" in reasons(far, "llama.cpp") and "serves without a draft" in reasons(far, "llama.cpp")


def test_llamacpp_compares_eos_ids_only_when_added(tmp_path):
    def model(eos: str, add_eos: bool):
        return lambda p: make_spm(p, added=("<|eot|>",), tokenizer_config={"eos_token": eos, "add_eos_token": add_eos})

    r = pair(tmp_path, model("</s>", False), model("<|eot|>", False))
    assert r["details"]["gguf"]["target"]["eos"] != r["details"]["gguf"]["draft"]["eos"]
    assert outcome(r, "llama.cpp") == "works"  # add_eos is off on both: the ids are not compared
    r = pair(tmp_path / "on", model("</s>", True), model("<|eot|>", True))
    assert outcome(r, "llama.cpp") == "no_speculation" and "eos" in reasons(r, "llama.cpp")


def test_llamacpp_ignores_ids_below_5(tmp_path):
    low = list(SPM_WORDS)
    low[4] = "<0xFF>x"
    assert outcome(pair(tmp_path, make_spm, lambda p: make_spm(p, words=low)), "llama.cpp") == "works"
    high = list(SPM_WORDS)
    high[300] = "▁changed"
    r = pair(tmp_path / "h", make_spm, lambda p: make_spm(p, words=high))
    assert outcome(r, "llama.cpp") == "no_speculation" and "token 300" in reasons(r, "llama.cpp")


def test_llamacpp_unconvertible_directory_is_refused_with_the_converter_words(tmp_path):
    r = pair(tmp_path, lambda p: make_model(p, config=LAYERS), make_spm)  # byte-level BPE of unknown pre-tokenizer
    assert outcome(r, "llama.cpp") == "refused"
    assert "cannot be converted to GGUF" in reasons(r, "llama.cpp") and "pre-tokenizer" in reasons(r, "llama.cpp")


def test_gguf_buckets_meet_for_every_passing_size_difference():
    base = [f"t{i}" for i in range(1000)]
    for extra in (0, 1, 27, 127, 128):
        a, b = registry.gguf_buckets(base), registry.gguf_buckets(base + [f"[PAD{i}]" for i in range(extra)])
        assert {a[0], a[1]} & {b[0], b[1]}, extra


# ---------------------------------------------------------------- launch commands and the CLI


def _launch(engine: str, t: str, d: str, **setup) -> str:
    e = registry.ENGINES[engine]
    return text(e.launch(replace(plain(engine, e.release, t, d), **setup)))


def test_launch_commands_use_current_syntax():
    # An HF side is downloaded, converted and quantized to the quantization it runs at, each step runnable.
    llama = _launch("llama.cpp", "org/T", "org/D", target=Source("org/T", HF, "Q4_K_M"),
                    draft=Source("org/D", HF, "Q8_0"), draft_tokens=3)
    assert llama == ("hf download org/T --local-dir T && python convert_hf_to_gguf.py T --outfile T-F16.gguf "
                     "--outtype f16 && llama-quantize T-F16.gguf T-Q4_K_M.gguf Q4_K_M && hf download org/D "
                     "--local-dir D && python convert_hf_to_gguf.py D --outfile D-Q8_0.gguf --outtype q8_0 && "
                     "llama-server -m T-Q4_K_M.gguf -md D-Q8_0.gguf --spec-type draft-simple --spec-draft-n-max 3")
    # A GGUF repo has no HF weights to convert: it is served from the Hub by its tag.
    both = _launch("llama.cpp", "acme/T-GGUF:Q4_K_M", "acme/D-gguf:Q8_0")
    assert both == "llama-server -hf acme/T-GGUF:Q4_K_M -hfd acme/D-gguf:Q8_0 --spec-type draft-simple"
    assert "--draft-max" not in llama  # removed at 0c1e57098 (common/arg.cpp:4386-4391)
    assert "--speculative-algorithm STANDALONE --speculative-draft-model-path org/D" in _launch("sglang", "org/T",
                                                                                              "org/D")
    vllm = _launch("vllm", "org/T", "org/D")
    cfg = json.loads(vllm.split("--speculative-config ", 1)[1].strip("'"))
    assert vllm.startswith("vllm serve org/T") and cfg["method"] == "draft_model" and cfg["model"] == "org/D"
    assert "--draft-model org/D" in _launch("mlx", "org/T", "org/D")
    mlx = _launch("mlx", "org/T", "org/D", target=Source("org/T", HF, "4bit"), draft=Source("org/D", MLX, "4bit"))
    assert mlx.startswith("mlx_lm.convert --hf-path org/T -q --q-bits 4 --mlx-path T-4bit && ")
    assert "--model T-4bit --draft-model org/D" in mlx
    lms = _launch("lmstudio", "org/T", "org/D")  # float checkpoints on mlx-engine: LM Studio downloads them
    assert "target = get('org/T', 'safetensors'); draft = get('org/D', 'safetensors')" in lms
    assert "lms.llm(target).respond('Hello', config={'draftModel': draft})" in lms
    assert "assistant_model=assistant" in _launch("transformers", "org/T", "org/D")


def test_check_json_and_engine_exit_status(tmp_path):
    t = make_model(tmp_path / "t", vocab_size=256)
    d = make_model(tmp_path / "d")
    runner = CliRunner()
    res = runner.invoke(cli, ["check", str(t), str(d), "--json"])
    assert res.exit_code == 1
    data = json.loads(res.stdout)
    for v in data["verdicts"].values():
        assert set(v) == {"compatible", "accepted", "outcome", "version", "reasons", "vocabulary_outcome",
                          "architecture", "by_version", "versions", "speedup", "speedups", "measured"}
        assert v["outcome"] in registry.OUTCOMES
    assert data["verdicts"]["mlx"]["compatible"]
    assert runner.invoke(cli, ["check", str(t), str(d), "--engine", "mlx"]).exit_code == 0
    assert runner.invoke(cli, ["check", str(t), str(d), "--engine", "vllm"]).exit_code == 1
    bad = runner.invoke(cli, ["check", str(t), str(d), "--engine", "tgi"])
    assert bad.exit_code == 2 and "tgi" in bad.output
    text = runner.invoke(cli, ["check", str(t), str(d)]).stdout
    assert "REFUSED" in text and "WORKS" in text


def test_the_registry_and_the_gguf_prediction_follow_the_same_llama_cpp():
    from indexer.gguf import predict as gguf

    assert registry.LLAMACPP_COMMIT == gguf.LLAMACPP_COMMIT
