"""The shapes of the models in the shared speed-up measurements, from each repo's config.json on the Hub.

Fields as indexer.speed.model.Shape reads them: total parameters (the Hub's safetensors count, rounded), active
parameters (MoE), layers, hidden size, vocabulary, tied embeddings, experts and experts per token, and KV elements
per token (2 x layers x num_key_value_heads x head_dim). Family and author decide the draft's relation.
"""

from indexer.speed.model import FAMILY, OTHER, SIBLING, Shape, kin, tuning
from indexer.vocab.params import speed_facts


def _dense(params, layers, hidden, vocab, tied, kv_heads, head_dim):
    return Shape(params=int(params), layers=layers, hidden=hidden, vocab=vocab, tied=tied,
                 kv_per_token=2 * layers * kv_heads * head_dim)


def _delta_net(k_heads, v_heads, k_dim, v_dim, kernel):
    """Bytes of one Gated DeltaNet layer's state, from its config's linear_* keys (vocab.params.speed_facts)."""
    return speed_facts({"hidden_size": 1, "linear_num_key_heads": k_heads, "linear_num_value_heads": v_heads,
                        "linear_key_head_dim": k_dim, "linear_value_head_dim": v_dim,
                        "linear_conv_kernel_dim": kernel, "num_hidden_layers": 2}, kv_layers=1)["state_bytes"]


# https://huggingface.co/<repo>/blob/main/config.json for each id
SHAPES = {
    "Qwen/Qwen2.5-0.5B-Instruct": _dense(494e6, 24, 896, 151936, True, 2, 64),
    "Qwen/Qwen2.5-1.5B-Instruct": _dense(1.54e9, 28, 1536, 151936, True, 2, 128),
    "Qwen/Qwen2.5-3B-Instruct": _dense(3.09e9, 36, 2048, 151936, True, 2, 128),
    "Qwen/Qwen2.5-7B-Instruct": _dense(7.62e9, 28, 3584, 152064, False, 4, 128),
    "Qwen/Qwen2.5-14B-Instruct": _dense(14.7e9, 48, 5120, 152064, False, 8, 128),
    "Qwen/Qwen2.5-32B-Instruct": _dense(32.8e9, 64, 5120, 152064, False, 8, 128),
    "Qwen/Qwen2.5-72B-Instruct": _dense(72.7e9, 80, 8192, 152064, False, 8, 128),
    "Qwen/Qwen2.5-Coder-0.5B-Instruct": _dense(494e6, 24, 896, 151936, True, 2, 64),
    "Qwen/Qwen2.5-Coder-1.5B-Instruct": _dense(1.54e9, 28, 1536, 151936, True, 2, 128),
    "Qwen/Qwen2.5-Coder-32B-Instruct": _dense(32.8e9, 64, 5120, 152064, False, 8, 128),
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": _dense(32.8e9, 64, 5120, 152064, False, 8, 128),
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B": _dense(1.78e9, 28, 1536, 151936, False, 2, 128),
    "deepseek-ai/DeepSeek-R1-Distill-Llama-70B": _dense(70.6e9, 80, 8192, 128256, False, 8, 128),
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B": _dense(8.03e9, 32, 4096, 128256, False, 8, 128),
    "meta-llama/Llama-3.1-8B-Instruct": _dense(8.03e9, 32, 4096, 128256, False, 8, 128),
    "meta-llama/Llama-3.2-1B-Instruct": _dense(1.24e9, 16, 2048, 128256, True, 8, 64),
    "meta-llama/Llama-3.2-3B-Instruct": _dense(3.21e9, 28, 3072, 128256, True, 8, 128),
    "codellama/CodeLlama-34b-Instruct-hf": _dense(33.7e9, 48, 8192, 32000, False, 8, 128),
    "codellama/CodeLlama-7b-Instruct-hf": _dense(6.74e9, 32, 4096, 32016, False, 32, 128),
    "lmsys/vicuna-7b-v1.3": _dense(6.74e9, 32, 4096, 32000, False, 32, 128),
    "lmsys/vicuna-13b-v1.3": _dense(13.0e9, 40, 5120, 32000, False, 40, 128),
    "double7/vicuna-68m": _dense(68e6, 2, 768, 32000, False, 12, 64),
    # Qwen3.6-35B-A3B: 40 layers (30 Gated DeltaNet, 10 full attention with 2 KV heads of 256), 256 experts, 8
    # routed + 1 shared per token, about 3B active. A Gated DeltaNet layer's state (vocab.params.speed_facts):
    # 16 key and 32 value heads of 128, a kernel of 4; Qwen3.5-0.8B's 16 and 16 heads of 128.
    "Qwen/Qwen3.6-35B-A3B": Shape(params=int(35.1e9), active=int(3.2e9), layers=40, hidden=2048, vocab=248320,
                                  tied=False, experts=256, experts_per_token=8, kv_per_token=2 * 10 * 2 * 256,
                                  state_layers=30, state_bytes=30 * _delta_net(16, 32, 128, 128, 4)),
    "Qwen/Qwen3.5-0.8B": Shape(params=int(0.85e9), layers=24, hidden=1024, vocab=248320, tied=True,
                               kv_per_token=2 * 6 * 2 * 256, state_layers=18,
                               state_bytes=18 * _delta_net(16, 16, 128, 128, 4)),
}

_FAMILY = {"Qwen/Qwen2.5": "qwen2.5", "deepseek-ai/DeepSeek-R1-Distill-Qwen": "r1-qwen",
           "deepseek-ai/DeepSeek-R1-Distill-Llama": "r1-llama", "meta-llama/Llama-3": "llama3",
           "codellama/": "codellama", "lmsys/vicuna": "vicuna", "double7/vicuna": "vicuna", "Qwen/Qwen3": "qwen3.5"}


def family(repo: str) -> str | None:
    return next((f for prefix, f in _FAMILY.items() if repo.startswith(prefix)), None)


# Every model above is tuned for chat (vicuna-68m too: a ShareGPT fine-tune); these write thinking traces (their
# tokenizers add <think>): DeepSeek-R1's distills and the Qwen3.5/3.6 line.
REASONS = ("deepseek-ai/DeepSeek-R1-Distill-", "Qwen/Qwen3.5-", "Qwen/Qwen3.6-")


def reasons(repo: str) -> bool:
    return repo.startswith(REASONS)


def relation_of(target: str, draft: str) -> str:
    """sibling: same family and author (an official size of the same line); family: same family; else other; a
    sibling tuned for other text than the target's reads as family (``model.kin``)."""
    if family(target) != family(draft) or family(target) is None:
        return OTHER
    coder_t, coder_d = "Coder" in target, "Coder" in draft
    if target.split("/")[0] == draft.split("/")[0] and coder_t == coder_d:
        return kin(SIBLING, tuning(True, True, reasons(target), reasons(draft)))
    return FAMILY
