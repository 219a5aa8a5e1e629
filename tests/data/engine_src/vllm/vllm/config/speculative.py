from typing import Literal

MTPModelTypes = Literal[
    "deepseek_mtp",
    "mtp",
]
EagleModelTypes = Literal["eagle", "eagle3", MTPModelTypes]
SpeculativeMethod = Literal["ngram", "draft_model", EagleModelTypes]


class SpeculativeConfig:
    @staticmethod
    def hf_config_override(hf_config):
        initial_architecture = hf_config.architectures[0]
        if hf_config.model_type in ("deepseek_v3", "deepseek_v32"):
            hf_config.model_type = "deepseek_mtp"
        if initial_architecture == "MiMoForCausalLM":
            hf_config.model_type = "mimo_mtp"
        return hf_config
