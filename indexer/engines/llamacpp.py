"""llama.cpp speculative decoding (llama-server ``--spec-type draft-simple``) on GGUF files, read from the file or
predicted from what convert_hf_to_gguf.py would write, at the commit the GGUF layer transcribes."""

from __future__ import annotations

import hashlib
import json

# the llama.cpp version the GGUF layer transcribes (one place), and the error prefix of a converter path the
# indexer does not reproduce
from ..gguf import LLAMACPP_COMMIT, NOT_MODELLED
from ..gguf.names import hf_matches, split_info
from ..speed.gate import DraftGate
from ..speed.quant import from_gguf_file_type
from .archrules import ArchRule, Head, StateIn
from .base import GGUF_CLASS_KEY, NO_SPECULATION, REFUSED, UNKNOWN, WORKS, Side, SpeedProfile, Verdict, released
from .flags import convert_outtypes, quantize_types
from .headrules import GGUFHeadRules
from .server import Exchange, Reading, Server, chat_body
from .setup import FILE, GGUF, HF, Setup, Source, noted

LLAMACPP_MAX_VOCAB_DIFF = 128  # SPEC_VOCAB_MAX_SIZE_DIFFERENCE, common/speculative.cpp:30
LLAMACPP_CHECK_START_ID = 5  # SPEC_VOCAB_CHECK_START_TOKEN_ID, common/speculative.cpp:31


# llama-server probes each context (common_context_can_seq_rm): a recurrent or hybrid memory cannot drop a partial
# suffix with draft-simple (n_rs_seq 0), so speculation runs with a checkpoint per round. The arch lists are
# src/llama-arch.cpp:1071-1109 (GGUF sides); HF sides are judged by their state layers.
ARCH_RULES = (
    ArchRule("recurrent or hybrid target", StateIn("target"), None,
             "llama-server saves the target's state before each verify and restores it on a partial acceptance "
             "(\"speculative decoding will use checkpoints\"): the output stays correct, speculation pays less",
             "common/common.cpp:1491-1529; tools/server/server-context.cpp:1226-1228, 3050-3056",
             anchors=("common_context_seq_rm_type common_context_can_seq_rm(", "will use checkpoints",
                      "const bool use_ckpt_tgt =")),
    ArchRule("recurrent or hybrid draft", StateIn("draft"), None,
             "the draft's state is checkpointed the same way", "tools/server/server-context.cpp:2980-2984",
             anchors=("const bool use_ckpt_dft = ctx_dft_seq_rm_type",)),
    # -md alone infers no type for an EAGLE-3 or Gemma-4 assistant file (only dflash, and MTP by a tensor name),
    # and draft-simple is not the head's type: the launch command carries the head's --spec-type
    ArchRule("speculator head draft", Head("draft"), None,
             "a plain -md without --spec-type runs no speculation", "common/speculative.cpp:2270-2305, "
             "common/arg.cpp:566-573, common/speculative.cpp:2611-2626",
             anchors=("common_speculative_types_from_gguf(const std::string", "common_speculative_types_from_gguf(",
                      "this list here defines the priority of the speculators")),
    ArchRule("embedded MTP target", Head("target", embedded=True), None,
             "--spec-type draft-mtp without -md drafts with the target's own MTP layers",
             "common/speculative.cpp:2557-2567", anchors=("creating MTP draft context against the target",)),
)


def token_text(s: str) -> str:
    """A token text as the rule compares it: with strcmp, so text after a NUL does not count
    (common/speculative.cpp:119)."""
    return s.split("\0", 1)[0]


