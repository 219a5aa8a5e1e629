"""One measurement: the fixed prompts of a task sent to a running engine, greedy, a fixed number of tokens, with
and without the draft; acceptance and decode speed read from the engine's own counters (its ``SERVER``).

The result (``measure``) is what ``indexer measure --json`` prints: ``measured`` (speed-up, acceptance, tok/s with
and without, draft tokens, engine release, runs), ``estimate`` (``check``'s ``speedup`` object for the same
engine, device, task, quantization and draft length) and ``sources`` (where each figure read comes from).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..answer.query import check as check_pair
from ..answer.speedup import Options, add_to_check, words
from ..engines import SERVERS
from ..engines.server import Reading, Server, prometheus
from ..errors import BadInput, IndexerError
from ..speed import hardware as hw
from ..speed import quant as quants
from .client import Client
from .prompts import prompts

DEFAULT_TOKENS = 128  # tokens per answer: long enough for many rounds, short enough for a CPU run


@dataclass
class Totals:
    """The sum of one server's readings over the prompts and runs, and what it reported of itself."""

    tokens: int = 0
    seconds: float = 0.0
    timed_tokens: int = 0  # tokens of the readings that had a decode time
    drafted: int | None = None
    accepted: int | None = None
    rounds: int | None = None
    texts: list[str] = field(default_factory=list)
    release: str | None = None
    quant: str | None = None

    def add(self, r: Reading) -> None:
        """Count one request's reading in."""
        self.tokens += r.tokens
        if r.seconds and r.tokens > 1:
            self.seconds += r.seconds
            self.timed_tokens += r.tokens - 1  # the first token comes with the prompt (decode is what follows)
        for name in ("drafted", "accepted", "rounds"):
            value = getattr(r, name)
            if value is not None:
                setattr(self, name, (getattr(self, name) or 0) + int(value))
        self.texts.append(r.text)
        self.quant = self.quant or r.quant

    @property
    def tok_s(self) -> float | None:
        """Decode tokens per second over the timed readings (None: no reading had a decode time)."""
        return self.timed_tokens / self.seconds if self.seconds > 0 else None


def run_server(server: Server, client: Client, texts: list[str], max_tokens: int, runs: int,
               target: str | None, draft: str | None) -> Totals:
    """Send every prompt ``runs`` times; ``draft`` None asks for no speculation (an engine that takes it per
    request). Counters the engine keeps server-wide (``server.metrics``) are read before and after."""
    totals = Totals(release=server.release(client.get_json))
    before = client.get_text(server.metrics) if server.metrics else None
    for _ in range(runs):
        for text in texts:
            answer, timing = client.exchange(server.request(text, max_tokens, target, draft))
            totals.add(server.reading(answer, timing))
            if totals.release is None and server.answer_release is not None:
                totals.release = server.answer_release(answer)
    if before is not None and server.metrics:
        after = client.get_text(server.metrics) or ""
        delta = {k: _delta(before, after, name) for k, name in server.counters.items()}
        for k in ("drafted", "accepted", "rounds"):
            count = delta.get(k)
            if count is not None:
                setattr(totals, k, int(count))
        seconds, tokens = delta.get("decode_seconds"), delta.get("tokens")
        if seconds and tokens is not None:
            totals.seconds = seconds
            totals.timed_tokens = int(tokens - (delta.get("requests") or 0))
    return totals


def _delta(before: str, after: str, name: str) -> float | None:
    a, b = prometheus(before, name), prometheus(after, name)
    return None if b is None else b - (a or 0.0)


def measure(target: str, draft: str, engine: str, url: str, *, baseline_url: str | None = None,
            hardware: str | None = None, task: str = "chat", max_tokens: int = DEFAULT_TOKENS, runs: int = 1,
            draft_tokens: int | None = None, target_quant: str | None = None, draft_quant: str | None = None,
            db: str | None = None, timeout: float = 600.0) -> dict:
    """Measure the pair on the engine's server at ``url`` (and ``baseline_url`` without speculation) and put the
    estimate beside it."""
    if engine not in SERVERS:
        raise BadInput(f"{engine} has no server to measure through; --engine is one of "
                       f"{', '.join(SERVERS)}, or transformers (run here)")
    server, texts = SERVERS[engine], prompts(task)
    spec = run_server(server, Client(url, timeout), texts, max_tokens, runs, target, draft)
    base, note = None, None
    if baseline_url:
        base = run_server(server, Client(baseline_url, timeout), texts, max_tokens, runs, target, None)
    elif server.per_request_off:
        base = run_server(server, Client(url, timeout), texts, max_tokens, runs, target, None)
    else:
        note = (f"no baseline: {engine} cannot turn speculation off per request, so the speed-up needs "
                "--baseline-url (the same target served without a draft)")
    return result(target, draft, engine, spec, base, hardware=hardware, task=task, max_tokens=max_tokens,
                  runs=runs, prompts=len(texts), draft_tokens=draft_tokens, target_quant=target_quant,
                  draft_quant=draft_quant, db=db, sources=server.sources, not_reported=server.not_reported,
                  note=note)


