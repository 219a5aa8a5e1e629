MODEL_REMAPPING = {
    "mistral": "llama",
    "falcon_mamba": "mamba",
}
