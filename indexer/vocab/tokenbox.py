"""A repo's own tokenizer, run in a box: a child process with a time and a memory limit.

Counting the reference text (``agreement.count_text``) runs a repo's pre-tokenizer regexes, normalizers and
model over 200 KB of text. Anyone can upload a ``tokenizer.json`` whose ``Split`` regex backtracks
(``^(\\w+\\s?)*$``): the ``tokenizers`` library then hits Oniguruma's retry limit and panics, and a
``pyo3_runtime.PanicException`` is a ``BaseException`` that no ``except Exception`` catches. Other files can
make it run for minutes or allocate gigabytes. So the counting runs in a child process (``python -m
indexer.vocab.tokenbox``) that sets ``RLIMIT_AS`` on itself, answers one JSON line per directory, and is
killed when an answer takes longer than ``seconds``; whatever goes wrong is one :class:`TokenizerFailed`
with a reason, and the caller records the repo and goes on. One child serves a whole crawl or compute
(:class:`TokenizerBox`), started on the first count: its start (importing transformers, about 2 s) is paid
once, not per tokenizer.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from typing import IO

from ..errors import is_panic
from .agreement import count_with, load_tokenizer, reference_sha256

COUNT_SECONDS = 120.0  # one count: a real tokenizer loads and counts in 1-3 s on one core
MEMORY_BYTES = 4 << 30  # the child's address space (RLIMIT_AS): transformers and a real tokenizer need < 1.5 GiB
START_SECONDS = 120.0  # the child's start (the import of transformers) on a busy machine
FAILED = "tokenizer failed on the reference text"  # the words a repo's reason starts with


class TokenizerFailed(Exception):
    """The tokenizer panicked, raised, ran out of time or memory on the reference text: ``reason`` says which."""

    def __init__(self, reason: str, loading: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.loading = loading  # transformers could not load it at all (not a failure on the text)


def one_line(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` on one line, cut to ``limit`` characters."""
    text = " ".join(str(exc).split())[:limit]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class TokenizerBox:
    """One child process that counts the reference text for directory after directory (thread-safe: one
    count at a time). ``close`` ends it; a child that died or was killed is restarted on the next count."""

    def __init__(self, seconds: float = COUNT_SECONDS, memory_bytes: int = MEMORY_BYTES):
        self.seconds, self.memory_bytes = seconds, memory_bytes
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self.counted = self.failed = 0

    def __enter__(self) -> TokenizerBox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def count_text(self, directory) -> dict[int, int]:
        """``agreement.count_text(directory)`` in the child; TokenizerFailed with the reason when it fails."""
        with self._lock:
            try:
                answer = self._ask({"count": os.fspath(directory)})
            except TokenizerFailed:
                self.failed += 1
                raise
            if "error" in answer:
                self.failed += 1
                raise TokenizerFailed(answer["error"], loading=bool(answer.get("loading")))
            self.counted += 1
            return {int(i): int(n) for i, n in answer["counts"]}

    def store_counts(self, store, vocab_sha256: str, directory) -> str | None:
        """Count once per vocabulary into the token store. None when counted (or stored before), or when
        transformers cannot load the tokenizer (the pair's grade then rests on ids, and says so); else why the
        tokenizer failed on the reference text, for the repo's reason."""
        if store.get_counts(vocab_sha256, reference_sha256()) is not None:
            return None
        try:
            counts = self.count_text(directory)
        except TokenizerFailed as e:
            return None if e.loading else e.reason
        store.put_counts(vocab_sha256, reference_sha256(), counts)
        return None

    def close(self) -> None:
        """End the child (it exits on end of input; killed if it does not at once)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        stdin, stdout = _pipes(proc)
        try:
            stdin.close()
            proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        finally:
            stdout.close()

    # -- the pipe ---------------------------------------------------------------------------------
    def _start(self) -> subprocess.Popen:
        env = dict(os.environ, TRANSFORMERS_VERBOSITY="error", TOKENIZERS_PARALLELISM="false", MALLOC_ARENA_MAX="2",
                   RUST_BACKTRACE="0")
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)  # this indexer, run anyhow
        return subprocess.Popen(
            [sys.executable, "-m", "indexer.vocab.tokenbox", str(self.memory_bytes)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
            start_new_session=True)  # a Ctrl-C at the terminal goes to the parent, which ends the child

    def _ask(self, request: dict) -> dict:
        fresh = self._proc is None
        proc = self._proc = self._proc or self._start()
        stdin, _ = _pipes(proc)
        try:
            stdin.write(json.dumps(request).encode() + b"\n")
            stdin.flush()
        except OSError:  # the child is gone (it died on the previous directory's memory)
            self._kill()
            if fresh:
                raise TokenizerFailed("the tokenizer process could not start") from None
            return self._ask(request)
        seconds = self.seconds + (START_SECONDS if fresh else 0.0)
        line = self._read_line(proc, time.monotonic() + seconds)
        if line is None:
            self._kill()
            raise TokenizerFailed(f"took longer than {self.seconds:g} s")
        if not line:
            code = self._kill()
            raise TokenizerFailed(_death(code, self.memory_bytes))
        return json.loads(line)

    @staticmethod
    def _read_line(proc: subprocess.Popen, deadline: float) -> bytes | None:
        """The child's next line; b"" when it exited; None when the deadline passed first."""
        fd, buf = _pipes(proc)[1].fileno(), bytearray()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b""
            buf += chunk
            if buf.endswith(b"\n"):
                return bytes(buf)

    def _kill(self) -> int | None:
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.kill()
        code = proc.wait()
        for f in _pipes(proc):
            try:
                f.close()
            except OSError:
                pass
        return code


def _pipes(proc: subprocess.Popen) -> tuple[IO[bytes], IO[bytes]]:
    """The child's stdin and stdout (both are pipes: :meth:`TokenizerBox._start`)."""
    if proc.stdin is None or proc.stdout is None:
        raise TokenizerFailed("the tokenizer process has no pipes")
    return proc.stdin, proc.stdout


def _death(code: int | None, memory_bytes: int) -> str:
    """Why the child ended without answering, in words."""
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        if -code in (signal.SIGABRT, signal.SIGSEGV, signal.SIGKILL):  # Rust aborts when an allocation fails
            return f"the tokenizer process died ({name}), likely over its {memory_bytes >> 20} MiB memory limit"
        return f"the tokenizer process died ({name})"
    return f"the tokenizer process exited ({code})"


# ---------------------------------------------------------------- the child


def _limit_memory(memory_bytes: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _die_with_parent() -> None:
    """Linux: killed when the process that started it dies (prctl PR_SET_PDEATHSIG), even by SIGKILL, so a count
    never outlives the crawl that asked for it (its time limit is the parent's to enforce)."""
    try:

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _serve(memory_bytes: int) -> None:
    """Answer one JSON line per request line until end of input."""
    _die_with_parent()
    _limit_memory(memory_bytes)

    out = sys.stdout.buffer
    for raw in sys.stdin.buffer:
        request = json.loads(raw)
        answer: dict[str, object]
        loading = True
        try:
            tok = load_tokenizer(request["count"])
            loading = False
            answer = {"counts": sorted(count_with(tok).items())}
        except MemoryError:
            answer = {"error": f"over its {memory_bytes >> 20} MiB memory limit"}
        except BaseException as e:  # noqa: BLE001 - a panic is a BaseException: answered, the child goes on
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            answer = {"error": ("panicked: " if is_panic(e) else "") + one_line(e), "loading": loading}
        tok = None  # the next directory's load starts with this one's tokenizer freed
        out.write(json.dumps(answer).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when the child ends
    _serve(int(sys.argv[1]))
