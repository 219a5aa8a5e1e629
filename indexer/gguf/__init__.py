"""The GGUF layer: reading a GGUF file's header and facts (header, file, hub) and predicting the vocabulary
llama.cpp's convert_hf_to_gguf.py writes for an HF model (predict, convert, vocabpaths, written, hf, archs, tfmap,
tfconfig, prehash); ``vocab`` holds the vocabulary value both give.

Every file:line these modules cite is at :data:`LLAMACPP_COMMIT`, so the pin lives here; the engine
registry (``indexer.engines``) names llama.cpp's version from it.
"""

from __future__ import annotations

# llama.cpp commit this package transcribes (the version vendored by llama-cpp-python 0.3.36).
LLAMACPP_COMMIT = "0c1e57098"
# The error prefix of a converter path the indexer does not reproduce: the verdict is unknown, not a refusal
# (here, not in predict.py, so the engines' query path reads it without loading the predictor).
NOT_MODELLED = "not modelled: "
