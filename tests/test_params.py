"""Parameter estimates against the published sizes of real models."""

import json

import pytest
from conftest import MODELS, needs_corpus

from indexer.vocab.modelconfig import read_config
from indexer.vocab.params import best_params, estimate_from_config, estimate_from_name

# Corpus directory -> the published parameter count of the model it copies (the Hub's safetensors total,
# or the model card's figure where the checkpoint is .bin only).
PUBLISHED = {
    "Alikhan13r__falcon-180B-chat": 180e9,  # Falcon-180B model card
    "AtulDeshpande09__Fine-tuned-Economics-QA-using-smolLM__model": 361_821_120,  # SmolLM2-360M
    "BirgerMoell__swe-gpt": 124_439_808,  # GPT-2 small
    "CHJCHJCH__microsoft-DialoGPT-small": 124_439_808,  # DialoGPT-small (GPT-2 small)
    "Josue1855__vicuna": 13_015_864_320,  # LLaMA-13B / Vicuna-13B
    "KEA-5th-Myaong__kea_gen_model_ver2": 10.8e9,  # EEVE-Korean-10.8B
    "MonilSompura__MistralAI": 7_241_732_096,  # Mistral-7B-Instruct-v0.2
    "UmerKhan45__Super-GPT": 33.3e9,  # deepseek-coder-33b-base
    "YouZiSoftware__lzlv_70b_fp16_hf": 68_976_648_192,  # Llama-2-70b
    "YouriLalain__2PRYMMAL-Yi1.5-6B-SLERP": 6_061_035_520,  # Yi-1.5-6B
    "YouriLalain__3PRYMMAL-PHI3-3B-SLERP": 3_821_079_552,  # Phi-3-mini-4k
    "derived__Mistral-7B-Instruct-v0.2__chatml32002": 7_241_732_096,
    "derived__Qwen2.5-0.5B-Instruct__swap-im-ids": 494_032_768,  # Qwen2.5-0.5B
    "derived__Qwen2.5-VL-style__from-Qwen2.5-0.5B-Instruct": 494_032_768,  # its text model
    "derived__TinyLlama-1.1B-Chat-v1.0__sentencepiece-only": 1_100_048_384,
    "drcege__RedPajama-INCITE-7B-Base": 6_857_302_016,  # RedPajama-INCITE-7B
    "fetchwiki__deepcogito-cogito-v1-preview-qwen-14B": 14_770_033_664,  # Qwen2.5-14B
    "gmars__CodeFuse-CodeLlama-34B": 33_743_970_304,  # CodeLlama-34B
    "infinityarpan__qwen-25-api__Qwen2.5-0.5B-Instruct": 494_032_768,
    "isatyabrata__llama2-7b-chat-hf": 6_738_415_616,  # Llama-2-7b
    "kamgueblondin__testGPT": 11_846_072_320,  # Pythia-12B
    "ravenakin__lama": 6_738_415_616,
    "swayam8624__nanoquant-private__TinyLlama-1.1B-Chat-v1.0": 1_100_048_384,  # TinyLlama-1.1B
    "thrishalaa__Mental-Health-ChatBot": 6_738_415_616,
}


@needs_corpus
def test_every_corpus_config_is_within_3_percent_of_the_published_size():
    dirs = sorted(p.name for p in MODELS.iterdir() if (p / "config.json").is_file())
    assert set(dirs) == set(PUBLISHED), "a corpus directory without a published size in this test"
    off = {}
    for name in dirs:
        est = estimate_from_config(json.loads((MODELS / name / "config.json").read_text()))
        assert est is not None and est.source == "config" and est.active is None, name
        if abs(est.total / PUBLISHED[name] - 1) > 0.03:
            off[name] = (est.total, PUBLISHED[name])
    assert off == {}


@needs_corpus
def test_read_config_carries_the_estimate():
    facts = read_config(MODELS / "isatyabrata__llama2-7b-chat-hf")
    assert facts.params_estimate_source == "config"
    assert abs(facts.params_estimate / 6_738_415_616 - 1) < 0.001
    assert facts.params_active_estimate is None
    assert set(facts.to_dict()) >= {"params_estimate", "params_active_estimate", "params_estimate_source"}


MIXTRAL_8X7B = {"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000, "num_local_experts": 8,
                "num_experts_per_tok": 2}
QWEN3_30B_A3B = {"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
                 "moe_intermediate_size": 768, "num_hidden_layers": 48, "num_attention_heads": 32,
                 "num_key_value_heads": 4, "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8,
                 "vocab_size": 151936, "decoder_sparse_step": 1, "mlp_only_layers": [],
                 "tie_word_embeddings": False}
DEEPSEEK_V3 = {"model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
               "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
               "num_key_value_heads": 128, "n_routed_experts": 256, "n_shared_experts": 1,
               "num_experts_per_tok": 8, "first_k_dense_replace": 3, "moe_layer_freq": 1, "q_lora_rank": 1536,
               "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
               "vocab_size": 129280}
QWEN15_MOE_A27B = {"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632,
                   "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_experts": 60,
                   "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_attention_heads": 16,
                   "num_key_value_heads": 16, "vocab_size": 151936, "decoder_sparse_step": 1}


