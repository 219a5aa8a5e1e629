"""``indexer measure``: the speed-up and acceptance of a pair read from a running engine, beside the estimate.

``prompts`` (the fixed prompt set per task, shipped as ``data/prompts.toml``), ``client`` (the HTTP requests,
standard library only), ``run`` (one measurement against a server, and the result's JSON), ``local`` (the pair run
by transformers' assisted generation on this machine); the catalog's ``measurements`` table is
``catalog/measurements.py``. What each engine's server answers is the engine's own knowledge:
``engines/<engine>.py`` ``SERVER`` (engines/server.py).
"""
