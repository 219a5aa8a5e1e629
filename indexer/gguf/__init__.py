"""The GGUF layer: reading a GGUF file's header and facts (header, file, hub) and predicting the vocabulary
llama.cpp's convert_hf_to_gguf.py writes for an HF model (predict, convert, hf, archs, tfmap, prehash).

Every file:line these modules cite is at :data:`LLAMACPP_COMMIT`, so the pin lives here; the engine
registry (``indexer.engines``) names llama.cpp's version from it.
"""

from __future__ import annotations

from pathlib import Path

from ..files import DEFAULT_MAX_FILE_BYTES, InputError

# llama.cpp commit this package transcribes (the version vendored by llama-cpp-python 0.3.36).
LLAMACPP_COMMIT = "0c1e57098"


def predict_gguf_facts(directory: Path, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES):
    """(GGUFVocab, None), or (None, why) when the prediction itself is unavailable."""
    try:
        from .predict import predict_gguf
    except ImportError as e:
        return None, f"the GGUF prediction (indexer.gguf.predict) is not available: {e}"
    try:
        return predict_gguf(directory, max_file_bytes=max_file_bytes), None
    except InputError as e:
        return None, f"the GGUF prediction cannot read the files: {e.message}"
    except Exception as e:  # noqa: BLE001 - one engine's prediction must not abort the other verdicts
        return None, f"the GGUF prediction failed: {type(e).__name__}: {e}"
