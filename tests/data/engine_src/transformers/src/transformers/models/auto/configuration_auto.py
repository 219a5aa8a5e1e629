from collections import OrderedDict

CONFIG_MAPPING_NAMES = OrderedDict(
    [
        ("llama", "LlamaConfig"),
        ("mamba", "MambaConfig"),
        ("mamba_vision", "MambaVisionConfig"),
    ]
)