def result(target: str, draft: str, engine: str, spec: Totals, base: Totals | None, *, hardware: str | None,
           task: str, max_tokens: int, runs: int, prompts: int, draft_tokens: int | None,
           target_quant: str | None, draft_quant: str | None, db: str | None, sources: dict,
           not_reported: str | None = None, note: str | None = None) -> dict:
    """The JSON of one measurement and its estimate."""
    device = hw.lookup(hardware).name if hardware else None
    acceptance = round(spec.accepted / spec.drafted, 4) if spec.drafted and spec.accepted is not None else None
    if draft_tokens is None and spec.rounds and spec.drafted:
        draft_tokens = max(1, round(spec.drafted / spec.rounds))  # the engine drafts a fixed count a round
    tok_s, tok_s_base = spec.tok_s, base.tok_s if base else None
    speedup = round(tok_s / tok_s_base, 3) if tok_s and tok_s_base else None
    quant = target_quant or spec.quant
    measured = {
        "speedup": speedup, "acceptance": acceptance,
        "accept_length": round(spec.tokens / spec.rounds, 3) if spec.rounds else None,
        "tok_s": round(tok_s, 2) if tok_s else None, "tok_s_baseline": round(tok_s_base, 2) if tok_s_base else None,
        "draft_tokens": draft_tokens, "drafted": spec.drafted, "accepted": spec.accepted, "rounds": spec.rounds,
        "tokens": spec.tokens, "engine_version": spec.release, "runs": runs, "prompts": prompts,
        "max_tokens": max_tokens, "hardware": device, "task": task, "target_quant": quant,
        "draft_quant": draft_quant,
        "same_text": (spec.texts == base.texts) if base else None,
        "calibration": not (device is None or spec.release is None),
        "why_not_calibration": None if device and spec.release else
        " and ".join(w for w, missing in (("no --hardware given", device is None),
                                          ("the engine did not report its release", spec.release is None))
                     if missing),
    }
    if not_reported and acceptance is None:
        measured["not_reported"] = not_reported
    if spec.drafted == 0:  # the engine counts drafts and counted none: the server at --url runs no draft
        note = "; ".join(filter(None, [note, "the server drafted nothing: is --url the server launched with the "
                                             "draft?"]))
    if note:
        measured["note"] = note
    return {"target": target, "draft": draft, "engine": engine, "measured": measured,
            "estimate": estimate(target, draft, engine, hardware=device, task=task, draft_tokens=draft_tokens,
                                 target_quant=quant, draft_quant=draft_quant, db=db),
            "sources": sources}


def estimate(target: str, draft: str, engine: str, *, hardware: str | None, task: str, draft_tokens: int | None,
             target_quant: str | None, draft_quant: str | None, db: str | None) -> dict:
    """``check``'s ``speedup`` object for the same setup (its verdict on the engine decides whether there is
    one), or ``{"estimate": None, "why": ...}`` when the pair cannot be checked from the catalog."""
    def known(q: str | None) -> str | None:
        try:
            return q if q and quants.lookup(q) else None
        except IndexerError:
            return None  # a quantization the server names that we do not know: the engine's default then

    try:
        # the estimate as it was before any measurement: the comparison is of the model, not of the data fed back
        opts = Options(hardware, None, task, known(target_quant), known(draft_quant), draft_tokens, measured=False)
        checked = check_pair(target, draft, db=db)
        add_to_check(checked, target, draft, db, opts)
    except IndexerError as e:
        return {"estimate": None, "why": f"no estimate: {e.message}"}
    verdict = (checked.get("verdicts") or {}).get(engine) or {}
    return verdict.get("speedup") or {"estimate": None, "why": f"no estimate: the pair's outcome on {engine} is "
                                                               f"{verdict.get('outcome', 'unknown')}"}


def render(r: dict) -> str:
    """The text of ``indexer measure``: the measured figures, then the estimate for the same setup."""
    m, e = r["measured"], r["estimate"] or {}
    lines = [f"target: {r['target']}", f"draft:  {r['draft']}",
             f"engine: {r['engine']} {m.get('engine_version') or '(release not reported)'}"
             f"{', ' + m['hardware'] if m.get('hardware') else ''}; task {m['task']}, {m['prompts']} prompts x "
             f"{m['runs']} run{'' if m['runs'] == 1 else 's'}, {m['max_tokens']} tokens each"]
    if m.get("speedup") is not None:
        lines.append(f"measured: {m['speedup']:.2f}× ({m['tok_s']:.1f} tok/s with the draft, "
                     f"{m['tok_s_baseline']:.1f} without)")
    elif m.get("tok_s") is not None:
        lines.append(f"measured: {m['tok_s']:.1f} tok/s with the draft; {m.get('note') or 'no baseline'}")
    if m.get("acceptance") is not None:
        per_round = f", {m['accept_length']:.2f} tokens a round" if m.get("accept_length") else ""
        gamma = f" at {m['draft_tokens']} draft tokens" if m.get("draft_tokens") else ""
        lines.append(f"acceptance: {m['acceptance']:.2f} ({m['accepted']}/{m['drafted']} drafted tokens kept"
                     f"{gamma}{per_round})")
    elif m.get("not_reported"):
        lines.append(f"acceptance: not reported: {m['not_reported']}")
    if m.get("note") and m.get("speedup") is not None:
        lines.append(f"note: {m['note']}")
    if m.get("same_text") is False:
        lines.append("note: the answers with and without the draft differ (greedy decoding should make them equal; "
                     "numerics or a sampling setting of the server)")
    if e.get("estimate") is not None:

        lines.append(f"estimated: {words(e)}, α {e['acceptance']:.2f}")
    else:
        lines.append(f"estimated: {e.get('why') or 'none'}")
    if not m.get("calibration"):
        lines.append(f"kept, not used for calibration: {m.get('why_not_calibration')}")
    return "\n".join(lines)
