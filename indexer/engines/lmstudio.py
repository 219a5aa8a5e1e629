"""LM Studio: HF (MLX) models run on its mlx-engine at :data:`VERSION`; GGUF models on its llama.cpp engine
(:mod:`indexer.engines.llamacpp`), whose verdict they get."""

from __future__ import annotations

import os

from ..speed.quant import AFFINE, GGUF_FAMILIES, lookup
from .archrules import WRONG_OUTPUT, ArchRule, Sliding, StateIn, TypeIn
from .base import (
    REFUSED,
    SIZE_WORDS,
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
from .llamacpp import ARCH_RULES as LLAMACPP_ARCH_RULES
from .llamacpp import LLAMACPP_COMMIT
from .llamacpp import _gguf_side as gguf_side
from .llamacpp import rule as llamacpp_rule
from .mlx import MLX_ARRAYS_CACHE, MLX_ROTATING, MLX_ROTATING_LISTED
from .server import Exchange, Reading, Server, chat_body
from .setup import DIR, FILE, GGUF, MLX, Setup, Source, is_float, noted

VERSION = "08f0c075"  # mlx-engine
# Where LM Studio runs what: GGUF models on its llama.cpp engine on every system, Hugging Face checkpoints
# (MLX) on its mlx-engine on Apple silicon Macs only; speculative decoding in both engines.
RUNS_ON = ("lmstudio-ai/mlx-engine README.md ('LM Studio 0.3.4 and newer for Mac ships pre-bundled with "
           "mlx-engine'); lmstudio.ai/blog/lmstudio-v0.3.4 (MLX 'on Apple Silicon Macs', beside llama.cpp "
           "models); lmstudio.ai/blog/lmstudio-v0.3.10 (speculative decoding in the llama.cpp and MLX engines)")
MLX_LM = "2c008fd0"  # the mlx-lm mlx-engine pins (requirements.txt:29); its checks are mlx-lm d78bf58e's

# A text target on the sequential ModelKit generates through mlx-lm's stream_generate(draft_model=...)
# (mlx_engine/generate.py:593-600), so mlx-lm's cache rules apply (vision targets are refused before, in rule).
ARCH_RULES = (
    ArchRule("non-trimmable target cache", TypeIn("target", MLX_ARRAYS_CACHE), REFUSED,
             "its mlx-lm model keeps an ArraysCache, and the first generation raises mlx-lm's ValueError "
             "\"Speculative decoding requires a trimmable prompt cache\"",
             f"mlx_engine/generate.py:593-600; mlx-lm {MLX_LM} mlx_lm/generate.py:529-533"),
    ArchRule("sliding-window target", Sliding("target", MLX_ROTATING, MLX_ROTATING_LISTED), WRONG_OUTPUT,
             "speculation starts, but past the window mlx-lm trims no layer of the target's cache, so rejected "
             "draft tokens stay in it and the output can be wrong (a prompt longer than the window, prefilled by "
             "mlx-engine's cache wrapper, fails the start check instead)",
             f"mlx_engine/cache_wrapper.py:278-300; mlx-lm {MLX_LM} mlx_lm/models/cache.py:109-110, 543, "
             "mlx_lm/generate.py:589-591"),
    ArchRule("non-trimmable draft cache", StateIn("draft"), None,
             "the draft's cache is never checked (a no-op trim), so acceptance falls; the target verifies every token",
             f"mlx-lm {MLX_LM} mlx_lm/generate.py:591"),
)


def rule(t: Side, d: Side) -> Verdict:
    """LM Studio's mlx-engine: no draft for a vision_config target; else tokenizer.vocab_size equal."""
    if t.has_vision_config:
        return Verdict(REFUSED, ["the target's config.json has vision_config: LM Studio loads it through its "
                                 "batched vision kit, which never takes a draft model"])
    missing = tokenizer_missing(t, d)
    if missing:
        return Verdict(REFUSED, [missing])
    ts, ds = tokenizer_sizes(t, d)
    if ts != ds:
        return Verdict(REFUSED, [size_differs("tokenizer.vocab_size", ts, ds) + ": LM Studio reports the draft as "
                                 "incompatible and refuses to load it"])
    if not same_mapping(t, d):
        return mapping_differs(t, d, None, f"tokenizer.vocab_size {ts} on both, so LM Studio loads the draft")
    return Verdict(WORKS, [f"tokenizer.vocab_size {ts} on both and the same mapping"])


def gguf_rule(t: Side, d: Side) -> Verdict:
    """LM Studio runs GGUF models on its llama.cpp engine: two GGUF files get llama.cpp's verdict."""
    if not (t.gguf_file and d.gguf_file):
        return Verdict(REFUSED, ["LM Studio runs a GGUF model on its llama.cpp engine and an HF (MLX) model on "
                                 "mlx-engine; a draft must run on the target's engine, so both must be GGUF"])
    v = llamacpp_rule(t, d)
    return Verdict(v.outcome, ["LM Studio's GGUF engine is llama.cpp", *v.reasons])


SDK = "1.5.0"  # lmstudio-python: the calls and prediction-config keys the script uses (flags/lmstudio-1.5.0)
LMS = "07b7252"  # lmstudio-ai/lms, LM Studio's CLI: `lms import` puts a local GGUF in LM Studio (flags/lms-07b7252)
MODELS = "~/.lmstudio/models"  # LM Studio's default models folder (lms src/lmstudioPaths.ts defaultModelsFolder)
LOCAL = "local"  # the user part of what this tool puts there (models/<user>/<repo>/<file>: lms importCmd.ts:176)
# The helpers of the script, each used only where a side needs it. `get` downloads one side through LM Studio and
# returns the model key LM Studio gives it: search_models -> the exact hit (as `lms get` picked it, lms
# src/subcommands/get.ts:220, 270 at 34dcdc4) -> the download option of the quantization (get.ts:296, 316) ->
# download(), "a model ... and its path for loading" (sync_api.py:656-665, json_api.py:885 defaultIdentifier).
# `find` looks up the key of a model this tool's steps put in the models folder, by its path
# (list_downloaded_models, DownloadedModel.path and model_key: json_api.py:2270-2276).
GET = ("get = lambda repo, kind, quant='': (next((o for m in c.repository.search_models(repo, "
       "compatibility_types=[kind]) if m.search_result.exact for o in m.get_download_options() if not quant or "
       "(o.info.quantization or '').upper() == quant.upper()), False) or sys.exit(f'LM Studio finds no {quant or kind} "
       "download of {repo}')).download()")
FIND = ("find = lambda path: next((m.model_key for m in c.list_downloaded_models('llm') "
        "if (m.path + '/').startswith(path + '/')), '') or sys.exit(f'LM Studio lists no model at {path}')")


def on_gguf(setup: Setup) -> bool:
    """Whether the setup runs on LM Studio's llama.cpp engine (GGUF, any system) rather than mlx-engine (Apple):
    a GGUF side, or a side at a GGUF type (float weights run on either)."""
    sides = [s for s in (setup.target, setup.draft) if s is not None]
    if any(s.kind in (GGUF, FILE) for s in sides):
        return True
    return not any(s.kind == MLX for s in sides) and any(_gguf_type(s.quant) for s in sides)


def _gguf_type(name: str | None) -> bool:
    if name is None or is_float(name):
        return False
    q = lookup(name)
    return q.family in GGUF_FAMILIES


def _side(src: Source, gguf: bool, steps: list[str], taken: set[str]) -> str:
    """The script's expression for one side's model key, after the shell steps that make its weights."""
    if src.kind == GGUF:  # a GGUF repo: the file of the tag, downloaded by LM Studio
        return f"get('{src.repo}', 'gguf', '{src.tag or src.quant}')"
    if not gguf and src.kind != DIR and (src.kind == MLX or is_float(src.quant) or src.quant == src.stored):
        return f"get('{src.repo}', 'safetensors')"  # an MLX repo or float checkpoint (`lms get --mlx`, get.ts:131)
    if gguf:  # a local GGUF file, or one the conversion chain makes (llama.cpp's), imported into LM Studio
        path = src.repo if src.kind == FILE else gguf_side(src, LLAMACPP_COMMIT, steps, taken)[1]
        name = os.path.basename(path)
        user_repo = f"{LOCAL}/{name.removesuffix('.gguf')}-GGUF"
        steps.append(f"lms import {path} --user-repo {user_repo} -y" + (" --copy" if src.kind == FILE else ""))
        return f"find('{user_repo}/{name}')"
    name = f"{src.repo.rstrip('/').rsplit('/', 1)[-1]}-{src.quant}"  # mlx_lm.convert straight into the folder
    while name in taken:
        name += "-draft"
    taken.add(name)
    how = ("" if is_float(src.quant) else " -q --q-mode mxfp4" if src.quant == "mxfp4"
           else f" -q --q-bits {(src.quant or '').removesuffix('bit')}")
    steps.append(f"mlx_lm.convert --hf-path {src.repo}{how} --mlx-path {MODELS}/{LOCAL}/{name}")
    return f"find('{LOCAL}/{name}')"


def launch(setup: Setup) -> list[str]:
    """A script of lmstudio-python's calls that runs the setup, after the shell steps that make the weights LM
    Studio cannot download as they are. LM Studio gives a model its key when it downloads or finds it, so the
    script asks for the keys rather than guessing them: ``get`` (a GGUF repo's file of the tag on its llama.cpp
    engine; an MLX repo or a float checkpoint on mlx-engine, Apple only) or ``find`` (a file ``lms import`` put in
    the models folder, or an ``mlx_lm.convert`` output written there). Then ``llm(target)`` and
    ``respond(config=...)`` with ``draftModel`` and ``speculativeDecodingNumDraftTokensExact``, prediction-config keys
    of lmstudio/_kv_config.py (SUPPORTED_SERVER_KEYS "llm.prediction"); without a count LM Studio picks its own."""
    assert setup.draft is not None  # a draft-model launch
    gguf = on_gguf(setup)
    steps: list[str] = []
    taken: set[str] = set()
    target = _side(setup.target, gguf, steps, taken)
    draft = _side(setup.draft, gguf, steps, taken)
    exact = f", 'speculativeDecodingNumDraftTokensExact': {setup.draft_tokens}" if setup.draft_tokens else ""
    used = f"{target} {draft}"
    lines = ["import sys, lmstudio as lms", "c = lms.get_default_client()",
             *([GET] if "get(" in used else []), *([FIND] if "find(" in used else []),
             f"target = {target}", f"draft = {draft}",
             f"print(lms.llm(target).respond('Hello', config={{'draftModel': draft{exact}}}))"]
    return noted(setup, [*steps, f'python -c "{"; ".join(lines)}"'])


# No fix: mlx-engine has no vocabulary translation, and tokenizer.vocab_size is the base vocabulary.
ENGINE = released(
    releases=(VERSION,),
    name="lmstudio", display="LM Studio (mlx-engine)", version=f"mlx-engine {VERSION}",
    # mlx-engine runs MLX's affine quantizations, the llama.cpp engine the rest; mlx-engine passes no draft count unless
    # the user set one (mlx_engine/utils/speculative_decoding.py configure_num_draft_tokens_in_generate_args), so
    # mlx-lm's default applies
    speed=SpeedProfile("mlx", ("apple",), "4bit", "4bit", 8,
                       gguf=SpeedProfile("ggml", ("nvidia", "amd", "apple", "cpu"), "Q4_K_M", "Q8_0", 16),
                       source=RUNS_ON, families=(AFFINE,), default_draft_tokens=2,
                       default_draft_source="mlx_lm/generate.py:491 (speculative_generate_step num_draft_tokens=2)"),
    sources={
        "tokenizer.vocab_size equal": "mlx_engine/model_kit/model_kit.py:193-203",
        "vision_config target: no draft": "mlx_engine/generate.py:257-270, "
                                          "mlx_engine/model_kit/batched_vision/model_kit.py:388-394",
    },
    facts=("has_vision_config", "tok.hf_vocab_size", "tok.vocab_sha256"),
    rule=rule, class_key=("hf", "tok"), launch=launch, sizes=tokenizer_sizes, words=dict(SIZE_WORDS),
    refuses_target_with="has_vision_config", gguf_rule=gguf_rule, arch_rules=ARCH_RULES,
    gguf_arch_rules=LLAMACPP_ARCH_RULES,
    gguf_engine="llama.cpp")


# ---------------------------------------------------------------- what LM Studio's server reports (indexer measure)
# LM Studio is closed source: its REST API v0 is documented (lmstudio-ai/docs 1_developer/2_rest/endpoints.mdx, and
# the 0.3.10 entry of 1_developer/api-changelog.md:146-165 for the speculative stats), and lmstudio-python 1.5.0's
# LlmPredictionStats (src/lmstudio/_sdk_models/__init__.py:6694-6718) names the same counts.
_DRAFT_COUNTS = ("total_draft_tokens_count", "accepted_draft_tokens_count")


def _server_release(get_json) -> str | None:
    """LM Studio's server reports no version of its own; the loaded engine's runtime name and version come with
    each v0 response (``runtime``), read in :func:`_server_reading`."""
    return None


def _server_request(prompt: str, max_tokens: int, target: str | None = None, draft: str | None = None):
    """A greedy chat completion on the v0 REST API (``/api/v0/chat/completions``), whose response has ``stats``:
    ``model`` and ``draft_model`` are LM Studio's model keys; without ``draft_model`` the request runs without
    speculation (api-changelog.md:146-152)."""
    extra = {"model": target} if target else {}
    if draft:
        extra["draft_model"] = draft
    return Exchange("/api/v0/chat/completions", chat_body(prompt, max_tokens, **extra))


def _server_reading(answer, timing):
    """``stats.tokens_per_second`` and ``generation_time`` (seconds), and the draft counts in ``stats`` (the
    0.3.10 changelog) or, in later builds, in ``usage``; the quantization from ``model_info.quant``."""
    stats, usage = answer.get("stats") or {}, answer.get("usage") or {}
    counts = stats if any(k in stats for k in _DRAFT_COUNTS) else usage
    text = ((answer.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
    n = int(usage.get("completion_tokens") or 0)
    rate = stats.get("tokens_per_second")
    return Reading(tokens=n, seconds=(n - 1) / rate if rate and n > 1 else None, text=text,
                   drafted=counts.get("total_draft_tokens_count"), accepted=counts.get("accepted_draft_tokens_count"),
                   quant=(answer.get("model_info") or {}).get("quant"))


def runtime_release(answer) -> str | None:
    """The v0 response's ``runtime`` ("name version"), the engine build that ran it."""
    rt = answer.get("runtime") if isinstance(answer, dict) else None
    if isinstance(rt, dict) and rt.get("version"):
        return f"{rt.get('name') or 'runtime'} {rt['version']}"
    return None


def _server():
    return Server(
        release=_server_release, request=_server_request, reading=_server_reading, answer_release=runtime_release,
        per_request_off=True,
        sources={
            "stats.total_draft_tokens_count, accepted_draft_tokens_count": "lmstudio-ai/docs 1_developer/"
                                                                          "api-changelog.md:146-165 (0.3.10)",
            "the same counts in the SDK": "lmstudio-python 1.5.0 src/lmstudio/_sdk_models/__init__.py:6694-6718",
            "stats.tokens_per_second, model_info, runtime": "lmstudio-ai/docs 1_developer/2_rest/endpoints.mdx "
                                                            "(POST /api/v0/chat/completions)",
        },
        not_reported="a server version (the response's runtime names the engine build)")


SERVER = _server()
