MIMO_V2_MODEL_ARCHS = (
    "MiMoV2ForCausalLM",
    "MiMoV2FlashForCausalLM",
)


class ModelConfig:
    def _config_draft_model(self, is_draft_model):
        if is_draft_model and self.hf_config.architectures[0] == "DeepseekV3ForCausalLM":
            self.hf_config.architectures[0] = "DeepseekV3ForCausalLMNextN"
        if is_draft_model and self.hf_config.architectures[0] in MIMO_V2_MODEL_ARCHS:
            self.hf_config.architectures[0] = "MiMoV2MTP"
