from enum import Enum, auto


class SpeculativeAlgorithm(Enum):
    DFLASH = auto()
    EAGLE = auto()
    EAGLE3 = auto()
    STANDALONE = auto()
    NONE = auto()
