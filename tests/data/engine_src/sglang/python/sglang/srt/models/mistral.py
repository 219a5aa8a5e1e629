from sglang.srt.models.llama import LlamaForCausalLM as Base


class MistralForCausalLM(Base):
    pass


class MinimaxLike:
    def set_dspark_layers_to_capture(self, layer_ids):
        pass


EntryClass = [MistralForCausalLM, MinimaxLike]
