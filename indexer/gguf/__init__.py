"""The GGUF layer: reading a GGUF file's header and facts (header, file, hub) and predicting the vocabulary
llama.cpp's convert_hf_to_gguf.py writes for an HF model (predict, convert, hf, archs, tfmap, prehash)."""
