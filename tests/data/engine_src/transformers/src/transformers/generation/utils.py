class GenerationMixin:
    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        unsupported_model_names = (
            "minimax",
            "rwkv",
        )
        name = cls.__name__.lower()
        return (
            "minimaxm2" in name
            or all(unsupported_name not in name for unsupported_name in unsupported_model_names)
        )

    def _assisted_decoding(self, model_kwargs):
        cache = model_kwargs.get("cache")
        if cache is None:
            raise RuntimeError("Assisted decoding requires a cache")
