"""``indexer measure --engine transformers``: the pair run here by transformers' assisted generation (CPU or GPU).

Both sides are local directories (this never downloads weights), loaded with ``trust_remote_code=False``. Each
prompt is answered greedily for exactly ``max_tokens`` tokens, once by the target alone and once with the draft as
its assistant at a fixed draft length (``num_assistant_tokens`` with the "constant" schedule and no confidence
threshold: generation/candidate_generator.py:236-247 of transformers 5.24/5.25 would otherwise change the length
every round). The rounds are read where transformers itself reads them: each verify pass ends in the candidate
generator's ``update_candidate_strategy(input_ids, scores, num_matches)`` (generation/utils.py:4185), whose
``scores`` hold the candidates plus one, so the drafted and accepted counts are transformers' own.

Decode time is the time of the whole answer less the time of its first token (the prompt's prefill).
"""

from __future__ import annotations

import time
from pathlib import Path

from .. import deferred
from ..engines.server import Reading
from ..errors import BadInput, MeasureFailed
from .prompts import prompts
from .run import Totals, result

DEFAULT_DRAFT_TOKENS = 5  # transformers' own default num_assistant_tokens (generation/configuration_utils.py)

SOURCES = {
    "drafted, accepted, rounds": "transformers generation/utils.py:4185 (update_candidate_strategy(input_ids, "
                                 "scores, num_matches) after each verify pass: scores has candidates + 1 rows)",
    "fixed draft length": "generation/candidate_generator.py:236-247 (the heuristic schedules change it; constant "
                          "does not)",
    "decode time": "measured here: the answer's time less the first token's",
}


def _load(path: str, role: str):
    if not Path(path).is_dir():
        raise BadInput(f"--engine transformers runs local directories only (it never downloads weights); the "
                       f"{role} {path!r} is not a directory")
    try:
        deferred.torch  # noqa: B018 - its ImportError, in words
        auto_model = deferred.transformers.AutoModelForCausalLM
    except ImportError:
        raise BadInput("--engine transformers needs torch and transformers importable here "
                       "(pip install torch transformers)") from None
    try:
        return auto_model.from_pretrained(path, trust_remote_code=False, local_files_only=True).eval()
    except Exception as e:  # noqa: BLE001 - any loader failure, in one line
        raise MeasureFailed(f"transformers cannot load the {role} {path}: {str(e).splitlines()[0][:300]}") from None


def _inputs(tokenizer, text: str):
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                             return_tensors="pt", return_dict=True)
    return tokenizer(text, return_tensors="pt")


class _Counted:
    """The candidate generator's rounds, as transformers reports them to it."""

    def __init__(self):
        self.drafted = self.accepted = self.rounds = 0

    def wrap(self, model):
        """``model._get_candidate_generator`` on this instance only, returning a generator that counts."""
        original = model._get_candidate_generator

        def counting(*args, **kwargs):
            generator = original(*args, **kwargs)
            update = generator.update_candidate_strategy

            def counted(input_ids, scores, num_matches):
                self.drafted += int(scores.shape[1]) - 1
                self.accepted += int(num_matches)
                self.rounds += 1
                return update(input_ids, scores, num_matches)

            generator.update_candidate_strategy = counted
            return generator

        model._get_candidate_generator = counting
        return original


def _generate(model, tokenizer, inputs, max_tokens: int, assistant=None) -> tuple[list[int], float]:
    kwargs = {"do_sample": False, "max_new_tokens": max_tokens, "min_new_tokens": max_tokens,
              "pad_token_id": tokenizer.pad_token_id if tokenizer.pad_token_id is not None else
              tokenizer.eos_token_id}
    if assistant is not None:
        kwargs["assistant_model"] = assistant
    start = time.perf_counter()
    with deferred.torch.no_grad():
        out = model.generate(**inputs, **kwargs)
    return out[0, inputs["input_ids"].shape[1]:].tolist(), time.perf_counter() - start


def measure_local(target: str, draft: str, *, hardware: str | None = None, task: str = "chat",
                  max_tokens: int = 64, runs: int = 1, draft_tokens: int | None = None,
                  db: str | None = None) -> dict:
    """The measurement of the pair on this machine, as :func:`indexer.measure.run.measure` returns it."""
    t_model, d_model = _load(target, "target"), _load(draft, "draft")  # torch first: no transformers banner
    transformers = deferred.transformers
    tokenizer = transformers.AutoTokenizer.from_pretrained(target, trust_remote_code=False, local_files_only=True)
    gamma = draft_tokens or DEFAULT_DRAFT_TOKENS
    d_model.generation_config.num_assistant_tokens = gamma
    d_model.generation_config.num_assistant_tokens_schedule = "constant"
    d_model.generation_config.assistant_confidence_threshold = 0.0
    counted = _Counted()
    original = counted.wrap(t_model)
    spec, base = Totals(release=transformers.__version__), Totals(release=transformers.__version__)
    try:
        texts = prompts(task)
        for _ in range(runs):
            for text in texts:
                inputs = _inputs(tokenizer, text)
                _, first = _generate(t_model, tokenizer, inputs, 1)
                ids, seconds = _generate(t_model, tokenizer, inputs, max_tokens)
                base.add(Reading(len(ids), max(seconds - first, 1e-9), str(tokenizer.decode(ids))))
                _, first = _generate(t_model, tokenizer, inputs, 1, d_model)
                before = (counted.drafted, counted.accepted, counted.rounds)
                ids, seconds = _generate(t_model, tokenizer, inputs, max_tokens, d_model)
                spec.add(Reading(len(ids), max(seconds - first, 1e-9), str(tokenizer.decode(ids)),
                                 drafted=counted.drafted - before[0], accepted=counted.accepted - before[1],
                                 rounds=counted.rounds - before[2]))
    finally:
        del t_model._get_candidate_generator  # the class's method again
        del original
    return result(target, draft, "transformers", spec, base, hardware=hardware, task=task, max_tokens=max_tokens,
                  runs=runs, prompts=len(texts), draft_tokens=gamma, target_quant=None, draft_quant=None, db=db,
                  sources=SOURCES)
