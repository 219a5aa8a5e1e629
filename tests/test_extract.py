"""The extractor reads each engine's tables out of a source tree (tiny hand-written trees in the engines' shapes under
tests/data/engine_src), and the engine modules answer from the extracted data: MiniMax on transformers, every head
class of vLLM's and SGLang's registries."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from indexer.engines import ENGINES, extract, tables
from indexer.engines.extract import SourceError
from indexer.engines.rules import check_pair
from indexer.vocab.archconfig import ArchFacts

TREES = Path(__file__).parent / "data" / "engine_src"
ROOT = Path(__file__).resolve().parents[1]


def test_vllm_registry_methods_and_dropped_models():
    t = extract.vllm(TREES / "vllm")
    spec = t["speculative_models"]
    assert spec["source"] == "vllm/model_executor/models/registry.py:10-21"
    kinds = {k: v["kind"] for k, v in spec["values"].items()}
    assert kinds == {"ExtractHiddenStatesModel": "other", "EagleLlamaForCausalLM": "eagle",
                     "Eagle3Qwen3vlForCausalLM": "eagle3", "DFlashDraftModel": "dflash",
                     "MuseGlimmerAssistantModel": "dflash",  # by its module, qwen3_dflash
                     "Qwen3DSparkModel": "dspark", "DeepSeekMTPModel": "mtp"}
    assert spec["values"]["Qwen3DSparkModel"]["line"] == 16  # the key's line, the value split below it
    assert t["previously_supported"]["values"] == {"BambaForCausalLM": "0.23.0", "MiniMaxForCausalLM": "0.23.0"}
    assert t["transformers_backend_models"]["values"] == {"OlmoForCausalLM": "TransformersForCausalLM"}
    assert t["native_models"]["_TEXT_GENERATION_MODELS"]["values"] == ["LlamaForCausalLM"]
    # SpeculativeMethod unions other Literal names: followed
    assert t["speculative_methods"]["values"] == ["ngram", "draft_model", "eagle", "eagle3", "deepseek_mtp", "mtp"]
    assert t["mtp_model_types"]["values"] == ["deepseek_mtp", "mtp"]
    # hf_config_override: each name its ifs test, at the line of its if
    assert t["mtp_rewrites"]["values"] == {"deepseek_v3": 15, "deepseek_v32": 15, "MiMoForCausalLM": 17}
    assert t["mtp_rewrites"]["source"] == "vllm/config/speculative.py:13-19"
    # SupportsEagle3 among a registered class's bases, or its ancestors' (through ``import module`` and a re-export
    # of vllm.models.<name>); GraniteForCausalLM has none
    eagle3 = t["eagle3_classes"]
    llama = "vllm/model_executor/models/llama.py:6"
    assert eagle3["values"] == {"LlamaForCausalLM": llama, "LlavaForConditionalGeneration": llama,
                                "QwenVLForConditionalGeneration": llama}
    assert eagle3["registered"]["GraniteForCausalLM"] == "llava.GraniteForCausalLM"


def test_sglang_entry_classes_of_speculators_only():
    t = extract.sglang(TREES / "sglang")
    got = {k: (v["kind"], v["file"].rsplit("/", 1)[1], v["line"]) for k, v in t["speculative_models"]["values"].items()}
    assert got == {"LlamaForCausalLMEagle3": ("eagle3", "llama_eagle3.py", 5),
                   "DFlashDraftModel": ("dflash", "dflash.py", 14),
                   "DFlashLagunaForCausalLM": ("dflash", "dflash.py", 15),
                   "MuseGlimmerAssistantModel": ("dflash", "dflash.py", 16),
                   "DSparkMiniMaxDraftModel": ("dspark", "dspark_minimax.py", 5),  # EntryClass = one class, no list
                   "Qwen3NextForCausalLMMTP": ("mtp", "qwen3_next_mtp.py", 5)}  # LlamaForCausalLM: not a speculator
    assert t["speculative_algorithms"]["values"] == ["DFLASH", "EAGLE", "EAGLE3", "STANDALONE", "NONE"]
    # the registered classes that capture hidden states: defined, inherited from another file's class imported under
    # another name, or forwarded by __getattr__ to the class of its module it is named after (not the generic
    # Wrapper, which may hold any version; not Plain, which has none)
    llama, mistral = "python/sglang/srt/models/llama.py", "python/sglang/srt/models/mistral.py"
    assert t["capture_classes"]["values"] == {
        "eagle3": {"LlamaForCausalLM": f"{llama}:2", "MistralForCausalLM": f"{llama}:2"},
        "dflash": {"LlamaForCausalLM": f"{llama}:5", "MistralForCausalLM": f"{llama}:5",
                   "VersionFourForConditionalGeneration": "python/sglang/srt/models/wrapper.py:2"},
        "dspark": {"MinimaxLike": f"{mistral}:9"}}
    assert {"Plain", "Wrapper", "MinimaxLike", "LlamaForCausalLM"} <= set(t["registered_models"]["values"])
    # _config_draft_model's rewrites (a tuple it names too)
    assert t["mtp_rewrites"]["values"] == {"DeepseekV3ForCausalLM": 9, "MiMoV2ForCausalLM": 11,
                                           "MiMoV2FlashForCausalLM": 11}


def test_transformers_class_name_exclusions_become_model_types():
    t = extract.transformers(TREES / "transformers")
    cache = t["no_default_cache"]
    assert cache["excluded_names"] == ["minimax", "rwkv"] and cache["exempt_names"] == ["minimaxm2"]
    # MiniMaxM2ForCausalLM contains "minimax" but is exempt; the others keep their Cache
    assert cache["values"] == {"minimax": "MiniMaxForCausalLM", "rwkv": "RwkvForCausalLM"}
    assert cache["source"] == "src/transformers/generation/utils.py:3-12"
    assert cache["raise"] == "src/transformers/generation/utils.py:17"
    # mamba's folder defines MambaConfig (and a vision config, left out); llama's sets _is_stateful = False
    assert t["stateful"]["values"] == {"mamba": "src/transformers/models/mamba/modeling_mamba.py:2"}


def test_transformers_mtp_types_are_the_configs_declaring_num_mtp_layers():
    """A config class declares num_mtp_layers as a field or an attribute_map entry (whose value is the config.json
    key); the causal-LM class's weight patterns name fixed checkpoint layers, or none (set from the config)."""
    mtp = extract.transformers(TREES / "transformers")["mtp"]["values"]
    assert set(mtp) == {"deepseek_v3", "ernie", "sarvam_mla", "stepper"}  # llama and mamba declare none
    assert mtp["deepseek_v3"] == {
        "config": "src/transformers/models/deepseek_v3/configuration_deepseek_v3.py:4",
        "key": "num_nextn_predict_layers", "class": "DeepseekV3ForCausalLM",
        "weights": "src/transformers/models/deepseek_v3/modeling_deepseek_v3.py:2", "layers": [61]}
    # a model type mapped onto another model's class takes that class's patterns
    assert mtp["sarvam_mla"]["class"] == "DeepseekV3ForCausalLM" and mtp["sarvam_mla"]["layers"] == [61]
    # a field: the key is its own name; the base's None is passed over for the patterns __init__ makes
    assert mtp["ernie"] == {"config": "src/transformers/models/ernie/configuration_ernie.py:2",
                            "key": "num_mtp_layers", "class": "ErnieForCausalLM",
                            "weights": "src/transformers/models/ernie/modeling_ernie.py:7-9", "layers": None}
    # a text config no causal-LM class is registered for
    assert mtp["stepper"]["class"] is None and mtp["stepper"]["weights"] is None


