"""The engine rules of DESIGN §2: one verdict per engine for a (target, draft) pair.

A side is described by its config vocab sizes, its fingerprint facts and, when the rule
needs token text (diffs, llama.cpp, TLI), its full token->id mapping.
"""

from __future__ import annotations

from dataclasses import dataclass

ENGINES = ("sglang", "vllm", "transformers", "llama.cpp", "mlx")
LLAMACPP_MAX_VOCAB_DIFF = 128  # SPEC_VOCAB_MAX_SIZE_DIFFERENCE
LLAMACPP_CHECK_START_ID = 5  # SPEC_VOCAB_CHECK_START_TOKEN_ID
SPACE_MARKERS = ("Ġ", "▁")


@dataclass
class Side:
    name: str
    vocab_size: int | None  # text-config vocab_size, SGLang's rule
    vocab_size_transformers: int | None  # config.get_text_config().vocab_size (vLLM, transformers)
    tok: dict | None  # fingerprint facts; None when no tokenizer could be loaded
    vocab: dict[str, int] | None = None  # full mapping, when available


@dataclass
class Verdict:
    compatible: bool
    reasons: list[str]

    def to_dict(self) -> dict:
        return {"compatible": self.compatible, "reasons": self.reasons}


def _same_mapping(t: Side, d: Side) -> bool | None:
    if t.tok is None or d.tok is None:
        return None
    return t.tok["vocab_sha256"] == d.tok["vocab_sha256"]


def sglang(t: Side, d: Side) -> Verdict:
    """STANDALONE: equal text-config vocab_size and equal get_vocab() dicts."""
    if t.vocab_size != d.vocab_size:
        return Verdict(False, [f"vocab_size differs: target {t.vocab_size}, draft {d.vocab_size}"])
    same = _same_mapping(t, d)
    if same is None:
        return Verdict(True, [f"vocab_size {t.vocab_size} on both; a tokenizer could not be loaded, "
                              "so SGLang skips the mapping check"])
    if not same:
        return Verdict(False, [f"vocab_size {t.vocab_size} on both, but get_vocab() mappings differ"])
    return Verdict(True, [f"vocab_size {t.vocab_size} and get_vocab() mapping identical"])


def vllm(t: Side, d: Side) -> Verdict:
    """draft_model: equal get_text_config().vocab_size."""
    ts, ds = t.vocab_size_transformers, d.vocab_size_transformers
    if ts != ds:
        return Verdict(False, [f"vocab_size differs: target {ts}, draft {ds} "
                               "(use_heterogeneous_vocab=True switches to TLI)"])
    reasons = [f"vocab_size {ts} on both"]
    if _same_mapping(t, d) is False:
        reasons.append("vLLM does not compare mappings, and these differ: drafts will be mostly rejected")
    return Verdict(True, reasons)


def transformers_assisted(t: Side, d: Side) -> Verdict:
    """Assisted generation: equal vocab_size is taken as 'same tokenizer' without a check."""
    ts, ds = t.vocab_size_transformers, d.vocab_size_transformers
    if ts != ds:
        return Verdict(False, [f"vocab_size differs: target {ts}, draft {ds}; needs assistant_tokenizer "
                               "(universal assisted generation)"])
    if _same_mapping(t, d) is False:
        return Verdict(False, [f"vocab_size {ts} on both, so transformers treats them as one tokenizer, but the "
                               "mappings differ: output would be silently corrupted"])
    return Verdict(True, [f"vocab_size {ts} on both and the same mapping"])


def mlx(t: Side, d: Side) -> Verdict:
    """MLX-LM / LM Studio: equal tokenizer.vocab_size (base vocabulary, no added tokens)."""
    if t.tok is None or d.tok is None:
        return Verdict(False, ["a tokenizer could not be loaded"])
    ts, ds = t.tok.get("hf_vocab_size"), d.tok.get("hf_vocab_size")
    if ts != ds:
        return Verdict(False, [f"tokenizer.vocab_size differs: target {ts}, draft {ds}"])
    return Verdict(True, [f"tokenizer.vocab_size {ts} on both"])


def vocab_type(vocab: dict[str, int]) -> str:
    """llama.cpp's vocab type, judged from the space marker the tokens use."""
    spm = sum(1 for tok in vocab if tok.startswith("▁"))
    bpe = sum(1 for tok in vocab if tok.startswith("Ġ"))
    if spm > bpe:
        return "spm"
    return "bpe" if bpe else "other"


def gguf_tokens(vocab: dict[str, int], vocab_size: int | None) -> list[str]:
    """The token list a GGUF conversion writes: padded to config vocab_size with [PAD{i}]."""
    n = max([(vocab_size or 0), *(i + 1 for i in vocab.values())] or [0])
    tokens = [f"[PAD{i}]" for i in range(n)]
    for tok, i in vocab.items():
        tokens[i] = tok
    return tokens


