"""The fixed prompts ``indexer measure`` sends per task (``data/prompts.toml``, shipped with the package)."""

from __future__ import annotations

import sys

from ..resources import package_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

TASKS = ("code", "chat", "prose", "reasoning")


def prompts(task: str) -> list[str]:
    """The prompts of ``task``, in their fixed order."""
    data = tomllib.loads(package_path("data", "prompts.toml").read_text("utf-8"))
    return list(data[task])
