from collections import OrderedDict

MODEL_FOR_CAUSAL_LM_MAPPING_NAMES = OrderedDict(
    [
        ("llama", "LlamaForCausalLM"),
        ("mamba", "MambaForCausalLM"),
        ("minimax", "MiniMaxForCausalLM"),
        ("minimax_m2", "MiniMaxM2ForCausalLM"),
        ("rwkv", "RwkvForCausalLM"),
    ]
)
