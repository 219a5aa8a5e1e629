class ArraysCache:
    pass


class RotatingKVCache:
    pass


class KVCache:
    pass
