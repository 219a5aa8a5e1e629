class LlamaForCausalLMEagle3:
    pass


EntryClass = [LlamaForCausalLMEagle3]
