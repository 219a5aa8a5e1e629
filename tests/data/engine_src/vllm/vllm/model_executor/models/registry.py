# A tiny registry in vLLM's shape (model_executor/models/registry.py).
_TEXT_GENERATION_MODELS = {
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
}

_MULTIMODAL_MODELS = {
    "LlavaForConditionalGeneration": ("llava", "LlavaForConditionalGeneration"),
}

_SPECULATIVE_DECODING_MODELS = {
    "ExtractHiddenStatesModel": ("extract_hidden_states", "ExtractHiddenStatesModel"),
    "EagleLlamaForCausalLM": ("llama_eagle", "EagleLlamaForCausalLM"),
    "Eagle3Qwen3vlForCausalLM": ("llama_eagle3", "Eagle3LlamaForCausalLM"),
    "DFlashDraftModel": ("qwen3_dflash", "DFlashQwen3ForCausalLM"),
    "MuseGlimmerAssistantModel": ("qwen3_dflash", "DFlashQwen3ForCausalLM"),
    "Qwen3DSparkModel": (
        "qwen3_dspark",
        "Qwen3DSparkModel",
    ),
    "DeepSeekMTPModel": ("deepseek_mtp", "DeepSeekMTP"),
}

_TRANSFORMERS_SUPPORTED_MODELS = {
    "OlmoForCausalLM": ("transformers", "TransformersForCausalLM"),
}

_PREVIOUSLY_SUPPORTED_MODELS = {
    "BambaForCausalLM": "0.23.0",
    "MiniMaxForCausalLM": "0.23.0",
}

_LATE_MODELS = {
    "GraniteForCausalLM": ("llava", "GraniteForCausalLM"),
    "QwenVLForConditionalGeneration": ("vllm.models.qwen", "QwenVL"),
}

_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
    **_LATE_MODELS,
    **_MULTIMODAL_MODELS,
    **_SPECULATIVE_DECODING_MODELS,
    **_TRANSFORMERS_SUPPORTED_MODELS,
}
