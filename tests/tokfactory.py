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


_TRAINED: dict = {}


def trained_bpe() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """A small byte-level BPE trained on the shipped reference text (once per session): a tokenizer whose
    counts over that text fall on many ids, as a real one's do."""
    if not _TRAINED:
        from tokenizers import trainers

        from indexer.vocab.agreement import reference_parts

        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<unk>", "<s>", "</s>"],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
        tok.train_from_iterator(reference_parts(), trainer)
        data = json.loads(tok.to_str())["model"]
        _TRAINED["vocab"] = data["vocab"]
        _TRAINED["merges"] = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in data["merges"]]
    return dict(_TRAINED["vocab"]), list(_TRAINED["merges"])


def make_text_model(path: Path, *, added: list[str] = (), plain_added: list[str] = (), rename: dict[int, str] = (),
                    swap: tuple[str, str] | None = None, shuffle: int | None = None, eos: str = "</s>",
                    vocab_size: int | None = None) -> Path:
    """A model directory around :func:`trained_bpe`: ``added`` special tokens appended (chat tokens),
    ``plain_added`` non-special ones (a code tokenizer's whitespace runs), ``rename`` {id: new text} of
    added tokens, ``swap`` two added tokens' ids, ``shuffle`` (a seed) the base ids: an unrelated
    vocabulary of the same size. config vocab_size defaults to the full vocabulary."""
    import random

    vocab, merges = trained_bpe()
    if shuffle is not None:
        strings = sorted(vocab, key=vocab.get)
        ids = list(range(3, len(strings)))
        random.Random(shuffle).shuffle(ids)
        vocab = {s: i for s, i in zip(strings, [0, 1, 2, *ids], strict=True)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True) for t in ("<unk>", "<s>", "</s>")])
    n = len(vocab)
    names = list(added)
    for i, text in dict(rename).items():
        names[i - n] = text
    if swap:
        a, b = names.index(swap[0]), names.index(swap[1])
        names[a], names[b] = names[b], names[a]
    tok.add_special_tokens([AddedToken(t, special=True) for t in names])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in plain_added])
    path.mkdir(parents=True, exist_ok=True)
    tok.save(str(path / "tokenizer.json"))
    tc = {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>", "bos_token": "<s>", "eos_token": eos}
    (path / "tokenizer_config.json").write_text(json.dumps(tc))
    size = vocab_size if vocab_size is not None else tok.get_vocab_size(with_added_tokens=True)
    (path / "config.json").write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"],
                                                  "vocab_size": size}))
    return path


BACKTRACKING = r"^(\w+\s?)*$"  # Oniguruma hits its retry limit on a long line of words: tokenizers panics
BACKTRACKING_SHORT = r"(\S+\S?)*\S{99}"  # ... and this one on llama.cpp's short pre-tokenizer check text


def make_hostile(path: Path, swap: tuple[str, str] = ("Ġw1", "Ġw2"), pattern: str = BACKTRACKING) -> Path:
    """A model whose pre-tokenizer runs a backtracking ``Split`` regex (behaviour "Isolated") before its own, with
    two vocabulary ids swapped so that its agreement with the original gets measured: the ``tokenizers``
    library panics (pyo3_runtime.PanicException) when it encodes the reference text."""
    if not (path / "tokenizer.json").is_file():
        make_model(path)
    tj = json.loads((path / "tokenizer.json").read_text("utf-8"))
    split = {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}
    tj["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [split, tj["pre_tokenizer"]]}
    vocab = tj["model"]["vocab"]
    a, b = swap if swap[0] in vocab else list(vocab)[-2:]
    vocab[a], vocab[b] = vocab[b], vocab[a]
    (path / "tokenizer.json").write_text(json.dumps(tj), "utf-8")
    return path


def make_memory_bomb(path: Path, size: int = 1 << 20) -> Path:
    """A model whose normalizer replaces each space with ``size`` characters: the reference text grows past any
    memory limit while it is tokenized (the tokenizer.json itself is about ``size`` bytes)."""
    make_model(path)
    tj = json.loads((path / "tokenizer.json").read_text("utf-8"))
    tj["normalizer"] = {"type": "Replace", "pattern": {"String": " "}, "content": "x" * size}
    (path / "tokenizer.json").write_text(json.dumps(tj), "utf-8")
    return path