def speculative_compatible(target, draft) -> tuple[bool, list[str]]:
    """common_speculative_are_compatible (common/speculative.cpp:67-130) on two GGUF vocabularies
    (``indexer.gguf.predict.GGUFVocab``: read from a file or predicted).

    False means llama-server runs without speculation (common/speculative.cpp:242), not that it fails.
    """
    where = f"llama.cpp@{LLAMACPP_COMMIT}"
    for side, v in (("target", target), ("draft", draft)):
        if not v.converted:
            return False, [f"cannot be converted to GGUF: the {side}: {v.error} ({where})"]
    if target.vocab_type != draft.vocab_type:  # :79-83
        return False, [f"vocab_type {target.vocab_type} != {draft.vocab_type} ({where} common/speculative.cpp:79)"]
    if target.add_bos != draft.add_bos or (target.add_bos and target.bos != draft.bos):  # :85-91
        return False, [f"bos: add {int(target.add_bos)}-{int(draft.add_bos)}, id {target.bos}-{draft.bos} "
                       f"({where} common/speculative.cpp:85)"]
    if target.add_eos != draft.add_eos or (target.add_eos and target.eos != draft.eos):  # :93-99
        return False, [f"eos: add {int(target.add_eos)}-{int(draft.add_eos)}, id {target.eos}-{draft.eos} "
                       f"({where} common/speculative.cpp:93)"]
    diff = abs(target.n_vocab - draft.n_vocab)
    if diff > LLAMACPP_MAX_VOCAB_DIFF:  # :101-113
        return False, [f"n_vocab {target.n_vocab} vs {draft.n_vocab}: difference {diff} > "
                       f"{LLAMACPP_MAX_VOCAB_DIFF} ({where} common/speculative.cpp:108)"]
    if target.tokens is None or draft.tokens is None:
        raise ValueError("speculative_compatible needs the token texts of both sides")
    for i in range(LLAMACPP_CHECK_START_ID, min(target.n_vocab, draft.n_vocab)):  # :115-126
        a, b = token_text(target.tokens[i]), token_text(draft.tokens[i])
        if a != b:
            return False, [f"token {i} text differs: {a!r} vs {b!r} ({where} common/speculative.cpp:119)"]
    reasons = [f"compatible ({where} common/speculative.cpp:67)"]
    if target.n_vocab != draft.n_vocab:
        reasons.append(f"n_vocab {target.n_vocab} vs {draft.n_vocab} is within {LLAMACPP_MAX_VOCAB_DIFF}")
    return True, reasons


def _gguf_origin(role: str, side: Side) -> str:
    """Read facts name their file; predicted ones say from what conversion."""
    if side.gguf_file:
        return f"the {role}'s GGUF facts are read from the header of {side.gguf_file}"
    return (f"the {role}'s GGUF is predicted, after conversion with convert_hf_to_gguf.py @{LLAMACPP_COMMIT} "
            "in its pinned environment")


def rule(t: Side, d: Side) -> Verdict:
    """common_speculative_are_compatible on GGUF files: read from the file, or what convert_hf_to_gguf.py
    would write (predicted) for an HF side."""
    follows = f"(llama.cpp @{LLAMACPP_COMMIT}, convert_hf_to_gguf.py in its pinned environment)"
    for role, side in (("target", t), ("draft", d)):
        g = side.gguf
        if g is None:
            return Verdict(REFUSED, [f"the {role}'s GGUF facts are unknown: {side.gguf_missing or 'not derived'}"])
        if not g.converted and (g.error or "").startswith(NOT_MODELLED):  # our gap, not llama.cpp's refusal
            where = f"({side.gguf_file}) " if side.gguf_file else ""
            return Verdict(UNKNOWN, [f"the {role}'s GGUF vocabulary {where}is unknown: "
                                     f"{(g.error or '')[len(NOT_MODELLED):]} "
                                     f"{follows}; llama.cpp may well handle it: this is not a refusal"])
        if not g.converted and side.gguf_file:
            return Verdict(REFUSED, [f"the {role} ({side.gguf_file}): {g.error} (llama.cpp @{LLAMACPP_COMMIT})"])
        if not g.converted:
            return Verdict(REFUSED, [f"the {role} cannot be converted to GGUF: {g.error} {follows}"])
    assert t.gguf is not None and d.gguf is not None  # each side was checked above
    ok, reasons = speculative_compatible(t.gguf, d.gguf)
    origins = [_gguf_origin(r, s) for r, s in (("target", t), ("draft", d))] if t.gguf_file or d.gguf_file else []
    if ok:
        return Verdict(WORKS, [f"GGUF vocabularies: {t.gguf.vocab_type}, n_vocab {t.gguf.n_vocab}/{d.gguf.n_vocab}",
                               *reasons, *origins])
    return Verdict(NO_SPECULATION, [*reasons, "llama-server logs 'failed to initialize speculative decoding "
                                    "context' and serves without a draft", *origins])


