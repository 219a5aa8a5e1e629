import gguf


class ModelBase:
    pass


class TextModel(ModelBase):
    pass


class MmprojModel(ModelBase):
    model_arch = gguf.MODEL_ARCH.MMPROJ
