from typing import Protocol


class SupportsEagle3(Protocol):
    supports_eagle3 = True
