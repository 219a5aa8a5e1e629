"""GGUF files and GGUF-only repos for the Hub imitation, written by the gguf package's own GGUFWriter (the
writer llama.cpp's converter uses).

Quantizer repos hold nothing but ``*.gguf`` files of several GB; ``write_gguf_repo`` pads each file to a
realistic size (sparse on disk: the padding is a hole after the tensor data), so a reader that pulls whole
files instead of the key/value section shows it in the server's byte counts.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from gguf import GGUFWriter
from gguf.constants import GGUFValueType, TokenType


def bpe_tokens(n: int = 300, rename: dict[int, str] | None = None) -> list[str]:
    """A byte-level-looking token list: 5 specials, then distinct texts; ``rename`` swaps texts by id."""
    toks = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<pad>", "<unk>"] + [f"tok{i}" for i in range(5, n)]
    for i, text in (rename or {}).items():
        toks[i] = text
    return toks


def write_gguf(path: Path, *, arch: str = "llama", model: str | None = "gpt2", pre: str | None = "qwen2",
               tokens: list[str] | None = None, merges: list[str] | None = None, scores: list[float] | None = None,
               types: list[int] | None = None, bos: int | None = None, eos: int | None = None,
               add_bos: bool | None = None, add_eos: bool | None = None, chat_template: str | None = None,
               name: str | None = "Test Model", file_type: int | None = 15, tensor_bytes: int = 4096,
               extra: Sequence[tuple] = (), split_max_tensors: int = 0, n_tensors: int = 1,
               alignment: int | None = None) -> Path:
    """One GGUF (or a split set, shard names from the writer) with the tokenizer keys given; None omits a key."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    w = GGUFWriter(path, arch, split_max_tensors=split_max_tensors)
    if alignment is not None:
        w.add_custom_alignment(alignment)
    if name is not None:
        w.add_name(name)
    if file_type is not None:
        w.add_file_type(file_type)
    if model is not None:
        w.add_tokenizer_model(model)
    if pre is not None:
        w.add_tokenizer_pre(pre)
    if tokens is None:
        tokens = bpe_tokens()
    if tokens:
        w.add_token_list(tokens)
        w.add_token_types(types if types is not None else
                          [TokenType.CONTROL] * 5 + [TokenType.NORMAL] * (len(tokens) - 5))
    if scores is not None:
        w.add_token_scores(scores)
    if model == "gpt2" and merges is None:
        merges = [f"t o{i}" for i in range(len(tokens) // 2)]
    if merges:
        w.add_token_merges(merges)
    for key, value in (("bos", bos), ("eos", eos)):
        if value is not None:
            getattr(w, f"add_{key}_token_id")(value)
    if add_bos is not None:
        w.add_add_bos_token(add_bos)
    if add_eos is not None:
        w.add_add_eos_token(add_eos)
    if chat_template is not None:
        w.add_chat_template(chat_template)
    for key, value, vtype, *sub in extra:
        w.add_key_value(key, value, vtype, sub[0] if sub else None)
    for i in range(n_tensors):  # tensor data after the header: a reader must never need it
        w.add_tensor(f"blk.{i}.weight", np.full(tensor_bytes // n_tensors, i % 100, dtype=np.int8))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


ALL_TYPES = [  # (key, value, type, array element type): every GGUF value type, scalars and arrays
    ("t.u8", 255, GGUFValueType.UINT8), ("t.i8", -128, GGUFValueType.INT8),
    ("t.u16", 65535, GGUFValueType.UINT16), ("t.i16", -32768, GGUFValueType.INT16),
    ("t.u32", 4294967295, GGUFValueType.UINT32), ("t.i32", -2147483648, GGUFValueType.INT32),
    ("t.f32", 1.5, GGUFValueType.FLOAT32), ("t.bool", True, GGUFValueType.BOOL),
    ("t.str", "héllo\0x", GGUFValueType.STRING), ("t.u64", 2**64 - 1, GGUFValueType.UINT64),
    ("t.i64", -(2**63), GGUFValueType.INT64), ("t.f64", -2.25, GGUFValueType.FLOAT64),
    ("t.arr_i32", [1, -2, 3], GGUFValueType.ARRAY, GGUFValueType.INT32),
    ("t.arr_f64", [0.5, 1.0], GGUFValueType.ARRAY, GGUFValueType.FLOAT64),
    ("t.arr_bool", [True, False, True], GGUFValueType.ARRAY, GGUFValueType.BOOL),
    ("t.arr_str", ["a", "", "ü"], GGUFValueType.ARRAY, GGUFValueType.STRING),
    ("t.arr_u8_long", list(range(200)), GGUFValueType.ARRAY, GGUFValueType.UINT8),
]


GGUF_MODEL = {"spm": "llama", "bpe": "gpt2", "wpm": "bert", "ugm": "t5"}  # llama_vocab_type -> tokenizer.ggml.model


def write_vocab_gguf(path: Path, vocab, *, rename: dict[int, str] | None = None, **kw) -> Path:
    """A GGUF whose keys give back ``vocab`` (an indexer.gguf.predict.GGUFVocab) when libllama reads them."""
    tokens = list(vocab.tokens)
    for i, text in (rename or {}).items():
        tokens[i] = text
    model = GGUF_MODEL[vocab.vocab_type]
    n = len(tokens)
    args = dict(model=model, pre=vocab.pre, tokens=tokens, add_bos=vocab.add_bos, add_eos=vocab.add_eos,
                bos=vocab.bos if vocab.bos is not None and vocab.bos >= 0 else None,
                eos=vocab.eos if vocab.eos is not None and vocab.eos >= 0 else None,
                types=[TokenType.NORMAL] * n, scores=[0.0] * n if model in ("llama", "t5") else None)
    return write_gguf(path, **{**args, **kw})


def write_gguf_repo(hub_dir: str | os.PathLike, repo_id: str, files: dict[str, int], **gguf_kw) -> list[Path]:
    """A GGUF-only repo: one GGUF per ``{filename: padded size}`` (same keys in each, as quants of one model
    are), each padded to its size."""
    repo = Path(hub_dir) / repo_id
    repo.mkdir(parents=True, exist_ok=True)
    out = []
    for name, size in files.items():
        path = write_gguf(repo / name, **gguf_kw)
        if os.path.getsize(path) < size:
            os.truncate(path, size)
        out.append(path)
    return out
