"""transformers assisted generation (``generate(assistant_model=...)``) and universal assisted generation (UAG),
at :data:`VERSION`; paths are relative to the repository root."""

from __future__ import annotations

from .archrules import ArchRule, StateIn, TypeIn
from .base import (
    REFUSED,
    SIZE_WORDS,
    USELESS,
    WORKS,
    Engine,
    Side,
    SpeedProfile,
    Verdict,
    mapping_differs,
    resize_words,
    same_mapping,
    size_differs,
    tokenizer_missing,
)

VERSION = "5.24.0"

# The model types whose PreTrainedModel sets ``_is_stateful = True`` (grep src/transformers/models at VERSION, e.g.
# models/qwen3_5/modeling_qwen3_5.py:924, qwen3_5_moe/modeling_qwen3_5_moe.py:1029, qwen3_next/...:953,
# granitemoehybrid/...:1028, falcon_h1/...:996, jamba/...:812, mamba/...:540, mamba2/...:660, rwkv/...:366); the
# text model types share their model files.
STATEFUL = frozenset("""
bailing_hybrid bamba deepseek_v4 falcon_h1 falcon_mamba glm5_next granitemoehybrid jamba kimi_linear lara_mini mamba
mamba2 minicpm_ocr minicpmv4_6 minicpmv4_7 nemotron3_5_transcribe nemotron_h nemotron_h_omni olmo_hybrid qwen3_5
qwen3_5_text qwen3_5_moe qwen3_5_moe_text qwen3_next qwen4_exp recurrent_gemma rwkv xlstm zamba zamba2 zaya
""".split())

ARCH_RULES = (
    ArchRule("stateful target", TypeIn("target", STATEFUL), REFUSED,
             "generate(assistant_model=...) raises ValueError \"assisted generation is not supported with stateful "
             "models\": a recurrent state cannot be reset to a prefix of the generated text",
             "src/transformers/generation/utils.py:1885-1890"),
    ArchRule("stateful draft", StateIn("draft"), None,
             "the assistant is not checked; its cache is cropped where it can be, so acceptance may fall while the "
             "target verifies every token",
             "src/transformers/generation/candidate_generator.py:292-302"),
)

UAG = ("pass tokenizer= and assistant_tokenizer= to generate() (transformers universal assisted generation, "
       "generation/candidate_generator.py:762-795: any pair, TLI when sampling)")


def rule(t: Side, d: Side) -> Verdict:
    """Equal get_text_config().vocab_size: one tokenizer assumed; unequal: needs both tokenizers (UAG)."""
    for role, side in (("target", t), ("draft", d)):
        if side.text_config_error:
            return Verdict(REFUSED, [f"the {role}'s {side.text_config_error}: generate() raises ValueError"])
    ts, ds = t.vocab_size_transformers, d.vocab_size_transformers
    if ts is None or ds is None or ts != ds:
        return Verdict(REFUSED, [size_differs("vocab_size", ts, ds) + ": assisted generation raises ValueError "
                                 "unless tokenizer= and assistant_tokenizer= are passed (universal assisted "
                                 "generation, which works for any pair)"])
    missing = tokenizer_missing(t, d)
    if missing:
        return Verdict(USELESS, [f"vocab_size {ts} on both; {missing}"])
    if not same_mapping(t, d):
        return mapping_differs(t, d, ts, f"vocab_size {ts} on both, so transformers treats them as one tokenizer "
                                         "(passing assistant_tokenizer raises) and output stays correct, the target "
                                         "verifying every token")
    return Verdict(WORKS, [f"vocab_size {ts} on both and the same mapping"])


def sizes(t: Side, d: Side) -> tuple[int | None, int | None]:
    """transformers compares get_text_config().vocab_size."""
    return t.vocab_size_transformers, d.vocab_size_transformers


def fix(outcome: str, *, shared: bool, sizes: tuple, tli: str, tli_blocked) -> str | None:
    """UAG for a refused pair of unequal sizes (or resize the draft when only its rows differ)."""
    t_size, d_size = sizes
    if outcome != REFUSED or t_size is None or d_size is None or t_size == d_size:
        return None  # equal vocab_size: transformers refuses assistant_tokenizer (generation/utils.py:1907-1919)
    return UAG + tli + (f", or {resize_words(t_size)}" if shared else "")


def launch(target: str, draft: str, *, universal: bool = False, draft_tokens: int | None = None) -> str:
    """The assisted-generation call (UAG on request). ``draft_tokens``: a constant draft length
    (GenerationConfig num_assistant_tokens and num_assistant_tokens_schedule="constant",
    src/transformers/generation/configuration_utils.py; generate() takes generation-config fields as keywords)."""
    call = "model.generate(**inputs, assistant_model=assistant"
    if universal:
        call += ", tokenizer=tokenizer, assistant_tokenizer=assistant_tokenizer"
    if draft_tokens:
        call += f', num_assistant_tokens={draft_tokens}, num_assistant_tokens_schedule="constant"'
    return (f'model = AutoModelForCausalLM.from_pretrained("{target}"); '
            f'assistant = AutoModelForCausalLM.from_pretrained("{draft}"); {call})')


ENGINE = Engine(
    name="transformers", display="transformers assisted generation", version=f"transformers {VERSION}",
    speed=SpeedProfile("eager", ("nvidia", "amd", "apple", "cpu"), "bf16", "bf16", 8),
    sources={
        "vocab_size equal / assistant_tokenizer refused": "src/transformers/generation/utils.py:1907-1919",
        "get_text_config()": "src/transformers/configuration_utils.py:1519-1562",
        "universal assisted generation (TLI)": "src/transformers/generation/candidate_generator.py:762-795",
    },
    facts=("vocab_size_transformers", "text_config_error", "tok.vocab_sha256"),
    rule=rule, class_key=("vst", "tok"), launch=launch, sizes=sizes, fix=fix, words=dict(SIZE_WORDS),
    arch_rules=ARCH_RULES)
