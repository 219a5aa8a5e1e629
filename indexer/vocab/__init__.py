"""The vocabulary layer: get_vocab() fingerprints (transformers semantics), model configs and sizes,
and vocabulary agreement on the shipped reference text."""
