"""A GGUF vocabulary as libllama reports it (:class:`GGUFVocab`, read from a file or predicted), and libllama's
tables of BPE pre-tokenizers. Paths are relative to llama.cpp at :data:`indexer.gguf.LLAMACPP_COMMIT`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, fields
from typing import Any

from . import NOT_MODELLED

LLAMA_TOKEN_NULL = -1

# include/llama.h:73-80, enum llama_vocab_type; names as oracle-engines.json's vocab_type_name.
VOCAB_TYPE_NAMES = {0: "none", 1: "spm", 2: "bpe", 3: "wpm", 4: "ugm", 5: "rwkv", 6: "plamo2"}

# src/llama-vocab.cpp:2155-2428: the tokenizer.ggml.pre values libllama accepts for BPE vocabularies;
# any other value throws "unknown pre-tokenizer type". Those in PRE_ADD_BOS also turn add_bos on, those in
# PRE_NO_BOS set special_bos_id to LLAMA_TOKEN_NULL.
KNOWN_BPE_PRE = frozenset("""
default minicpm5 llama3 llama-v3 llama-bpe falcon3 falcon-h1 pixtral midm-2.0 lfm2 jina-v5-nano deepseek-llm
deepseek-coder deepseek-v3 spark2_5 youtu falcon mpt starcoder gpt-2 phi-2 jina-es jina-de gigachat jina-v2-es
jina-v2-de a.x-4.0 mellum modern-bert jais-2 gemma4 granite-embed-multi-311m sarvam-moe jina-v1-en jina-v2-code
roberta-bpe whitespace refact command-r qwen2 deepseek-r1-qwen kormo f2llmv2 qwen35 stablelm2 olmo dbrx smaug-bpe
poro-chat chatglm-bpe glm4 glm5 viking jais tekken smollm codeshell bloom gpt3-finnish exaone exaone4 exaone-moe
chameleon minerva-7b megrez gpt-4o llama4 kanana2 talkie granite-embed-multi-97m tiny_aya cohere2moe superbpe
trillion granite-docling bailingmoe bailingmoe2 llada-moe seed-coder hunyuan hunyuan-dense hy_v4 joyai-llm kimi-k2
ufakzeka grok-2 afmoe laguna minimax-m2 solar-open mellum2
""".split())
PRE_ADD_BOS = frozenset({  # llama-vocab.cpp:2175-2185 (llama3 group), :2303-2307 tekken, :2330-2334 chameleon
    "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano",
    "tekken", "chameleon",
})
PRE_NO_BOS = frozenset({"chatglm-bpe", "glm4", "glm5"})  # llama-vocab.cpp:2279-2289


@dataclass(frozen=True)
class GGUFVocab:
    """A GGUF vocabulary as libllama reports it (read from a file or predicted): what llama.cpp's rule compares."""

    converted: bool
    error: str | None  # why convert_hf_to_gguf.py refuses (or libllama cannot load), in their words
    vocab_type: str | None  # "spm", "bpe", ... (oracle-engines.json gguf.vocab_type_name)
    n_vocab: int | None
    add_bos: bool | None
    add_eos: bool | None
    bos: int | None  # as libllama reports them; LLAMA_TOKEN_NULL = -1
    eos: int | None
    pre: str | None  # tokenizer.ggml.pre
    tokens: tuple[str, ...] | None = None  # llama_vocab_get_text(i) for every id 0..n_vocab-1
    # The tokens' sha256 as the catalog stores it, when the tokens came from the token store by that name: an
    # answer shows it without hashing the list again (nor loading hashlib). Not a fact: not compared.
    stored_sha256: str | None = field(default=None, compare=False, repr=False)

    def tokens_sha256(self) -> str | None:
        """The oracle's definition: sha256 of the concatenation of text_i.encode() + b"\\0"."""
        if self.tokens is None:
            return None
        if self.stored_sha256 is not None:
            return self.stored_sha256

        h = hashlib.sha256()
        for text in self.tokens:
            h.update(text.encode("utf-8", "surrogatepass"))
            h.update(b"\0")
        return h.hexdigest()

    def to_dict(self) -> dict:
        """The catalog's JSON: every fact but the token list, which is stored once by its sha256."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("tokens", "stored_sha256")}
        d["tokens_sha256"] = self.tokens_sha256()
        return d

    @classmethod
    def from_dict(cls, d: dict, tokens=None) -> GGUFVocab:
        """The vocabulary back from the catalog's JSON (and its token list when the rule needs it)."""
        names = {f.name for f in fields(cls)} - {"tokens", "stored_sha256"}
        values: dict[str, Any] = {k: d.get(k) for k in names}
        return cls(**values, tokens=tuple(tokens) if tokens is not None else None,
                   stored_sha256=d.get("tokens_sha256") if tokens is not None else None)


def is_not_modelled(v: GGUFVocab) -> bool:
    """True when ``converted=False`` only means the indexer does not model that converter path."""
    return not v.converted and (v.error or "").startswith(NOT_MODELLED)


def refused(error: str) -> GGUFVocab:
    """A vocabulary that was not made: the converter or libllama refuses, in its words."""
    return GGUFVocab(False, error, None, None, None, None, None, None, None, None)