def sizes(t: Side, d: Side) -> tuple[int | None, int | None]:
    """llama.cpp compares the GGUF files' n_vocab (None where a side has no converted GGUF)."""
    n_t, n_d = (s.gguf.n_vocab if s.gguf is not None and s.gguf.converted else None for s in (t, d))
    return n_t, n_d


def fix(outcome: str, *, shared: bool, sizes: tuple, tli: str, tli_blocked) -> str | None:
    """Only llama.cpp reads the draft's token texts (from its GGUF): re-converting with the target's tokenizer
    files makes them equal when the two are one vocabulary within its size tolerance."""
    t_size, d_size = sizes
    if outcome == NO_SPECULATION and shared:
        near = t_size is None or d_size is None or abs(t_size - d_size) <= LLAMACPP_MAX_VOCAB_DIFF
        if near:
            return ("re-convert the draft GGUF with the target's tokenizer files (copy them into the draft's "
                    "directory, then convert_hf_to_gguf.py): llama.cpp then finds every token text equal; the "
                    "draft's weights keep what its ids mean, so only drafting a differing id is rejected")
    return None


def gguf_signature(g, tokens_sha256: str) -> str:
    """llama.cpp's class key: what common_speculative_are_compatible compares, BOS/EOS ids only where
    added. Equal signatures pass (same type, same flags, same token list, so same n_vocab)."""
    parts = [g.vocab_type, bool(g.add_bos), g.bos if g.add_bos else None, bool(g.add_eos),
             g.eos if g.add_eos else None, tokens_sha256]

    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def gguf_buckets(tokens) -> tuple[str, str]:
    """Two token-prefix keys (hi, lo) such that every pair passing llama.cpp's size and text checks
    shares one: with k = n // 128, hi hashes tokens[5 : k*128] and lo tokens[5 : (k-1)*128]. Two lists
    within 128 of each other have k equal or one apart, and agree on [5, min(n)) ⊇ [5, k_min*128)."""
    k = len(tokens) // LLAMACPP_MAX_VOCAB_DIFF

    def key(m: int) -> str:
        h = hashlib.sha256(f"{m}:".encode())
        for tok in tokens[LLAMACPP_CHECK_START_ID:max(LLAMACPP_CHECK_START_ID, m * LLAMACPP_MAX_VOCAB_DIFF)]:
            h.update(token_text(tok).encode("utf-8", "surrogatepass") + b"\0")
        return h.hexdigest()

    return key(k), key(k - 1) if k > 0 else key(-1)


def _stem(repo: str) -> str:
    return repo.rstrip("/").rsplit("/", 1)[-1]


def _gguf_side(src: Source, release: str, steps: list[str], taken: set[str]) -> tuple[str, str]:
    """How llama-server takes one side: (``file``, path) or (``hub``, ``REPO:TAG``). A GGUF repo loads by its tag
    (-hf / -hfd, common/arg.cpp:3059, 3974); an HF repo or directory is made into a GGUF file first, each step
    runnable: ``hf download`` (huggingface_hub's CLI), ``convert_hf_to_gguf.py`` straight to the quantization when
    its --outtype has it, else to F16 and then ``llama-quantize`` to the type (tools/quantize/quantize.cpp)."""
    if src.kind == FILE:
        return "file", src.repo
    if src.kind == GGUF:
        return "hub", f"{src.repo}:{src.tag}" if src.tag else src.repo
    stem = _stem(src.repo)
    while stem in taken:  # a target and a draft of one name: two folders
        stem += "-draft"
    taken.add(stem)
    folder = src.repo
    if src.kind == HF:
        steps.append(f"hf download {src.repo} --local-dir {stem}")
        folder = stem
    quant = src.quant or "F16"
    if quant.lower() in convert_outtypes(release):
        out = f"{stem}-{quant}.gguf"
        steps.append(f"python convert_hf_to_gguf.py {folder} --outfile {out} --outtype {quant.lower()}")
        return "file", out
    f16 = f"{stem}-F16.gguf"
    out = f"{stem}-{quant}.gguf"
    steps.append(f"python convert_hf_to_gguf.py {folder} --outfile {f16} --outtype f16")
    steps.append(f"llama-quantize {f16} {out} {quant}")
    return "file", out


