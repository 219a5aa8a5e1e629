"""GGUF test files: the builders live in indexer/hubsim/gguf_repos.py (the demo and hubsim use them too)."""

from indexer.hubsim.gguf_repos import (  # noqa: F401
    ALL_TYPES,
    GGUF_MODEL,
    bpe_tokens,
    write_gguf,
    write_gguf_repo,
    write_vocab_gguf,
)