def test_mlx_caches_follow_imports_and_remapping():
    t = extract.mlx(TREES / "mlx")
    assert t["model_remapping"]["values"] == {"mistral": "llama", "falcon_mamba": "mamba"}
    assert t["model_modules"]["values"] == ["cache", "llama", "mamba", "mamba_vl", "qwen2"]
    # mamba_vl builds no cache and imports mamba; falcon_mamba is remapped to it
    assert t["arrays_cache"]["values"] == {"falcon_mamba": "mamba", "mamba": "mamba", "mamba_vl": "mamba"}
    assert t["rotating_cache"]["values"] == {"llama": "llama", "mistral": "llama"}


def test_llamacpp_converter_registry_is_the_map_and_the_text_registrations():
    t = extract.llamacpp(TREES / "llamacpp")
    assert t["text_model_map"]["source"] == "conversion/__init__.py:2-7"
    # the last registration wins; a projector registered under the name is not a text model; a mapped name its module
    # never registers fails too
    assert t["converter_architectures"]["values"] == {"LlamaForCausalLM": "conversion/llama.py:4 (LlamaModel)",
                                                      "MistralForCausalLM": "conversion/llama.py:9 (MistralModel)"}
    assert t["mapped_not_registered"]["values"] == {"GhostForCausalLM": "conversion/llama.py",
                                                    "SpeechForConditionalGeneration": "conversion/speech.py"}


