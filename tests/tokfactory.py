"""Small real model directories built with the `tokenizers` library, for rule tests."""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

BASE_WORDS = ["<unk>", "<s>", "</s>"] + [f"Ġw{i}" for i in range(60)] + [f"t{i}" for i in range(60)]


def make_model(
    path: Path,
    *,
    words: list[str] | None = None,
    added: list[str] = (),
    vocab_size: int | None = None,
    config: dict | None = None,
    tokenizer_config: dict | None = None,
    special: tuple[str, str, str] = ("<unk>", "<s>", "</s>"),
    text_config: bool = False,
) -> Path:
    """Write tokenizer.json, tokenizer_config.json and config.json for a tiny BPE model."""
    words = list(words or BASE_WORDS)
    vocab = {w: i for i, w in enumerate(words)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=special[0]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True) for t in special if t in vocab])
    if added:
        tok.add_special_tokens([AddedToken(t, special=True) for t in added])
    path.mkdir(parents=True, exist_ok=True)
    tok.save(str(path / "tokenizer.json"))
    tc = {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": special[0], "bos_token": special[1],
          "eos_token": special[2], "add_bos_token": True, "add_eos_token": False}
    tc.update(tokenizer_config or {})
    (path / "tokenizer_config.json").write_text(json.dumps(tc))
    size = vocab_size if vocab_size is not None else tok.get_vocab_size(with_added_tokens=True)
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"]}
    if text_config:
        cfg = {"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"],
               "text_config": {"model_type": "llama", "vocab_size": size, "num_attention_heads": 4}}
    else:
        cfg["vocab_size"] = size
    cfg.update(config or {})
    (path / "config.json").write_text(json.dumps(cfg))
    return path
