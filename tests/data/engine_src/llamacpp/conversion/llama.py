from .base import ModelBase, TextModel


@ModelBase.register("LlamaForCausalLM", "MistralForCausalLM")
class LlamaModel(TextModel):
    pass


@ModelBase.register("MistralForCausalLM")
class MistralModel(LlamaModel):
    pass
