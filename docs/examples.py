"""Run every example of README.md and docs/*.md and write what the commands print back into them.

    python docs/examples.py           # regenerate README.md and docs/*.md in place
    python docs/examples.py --check   # exit 1 with a diff when a doc differs from what the commands print

An example is a fenced block opened with ```` ```console ````: its ``$ `` lines are commands, everything else is
their output and is replaced. The commands of one doc run in order, in one fresh temp dir of their own, in a
bash per command (``$?`` is the previous command's status), stdout and stderr merged, with this venv's
``indexer`` first on PATH and no Hub token. So every example is reproducible by a newcomer who runs a doc's
commands from its top, each doc starting with ``indexer demo``.

A command ending in ``&`` starts in the background (its own process group); the next command waits until
the port it names (``--port N``) answers, and every background process is stopped (SIGTERM) at the end.
The docs' ports (8900 for the Hub imitation, 8001 for datasette) are replaced by free ports while the
commands run and put back in what they print, so a check can run beside other sessions.

Written into the doc: the output with the temp dir shown as ``$PWD``. Compared by ``--check``: both
sides with run-dependent values masked (durations, timestamps, pids, the published file's hash and size).

Blocks between ``<!-- generated: NAME -->`` and ``<!-- /generated -->`` are rendered from the code
(``engines``: the rule table from ``indexer.engines.ENGINES``; ``arch``: every engine's architecture rows;
``demo-urls``: the pages ``indexer demo`` prints once datasette answers, from ``indexer.jobs.demo.urls``; ``crontab``:
the line of ``deploy/crontab``).
"""

from __future__ import annotations

import difflib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def docs() -> list[Path]:
    """Every doc whose examples or generated blocks this script writes: the README, then docs/*.md."""
    return [README, *sorted((ROOT / "docs").glob("*.md"))]
NOMINAL_PORTS = (8900, 8001)
COMMAND_TIMEOUT = 180
FENCE_RE = re.compile(r"^```console\n(.*?)^```\n", re.M | re.S)
GENERATED_RE = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- /generated -->)", re.S)

# Run-dependent values: masked on both sides before comparing (never written as masks).
VOLATILE = [
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),  # ports the commands pick themselves
    (re.compile(r"\b\d+(\.\d+)? ?(s|ms)\b"), "<dur>"),
    (re.compile(r'("[a-z_]*seconds"): [0-9.]+'), r"\1: <dur>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"\bpid \d+"), "pid <pid>"),
    (re.compile(r"\(\d+ bytes, (\d+ repos), sha256 [0-9a-f]+\)"), r"(<n> bytes, \1, sha256 <sha>)"),
    (re.compile(r'("(sha256|size|bytes)"): ("[0-9a-f]{64}"|\d+)'), r"\1: <v>"),
    (re.compile(r"\bat [0-9a-f]{12}\b"), "at <commit>"),  # dataset commits of the Hub imitation
    (re.compile(r"\bsnapshot \d+ bytes"), "snapshot <n> bytes"),
    (re.compile(r"\(\d+ bytes, sha256 [0-9a-f]+ verified"), "(<n> bytes, sha256 <sha> verified"),
    (re.compile(r"\(sha256 [0-9a-f]{12}\): nothing"), "(sha256 <sha>): nothing"),
]


def mask(text: str) -> str:
    for pattern, repl in VOLATILE:
        text = pattern.sub(repl, text)
    return text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing answers on port {port} after {timeout:.0f} s")


