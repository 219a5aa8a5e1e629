"""Run transformers assisted generation on tiny random-weight models and say what happened.

Runs INSIDE an engine venv (torch + one transformers release), never in the project's venv, and imports nothing
of ``indexer``: ``tests/test_engine_run.py`` starts it with that venv's python. Reads a JSON request from the
file named by its argument (else stdin):

    {"draft": DIR, "targets": {name: DIR}, "prompt_len": 12, "new_tokens": 40, "seeds": [0]}

Each DIR holds a config.json (and tokenizer files, which this harness does not read): the model is built with
``AutoModelForCausalLM.from_config`` (random weights, ``trust_remote_code`` False), in float64 so that a batched
verify and a one-token step give the same greedy tokens. For every target, seed and assistant (the tiny Llama
draft and a perturbed copy of the target: see ``drafts``) it compares
``generate(ids, do_sample=False)`` with ``generate(ids, assistant_model=draft, do_sample=False)``:

* the assisted call raises: ``refused`` (with the exception's first line);
* some run's state is wrong: ``wrong_output`` (with the first position its tokens differ from plain greedy);
* else ``works``, also where a near tie flipped a token within the kernels' rounding.

Wrong output means a wrong state, not rounding (``../shared/NUMERICS.md``). The verify passes compute with other
kernels than one-token decoding (chunked against recurrent), and every family here rounds in float32 whatever the
model's dtype (the norms cast, e.g. ``models/llama/modeling_llama.py:64``; the gated delta rule of
Qwen3.5 and OLMo-Hybrid, ``models/qwen3_5/modeling_qwen3_5.py:379, 504``, ``models/olmo_hybrid/
modeling_olmo_hybrid.py:358, 483``; Mamba-2's scan and step, ``models/mamba2/modeling_mamba2.py:251, 313`` at
5.25.0), so tokens alone cannot tell. Each run therefore compares the assisted path's logits with a fresh pass of
the same model over the same tokens (no cache: what a right state gives), and plain decoding's with a fresh pass over
its own tokens (the two kernels' own difference): ``state_difference`` and ``kernel_difference``. A run's state is
wrong when ``state_difference`` exceeds :func:`tolerance` (float32's); each family reports its largest.

Prints one JSON object: {"transformers": VERSION, "torch": VERSION, "results": {name: {...}}}.
"""

from __future__ import annotations

import json
import sys
import warnings

# The logit difference float32 rounding may reach between two kernels on the same tokens: 2**10 units of its
# epsilon (1.2e-4). Measured on these models the kernels differ by at most 3e-7, and a wrong state by 1e-3 and more.
ULPS = 2 ** 10


def tolerance() -> float:
    """The largest logit difference that is rounding (:data:`ULPS` of float32's epsilon)."""
    import torch

    return ULPS * torch.finfo(torch.float32).eps


def build(directory: str, seed: int):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(seed)
    config = AutoConfig.from_pretrained(directory, trust_remote_code=False)
    kw = {"experts_implementation": "eager"}  # grouped_mm has no float64 kernel
    try:
        model = AutoModelForCausalLM.from_config(config, trust_remote_code=False, torch_dtype=torch.float64, **kw)
    except (TypeError, ValueError):  # a model class that takes no experts_implementation
        model = AutoModelForCausalLM.from_config(config, trust_remote_code=False, torch_dtype=torch.float64)
    model.eval()
    gc = model.generation_config
    gc.eos_token_id = None  # run the full length: an early EOS would end both calls before any draft is checked
    gc.pad_token_id = 0
    return model


def drafts(directory: str, draft_dir: str, seed: int):
    """The assistants each run uses: the tiny Llama (its drafts are nearly all rejected, so every round rolls the
    target back) and a copy of the target with a perturbed output layer (runs of accepted tokens, then a
    rejection: verify passes as long as a good draft makes them)."""
    import torch

    yield "llama", build(draft_dir, seed + 1000)
    near = build(directory, seed)
    # A random model's top token has a small probability, under the default assistant_confidence_threshold (0.4:
    # generation/configuration_utils.py), so the copy would stop after one token a round; a trained draft is
    # confident. Without the threshold it drafts num_assistant_tokens (20) every round, as a good draft does.
    near.generation_config.assistant_confidence_threshold = 0.0
    with torch.no_grad():
        head = near.get_output_embeddings().weight
        head.add_(torch.randn(head.shape, generator=torch.Generator().manual_seed(seed), dtype=head.dtype)
                  * head.std() * 0.5)
    yield "near", near


