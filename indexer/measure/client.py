"""The HTTP requests ``indexer measure`` makes to a running engine, with the standard library (urllib).

One :class:`Client` per server URL: ``get_json`` and ``get_text`` for the release and metrics endpoints (None when
the path does not answer: an engine without it), ``exchange`` for a completion (a JSON body, or Server-Sent Events
read as they arrive so the tokens are timed here). Any failure of a completion is one :class:`MeasureFailed` line
naming the URL; the body of an error answer is quoted, cut to a line.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from ..engines.server import Exchange
from ..errors import BadInput, MeasureFailed

MAX_BODY = 16 * 1024 * 1024  # an answer of a few hundred tokens is kilobytes; a metrics page tens of kilobytes


class Client:
    """Requests to one server: ``url`` its base (``http://127.0.0.1:8080``), ``timeout`` seconds per request."""

    def __init__(self, url: str, timeout: float = 600.0):
        if not url.startswith(("http://", "https://")):

            raise BadInput(f"--url must start with http:// or https://, not {url!r}")
        self.url, self.timeout = url.rstrip("/"), timeout

    def _open(self, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json", "Accept": "*/*"})
        return urllib.request.urlopen(req, timeout=self.timeout)  # noqa: S310 - the user's own server URL

    def get_text(self, path: str) -> str | None:
        """The body of GET ``path``, or None when the server does not answer it with 200."""
        try:
            with self._open(path) as r:
                return r.read(MAX_BODY).decode("utf-8", "replace")
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def get_json(self, path: str):
        """GET ``path`` parsed as JSON, or None (no such path, not JSON)."""
        text = self.get_text(path)
        try:
            return json.loads(text) if text is not None else None
        except ValueError:
            return None

    def exchange(self, ex: Exchange):
        """POST the exchange: (answer, (first token seconds, last token seconds)) where the answer is the JSON
        object, or the list of stream events; the times count from the request's start (None: not streamed)."""
        start = time.perf_counter()
        try:
            with self._open(ex.path, ex.body) as r:
                if not ex.stream:
                    answer = json.loads(r.read(MAX_BODY))
                    if not isinstance(answer, dict):
                        raise MeasureFailed(f"{self.url}{ex.path} answered {type(answer).__name__}, not an object")
                    return answer, (None, None)
                return self._events(r, start)
        except urllib.error.HTTPError as e:
            detail = e.read(2000).decode("utf-8", "replace").replace("\n", " ").strip()
            raise MeasureFailed(f"{self.url}{ex.path} answered HTTP {e.code}: {detail[:300]}") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", None) or e
            raise MeasureFailed(f"cannot reach {self.url}{ex.path}: {reason}") from None
        except ValueError as e:
            raise MeasureFailed(f"{self.url}{ex.path} answered something that is not JSON: {e}") from None

    @staticmethod
    def _events(r, start: float):
        """``data: {...}`` lines up to ``data: [DONE]`` (https://html.spec.whatwg.org/multipage/server-sent-events
        .html); the first and last event that carries text are timed."""
        events, first, last, read = [], None, None, 0
        for raw in r:
            read += len(raw)
            if read > MAX_BODY:
                raise MeasureFailed("the stream exceeded 16 MB")
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            event = json.loads(data)
            events.append(event)
            if _has_text(event):
                now = time.perf_counter() - start
                first = now if first is None else first
                last = now
        return events, (first, last)


def _has_text(event) -> bool:
    if not isinstance(event, dict):
        return False
    return any(isinstance((c.get("delta") or {}).get("content"), str) and (c.get("delta") or {}).get("content")
               for c in event.get("choices") or [] if isinstance(c, dict))
