"""MLX-LM's speculative generation (``mlx_lm.generate --draft-model``), at each of :data:`RELEASES` (the commit
d78bf58e, then the PyPI sdist 0.32.2; the default is the newest, :data:`VERSION`); paths are relative to the
repository root. LM Studio's mlx-engine pins its own mlx-lm: it keeps the d78bf58e tables (lmstudio.py)."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from . import tables
from .archrules import WRONG_OUTPUT, ArchRule, Ranged, Sliding, StateIn, TypeIn
from .base import (
    REFUSED,
    SIZE_WORDS,
    SLOWER,
    WORKS,
    Side,
    SpeedProfile,
    Verdict,
    mapping_differs,
    released,
    same_mapping,
    size_differs,
    tokenizer_missing,
    tokenizer_sizes,
)
from .server import Exchange, Reading, Server, chat_body, decode_seconds, stream_text, stream_usage
from .setup import DIR, MLX, Setup, Source, is_float

# Oldest first: the commit d78bf58e lies between the 0.31.3 and 0.32.0 wheels (its cache.py, utils.py and model list are
# between theirs; its _version.py says 0.32.0).
RELEASES = ("0.31.3", "d78bf58e", "0.32.0", "0.32.1", "0.32.2")
OLDER = ("0.31.3", "0.32.0", "0.32.1")  # read from their wheels with the extractor's tables (engines/data/mlx/)
READ_AT = "d78bf58e"  # the release the citations without since= were read at (engines/audit.py)
VERSION = RELEASES[-1]

# Extracted per release (scripts/extract_tables.py); the lines here are at 0.32.2. get_model_classes imports
# mlx_lm.models.<MODEL_REMAPPING.get(t, t)> and raises "Model type X not supported." otherwise (mlx_lm/utils.py:48-61,
# 220-225); the modules of mlx_lm/models/; the model types whose make_cache keeps an ArraysCache (a recurrent or
# convolution state: ArraysCache has no is_trimmable override, models/cache.py:596, 164-165) or a
# RotatingKVCache(max_size=sliding_window) for its sliding layers (trimmable only while offset < max_size,
# models/cache.py:544-545), with the model file each ends in.
# The model files that build a RotatingKVCache only for the layers layer_types lists as sliding (models/llama.py:
# 157-170, 266-270; models/ministral3.py:173-184, 336-340 at 0.32.2): a model type ending in one slides only where
# layer_types says.
LISTED_MODULES = frozenset({"llama", "ministral3"})


def _mlx(release: str) -> tuple:
    """(modules, remapping, arrays-cache types, always-rotating types, rotating-where-listed types) at a release."""
    v = partial(tables.values, "mlx", release)
    arrays = frozenset(v("arrays_cache"))
    rotating = v("rotating_cache")
    return (frozenset(v("model_modules")), v("model_remapping"), arrays,
            frozenset(t for t, m in rotating.items() if m not in LISTED_MODULES) - arrays,
            frozenset(t for t, m in rotating.items() if m in LISTED_MODULES))


(MLX_LM_MODEL_MODULES, MLX_LM_MODEL_REMAPPING, MLX_ARRAYS_CACHE, MLX_ROTATING,
 MLX_ROTATING_LISTED) = _mlx("d78bf58e")
(MLX_LM_MODEL_MODULES_0322, MLX_LM_MODEL_REMAPPING_0322, MLX_ARRAYS_CACHE_0322, MLX_ROTATING_0322,
 MLX_ROTATING_LISTED_0322) = _mlx("0.32.2")

_TARGET_CACHE = ArchRule(
    "non-trimmable target cache", TypeIn("target", MLX_ARRAYS_CACHE), REFUSED,
    "its mlx-lm model keeps an ArraysCache, and mlx_lm.generate raises ValueError \"Speculative decoding "
    "requires a trimmable prompt cache (got {'ArraysCache'})\"",
    "mlx_lm/generate.py:520-524, mlx_lm/models/cache.py:88-92",
    anchors=("Speculative decoding requires a trimmable prompt cache", None))
_SLIDING = ArchRule(
    "sliding-window target", Sliding("target", MLX_ROTATING, MLX_ROTATING_LISTED), WRONG_OUTPUT,
    "speculation starts, but once prompt and output pass the window its RotatingKVCache is no longer "
    "trimmable and trim_prompt_cache then trims no layer, so rejected draft tokens stay in the target's "
    "cache and the output can be wrong",
    "mlx_lm/models/cache.py:109-110, 542-543; mlx_lm/generate.py:580-582",
    anchors=(None, "return self.offset < self.max_size", "trim_prompt_cache(model_cache"))
_DRAFT_CACHE = ArchRule(
    "non-trimmable draft cache", StateIn("draft"), None,
    "the draft's cache is never checked and trim_prompt_cache is a no-op on it, so acceptance falls; the "
    "target verifies every token", "mlx_lm/generate.py:582", anchors=("trim_prompt_cache(draft_cache",))

def _span(name: str, release: str) -> str:
    return tables.values("mlx", release, "spans")[name]


def _next(release: str) -> str:
    return RELEASES[RELEASES.index(release) + 1]


def _older_rows(r: str) -> tuple:
    """The three rows at a release read only through the extractor's tables (types and lines)."""
    _, _, arrays, rotating, listed = _mlx(r)
    return (
        replace(_TARGET_CACHE, since=r, until=_next(r), when=TypeIn("target", arrays),
                source=f"{_span('trimmable_check', r)}, {_span('can_trim', r)}",
                anchors=("Speculative decoding requires a trimmable prompt cache",
                         "return all(c.is_trimmable() for c in cache)")),
        replace(_SLIDING, since=r, until=_next(r), when=Sliding("target", rotating, listed),
                source=f"{_span('rotating_is_trimmable', r)}; {_span('target_trim', r)}",
                anchors=("return self.offset < self.max_size", "trim_prompt_cache(model_cache")),
        replace(_DRAFT_CACHE, since=r, until=_next(r), source=_span("draft_trim", r)),
    )


