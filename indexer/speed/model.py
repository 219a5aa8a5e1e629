"""The expected speed-up of speculative decoding for one stream: cost per step, acceptance, best draft length.

One round drafts γ tokens one by one, then the target verifies them in one pass of γ+1 tokens, and keeps the
accepted prefix plus one token of its own. With a per-token acceptance α (i.i.d.), a round yields
E = (1 - α^(γ+1)) / (1 - α) tokens (Leviathan et al. 2023, https://arxiv.org/abs/2211.17192), and

    speed-up = E * t_target(1) / (γ * t_draft(1) + t_target(γ+1) + overhead_per_round)

where t(n) is the time of one forward pass over n tokens, from first principles:

    t(n) = layers * τ + bytes_read(n) / (η * bandwidth) + (n - 1) * κ * 2 * active_params / compute

- ``bytes_read``: the weights a step reads at the quantization's bits per weight (the input embedding table is not
  read, only one row of it; a tied table is read once as the output head), the KV cache at the stated context, and
  for mixture-of-experts models only the active experts, except that a pass over n tokens reads the *union* of
  the experts its tokens route to: E_total * (1 - (1 - k/E_total)^n) expert blocks for random routing of k each.
- mixture-of-experts layers add their routing: at one token a routed FFN is a chain of small kernels (router,
  softmax, top-k, gather and normalisation of the weights, three expert matmuls, the weighting, and one add per
  used expert after the first: llama.cpp src/llama-graph.cpp:2039-2360 at 0c1e57098), k + 7 more than a dense
  FFN's four, each waiting on the last: ``moe_layer_seconds``. A pass pays it once, whatever its tokens.
- ``τ``: the fixed cost per layer of one forward pass (kernel launches, synchronisation) of the runtime on that
  kind of device; ``η``: the share of peak bandwidth the runtime's kernels reach; ``κ``: the arithmetic a verify
  pass adds per extra token, relative to plain FP32 multiply-adds, by kernel family (block-quantized weights are
  unpacked per use, float weights are not); ``overhead_per_round``: the runtime's fixed cost of a speculation round.
  These few factors are calibrated on published measurements (``calibrate.py``); Leviathan's formula is the case
  τ = κ = overhead = 0, which is why it never predicts the slowdowns people measure.

Acceptance α comes from what the catalog knows of the pair (``acceptance``): the draft's size, its lineage relative
to the target, the task class, the quantization of both, and the measured vocabulary agreement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import hardware as hw
from .gate import DraftGate, round_of, tokens_per_round
from .quant import AFFINE, FLOAT, FP8, INT4, IQUANT, KQUANT, LEGACY, Q8, Quant, block

GGML, MLX, SERVING, EAGER = "ggml", "mlx", "serving", "eager"  # runtimes: how an engine runs a forward pass
TASKS = ("code", "chat", "prose", "reasoning")
DEFAULT_TASK = "chat"
DEFAULT_CONTEXT = 2048  # tokens in the KV cache during the measured stretch of a single-stream answer
SIBLING, FAMILY, OTHER = "sibling", "family", "other"  # the draft's relation to the target
# What the draft was tuned for, when it is not what the target was tuned for (``tuning``): a base draft (no chat
# tuning) for a chat target, a draft that does not reason (no thinking traces) for a reasoning target. Either is
# the target's pretrained lineage tuned another way, or not at all, which is what the `family` relation describes
# (a fine-tune of the same base by another hand): a sibling so tuned counts as family (``kin``).
BASE_FOR_CHAT = "a base draft for a chat target"
PLAIN_FOR_REASONING = "a draft that does not reason for a reasoning target"

# First-principles priors of the factors, before any measurement: kernels reach most of peak bandwidth; a forward
# pass costs tens of microseconds a layer in compiled runtimes (CUDA graphs, Metal command buffers) and hundreds in
# eager PyTorch; block-quantized weights cost a few multiply-adds each to unpack. Units: eta a share of peak
# bandwidth, tau microseconds per layer per forward pass, overhead milliseconds per speculation round (both per
# runtime and kind of device), kappa multiples of 2 * active params FP32 operations per extra verified token;
# acceptance in logits.
# Seconds a dependent small kernel costs beyond its bytes, for the routing of mixture-of-experts layers (k + 7
# kernels a layer, module docstring). From the one published decode speed of a small-active MoE in the shared
# measurements: Qwen3.6-35B-A3B (40 MoE layers, 8 routed experts) at UD-Q4_K_XL on an RTX 3090 under llama-server
# decodes at 139.22 tok/s (thc1006/qwen3.6-speculative-decoding-rtx3090, "baseline 139.22 ± 0.46 tok/s"), 7.18 ms
# a token where its bytes and dense layer costs take 3.05 ms: 4.13 ms over 40 x 15 kernels. No Apple or AMD MoE
# decode speed is published there: the same latency stands for every kind of device.
KERNEL_LATENCY = 6.9e-6
MOE_EXTRA_KERNELS = 7  # per MoE layer beyond one per used expert (module docstring)

PRIORS = {
    "eta": {hw.APPLE: 0.88, hw.NVIDIA: 0.8, hw.AMD: 0.7, hw.CPU: 0.7},
    "tau": {(GGML, hw.APPLE): 60.0, (GGML, hw.NVIDIA): 20.0, (GGML, hw.AMD): 40.0, (GGML, hw.CPU): 10.0,
            (MLX, hw.APPLE): 60.0, (SERVING, hw.NVIDIA): 10.0, (SERVING, hw.AMD): 15.0,
            (EAGER, hw.NVIDIA): 450.0, (EAGER, hw.AMD): 450.0, (EAGER, hw.APPLE): 600.0, (EAGER, hw.CPU): 300.0},
    "overhead": {(GGML, hw.APPLE): 2.5, (GGML, hw.NVIDIA): 1.0, (GGML, hw.AMD): 1.5, (GGML, hw.CPU): 2.0,
                 (MLX, hw.APPLE): 2.0, (SERVING, hw.NVIDIA): 1.0, (SERVING, hw.AMD): 1.5,
                 (EAGER, hw.NVIDIA): 3.0, (EAGER, hw.AMD): 3.0, (EAGER, hw.APPLE): 5.0, (EAGER, hw.CPU): 3.0},
    "kappa": {FLOAT: 0.05, Q8: 1.0, KQUANT: 3.0, LEGACY: 3.0, IQUANT: 4.0, AFFINE: 1.5, FP8: 0.3, INT4: 0.6},
    # CUDA and ROCm kernels multiply quantized blocks with int8 dot products (dp4a, several times the FP32 rate)
    "kappa_scale": {hw.APPLE: 1.0, hw.NVIDIA: 0.5, hw.AMD: 0.5, hw.CPU: 1.0},
    # unpacking a weight at decode, by block type (quant.block), in FP32 operations per weight (kappa_scale applies):
    # none known before a measured decode speed (calibrate.fit_decode); a type no row measured costs its bytes alone
    "unpack": {},
    # the verify arithmetic of MLX (in the checkpoint's bfloat16) on a GPU that emulates bfloat16: an emulated bf16
    # GEMM ran at 40-50% of fp16 (philipturner/metal-flash-attention#17), so about 2.2 times the cost
    "bf16_emulation": 2.2,
    "accept": {"base": 1.0, "per_ln_size": 0.5, "quant_penalty": 0.15,
               "task": {"code": 0.0, "reasoning": -0.2, "chat": -0.3, "prose": -0.6},
               "relation": {SIBLING: 0.0, FAMILY: -0.4, OTHER: -1.5},
               "spread": 0.5},
    "cost_spread": 0.1,
    "kernel_latency": KERNEL_LATENCY,
}

# The factors calibrated from PRIORS on the shared measurements (``python benchmarks/speedup.py --fit`` prints
# them; tests/test_speed.py checks that a fresh calibration reproduces them). Task and relation offsets and the
# factors no measurement exercises keep their priors.
CALIBRATION = {
    "eta": {hw.APPLE: 0.923, hw.NVIDIA: 0.8, hw.AMD: 0.7, hw.CPU: 0.7},
    "tau": {
        (GGML, hw.APPLE): 74.115,
        (GGML, hw.NVIDIA): 20.102,
        (GGML, hw.AMD): 40.0,
        (GGML, hw.CPU): 10.0,
        (MLX, hw.APPLE): 59.685,
        (SERVING, hw.NVIDIA): 10.0,
        (SERVING, hw.AMD): 15.0,
        (EAGER, hw.NVIDIA): 451.49,
        (EAGER, hw.AMD): 450.0,
        (EAGER, hw.APPLE): 600.0,
        (EAGER, hw.CPU): 300.0,
    },
    "overhead": {
        (GGML, hw.APPLE): 2.792,
        (GGML, hw.NVIDIA): 1.005,
        (GGML, hw.AMD): 1.5,
        (GGML, hw.CPU): 2.0,
        (MLX, hw.APPLE): 2.027,
        (SERVING, hw.NVIDIA): 1.0,
        (SERVING, hw.AMD): 1.5,
        (EAGER, hw.NVIDIA): 3.0,
        (EAGER, hw.AMD): 3.0,
        (EAGER, hw.APPLE): 5.0,
        (EAGER, hw.CPU): 3.0,
    },
    "kappa": {FLOAT: 0.05, Q8: 1.267, KQUANT: 4.022, LEGACY: 3.3, IQUANT: 4.0, AFFINE: 1.893, FP8: 0.3, INT4: 0.6},
    "kappa_scale": {hw.APPLE: 1.0, hw.NVIDIA: 0.502, hw.AMD: 0.5, hw.CPU: 1.0},
    "unpack": {
        "Q8_0": 0.36,
        "Q6_K": 1.73,
        "Q5_K": 9.31,
        "Q5_0": 5.03,
        "Q4_K": 2.3,
        "Q4_0": 2.39,
        "Q3_K": 14.6,
        "Q2_K": 10.79,
    },
    "bf16_emulation": 2.2,
    "accept": {
        "base": 1.676,
        "per_ln_size": 0.358,
        "quant_penalty": 0.176,
        "task": {"code": 0.0, "reasoning": -0.2, "chat": -0.3, "prose": -0.6},
        "relation": {SIBLING: 0.0, FAMILY: -0.4, OTHER: -1.5},
        "spread": 0.43,
    },
    "cost_spread": 0.1,
    "kernel_latency": 6.9e-06,
}


@dataclass(frozen=True)
class Shape:
    """What the cost of a forward pass depends on, read from config.json (or the Hub's parameter count)."""

    params: int  # total parameters
    active: int | None = None  # parameters used per token (mixture-of-experts), else None
    layers: int | None = None
    hidden: int | None = None
    vocab: int | None = None
    tied: bool | None = None  # tie_word_embeddings
    experts: int | None = None  # routed experts per MoE layer
    experts_per_token: int | None = None
    kv_per_token: int | None = None  # KV cache elements per token: 2 * layers * kv_heads * head_dim
    state_layers: int | None = None  # layers that keep a recurrent state, not a KV cache (linear attention, SSM)
    state_bytes: int | None = None  # the recurrent state of one sequence over all those layers, in bytes


@dataclass(frozen=True)
class Setup:
    """Where and how a pair runs: device, runtime, quantizations, task, context and the draft-token cap."""

    device: hw.Hardware
    runtime: str
    target_quant: Quant
    draft_quant: Quant
    task: str = DEFAULT_TASK
    context: int = DEFAULT_CONTEXT
    max_draft_tokens: int = 8
    draft_tokens: int | None = None  # fixed by the user (--draft-tokens), else the best is chosen
    batch: int = 1  # sequences decoded together: each reads its own KV cache, all share one read of the weights
    gate: DraftGate | None = None  # how the engine ends a draft early; None: it drafts the full count every round
    # the engine cannot cut a recurrent state back to the accepted prefix, so it copies the state of each model that
    # keeps one to host memory every round and back on a rejection, then replays the accepted tokens (llama-server
    # with a draft model: ``state_copy_seconds``)
    copies_state: bool = False


@dataclass(frozen=True)
class Estimate:
    """The expected speed-up, its range over α's uncertainty, the chosen draft-token count and α."""

    estimate: float
    low: float
    high: float
    draft_tokens: int
    acceptance: float
    target_tok_s: float
    why: str


class _Pass:
    """One model's forward-pass cost on a setup, its constants worked out once: a pass over n tokens is then a few
    multiplications (a query estimates dozens of drafts at up to 16 draft lengths each)."""

    __slots__ = ("fixed", "layer_seconds", "dense", "per_expert", "experts", "keep", "untied", "seconds_per_param",
                 "slope", "batch", "unpack")

    def __init__(self, s: Shape, q: Quant, setup: Setup, cal: dict):
        d = setup.device
        active = s.active or s.params
        embedding = (s.vocab or 0) * (s.hidden or 0)
        # the input embedding table is not read (one row is), unless tied: then it is the output head
        self.untied = embedding if (s.tied is False and embedding < s.params / 2) else 0
        self.dense: float = active
        self.per_expert, self.experts, self.keep = 0.0, 0, 1.0
        if s.experts and s.experts_per_token and s.active and s.experts > s.experts_per_token and s.params > active:
            k, e = s.experts_per_token, s.experts
            self.per_expert = (s.params - active) / (e - k)
            self.dense, self.experts, self.keep = active - k * self.per_expert, e, 1 - k / e
        bandwidth = cal["eta"][d.kind] * d.bandwidth_gbps * 1e9
        self.seconds_per_param = q.bpw / 8 / bandwidth
        self.batch = setup.batch
        kv = (s.kv_per_token or 0) * setup.context * 2 * setup.batch  # the f16 cache at the stated context
        tau = cal["tau"].get((setup.runtime, d.kind), 50.0) * 1e-6
        layers = s.layers or max(8, round(4 * math.log2(max(s.params, 1e8) / 1e8)) + 12)
        self.layer_seconds = layers * tau
        self.fixed = self.layer_seconds + kv / bandwidth + self.moe_layer_seconds(s, layers, cal)
        kappa = cal["kappa"][q.family] * cal["kappa_scale"][d.kind]
        if setup.runtime == MLX and not d.bf16:
            kappa *= cal.get("bf16_emulation", 1.0)
        # a pass unpacks each weight it reads once, whatever its tokens (the small-batch kernels reuse the block)
        self.unpack = cal.get("unpack", {}).get(block(q), 0.0) * cal["kappa_scale"][d.kind] / (d.tflops * 1e12)
        self.slope = kappa * 2 * max(active - self.untied, active * 0.3) / (d.tflops * 1e12)

    @staticmethod
    def moe_layer_seconds(s: Shape, layers: int, cal: dict) -> float:
        """The routing of a pass through a mixture-of-experts model: k + 7 dependent kernels a layer."""
        if not (s.experts and s.experts_per_token):
            return 0.0
        return layers * (s.experts_per_token + MOE_EXTRA_KERNELS) * cal.get("kernel_latency", KERNEL_LATENCY)

    def read(self, n_tokens: int) -> float:
        """The weights a pass over ``n_tokens`` tokens in all reads: the union of their experts' (random routing)."""
        read = self.dense + (self.per_expert * self.experts * (1 - self.keep ** n_tokens) if self.experts else 0.0)
        return max(read - self.untied, read * 0.3)

    def seconds(self, n_tokens: int) -> float:
        """A pass over ``n_tokens`` per sequence."""
        n_tokens *= self.batch
        return self.fixed + self.read(n_tokens) * (self.seconds_per_param + self.unpack) + (n_tokens - 1) * self.slope


# The rate of a copy between device memory and a pageable host buffer (llama.cpp's host state I/O: one
# ggml_backend_tensor_get / _set per layer tensor into a std::vector, src/llama-context.cpp:2692-2752 at 0c1e57098).
# A discrete GPU copies over PCIe: 3.0 GB/s is the one timed measurement of this copy, on an RTX 3090 (thc1006/
# qwen3.6-speculative-decoding-rtx3090 ERRATA A12: ggml_time_us() around the checkpoint calls, a 62.8 MiB state saved
# in 21.9 ms and restored in 22.4 ms, medians); the same stands for AMD's discrete GPUs. Apple's GPUs and CPUs share
# host memory, so the copy is a memcpy, reading and writing at the bandwidth the kernels reach.
HOST_COPY_GBPS = {hw.NVIDIA: 3.0, hw.AMD: 3.0}


def state_copy_seconds(n_bytes: int | None, device: hw.Hardware, cal: dict = CALIBRATION) -> float:
    """Seconds to copy ``n_bytes`` of recurrent state between the device and host memory, one way."""
    if not n_bytes:
        return 0.0
    rate = HOST_COPY_GBPS.get(device.kind) or cal["eta"][device.kind] * device.bandwidth_gbps / 2
    return n_bytes / (rate * 1e9)


def forward_seconds(s: Shape, q: Quant, n_tokens: int, setup: Setup, cal: dict = CALIBRATION) -> float:
    """Time of one forward pass over ``n_tokens`` tokens (module docstring)."""
    return _Pass(s, q, setup, cal).seconds(n_tokens)


def speedup_at(alpha: float, gamma: int, t_target: float, t_draft: float, t_verify: float, overhead: float) -> float:
    """Tokens per second with speculation over tokens per second without, for one round shape."""
    return tokens_per_round(alpha, gamma) * t_target / (gamma * t_draft + t_verify + overhead)


def best_speedup(target: Shape, draft: Shape, alpha: float, setup: Setup,
                 cal: dict = CALIBRATION) -> tuple[float, int, float]:
    """The best speed-up over draft-token counts 1..cap (or the user's count): (speed-up, γ, target step seconds)."""
    passes = _Pass(target, setup.target_quant, setup, cal), _Pass(draft, setup.draft_quant, setup, cal)
    return _best_of(alpha, _round_costs(setup, passes, cal, (target, draft)), setup.gate)


@dataclass(frozen=True)
class StateCopies:
    """What a round costs an engine that copies recurrent states (``Setup.copies_state``; llama-server at 0c1e57098,
    docs/speed.md "Hybrid and recurrent targets"): ``each_round``, the draft's state saved before it drafts and put
    back after (a draft with state layers); ``kept``, the target's state saved before a verify; ``rejected``, both
    put back after a rejection, whose accepted tokens the target then verifies again with one more of its own."""

    each_round: float = 0.0
    kept: float = 0.0
    rejected: float = 0.0


NO_COPIES = StateCopies()
# t1, draft step, overhead, γs, target pass by k, state copies
Costs = tuple[float, float, float, tuple[int, ...], dict[int, float], StateCopies]


def state_copies(setup: Setup, target: Shape, draft: Shape, cal: dict = CALIBRATION) -> StateCopies:
    """The state copies a round makes on ``setup`` (none unless the engine copies states and a model keeps one)."""
    if not setup.copies_state:
        return NO_COPIES
    t = state_copy_seconds(target.state_bytes, setup.device, cal)
    d = state_copy_seconds(draft.state_bytes, setup.device, cal)
    if not (t or d):
        return NO_COPIES
    # the restore and the replay follow the target's checkpoint only: a target that cuts its cache back has none
    return StateCopies(each_round=2 * d, kept=t, rejected=t + d if t else 0.0)


def _round_costs(setup: Setup, passes: tuple, cal: dict, shapes: tuple | None = None) -> Costs:
    """What a round costs apart from α: the target and draft steps, the overhead, the draft lengths to try, the
    target's pass over k tokens per k (computed once per pair: the estimate tries three α on them) and the state
    copies of an engine that makes them."""
    pt, pd = passes
    overhead = cal["overhead"].get((setup.runtime, setup.device.kind), 2.0) * 1e-3
    gammas = (setup.draft_tokens,) if setup.draft_tokens else tuple(range(1, setup.max_draft_tokens + 1))
    copies = state_copies(setup, shapes[0], shapes[1], cal) if shapes else NO_COPIES
    every = setup.gate is not None or copies.kept > 0  # a replay verifies any count up to the cap + 1
    sizes = range(1, max(gammas) + 2) if every else [g + 1 for g in gammas]
    return pt.seconds(1), pd.seconds(1), overhead, gammas, {k: pt.seconds(k) for k in sizes}, copies


def _speedup(alpha: float, gamma: int, costs: Costs, gate: DraftGate | None) -> float:
    t1, td, overhead, _, seconds, copies = costs
    r = round_of(alpha, gamma, gate)
    seconds_per_round = r.passes * td + sum(p * seconds[k] for k, p in r.verify.items()) + overhead
    tokens = r.tokens
    if copies is not NO_COPIES:
        seconds_per_round += copies.each_round
    if copies.kept:
        # a rejected round puts the states back and verifies its accepted tokens, the target's correction and one
        # token more in a second pass (tools/server/server-context.cpp:3905-3935, then :2987-2992 at 0c1e57098)
        seconds_per_round += r.kept * copies.kept + sum(p * (copies.rejected + seconds[i + 2]) for i, p in r.rejected)
        tokens += sum(p for _, p in r.rejected)
    return tokens * t1 / seconds_per_round


def _best_of(alpha: float, costs: Costs, gate: DraftGate | None = None) -> tuple[float, int, float]:
    """The best speed-up over the γ of ``costs``: (speed-up, γ, target step seconds)."""
    best = (0.0, 1)
    for g in costs[3]:
        s = _speedup(alpha, g, costs, gate)
        if s > best[0]:
            best = (s, g)
    return best[0], best[1], costs[0]


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def quant_penalty(q: Quant) -> float:
    """How much a quantization blurs a model's next-token choice, in units of the calibrated penalty."""
    return max(0.0, 5.0 - q.bpw) ** 2


def tuning(target_chat: bool | None, draft_chat: bool | None, target_reasons: bool | None,
           draft_reasons: bool | None) -> str | None:
    """What sets the draft's tuning apart from the target's (None: the same, or unknown): the target reasons and the
    draft does not, or the target is tuned for chat and the draft is a base model."""
    if target_reasons and draft_reasons is False:
        return PLAIN_FOR_REASONING
    if target_chat and draft_chat is False:
        return BASE_FOR_CHAT
    return None


def kin(relation: str, tuned_apart: str | None) -> str:
    """The relation the acceptance reads: a sibling tuned for other text than the target's is family."""
    return FAMILY if tuned_apart and relation == SIBLING else relation


def acceptance_logit(draft_params: int, relation: str, task: str, target_quant: Quant, draft_quant: Quant,
                     cal: dict = CALIBRATION) -> float:
    """α before the vocabulary agreement, in logits: a bigger draft of the same lineage agrees more often."""
    a = cal["accept"]
    return (a["base"] + a["per_ln_size"] * math.log(max(draft_params, 1e7) / 1e9) + a["task"][task]
            + a["relation"][relation] - a["quant_penalty"] * (quant_penalty(draft_quant) + quant_penalty(target_quant)))


def acceptance(draft_params: int, relation: str, task: str, target_quant: Quant, draft_quant: Quant,
               agreement: float = 1.0, cal: dict = CALIBRATION) -> tuple[float, float, float]:
    """(α, low, high): the per-token acceptance and its range, times the share of tokens the vocabularies agree on."""
    x = acceptance_logit(draft_params, relation, task, target_quant, draft_quant, cal)
    spread = cal["accept"]["spread"]
    return _sigmoid(x) * agreement, _sigmoid(x - spread) * agreement, _sigmoid(x + spread) * agreement


def with_measured(alphas: tuple[float, float, float], measured: float, runs: float,
                  cal: dict = CALIBRATION) -> tuple[float, float, float]:
    """The prior (α, low, high) and a measured α of the pair (``indexer measure``) over ``runs`` runs, weighed in
    logits as one run against ``runs``: a few runs move it, many replace it; the range narrows as 1/√(1 + runs)."""
    n = max(float(runs), 0.0)
    x = (_logit(alphas[0]) + n * _logit(measured)) / (1 + n)
    spread = cal["accept"]["spread"] / math.sqrt(1 + n)
    return _sigmoid(x), _sigmoid(x - spread), _sigmoid(x + spread)


def estimate(target: Shape, draft: Shape, setup: Setup, *, relation: str, agreement: float = 1.0,
             cal: dict = CALIBRATION, measured: tuple[float, float] | None = None,
             tuned_apart: str | None = None) -> Estimate:
    """The expected speed-up of ``draft`` for ``target`` on ``setup`` with its range and reasons; ``measured``:
    the pair's measured (α, runs) on this task, which takes the prior's place as runs add up; ``tuned_apart``:
    what sets the draft's tuning apart from the target's (:func:`tuning`)."""
    read_as = kin(relation, tuned_apart)
    alphas = acceptance(draft.params, read_as, setup.task, setup.target_quant, setup.draft_quant, agreement, cal)
    kind = f"{read_as} draft" + (f": {tuned_apart}" if tuned_apart else "")
    if measured is not None:
        alphas = with_measured(alphas, *measured, cal)
        kind += f", measured {measured[0]:.2f} over {measured[1]:g} run{'' if measured[1] == 1 else 's'}"
    passes = _Pass(target, setup.target_quant, setup, cal), _Pass(draft, setup.draft_quant, setup, cal)
    return _estimate(alphas, passes, setup, cal, kind, (target, draft))


def _estimate(alphas: tuple[float, float, float], passes: tuple, setup: Setup, cal: dict, kind: str,
              shapes: tuple | None = None) -> Estimate:
    """The best draft length at α, then the range: α's low and high at that length, widened by the cost spread."""
    alpha, a_low, a_high = alphas
    costs = _round_costs(setup, passes, cal, shapes)
    s, gamma, t1 = _best_of(alpha, costs, setup.gate)
    t_draft, seconds = costs[1], costs[4]
    spread = math.exp(cal["cost_spread"])
    low = _speedup(a_low, gamma, costs, setup.gate) / spread
    high = _speedup(a_high, gamma, costs, setup.gate) * spread
    load = "one stream (batch 1)" if setup.batch == 1 else f"{setup.batch} streams decoded together"
    if setup.gate is None:
        rounds = f"verify of {gamma + 1} tokens {seconds[gamma + 1] * 1e3:.1f} ms"
    else:
        r = round_of(alpha, gamma, setup.gate)
        rounds = (f"up to {gamma} drafted, {r.drafted:.1f} on average (p-min {setup.gate.p_min:g}), "
                  f"{r.tokens:.1f} tokens a round")
    copies = costs[5]
    if copies is not NO_COPIES:
        each = (copies.each_round + copies.kept) * 1e3
        rounds += f"; recurrent state copied to host memory each round, {each:.1f} ms"
        if copies.kept:
            rounds += f", and back on a rejection, {copies.rejected * 1e3:.1f} ms and a replay"
    why = (f"α {alpha:.2f} ({kind}, {setup.task}); target step {t1 * 1e3:.1f} ms ({1 / t1:.0f} tok/s), "
           f"draft step {t_draft * 1e3:.1f} ms, {rounds} on {setup.device.name}; {load}")
    return Estimate(round(s, 2), round(min(low, s), 2), round(max(high, s), 2), gamma, round(alpha, 3),
                    round(1 / t1, 1), why)


# ---- speculator heads ---------------------------------------------------------------------------------------------
# A head drafts from the target's own hidden states: one small decoder layer (EAGLE, EAGLE-3) or the target's MTP
# layer, so its α depends on the method and the task, not on a size or a lineage. In logits, per method and task.
# eagle3: calibrated on the EAGLE-3 heads of the shared measurements (SpecForge's SpecBundle, SGLang chains of 3
# steps; ``python benchmarks/speedup_heads.py --fit``): their accept length inverted with Leviathan's E(α, 3).
# mtp: a prior, DeepSeek-V3's report (https://arxiv.org/abs/2412.19437, section 5.4.3) gives 85-90% acceptance of
# the second token. eagle: a prior, lower than EAGLE-3 (its paper, https://arxiv.org/abs/2503.01840, measures
# EAGLE-1 below EAGLE-3 at every batch size). Prose takes the draft models' chat-to-prose offset.
HEAD_ACCEPT = {
    "eagle3": {"code": 2.094, "chat": 1.007, "reasoning": 1.166, "prose": 0.707},
    "mtp": {"code": 1.9, "chat": 1.7, "reasoning": 1.8, "prose": 1.4},
    "eagle": {"code": 1.0, "chat": 0.4, "reasoning": 0.7, "prose": 0.1},
}
HEAD_LAYERS = {"eagle": 1, "eagle3": 1, "mtp": 1}  # decoder layers a head runs per drafted token


def head_shape(params: int | None, hidden: int | None, vocab: int | None, layers: int = 1) -> Shape | None:
    """What one head step reads: its parameters without the input embedding table (one row of it is read)."""
    if not params:
        return None
    table = (vocab or 0) * (hidden or 0)
    read = params - table if params - table >= params * 0.2 else params
    return Shape(params=int(read), layers=layers, hidden=hidden, tied=True)


def mtp_shape(target: Shape) -> Shape | None:
    """One MTP module: about one decoder layer of the target, plus its output head (shared, read again)."""
    if not target.layers or not target.hidden:
        return None
    layer = (target.active or target.params) / target.layers
    return Shape(params=int(layer + (target.vocab or 0) * target.hidden), layers=1, hidden=target.hidden, tied=True)


def estimate_head(target: Shape, head: Shape, setup: Setup, *, method: str, cal: dict = CALIBRATION,
                  accept: dict = HEAD_ACCEPT) -> Estimate | None:
    """The expected speed-up of a speculator head (``method``: eagle, eagle3, mtp), or None for a method with no
    acceptance figure (DFlash, n-gram)."""
    x = accept.get(method, {}).get(setup.task)
    if x is None:
        return None
    spread = cal["accept"]["spread"]
    alphas = (_sigmoid(x), _sigmoid(x - spread), _sigmoid(x + spread))
    passes = _Pass(target, setup.target_quant, setup, cal), _Pass(head, setup.target_quant, setup, cal)
    return _estimate(alphas, passes, setup, cal, f"{method} head")
