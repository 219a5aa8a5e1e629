from .mamba import Model as MambaModel


class Model(MambaModel):
    pass
