"""Speculator head repos (and MTP targets) for the Hub imitation.

``write_head_repos(hub_dir)`` writes small head repos in the ``<owner>/<name>/`` layout that
``repos.RepoStore`` serves: a real-format ``config.json`` (SGLang-native EAGLE-3 as in
lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B, speculators EAGLE-3 as in RedHatAI/Qwen3-8B-speculator.eagle3,
z-lab style DFlash, yuhuili style EAGLE-1, SGLang-native EAGLE-1, speculators DFlash), a model card, and a
decoy ``model.safetensors`` of a few bytes whose listed size is the real checkpoint's (nothing may
download it). Their metadata goes into ``hub.json``: ``base_model:<id>`` and
``base_model:finetune:<id>`` tags as the real Hub derives them from the card (HUB-API.md §0.1 point 2).

``link_corpus_targets(hub_dir, models_dir)`` serves corpus directories under their Hub ids (symbolic
links, nothing is copied) and writes two MTP targets made from real corpus configs with
``num_nextn_predict_layers`` added. ``HEADS`` / ``TARGETS`` / ``MTP_TARGETS`` say what each repo is for.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..engines.heads import parse_head
from .repos import HUB_META_FILE

DECOY = b"decoy: a speculator head's weights are never downloaded by the indexer\n"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "merges.txt", "tokenizer_config.json",
                   "special_tokens_map.json", "added_tokens.json", "generation_config.json")

# Corpus directories served under the id they mirror (manifest.json hf_id_guess / base_model_guess), and the
# base model the imitation's card declares for them (None: a base model itself).
TARGETS = {
    "meta-llama/Llama-2-7b-chat-hf": ("isatyabrata__llama2-7b-chat-hf", None),
    "thrishalaa/Mental-Health-ChatBot": ("thrishalaa__Mental-Health-ChatBot", "meta-llama/Llama-2-7b-chat-hf"),
    "TinyLlama/TinyLlama-1.1B-Chat-v1.0": ("swayam8624__nanoquant-private__TinyLlama-1.1B-Chat-v1.0", None),
    "Qwen/Qwen2.5-0.5B-Instruct": ("infinityarpan__qwen-25-api__Qwen2.5-0.5B-Instruct", None),
    "mistralai/Mistral-7B-Instruct-v0.2": ("MonilSompura__MistralAI", None),
}
# MTP targets: (corpus dir, config edits). DeepSeek-V3 style (an MTP architecture both engines know) and a
# Qwen2 config that declares MTP layers no engine has a model for.
MTP_TARGETS = {
    "heads-lab/TinyLlama-1.1B-DeepseekV3-MTP": (
        "swayam8624__nanoquant-private__TinyLlama-1.1B-Chat-v1.0",
        {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_nextn_predict_layers": 1},
    ),
    "heads-lab/Qwen2.5-0.5B-Instruct-NextN": (
        "infinityarpan__qwen-25-api__Qwen2.5-0.5B-Instruct",
        {"num_nextn_predict_layers": 1},
    ),
}


@dataclass(frozen=True)
class HeadSpec:
    """One speculator head repo to write: its id, the target it was trained for and why it is in the hub."""

    repo_id: str
    trained_for: str  # the card's base_model
    purpose: str  # what the scenario tests
    config: dict
    library: str = "transformers"
    tags: tuple[str, ...] = ()


def _llama_layer(hidden: int, vocab: int, *, heads: int, kv: int, inter: int, model_type: str = "llama",
                 rope_theta: float = 10000.0, max_pos: int = 4096) -> dict:
    return {"attention_bias": False, "attention_dropout": 0.0, "head_dim": hidden // heads, "hidden_act": "silu",
            "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": inter,
            "max_position_embeddings": max_pos, "mlp_bias": False, "model_type": model_type,
            "num_attention_heads": heads, "num_hidden_layers": 1, "num_key_value_heads": kv, "pretraining_tp": 1,
            "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": rope_theta, "use_cache": True,
            "vocab_size": vocab}


def sglang_eagle3(hidden: int, vocab: int, draft_vocab: int, *, heads: int, kv: int, inter: int,
                  aux: list[int] | None = None) -> dict:
    """SGLang's native EAGLE-3 head config (the layout of lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B)."""
    cfg = {"architectures": ["LlamaForCausalLMEagle3"], "bos_token_id": 1, "eos_token_id": 2,
           **_llama_layer(hidden, vocab, heads=heads, kv=kv, inter=inter), "tie_word_embeddings": False,
           "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "draft_vocab_size": draft_vocab}
    if aux is not None:
        cfg["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": aux, "use_aux_hidden_state": True}
    return cfg


def speculators_eagle3(verifier: str, verifier_arch: str, hidden: int, vocab: int, draft_vocab: int, *,
                       heads: int, kv: int, inter: int, aux: list[int] | None, layer_type: str = "llama") -> dict:
    """The speculators library's EAGLE-3 config (the layout of RedHatAI/Qwen3-8B-speculator.eagle3)."""
    cfg = {"architectures": ["Eagle3Speculator"], "draft_vocab_size": draft_vocab, "has_no_defaults_at_init": False,
           "norm_before_residual": True,
           "speculators_config": {
               "algorithm": "eagle3", "default_proposal_method": "greedy",
               "proposal_methods": [{"accept_tolerance": 0.0, "proposal_type": "greedy", "speculative_tokens": 3,
                                     "verifier_accept_k": 1}],
               "verifier": {"architectures": [verifier_arch], "name_or_path": verifier}},
           "speculators_model_type": "eagle3", "speculators_version": "0.1.0.dev14", "target_hidden_size": None,
           "embed_requires_grad": False,
           "torch_dtype": "bfloat16",
           "transformer_layer_config": _llama_layer(hidden, vocab, heads=heads, kv=kv, inter=inter,
                                                    model_type=layer_type),
           "transformers_version": "4.55.0"}
    if aux is not None:
        cfg["eagle_aux_hidden_state_layer_ids"] = aux
    return cfg


def speculators_dflash(verifier: str, verifier_arch: str, hidden: int, vocab: int, *, heads: int, kv: int,
                       inter: int, aux: list[int], mask_token_id: int, block_size: int = 8) -> dict:
    """A speculators-format DFlash config (speculators_model_type dflash; aux ids are 1-based,
    vLLM transformers_utils/configs/speculators/algos.py:90-126)."""
    layer = _llama_layer(hidden, vocab, heads=heads, kv=kv, inter=inter, model_type="qwen3")
    layer["num_hidden_layers"] = 2
    return {"architectures": ["DFlashDraftModel"], "aux_hidden_state_layer_ids": aux, "block_size": block_size,
            "draft_vocab_size": None, "mask_token_id": mask_token_id,
            "speculators_config": {
                "algorithm": "dflash", "default_proposal_method": "greedy",
                "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": block_size - 1}],
                "verifier": {"architectures": [verifier_arch], "name_or_path": verifier}},
            "speculators_model_type": "dflash", "speculators_version": "0.4.0", "target_hidden_size": None,
            "torch_dtype": "bfloat16", "transformer_layer_config": layer, "transformers_version": "4.57.1"}


