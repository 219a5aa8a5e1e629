class MambaConfig:
    pass


class MambaVisionConfig:
    pass
