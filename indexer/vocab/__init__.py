"""The vocabulary layer: get_vocab() fingerprints (transformers semantics), model configs and sizes,
and vocabulary agreement on the shipped reference text."""

import threading

# transformers loads its modules lazily, and two threads that load at once can see a half-made module ("cannot
# import name 'AutoTokenizer' from 'transformers'"): the crawl counts the reference text on a thread of its own
# (crawl.writer) while the main thread may load a config or a tokenizer. Every load a crawl makes holds this.
TRANSFORMERS_LOCK = threading.RLock()
