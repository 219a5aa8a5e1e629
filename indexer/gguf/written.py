"""What convert_hf_to_gguf.py --vocab-only writes into the GGUF's ``tokenizer.ggml.*`` keys (:class:`Written`),
and gguf-py's SpecialVocab, which writes the special token ids and ``add_*_token`` flags.

Pinned: ggml-org/llama.cpp@0c1e57098 as vendored in the llama-cpp-python 0.3.36 sdist (gguf-py/gguf/vocab.py).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

from ..files import check_size
from .hf import ConverterError, read_json, read_optional_json


@dataclass
class Written:
    """The tokenizer.ggml.* keys of the GGUF (None: the key is not written)."""

    model: str  # tokenizer.ggml.model
    pre: str | None
    tokens: list[str]
    has_merges: bool = False
    special_ids: dict[str, int] = field(default_factory=dict)  # tokenizer.ggml.<typ>_token_id
    add_special: dict[str, bool] = field(default_factory=dict)  # tokenizer.ggml.add_<typ>_token


# ---------------------------------------------------------------- SpecialVocab (gguf-py/gguf/vocab.py:50-378)

DEFAULT_SPECIAL_TYPES = ("bos", "eos", "unk", "sep", "pad", "cls", "mask")


class SpecialVocab:
    """gguf.SpecialVocab: special token ids and add_*_token flags, in its precedence order."""

    def __init__(self, directory: Path, max_bytes: int, n_vocab: int | None = None, load_merges: bool = False,
                 special_token_types=DEFAULT_SPECIAL_TYPES):
        self.special_token_ids: dict[str, int] = {}
        self.add_special_token: dict[str, bool] = {}
        self.n_vocab = n_vocab
        self.load_merges = load_merges
        self.merges: list[str] = []
        self.special_token_types = tuple(special_token_types)
        self.max_bytes = max_bytes
        self._try_load_from_tokenizer_json(directory)  # vocab.py:118-122
        self._try_load_from_config_json(directory)
        if load_merges and not self.merges:
            self._try_load_merges_txt(directory)

    def _try_load_merges_txt(self, directory: Path) -> None:  # vocab.py:124-147
        """Only whether a well-formed merge line exists matters here (libllama needs the key, :2000-2004)."""
        path = directory / "merges.txt"
        if not path.is_file():
            return
        check_size(path, self.max_bytes)
        with open(path, encoding="utf-8") as f:
            first = next(f, "").strip()
            lines = f if first.startswith("#") else itertools.chain([first], f)
            for line in lines:
                parts = line.strip().split(None, 3)
                if len(parts) == 2:
                    self.merges = [f"{parts[0]} {parts[1]}"]  # the first one stands for all
                    return

    def _set_special_token(self, typ: str, tid) -> None:  # vocab.py:149-159
        if not isinstance(tid, int):
            return
        if tid < 0:
            raise ConverterError(f"ValueError: invalid value for special token type {typ}: {tid}")
        if self.n_vocab is None or tid < self.n_vocab:
            self.special_token_ids.setdefault(typ, tid)

    def _try_load_from_tokenizer_json(self, directory: Path) -> None:  # vocab.py:183-363
        tokenizer = None
        tj_path = directory / "tokenizer.json"
        if tj_path.is_file():
            tokenizer = read_json(tj_path, self.max_bytes)
            if self.load_merges:
                merges = (tokenizer.get("model") or {}).get("merges")
                if isinstance(merges, list) and merges:
                    if isinstance(merges[0], str):
                        self.merges = merges
                    elif isinstance(merges[0], list) and len(merges[0]) == 2 and isinstance(merges[0][0], str):
                        self.merges = [" ".join(p) for p in merges]
                    else:
                        raise ConverterError("ValueError: Unknown tokenizer merges format")
            added_tokens = tokenizer.get("added_tokens", {})
        else:
            added_tokens = {}
        tc = read_optional_json(directory, "tokenizer_config.json", self.max_bytes)
        tc = dict(tc) if tc is not None else None  # SpecialVocab edits its copy (vocab.py:222-318)
        if tokenizer:
            self._read_post_processor(tokenizer, tc)
        if not tc:
            return
        for typ in self.special_token_types:
            add_entry = tc.get(f"add_{typ}_token")
            if isinstance(add_entry, bool) and typ not in self.add_special_token:
                self.add_special_token[typ] = add_entry
            entry = tc.get(f"{typ}_token")
            if isinstance(entry, str):
                content = entry
            elif isinstance(entry, dict) and isinstance(entry.get("content"), str):
                content = entry["content"]
            else:
                continue
            # vocab.py:355-360: the id comes only from tokenizer.json's added_tokens, first match.
            tid = next((t.get("id") for t in added_tokens if t.get("content") == content), None)
            self._set_special_token(typ, tid)

    def _read_post_processor(self, tokenizer: dict, tc: dict | None) -> None:
        """vocab.py:216-318: ByteLevel/RobertaProcessing/TemplateProcessing decide add_bos/add_eos and may
        rename the BOS/EOS content in the tokenizer_config it reads next."""
        special_bos = (tc or {}).get("bos_token")
        special_cls = (tc or {}).get("cls_token")
        special_eos = (tc or {}).get("eos_token")
        special_sep = (tc or {}).get("sep_token")
        if not special_bos and special_cls and tc:
            tc["bos_token"] = special_bos = special_cls
        if not special_eos and special_sep and tc:
            tc["eos_token"] = special_eos = special_sep
        post = tokenizer.get("post_processor")
        if not post:
            return
        for proc in post.get("processors", [post]):
            kind = proc.get("type")
            if kind == "ByteLevel":
                self.add_special_token.setdefault("bos", False)
                self.add_special_token.setdefault("eos", False)
            elif kind == "RobertaProcessing":
                self.add_special_token["bos"] = True
                self.add_special_token["eos"] = True
                self.add_special_token["sep"] = True
                if not special_cls and tc:
                    tc["cls_token"] = special_cls = proc.get("cls", [special_bos])[0]
                if not special_sep and tc:
                    tc["sep_token"] = special_sep = proc.get("sep", [special_eos])[0]
            elif kind == "TemplateProcessing":
                single = proc.get("single", [])
                if len(single) > 1:
                    if first := single[0].get("SpecialToken", {}).get("id"):
                        if not tc:
                            special_bos = first
                        elif first not in (special_bos, special_cls):
                            if not special_bos:
                                tc["bos_token"] = special_bos = first
                            if not special_cls:
                                tc["cls_token"] = special_cls = first
                        self.add_special_token["bos"] = first in (special_bos, special_cls)
                    if last := single[-1].get("SpecialToken", {}).get("id"):
                        if not tc:
                            special_eos = last
                        elif last != special_eos:
                            if "eot" not in self.special_token_types:
                                self.special_token_types += ("eot",)
                                tc["eot_token"] = special_eos
                            elif "eom" not in self.special_token_types:
                                self.special_token_types += ("eom",)
                                tc["eom_token"] = special_eos
                            tc["eos_token"] = special_eos = last
                        self.add_special_token["eos"] = last == special_eos
                # the pair template only decides add_sep (vocab.py:281-318), which the rule does not read

    def _try_load_from_config_json(self, directory: Path) -> None:  # vocab.py:365-378
        config = read_optional_json(directory, "config.json", self.max_bytes)
        if config is None:
            return
        for typ in self.special_token_types:
            tid = config.get(f"{typ}_token_id")
            if tid is None and "text_config" in config:
                tid = config["text_config"].get(f"{typ}_token_id")  # a null text_config crashes it too
            self._set_special_token(typ, tid)

    def add_to(self, written: Written) -> None:  # vocab.py:82-116 (later writes overwrite: gguf_writer.py:277-281)
        """Write the special ids, add flags and merges presence into the keys, as SpecialVocab.add_to_gguf."""
        if self.merges:
            written.has_merges = True
        written.special_ids.update(self.special_token_ids)
        written.add_special.update(self.add_special_token)