ARCH_RULES = (
    *(row for r in OLDER for row in _older_rows(r)),
    replace(_TARGET_CACHE, since="d78bf58e", until="0.32.0"),
    replace(_TARGET_CACHE, since="0.32.2", when=TypeIn("target", MLX_ARRAYS_CACHE_0322),
            source="mlx_lm/generate.py:542-546, mlx_lm/models/cache.py:164-165, 596",
            anchors=("Speculative decoding requires a trimmable prompt cache", "return False", "class ArraysCache")),
    replace(_SLIDING, since="d78bf58e", until="0.32.0"),
    replace(_SLIDING, since="0.32.2", when=Sliding("target", MLX_ROTATING_0322, MLX_ROTATING_LISTED_0322),
            source="mlx_lm/models/cache.py:115-119, 544-545; mlx_lm/generate.py:598-599",
            anchors=("return all(c.is_trimmable() for c in cache)", "return self.offset < self.max_size",
                     "trim_prompt_cache(model_cache")),
    replace(_DRAFT_CACHE, since="d78bf58e", until="0.32.0"),
    replace(_DRAFT_CACHE, since="0.32.2", source="mlx_lm/generate.py:599"),
)


def mlx_model_type_supported(model_type: str | None, modules=MLX_LM_MODEL_MODULES_0322,
                             remapping=MLX_LM_MODEL_REMAPPING_0322) -> bool | None:
    """Whether mlx_lm.load finds a model class for this config model_type (None: unknown)."""
    if model_type is None:
        return None
    return remapping.get(model_type, model_type) in modules


def _mlx_load_notes(t: Side, d: Side, modules, remapping) -> list[str]:
    """The vocabulary rule is the verdict; say when mlx_lm.load would refuse a side before it."""
    return [f"note: mlx_lm.load refuses the {role}'s model_type {side.model_type!r} (\"Model type "
            f"{remapping.get(side.model_type, side.model_type)} not supported.\") before any "
            "vocabulary check" for role, side in (("target", t), ("draft", d))
            if mlx_model_type_supported(side.model_type, modules, remapping) is False]