def hub_tag(files: list[tuple[str, str | None]], quant: str) -> str | None:
    """The tag of ``-hf REPO:TAG`` that loads a GGUF repo's file at ``quant`` (a speed.quant name), from the
    catalog's list of its model files (path, the type its name says); None when the repo has no such file, or
    when every such file's tag would also pick a file of another type (llama-server takes the first path that
    matches, in the Hub's tree order: common/download.cpp:655-673 ``find_best_model``)."""
    def at(named: str | None) -> bool:
        q = from_gguf_file_type(named) if named else None
        return q is not None and q.name.upper() == quant.upper()

    paths, named = [p for p, _ in files], dict(files)
    for path, _ in files:
        tag = split_info(path)[0]
        if at(named[path]) and tag:
            hits = hf_matches(paths, tag)
            if hits and all(at(named[h]) for h in hits):
                return tag
    return None


def makeable(quant: str, release: str = LLAMACPP_COMMIT) -> bool:
    """Whether the chain can make a GGUF at ``quant``: a type of convert_hf_to_gguf.py's --outtype or of
    llama-quantize (read from the release's source: engines/data/flags)."""
    return (quant.lower() in convert_outtypes(release)
            or quant.upper() in {t.upper() for t in quantize_types(release)})


# --method ngram: the first n-gram speculator llama-server tries (common/speculative.cpp:2616)
NGRAM_SPEC_TYPE = "ngram-simple"


def launch(setup: Setup) -> list[str]:
    """The steps that run ``setup`` on llama-server: the conversion chain of each HF side (:func:`_gguf_side`), then
    -m / -md for files, -hf / -hfd for GGUF repos (common/arg.cpp:3034, 3059, 3974, 4240), always with --spec-type
    (common/arg.cpp:4248, common/speculative.cpp:33-45): draft-simple for a draft model, the head's own type for a
    GGUF head (``setup.method``, a --spec-type name). The draft tokens per round are --spec-draft-n-max
    (common/arg.cpp:4139-4148; --draft-max is removed at this commit, arg.cpp:4386-4391)."""
    steps: list[str] = []
    taken: set[str] = set()
    args = []
    for src, flag_file, flag_hub in ((setup.target, "-m", "-hf"), (setup.draft, "-md", "-hfd")):
        if src is None:
            continue
        how, name = _gguf_side(src, setup.release or LLAMACPP_COMMIT, steps, taken)
        args.append(f"{flag_file if how == 'file' else flag_hub} {name}")
    if setup.method == "ngram":  # drafts from the text itself: an m-gram of --spec-ngram-simple-size-m tokens
        spec_type, tokens_flag = NGRAM_SPEC_TYPE, "--spec-ngram-simple-size-m"  # (common/speculative.cpp:1759)
    else:
        spec_type = setup.method if setup.method.startswith("draft-") else "draft-simple"
        tokens_flag = "--spec-draft-n-max"
    flags = f" {tokens_flag} {setup.draft_tokens}" if setup.draft_tokens else ""
    return noted(setup, [*steps, f"llama-server {' '.join(args)} --spec-type {spec_type}{flags}"])


