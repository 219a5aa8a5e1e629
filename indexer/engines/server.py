"""What a running engine's HTTP server reports about a speculative run, as :mod:`indexer.measure` reads it.

No engine is named here: each ``engines/<engine>.py`` that serves over HTTP defines a :class:`Server` (its
endpoints, its request body, which of its response fields hold the draft counts and the decode time, each with its
source at the release it mirrors), and :mod:`indexer.engines` lists them in ``SERVERS``. The client that sends
the requests (urllib, timeouts, Server-Sent Events) is :mod:`indexer.measure.client`; an engine's functions only
read what it answered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Reading:
    """One greedy request's figures as the engine reported them (None: the engine does not report it).

    ``tokens``: generated tokens; ``seconds``: decode time after the first token (what decode tok/s divides by);
    ``drafted`` / ``accepted``: draft tokens proposed and kept; ``rounds``: verify passes; ``text``: the output."""

    tokens: int
    seconds: float | None
    text: str = ""
    drafted: int | None = None
    accepted: int | None = None
    rounds: int | None = None
    quant: str | None = None  # the target's quantization, where the server says it (LM Studio's model_info)


@dataclass(frozen=True)
class Exchange:
    """One request as the engine takes it: POST ``path`` with ``body``; ``stream``: the answer is Server-Sent Events
    (``data: {...}`` lines), read as they come so that the client times the tokens itself."""

    path: str
    body: dict
    stream: bool = False


@dataclass(frozen=True)
class Server:
    """How to measure one engine through its server.

    * ``release(get_json)``: the engine release the server reports (``get_json(path)`` returns a parsed JSON body
      or None when the path does not answer), or None;
    * ``request(prompt, max_tokens, target, draft)``: the :class:`Exchange` of one greedy completion of
      ``prompt``; ``target`` and ``draft`` are the names the server knows the models by, for an engine that takes
      them per request (``draft`` None: a request without speculation, where ``per_request_off``);
    * ``reading(answer, timing)``: the :class:`Reading` of the answer (a JSON object, or the list of stream events
      for a streamed exchange); ``timing`` is the client's ``(seconds to the first token, seconds to the last)``;
    * ``metrics``: a Prometheus text endpoint whose counters (``counters``: our name -> metric name) are read
      before and after the requests, their difference being the run's (None: the engine reports per response);
    * ``per_request_off``: a request without ``draft`` runs without speculation (False: the engine speculates by
      its launch flags, and a baseline needs a second server);
    * ``sources``: each field read -> its source, file:line at the release the engine module mirrors;
    * ``answer_release(answer)``: the release read from a completion's answer, for a server that reports it there
      and not at an endpoint of its own (None: not there);
    * ``not_reported``: what the engine does not report, in words (shown beside a measurement without it).
    """

    release: Callable[[Callable[[str], object]], str | None]
    request: Callable[..., Exchange]
    reading: Callable[[object, tuple[float | None, float | None]], Reading]
    sources: dict[str, str]
    metrics: str | None = None
    counters: dict[str, str] = field(default_factory=dict)
    per_request_off: bool = False
    answer_release: Callable[[object], str | None] | None = None
    not_reported: str | None = None


def chat_body(prompt: str, max_tokens: int, **extra) -> dict:
    """The OpenAI chat-completions body of one greedy (temperature 0) request of at most ``max_tokens`` tokens,
    with the engine's own fields in ``extra`` (``ignore_eos`` where it has it: exactly ``max_tokens``)."""
    return {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens, "temperature": 0,
            "stream": False, **extra}


def stream_text(events: list) -> str:
    """The text of OpenAI chat-completion stream events (``choices[0].delta.content`` of each)."""
    parts = []
    for e in events:
        for choice in (e.get("choices") or []) if isinstance(e, dict) else []:
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                parts.append(delta["content"])
    return "".join(parts)


def stream_usage(events: list) -> dict:
    """The ``usage`` object of the last stream event that has one (``stream_options.include_usage``)."""
    for e in reversed(events):
        if isinstance(e, dict) and isinstance(e.get("usage"), dict):
            return e["usage"]
    return {}


def decode_seconds(timing: tuple[float | None, float | None]) -> float | None:
    """Client-side decode time: from the first token's arrival to the last's."""
    first, last = timing
    if first is None or last is None or last <= first:
        return None
    return last - first


def prometheus(text: str, name: str) -> float | None:
    """The sum over label sets of metric ``name`` in Prometheus text exposition format (``name{labels} value``
    lines; https://prometheus.io/docs/instrumenting/exposition_formats/), or None when absent."""
    total, seen = 0.0, False
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        rest = line[len(name):]
        if rest[:1] not in ("{", " "):
            continue  # another metric whose name starts with this one
        if rest.startswith("{"):
            end = rest.find("}")
            if end < 0:
                continue
            rest = rest[end + 1:]
        try:
            total += float(rest.split()[0])
            seen = True
        except (ValueError, IndexError):
            continue
    return total if seen else None
