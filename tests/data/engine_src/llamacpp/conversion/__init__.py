# A tiny converter registry in llama.cpp's shape (conversion/__init__.py).
TEXT_MODEL_MAP: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "llama",
    "SpeechForConditionalGeneration": "speech",
    "GhostForCausalLM": "llama",
}
