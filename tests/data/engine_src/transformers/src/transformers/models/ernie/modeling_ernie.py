class ErniePreTrainedModel:
    _keys_to_ignore_on_load_unexpected = None


class ErnieModel(ErniePreTrainedModel):
    def __init__(self, config):
        self._keys_to_ignore_on_load_unexpected = [
            rf"layers\.{i}\." for i in range(config.num_hidden_layers, config.num_hidden_layers + config.num_mtp_layers)
        ]


class ErnieForCausalLM(ErniePreTrainedModel):
    pass