def rule(t: Side, d: Side, modules=MLX_LM_MODEL_MODULES_0322, remapping=MLX_LM_MODEL_REMAPPING_0322) -> Verdict:
    """mlx_lm.generate raises when tokenizer.vocab_size differs (mlx_lm.server only warns)."""
    missing = tokenizer_missing(t, d)
    if missing:
        return Verdict(REFUSED, [missing])
    ts, ds = tokenizer_sizes(t, d)
    notes = _mlx_load_notes(t, d, modules, remapping)
    if ts != ds:
        return Verdict(REFUSED, [size_differs("tokenizer.vocab_size", ts, ds) + ": mlx_lm.generate raises "
                                 f"ValueError; mlx_lm.server only warns and proceeds, where {SLOWER}", *notes])
    if not same_mapping(t, d):
        return mapping_differs(t, d, None, f"tokenizer.vocab_size {ts} on both (base vocabulary, added tokens not "
                                           "counted), so it starts", notes)
    return Verdict(WORKS, [f"tokenizer.vocab_size {ts} on both and the same mapping", *notes])


def mlx_source(src: Source, steps: list[str], taken: set[str]) -> str:
    """The path mlx_lm loads one side from: an MLX conversion, a float checkpoint or a local directory as it is;
    else an ``mlx_lm.convert --hf-path REPO -q --q-bits N --mlx-path DIR`` step first (mlx_lm/convert.py
    configure_parser; group size 64, the affine default the speed model counts), or ``--q-mode mxfp4``."""
    if src.kind in (MLX, DIR) or is_float(src.quant) or src.quant == src.stored:
        return src.repo
    name = src.repo.rstrip("/").rsplit("/", 1)[-1]
    path = f"{name}-{src.quant}"
    while path in taken:
        path += "-draft"
    taken.add(path)
    how = "--q-mode mxfp4" if src.quant == "mxfp4" else f"--q-bits {(src.quant or '').removesuffix('bit')}"
    steps.append(f"mlx_lm.convert --hf-path {src.repo} -q {how} --mlx-path {path}")
    return path


def launch(setup: Setup) -> list[str]:
    """The mlx_lm.generate command with a draft model (--draft-model, --num-draft-tokens: mlx_lm/generate.py
    setup_arg_parser; 3 when no count is given, its default), after the conversions it needs."""
    steps: list[str] = []
    taken: set[str] = set()
    target = mlx_source(setup.target, steps, taken)
    assert setup.draft is not None  # a draft-model launch
    draft = mlx_source(setup.draft, steps, taken)
    return [*steps, f"mlx_lm.generate --model {target} --draft-model {draft} --num-draft-tokens "
                    f'{setup.draft_tokens or 3} --prompt "..."']


# No fix: MLX has no vocabulary translation, and tokenizer.vocab_size is the base vocabulary (no resize helps).
def _modules_rule(r: str):
    modules, remapping = _mlx(r)[:2]
    return partial(rule, modules=modules, remapping=remapping)


def _unsupported(r: str) -> str:
    return f"{_span('model_remapping', r)}, {_span('model_type_unsupported', r).partition(':')[2]}"


RULES = (*(Ranged(value=_modules_rule(r), since=r, until=_next(r), source=_unsupported(r),
                  anchors=("MODEL_REMAPPING = {", 'msg = f"Model type {model_type} not supported."'))
           for r in OLDER),
         Ranged(value=partial(rule, modules=MLX_LM_MODEL_MODULES, remapping=MLX_LM_MODEL_REMAPPING),
                since="d78bf58e", until="0.32.0"),
         Ranged(value=rule, since="0.32.2", source="mlx_lm/utils.py:48-61, 220-225",
                anchors=("MODEL_REMAPPING = {", 'msg = f"Model type {model_type} not supported."')))