class Session:
    """One temp dir, a doc's commands in order, background processes stopped at the end."""

    def __init__(self, work: Path):
        self.work = work
        self.ports = {nominal: _free_port() for nominal in NOMINAL_PORTS}
        self.background: list[subprocess.Popen] = []
        self.status = 0
        bindir = str(Path(sys.executable).parent)
        env = {k: v for k, v in os.environ.items()
               if k not in ("INDEXER_DB", "INDEXER_FAMILIES", "INDEXER_TOKENS", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
                             "HF_HUB_OFFLINE", "HF_ENDPOINT")}
        self.env = {**env, "PATH": bindir + os.pathsep + env.get("PATH", ""), "PYTHONUNBUFFERED": "1",
                    "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "NO_COLOR": "1",
                    "HF_HOME": str(work / ".hf-home"), "TZ": "UTC"}

    def _to_real(self, command: str) -> str:
        for nominal, real in self.ports.items():
            command = re.sub(rf"(?<=[:= ]){nominal}\b", str(real), command)
        return command

    def _to_nominal(self, output: str) -> str:
        output = output.replace(str(self.work), "$PWD")
        for nominal, real in self.ports.items():
            output = re.sub(rf"(?<=127\.0\.0\.1:){real}\b|(?<=port ){real}\b", str(nominal), output)
        return output

    def run(self, command: str) -> str:
        real = self._to_real(command)
        if real.rstrip().endswith("&"):
            proc = subprocess.Popen(["bash", "-c", real.rstrip()[:-1]], cwd=self.work, env=self.env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
            self.background.append(proc)
            port = re.search(r"--port (\d+)", real)
            if port:
                _wait_for_port(int(port.group(1)))
            return ""
        res = subprocess.run(["bash", "-c", f"(exit {self.status}); {real}"], cwd=self.work, env=self.env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=COMMAND_TIMEOUT, text=True)
        self.status = res.returncode
        return self._to_nominal(res.stdout)

    def close(self) -> None:
        for proc in self.background:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.background:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _commands(block: str) -> list[str]:
    return [line[2:] for line in block.splitlines() if line.startswith("$ ")]


def _render_block(session: Session, block: str) -> str:
    out = []
    for command in _commands(block):
        out.append(f"$ {command}\n")
        printed = session.run(command)
        out.append(printed if printed.endswith("\n") or not printed else printed + "\n")
    return "".join(out)


def engine_table() -> str:
    """The engine rules table, from the registry (one source of truth for names, versions and sources)."""
    from indexer.catalog.compute import SIZE_WORDS
    from indexer.engines import ENGINES

    words = {**SIZE_WORDS, "tok": "`get_vocab()` mapping", "gguf_sig": "GGUF token list"}
    # A size-keyed engine works when the size is equal and the vocabularies agree (indexer/vocab/agreement.py).
    agree = {"tok": "vocabularies agreeing on >= 99% of the target's text tokens"}
    rows = ["| `--engine` | engine | version mirrored | works when | checks, with their source |",
            "| --- | --- | --- | --- | --- |"]
    for name, e in ENGINES.items():
        key = (" and ".join(agree.get(column, f"equal {words.get(column, column)}") for column in e.class_key)
               or "never: no separate draft models (MTP and DFlash drafters: `--method mtp`, `--method dflash`)")
        checks = "; ".join(f"{check}: `{src}`" for check, src in e.sources.items())
        rows.append(f"| `{name}` | {e.display} | {e.version} | {key} | {checks} |")
    return "\n".join(rows) + "\n"


def arch_table() -> str:
    """Every engine's architecture rows (issue 23), from each engine's ARCH_RULES: the fact read, the outcome
    (note: the outcome stands), and the source."""
    from indexer.engines import ENGINES
    from indexer.engines.archrules import table

    rows = ["| `--engine` | check | reads | outcome | source |", "| --- | --- | --- | --- | --- |"]
    for name, e in ENGINES.items():
        for r in table(e.arch_rules):
            rows.append(f"| `{name}` | {r['check']} | {r['side']} | {r['outcome']} | `{r['source']}` |")
    return "\n".join(rows) + "\n"


def demo_urls() -> str:
    """The pages ``indexer demo`` prints once datasette answers (``indexer.jobs.demo.urls``, the CLI's layout)."""
    from indexer.jobs.demo import urls

    lines = [f"  {name:18} {link}" for name, link in urls("127.0.0.1", 8001, "demo").items()]
    return "```\n" + "\n".join(lines) + "\n```\n"


def crontab() -> str:
    """The schedule line of ``deploy/crontab``, as installed."""
    lines = [line for line in (ROOT / "deploy" / "crontab").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    return "```\n" + "\n".join(lines) + "\n```\n"


GENERATORS = {"engines": engine_table, "arch": arch_table, "demo-urls": demo_urls, "crontab": crontab}


def render(text: str, work: Path | None = None) -> str:
    """A doc's text with every console block re-run and every generated block re-rendered."""
    text = GENERATED_RE.sub(lambda m: m.group(1) + GENERATORS[m.group(2)]() + m.group(4), text)
    with tempfile.TemporaryDirectory(prefix="indexer-docs-") as tmp:
        session = Session(Path(work or tmp).resolve())
        try:
            pieces, pos = [], 0
            for m in FENCE_RE.finditer(text):
                pieces += [text[pos:m.start(1)], _render_block(session, m.group(1))]
                pos = m.end(1)
            pieces.append(text[pos:])
        finally:
            session.close()
    return "".join(pieces)


def has_blocks(text: str) -> bool:
    """Whether a doc has anything to run or render."""
    return bool(FENCE_RE.search(text) or GENERATED_RE.search(text))


def diff(text: str, name: str = "README.md") -> str:
    """Unified diff, masked, between ``text`` and what its commands print now ('' when they agree)."""
    fresh = render(text)
    return "".join(difflib.unified_diff(mask(text).splitlines(True), mask(fresh).splitlines(True),
                                        name, f"{name} (regenerated)"))


def main(argv: list[str]) -> int:
    failed = 0
    for path in docs():
        text = path.read_text(encoding="utf-8")
        if not has_blocks(text):
            continue
        if "--check" in argv:
            d = diff(text, str(path.relative_to(ROOT)))
            sys.stdout.write(d)
            failed |= bool(d)
        else:
            path.write_text(render(text), encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
