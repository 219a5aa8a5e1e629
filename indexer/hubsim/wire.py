"""The HTTP side of the Hub imitation: one request in, one :class:`Response` out.

``Handler`` reads a request, counts it, applies the rate limits (``ratelimit.py``) and any injected
:class:`Fault`, asks ``HubServer.route`` for the answer and sends it: errors in the Hub's ``X-Error-Code``
convention, file bodies streamed (a range if asked), and resets, truncations and stalls as the faults say.
"""

from __future__ import annotations

import functools
import json
import re
import socket
import struct
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from .repos import FileEntry

FAULT_KINDS = ("status", "reset", "truncate", "slow", "stall", "malformed_json", "corrupt", "gzip_bomb", "endless")
ENDLESS_CHUNK = b" " * (1 << 16)


@dataclass
class Fault:
    """A failure injected into matching requests (``HubServer.add_fault``), used up after ``times`` hits."""

    method: str  # "*" matches any method
    path_regex: str
    kind: str = "status"
    status: int = 429
    headers: dict = field(default_factory=dict)
    times: int | None = 1  # None: never used up
    delay: float | None = 1.0  # for kind="slow" / "stall"; a stall with None never answers (until stop)
    hits: int = 0
    query_regex: str | None = None  # also match the raw query string (e.g. one listing's author)
    size: int = 1 << 30  # for kind="gzip_bomb": the answer's size once inflated

    def matches(self, method: str, raw_path: str, raw_query: str = "") -> bool:
        """Whether this fault hits the request (paths and queries are matched raw and unquoted)."""
        if self.method not in ("*", method):
            return False
        if self.query_regex is not None and not (
                re.search(self.query_regex, raw_query) or re.search(self.query_regex, unquote(raw_query))):
            return False
        return bool(re.search(self.path_regex, raw_path) or re.search(self.path_regex, unquote(raw_path)))


