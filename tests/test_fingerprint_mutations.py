"""Fast path vs. reference on edited copies of real corpus directories.

Each edit is one a Hub repo really shows (chat tokens declared, a class or model_type changed,
files missing, special tokens outside the vocabulary...). Whatever the fast path answers must be
exactly what transformers returns; when it cannot be sure it must fall back.
"""

import json
import shutil

import pytest
from conftest import MODELS, needs_corpus

from indexer.files import InputError
from indexer.vocab.fingerprint import fingerprint_dir

pytestmark = needs_corpus

DIRS = [
    "isatyabrata__llama2-7b-chat-hf",  # Llama tokenizer.json, decoder mode
    "fetchwiki__deepcogito-cogito-v1-preview-qwen-14B",  # vocab.json + merges.txt
    "drcege__RedPajama-INCITE-7B-Base",  # GPT-NeoX, legacy mode, added tokens beyond the base
    "ravenakin__lama",  # SentencePiece only
]


def edit_json(name, change):
    def apply(d):
        path = d / name
        data = json.loads(path.read_text()) if path.exists() else {}
        change(data)
        path.write_text(json.dumps(data, ensure_ascii=False))

    return apply


def remove(name):
    def apply(d):
        (d / name).unlink(missing_ok=True)

    return apply


def declare(offset, content, special=True):
    def change(tc):
        n = fingerprint_dir(DIR_UNDER_EDIT[0], reference=True).max_id + 1
        tc.setdefault("added_tokens_decoder", {})[str(n + offset)] = {
            "content": content, "special": special, "lstrip": False, "rstrip": False, "normalized": False,
            "single_word": False}

    return edit_json("tokenizer_config.json", change)


DIR_UNDER_EDIT = []
EDITS = {
    "chat_token_next_id": declare(0, "<|chat|>"),
    "chat_token_gap": declare(3, "<|chat|>"),
    "plain_token_next_id": declare(0, "plainword", special=False),
    "pad_not_in_vocab": edit_json("tokenizer_config.json", lambda tc: tc.update(pad_token="<my_pad>")),
    "extra_special": edit_json("tokenizer_config.json", lambda tc: tc.update(additional_special_tokens=["<x>"])),
    "model_specific_token": edit_json("tokenizer_config.json", lambda tc: tc.update(image_token="<image>")),
    "empty_decoder": edit_json("tokenizer_config.json", lambda tc: tc.update(added_tokens_decoder={})),
    "class_llama": edit_json("tokenizer_config.json", lambda tc: tc.update(tokenizer_class="LlamaTokenizerFast")),
    "class_gpt2": edit_json("tokenizer_config.json", lambda tc: tc.update(tokenizer_class="GPT2TokenizerFast")),
    "class_fast_base": edit_json("tokenizer_config.json",
                                 lambda tc: tc.update(tokenizer_class="PreTrainedTokenizerFast")),
    "no_class": edit_json("tokenizer_config.json", lambda tc: tc.pop("tokenizer_class", None)),
    "model_type_mistral": edit_json("config.json", lambda c: c.update(model_type="mistral")),
    "model_type_internlm2": edit_json("config.json", lambda c: c.update(model_type="internlm2")),
    "name_in_config_is_ignored": edit_json(
        "config.json", lambda c: c.update(_name_or_path="deepseek-ai/deepseek-coder-x")),
    "added_tokens_json": lambda d: (d / "added_tokens.json").write_text(json.dumps({"<new>": 7})),
    "no_tokenizer_config": remove("tokenizer_config.json"),
    "no_special_tokens_map": remove("special_tokens_map.json"),
    "no_tokenizer_json": remove("tokenizer.json"),
}


def outcome(directory, reference):
    try:
        fp = fingerprint_dir(directory, reference=reference)
    except InputError as e:
        return ("error", e.status), None
    return (fp.vocab_sha256, fp.base_vocab_sha256, fp.added_tokens, fp.hf_vocab_size, fp.tokenizer_class), fp


@pytest.mark.parametrize("edit", sorted(EDITS))
@pytest.mark.parametrize("name", DIRS)
def test_fast_path_equals_reference_after_edit(tmp_path, name, edit):
    directory = tmp_path / name
    shutil.copytree(MODELS / name, directory)
    DIR_UNDER_EDIT[:] = [MODELS / name]
    EDITS[edit](directory)
    fast, fp = outcome(directory, reference=False)
    ref, _ = outcome(directory, reference=True)
    assert fast == ref, (fp.method if fp else None, fp.fallback_reason if fp else None)


def test_checkpoint_names_routed_to_tokenizers_backend(tmp_path, monkeypatch):
    """transformers matches the path given to from_pretrained() against its forced-backend list."""
    directory = tmp_path / "deepseek-ai" / "deepseek-coder-1.3b"
    shutil.copytree(MODELS / DIRS[0], directory)
    monkeypatch.chdir(tmp_path)
    fast, fp = outcome("deepseek-ai/deepseek-coder-1.3b", reference=False)
    ref, _ = outcome("deepseek-ai/deepseek-coder-1.3b", reference=True)
    assert fast == ref and fp.tokenizer_class == "TokenizersBackend"
