from torch import nn
from vllm.model_executor.models import llama


class LlavaForConditionalGeneration(llama.LlamaForCausalLM):
    pass


class GraniteForCausalLM(nn.Module):
    pass
