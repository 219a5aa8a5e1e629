from .cache import KVCache


class Model:
    def make_cache(self):
        return [KVCache()]
