"""The engine registry: the one list of serving engines (stdlib only, for the query path).

Each engine is one module beside this one (``sglang``, ``vllm``, ``transformers``, ``llamacpp``, ``mlx``,
``lmstudio``, ``ollama``) whose :class:`~indexer.engines.base.Engine` carries its name and display name, the engine
version it mirrors, the source reference of each check, the facts its rule reads, the rule itself, its class
key for ``compute``, its launch-command builder, the sizes and the fix it words, its words for the outcomes
and its speculator-head rules (``Engine.heads``). ``rules``, ``compute``, ``query``, the CLI choices, the
models and the site all read :data:`ENGINES`; adding an engine means adding its module and one line here.
docs/engines.md explains every rule; :mod:`indexer.engines.base` the seven outcomes; each engine's
``ARCH_RULES`` (:mod:`indexer.engines.archrules`) its architecture rows.
"""

from __future__ import annotations

from ..errors import BadInput
from ..gguf import LLAMACPP_COMMIT  # noqa: F401  (re-exported: compute and the crawl writer stamp it)
from . import llamacpp, lmstudio, mlx, ollama, sglang, transformers, vllm
from .base import (  # noqa: F401  (re-exported: the names the rest of the project imports from the registry)
    DEGRADED,
    GGUF_CLASS_KEY,
    NO_SPECULATION,
    OUTCOMES,
    REFUSED,
    SLOWER,
    UNKNOWN,
    USELESS,
    WORKS,
    WRONG_OUTPUT,
    Engine,
    Side,
    SpeedProfile,
    Verdict,
    loads_no_gguf,
    pair_agreement,
    same_mapping,
)
from .headrules import METHODS as QUERY_METHODS  # noqa: F401  (re-exported: the --method choices, draft to all)
from .headrules import HeadRules
from .llamacpp import LLAMACPP_CHECK_START_ID, LLAMACPP_MAX_VOCAB_DIFF, gguf_buckets, gguf_signature  # noqa: F401
from .mlx import mlx_model_type_supported  # noqa: F401
from .vllm import tli_constraints  # noqa: F401

# Today's order: it is the order of every output that lists engines.
ENGINES: dict[str, Engine] = {m.ENGINE.name: m.ENGINE
                              for m in (sglang, vllm, transformers, llamacpp, mlx, lmstudio, ollama)}

# engine -> its server's wire format (engines/server.py), for `indexer measure`: the engines that serve over HTTP
SERVERS = {m.ENGINE.name: m.SERVER for m in (sglang, vllm, llamacpp, mlx, lmstudio)}

ENGINE_NAMES: dict[str, str] = {name: e.display for name, e in ENGINES.items()}
DEFAULT_ENGINE = "sglang"


# The engine whose classes are GGUF signatures (a local GGUF target is matched to a catalog repo through it).
GGUF_ENGINE = next(name for name, e in ENGINES.items() if e.gguf_classes)
# The engines that load speculator heads as Hugging Face checkpoints (heads from GGUF files: Engine.heads.from_gguf)
HEAD_ENGINES = tuple(name for name, e in ENGINES.items() if isinstance(e.heads, HeadRules))


def speed_profile(name: str, quant) -> SpeedProfile:
    """How the engine ran weights of ``quant`` (a speed.quant.Quant), for the calibration: its runtime, draft-token
    cap and default count; ValueError for an engine the speed model has no profile of."""
    profile = engine(name).speed
    if profile is None:
        raise ValueError(f"{name} has no speed profile: the speed model does not estimate it")
    return profile.running(quant.family)


def engine(name: str) -> Engine:
    """The registry entry for ``name``, with one clear error for an unknown one."""
    try:
        return ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}") from None


def at(name: str, release: str | None = None) -> Engine:
    """The engine as it was at ``release`` (None: its newest release we have read, the default)."""
    return ENGINES[name].at(release)


def parse_versions(specs) -> dict[str, str]:
    """``--engine-version ENGINE==VERSION`` values (repeatable) as {engine: release}; BadInput (exit 2, one line)
    names the known engines or releases."""
    out: dict[str, str] = {}
    for spec in specs or ():
        name, sep, release = spec.partition("==")
        if name not in ENGINES:
            raise BadInput(f"--engine-version {spec!r}: unknown engine {name!r}; choose one of {', '.join(ENGINES)}"
                           " (as ENGINE==VERSION)")
        e = ENGINES[name]
        if not sep or release not in e.releases:
            raise BadInput(f"--engine-version {spec!r}: unknown {name} version {release!r}; known: "
                           f"{', '.join(e.releases)}")
        out[name] = release
    return out


def verdicts(t: Side, d: Side, releases: dict[str, str] | None = None) -> dict[str, Verdict]:
    """Every engine's verdict on the pair, in registry order, each at its release in ``releases`` (default: the
    newest)."""
    releases = releases or {}
    return {name: e.at(releases.get(name)).verdict(t, d) for name, e in ENGINES.items()}


def by_version(name: str, t: Side, d: Side) -> dict[str, str] | None:
    """The outcome at each of the engine's releases when they differ (oldest first); None when all agree."""
    e = ENGINES[name]
    if len(e.releases) < 2:
        return None
    seen = {r: e.at(r).verdict(t, d).outcome for r in e.releases}
    return seen if len(set(seen.values())) > 1 else None


def versions_line(name: str, seen: dict[str, str]) -> str:
    """One line for outcomes that differ by release: "refused on transformers <= 5.24.0, works from 5.25.0"."""
    label = ENGINES[name].version.split(" ")[0]
    releases = list(seen)
    runs: list[tuple[str, list[str]]] = []
    for r in releases:
        if runs and runs[-1][0] == seen[r]:
            runs[-1][1].append(r)
        else:
            runs.append((seen[r], [r]))
    parts = []
    for i, (outcome, rs) in enumerate(runs):
        if i == 0:
            parts.append(f"{outcome} on {label} \u2264 {rs[-1]}" if len(runs) > 1 else f"{outcome} on {label}")
        elif i == len(runs) - 1:
            parts.append(f"{outcome} from {rs[0]}")
        else:
            parts.append(f"{outcome} on {rs[0]}" + (f"..{rs[-1]}" if len(rs) > 1 else ""))
    return ", ".join(parts)
