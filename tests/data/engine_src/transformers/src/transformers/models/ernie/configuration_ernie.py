class ErnieConfig:
    num_mtp_layers: int | None = None