def zlab_dflash(hidden: int, vocab: int, *, heads: int, kv: int, inter: int, layers: list[int],
                num_target_layers: int, mask_token_id: int, block_size: int = 16) -> dict:
    """A DFlash draft in the native layout (z-lab/*-DFlash-b16: DFlashDraftModel, model_type qwen3,
    dflash_config.target_layer_ids 0-based)."""
    cfg = {"architectures": ["DFlashDraftModel"], "auto_map": {"AutoModel": "dflash.DFlashDraftModel"},
           "block_size": block_size, "dflash_config": {"mask_token_id": mask_token_id, "target_layer_ids": layers},
           **_llama_layer(hidden, vocab, heads=heads, kv=kv, inter=inter, model_type="qwen3",
                          rope_theta=1000000.0, max_pos=32768),
           "num_target_layers": num_target_layers, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
           "transformers_version": "4.57.1"}
    cfg["num_hidden_layers"] = len(layers)
    return cfg


def eagle1_legacy(hidden: int, vocab: int, *, heads: int, inter: int) -> dict:
    """The original EAGLE-1 layout (yuhuili/EAGLE-llama2-chat-7B): a plain LlamaForCausalLM of one layer."""
    return {"architectures": ["LlamaForCausalLM"], "bias": True, "bos_token_id": 1, "eos_token_id": 2,
            "hidden_act": "silu", "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": inter,
            "max_position_embeddings": 4096, "model_type": "llama", "num_attention_heads": heads,
            "num_hidden_layers": 1, "num_key_value_heads": heads, "pad_token_id": 0, "pretraining_tp": 1,
            "rms_norm_eps": 1e-05, "rope_scaling": None, "tie_word_embeddings": False, "torch_dtype": "float16",
            "transformers_version": "4.28.1", "use_cache": True, "vocab_size": vocab}


