from .cache import KVCache, RotatingKVCache


class Model:
    def make_cache(self):
        return [RotatingKVCache(max_size=4) if s else KVCache() for s in self.sliding]
