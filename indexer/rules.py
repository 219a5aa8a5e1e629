"""A (target, draft) pair as ``indexer check`` reports it: every engine's verdict from the registry
(:mod:`indexer.engines`), the TLI intersections, the differences, and a fix.

A side is described by its config vocab sizes, its fingerprint facts, the GGUF facts llama.cpp
reads and, when the rule needs token text (diffs, TLI), its full token->id mapping.
"""

from __future__ import annotations

from .engines import ENGINES, Side, Verdict, differs_only_above, same_mapping, verdicts

__all__ = ["ENGINES", "RULES", "Side", "Verdict", "check_pair", "tli", "suggest_fix"]

RULES = {name: e.rule for name, e in ENGINES.items()}
sglang = ENGINES["sglang"].rule
vllm = ENGINES["vllm"].rule
transformers_assisted = ENGINES["transformers"].rule
llamacpp = ENGINES["llama.cpp"].rule
mlx = ENGINES["mlx"].rule
lmstudio = ENGINES["lmstudio"].rule

VLLM_SPACE_FALLBACK = ("\u0120", "\u2581")  # Ġ, ▁


def vllm_space_prefixes(vocab: dict[str, int]) -> tuple[str, ...]:
    """vLLM's _detect_space_prefix (v1/spec_decode/vocab_mapping.py): the prefix of the token " a"
    encodes to, else both Ġ and ▁. Without running the tokenizer we read it from the vocabulary:
    the marker whose "<marker>a" token exists."""
    for marker in VLLM_SPACE_FALLBACK:
        if marker + "a" in vocab:
            return (marker,)
    return VLLM_SPACE_FALLBACK


def _by_id(vocab: dict[str, int]) -> list[tuple[str, int]]:
    return sorted(vocab.items(), key=lambda kv: kv[1])


def vllm_tli(t: dict[str, int], d: dict[str, int], t_size: int | None, d_size: int | None) -> int:
    """VocabMapping.intersection_size: normalized strings (one leading space marker -> " "), first id
    wins per string, counted where the target id < its vocab_size and the draft id < its vocab_size."""
    def normalized(vocab: dict[str, int]) -> dict[str, int]:
        prefixes = vllm_space_prefixes(vocab)
        out: dict[str, int] = {}
        for tok, i in _by_id(vocab):
            for p in prefixes:
                if tok.startswith(p):
                    tok = " " + tok[len(p):]
                    break
            out.setdefault(tok, i)
        return out

    tn, dn = normalized(t), normalized(d)
    tl = t_size if t_size is not None else float("inf")
    dl = d_size if d_size is not None else float("inf")
    return sum(1 for s, di in dn.items() if s in tn and tn[s] < tl and di < dl)


def transformers_space_sign(vocab: dict[str, int]) -> str | None:
    """The first character of the token " " encodes to (candidate_generator.py:766-773); read from the
    vocabulary: Ġ for byte-level BPE, ▁ for SentencePiece, else none."""
    for marker in VLLM_SPACE_FALLBACK:
        if marker in vocab:
            return marker
    return None


def transformers_tli(t: dict[str, int], d: dict[str, int]) -> int:
    """AssistantToTargetTranslator._get_assistant_to_target_input_ids (candidate_generator.py:762-795):
    the draft's space sign replaced by the target's once at the start, then exact lookup in the
    target's get_vocab(); every id counts (no vocab_size limit)."""
    ts, ds = transformers_space_sign(t), transformers_space_sign(d)
    if ts is not None and ds is not None and ts != ds:
        d = {(tok.replace(ds, ts, 1) if tok.startswith(ds) else tok): i for tok, i in d.items()}
    return sum(1 for tok in d if tok in t)


def tli(t: Side, d: Side) -> dict | None:
    """Token-level intersection as vLLM's ``use_heterogeneous_vocab`` and transformers' universal
    assisted generation count it; ``ratio`` is the vLLM count over the draft's vocab_size."""
    if t.vocab is None or d.vocab is None:
        return None
    n_vllm = vllm_tli(t.vocab, d.vocab, t.vllm_vocab_size, d.vllm_vocab_size)
    n_tf = transformers_tli(t.vocab, d.vocab)
    denominator = d.vllm_vocab_size or len(d.vocab)
    return {"intersection": n_vllm, "ratio": round(n_vllm / denominator, 4) if denominator else 0.0,
            "intersection_vllm": n_vllm, "intersection_transformers": n_tf, "same_count": n_vllm == n_tf}


