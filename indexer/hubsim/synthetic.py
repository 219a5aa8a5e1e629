"""Generate a synthetic hub tree with the duplication pattern of the real Hub.

A few base repos per family; most other repos are fine-tunes that reuse their base's tokenizer
files byte for byte (hard-linked, so thousands of repos cost little disk and hashing), some with
a typical edit (chat tokens, padded ``vocab_size``, remote code, ...); plus a long tail of unique
tokenizers. Every repo's ground truth is recorded in ``hub.json`` as ``synthetic_kind`` /
``synthetic_base`` (ignored by the server).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections import Counter

from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from .repos import HUB_META_FILE, git_blob_sha1, hub_date, split_flat_name

FAMILIES = [  # (name, model_type, architecture, special tokens (bos, eos, unk or None))
    ("Lumen", "llama", "LlamaForCausalLM", ("<s>", "</s>", "<unk>")),
    ("Corvid", "mistral", "MistralForCausalLM", ("<s>", "</s>", "<unk>")),
    ("Basalt", "qwen2", "Qwen2ForCausalLM", (None, "<|endoftext|>", None)),
    ("Quill", "gpt2", "GPT2LMHeadModel", ("<|endoftext|>", "<|endoftext|>", "<|endoftext|>")),
    ("Marlin", "gpt_neox", "GPTNeoXForCausalLM", ("<|endoftext|>", "<|endoftext|>", None)),
    ("Tansy", "phi3", "Phi3ForCausalLM", ("<s>", "<|endoftext|>", "<unk>")),
    ("Orrery", "gemma", "GemmaForCausalLM", ("<bos>", "<eos>", "<unk>")),
    ("Wren", "falcon", "FalconForCausalLM", (None, "<|endoftext|>", None)),
]
SIZES = [("0.5B", 5 * 10**8), ("1B", 10**9), ("3B", 3 * 10**9), ("7B", 7 * 10**9), ("13B", 13 * 10**9)]
SUFFIXES = ["sft", "dpo", "orpo", "chat", "instruct", "finetuned", "merged", "v2", "ko", "ja", "de", "code",
            "math", "roleplay", "medical", "legal", "uncensored", "lora-merged", "alpaca", "qa"]
USER_PARTS = (["quiet", "amber", "rapid", "lunar", "north", "tiny", "deep", "brave", "solar", "misty"],
              ["fox", "lab", "ai", "nlp", "owl", "works", "bits", "forge", "mind", "byte"])
# Fine-tune kinds and weights; "unique" (the long tail) is decided separately.
FINETUNE_KINDS = [("copy", 62), ("chat", 12), ("pad_vocab", 10), ("remote_code", 3), ("gated", 4),
                  ("no_tokenizer", 4), ("huge", 2), ("malformed", 3)]
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "merges.txt", "tokenizer_config.json",
                   "special_tokens_map.json", "added_tokens.json")
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
          " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
          "{% endif %}")
EPOCH_2023 = 1672531200


def _dumps(obj) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode()


def random_merges(rng: random.Random, vocab: dict[str, int], letters: list[str], n_merges: int) -> list[tuple]:
    """``n_merges`` random BPE merges over ``letters`` (pieces of at most 8 characters), added to ``vocab``."""
    pieces: list[str] = list(letters)
    merges: list[tuple] = []
    while len(merges) < n_merges:
        a = rng.choice(pieces)
        b = rng.choice(letters if rng.random() < 0.6 else pieces)
        if len(a) + len(b) > 8 or a + b in vocab:
            continue
        vocab[a + b] = len(vocab)
        merges.append((a, b))
        pieces.append(a + b)
    return merges


def build_bpe_tokenizer(rng: random.Random, n_merges: int, specials: list[str]) -> bytes:
    """A small, valid byte-level BPE tokenizer.json (random merges over letters; deterministic per rng)."""
    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    merges = random_merges(rng, vocab, list("abcdefghijklmnopqrstuvwxyzĠ"), n_merges)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(specials)
    return (tok.to_str(pretty=True) + "\n").encode()


def _added_token(content: str) -> dict:
    return {"content": content, "lstrip": False, "normalized": False, "rstrip": False,
            "single_word": False, "special": True}


def _generated_files(rng: random.Random, family, n_merges: int, config_extra: dict, chat: bool) -> dict:
    """Tokenizer + config files for a generated (non-corpus) base or long-tail repo."""
    _, model_type, arch, (bos, eos, unk) = family
    specials = list(dict.fromkeys(t for t in (bos, eos, unk) if t))
    tok_bytes = build_bpe_tokenizer(rng, n_merges, specials)
    n_vocab = 256 + n_merges + len(specials)
    ids = {t: 256 + n_merges + i for i, t in enumerate(specials)}
    tok_cfg = {
        "added_tokens_decoder": {str(ids[t]): _added_token(t) for t in specials},
        "bos_token": bos,
        "clean_up_tokenization_spaces": False,
        "eos_token": eos,
        "model_max_length": 4096,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    if unk:
        tok_cfg["unk_token"] = unk
    if chat:
        tok_cfg["chat_template"] = CHATML
    config = {
        "architectures": [arch],
        "model_type": model_type,
        "vocab_size": n_vocab,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "max_position_embeddings": 4096,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.44.0",
        **({"bos_token_id": ids[bos]} if bos else {}),
        "eos_token_id": ids[eos],
        **config_extra,
    }
    return {
        "config.json": _dumps(config),
        "tokenizer.json": tok_bytes,
        "tokenizer_config.json": _dumps(tok_cfg),
        "special_tokens_map.json": _dumps({k: v for k, v in (("bos_token", bos), ("eos_token", eos),
                                                             ("unk_token", unk)) if v}),
        "generation_config.json": _dumps({"bos_token_id": ids.get(bos), "eos_token_id": ids[eos]}),
    }


def _vocab_size(config: dict):
    if isinstance(config.get("vocab_size"), int):
        return config["vocab_size"]
    text = config.get("text_config")
    return text.get("vocab_size") if isinstance(text, dict) else None


def _edit_json(data: bytes, fn) -> bytes | None:
    try:
        obj = json.loads(data)
    except ValueError:
        return None
    return _dumps(fn(obj)) if isinstance(obj, dict) else None


def _with_chat_tokens(files: dict) -> dict | None:
    """Append <|im_start|>/<|im_end|> after the highest id (tokenizer.json + tokenizer_config.json)."""
    if "tokenizer.json" not in files or "tokenizer_config.json" not in files:
        return None
    tok = _safe_json(files["tokenizer.json"])
    if tok is None:
        return None
    vocab = (tok.get("model") or {}).get("vocab")
    ids = [t["id"] for t in tok.get("added_tokens", [])]
    if isinstance(vocab, dict):
        ids += list(vocab.values())
    elif isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        ids.append(len(vocab) - 1)
    contents = {t["content"] for t in tok.get("added_tokens", [])}
    new = [c for c in ("<|im_start|>", "<|im_end|>") if c not in contents]
    if not new or not ids:
        return None
    first = max(ids) + 1
    for i, content in enumerate(new):
        tok.setdefault("added_tokens", []).append({"id": first + i, **_added_token(content)})

    def edit_cfg(cfg):
        dec = cfg.setdefault("added_tokens_decoder", {})
        for i, content in enumerate(new):
            dec[str(first + i)] = _added_token(content)
        cfg["chat_template"] = CHATML
        return cfg

    cfg = _edit_json(files["tokenizer_config.json"], edit_cfg)
    if cfg is None:
        return None
    # No indent: the pure-Python pretty printer is slow on multi-MB tokenizers.
    return {**files, "tokenizer.json": (json.dumps(tok, ensure_ascii=False) + "\n").encode(),
            "tokenizer_config.json": cfg}


def _with_padded_vocab(files: dict, multiple: int) -> dict | None:
    cfg = json.loads(files["config.json"]) if "config.json" in files else None
    if not isinstance(cfg, dict) or not isinstance(cfg.get("vocab_size"), int):
        return None
    v = cfg["vocab_size"]
    cfg["vocab_size"] = (v // multiple + 1) * multiple
    return {**files, "config.json": _dumps(cfg)}


def _with_remote_code(files: dict) -> dict | None:
    def edit(cfg):
        cfg["auto_map"] = {"AutoTokenizer": ["tokenization_custom.CustomTokenizer", None]}
        return cfg

    cfg = _edit_json(files.get("tokenizer_config.json", b""), edit)
    if cfg is None:
        return None
    code = b"from transformers import PreTrainedTokenizer\n\n\nclass CustomTokenizer(PreTrainedTokenizer):\n"
    code += b"    pass\n"
    return {**files, "tokenizer_config.json": cfg, "tokenization_custom.py": code}


def _malformed(files: dict) -> dict | None:
    name = next((n for n in ("tokenizer.json", "tokenizer_config.json") if n in files), None)
    if name is None:
        return None
    return {**files, name: files[name][: len(files[name]) // 2]}


class _Writer:
    """Writes each distinct content once and hard-links every further copy to it."""

    def __init__(self, out_dir: str):
        self.out_dir = out_dir
        self.first: dict[str, str] = {}  # blob id -> a path holding that content
        self.sizes: dict[str, int] = {}
        self._ids: dict[int, tuple[bytes, str]] = {}  # id(bytes) -> (bytes kept alive, blob id)

    def _blob(self, data: bytes) -> str:
        hit = self._ids.get(id(data))
        if hit is None or hit[0] is not data:
            hit = self._ids[id(data)] = (data, git_blob_sha1(data))
        return hit[1]

    def put(self, repo_id: str, files: dict[str, bytes]) -> None:
        repo_dir = os.path.join(self.out_dir, *repo_id.split("/"))
        os.makedirs(repo_dir, exist_ok=True)
        for name, data in files.items():
            dst = os.path.join(repo_dir, name)
            blob = self._blob(data)
            if blob in self.first:
                try:
                    os.link(self.first[blob], dst)
                    continue
                except OSError:  # other filesystem or too many links: write a fresh copy
                    pass
            with open(dst, "wb") as f:
                f.write(data)
            self.first[blob] = dst
            self.sizes[blob] = len(data)


def _date(rng: random.Random, after: float, span_days: float) -> float:
    return after + rng.random() * span_days * 86400


def generate_synthetic_hub(
    out_dir, n_repos: int, seed: int = 0, base_dirs=None, overwrite: bool = True
) -> dict:
    """Write a hub tree of ``n_repos`` repos (nested ``owner/name`` layout + ``hub.json``) to ``out_dir``.

    With ``base_dirs`` (e.g. dirs of the corpus), each dir becomes a base repo whose files the
    fine-tunes reuse; otherwise small BPE tokenizers are generated. Deterministic for a seed.
    Returns {"n_repos", "n_distinct_blobs", "distinct_bytes", "kinds", "bases"}.
    """
    out_dir = os.fspath(out_dir)
    if os.path.exists(out_dir) and os.listdir(out_dir):
        if not overwrite:
            raise FileExistsError(out_dir)
        shutil.rmtree(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(seed)
    writer = _Writer(out_dir)
    meta: dict[str, dict] = {}
    kinds: Counter = Counter()
    used_ids: set[str] = set()

    # -- bases -----------------------------------------------------------------------------------
    bases = []  # (repo_id, files, params, created, chat)
    if base_dirs:
        for d in list(base_dirs)[:n_repos]:
            d = os.fspath(d)
            name = os.path.basename(d.rstrip("/"))
            owner_name = split_flat_name(name) or ("base", name)
            files = {}
            for fn in sorted(os.listdir(d)):
                path = os.path.join(d, fn)
                if os.path.isfile(path) and not fn.startswith("."):
                    with open(path, "rb") as f:
                        files[fn] = f.read()
            chat = b"chat_template" in files.get("tokenizer_config.json", b"")
            params = 10 ** rng.uniform(8.5, 10.8)
            bases.append(("/".join(owner_name), files, int(params), _date(rng, EPOCH_2023, 500), chat))
    else:
        n_fam = max(1, min(len(FAMILIES), n_repos // 10))
        for fam in FAMILIES[:n_fam]:
            n_merges = rng.randint(150, 450)
            tok_seed = rng.random()
            org = f"{fam[0].lower()}-ai"
            for j, (size_name, params) in enumerate(rng.sample(SIZES, rng.randint(1, 3))):
                if len(bases) >= n_repos:
                    break
                chat = j > 0 and rng.random() < 0.5  # an "-Instruct" base shares the tokenizer + a template
                files = _generated_files(
                    random.Random(tok_seed), fam, n_merges, {"hidden_size": 64 * (j + 1)}, chat
                )
                rid = f"{org}/{fam[0]}-{size_name}" + ("-Instruct" if chat else "")
                bases.append((rid, files, params, _date(rng, EPOCH_2023, 500), chat))
    for rid, files, params, created, chat in bases:
        used_ids.add(rid)
        writer.put(rid, files)
        cfg = _safe_json(files.get("config.json"))
        meta[rid] = _meta(rng, rid, cfg, params, created, chat, None, "base", downloads_scale=10_000)
        kinds["base"] += 1

    # -- fine-tunes and long tail ----------------------------------------------------------------
    variant_cache: dict[tuple, dict | None] = {}
    kind_names = [k for k, _ in FINETUNE_KINDS]
    kind_weights = [w for _, w in FINETUNE_KINDS]
    base_weights = [1.0 / (i + 1) for i in range(len(bases))]  # Zipf-ish popularity of bases
    for _ in range(n_repos - len(bases)):
        owner = rng.choice(USER_PARTS[0]) + rng.choice(USER_PARTS[1]) + str(rng.randint(1, 999))
        if rng.random() < 0.15:
            fam = rng.choice(FAMILIES)
            rid = _unique_id(f"{owner}/{fam[0].lower()}-scratch-{rng.randint(1, 99)}m", used_ids)
            chat = rng.random() < 0.3
            files = _generated_files(rng, fam, rng.randint(100, 400), {"_name_or_path": rid}, chat)
            params = int(10 ** (7 + 3.5 * rng.random() ** 2))
            writer.put(rid, files)
            meta[rid] = _meta(rng, rid, _safe_json(files["config.json"]), params,
                              _date(rng, EPOCH_2023, 800), chat, None, "unique")
            kinds["unique"] += 1
            continue
        b = rng.choices(range(len(bases)), weights=base_weights)[0]
        base_id, base_files, params, base_created, base_chat = bases[b]
        kind = rng.choices(kind_names, weights=kind_weights)[0]
        arg = rng.choice((64, 128)) if kind == "pad_vocab" else None
        key = (b, kind, arg)
        if key not in variant_cache:
            variant_cache[key] = _variant(base_files, kind, arg)
        variant = variant_cache[key]
        if variant is None:  # the edit does not apply to this base (e.g. no tokenizer.json)
            kind, files = "copy", base_files
        else:
            files = variant
        short = base_id.split("/", 1)[1][:40]
        rid = _unique_id(f"{owner}/{short}-{rng.choice(SUFFIXES)}", used_ids)
        if "config.json" in files and rng.random() < 0.5:  # trainer rewrote config: a unique config blob
            edited = _edit_json(files["config.json"], lambda c, rid=rid: {**c, "_name_or_path": rid})
            if edited is not None:
                files = {**files, "config.json": edited}
        writer.put(rid, files)
        chat = base_chat or kind == "chat"
        m = _meta(rng, rid, _safe_json(files.get("config.json")), params,
                  _date(rng, base_created, 400), chat, base_id, kind)
        if kind == "gated":
            m["gated"] = rng.choice(("auto", "manual"))
        if kind == "huge":
            big = next((n for n in ("tokenizer.json", "tokenizer.model", "vocab.json", "config.json")
                        if n in files), None)
            if big:
                m["fake_sizes"] = {big: 200_000_000}
        meta[rid] = m
        kinds[kind] += 1

    with open(os.path.join(out_dir, HUB_META_FILE), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    return {
        "n_repos": len(meta),
        "n_distinct_blobs": len(writer.sizes),
        "distinct_bytes": sum(writer.sizes.values()),
        "kinds": dict(sorted(kinds.items())),
        "bases": [b[0] for b in bases],
    }


def _variant(files: dict, kind: str, arg) -> dict | None:
    if kind == "chat":
        return _with_chat_tokens(files)
    if kind == "pad_vocab":
        return _with_padded_vocab(files, arg)
    if kind == "remote_code":
        return _with_remote_code(files)
    if kind == "malformed":
        return _malformed(files)
    if kind == "no_tokenizer":
        return {n: d for n, d in files.items() if n not in TOKENIZER_FILES}
    return files


def _safe_json(data: bytes | None):
    try:
        obj = json.loads(data) if data else None
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _unique_id(rid: str, used: set[str]) -> str:
    rid = rid.replace("--", "-").replace("..", ".")  # the client rejects these in repo ids
    out, n = rid, 2
    while out in used:
        out, n = f"{rid}-{n}", n + 1
    used.add(out)
    return out


def _meta(rng, rid, cfg, params, created, chat, base_id, kind, downloads_scale=1) -> dict:
    model_type = (cfg or {}).get("model_type")
    tags = ["transformers", "safetensors"] + ([model_type] if model_type else []) + ["text-generation"]
    if chat:
        tags.append("conversational")
    if base_id:
        tags += [f"base_model:{base_id}", f"base_model:finetune:{base_id}"]
    tags.append("license:apache-2.0")
    downloads = int((rng.paretovariate(0.9) - 1) * 3 * downloads_scale)
    last = _date(rng, created, 200)
    m = {
        "createdAt": hub_date(created),
        "lastModified": hub_date(last),
        "downloads": downloads,
        "likes": int((downloads ** 0.5) * rng.random()),
        "params": params,
        "pipeline_tag": "text-generation",
        "library_name": "transformers",
        "tags": tags,
        "synthetic_kind": kind,
    }
    if base_id:
        m["baseModels"] = [base_id]
        m["synthetic_base"] = base_id
    return m
