"""A small hand-built catalog (migrated with Alembic, filled with SQLAlchemy) for publish/browser tests.

Target ``acme/Big-7B-Instruct``: SGLang accepts ``acme/Small-0.5B-Instruct`` and ``fan/Small-0.5B-sft``
(same tokenizer, same vocab_size); ``acme/Small-1B-Instruct`` has a padded vocab_size (llama.cpp/MLX only);
``other/Mimic-0.3B`` has the same size but a different mapping.
"""

from __future__ import annotations

from datetime import datetime

from indexer import db as catalog_db
from indexer.models import ENGINES, CompatClass, CrawlRun, Repo, RepoClass, Tokenizer

TARGET = "acme/Big-7B-Instruct"
SGLANG_DRAFTS = ("acme/Small-0.5B-Instruct", "fan/Small-0.5B-sft")
NOT_SGLANG = ("acme/Small-1B-Instruct", "other/Mimic-0.3B")


def build_sample_catalog(path) -> str:
    url = catalog_db.upgrade(str(path))
    engine = catalog_db.make_engine(str(path))
    now = datetime(2026, 1, 1, 3, 0, 0)
    with catalog_db.session_factory(engine)() as s:
        run = CrawlRun(started_at=now, finished_at=now, status="ok", scope="families: acme", listed=6,
                       new=6, api_calls=8, resolver_calls=12, bytes_downloaded=123456, errors=[])
        tok_a = Tokenizer(vocab_sha256="a" * 64, base_vocab_sha256="b" * 64, vocab_len=1002, max_id=1001,
                          id_holes=0, hf_vocab_size=1000,
                          added_tokens=[{"id": 1000, "content": "<|im_start|>", "special": True}],
                          model_type="BPE", tokenizer_class="PreTrainedTokenizerFast", method="fast",
                          repo_count=4)
        tok_b = Tokenizer(vocab_sha256="c" * 64, base_vocab_sha256="d" * 64, vocab_len=1002, max_id=1001,
                          id_holes=0, hf_vocab_size=1000, added_tokens=[], model_type="BPE",
                          tokenizer_class="PreTrainedTokenizerFast", method="fast", repo_count=1)
        s.add_all([run, tok_a, tok_b])
        s.flush()
        rows = [  # repo_id, params, vocab_size, tokenizer, downloads
            (TARGET, 7 * 10**9, 1024, tok_a, 5000),
            ("acme/Small-0.5B-Instruct", 5 * 10**8, 1024, tok_a, 900),
            ("fan/Small-0.5B-sft", 5 * 10**8, 1024, tok_a, 12),
            ("acme/Small-1B-Instruct", 10**9, 1088, tok_a, 300),
            ("other/Mimic-0.3B", 3 * 10**8, 1024, tok_b, 40),
        ]
        repos = []
        for rid, params, vs, tok, dl in rows:
            r = Repo(repo_id=rid, author=rid.split("/")[0], sha="0" * 40, last_modified=now, downloads=dl,
                     likes=1, params=params, status="ok", model_type="llama",
                     architectures=["LlamaForCausalLM"],
                     vocab_size=vs, vocab_size_transformers=vs, tokenizer_id=tok.id, family="acme",
                     crawl_run_id=run.id, pipeline_tag="text-generation", tags=["transformers"])
            repos.append(r)
        repos.append(Repo(repo_id="acme/Big-7B-gguf", author="acme", status="no_tokenizer",
                          reason="no tokenizer files", crawl_run_id=run.id))
        s.add_all(repos)
        s.flush()
        classes: dict[tuple, CompatClass] = {}
        for r in repos[:5]:
            tok = r.tokenizer_id
            for eng in ENGINES:
                key = {
                    "sglang": f"{r.vocab_size}:{tok}",
                    "vllm": f"{r.vocab_size}",
                    "transformers": f"{r.vocab_size}",
                    "llama.cpp": f"{tok}",
                    "mlx": f"{tok}",
                    "lmstudio": f"{tok}",
                }[eng]
                c = classes.get((eng, key))
                if c is None:
                    c = classes[(eng, key)] = CompatClass(engine=eng, class_key=key, vocab_size=r.vocab_size,
                                                          tokenizer_id=tok, members=0, label=f"{eng} {key}")
                    s.add(c)
                    s.flush()
                c.members += 1
                s.add(RepoClass(repo_pk=r.id, engine=eng, class_id=c.id, params=r.params))
        s.commit()
    engine.dispose()
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