@pytest.mark.parametrize(("config", "total", "active"), [
    (MIXTRAL_8X7B, 46.7e9, 12.9e9),  # Mixtral-8x7B model card
    (QWEN3_30B_A3B, 30.5e9, 3.3e9),  # Qwen3-30B-A3B model card
    (DEEPSEEK_V3, 671e9, 37e9),  # DeepSeek-V3 report (without the MTP module)
    (QWEN15_MOE_A27B, 14.3e9, 2.7e9),  # Qwen1.5-MoE-A2.7B model card
], ids=["mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3", "qwen1.5-moe-a2.7b"])
def test_mixture_of_experts_keeps_total_and_active_apart(config, total, active):
    est = estimate_from_config(config)
    assert abs(est.total / total - 1) < 0.03
    assert abs(est.active / active - 1) < 0.03


@pytest.mark.parametrize(("config", "published"), [
    ({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
      "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256}, 8.03e9),  # Llama-3-8B
    ({"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
      "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064}, 7.62e9),  # Qwen2.5-7B
    ({"model_type": "gemma2", "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
      "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000}, 2.61e9),
    ({"model_type": "falcon", "hidden_size": 4544, "num_hidden_layers": 32, "num_attention_heads": 71,
      "multi_query": True, "parallel_attn": True, "new_decoder_architecture": False, "bias": False,
      "vocab_size": 65024}, 6.92e9),  # Falcon-7B: one kv head
    ({"model_type": "bloom", "n_embed": 1024, "n_layer": 24, "num_attention_heads": 16,
      "vocab_size": 250880}, 559e6),  # BLOOM-560m
    ({"model_type": "phi", "hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 32,
      "num_attention_heads": 32, "vocab_size": 51200}, 2.78e9),  # Phi-2
    ({"model_type": "gpt2", "n_embd": 1600, "n_layer": 48, "n_head": 25, "n_positions": 1024,
      "vocab_size": 50257}, 1.558e9),  # GPT-2 XL
    ({"model_type": "opt", "hidden_size": 2048, "ffn_dim": 8192, "num_hidden_layers": 24,
      "num_attention_heads": 32, "vocab_size": 50272, "max_position_embeddings": 2048}, 1.316e9),  # OPT-1.3B
], ids=["llama3-8b", "qwen2.5-7b", "gemma2-2b", "falcon-7b", "bloom-560m", "phi-2", "gpt2-xl", "opt-1.3b"])
def test_dense_architectures_beyond_the_corpus(config, published):
    assert abs(estimate_from_config(config).total / published - 1) < 0.03


def test_tied_embeddings_follow_the_config_then_the_architecture_default():
    llama = {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22,
             "num_attention_heads": 32, "num_key_value_heads": 4, "vocab_size": 32000}
    untied = estimate_from_config(llama).total  # LlamaConfig default: untied
    tied = estimate_from_config({**llama, "tie_word_embeddings": True}).total
    assert untied - tied == 32000 * 2048
    gemma = {**llama, "model_type": "gemma"}  # GemmaConfig default: tied
    assert estimate_from_config(gemma).total == tied


def test_gated_mlp_has_three_matrices_and_gqa_shrinks_attention():
    base = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 1,
            "num_attention_heads": 16, "vocab_size": 1000, "tie_word_embeddings": True}
    gated = estimate_from_config(base).total
    plain = estimate_from_config({**base, "model_type": "gpt_neox"}).total  # two matrices, biases, LayerNorms
    assert gated - plain > 1024 * 4096 - 10 * 4096
    gqa = estimate_from_config({**base, "num_key_value_heads": 4}).total
    assert gated - gqa == 2 * 1024 * (16 - 4) * 64


def test_multimodal_configs_are_estimated_on_their_text_config():
    text = {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
            "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936}
    wrapped = {"model_type": "llava", "text_config": text, "tie_word_embeddings": True,
               "vision_config": {"hidden_size": 1280, "num_hidden_layers": 32}}
    assert abs(estimate_from_config(wrapped).total / 494_032_768 - 1) < 0.001


def test_configs_without_sizes_give_no_estimate():
    assert estimate_from_config({"model_type": "llama"}) is None
    assert estimate_from_config({"hidden_size": "big", "num_hidden_layers": 2, "vocab_size": 10}) is None


@pytest.mark.parametrize(("repo_id", "total", "active"), [
    ("Qwen/Qwen2.5-7B-Instruct", 7e9, None),
    ("Qwen/Qwen2.5-1.5b-instruct", 1.5e9, None),
    ("HuggingFaceTB/SmolLM-350M", 350e6, None),
    ("Qwen/Qwen3-30B-A3B", 30e9, 3e9),
    ("mistralai/Mixtral-8x7B-v0.1", 56e9, None),
    ("TheBloke/Llama-2-7B-Chat-GGUF", 7e9, None),
    ("microsoft/Phi-3-mini-4k-instruct", None, None),  # 4k is a context length
    ("mistralai/Mistral-Nemo-v0.2", None, None),
    ("01-ai/Yi-1.5-6B-Chat", 6e9, None),
])
def test_sizes_in_repo_names(repo_id, total, active):
    est = estimate_from_name(repo_id)
    if total is None:
        assert est is None
    else:
        assert (est.total, est.active, est.source) == (int(total), active and int(active), "name")


def test_best_params_prefers_the_hub_then_config_then_name():
    assert best_params(5, 6, "config", "a/m-7B").source == "safetensors"
    assert best_params(None, 6, "config", "a/m-7B").total == 6
    assert best_params(None, None, None, "a/m-7B").total == 7e9
    assert best_params(None, None, None, "a/m") is None