def run_target(directory: str, draft_dir: str, prompt_len: int, new_tokens: int, seeds: list[int]) -> dict:
    """Every seed with every assistant: the first refusal ends it; any differing run is wrong output."""
    out = {"runs": []}
    for seed in seeds:
        try:
            model = build(directory, seed)
            assistants = list(drafts(directory, draft_dir, seed))
        except Exception as e:  # noqa: BLE001 - the model cannot even be built: say so, the test fails on it
            return {"outcome": "error", "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"}
        for kind, draft in assistants:
            run = one_run(model, draft, seed, prompt_len, new_tokens)
            run.update(seed=seed, draft=kind)
            if run.get("outcome") in ("refused", "error"):
                return {"outcome": run["outcome"], "error": run["error"], "draft": kind}
            out["runs"].append(run)
    tol = tolerance()
    for r in out["runs"]:
        r["state_ok"] = r["state_difference"] <= tol
    out.update(tolerance=tol, state_difference=max((r["state_difference"] for r in out["runs"]), default=0.0),
               kernel_difference=max((r["kernel_difference"] for r in out["runs"]), default=0.0))
    out["outcome"] = "works" if all(r["state_ok"] for r in out["runs"]) else "wrong_output"
    return out


def one_run(model, draft, seed: int, prompt_len: int, new_tokens: int) -> dict:
    """Plain greedy against assisted greedy, once, on a random prompt."""
    import torch

    vocab = min(model.config.get_text_config().vocab_size, draft.config.get_text_config().vocab_size)
    ids = torch.randint(3, vocab, (1, prompt_len), generator=torch.Generator().manual_seed(seed))
    mask = torch.ones_like(ids)
    kw = {"attention_mask": mask, "do_sample": False, "max_new_tokens": new_tokens, "min_new_tokens": new_tokens,
          "output_logits": True, "return_dict_in_generate": True}
    with torch.no_grad():
        try:
            plain = model.generate(ids, **kw)
        except Exception as e:  # noqa: BLE001 - the model cannot generate at all here: the test fails on it
            return {"outcome": "error", "error": f"plain generate: {type(e).__name__}: {str(e)[:300]}"}
        try:
            assisted = model.generate(ids, assistant_model=draft, **kw)
        except Exception as e:  # noqa: BLE001 - any exception is the engine refusing the pair
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            return {"outcome": "refused", "error": f"{type(e).__name__}: {first[:300]}"}
        state = _largest(assisted, _fresh(model, assisted.sequences, prompt_len))
        kernels = _largest(plain, _fresh(model, plain.sequences, prompt_len))
    a, b = plain.sequences[0].tolist()[prompt_len:], assisted.sequences[0].tolist()[prompt_len:]
    diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    if diff is None and len(a) != len(b):
        diff = min(len(a), len(b))
    return {"equal": diff is None, "first_difference": diff, "plain": a, "assisted": b,
            "state_difference": state, "kernel_difference": kernels}


def _fresh(model, sequences, prompt_len: int):
    """The logits a fresh pass over ``sequences`` (no cache) gives for each generated position."""
    out = model(sequences, attention_mask=sequences.new_ones(sequences.shape), use_cache=False).logits
    return out[0, prompt_len - 1:-1]


def _largest(generated, fresh) -> float:
    """The largest difference between a generate call's logits and a fresh pass's, position by position."""
    return max((float((step[0].double() - fresh[i].double()).abs().max()) for i, step in enumerate(generated.logits)),
               default=0.0)


def main() -> None:
    warnings.filterwarnings("ignore")
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)
    req = json.loads(open(sys.argv[1]).read()) if len(sys.argv) > 1 else json.load(sys.stdin)
    results = {name: run_target(d, req["draft"], req.get("prompt_len", 12), req.get("new_tokens", 40),
                                req.get("seeds", [0]))
               for name, d in req["targets"].items()}
    json.dump({"transformers": transformers.__version__, "torch": torch.__version__, "results": results},
              sys.stdout)


if __name__ == "__main__":
    main()
