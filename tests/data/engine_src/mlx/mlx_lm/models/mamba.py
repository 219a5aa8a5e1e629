from .cache import ArraysCache


class Model:
    def make_cache(self):
        return [ArraysCache(size=2)]
