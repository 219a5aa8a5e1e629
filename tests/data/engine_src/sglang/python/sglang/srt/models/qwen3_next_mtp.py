class Qwen3NextForCausalLMMTP:
    pass


EntryClass = [Qwen3NextForCausalLMMTP]