def sglang_eagle1(hidden: int, vocab: int, *, heads: int, inter: int) -> dict:
    """SGLang's EAGLE-1/2 head (lmsys/sglang-EAGLE-llama2-chat-7B): architectures LlamaForCausalLMEagle."""
    cfg = eagle1_legacy(hidden, vocab, heads=heads, inter=inter)
    cfg["architectures"] = ["LlamaForCausalLMEagle"]
    return cfg


LLAMA2_7B: dict[str, Any] = {"heads": 32, "kv": 32, "inter": 11008}
TINYLLAMA: dict[str, Any] = {"heads": 32, "kv": 4, "inter": 5632}
QWEN25_05B: dict[str, Any] = {"heads": 14, "kv": 2, "inter": 4864}
MISTRAL_7B: dict[str, Any] = {"heads": 32, "kv": 8, "inter": 14336}

HEADS = (
    HeadSpec("heads-lab/sglang-EAGLE3-TinyLlama-1.1B-Chat-v1.0", "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
             "exact fit, SGLang-native EAGLE-3 (both engines)",
             sglang_eagle3(2048, 32000, 8000, aux=[1, 10, 18], **TINYLLAMA), tags=("eagle3",)),
    HeadSpec("heads-lab/Qwen2.5-0.5B-Instruct-speculator.eagle3", "Qwen/Qwen2.5-0.5B-Instruct",
             "exact fit, speculators EAGLE-3 (vLLM only; served directly)",
             speculators_eagle3("Qwen/Qwen2.5-0.5B-Instruct", "Qwen2ForCausalLM", 896, 151936, 32000,
                                aux=[2, 12, 21], **QWEN25_05B),
             library="speculators", tags=("speculators", "eagle3")),
    HeadSpec("heads-lab/Llama-2-7b-chat-hf-speculator.eagle3", "meta-llama/Llama-2-7b-chat-hf",
             "exact fit for Llama-2-7b-chat, lineage fit for its fine-tunes (vLLM only)",
             speculators_eagle3("meta-llama/Llama-2-7b-chat-hf", "LlamaForCausalLM", 4096, 32000, 32000,
                                aux=[2, 16, 29], **LLAMA2_7B),
             library="speculators", tags=("speculators", "eagle3")),
    HeadSpec("heads-lab/sglang-EAGLE3-vicuna-7b-v1.3", "lmsys/vicuna-7b-v1.3",
             "shape-only fit on Llama-2-7b and Mistral-7B (hidden 4096, vocab 32000, 32 layers)",
             sglang_eagle3(4096, 32000, 32000, aux=[2, 16, 29], **LLAMA2_7B), tags=("eagle3",)),
    HeadSpec("heads-lab/sglang-EAGLE3-Llama-2-13b-chat-hf", "meta-llama/Llama-2-13b-chat-hf",
             "wrong hidden size for the 7B targets (5120)",
             sglang_eagle3(5120, 32000, 32000, aux=[2, 20, 37], heads=40, kv=40, inter=13824), tags=("eagle3",)),
    HeadSpec("heads-lab/sglang-EAGLE3-OpenHermes-2.5-Mistral-7B", "teknium/OpenHermes-2.5-Mistral-7B",
             "wrong vocab size for Mistral-7B-Instruct-v0.2 (32002 vs 32000)",
             sglang_eagle3(4096, 32002, 32002, aux=[2, 16, 29], **MISTRAL_7B), tags=("eagle3",)),
    HeadSpec("heads-lab/sglang-EAGLE3-Sheared-LLaMA-1.3B", "princeton-nlp/Sheared-LLaMA-1.3B",
             "aux layer ids beyond TinyLlama's 22 layers (trained on a 24-layer model)",
             sglang_eagle3(2048, 32000, 32000, aux=[1, 12, 23], **TINYLLAMA), tags=("eagle3",)),
    HeadSpec("heads-lab/EAGLE-llama2-chat-7B", "meta-llama/Llama-2-7b-chat-hf",
             "EAGLE-1 in the original layout: vLLM method eagle, not SGLang",
             eagle1_legacy(4096, 32000, heads=32, inter=11008), library="", tags=("eagle",)),
    HeadSpec("heads-lab/sglang-EAGLE-llama2-chat-7B", "meta-llama/Llama-2-7b-chat-hf",
             "EAGLE-1 in SGLang's layout (LlamaForCausalLMEagle): SGLang, not vLLM",
             sglang_eagle1(4096, 32000, heads=32, inter=11008), tags=("eagle",)),
    HeadSpec("heads-lab/Qwen2.5-0.5B-Instruct-DFlash-b16", "Qwen/Qwen2.5-0.5B-Instruct",
             "native DFlash: exact fit on vLLM; SGLang has no DFlash layer capture for Qwen2 targets",
             zlab_dflash(896, 151936, layers=[1, 8, 15, 22], num_target_layers=24, mask_token_id=151665,
                         **QWEN25_05B), tags=("dflash",)),
    HeadSpec("heads-lab/TinyLlama-1.1B-Chat-v1.0-DFlash-b16", "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
             "exact fit, native DFlash (both engines)",
             zlab_dflash(2048, 32000, layers=[1, 6, 11, 16, 20], num_target_layers=22, mask_token_id=31999,
                         **TINYLLAMA), tags=("dflash",)),
    HeadSpec("heads-lab/Mistral-7B-Instruct-v0.2-speculator.dflash", "mistralai/Mistral-7B-Instruct-v0.2",
             "exact fit, speculators DFlash (vLLM only)",
             speculators_dflash("mistralai/Mistral-7B-Instruct-v0.2", "MistralForCausalLM", 4096, 32000,
                                aux=[2, 11, 20, 29], mask_token_id=0, **MISTRAL_7B),
             library="speculators", tags=("speculators", "dflash")),
)


