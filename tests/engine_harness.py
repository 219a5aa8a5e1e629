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
* some run's tokens differ from plain greedy decoding: ``wrong_output`` (with the first differing position);
* every run's tokens are equal: ``works``.

Prints one JSON object: {"transformers": VERSION, "torch": VERSION, "results": {name: {...}}}.
"""

from __future__ import annotations

import json
import sys
import warnings


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
    out["outcome"] = "works" if all(r["equal"] for r in out["runs"]) else "wrong_output"
    return out


def one_run(model, draft, seed: int, prompt_len: int, new_tokens: int) -> dict:
    """Plain greedy against assisted greedy, once, on a random prompt."""
    import torch

    vocab = min(model.config.get_text_config().vocab_size, draft.config.get_text_config().vocab_size)
    ids = torch.randint(3, vocab, (1, prompt_len), generator=torch.Generator().manual_seed(seed))
    mask = torch.ones_like(ids)
    kw = {"attention_mask": mask, "do_sample": False, "max_new_tokens": new_tokens, "min_new_tokens": new_tokens}
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
    a, b = plain[0].tolist()[prompt_len:], assisted[0].tolist()[prompt_len:]
    diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    if diff is None and len(a) != len(b):
        diff = min(len(a), len(b))
    return {"equal": diff is None, "first_difference": diff, "plain": a, "assisted": b}


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