def test_a_tree_without_what_is_read_is_one_error(tmp_path):
    with pytest.raises(SourceError, match="registry.py: no such file"):
        extract.vllm(tmp_path)
    shutil.copytree(TREES / "transformers", tmp_path / "tf")
    utils = tmp_path / "tf/src/transformers/generation/utils.py"
    utils.write_text(utils.read_text().replace("_supports_default_dynamic_cache", "_renamed"))
    with pytest.raises(SourceError, match="no _supports_default_dynamic_cache"):
        extract.transformers(tmp_path / "tf")


def test_the_script_writes_the_data_file_and_refuses_a_bad_tree(tmp_path):
    run = [sys.executable, str(ROOT / "scripts" / "extract_tables.py")]
    ok = subprocess.run([*run, "sglang", "9.9", str(TREES / "sglang"), "--out", str(tmp_path)], capture_output=True,
                        text=True, cwd=ROOT)
    assert ok.returncode == 0, ok.stderr
    data = json.loads((tmp_path / "sglang" / "9.9.json").read_text())
    assert data["release"] == "9.9" and "DSparkMiniMaxDraftModel" in data["tables"]["speculative_models"]["values"]
    bad = subprocess.run([*run, "vllm", "9.9", str(tmp_path), "--out", str(tmp_path)], capture_output=True, text=True,
                         cwd=ROOT)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and len(bad.stderr.splitlines()) == 1


# ---------------------------------------------------------------- the engines answer from the extracted data


@pytest.mark.parametrize("release, lines", [("5.24.0", "2220-2239, 3982"), ("5.25.0", "2218-2237, 3984")])
def test_minimax_on_transformers_is_refused_at_both_releases(release, lines):
    from indexer.engines.base import Side

    def side(name, model_type):
        return Side(name=name, vocab_size=32000, vocab_size_transformers=32000, tok={"vocab_sha256": "x"},
                    model_type=model_type, arch=ArchFacts(model_type=model_type))

    for model_type, refused in (("minimax", True), ("minimax_m2", False), ("llama", False)):
        v = check_pair(side("t", model_type), side("d", "llama"), {"transformers": release})["verdicts"]["transformers"]
        assert (v["outcome"] == "refused") is refused, (model_type, v)
        if refused:
            assert v["version"] == release
            assert "Assisted decoding requires a cache" in v["reasons"][0]
            assert v["reasons"][0].endswith(f"(src/transformers/generation/utils.py:{lines})")


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_every_head_class_of_each_release_s_registry_is_in_our_table(engine):
    e = ENGINES[engine]
    for release in e.releases:
        registry = tables.heads(engine, release)
        ours = e.at(release).heads.head_classes
        assert registry and ours == registry, release


def test_vllm_0_34_loads_an_eagle3_qwen3_vl_head_citing_its_registry_line():
    from indexer.engines.heads import loads, parse_head

    head = parse_head({"architectures": ["Eagle3Qwen3vlForCausalLM"], "model_type": "llama", "hidden_size": 64,
                       "vocab_size": 100, "draft_vocab_size": 100, "num_hidden_layers": 1}, "o/h")
    ok, detail, source, method = loads(head, "vllm")
    line = tables.values("vllm", "0.34.0", "speculative_models")["Eagle3Qwen3vlForCausalLM"]["line"]
    assert ok and method == "eagle3" and source == f"model_executor/models/registry.py:{line}", detail


@pytest.mark.parametrize("release", ["0.33.0", "0.34.0"])
def test_vllm_s_dropped_models_load_through_the_transformers_backend_or_are_refused(release):
    from indexer.engines.base import Side
    from indexer.engines.vllm import dropped

    backend, refused = dropped(release)
    assert backend["minimax"] == ("MiniMaxForCausalLM", "0.23.0") and "bamba" in backend
    assert refused == {"mpt": ("MptForCausalLM", "0.28.0")}  # its modeling file passes neither backend check

    def side(name, model_type):
        return Side(name=name, vocab_size=32000, vocab_size_transformers=32000, vllm_vocab_size=32000,
                    tok={"vocab_sha256": "x"}, model_type=model_type, arch=ArchFacts(model_type=model_type))

    v = check_pair(side("t", "mpt"), side("d", "llama"), {"vllm": release})["verdicts"]["vllm"]
    assert v["outcome"] == "refused" and "was supported in vLLM until v0.28.0" in v["reasons"][0]
    v = check_pair(side("t", "minimax"), side("d", "llama"), {"vllm": release})["verdicts"]["vllm"]
    assert v["outcome"] == "works" and any("Transformers modeling backend" in r for r in v["reasons"])