def _load_meta(hub_dir: Path) -> dict:
    path = hub_dir / HUB_META_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def _save_meta(hub_dir: Path, meta: dict) -> None:
    (hub_dir / HUB_META_FILE).write_text(json.dumps(meta, indent=1, sort_keys=True))


def base_model_tags(base: str, relation: str = "finetune") -> list[str]:
    """The two tags the real Hub adds for a card's ``base_model`` (HUB-API.md §0.1 point 2)."""
    return [f"base_model:{base}", f"base_model:{relation}:{base}"]


def _card(spec: HeadSpec) -> str:
    tags = "".join(f"- {t}\n" for t in ("speculative-decoding", *spec.tags))
    lib = f"library_name: {spec.library}\n" if spec.library else ""
    return (f"---\nbase_model: {spec.trained_for}\n{lib}tags:\n{tags}---\n\n# {spec.repo_id.split('/')[1]}\n\n"
            f"A speculator head trained for {spec.trained_for} (imitation data: {spec.purpose}).\n")


def decoy_size(spec: HeadSpec) -> int:
    """The listed size of the decoy weights file: the head's own parameter estimate in bf16."""
    head = parse_head(spec.config, spec.repo_id)
    return 2 * (head.params or 1) if head else len(DECOY)


def write_head_repos(hub_dir: str | os.PathLike, heads: tuple[HeadSpec, ...] = HEADS) -> list[str]:
    """Write the head repos and their metadata into ``hub_dir``; returns their ids."""
    hub_dir = Path(hub_dir)
    meta = _load_meta(hub_dir)
    for spec in heads:
        repo = hub_dir / spec.repo_id
        repo.mkdir(parents=True, exist_ok=True)
        (repo / "config.json").write_text(json.dumps(spec.config, indent=2) + "\n")
        (repo / "README.md").write_text(_card(spec))
        (repo / "model.safetensors").write_bytes(DECOY)
        tags = [*([spec.library] if spec.library else []), "safetensors", *spec.tags, "speculative-decoding",
                *base_model_tags(spec.trained_for)]
        entry = {"tags": tags, "baseModels": spec.trained_for, "pipeline_tag": "text-generation",
                 "downloads": 100, "fake_sizes": {"model.safetensors": decoy_size(spec)}}
        if spec.library:
            entry["library_name"] = spec.library
        meta[spec.repo_id] = entry
    _save_meta(hub_dir, meta)
    return [h.repo_id for h in heads]


