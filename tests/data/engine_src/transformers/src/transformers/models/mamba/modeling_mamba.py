class MambaPreTrainedModel:
    _is_stateful = True