# ---------------------------------------------------------------- GGUF speculator heads and embedded MTP
# Targets whose graph builds an MTP head (src/models/*.cpp with LLM_GRAPH_TYPE_DECODER_MTP).
MTP_GRAPH_ARCHS = frozenset("""
bailingmoe3 cohere2moe deepseek2 deepseek32 deepseek4 glm-dsa glm4moe glm5-next hy_v3 mimo2 nemotron_h_moe qwen35
qwen35moe qwen3next step35
""".split())
# Targets whose graph exports per-layer inputs (t_layer_inp in src/models/*.cpp), which EAGLE-3 and DFlash read;
# any other target fails GGML_ASSERT "layer input tensor is null" (src/llama-graph.cpp:1380-1386).
LAYER_INPUT_ARCHS = frozenset("""
bailingmoe3 deepseek4 gemma4 gpt-oss hunyuan_vl lfm2 lfm2moe llama mimo2 minimax-01 minimax-m2 muse-glimmer nanbeige
nemotron_h nemotron_h_moe qwen3 qwen35 qwen35moe qwen3moe qwen3next qwen4exp
""".split())


def _said(value) -> str:
    """A header number in words: the number, or that the header does not give it (never "None")."""
    return "unknown (not in the header)" if value is None else str(value)


class LlamaCppHeads(GGUFHeadRules):
    """llama-server runs heads from GGUF files only, each with its --spec-type (common/speculative.cpp:33-45); the
    facts come from the headers the crawl range-reads (indexer/gguf/file.py head_from_header)."""

    engine = "llama.cpp"
    methods = {  # --method -> (the --spec-type, where llama.cpp defines it)
        "mtp": ("draft-mtp",
                "common/speculative.cpp:2520-2567 (an MTP context on the target or on a -md assistant)"),
        "eagle3": ("draft-eagle3", "common/speculative.cpp:503-548, src/models/eagle3.cpp:3-35"),
        "dflash": ("draft-dflash", "common/speculative.cpp:1014-1023, src/models/dflash.cpp:7-60"),
        # no head: look-ups in the text so far, m-grams of 48 tokens after 12-token n-grams by default
        # (common/common.h:361-365, common/arg.cpp:4290-4316)
        "ngram": (NGRAM_SPEC_TYPE, "common/speculative.cpp:40, 2616, 2656-2670"),
    }

    def fit(self, method: str, head: dict | None, target) -> list[tuple[str, bool, str, str]]:
        """llama-server's checks of a GGUF head (``head``: its ArchFacts.head; None: the target's own MTP layers) on a
        GGUF target (its ArchFacts), as (check, ok, detail, source); every one must pass."""
        arch, layers, width = target.gguf_arch, target.gguf_block_count, target.gguf_embedding_length
        out = []
        if head is None:  # --spec-type draft-mtp without -md: an MTP context on the target itself
            n = (target.head or {}).get("nextn_predict_layers") or 0
            out.append(("mtp", n > 0, f"{n} MTP layer(s) in the target's header (<arch>.nextn_predict_layers)"
                        if n else "the target's header declares no MTP layers (<arch>.nextn_predict_layers): "
                        "llama-server exits (\"failed to create MTP context\")", "src/llama-context.cpp:3880-3885"))
            has = "has" if arch in MTP_GRAPH_ARCHS else "has no"
            out.append(("target_arch", arch in MTP_GRAPH_ARCHS, f"{arch} {has} MTP graph in llama.cpp",
                        "src/models/*.cpp (LLM_GRAPH_TYPE_DECODER_MTP)"))
            return out
        if method == "mtp":  # Gemma-4's assistant: an MTP drafter for a Gemma-4 target
            out.append(("target_arch", arch == "gemma4",
                        f"a gemma4-assistant drafts for gemma4 targets (target: {arch})",
                        "src/models/gemma4-assistant.cpp"))
            w = head.get("embedding_length_out")
            out.append(("hidden_size", w is None or width is None or w == width,
                        f"the assistant's embedding_length_out {_said(w)} against the target's embedding_length "
                        f"{_said(width)}",
                        "common/speculative.cpp:1376-1377, src/models/gemma4-assistant.cpp:29-31"))
            return out
        out.append(("target_arch", arch in LAYER_INPUT_ARCHS,
                    f"the target's graph ({arch}) {'exports' if arch in LAYER_INPUT_ARCHS else 'does not export'} the "
                    "per-layer inputs the head reads", "src/llama-graph.cpp:1380-1386"))
        ids = head.get("target_layers")
        if not ids:
            out.append(("aux_layers", False, f"the head has no {method}.target_layers: llama.cpp refuses to load it",
                        "src/models/eagle3.cpp:6-8" if method == "eagle3" else "src/models/dflash.cpp:35-37"))
            return out
        if method == "eagle3":
            out.append(("aux_layers", len(ids) == 3, f"{len(ids)} target layers (EAGLE-3 needs exactly 3)",
                        "src/models/eagle3.cpp:9-11"))
            out.append(("aux_layers", layers is None or max(ids) <= layers,  # id == n_layer: the last hidden state
                        f"target layer ids {ids} against the target's {_said(layers)} layers",
                        "common/speculative.cpp:540-548"))
            w = head.get("target_hidden_size")
            out.append(("hidden_size", w is None or width is None or w == width,
                        f"the head reads hidden states of width {_said(w)}; the target's embedding_length is "
                        f"{_said(width)}",
                        "src/models/eagle3.cpp:16-22 (fc input = 3 x target_hidden_size)"))
        return out

    def launch(self, target: str, head: str | None, spec_type: str) -> str:
        """llama-server with the head (-hfd for a Hub repo, -md for a file; none for the target's own MTP layers),
        always with its --spec-type: a -md alone infers no type for EAGLE-3 (common/speculative.cpp:2270-2305)."""
        def flag(name: str, file_flag: str, hub_flag: str) -> str:
            return f"{file_flag} {name}" if name.lower().endswith(".gguf") else f"{hub_flag} {name}"

        parts = [flag(target, "-m", "-hf")] + ([flag(head, "-md", "-hfd")] if head else [])
        return f"llama-server {' '.join(parts)} --spec-type {spec_type}"