def _link(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if not dst.exists():
        os.symlink(src.resolve(), dst)


def link_corpus_targets(hub_dir: str | os.PathLike, models_dir: str | os.PathLike) -> list[str]:
    """Serve the corpus targets under their Hub ids (symlinks) and write the MTP targets; returns their ids."""
    hub_dir, models_dir = Path(hub_dir), Path(models_dir)
    meta = _load_meta(hub_dir)
    for repo_id, (corpus_dir, base) in TARGETS.items():
        _link(models_dir / corpus_dir, hub_dir / repo_id)
        entry: dict[str, Any] = {"tags": ["transformers", "safetensors", "text-generation"], "downloads": 1000}
        if base:
            entry["tags"] += base_model_tags(base)
            entry["baseModels"] = base
        meta[repo_id] = entry
    for repo_id, (corpus_dir, edits) in MTP_TARGETS.items():
        src, dst = models_dir / corpus_dir, hub_dir / repo_id
        dst.mkdir(parents=True, exist_ok=True)
        config = json.loads((src / "config.json").read_text())
        config.update(edits)
        (dst / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        for name in TOKENIZER_FILES:
            if (src / name).is_file():
                _link(src / name, dst / name)
        meta[repo_id] = {"tags": ["transformers", "text-generation", *base_model_tags(_corpus_id(corpus_dir))],
                         "baseModels": _corpus_id(corpus_dir), "downloads": 10}
    _save_meta(hub_dir, meta)
    return [*TARGETS, *MTP_TARGETS]


def _corpus_id(corpus_dir: str) -> str:
    return next(rid for rid, (d, _) in TARGETS.items() if d == corpus_dir)


def build_heads_hub(hub_dir: str | os.PathLike, models_dir: str | os.PathLike | None = None) -> dict[str, list[str]]:
    """Heads always; corpus targets and MTP targets when ``models_dir`` (../shared/corpus/models) is given."""
    out = {"heads": write_head_repos(hub_dir), "targets": []}
    if models_dir is not None:
        out["targets"] = link_corpus_targets(hub_dir, models_dir)
    return out
