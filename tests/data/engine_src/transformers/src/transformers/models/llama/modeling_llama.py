class LlamaPreTrainedModel:
    _is_stateful = False