ENGINE = released(
    releases=(LLAMACPP_COMMIT,),
    name="llama.cpp", display="llama.cpp speculative (llama-server draft-simple)",
    # At LLAMACPP_COMMIT llama-server drafts --spec-draft-n-max tokens (default 3, common/common.h:328; arg.cpp:
    # 4139-4148) every round: p_min defaults to 0 (common/common.h:332), so the gate that ends a draft at an unsure
    # token (common/speculative.cpp:366) never closes; the estimate tries caps up to 16 and the launch sets the best.
    # The builds the published measurements ran (2025 to early 2026, llama.cpp @4227c9be4, not a release this
    # module answers for) drafted up to 16 tokens with p-min 0.75 and kept the unsure token: published_gate, whose
    # lines at that build indexer/speed/gate.py cites.
    # A draft model leaves a target with recurrent-state layers no per-token rollback (common/common.h:396-402: only
    # MTP, EAGLE-3, DFlash and DSpark ask for n_rs_seq; common/common.cpp:1216, 1491-1527;
    # src/llama-memory-recurrent.cpp:193-203): llama-server saves its state to host memory each round and restores it
    # on a rejection (tools/server/server-context.cpp:3050-3068, 3905-3935), and a draft's own state likewise
    # (tools/server/server-context.cpp:2980-3003, 3037-3045): copies_state. The published builds that ran hybrid
    # targets did too (docs/speed.md).
    speed=SpeedProfile("ggml", ("nvidia", "amd", "apple", "cpu"), "Q4_K_M", "Q8_0", 16,
                       source="README.md 'Supported backends': Metal (Apple), CUDA (NVIDIA), HIP (AMD), CPU",
                       published_gate=DraftGate(p_min=0.75, n_min=0, keeps_unsure=True), published_draft_tokens=16,
                       copies_state=True),
    version=f"llama.cpp @{LLAMACPP_COMMIT} (llama-cpp-python 0.3.36)",
    sources={
        "common_speculative_are_compatible": "common/speculative.cpp:67-130",
        "SPEC_VOCAB_MAX_SIZE_DIFFERENCE 128, CHECK_START_TOKEN_ID 5": "common/speculative.cpp:30-31",
        "draft-simple throws when incompatible": "common/speculative.cpp:242-249",
        "llama-server serves without speculation": "tools/server/server-context.cpp:1240-1260",
        "GGUF vocabulary": "convert_hf_to_gguf.py (indexer/gguf/predict.py models it), or the GGUF's own header "
                           "(indexer/gguf/file.py: src/llama-vocab.cpp llama_vocab::impl::load)",
    },
    facts=("gguf",),
    rule=rule, class_key=GGUF_CLASS_KEY, launch=launch, sizes=sizes, fix=fix, gguf_rule=rule,
    arch_rules=ARCH_RULES, gguf_arch_rules=ARCH_RULES, heads=LlamaCppHeads(),
    words={WORKS: "works", NO_SPECULATION: "starts and serves without speculation",
           REFUSED: "has no GGUF to load (the converter refuses the repo)",
           UNKNOWN: "unknown: the indexer does not model the converter's path for this repo"})


