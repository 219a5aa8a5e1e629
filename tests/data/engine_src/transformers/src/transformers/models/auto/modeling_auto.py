from collections import OrderedDict

MODEL_FOR_CAUSAL_LM_MAPPING_NAMES = OrderedDict(
    [
        ("deepseek_v3", "DeepseekV3ForCausalLM"),
        ("ernie", "ErnieForCausalLM"),
        ("llama", "LlamaForCausalLM"),
        ("mamba", "MambaForCausalLM"),
        ("minimax", "MiniMaxForCausalLM"),
        ("minimax_m2", "MiniMaxM2ForCausalLM"),
        ("rwkv", "RwkvForCausalLM"),
        ("sarvam_mla", "DeepseekV3ForCausalLM"),
    ]
)