# What each source pins: the consequence (the raise, the warning), not only the condition before it.
RAISES = 'raise ValueError("Draft model tokenizer does not match model tokenizer.")'
WARNS = "logging.warning("
SOURCES = (
    *(Ranged(value={"tokenizer.vocab_size equal (generate raises)": _span("vocab_size_check", r),
                    "server only warns": _span("server_vocab_size_check", r),
                    "model type supported (load)": _unsupported(r)}, since=r, until=_next(r),
             anchors=(RAISES, WARNS, "MODEL_REMAPPING = {", 'msg = f"Model type {model_type} not supported."'))
      for r in OLDER),
    Ranged(value={"tokenizer.vocab_size equal (generate raises)": "mlx_lm/generate.py:2156-2157",
                  "server only warns": "mlx_lm/server.py:346-347",
                  "model type supported (load)": "mlx_lm/utils.py:46-57, 187-193"}, since="d78bf58e", until="0.32.0",
           anchors=(RAISES, WARNS, "MODEL_REMAPPING = {", None)),
    Ranged(value={"tokenizer.vocab_size equal (generate raises)": "mlx_lm/generate.py:2144-2145",
                  "server only warns": "mlx_lm/server.py:453-454",
                  "model type supported (load)": "mlx_lm/utils.py:48-61, 220-225"}, since="0.32.2",
           anchors=(RAISES, WARNS, "MODEL_REMAPPING = {", 'msg = f"Model type {model_type} not supported."')),
)

ENGINE = released(
    releases=RELEASES, name="mlx", display="MLX-LM (mlx_lm.generate)", version=f"mlx-lm {VERSION}",
    speed=SpeedProfile("mlx", ("apple",), "4bit", "4bit", 8, default_draft_tokens=3,
                       default_draft_source="mlx_lm/generate.py:225-228 (--num-draft-tokens, at 0.32.2)",
                       source="ml-explore/mlx README.md: 'an array framework for machine learning on Apple silicon'"),
    sources=SOURCES, facts=("tok.hf_vocab_size", "tok.vocab_sha256"),
    rule=RULES, class_key=("hf", "tok"), launch=launch, sizes=tokenizer_sizes,
    words=dict(SIZE_WORDS), arch_rules=ARCH_RULES)


# ---------------------------------------------------------------- what mlx_lm.server reports (indexer measure)
# Paths are relative to mlx-lm at d78bf58e, the oldest release read (where the audit reads a module's citations);
# 0.32.2 has the same code further down (server.py 59-61, 1787-1798, 1682-1692, 1121-1131).
def _server_release(get_json) -> str | None:
    """mlx_lm.server answers only /v1/models and /health to a GET (mlx_lm/server.py:1589-1600); its release is in
    each response's ``system_fingerprint`` ("<mlx-lm>-<mlx>-<platform>-<gpu>", server.py:48-50), read from the
    answer instead."""
    return None


def _server_request(prompt: str, max_tokens: int, target: str | None = None, draft: str | None = None):
    """A greedy streamed chat completion with the usage at its end (``stream_options.include_usage``,
    mlx_lm/server.py:1484-1495): the client times the tokens."""
    body = chat_body(prompt, max_tokens, stream_options={"include_usage": True})
    return Exchange("/v1/chat/completions", {**body, "stream": True}, stream=True)


def _server_reading(events, timing):
    """Text and ``usage.completion_tokens``; no draft counts: stream_generate's ``from_draft`` (mlx_lm/generate.py:
    268-281) is not passed on to the response (server.py:226-231, 944-953 keep text, token, logprob, finish reason)."""
    return Reading(tokens=int(stream_usage(events).get("completion_tokens") or 0), seconds=decode_seconds(timing),
                   text=stream_text(events))


def fingerprint_release(answer) -> str | None:
    """The mlx-lm version at the head of a response's ``system_fingerprint``."""
    events = answer if isinstance(answer, list) else [answer]
    for e in events:
        fp = e.get("system_fingerprint") if isinstance(e, dict) else None
        if isinstance(fp, str) and fp:
            return fp.split("-", 1)[0]
    return None


def _server():
    return Server(
        release=_server_release, request=_server_request, reading=_server_reading, answer_release=fingerprint_release,
        sources={"release": "mlx_lm/server.py:48-50 (system_fingerprint)",
                 "usage at the end of a stream": "mlx_lm/server.py:1484-1495",
                 "no acceptance": "mlx_lm/server.py:226-231 (Response has no from_draft)"},
        # num_draft_tokens 0 still runs the draft path, and draft_model null reloads the target: a second server
        not_reported="acceptance (mlx_lm.server does not report which tokens came from the draft)")


SERVER = _server()