def llamacpp(t: Side, d: Side) -> Verdict:
    """common_speculative_are_compatible: type, BOS/EOS, size within 128, text equal from id 5."""
    if t.vocab is None or d.vocab is None or t.tok is None or d.tok is None:
        return Verdict(False, ["token lists unavailable, cannot evaluate"])
    reasons = []
    tt, dt = vocab_type(t.vocab), vocab_type(d.vocab)
    if tt != dt:
        reasons.append(f"vocab type differs: target {tt}, draft {dt}")
    for key in ("add_bos_token", "add_eos_token", "bos_token_id", "eos_token_id"):
        if t.tok.get(key) != d.tok.get(key):
            reasons.append(f"{key} differs: target {t.tok.get(key)}, draft {d.tok.get(key)}")
    tl, dl = gguf_tokens(t.vocab, t.vocab_size), gguf_tokens(d.vocab, d.vocab_size)
    if abs(len(tl) - len(dl)) > LLAMACPP_MAX_VOCAB_DIFF:
        reasons.append(f"n_vocab differs by {abs(len(tl) - len(dl))} (> {LLAMACPP_MAX_VOCAB_DIFF}): "
                       f"target {len(tl)}, draft {len(dl)}")
    else:
        for i in range(LLAMACPP_CHECK_START_ID, min(len(tl), len(dl))):
            if tl[i] != dl[i]:
                reasons.append(f"token {i} differs: target {tl[i]!r}, draft {dl[i]!r}")
                break
    if reasons:
        return Verdict(False, reasons)
    return Verdict(True, [f"same vocab type, BOS/EOS, n_vocab {len(tl)}/{len(dl)} and token text from id "
                          f"{LLAMACPP_CHECK_START_ID}"])


def _normalize(token: str) -> str:
    return " " + token[1:] if token[:1] in SPACE_MARKERS else token


def tli_tokens(vocab: dict[str, int], vocab_size: int | None) -> set[str]:
    limit = vocab_size if vocab_size is not None else float("inf")
    return {_normalize(tok) for tok, i in vocab.items() if i < limit}


def tli(t: Side, d: Side) -> dict | None:
    """Token-level intersection: tokens equal after one leading Ġ/▁ -> space, ids < vocab_size.

    ``ratio`` is the share of the draft's tokens that the target also has, which bounds
    how much of the draft's output TLI can translate.
    """
    if t.vocab is None or d.vocab is None:
        return None
    ts, ds = tli_tokens(t.vocab, t.vocab_size), tli_tokens(d.vocab, d.vocab_size)
    inter = len(ts & ds)
    return {"intersection": inter, "ratio": round(inter / len(ds), 4) if ds else 0.0}


RULES = {"sglang": sglang, "vllm": vllm, "transformers": transformers_assisted, "llama.cpp": llamacpp, "mlx": mlx}


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


def suggest_fix(t: Side, d: Side, verdicts: dict[str, Verdict], tli_info: dict | None) -> str | None:
    """A precise way to make SGLang accept the pair, when one exists."""
    if verdicts["sglang"].compatible or t.tok is None or d.tok is None:
        return None
    same_mapping = _same_mapping(t, d)
    if same_mapping:
        return (f"same mapping, vocab_size differs ({t.vocab_size} vs {d.vocab_size}): use TLI "
                "(vLLM `use_heterogeneous_vocab`), or resize the draft's embeddings and lm_head to "
                f"{t.vocab_size} rows")
    if t.tok["base_vocab_sha256"] == d.tok["base_vocab_sha256"] and t.vocab_size == d.vocab_size:
        max_target_id = t.tok.get("max_id")
        if max_target_id is not None and d.vocab_size is not None and max_target_id < d.vocab_size:
            return ("identical base vocabulary, only added tokens differ, every target id < draft vocab_size: "
                    "copy the target's tokenizer files into the draft directory")
        return ("identical base vocabulary, only added tokens differ, but some target ids exceed the draft's "
                "vocab_size: resize the draft's embeddings or use TLI")
    if tli_info is not None:
        return (f"different vocabularies: use TLI (vLLM `use_heterogeneous_vocab`, transformers "
                f"assistant_tokenizer); token intersection {tli_info['intersection']} "
                f"({tli_info['ratio']:.1%} of the draft)")
    return None


def check_pair(t: Side, d: Side) -> dict:
    """Every engine's verdict, the TLI intersection, differences and a fix, as the CLI prints them."""
    verdicts = {name: rule(t, d) for name, rule in RULES.items()}
    tli_info = tli(t, d)
    return {
        "target": t.name,
        "draft": d.name,
        "verdicts": {name: v.to_dict() for name, v in verdicts.items()},
        "tli": tli_info,
        "fix": suggest_fix(t, d, verdicts, tli_info),
        "details": {
            "vocab_size": {"target": t.vocab_size, "draft": d.vocab_size},
            "vocab_size_transformers": {"target": t.vocab_size_transformers, "draft": d.vocab_size_transformers},
            "vocab_len": {"target": (t.tok or {}).get("vocab_len"), "draft": (d.tok or {}).get("vocab_len")},
            "added_only_in_target": added_only(t, d),
            "added_only_in_draft": added_only(d, t),
            "first_differing_ids": first_differing_ids(t, d),
        },
    }
