"""A running engine's HTTP server as ``indexer measure`` meets it, on 127.0.0.1, from a recorded fixture.

Each ``tests/data/engine_wire/<engine>.json`` holds what the engine's server answers at the release the project
mirrors, each part with its source (file:line): the routes it serves (anything else is 404, as the engine's router
answers), its release endpoint, a completion with and without a draft, and for vLLM the ``/metrics`` counters each
request adds. Streamed engines (SGLang, mlx-lm) send their tokens one event at a time, paced as the fixture says, so
the client's own timing is exercised. ``speculative=False`` serves the same target without a draft (a baseline
server); an engine that takes ``draft_model`` per request (LM Studio) decides by the request instead.
"""

from __future__ import annotations

import copy
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

WIRE = Path(__file__).parent / "data" / "engine_wire"


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        """A client that left (a timeout a test provoked) is not an error: its traceback would land in whichever
        test captures stderr when the handler's thread, which outlives the server, finally writes."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class EngineSim:
    """``with EngineSim("vllm") as sim: sim.url``; ``sim.requests`` holds the bodies it was sent."""

    def __init__(self, engine: str, speculative: bool = True, pause: float = 0.0):
        self.engine, self.speculative, self.pause = engine, speculative, pause  # pause: seconds before answering
        self.fixture = json.loads((WIRE / f"{engine.replace('.', '')}.json").read_text())
        self.requests: list[dict] = []
        self.counters: dict[str, float] = {}
        self.lock = threading.Lock()

    def __enter__(self) -> EngineSim:
        sim = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args):
                pass

            def do_GET(self):
                sim.get(self)

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with sim.lock:
                    sim.requests.append(body)
                time.sleep(sim.pause)
                sim.post(self, body)

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # ---- answers
    def _json(self, h, obj, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _not_found(self, h) -> None:
        self._json(h, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}}, 404)

    def get(self, h) -> None:
        f, path = self.fixture, h.path.split("?")[0]
        if path not in f["routes"]["GET"]:
            return self._not_found(h)
        if path == "/metrics":
            return self._metrics(h)
        answers = {"/props": f.get("props"), "/version": f.get("version"), "/server_info": f.get("server_info"),
                   "/get_server_info": f.get("server_info"), "/health": {"status": "ok"},
                   "/v1/models": {"object": "list", "data": [{"id": "target", "object": "model"}]},
                   "/api/v0/models": {"object": "list", "data": []}}
        if answers.get(path) is None:
            return self._not_found(h)
        self._json(h, answers[path])

    def _metrics(self, h) -> None:
        labels = self.fixture.get("labels", "")
        lines = []
        with self.lock:
            for name, value in sorted(self.counters.items()):
                lines += [f"# TYPE {name} counter", f"{name}{labels} {value}"]
        data = ("\n".join(lines) + "\n").encode()
        h.send_response(200)
        h.send_header("Content-Type", "text/plain; version=0.0.4")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def post(self, h, body: dict) -> None:
        f, path = self.fixture, h.path.split("?")[0]
        if path not in f["routes"]["POST"]:
            return self._not_found(h)
        if not isinstance(body.get("messages"), list) or body.get("temperature") != 0:
            return self._json(h, {"error": "the measurement must be a greedy chat request"}, 400)
        speculative = self.speculative
        if self.engine == "lmstudio":
            speculative = bool(body.get("draft_model"))
        kind = "speculative" if speculative else "baseline"
        if self.engine in ("llama.cpp", "lmstudio"):
            return self._json(h, copy.deepcopy(f[kind]))
        if self.engine == "vllm":
            with self.lock:
                for name, value in f["per_request"][kind].items():
                    self.counters[name] = self.counters.get(name, 0.0) + value
            return self._json(h, copy.deepcopy(f["completion"]))
        return self._stream(h, body, kind)

    def _stream(self, h, body: dict, kind: str) -> None:
        """SGLang and mlx-lm: one event per token, the usage (and SGLang's sglext) in the last."""
        f = self.fixture
        n = min(int(body.get("max_tokens") or f["tokens"]), f["tokens"])
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.end_headers()
        extra = {"system_fingerprint": f["system_fingerprint"]} if "system_fingerprint" in f else {}
        for _ in range(n):
            event = {"id": "x", "object": "chat.completion.chunk", "created": 1765000000, "model": "target", **extra,
                     "choices": [{"index": 0, "delta": {"content": f["chunk_text"]}, "finish_reason": None}]}
            h.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            h.wfile.flush()
            time.sleep(f["seconds_per_token"][kind])
        last = {"id": "x", "object": "chat.completion.chunk", "created": 1765000000, "model": "target", **extra,
                "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": n, "total_tokens": 20 + n}}
        if self.engine == "sglang" and kind == "speculative" and body.get("return_spec_tokens_details"):
            last["sglext"] = {"spec_tokens_details": f["spec_tokens_details"]}
        h.wfile.write(f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n".encode())
        h.wfile.flush()