# ---------------------------------------------------------------- what llama-server reports (indexer measure)
# Paths are relative to llama.cpp @LLAMACPP_COMMIT (the copy vendored in llama-cpp-python 0.3.36's sdist).
def _server_release(get_json) -> str | None:
    """``GET /props``' ``build_info``, "b<build number>-<commit>" (tools/server/server-context.cpp:4614,
    common/build-info.cpp.in:28)."""
    props = get_json("/props")
    info = props.get("build_info") if isinstance(props, dict) else None
    return str(info) if info else None


def _server_request(prompt: str, max_tokens: int, target: str | None = None, draft: str | None = None):
    """A greedy chat completion of exactly ``max_tokens`` tokens: ``max_tokens`` is an alias of ``n_predict``
    (tools/server/server-schema.cpp:44-48), ``ignore_eos`` keeps it going (server-schema.cpp:475)."""
    return Exchange("/v1/chat/completions", chat_body(prompt, max_tokens, ignore_eos=True))


def _server_reading(answer, timing):
    """The final response's ``timings`` (server-task.cpp:414-459 puts them on a chat completion):
    ``predicted_n`` tokens over ``predicted_ms`` (decode after the first token: server-common.h:418-449),
    ``draft_n`` / ``draft_n_accepted`` when the slot drafted (server-common.cpp:84-103)."""
    t = answer.get("timings") or {}
    text = ((answer.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
    n = int(t.get("predicted_n") or (answer.get("usage") or {}).get("completion_tokens") or 0)
    per_second = t.get("predicted_per_second")
    seconds = (n - 1) / per_second if per_second and n > 1 else None  # n_gen_tps counts n_gen - 1 steps
    return Reading(tokens=n, seconds=seconds, text=text, drafted=t.get("draft_n", 0 if t else None),
                   accepted=t.get("draft_n_accepted", 0 if t else None))


def _server():
    return Server(
        release=_server_release, request=_server_request, reading=_server_reading,
        sources={
            "release": "tools/server/server-context.cpp:4614 (/props build_info), common/build-info.cpp.in:28",
            "timings.draft_n, timings.draft_n_accepted": "tools/server/server-common.cpp:99-102 (set only when the "
                                                         "slot drafted)",
            "timings.predicted_n, timings.predicted_per_second": "tools/server/server-common.cpp:92-96, "
                                                                 "server-common.h:418-449 (n_gen - 1 steps)",
            "timings on a chat completion": "tools/server/server-task.cpp:455-457",
            "no per-request speculation switch": "tools/server/server-schema.cpp:196-227 (the speculative.* "
                                                 "request fields are compiled out: #if 0)",
        })


SERVER = _server()
