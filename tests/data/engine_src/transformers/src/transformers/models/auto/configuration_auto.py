from collections import OrderedDict

CONFIG_MAPPING_NAMES = OrderedDict(
    [
        ("deepseek_v3", "DeepseekV3Config"),
        ("ernie", "ErnieConfig"),
        ("llama", "LlamaConfig"),
        ("mamba", "MambaConfig"),
        ("mamba_vision", "MambaVisionConfig"),
        ("sarvam_mla", "SarvamMLAConfig"),
        ("stepper", "StepperTextConfig"),
    ]
)
