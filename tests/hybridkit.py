"""Model directories for the converter paths of state-space, hybrid and Gemma 3n/4 architectures:
a real tokenizer from ../shared/corpus beside a config.json written from the public config fields of each family
(layer patterns and the fields the converter's classes read; sizes as in the real files, vocab_size chosen to
exercise the padding). ``tests/data/gguf_hybrid_oracle.json`` holds what llama.cpp's own converter classes
wrote for each (``benchmarks/gguf_hybrid_real.py``); ``tests/test_gguf_hybrid.py`` holds the prediction to it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "models"
ORACLE = Path(__file__).resolve().parent / "data" / "gguf_hybrid_oracle.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "vocab.json", "merges.txt", "tokenizer.model")

NEOX = "drcege__RedPajama-INCITE-7B-Base"  # GPT-NeoX BPE tokenizer.json: what Mamba and Mamba-2 repos ship
VICUNA = "Josue1855__vicuna"  # tokenizer.model only
QWEN = "infinityarpan__qwen-25-api__Qwen2.5-0.5B-Instruct"  # vocab.json + merges.txt only
FALCON = "Alikhan13r__falcon-180B-chat"
TINYLLAMA = "swayam8624__nanoquant-private__TinyLlama-1.1B-Chat-v1.0"  # tokenizer.json and tokenizer.model
MISTRAL = "MonilSompura__MistralAI"  # byte-fallback BPE tokenizer.json, no tokenizer.model
SMOL = "AtulDeshpande09__Fine-tuned-Economics-QA-using-smolLM__model"
LLAMA2 = "isatyabrata__llama2-7b-chat-hf"  # byte-fallback BPE tokenizer.json, no tokenizer.model
SWE = "BirgerMoell__swe-gpt"  # an added token at an id >= vocab_size

MAMBA = {"architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 768,
         "intermediate_size": 1536, "state_size": 16, "num_hidden_layers": 24, "conv_kernel": 4, "expand": 2,
         "time_step_rank": 48, "layer_norm_epsilon": 1e-5, "pad_vocab_size_multiple": 8, "use_bias": False,
         "use_conv_bias": True}
FALCON_MAMBA = {**MAMBA, "architectures": ["FalconMambaForCausalLM"], "model_type": "falcon_mamba",
                "hidden_size": 4096, "intermediate_size": 8192, "num_hidden_layers": 64, "time_step_rank": 256}
FALCON_MAMBA.pop("pad_vocab_size_multiple")
MAMBA2 = {"architectures": ["Mamba2ForCausalLM"], "model_type": "mamba2", "hidden_size": 4096,
          "num_hidden_layers": 64, "n_groups": 8, "num_heads": 128, "head_dim": 64, "state_size": 128, "expand": 2,
          "conv_kernel": 4, "layer_norm_epsilon": 1e-5, "rms_norm": True, "residual_in_fp32": True,
          "tie_word_embeddings": False}
GRANITE_H = {"architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid",
             "hidden_size": 1536, "intermediate_size": 512, "num_hidden_layers": 4, "num_attention_heads": 12,
             "num_key_value_heads": 4, "layer_types": ["mamba", "mamba", "mamba", "attention"],
             "mamba_d_conv": 4, "mamba_d_head": 64, "mamba_d_state": 128, "mamba_expand": 2, "mamba_n_groups": 1,
             "mamba_n_heads": 48, "mamba_chunk_size": 256, "num_local_experts": 64, "num_experts_per_tok": 6,
             "shared_intermediate_size": 1024, "embedding_multiplier": 12, "logits_scaling": 6,
             "residual_multiplier": 0.22, "attention_multiplier": 0.0078125, "rms_norm_eps": 1e-5,
             "max_position_embeddings": 131072, "position_embedding_type": "nope", "rope_theta": 10000}
BAMBA = {"architectures": ["BambaForCausalLM"], "model_type": "bamba", "hidden_size": 4096,
         "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
         "attn_layer_indices": [9, 18, 27], "mamba_d_conv": 4, "mamba_d_head": 64, "mamba_d_state": 128,
         "mamba_expand": 2, "mamba_n_groups": 1, "mamba_n_heads": 128, "mamba_chunk_size": 256,
         "rms_norm_eps": 1e-5, "rope_theta": 10000, "max_position_embeddings": 262144}
NEMOTRON_H = {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "hidden_size": 4480,
              "intermediate_size": 15680, "num_hidden_layers": 8, "hybrid_override_pattern": "M-M-M*-M",
              "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128, "mamba_num_heads": 128,
              "mamba_head_dim": 80, "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4, "expand": 2,
              "chunk_size": 128, "layer_norm_epsilon": 1e-5, "max_position_embeddings": 131072,
              "mlp_hidden_act": "relu2", "mamba_hidden_act": "silu", "use_bias": False, "use_conv_bias": True}
JAMBA = {"architectures": ["JambaForCausalLM"], "model_type": "jamba", "hidden_size": 4096,
         "intermediate_size": 14336, "num_hidden_layers": 8, "num_attention_heads": 32, "num_key_value_heads": 8,
         "attn_layer_period": 8, "attn_layer_offset": 4, "expert_layer_period": 2, "expert_layer_offset": 1,
         "num_experts": 16, "num_experts_per_tok": 2, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2,
         "mamba_dt_rank": 256, "mamba_conv_bias": True, "mamba_proj_bias": False, "rms_norm_eps": 1e-6,
         "max_position_embeddings": 262144}
GEMMA3N_TEXT = {"model_type": "gemma3n_text", "hidden_size": 2048, "num_hidden_layers": 5, "num_attention_heads": 8,
                "num_key_value_heads": 2, "head_dim": 256, "hidden_size_per_layer_input": 256,
                "altup_num_inputs": 4, "altup_active_idx": 0, "laurel_rank": 64, "num_kv_shared_layers": 2,
                "sliding_window": 512, "layer_types": ["sliding_attention"] * 4 + ["full_attention"],
                "max_position_embeddings": 32768}
GEMMA3N = {"architectures": ["Gemma3nForConditionalGeneration"], "model_type": "gemma3n", "vision_config": {},
           "audio_config": {}, "text_config": GEMMA3N_TEXT}
GEMMA4 = {"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4", "vision_config": {},
          "text_config": {"model_type": "gemma4_text", "hidden_size": 2560, "num_hidden_layers": 6,
                          "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256, "global_head_dim": 512,
                          "num_kv_shared_layers": 0, "sliding_window": 1024,
                          "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
                          "max_position_embeddings": 262144}}


def _text(cfg: dict) -> dict:
    return cfg["text_config"] if "text_config" in cfg else cfg


def _with(cfg: dict, vocab_size: int | None = None, drop: tuple = (), **fields) -> dict:
    out = json.loads(json.dumps(cfg))
    text = _text(out)
    for key in drop:
        text.pop(key, None)
    text.update(fields)
    if vocab_size is not None:
        text["vocab_size"] = vocab_size
    return out


GLM4_MOE = {"architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "hidden_size": 4096,
            "num_hidden_layers": 4, "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128,
            "n_routed_experts": 128, "num_experts_per_tok": 8, "first_k_dense_replace": 1,
            "max_position_embeddings": 131072}
GLM4 = {"architectures": ["Glm4ForCausalLM"], "model_type": "glm4", "hidden_size": 4096, "num_hidden_layers": 4,
        "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128, "max_position_embeddings": 32768}
GLM_ADDED = {"[gMASK]": 151665, "<|user|>": 151666, "<|observation|>": 151667}  # GLM's chat tokens, as added ones

# name -> (corpus directory whose tokenizer files are copied, config.json[, added tokens written into
# added_tokens.json and tokenizer_config.json's added_tokens_decoder as special])
CASES = {
    "mamba-neox": (NEOX, _with(MAMBA, 50277)),  # tokenizer.json -> GPT-2 BPE, 50277 padded to 50280
    "mamba-spm": (VICUNA, _with(MAMBA, 32001)),  # tokenizer.model -> SentencePiece, padded to 32008
    "mamba-vocab-json-only": (QWEN, _with(MAMBA, 151936)),  # no tokenizer.json/.model: the built-in vocabulary
    "falcon-mamba": (FALCON, _with(FALCON_MAMBA, 65024)),
    "mamba2-neox": (NEOX, _with(MAMBA2, 50277)),  # padded to a multiple of 16: 50288
    "mamba2-both-files": (TINYLLAMA, _with(MAMBA2, 32000)),  # tokenizer.model wins over tokenizer.json
    "mamba2-mistral-bpe": (MISTRAL, _with(MAMBA2, 32000)),  # a Llama BPE on the GPT-2 path: unknown pre hash
    "granite-h": (SMOL, _with(GRANITE_H, 49153)),  # Mamba layers: padded to 8
    "granite-h-attention-only": (NEOX, _with(GRANITE_H, 50277, layer_types=["attention"] * 4)),  # no padding
    "bamba": (NEOX, _with(BAMBA, 50277)),
    "bamba-no-attention-layers": (NEOX, _with(BAMBA, 50277, drop=("attn_layer_indices",))),
    "nemotron-h-neox": (NEOX, _with(NEMOTRON_H, 50277)),
    "nemotron-h-qwen": (QWEN, _with(NEMOTRON_H, 151665)),
    "nemotron-h-added-beyond": (SWE, _with(NEMOTRON_H, 50257)),
    "jamba-spm": (VICUNA, _with(JAMBA, 32001)),
    "jamba-llama-bpe": (LLAMA2, _with(JAMBA, 32000)),
    "jamba-neox": (NEOX, _with(JAMBA, 50432)),  # not a byte-fallback BPE: LlamaHfVocab refuses
    "gemma3n-spm": (TINYLLAMA, _with(GEMMA3N, 32000, vocab_size_per_layer_input=31000)),
    "gemma3n-qwen": (QWEN, _with(GEMMA3N, 151936)),
    "gemma3n-no-altup": (QWEN, _with(GEMMA3N, 151936, drop=("altup_num_inputs",))),
    "gemma4-llama-bpe": (LLAMA2, _with(GEMMA4, 32000)),
    "gemma4-neox": (NEOX, _with(GEMMA4, 50432)),
    "glm4-moe": (QWEN, _with(GLM4_MOE, 151936), GLM_ADDED),
    "glm4-moe-without-gmask": (QWEN, _with(GLM4_MOE, 151936)),  # KeyError: '[gMASK]'
    "glm4": (QWEN, _with(GLM4, 151936), GLM_ADDED),
    "glm4-without-user": (QWEN, _with(GLM4, 151936)),  # KeyError: '<|user|>'
}


def write_case(root: Path, name: str) -> Path:
    """The case's model directory under ``root``: the corpus tokenizer files and the config."""
    source, config, *extra = CASES[name]
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    for f in TOKENIZER_FILES:
        if (CORPUS / source / f).is_file():
            shutil.copy(CORPUS / source / f, d / f)
    (d / "config.json").write_text(json.dumps(config))
    for content, tid in (extra[0] if extra else {}).items():
        atj = json.loads((d / "added_tokens.json").read_text())
        (d / "added_tokens.json").write_text(json.dumps({**atj, content: tid}))
        tc = json.loads((d / "tokenizer_config.json").read_text())
        tc["added_tokens_decoder"][str(tid)] = {"content": content, "lstrip": False, "normalized": False,
                                                "rstrip": False, "single_word": False, "special": True}
        (d / "tokenizer_config.json").write_text(json.dumps(tc))
    return d