def first_differing_ids(t: Side, d: Side, limit: int = 5) -> list[dict]:
    if t.vocab is None or d.vocab is None:
        return []
    ti = {i: tok for tok, i in t.vocab.items()}
    di = {i: tok for tok, i in d.vocab.items()}
    out = []
    for i in sorted(set(ti) | set(di)):
        if ti.get(i) != di.get(i):
            out.append({"id": i, "target": ti.get(i), "draft": di.get(i)})
            if len(out) >= limit:
                break
    return out


def added_only(a: Side, b: Side) -> list[str]:
    """Added-token contents that ``a`` has and ``b`` does not."""
    if a.tok is None or b.tok is None:
        return []
    theirs = {t["content"] for t in b.tok.get("added_tokens") or []}
    return [t["content"] for t in a.tok.get("added_tokens") or [] if t["content"] not in theirs]


def suggest_fix(t: Side, d: Side, results: dict[str, Verdict], tli_info: dict | None) -> str | None:
    """A precise way to make the pair work on SGLang (and the engines that share its rule)."""
    if results["sglang"].compatible or t.tok is None or d.tok is None:
        return None
    if same_mapping(t, d):
        return (f"same mapping, vocab_size differs ({t.vocab_size} vs {d.vocab_size}): use TLI "
                "(vLLM `use_heterogeneous_vocab`, transformers tokenizer= and assistant_tokenizer=), or resize "
                f"the draft's embeddings and lm_head to {t.vocab_size} rows")
    if t.vocab_size == d.vocab_size and differs_only_above(t, d, t.vocab_size):
        return (f"the mappings agree below vocab_size {t.vocab_size}: drop the tokens at ids >= {t.vocab_size} "
                "from the side that has them, or copy the target's tokenizer files into the draft directory")
    if t.tok["base_vocab_sha256"] == d.tok["base_vocab_sha256"] and t.vocab_size == d.vocab_size:
        max_target_id = t.tok.get("max_id")
        if max_target_id is not None and d.vocab_size is not None and max_target_id < d.vocab_size:
            return ("identical base vocabulary, only added tokens differ, every target id < draft vocab_size: "
                    "copy the target's tokenizer files into the draft directory")
        return ("identical base vocabulary, only added tokens differ, but some target ids exceed the draft's "
                "vocab_size: resize the draft's embeddings or use vLLM's TLI")
    if tli_info is not None:
        uag = ("transformers universal assisted generation (tokenizer= and assistant_tokenizer=)"
               if t.vocab_size_transformers != d.vocab_size_transformers else
               "transformers cannot (equal vocab_size makes it refuse assistant_tokenizer)")
        return (f"different vocabularies: use TLI, vLLM `use_heterogeneous_vocab` (draft_model, greedy draft); "
                f"{uag}; token intersection {tli_info['intersection']} ({tli_info['ratio']:.1%} of the draft)")
    return None


def _gguf_details(side: Side) -> dict | None:
    """The GGUF facts the llama.cpp verdict used; read ones say from which file (predicted ones do not)."""
    if side.gguf is None:
        return None
    out = side.gguf.to_dict()
    if side.gguf_file:
        out.update(source="read", file=side.gguf_file)
    return out


def check_pair(t: Side, d: Side) -> dict:
    """Every engine's verdict, the TLI intersections, differences and a fix, as the CLI prints them."""
    results = verdicts(t, d)
    tli_info = tli(t, d)
    gguf = {role: _gguf_details(side) for role, side in (("target", t), ("draft", d))}
    out = {
        "target": t.name,
        "draft": d.name,
        "verdicts": {name: v.to_dict() for name, v in results.items()},
        "tli": tli_info,
        "fix": suggest_fix(t, d, results, tli_info),
        "details": {
            "vocab_size": {"target": t.vocab_size, "draft": d.vocab_size},
            "vocab_size_transformers": {"target": t.vocab_size_transformers, "draft": d.vocab_size_transformers},
            "vocab_size_vllm": {"target": t.vllm_vocab_size, "draft": d.vllm_vocab_size},
            "vocab_len": {"target": (t.tok or {}).get("vocab_len"), "draft": (d.tok or {}).get("vocab_len")},
            "gguf": gguf,
            "added_only_in_target": added_only(t, d),
            "added_only_in_draft": added_only(d, t),
            "first_differing_ids": first_differing_ids(t, d),
        },
    }
    if t.gguf_file or d.gguf_file:  # a GGUF file runs on llama.cpp: how to launch the pair
        from .engines import launch_llamacpp

        out["launch"] = {"llama.cpp": launch_llamacpp(t.gguf_file or t.name, d.gguf_file or d.name)}
    return out
