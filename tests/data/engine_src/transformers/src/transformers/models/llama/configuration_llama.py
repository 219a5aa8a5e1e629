class LlamaConfig:
    pass
