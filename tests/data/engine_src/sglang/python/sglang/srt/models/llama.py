class LlamaForCausalLM:
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        pass

    def set_dflash_layers_to_capture(self, layer_ids):
        pass


EntryClass = [LlamaForCausalLM]
