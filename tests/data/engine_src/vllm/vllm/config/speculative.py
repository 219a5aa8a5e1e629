from typing import Literal

MTPModelTypes = Literal[
    "deepseek_mtp",
    "mtp",
]
EagleModelTypes = Literal["eagle", "eagle3", MTPModelTypes]
SpeculativeMethod = Literal["ngram", "draft_model", EagleModelTypes]
