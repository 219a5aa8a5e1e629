"""Hub-wide vocabulary-compatibility indexer for speculative decoding."""

__version__ = "0.1.0"
