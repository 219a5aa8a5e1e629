class DeepseekV3PreTrainedModel:
    _keys_to_ignore_on_load_unexpected = [r"model\.layers\.61.*"]


class DeepseekV3ForCausalLM(DeepseekV3PreTrainedModel):
    pass
