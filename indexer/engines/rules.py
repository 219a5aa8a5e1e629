"""A (target, draft) pair as ``indexer check`` reports it: every engine's verdict from the registry
(:mod:`indexer.engines`), the TLI intersections, the differences, and a fix.

A side is described by its config vocab sizes, its fingerprint facts, the GGUF facts llama.cpp
reads and, when the rule needs token text (diffs, TLI), its full token->id mapping.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import (
    DEFAULT_ENGINE,
    ENGINES,
    GGUF_ENGINE,
    WORKS,
    Side,
    Verdict,
    by_version,
    pair_agreement,
    same_mapping,
    verdicts,
    versions_line,
)
from .llamacpp import rule as llamacpp  # noqa: F401  (the rules by their names here: tests call them)
from .lmstudio import rule as lmstudio  # noqa: F401
from .mlx import rule as mlx  # noqa: F401
from .setup import plain, text
from .sglang import rule as sglang  # noqa: F401
from .transformers import rule as transformers_assisted  # noqa: F401
from .vllm import rule as vllm  # noqa: F401
from .vllm import tli_constraints

__all__ = ["ENGINES", "RULES", "Side", "Verdict", "check_pair", "tli", "fix_for", "suggest_fixes"]

RULES = {name: e.rule for name, e in ENGINES.items()}

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
    """The lowest ids whose tokens differ, so ``check`` can show where two mappings part."""
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


def fix_for(engine: str, outcome: str, *, same_mapping: bool | None, same_base: bool | None,
            sizes: tuple[int | None, int | None] = (None, None), tli_info: dict | None = None,
            tli_blocked: Sequence[str] = (), release: str | None = None) -> str | None:
    """The one way to change this engine's outcome for a pair (``check`` and query's near misses both
    ask here); None when nothing does, or nothing is needed. Each engine words its own (``Engine.fix``).

    Never "copy the target's tokenizer files" where it changes nothing: SGLang's and vLLM's draft loads
    no tokenizer (the draft's weights decide what its ids mean), transformers and MLX decode the draft
    with the target's tokenizer. Only llama.cpp reads the draft's token texts, from its GGUF file.
    """
    entry = ENGINES.get(engine)
    if outcome == WORKS or entry is None:
        return None
    entry = entry.at(release)
    shared = bool(same_mapping or same_base)  # the ids of ordinary text mean the same on both sides
    tli = ""
    if tli_info is not None and tli_info.get("intersection") is not None:
        tli = f" (token intersection {tli_info['intersection']}, {tli_info['ratio']:.1%} of the draft)"
    return entry.fix(outcome, shared=shared, sizes=sizes, tli=tli, tli_blocked=tli_blocked)


def gguf_texts_shared(t: Side, d: Side) -> bool | None:
    """Two GGUF token lists that are one vocabulary with a few texts renamed or appended: at most 1% of the
    ids llama.cpp compares (from 5 to the smaller n_vocab, common/speculative.cpp:106-124) differ. None when
    a side has no token list (read or predicted)."""
    tt, dt = (s.gguf.tokens if s.gguf is not None else None for s in (t, d))
    if tt is None or dt is None or min(len(tt), len(dt)) <= 5:
        return None
    n = min(len(tt), len(dt))
    differ = sum(1 for i in range(5, n) if tt[i] != dt[i])
    return differ <= max(1, (n - 5) // 100)


def suggest_fixes(t: Side, d: Side, results: dict[str, Verdict], tli_info: dict | None) -> dict[str, str | None]:
    """Per engine, the fix that changes its outcome (None: works already, or nothing helps), at the release each
    verdict names."""
    same = same_mapping(t, d)
    base = None if t.tok is None or d.tok is None else t.tok.get("base_vocab_sha256") == d.tok.get("base_vocab_sha256")
    blocked = tli_constraints(t, d)
    ambiguous = bool(t.text_config_error or d.text_config_error)  # vLLM and transformers raise before any size
    out: dict[str, str | None] = {}
    for name, v in results.items():
        if v.fix is not None:  # an architecture row decided the outcome, and it has a way around it
            out[name] = v.fix
            continue
        if v.vocabulary is not None and v.vocabulary != v.outcome:  # an architecture row decided: no vocabulary fix
            out[name] = None
            continue
        if ambiguous and "text_config_error" in ENGINES[name].facts:
            out[name] = None
            continue
        rule_of = name
        e = ENGINES[name]
        if (t.gguf_file or d.gguf_file) and e.gguf_rule is not None and e.gguf_rule is not e.rule:
            rule_of = GGUF_ENGINE  # a GGUF file runs on llama.cpp (LM Studio's GGUF engine too): its fixes apply
        shared = base
        if shared is None and "gguf" in ENGINES[rule_of].facts:  # GGUF files: their token lists are all we have
            shared = gguf_texts_shared(t, d)
        out[name] = fix_for(rule_of, v.outcome, same_mapping=same, same_base=shared, sizes=ENGINES[name].sizes(t, d),
                            tli_info=tli_info, tli_blocked=blocked,
                            release=v.version if rule_of == name else None)
    return out


def _with_versions(name: str, v: Verdict, t: Side, d: Side) -> dict:
    """The verdict's JSON, with the outcome per release when the engine's releases disagree on the pair."""
    out = v.to_dict()
    seen = by_version(name, t, d)
    out["by_version"] = seen
    out["versions"] = versions_line(name, seen) if seen else None
    return out


def _gguf_details(side: Side) -> dict | None:
    """The GGUF facts the llama.cpp verdict used; read ones say from which file (predicted ones do not)."""
    if side.gguf is None:
        return None
    out = side.gguf.to_dict()
    if side.gguf_file:
        out.update(source="read", file=side.gguf_file)
    return out


def check_pair(t: Side, d: Side, releases: dict[str, str] | None = None) -> dict:
    """Every engine's verdict, the agreement of the two vocabularies, the TLI intersections, differences
    and the fix per engine, as the CLI prints them (``fix``: the default engine's). ``releases``: engine ->
    the release to answer for (default: each engine's newest); each verdict names its ``version``, and
    ``by_version`` the outcome per release where the releases we know disagree (with ``versions``, in words)."""
    results = verdicts(t, d, releases)
    tli_info = tli(t, d)
    fixes = suggest_fixes(t, d, results, tli_info)
    gguf = {role: _gguf_details(side) for role, side in (("target", t), ("draft", d))}
    out = {
        "target": t.name,
        "draft": d.name,
        "verdicts": {name: _with_versions(name, v, t, d) for name, v in results.items()},
        "agreement": pair_agreement(t, d),
        "tli": tli_info,
        "fix": fixes[DEFAULT_ENGINE],
        "fixes": fixes,
        "details": {
            "vocab_size": {"target": t.vocab_size, "draft": d.vocab_size},
            "vocab_size_transformers": {"target": t.vocab_size_transformers, "draft": d.vocab_size_transformers},
            "vocab_size_vllm": {"target": t.vllm_vocab_size, "draft": d.vllm_vocab_size},
            "vocab_len": {"target": (t.tok or {}).get("vocab_len"), "draft": (d.tok or {}).get("vocab_len")},
            "gguf": gguf,
            "added_only_in_target": added_only(t, d),
            "added_only_in_draft": added_only(d, t),
            "first_differing_ids": first_differing_ids(t, d),
            # the architecture facts the engines' non-vocabulary rows read (None: unknown, e.g. not computed yet)
            "architecture": {role: side.arch.to_dict() if side.arch is not None else None
                             for role, side in (("target", t), ("draft", d))},
        },
    }
    if t.gguf_file or d.gguf_file:  # a GGUF file runs on llama.cpp: how to launch the pair
        head = (d.arch.head if d.arch is not None else None) or {}
        spec = head["spec_type"] if head.get("spec_type") and not head.get("embedded") else "draft_model"
        engine = ENGINES[GGUF_ENGINE]
        setup = plain(GGUF_ENGINE, engine.release, t.gguf_file or t.name, d.gguf_file or d.name, method=spec)
        out["launch"] = {GGUF_ENGINE: text(engine.launch(setup))}
    return out
