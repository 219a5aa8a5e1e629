"""The heavy modules, imported on first use: the one place the package defers an import.

``query`` and ``check`` answer from the catalog with the standard library (tests/test_query_path.py), and a crawl
loads transformers (seconds) or torch only when a tokenizer or a measurement needs them. A module on those paths
reads a heavy module through this one, ``deferred.sqlalchemy.create_engine(...)``, which imports it when first read
(PEP 562, as huggingface_hub's ``__init__`` loads its submodules); every other module imports at its top.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the attributes below are, for the type checker; unused here (F401)
    import orjson  # noqa: F401
    import sentencepiece  # noqa: F401
    import sqlalchemy  # noqa: F401
    import sqlalchemy.engine  # noqa: F401
    import sqlalchemy.exc  # noqa: F401
    import torch  # noqa: F401
    import transformers  # noqa: F401
    import transformers.models.auto.tokenization_auto as tokenization_auto  # noqa: F401

    from .answer import live, localdir  # noqa: F401
    from .gguf import file as gguf_file  # noqa: F401

# Attribute -> module. Third-party: what an answer from the catalog never needs, or what costs seconds.
# Ours: the modules that import such packages at their top.
MODULES = {
    "orjson": "orjson",  # tokenizer files parsed 2-3x faster; an answer parses none
    "sentencepiece": "sentencepiece",  # tokenizer.model files without a tokenizer.json
    "sqlalchemy": "sqlalchemy",  # PostgreSQL catalogs and writes; an answer reads SQLite with sqlite3
    "torch": "torch",  # `indexer measure` only
    "transformers": "transformers",  # get_vocab()'s reference semantics, where a fast path cannot decide
    "tokenization_auto": "transformers.models.auto.tokenization_auto",  # its tables (vocab/hf_tables.py)
    "gguf_file": "indexer.gguf.file",  # GGUF headers (the gguf package, numpy)
    "live": "indexer.answer.live",  # answers that ask the Hub (huggingface_hub, SQLAlchemy)
    "localdir": "indexer.answer.localdir",  # local model directories (tokenizers, transformers)
}


def __getattr__(name: str) -> Any:
    """The module ``name`` stands for, imported now and kept."""
    if name not in MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(MODULES[name])
    globals()[name] = module
    return module
