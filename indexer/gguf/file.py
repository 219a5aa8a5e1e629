"""A GGUF file's own facts, as libllama reads them from its key/value section (never a prediction).

``indexer.gguf.predict`` *predicts* the GGUF that convert_hf_to_gguf.py would write from HF files; this module *reads*
one (local or, through indexer/gguf/hub.py, from the Hub with HTTP ranges) and applies what
``llama_vocab::impl::load`` does with its keys (src/llama-vocab.cpp at llama.cpp@0c1e57098, lines cited below),
so ``engines.llamacpp.speculative_compatible`` judges read files exactly as the real llama-server does.

Which file of a repo or directory is read: indexer/gguf/names.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gguf.constants import GGUFValueType, Keys, LlamaFileType

from ..files import InputError
from ..vocab.archconfig import ArchFacts
from . import NOT_MODELLED
from .header import DEFAULT_MAX_KV_BYTES, Header, read_local
from .names import split_info
from .vocab import KNOWN_BPE_PRE, LLAMA_TOKEN_NULL, PRE_ADD_BOS, PRE_NO_BOS, GGUFVocab, refused

CANNOT_LOAD = "llama.cpp cannot load the GGUF: "
_TK = Keys.Tokenizer
BYTE = 6  # LLAMA_TOKEN_TYPE_BYTE (include/llama.h:99)
_OTHER_IDS = (_TK.EOT_ID, _TK.EOM_ID, _TK.UNK_ID, _TK.SEP_ID, _TK.PAD_ID, _TK.MASK_ID, _TK.FIM_PRE_ID, _TK.FIM_SUF_ID,
              _TK.FIM_MID_ID, _TK.FIM_PAD_ID, _TK.FIM_REP_ID, _TK.FIM_SEP_ID, _TK.PREFIX_ID, _TK.SUFFIX_ID,
              _TK.MIDDLE_ID)
# src/llama-arch.cpp:412-413, 420 (keys gguf-py has no constant for)
_LOWERCASE, _STRIP_ACCENTS = "tokenizer.ggml.normalizer.lowercase", "tokenizer.ggml.normalizer.strip_accents"
_SUPPRESS = "tokenizer.ggml.suppress_tokens"

# src/llama-arch.cpp:8-163, LLM_ARCH_NAMES: the general.architecture values libllama knows; any other (or none)
# makes llama_model_create throw "unknown model architecture" (src/llama-model.cpp:368-372) before the vocabulary
LIBLLAMA_ARCHS = frozenset("""
afmoe apertus arcee arctic arwkv7 baichuan bailingmoe bailingmoe2 bailingmoe3 bert bitnet bloom chameleon chatglm
clip codeshell cogvlm cohere2 cohere2moe command-r dbrx deci deepseek deepseek2 deepseek2-ocr deepseek32 deepseek4
dflash dots1 dots3note dream eagle3 ernie4_5 ernie4_5-moe eurobert exaone exaone-moe exaone4 falcon falcon-h1 gemma
gemma-embedding gemma2 gemma3 gemma3n gemma4 gemma4-assistant glm-dsa glm4 glm4moe glm5-next gpt-oss gpt2 gptj
gptneox granite granite_swa granitehybrid granitemoe graniteswitch grok grovemoe hrm_text hunyuan-dense hunyuan-moe
hunyuan_vl hy_v3 hy_v4 internlm2 jais jais2 jamba jina-bert-v2 jina-bert-v3 kimi-k3 kimi-linear laguna lfm2 lfm2moe
llada llada-moe llama llama-embed llama4 maincoder mamba mamba2 maple mellum mimo2 minicpm minicpm3 minimax-01
minimax-m2 minimax-m3 mistral3 mistral4 modern-bert mpt muse-glimmer nanbeige nemotron nemotron_h nemotron_h_moe
neo-bert nomic-bert nomic-bert-moe olmo olmo2 olmoe openelm orion paddleocr pangu-embedded phi2 phi3 phimoe plamo
plamo2 plamo3 plm pockettts qwen qwen2 qwen2moe qwen2vl qwen3 qwen35 qwen35moe qwen3moe qwen3next qwen3tts qwen3vl
qwen3vlmoe qwen4exp refact rnd1 rwkv6 rwkv6qwen2 rwkv7 seed_oss smallthinker smollm3 spark2_5 stablelm starcoder
starcoder2 step35 t5 t5encoder talkie wavtokenizer-dec xverse
""".split())


# src/llama-arch.cpp:1071-1109: the recurrent (llm_arch_is_recurrent) and hybrid (llm_arch_is_hybrid)
# architectures, with the family of their state layers.
GGUF_STATE = {
    "mamba": "mamba1", "mamba2": "mamba2", "rwkv6": "rwkv", "rwkv6qwen2": "rwkv", "rwkv7": "rwkv", "arwkv7": "rwkv",
    "jamba": "mamba1", "falcon-h1": "mamba2", "plamo2": "mamba2", "granitehybrid": "mamba2", "lfm2": "short_conv",
    "lfm2moe": "short_conv", "nemotron_h": "mamba2", "nemotron_h_moe": "mamba2", "qwen3next": "gated_deltanet",
    "kimi-linear": "gated_deltanet", "bailingmoe3": "gated_deltanet", "kimi-k3": "gated_deltanet",
    "glm5-next": "gated_deltanet", "qwen35": "gated_deltanet", "qwen35moe": "gated_deltanet",
    "qwen4exp": "gated_deltanet", "deepseek4": "recurrent", "minimax-01": "recurrent",
}
GGUF_PURE_STATE = frozenset({"mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"})


def arch_from_header(h: Header) -> ArchFacts:
    """The architecture facts of a GGUF header: general.architecture (its state family), ``<arch>.context_length``
    (llama.cpp's n_ctx_train), ``<arch>.attention.sliding_window`` and ``<arch>.block_count``
    (src/llama-model.cpp reads these keys with the arch prefix, src/llama-arch.cpp LLM_KV_NAMES)."""
    arch = h.values.get(Keys.General.ARCHITECTURE)
    arch = arch if isinstance(arch, str) else None

    def num(key: str) -> int | None:
        v = h.values.get(f"{arch}.{key}") if arch else None
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None

    n = num("block_count") or 0
    state = GGUF_STATE.get(arch or "")
    window = num("attention.sliding_window")
    layers: dict[str, int] = {}
    if state:
        layers[state] = n or 1
    if not state or arch not in GGUF_PURE_STATE:
        layers["sliding_attention" if window else "full_attention"] = n or 1
    ctx = num("context_length")
    return ArchFacts(layers=layers, state=[state] if state else [], sliding_window=window, context_sglang=ctx,
                     context_vllm=ctx, vision=False, gguf_arch=arch, source="GGUF header", head=head_from_header(h),
                     gguf_block_count=num("block_count"), gguf_embedding_length=num("embedding_length"))


# The speculator kinds a GGUF header declares, with the llama-server --spec-type that runs them
# (common/speculative.cpp:33-45): an EAGLE-3 head (src/models/eagle3.cpp:3-35: eagle3.target_layers, exactly 3,
# and eagle3.target_hidden_size), a DFlash head (src/models/dflash.cpp:7-60: dflash.target_layers; DSpark when the
# file has a markov_w1 tensor, which the key/value section does not show), Gemma-4's assistant (an MTP drafter,
# src/models/gemma4-assistant.cpp), and a model with embedded MTP layers (<arch>.nextn_predict_layers > 0,
# src/llama-arch.cpp:226).
HEAD_ARCHS = {"eagle3": ("eagle3", "draft-eagle3"), "dflash": ("dflash", "draft-dflash"),
              "gemma4-assistant": ("mtp", "draft-mtp")}


def head_from_header(h: Header) -> dict | None:
    """What a header says about speculation: a head's kind and keys, or the target's embedded MTP layers."""
    arch = h.values.get(Keys.General.ARCHITECTURE)
    if not isinstance(arch, str):
        return None

    def arr(key: str):
        a = h.arrays.get(key)
        return list(a.values) if a is not None and a.values is not None else None

    if arch in HEAD_ARCHS:
        kind, spec = HEAD_ARCHS[arch]
        out = {"kind": kind, "spec_type": spec, "embedded": False}
        for key in ("target_layers", "target_hidden_size", "block_size", "embedding_length_out"):
            value = arr(f"{arch}.{key}") if key == "target_layers" else h.values.get(f"{arch}.{key}")
            if value is not None:
                out[key] = value
        return out
    layers = h.values.get(f"{arch}.nextn_predict_layers")
    if isinstance(layers, int) and not isinstance(layers, bool) and layers > 0:
        return {"kind": "mtp", "spec_type": "draft-mtp", "embedded": True, "nextn_predict_layers": layers}
    return None


class WrongType(Exception):
    """A key libllama's loader would throw on (missing when required, or of another type)."""


def _get(h: Header, key: str, typ: GGUFValueType, required: bool = False):
    """llama_model_loader::get_key: a required key missing or a key of another type throws
    (src/llama-model-loader.cpp:420-433, 164-170)."""
    if key not in h.types:
        if required:
            raise WrongType(f"key not found in model: {key}")
        return None
    if h.types[key] != typ:
        raise WrongType(f"key {key} has wrong type {GGUFValueType(h.types[key]).name.lower()} but expected type "
                        f"{typ.name.lower()}")
    return h.values[key]


def _array_of(h: Header, key: str, types: tuple[GGUFValueType, ...]):
    arr = h.arrays.get(key)
    if key in h.types and (arr is None or arr.type not in types):
        raise WrongType(f"invalid gguf type for {key}")
    return arr


def vocab_from_header(h: Header) -> GGUFVocab:
    """llama_vocab::impl::load (src/llama-vocab.cpp:1939-2660) on the read keys."""
    try:
        return _load(h)
    except WrongType as e:
        return refused(CANNOT_LOAD + str(e))


def _load(h: Header) -> GGUFVocab:
    arch = _get(h, Keys.General.ARCHITECTURE, GGUFValueType.STRING)  # src/llama-model-loader.cpp:576
    if arch not in LIBLLAMA_ARCHS:
        return refused(CANNOT_LOAD + f"unknown model architecture: '{arch or ''}'")
    if arch == "clip":  # src/llama.cpp:351-353
        return refused(CANNOT_LOAD + "CLIP cannot be used as main model, use it with --mmproj instead")
    model = _get(h, Keys.Tokenizer.MODEL, GGUFValueType.STRING, required=True)  # :1945
    # :1944: tokenizer.ggml.pre as written; that is what libllama reports (the GGUF's metadata key). The load may
    # use another name internally (``effective_pre``): a gemma4 vocabulary, written with no pre key
    # (conversion/gemma.py:641-669, Gemma4Model.set_vocab), is tokenized as 'gemma4' (:2149), a BPE vocabulary
    # with no key as 'default' (:2159-2167), and SPM/WPM/UGM/RWKV/PLaMo-2 ignore the key (:2430-2455).
    pre = _get(h, Keys.Tokenizer.PRE, GGUFValueType.STRING)
    _get(h, Keys.Tokenizer.TOKEN_TYPE_COUNT, GGUFValueType.UINT32)  # :1947: only its type matters here
    add_bos = add_eos = False  # member defaults (src/llama-vocab.cpp:1831-1832)
    if model in ("no_vocab", "none"):  # :1949-1969: dummy tokens, no special ids, no keys read after
        n = _get(h, Keys.LLM.VOCAB_SIZE.format(arch=arch), GGUFValueType.UINT32) or 0
        return GGUFVocab(True, None, "none", n, False, False, LLAMA_TOKEN_NULL, LLAMA_TOKEN_NULL, pre,
                         tuple("" for _ in range(n)))
    merges_needed = False
    effective_pre = pre
    if model == "llama":  # :1971-1980
        vtype, bos, eos = "spm", 1, 2
    elif model == "bert":  # :1981-1992
        vtype, bos, eos = "wpm", 101, LLAMA_TOKEN_NULL
    elif model in ("gpt2", "whitespace"):  # :1993-2037 ("hybriddna" rewrites token texts: not modelled)
        vtype, bos, eos = "bpe", 11, 11
        merges_needed = pre != "kimi-k2"  # :1997-2006: Kimi-K2 has no merges (the written key, :1999)
    elif model == "t5":  # :2038-2080
        vtype, bos, eos = "ugm", LLAMA_TOKEN_NULL, 1
        _array_of(h, Keys.Tokenizer.PRECOMPILED_CHARSMAP, (GGUFValueType.INT8, GGUFValueType.UINT8))
    elif model == "rwkv":  # :2081-2089
        vtype, bos, eos = "rwkv", LLAMA_TOKEN_NULL, LLAMA_TOKEN_NULL
    elif model == "plamo2":  # :2100-2109
        vtype, bos, eos = "plamo2", 1, 2
    elif model == "gemma4":  # :2110-2149: BPE with merges, no default ids; tokenized as pre gemma4 whatever is written
        vtype, bos, eos, effective_pre, merges_needed = "bpe", LLAMA_TOKEN_NULL, LLAMA_TOKEN_NULL, "gemma4", True
    elif model == "hybriddna":
        return refused(f"{NOT_MODELLED}libllama loading tokenizer model '{model}'")
    else:
        return refused(CANNOT_LOAD + f"unknown tokenizer: '{model}'")  # :2150-2151
    # :2008-2011: merges present must be strings, Kimi-K2's too
    merges = _array_of(h, Keys.Tokenizer.MERGES, (GGUFValueType.STRING,)) if vtype == "bpe" else None
    if merges_needed and merges is None:
        return refused(CANNOT_LOAD + "cannot find tokenizer merges in model file")  # :2000-2004
    if vtype == "bpe":  # :2153-2429
        name = effective_pre or "default"  # :2157-2167: a missing pre is 'default'
        if name not in KNOWN_BPE_PRE:
            return refused(CANNOT_LOAD + f"unknown pre-tokenizer type: '{name}'")  # :2428
        add_bos = name in PRE_ADD_BOS  # :2174-2185, :2303-2307 tekken, :2330-2334 chameleon
        if name in PRE_NO_BOS:  # :2285-2293
            bos = LLAMA_TOKEN_NULL
    elif vtype in ("spm", "wpm"):  # :2430-2442
        add_bos = True
    elif vtype == "ugm":  # :2443-2446
        add_eos = True
    for key in (Keys.Tokenizer.ADD_PREFIX, Keys.Tokenizer.REMOVE_EXTRA_WS):  # :2457-2458
        _get(h, key, GGUFValueType.BOOL)
    tokens_arr = h.arrays.get(Keys.Tokenizer.LIST)
    if tokens_arr is None:
        return refused(CANNOT_LOAD + "cannot find tokenizer vocab in model file")  # :2461-2464
    if tokens_arr.type != GGUFValueType.STRING or h.tokens is None:
        return refused(CANNOT_LOAD + f"invalid gguf type for {Keys.Tokenizer.LIST}")  # :2466-2469
    n = len(h.tokens)
    for key, types, what in ((Keys.Tokenizer.SCORES, (GGUFValueType.INT32, GGUFValueType.FLOAT32), "scores"),
                             (Keys.Tokenizer.TOKEN_TYPE, (GGUFValueType.INT32,), "toktypes")):
        arr = _array_of(h, key, types)  # :2471-2505: the type, then at least one entry per token
        if arr is not None and arr.count < n:
            return refused(CANNOT_LOAD + f"Index out of array bounds for {what} ({arr.count} < {n})")
    # :2511-2515: the text is read as a C string (gguf_get_arr_str returns c_str(), ggml/src/gguf.cpp:1096-1099),
    # so it ends at a NUL byte; an empty text becomes "[EMPTY_i]"; texts must then be unique (GGML_ASSERT, :2544)
    tokens = tuple((t.partition("\0")[0] if "\0" in t else t) or f"[EMPTY_{i}]" for i, t in enumerate(h.tokens))
    if len(set(tokens)) != n:
        seen: set[str] = set()
        for dup in tokens:
            if dup in seen:
                break
            seen.add(dup)
        return refused(f"llama.cpp aborts loading the GGUF: GGML_ASSERT(id_to_token.size() == token_to_id.size()) "
                       f"(token text {dup!r} appears twice)")
    token_types = h.arrays.get(Keys.Tokenizer.TOKEN_TYPE)
    # the token_to_piece cache (:3052-3064) reads every BYTE-typed token as "<0xXX>" (:3699-3737; not RWKV/PLaMo-2)
    if (vtype in ("spm", "ugm", "bpe", "wpm") and token_types is not None and token_types.values
            and BYTE in token_types.values):
        for i, typ in enumerate(token_types.values[:n]):
            if typ != BYTE:
                continue
            if vtype == "wpm":  # token_to_byte has no WPM case (:3206-3207)
                return refused(f"llama.cpp aborts loading the GGUF: GGML_ABORT in token_to_byte (token {i} is "
                               "BYTE-typed in a WPM vocabulary)")
            if len(tokens[i].encode("utf-8", "surrogatepass")) < 3:  # text.substr(3, 2) throws (:3196, :3201)
                return refused(CANNOT_LOAD + f"error loading model vocabulary: basic_string::substr (token {i} "
                               f"{tokens[i]!r} is BYTE-typed but shorter than '<0xXX>')")
    ids = {"bos": bos, "eos": eos}
    for typ, key in (("bos", Keys.Tokenizer.BOS_ID), ("eos", Keys.Tokenizer.EOS_ID)):  # :2591-2635
        if ids[typ] >= n:  # a default beyond the vocabulary is disabled
            ids[typ] = LLAMA_TOKEN_NULL
        new = _get(h, key, GGUFValueType.UINT32)
        if new is not None and new < n:  # a written id beyond it is ignored
            ids[typ] = new
    for key in _OTHER_IDS:  # :2593-2635: every special id is a uint32 too, or the load throws
        _get(h, key, GGUFValueType.UINT32)
    written_bos = _get(h, Keys.Tokenizer.ADD_BOS, GGUFValueType.BOOL)  # :2637-2649
    written_eos = _get(h, Keys.Tokenizer.ADD_EOS, GGUFValueType.BOOL)
    for key in (Keys.Tokenizer.ADD_SEP, _LOWERCASE, _STRIP_ACCENTS):  # :2647, :2661-2663
        _get(h, key, GGUFValueType.BOOL)
    _array_of(h, _SUPPRESS, (GGUFValueType.INT32,))  # :2667-2673
    add_bos = add_bos if written_bos is None else written_bos
    add_eos = add_eos if written_eos is None else written_eos
    # :2232-2234 (both names are pre_type GEMMA4), :2651-2657: add_bos forced on
    if vtype == "bpe" and effective_pre in ("gemma4", "granite-embed-multi-311m") and not add_bos:
        add_bos = True
    return GGUFVocab(True, None, vtype, n, bool(add_bos), bool(add_eos), ids["bos"], ids["eos"], pre, tokens)


@dataclass
class GGUFFile:
    """What one GGUF file says about itself: libllama's vocabulary and the general.* facts."""

    file: str  # the name read (a path, or REPO/FILE on the Hub)
    vocab: GGUFVocab
    architecture: str | None = None
    name: str | None = None  # general.name
    file_type: str | None = None  # general.file_type as llama.cpp names it (LlamaFileType), e.g. MOSTLY_Q4_K_M
    has_chat_template: bool = False
    quant: str = ""  # the tag llama-server's -hf REPO:QUANT matches
    split_count: int = 1
    kv_bytes: int | None = None  # the size of the key/value section
    notes: list[str] = field(default_factory=list)
    arch: dict | None = None  # arch_from_header(...).to_dict(): the architecture facts the engines check

    def to_dict(self) -> dict:
        """The catalog's ``gguf`` JSON for a read file: the vocabulary's facts plus the file's own."""
        return {**self.vocab.to_dict(), "source": "read", "file": self.file, "architecture": self.architecture,
                "name": self.name, "file_type": self.file_type, "has_chat_template": self.has_chat_template,
                "quant": self.quant, "split_count": self.split_count, "kv_bytes": self.kv_bytes,
                "notes": list(self.notes), "arch": self.arch}


def _file_type(value) -> str | None:
    if not isinstance(value, int):
        return None
    try:
        return LlamaFileType(value).name
    except ValueError:
        return str(value)


def facts_from_header(h: Header, file: str) -> GGUFFile:
    """The GGUFFile of a parsed header (``h.ok``); shard 2+ of a split holds no vocabulary."""
    quant, index, count = split_info(file)
    split_no = h.values.get(Keys.Split.LLM_KV_SPLIT_NO)
    split_count = h.values.get(Keys.Split.LLM_KV_SPLIT_COUNT)
    if isinstance(split_count, int) and split_count > 1:
        count = split_count
    notes = []
    if isinstance(split_no, int) and split_no > 0 and Keys.Tokenizer.LIST not in h.types:
        vocab = refused(f"{file} is shard {split_no + 1} of {count} of a split GGUF: the vocabulary is in shard 1")
    else:
        vocab = vocab_from_header(h)
    if count > 1:
        notes.append(f"split GGUF: read shard 1 of {count}")
    arch = h.values.get(Keys.General.ARCHITECTURE)
    name = h.values.get(Keys.General.NAME)
    return GGUFFile(
        file=file, vocab=vocab, architecture=arch if isinstance(arch, str) else None,
        name=name if isinstance(name, str) else None, file_type=_file_type(h.values.get(Keys.General.FILE_TYPE)),
        has_chat_template=bool(h.values.get(Keys.Tokenizer.CHAT_TEMPLATE)), quant=quant, split_count=count,
        kv_bytes=h.kv_end, notes=notes, arch=arch_from_header(h).to_dict())


def read_gguf(path: str | Path, *, max_bytes: int = DEFAULT_MAX_KV_BYTES) -> GGUFFile:
    """The facts of a local .gguf file (only its key/value section is read); bad files raise InputError."""
    p = Path(path)
    try:
        r = read_local(p, max_bytes=max_bytes)
    except OSError as e:
        raise InputError("error", f"{p}: cannot read: {e.strerror or e}") from None
    if not r.header.ok:
        raise InputError("malformed", f"{p}: {r.header.reason}")
    return facts_from_header(r.header, p.name)


__all__ = ["GGUFFile", "facts_from_header", "read_gguf", "vocab_from_header"]
