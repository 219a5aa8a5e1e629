from torch import nn

from .interfaces import SupportsEagle3


class LlamaForCausalLM(nn.Module, SupportsEagle3):
    pass
