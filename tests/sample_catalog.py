"""A small catalog for the site tests: real tokenizers, inserted repos, classes made by ``compute``.

Tokenizers are built with the `tokenizers` library (tests/tokfactory.py) and fingerprinted by
``fingerprint_dir``; their token lists go to the token store, repos are inserted with SQLAlchemy
Core, and ``indexer.catalog.compute.compute`` builds every class and pair verdict (nothing hand-written).

Target ``acme/Big-7B-Instruct``: every engine accepts ``acme/Small-0.5B-Instruct`` and
``fan/Small-0.5B-sft`` (same tokenizer, same vocab_size); ``acme/Small-1B-Instruct`` has a padded
vocab_size (llama.cpp/MLX only); ``other/Mimic-0.3B`` has the same size but a different mapping.
"""

from __future__ import annotations

import queue
import tempfile
import threading
from datetime import datetime
from pathlib import Path

import sqlalchemy as sa
from tokfactory import BASE_WORDS, make_model

from indexer.catalog import db as catalog_db
from indexer.catalog.compute import compute
from indexer.catalog.models import CrawlRun, Repo, Tokenizer
from indexer.catalog.tokenstore import TokenStore, default_root
from indexer.vocab.fingerprint import fingerprint_dir

TARGET = "acme/Big-7B-Instruct"
SGLANG_DRAFTS = ("acme/Small-0.5B-Instruct", "fan/Small-0.5B-sft")
NOT_SGLANG = ("acme/Small-1B-Instruct", "other/Mimic-0.3B")
CHAT = ["<|im_start|>", "<|im_end|>"]
MIMIC_WORDS = BASE_WORDS[:3] + BASE_WORDS[3:][::-1]  # same tokens, another token->id mapping
SIZE = len(BASE_WORDS) + len(CHAT)
# repo_id, tokenizer, config vocab_size, params, downloads, is_chat
REPOS = [
    (TARGET, "chat", SIZE, 7 * 10**9, 5000, True),
    ("acme/Small-0.5B-Instruct", "chat", SIZE, 5 * 10**8, 900, True),
    ("fan/Small-0.5B-sft", "chat", SIZE, 5 * 10**8, 12, True),
    ("acme/Small-1B-Instruct", "chat", SIZE + 64, 10**9, 300, True),
    ("other/Mimic-0.3B", "mimic", SIZE, 3 * 10**8, 40, False),
]


def _tokenizers(tmp: Path) -> dict:
    dirs = {"chat": make_model(tmp / "chat", added=CHAT),
            "mimic": make_model(tmp / "mimic", words=MIMIC_WORDS, added=CHAT)}
    return {name: fingerprint_dir(d) for name, d in dirs.items()}


def build_sample_catalog(path) -> str:
    """Migrate a catalog at ``path``, insert the repos, run compute; returns its URL."""
    url = catalog_db.upgrade(str(path))
    engine = catalog_db.make_engine(str(path))
    now = datetime(2026, 1, 1, 3, 0, 0)
    store = TokenStore(default_root(str(path)))
    columns = set(Tokenizer.__table__.columns.keys())
    with tempfile.TemporaryDirectory(prefix="sample-tok-") as tmp:
        fps = _tokenizers(Path(tmp))
    with engine.begin() as conn:
        run_id = conn.execute(sa.insert(CrawlRun).values(
            started_at=now, finished_at=now, status="ok", scope="families: acme", listed=6, new=6,
            api_calls=8, resolver_calls=12, bytes_downloaded=123456, errors=[])).inserted_primary_key[0]
        tok_ids = {}
        for name, fp in fps.items():
            store.put_fingerprint(fp)
            facts = {k: v for k, v in fp.to_dict().items() if k in columns}
            tok_ids[name] = conn.execute(sa.insert(Tokenizer).values(**facts, repo_count=0)).inserted_primary_key[0]
        rows = []
        for rid, tok, vs, params, downloads, chat in REPOS:
            rows.append(dict(repo_id=rid, author=rid.split("/")[0], sha="0" * 40, last_modified=now,
                             downloads=downloads, likes=1, params=params, status="ok", model_type="llama",
                             architectures=["LlamaForCausalLM"], vocab_size=vs, vocab_size_transformers=vs,
                             tokenizer_id=tok_ids[tok], family="acme", is_chat=chat, disabled=False,
                             crawl_run_id=run_id, pipeline_tag="text-generation", tags=["transformers"],
                             base_models=None, gated=None, reason=None))
        rows.append(dict(repo_id="acme/Big-7B-gguf", author="acme", status="no_tokenizer", disabled=False,
                         reason="no tokenizer files", crawl_run_id=run_id, sha="1" * 40, last_modified=now,
                         downloads=3, likes=0, params=None, model_type=None, architectures=None,
                         vocab_size=None, vocab_size_transformers=None, tokenizer_id=None, family="acme",
                         is_chat=None, pipeline_tag=None, tags=None, base_models=[TARGET], gated=None))
        conn.execute(sa.insert(Repo), rows)
        for name, tid in tok_ids.items():
            n = sum(1 for r in REPOS if r[1] == name)
            conn.execute(sa.update(Tokenizer).where(Tokenizer.id == tid).values(repo_count=n))
    engine.dispose()
    compute(str(path))
    return url


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 60.0) -> bytes:
    import time
    import urllib.request

    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.read()
        except OSError as e:
            last = e
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer: {last}")


class ServedCatalog:
    """``indexer serve --db DB --port P`` in a subprocess (started in its own process group)."""

    def __init__(self, db, port: int | None = None):
        self.db = str(db)
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = None

    def __enter__(self):
        import subprocess
        import sys

        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from indexer.cli import cli; cli()", "serve", "--db", self.db,
             "--port", str(self.port)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            wait_http(self.base + "/-/versions.json")
        except TimeoutError:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        import os
        import signal
        import subprocess

        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.proc and self.proc.stdout:
            self.proc.stdout.close()

    def json(self, path: str):
        import json

        return json.loads(wait_http(self.base + path, timeout=10))


class CliProcess:
    """``indexer ARGS`` as a real process (own session, so a leak can be cleaned up), output merged.

    Tests send signals to the indexer process alone, as a service manager or a shell does.
    """

    def __init__(self, args: list[str], tmpdir):
        import subprocess
        import sys
        from pathlib import Path

        self.tmpdir = Path(tmpdir)
        self.tmpdir.mkdir(parents=True, exist_ok=True)
        env = {**__import__("os").environ, "TMPDIR": str(self.tmpdir), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([sys.executable, "-c", "from indexer.cli import cli; cli()", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                     start_new_session=True)
        self.lines: list[str] = []
        self._queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, text: str, timeout: float = 120.0) -> str:
        """Read output until a line contains ``text``; returns that line."""
        import time

        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.lines.append(line)
            if text in line:
                return line
        raise AssertionError(f"{text!r} not printed; output so far:\n{''.join(self.lines)}")

    def session_processes(self) -> list[int]:
        """Live processes of this process's session (the datasette child included)."""
        import os

        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == self.proc.pid and fields[0] != "Z":  # session id, not a zombie
                pids.append(int(entry))
        return pids

    def close(self) -> None:
        import os
        import signal

        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)
        self.proc.stdout.close()


def port_closed(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) != 0