class HttpError(Exception):
    """An error answer with the Hub's ``X-Error-Code`` convention (the client maps it to exceptions)."""

    def __init__(self, status: int, code: str | None, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = headers or {}


@dataclass
class Response:
    """One answer: a body, or a file (or a byte range of it) streamed from disk."""

    status: int = 200
    headers: dict = field(default_factory=dict)
    body: bytes = b""
    file: FileEntry | None = None  # stream this file instead of ``body``
    file_range: tuple[int, int] | None = None  # inclusive byte range of ``file``


def json_response(obj, status: int = 200, headers: dict | None = None) -> Response:
    """A JSON answer, as every API endpoint and error gives."""
    body = json.dumps(obj).encode()
    return Response(status, {"Content-Type": "application/json", **(headers or {})}, body)


@functools.lru_cache(maxsize=4)
def gzip_bomb(size: int) -> bytes:
    """A gzip stream of ``[``, spaces and ``]``, ``size`` bytes inflated: about a thousandth of that sent."""
    z = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    out = [z.compress(b"[")]
    block = b" " * (1 << 20)
    left = max(0, size - 2)
    while left:
        out.append(z.compress(block[:min(left, len(block))]))
        left -= min(left, len(block))
    out.append(z.compress(b"]"))
    out.append(z.flush())
    return b"".join(out)


def token_of(headers) -> str | None:
    """The bearer token a request carries: private repos, gated files and the rate-limit key depend on it."""
    auth = (headers.get("Authorization") or "") if headers is not None else ""
    if not auth.lower().startswith("bearer "):
        return None
    return auth[7:].strip() or None


class Server(ThreadingHTTPServer):
    """One listening port (the hub or the CDN), tracking its connections so ``stop`` can close them."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # a crawler's thread pool opens many connections at once
    hub: Any  # the HubServer that started it (HubServer.start): its route, counters, limits and faults
    role: str

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.active: set[socket.socket] = set()
        self.active_lock = threading.Lock()

    def process_request_thread(self, request, client_address):
        """Serve one connection, remembered while open so that ``close_connections`` can end it."""
        with self.active_lock:
            self.active.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.active_lock:
                self.active.discard(request)

    def handle_error(self, request, client_address):
        """A client that went away mid-response (a Ctrl-C'd crawl, a closed pool) is not an error of the server:
        socketserver would print its traceback to stderr (Python 3.11 ``socketserver.py:371-382``), inside the
        output of a demo that runs the imitation in-process. Anything else is the imitation's own bug: printed."""
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
            super().handle_error(request, client_address)

    def close_connections(self) -> None:
        """Shut every open connection, so handler threads waiting on an idle keep-alive socket end."""
        with self.active_lock:
            conns = list(self.active)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Handler(BaseHTTPRequestHandler):
    """One connection's requests, keep-alive (HTTP/1.1) as huggingface_hub's session expects."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "hubsim/1"
    server: Server

    def log_message(self, format, *args):  # noqa: A002 - silence per-request stderr logging
        """Silence the per-request line http.server writes to stderr (Python 3.11 ``http/server.py:571``)."""
        pass

    def do_GET(self):
        """http.server calls ``do_<METHOD>`` (Python 3.11 ``http/server.py:413``); every method goes to ``_handle``."""
        self._handle("GET")

    def do_HEAD(self):
        """HEAD, as ``get_hf_file_metadata`` sends for a file (huggingface_hub 2.4 ``file_download.py:1671``)."""
        self._handle("HEAD")

    def do_POST(self):
        """POST, as ``get_paths_info`` sends to ``/paths-info/{revision}`` (huggingface_hub 2.4 ``hf_api.py:4331``)."""
        self._handle("POST")

    def do_PUT(self):
        """PUT, as the LFS basic transfer sends an object to its href (huggingface_hub 2.4 ``lfs.py:351-368``)."""
        self._handle("PUT")

    def _handle(self, method: str) -> None:
        hub = self.server.hub
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        split = urlsplit(self.path)
        raw_path, query = split.path, parse_qs(split.query, keep_blank_values=True)
        for kind in hub.classify(method, raw_path, self.server.role):
            hub._count(kind)
        with hub._lock:
            hub.user_agents[self.headers.get("User-Agent") or ""] += 1
        verdict = None
        if hub.limits is not None and self.server.role == "hub":
            token = token_of(self.headers)
            verdict = hub.limits.check(raw_path, token or self.client_address[0], token is not None)
        if verdict is not None and not verdict.allowed:
            resp = self._error_response(HttpError(429, None, f"rate limit of the {verdict.bucket} bucket reached"))
            resp.headers.update(verdict.headers())
            hub._log(method, self.path, resp.status)
            self._send(method, resp, None)
            return
        fault = hub._take_fault(method, raw_path, split.query)
        if fault and fault.kind == "stall":  # connection open, not a byte sent
            hub._log(method, self.path, 0)
            hub._stopping.wait(fault.delay)
            self.close_connection = True
            return
        if fault and fault.kind == "slow":
            time.sleep(fault.delay)
        if fault and fault.kind == "status":
            resp = self._error_response(HttpError(fault.status, None, f"injected {fault.status}"))
            resp.headers.update(fault.headers)
        else:
            try:
                resp = hub.route(method, raw_path, query, body, self.headers, self.server.role)
            except HttpError as e:
                resp = self._error_response(e)
            except Exception as e:  # a bug in the fake must not hang the client: answer 500
                resp = self._error_response(HttpError(500, None, f"hubsim error: {e!r}"))
            if fault and fault.kind == "malformed_json" and raw_path.startswith("/api/"):
                resp.body, resp.file = b'{"oops": this is not json', None
                resp.headers["Content-Type"] = "application/json"
            if fault and fault.kind == "gzip_bomb":  # valid JSON ("[" spaces "]") that inflates to ``size`` bytes
                resp = Response(200, {"Content-Type": "application/json", "Content-Encoding": "gzip"},
                                gzip_bomb(fault.size))
        if verdict is not None:  # on every answer; an injected fault's own headers win
            for k, v in verdict.headers().items():
                resp.headers.setdefault(k, v)
        hub._log(method, self.path, resp.status)
        self._send(method, resp, fault.kind if fault else None)

    @staticmethod
    def _error_response(e: HttpError) -> Response:
        headers = {"X-Error-Message": e.message, **e.headers}
        if e.code:
            headers["X-Error-Code"] = e.code
        return json_response({"error": e.message}, status=e.status, headers=headers)

    def _send(self, method: str, resp: Response, fault_kind: str | None) -> None:
        if fault_kind == "endless":
            self._send_endless(resp)
            return
        if resp.file is not None:
            start, end = resp.file_range or (0, resp.file.size - 1)
            length = max(0, end - start + 1)
        else:
            length = len(resp.body)
        declared = length + 1024 if fault_kind == "truncate" else length
        self.send_response(resp.status)
        for k, v in resp.headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(declared))
        self.end_headers()
        if method == "HEAD":
            if fault_kind in ("reset", "truncate"):
                self._abort(rst=fault_kind == "reset")
            return
        limit = length // 2 if fault_kind == "reset" else length
        sent = self._write_body(resp, limit, corrupt=fault_kind == "corrupt")
        if resp.file is not None:
            self.server.hub._count("bytes_sent", sent)
        if fault_kind in ("reset", "truncate"):
            self._abort(rst=fault_kind == "reset")

    def _send_endless(self, resp: Response) -> None:
        """A 200 whose body never ends (no length, spaces until the client hangs up or the server stops)."""
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            self.wfile.write(b"[")
            while not self.server.hub._stopping.is_set():
                self.wfile.write(ENDLESS_CHUNK)
        except OSError:
            pass  # the client stopped reading

    def _write_body(self, resp: Response, limit: int, corrupt: bool = False) -> int:
        if resp.file is None:
            self.wfile.write(resp.body[:limit])
            return limit
        start = resp.file_range[0] if resp.file_range else 0
        sent = 0
        with open(resp.file.abs_path, "rb") as f:
            f.seek(start)
            while sent < limit:
                chunk = f.read(min(1 << 16, limit - sent))
                if not chunk:
                    break
                if corrupt and sent == 0:  # same length, other bytes: only a hash of the content can tell
                    chunk = bytes(b ^ 0xFF for b in chunk[:64]) + chunk[64:]
                self.wfile.write(chunk)
                sent += len(chunk)
        return sent

    def _abort(self, rst: bool) -> None:
        """Drop the connection mid-response: RST for ``reset``, a plain close for ``truncate``."""
        self.close_connection = True
        try:
            self.wfile.flush()
            if rst:  # linger 0 turns close() into a TCP RST
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
            else:
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
