"""The class-resolution tables copied from transformers match the installed transformers."""

from indexer.vocab import hf_tables


def test_tables_match_installed_transformers():
    mapping, incorrect, patterns = hf_tables.live_tables()
    assert hf_tables.TOKENIZER_CLASS_BY_MODEL_TYPE == mapping
    assert hf_tables.MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS == incorrect
    assert hf_tables.MODEL_IDS_TO_TOKENIZERS_BACKEND == patterns


def test_render_is_a_fixed_point():
    with open(hf_tables.__file__, encoding="utf-8") as f:
        source = f.read()
    assert hf_tables.render(source) == source
