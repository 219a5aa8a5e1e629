from vllm.model_executor.models.llava import LlavaForConditionalGeneration as QwenVL

__all__ = ["QwenVL"]
