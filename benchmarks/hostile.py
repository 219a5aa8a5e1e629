"""A hostile Hub, tried again: every attack of the hostile-Hub review, through the real command line against the
Hub imitation (indexer/hubsim) on 127.0.0.1, never the internet.

Each case runs ``indexer ...`` in a child process and prints one row: the case, the command, its exit status,
wall seconds, the child's peak RSS (``os.wait4``'s ``ru_maxrss``: the largest process of the child's tree, its
tokenizer box included), whether the catalog is intact (``PRAGMA integrity_check`` is ok and ``query --offline``
still answers; ``-`` where the case has no catalog), the limit the case is held to and whether it held. The
Hub's faults (429 with Retry-After, gzip bombs, endless bodies, stalls) are injected into the imitation as the
tests do (tests/hubkit.py, tests/test_hub_bounds.py); models are built with tests/tokfactory.py, hostile
snapshots with tests/test_pull.py's helpers.

    .venv/bin/python benchmarks/hostile.py [--only SUBSTRING] [--skip-big]

``--skip-big`` leaves out the 12 M-key GGUF, the 2 GiB bomb and the 300 MB cell (the slowest cases). Exit status:
0 when every case held, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from crawlkit import hermetic_env, six_repo_hub, write_repo  # noqa: E402
from hubkit import ORG, WRITE, copy_catalog, dataset_hub, remote_files, sha256, touch_catalog  # noqa: E402
from tokfactory import make_hostile, make_model  # noqa: E402

from indexer.hub.guard import MAX_ANSWER_BYTES  # noqa: E402
from indexer.hubsim import HubServer  # noqa: E402
from indexer.hubsim.repos import HUB_META_FILE  # noqa: E402
from indexer.hubsim.wire import gzip_bomb  # noqa: E402
from indexer.jobs.demo import DEMO_DRAFT, DEMO_GATED, DEMO_TARGET, build_demo_catalog, build_demo_hub  # noqa: E402
from indexer.jobs.publish import DATASETTE_SETTINGS  # noqa: E402
from indexer.vocab.tokenbox import COUNT_SECONDS, FAILED, MEMORY_BYTES  # noqa: E402

_VENV_CLI = Path(sys.executable).with_name("indexer")
CLI = [str(_VENV_CLI)] if _VENV_CLI.is_file() else [sys.executable, "-c", "from indexer.cli import cli; cli()"]
TOKEN = "hf_hostileBenchToken0123456789"
PRIVATE = {DEMO_TARGET: "secret-lab/Secret-7B-Instruct", DEMO_DRAFT: "secret-lab/Secret-0.5B-Instruct"}
BOX = 0.5  # --max-minutes of the time-boxed runs
REPO = f"{ORG}/catalog"


@dataclass
class Run:
    """One child's end: exit status, wall seconds, peak RSS (MB), output."""

    code: int
    seconds: float
    peak_mb: float
    out: str
    err: str

    def one_error_line(self) -> bool:
        """Exactly one line on stderr, starting ``error:``, and no traceback anywhere."""
        lines = self.err.strip().splitlines()
        return (len(lines) == 1 and lines[0].startswith("error:")
                and "Traceback" not in self.out + self.err)

    def first_line(self) -> str:
        return (self.err.strip().splitlines() or [""])[0][:110]


@dataclass
class Row:
    case: str
    command: str
    run: Run | None
    intact: str
    limit: str
    held: bool
    note: str = ""


@dataclass
class Bench:
    tmp: Path
    rows: list[Row] = field(default_factory=list)
    only: str | None = None

    def env(self, hub: HubServer | None = None, token: str | None = None, **extra) -> dict:
        env = hermetic_env(self.tmp)
        if hub is not None:
            env["HF_ENDPOINT"] = hub.endpoint
        if token:
            env["HF_TOKEN"] = token
        env.update(extra)
        return env

    def row(self, case: str, args: list[str], run: Run | None, intact: str, limit: str, held: bool,
            note: str = "") -> None:
        shown = " ".join(_short(a, self.tmp) for a in args)
        r = Row(case, shown, run, intact, limit, held, note.replace(str(self.tmp) + "/", ""))
        self.rows.append(r)
        print(_format(r), flush=True)

    def wanted(self, group: str) -> bool:
        return self.only is None or self.only.lower() in group.lower()


# ---------------------------------------------------------------------------------------------------- children

def spawn(args: list[str], env: dict, argv: list[str] | None = None, **kw) -> tuple[subprocess.Popen, float, Path]:
    """``indexer ARGS`` (or ``argv``) started in its own session, its output to files (read by :func:`reap`)."""
    outdir = Path(tempfile.mkdtemp(prefix="hostile-out-"))
    with open(outdir / "out", "wb") as out, open(outdir / "err", "wb") as err:
        proc = subprocess.Popen(argv or CLI + args, env=env, stdout=out, stderr=err, start_new_session=True, **kw)
    return proc, time.monotonic(), outdir


def reap(proc: subprocess.Popen, t0: float, outdir: Path, timeout: float = 900) -> Run:
    """Wait for the child (killed past ``timeout``) with ``os.wait4``: its exit status, and the peak RSS of its
    process tree sampled from /proc (``ru_maxrss`` would include this process's own RSS, inherited at fork)."""
    timer = threading.Timer(timeout, lambda: _killpg(proc.pid))
    sampler = _PeakSampler(proc.pid)
    timer.start()
    sampler.start()
    try:
        _pid, status, _usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
        sampler.done.set()
        sampler.join()
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - t0
    out = (outdir / "out").read_text(errors="replace")
    err = (outdir / "err").read_text(errors="replace")
    shutil.rmtree(outdir, ignore_errors=True)
    return Run(code, seconds, sampler.peak_kb / 1024, out, err)


class _PeakSampler(threading.Thread):
    """Every 50 ms, the largest VmHWM (peak resident set) among ``pid`` and its descendants."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak_kb, self.done = pid, 0, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for pid in _tree(self.pid):
                self.peak_kb = max(self.peak_kb, _proc_kb(pid, "VmHWM"))
            self.done.wait(0.05)


def _tree(root: int) -> list[int]:
    """``root`` and its descendants, from /proc/*/stat."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def cli(args: list[str], env: dict, timeout: float = 900) -> Run:
    return reap(*spawn(args, env), timeout=timeout)


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _short(arg: str, tmp: Path) -> str:
    arg = str(arg).replace(str(tmp) + "/", "")
    return arg if len(arg) < 60 else arg[:57] + "..."


def intact(bench: Bench, db: Path, target: str | None = DEMO_TARGET) -> bool:
    """The catalog passes PRAGMA integrity_check and (with a target) ``query --offline`` answers from it."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            ok = con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        finally:
            con.close()
    except sqlite3.Error:
        return False
    if ok and target:
        ok = cli(["query", "--db", str(db), "--target", target, "--offline", "--json"], bench.env()).code == 0
    return ok


def yes(flag: bool) -> str:
    return "yes" if flag else "NO"


def rows_of(db: Path, sql: str, *params) -> list:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


# ---------------------------------------------------------------------------------------------------- hubs

def demo_hub(root: Path, *, hostile: bool = False, private: bool = False, gated_unique: bool = False) -> Path:
    """The demo hub; ``hostile`` adds a copy of the demo draft with the backtracking Split regex (two ids
    swapped, so its agreement is counted); ``private`` adds private copies of the target and draft;
    ``gated_unique`` gives the gated repo a vocabulary no public repo shares and grants TOKEN access."""
    build_demo_hub(root)
    meta = json.loads((root / HUB_META_FILE).read_text())
    if hostile:
        evil = DEMO_DRAFT + "-evil"
        shutil.copytree(root / DEMO_DRAFT, root / evil)
        tj = json.loads((root / evil / "tokenizer.json").read_text())
        a, b = sorted(tj["model"]["vocab"])[:2]
        make_hostile(root / evil, swap=(a, b))
    if private:
        for src, dst in PRIVATE.items():
            shutil.copytree(root / src, root / dst)
            cfg = json.loads((root / dst / "config.json").read_text())
            cfg["_name_or_path"] = dst
            (root / dst / "config.json").write_text(json.dumps(cfg))
            meta[dst] = {**meta[src], "private": True}
    if gated_unique:
        tj = json.loads((root / DEMO_GATED / "tokenizer.json").read_text())
        vocab = tj["model"]["vocab"]
        a, b = sorted(vocab)[-2:]
        vocab[a], vocab[b] = vocab[b], vocab[a]
        (root / DEMO_GATED / "tokenizer.json").write_text(json.dumps(tj))
        meta[DEMO_GATED] = {**meta[DEMO_GATED], "gated_access": [TOKEN]}
    (root / HUB_META_FILE).write_text(json.dumps(meta))
    return root


# ---------------------------------------------------------------------------------------------------- cases

def hostile_tokenizer(b: Bench) -> None:
    """The backtracking Split regex in a crawled repo: crawl, compute and the nightly go on and publish; check
    and fingerprint of the directory give one error line."""
    hub_dir = demo_hub(b.tmp / "tok-hub", hostile=True)
    evil = DEMO_DRAFT + "-evil"
    fams = str(hub_dir / "families.toml")
    limit = f"box {COUNT_SECONDS:g} s, {MEMORY_BYTES >> 20} MiB"
    with HubServer(str(hub_dir)) as hub:
        env = b.env(hub, INDEXER_FAMILIES=fams)
        db = b.tmp / "tok" / "catalog.db"
        db.parent.mkdir()
        args = ["crawl", "--family", "Lumen", "--db", str(db), "--quiet", "--endpoint", hub.endpoint]
        r = cli(args, env)
        reason = (rows_of(db, "SELECT reason FROM repos WHERE repo_id = ?", evil) or [("",)])[0][0] or ""
        ok = r.code == 0 and reason.startswith(FAILED)
        b.row("tokenizer: crawl (+compute)", args, r, yes(intact(b, db)), limit, ok, reason[:70])
        args = ["compute", "--db", str(db)]
        r = cli(args, env)
        b.row("tokenizer: compute", args, r, yes(intact(b, db)), "exit 0", r.code == 0)
        ndb, site, report = b.tmp / "tok" / "nightly.db", b.tmp / "tok" / "site", b.tmp / "tok" / "report.json"
        args = ["nightly", "--db", str(ndb), "--endpoint", hub.endpoint, "--families", "Lumen",
                "--publish-dir", str(site), "--report", str(report)]
        r = cli(args, env)
        rep = json.loads(report.read_text()) if report.is_file() else {}
        published = site / "catalog.db"
        evil_row = rows_of(published, "SELECT status FROM repos WHERE repo_id = ?", evil) if published.is_file() else []
        ok = r.code == 0 and rep.get("status") == "ok" and list(rep.get("steps", {}))[-1:] == ["publish"]
        b.row("tokenizer: nightly publishes", args, r, yes(intact(b, ndb) and intact(b, published)),
              "exit 0, publish step", ok and evil_row == [("ok",)], f"published row: {evil_row}")
    draft = hub_dir / DEMO_DRAFT
    r = cli(args := ["check", str(hub_dir / evil), str(draft)], b.env())
    b.row("tokenizer: check, hostile target", args, r, "-", "one error: line", r.one_error_line(), r.first_line())
    for name, args in (("check, hostile draft", ["check", str(draft), str(hub_dir / evil)]),
                       ("fingerprint", ["fingerprint", str(hub_dir / evil)])):
        r = cli(args, b.env())  # neither runs the hostile tokenizer on text: only a target's tokenizer counts
        b.row(f"tokenizer: {name}", args, r, "-", "answers, no traceback", r.code in (0, 1) and
              "Traceback" not in r.out + r.err, "answered (only a target's tokenizer is run on text)"
              if r.code in (0, 1) else r.first_line())


def private_ids(b: Bench) -> None:
    """crawl --model/--author of private repos and query --live for a private target, then publish (a folder and
    the Hub dataset): no private id in any published byte."""
    hub_dir = demo_hub(b.tmp / "priv-hub", private=True)
    db = b.tmp / "priv" / "catalog.db"
    db.parent.mkdir()
    with dataset_hub(b.tmp / "priv-ds", tokens={TOKEN: "write"}) as ds, \
            HubServer(str(hub_dir), tokens={TOKEN: "write"}) as hub:
        env = b.env(hub, token=TOKEN, INDEXER_FAMILIES=str(hub_dir / "families.toml"))
        steps = [["crawl", "--family", "Lumen", "--db", str(db), "--quiet", "--endpoint", hub.endpoint],
                 ["crawl", "--model", PRIVATE[DEMO_TARGET], "--model", PRIVATE[DEMO_DRAFT], "--db", str(db),
                  "--quiet", "--endpoint", hub.endpoint],
                 ["crawl", "--author", "secret-lab", "--db", str(db), "--quiet", "--endpoint", hub.endpoint],
                 ["query", "--target", PRIVATE[DEMO_TARGET], "--live", "--db", str(db), "--json"]]
        for args in steps:
            r = cli(args, env)
            label = "private: " + " ".join(args[:2] + (["--live"] if "--live" in args else []))
            b.row(label, args, r, yes(intact(b, db)), "exit 0", r.code == 0,
                  r.first_line() if r.code else "")
        out = b.tmp / "priv" / "site"
        args = ["publish", str(out), "--db", str(db), "--with-tokens"]
        r = cli(args, env)
        leaks = _scan(out.rglob("*"), PRIVATE.values())
        b.row("private: publish folder", args, r, yes(intact(b, out / "catalog.db")), "no private id in any file",
              r.code == 0 and not leaks, f"{sum(1 for p in out.rglob('*') if p.is_file())} files scanned; "
              f"leaks: {leaks or 'none'}")
        args = ["publish", "--db", str(db), "--to-hub", REPO, "--endpoint", ds.endpoint]
        r = cli(args, b.env(token=TOKEN))
        files = [Path(f.abs_path) for f in remote_files(ds).values()] if REPO in ds.datasets.repos else []
        leaks = _scan(files, PRIVATE.values())
        b.row("private: publish --to-hub", args, r, "-", "no private id in any file",
              r.code == 0 and bool(files) and not leaks, f"{len(files)} files scanned; leaks: {leaks or 'none'}")


def _scan(paths, ids) -> list[str]:
    """``file: id`` for each private id found in a file's bytes, a tar member's or an SQLite dump's. (Their owner,
    ``secret-lab``, is public on the Hub, and ``crawl --author secret-lab`` names it in its scope.)"""
    found = []
    needles = {i.encode() for i in ids}
    for p in paths:
        p = Path(p)
        if not p.is_file():
            continue
        blobs = [p.read_bytes()]
        if tarfile.is_tarfile(p):
            with tarfile.open(p) as t:
                blobs += [t.extractfile(m).read() for m in t if m.isfile()]
        if p.suffix in (".db", ".sqlite"):
            con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
            blobs.append("\n".join(con.iterdump()).encode())
            con.close()
        found += [f"{p.name}: {n.decode()}" for n in needles if any(n in blob for blob in blobs)]
    return found


def listing_429(b: Bench) -> None:
    """The listing answered 429 with a Retry-After far past the time box: crawl and nightly end in the box."""
    hub_dir = six_repo_hub(b.tmp / "429")
    demo_dir = demo_hub(b.tmp / "429-demo")
    box = BOX * 60
    for after in ("150", "86400"):
        with HubServer(str(hub_dir), page_size=2) as hub:
            hub.add_fault("GET", r"^/api/models$", status=429, headers={"Retry-After": after}, times=None)
            db = b.tmp / "429" / f"crawl-{after}.db"
            args = ["crawl", "--author", "meta-llama", "--db", str(db), "--quiet", "--no-compute", "--json",
                    "--max-minutes", str(BOX), "--endpoint", hub.endpoint]
            r = cli(args, b.env(hub), timeout=box * 4)
            stopped = json.loads(r.out).get("stopped", "") if r.out.strip().startswith("{") else r.first_line()
            b.row(f"429 Retry-After {after}: crawl", args, r, yes(intact(b, db, None)),
                  f"{r.seconds:.1f} s of a {box:g} s box", r.code in (0, 1) and r.seconds < box,
                  str(stopped)[:70])
        with HubServer(str(demo_dir)) as hub:
            hub.add_fault("GET", r"^/api/models$", status=429, headers={"Retry-After": after}, times=None)
            db, report = b.tmp / "429" / f"nightly-{after}.db", b.tmp / "429" / f"report-{after}.json"
            args = ["nightly", "--db", str(db), "--endpoint", hub.endpoint, "--max-minutes", str(BOX),
                    "--publish-dir", str(b.tmp / "429" / f"site-{after}"), "--report", str(report)]
            r = cli(args, b.env(hub, INDEXER_FAMILIES=str(demo_dir / "families.toml")), timeout=box * 6)
            rep = json.loads(report.read_text()) if report.is_file() else {}
            crawl_s = (rep.get("steps", {}).get("crawl") or {}).get("seconds", float("nan"))
            b.row(f"429 Retry-After {after}: nightly", args, r, yes(intact(b, db, None)),
                  f"crawl step {crawl_s:.1f} s of a {box:g} s box", crawl_s < box,
                  f"status {rep.get('status')}; steps {' '.join(rep.get('steps', {}))}")


def big_answers(b: Bench, big: bool) -> None:
    """Gzip bombs (the listing, paths-info) and an endless listing body: the crawl's RSS stays near a clean
    crawl's, and the error names the cap."""
    hub_dir = six_repo_hub(b.tmp / "bomb")
    base = None
    cases = [("clean crawl (baseline)", None, None, 0), ("gzip bomb 1 GiB: listing", "list", "gzip_bomb", 1 << 30)]
    if big:
        cases.append(("gzip bomb 2 GiB: listing", "list", "gzip_bomb", 2 << 30))
    cases += [("gzip bomb 1 GiB: paths-info", "paths", "gzip_bomb", 1 << 30),
              ("endless body: listing", "list", "endless", 0)]
    for name, where, kind, size in cases:
        if kind == "gzip_bomb":
            gzip_bomb(size)  # compressed once, before the clock starts (the imitation keeps it)
        with HubServer(str(hub_dir)) as hub:
            if where == "list":
                hub.add_fault("GET", r"^/api/models$", kind=kind, size=size, times=None)
            elif where == "paths":
                hub.add_fault("POST", r"/api/models/meta-llama/model-3/paths-info/", kind=kind, size=size,
                              times=None)
            db = b.tmp / "bomb" / f"{len(b.rows)}.db"
            args = ["crawl", "--author", "meta-llama", "--db", str(db), "--quiet", "--no-compute",
                    "--endpoint", hub.endpoint]
            r = cli(args, b.env(hub), timeout=300)
        errors = " ".join(e or "" for (e,) in rows_of(db, "SELECT errors FROM crawl_runs")) if db.is_file() else ""
        reasons = " ".join(x or "" for (x,) in rows_of(db, "SELECT reason FROM repos WHERE status = 'error'")) \
            if db.is_file() else ""
        if kind is None:
            base = r.peak_mb
            b.row(name, args, r, yes(intact(b, db, None)), "-", r.code == 0)
            continue
        said = errors + " " + reasons + " " + r.err
        capped = "cap" in said
        ratio = r.peak_mb / base if base else float("nan")
        b.row(name, args, r, yes(intact(b, db, None)),
              f"RSS x{ratio:.2f} of clean; cap {MAX_ANSWER_BYTES >> 20} MiB decoded",
              "Traceback" not in r.err and capped and r.peak_mb < base + 3 * (MAX_ANSWER_BYTES >> 20),
              _cap_words(said))


def _cap_words(text: str) -> str:
    i = text.find("cap")
    return text[max(0, i - 60):i + 20].strip() if i >= 0 else text.strip()[:80]


PARSE_ONLY = """
import sys, time
from indexer.gguf.header import read_kv_section
path = sys.argv[1]
with open(path, "rb") as f:
    data_size = f.seek(0, 2)
    def read(a, b):
        f.seek(a)
        return f.read(b - a)
    t0 = time.perf_counter()
    r = read_kv_section(read, data_size, max_pairs=None)
    print(r.header.status, len(r.header.values), r.requests, round(time.perf_counter() - t0, 3))
"""


def gguf_keys(b: Bench, big: bool) -> None:
    """GGUF key/value sections of 800k, 1.6M and 12M one-byte values. ``indexer fingerprint FILE.gguf`` reads
    them as the crawl does (read_kv_section, HTTP ranges there, file reads here) and refuses the count at the
    head; the parser alone, without that cap, is timed in a child too: seconds per million keys at each size."""
    spec = importlib.util.spec_from_file_location("gguf_header_bench", ROOT / "benchmarks" / "gguf_header.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sizes = [800_000, 1_600_000] + ([12_000_000] if big else [])
    first = None
    for n in sizes:
        path = b.tmp / "gguf" / f"keys-{n}.gguf"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(mod.many_keys(n))
        mb = path.stat().st_size / 1e6
        args = ["fingerprint", str(path)]
        r = cli(args, b.env(), timeout=900)
        b.row(f"GGUF {n / 1e6:g}M one-byte keys ({mb:.0f} MB)", args, r, "-", "one error: line",
              r.one_error_line() and "key/value count" in r.err, r.err.strip().split(": ", 2)[-1][:80])
        argv = [sys.executable, "-c", PARSE_ONLY, str(path)]
        r = reap(*spawn([], b.env(), argv=argv), timeout=900)
        status, _n, _reads, parse_s = (r.out.split() + ["?"] * 4)[:4]
        per_m = float(parse_s) / (n / 1e6) if r.code == 0 else float("nan")
        first = first or per_m
        path.unlink()
        b.row(f"  parser alone, no count cap ({n / 1e6:g}M)", ["(read_kv_section, max_pairs=None)", path.name], r,
              "-", f"{per_m:.2f} s per M keys, x{per_m / first:.2f} of 800k",
              r.code == 0 and status == "ok" and per_m < 2 * first,
              f"{status}, {_reads} reads, parse {parse_s} s")


def hostile_pull(b: Bench) -> None:
    """Snapshots that pass sha256 and integrity but not the schema, and a token store whose content is not its
    names: pull refuses each in one line and the old catalog is kept (same bytes, still answering)."""
    from test_pull import HOSTILE, _hostile, _upload

    demo = b.tmp / "pull" / "demo" / "demo.db"
    demo.parent.mkdir(parents=True)
    build_demo_catalog(str(demo), log=lambda _m: None)
    src = copy_catalog(demo, b.tmp / "pull" / "src")
    dest = b.tmp / "pull" / "local" / "catalog.db"
    dest.parent.mkdir(parents=True)
    with dataset_hub(b.tmp / "pull" / "hub") as hub:
        env = b.env(token=WRITE)
        publish = ["publish", "--db", str(src), "--to-hub", REPO, "--endpoint", hub.endpoint]
        pull = ["pull", "--from", REPO, "--db", str(dest), "--endpoint", hub.endpoint, "--quiet"]
        assert cli(publish, env).code == 0 and cli(pull, env).code == 0
        touch_catalog(src)
        assert cli(publish, env).code == 0
        for case, (sql, words) in sorted(HOSTILE.items()):
            before = sha256(dest)
            _upload(hub, b.tmp, {"catalog.sqlite": _hostile(src, b.tmp, sql)})
            r = cli(pull, env)
            kept = sha256(dest) == before and not list(dest.parent.glob(".pull-*"))
            b.row(f"pull: {case}", pull, r, yes(kept and intact(b, dest)), "refused, old catalog kept",
                  r.code == 1 and r.one_error_line() and kept and words in r.err, r.first_line())
        # tokens.tar: a member with a valid name and another member's content
        touch_catalog(src, minutes_later=2)
        assert cli(publish, env).code == 0
        good = Path(remote_files(hub)["tokens.tar"].abs_path)
        bad = b.tmp / "tokens.tar"
        with tarfile.open(good) as t, tarfile.open(bad, "w") as out:
            members = [(m, t.extractfile(m).read()) for m in t.getmembers() if m.isfile()]
            vocabs = [i for i, (m, _) in enumerate(members) if m.name.endswith(".json.z")]
            i, j = vocabs[0], vocabs[1]
            members[i] = (members[i][0], members[j][1])
            wrong = Path(members[i][0].name).name
            for m, data in members:
                m.size = len(data)
                import io

                out.addfile(m, io.BytesIO(data))
        for p in (dest.parent / "tokens").rglob(f"*{wrong}"):
            p.unlink()  # a pull checks only what it would write
        _upload(hub, b.tmp, {"tokens.tar": bad})
        before = sha256(dest)
        r = cli(pull, env)
        kept = sha256(dest) == before and not list(dest.parent.glob(".pull-*"))
        b.row("pull: tokens.tar content not its name", pull, r, yes(kept and intact(b, dest)),
              "refused, old catalog kept", r.code == 1 and r.one_error_line() and kept, r.first_line())
        killed_pull(b, hub, src, env)


def killed_pull(b: Bench, hub, src: Path, env: dict) -> None:
    """A pull stopped mid-download (the snapshot's CDN GET held open): SIGINT leaves no staging folder; kill -9
    cannot clean up, so the next pull removes what it left, even when it downloads nothing."""
    repo = f"{ORG}/catalog-kill"
    dest = b.tmp / "pull" / "local-kill" / "catalog.db"
    dest.parent.mkdir(parents=True)
    publish = ["publish", "--db", str(src), "--to-hub", repo, "--endpoint", hub.endpoint]
    pull = ["pull", "--from", repo, "--db", str(dest), "--endpoint", hub.endpoint, "--quiet"]
    assert cli(publish, env).code == 0 and cli(pull, env).code == 0
    for sig in (signal.SIGINT, signal.SIGKILL):
        touch_catalog(src, minutes_later=3 + int(sig))
        assert cli(publish, env).code == 0
        manifest = Path(remote_files(hub, repo)["manifest.json"].abs_path)
        new = json.loads(manifest.read_text())["snapshot"]["sha256"]
        hub.request_log.clear()
        hub.add_fault("GET", rf"^/cdn/{new}", kind="stall", delay=None, times=1)
        before = sha256(dest)
        proc, t0, outdir = spawn(pull, env)
        for _ in range(1200):
            if any(p.startswith(f"/cdn/{new}") and s == 0 for _m, p, s in hub.request_log):
                break
            time.sleep(0.05)
        staged = bool(list(dest.parent.glob(".pull-*")))
        os.kill(proc.pid, sig)
        r = reap(proc, t0, outdir, timeout=60)
        left = list(dest.parent.glob(".pull-*"))
        kept = sha256(dest) == before and intact(b, dest)
        hub.clear_faults()
        name = "SIGINT" if sig == signal.SIGINT else "kill -9"
        if sig == signal.SIGINT:
            b.row(f"pull: {name} mid-download", pull, r, yes(kept), "exit 130, no staging left",
                  r.code == 130 and staged and not left, f"staging while downloading: {staged}; after: {len(left)}")
            assert cli(pull, env).code == 0
        else:
            size = sum(f.stat().st_size for d in left for f in d.rglob("*") if f.is_file())
            nxt = pull
            hub.add_fault("GET", rf"^/cdn/{new}", status=500, times=None)  # the next pull cannot download
            r2 = cli(nxt, env)
            hub.clear_faults()
            gone = not list(dest.parent.glob(".pull-*"))
            b.row(f"pull: {name} mid-download, next pull", nxt, r2, yes(kept and intact(b, dest)),
                  "next pull removes the staging", staged and gone,
                  f"left {len(left)} folder(s), {size / 1e6:.1f} MB; after the next pull: "
                  f"{'none' if gone else 'still there'}")


def gated_tokens(b: Bench) -> None:
    """A gated repo crawled with a granted token: its facts are published, its token list is not."""
    hub_dir = demo_hub(b.tmp / "gated-hub", gated_unique=True)
    db = b.tmp / "gated" / "catalog.db"
    db.parent.mkdir()
    with dataset_hub(b.tmp / "gated-ds", tokens={TOKEN: "write"}) as ds, HubServer(str(hub_dir)) as hub:
        env = b.env(hub, token=TOKEN, INDEXER_FAMILIES=str(hub_dir / "families.toml"))
        r = cli(["crawl", "--family", "Lumen", "--db", str(db), "--quiet", "--endpoint", hub.endpoint], env)
        got = rows_of(db, "SELECT r.status, t.vocab_sha256 FROM repos r LEFT JOIN tokenizers t ON "
                          "t.id = r.tokenizer_id WHERE r.repo_id = ?", DEMO_GATED)
        status, vocab = got[0] if got else (None, None)
        shared = rows_of(db, "SELECT count(*) FROM repos r JOIN tokenizers t ON t.id = r.tokenizer_id "
                             "WHERE t.vocab_sha256 = ? AND r.repo_id != ?", vocab, DEMO_GATED)[0][0] if vocab else 0
        args = ["publish", "--db", str(db), "--to-hub", REPO, "--endpoint", ds.endpoint]
        r = cli(args, b.env(token=TOKEN))
        names = []
        if REPO in ds.datasets.repos:
            with tarfile.open(remote_files(ds)["tokens.tar"].abs_path) as t:
                names = [m.name for m in t if m.isfile()]
        inside = [n for n in names if vocab and vocab in n]
        b.row("gated: token list not in tokens.tar", args, r, yes(intact(b, db)),
              "fingerprints and facts only", r.code == 0 and status == "ok" and bool(names) and not inside,
              f"gated row {status}, vocab {str(vocab)[:12]}; {len(names)} members, gated's: {len(inside)}; "
              f"public repos sharing it: {shared}")


def local_low(b: Bench) -> None:
    """Deep JSON, model_type of another type, a huge size, a 58 MB tokenizer.json."""
    good = make_model(b.tmp / "low" / "good")
    draft = make_model(b.tmp / "low" / "draft")
    for depth in (100_000, 200_000):
        for name, text in (("tokenizer.json", "[" * depth + "]" * depth),
                           ("config.json", '{"a":' * depth + "1" + "}" * depth)):
            d = b.tmp / "low" / f"deep-{name}-{depth}"
            shutil.copytree(good, d)
            (d / name).write_text(text)
            for args in (["fingerprint", str(d)], ["check", str(d), str(draft)]):
                r = cli(args, b.env())
                b.row(f"deep JSON {depth // 1000}k: {name} {args[0]}", args, r, "-", "one error: line",
                      r.one_error_line(), r.first_line())
    d = b.tmp / "low" / "list-type"
    shutil.copytree(good, d)
    (d / "config.json").write_text(json.dumps({"model_type": ["llama"], "vocab_size": 123}))
    for args in (["fingerprint", str(d)], ["check", str(d), str(draft)]):
        r = cli(args, b.env())
        b.row(f"model_type a list: {args[0]}", args, r, "-", "one error: line", r.one_error_line(), r.first_line())
    hub_dir = b.tmp / "low" / "hub"
    write_repo(hub_dir, "org/fine")
    write_repo(hub_dir, "org/huge", config={"num_hidden_layers": 10**12, "hidden_size": 4096})
    db = b.tmp / "low" / "catalog.db"
    with HubServer(str(hub_dir)) as hub:
        args = ["crawl", "--author", "org", "--db", str(db), "--quiet", "--endpoint", hub.endpoint]
        r = cli(args, b.env(hub))
    got = rows_of(db, "SELECT status, reason FROM repos WHERE repo_id = 'org/huge'")
    b.row("num_hidden_layers 10**12: crawl", args, r, yes(intact(b, db, "org/fine")), "malformed, out of range",
          r.code == 0 and bool(got) and got[0][0] == "malformed" and "out of range" in (got[0][1] or ""),
          str(got[0] if got else None)[:80])
    big = big_tokenizer(b.tmp / "low" / "big")
    mb = (big / "tokenizer.json").stat().st_size / 1e6
    for args in (["fingerprint", str(big)], ["check", str(big), str(big)]):
        r = cli(args, b.env(), timeout=600)
        b.row(f"{mb:.0f} MB tokenizer.json: {args[0]}", args, r, "-",
              f"box {COUNT_SECONDS:g} s, {MEMORY_BYTES >> 20} MiB", r.code in (0, 1, 2) and "Traceback" not in r.err
              and r.peak_mb < MEMORY_BYTES / 2**20, r.first_line() if r.code else "answered")


def big_tokenizer(path: Path, target_mb: float = 53.4) -> Path:
    """A BPE tokenizer.json of about 58 MB (``target_mb`` as this estimates it): every lowercase string of up to five
    letters in order of length, each merged from its prefix and its last letter."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab: dict[str, int] = {"<unk>": 0, "<s>": 1, "</s>": 2}
    merges: list[list[str]] = []
    level = [""]
    size = 0
    while size < target_mb * 1e6:
        nxt = []
        for prefix in level:
            for c in letters:
                w = prefix + c
                vocab[w] = len(vocab)
                nxt.append(w)
                size += 2 * len(w) + 20
                if prefix:
                    merges.append([prefix, c])
                if size >= target_mb * 1e6:
                    break
            if size >= target_mb * 1e6:
                break
        level = nxt
    make_model(path)
    tj = json.loads((path / "tokenizer.json").read_text())
    tj["model"].update(vocab=vocab, merges=merges)
    tj["pre_tokenizer"] = {"type": "Whitespace"}
    tj["decoder"] = None
    (path / "tokenizer.json").write_text(json.dumps(tj))
    cfg = json.loads((path / "config.json").read_text())
    cfg["vocab_size"] = len(vocab)
    (path / "config.json").write_text(json.dumps(cfg))
    return path


def site_limits(b: Bench, big: bool) -> None:
    """The site under a costly SQL query (zeroblob), a 300 MB cell in a pulled catalog, and its server paths."""
    demo = b.tmp / "site" / "demo" / "demo.db"
    demo.parent.mkdir(parents=True)
    build_demo_catalog(str(demo), log=lambda _m: None)
    db = copy_catalog(demo, b.tmp / "site" / "cat")
    def sql(text: str) -> str:
        return "/catalog.json?sql=" + urllib.parse.quote(text)

    cases = [("site: zeroblob(999000000)", db, sql("select length(zeroblob(999000000)) as n")),
             ("site: printf of 999000000 chars", db, sql("select length(printf('%.999000000c', 'x')) as n")),
             ("site: endless recursive CTE", db, sql("with recursive c(i) as (select 1 union all select i + 1 "
                                                     "from c) select count(*) from c"))]
    if big:
        fat = copy_catalog(demo, b.tmp / "site" / "fat")
        con = sqlite3.connect(fat)
        con.execute("UPDATE repos SET reason = (SELECT group_concat(x, '') FROM (WITH RECURSIVE c(i) AS "
                    "(SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 300) SELECT printf('%.1000000c', 'x') AS x "
                    "FROM c)) WHERE repo_id = ?", (DEMO_TARGET,))
        con.commit()
        (pk,) = con.execute("SELECT id FROM repos WHERE repo_id = ?", (DEMO_TARGET,)).fetchone()
        con.close()
        cases.append(("site: 300 MB cell, its row page", fat, f"/catalog/repos/{pk}.json"))
        cases.append(("site: 300 MB cell, the table page", fat, "/catalog/repos.json"))
    for name, path, url in cases:
        with _served(b, path) as (base, pid, logs):
            tree = _tree(pid)  # indexer serve and its datasette child
            base_mb = max(_proc_kb(p, "VmRSS") for p in tree) / 1024
            logged = sum(f.stat().st_size for f in logs)
            t0 = time.monotonic()
            status, body = _get(base + url)
            seconds = time.monotonic() - t0
            peak = max(_proc_kb(p, "VmHWM") for p in tree) / 1024
            alive = _get(base + "/-/versions.json")[0] == 200
            logged = sum(f.stat().st_size for f in logs) - logged
            paths = ""
            if name.endswith("zeroblob(999000000)"):
                _s, dbs = _get(base + "/-/databases.json")
                _s2, plist = _get(base + "/catalog.json?sql=" + urllib.parse.quote(
                    "select name, file from pragma_database_list()"))
                paths = str(b.tmp) if str(b.tmp) in dbs + plist else ""
        r = Run(status, seconds, peak, body[:200], "")
        try:
            said = json.loads(body).get("error") or body
        except ValueError:
            said = body
        said = " ".join(str(said).split()).replace("<p>", "")[:50]
        b.row(name, ["serve", "--db", str(path), "GET", url], r, "-",
              f"{SQL_SECONDS:g} s limit; peak {peak:.0f} MB from {base_mb:.0f}",
              peak < base_mb + 200 and alive and seconds < SQL_SECONDS + 2,
              f"HTTP {status}: {said}; answers after: {alive}; {logged / 1024:.0f} KB logged")
        if name.endswith("zeroblob(999000000)"):
            b.row("site: server paths", ["GET", "/-/databases.json", "pragma_database_list()"], None, "-",
                  "no absolute path", not paths, "absolute path shown" if paths else "file names only")


SQL_SECONDS = float(dict(DATASETTE_SETTINGS)["sql_time_limit_ms"]) / 1000


@contextlib.contextmanager
def _served(b: Bench, db: Path):
    """``indexer serve --db DB`` on a free port, its output to files (so that nothing it logs can block it):
    yields (base URL, pid, log files)."""
    from sample_catalog import free_port

    port = free_port()
    proc, t0, outdir = spawn(["serve", "--db", str(db), "--port", str(port)], b.env())
    base = f"http://127.0.0.1:{port}"
    logs = [outdir / "out", outdir / "err"]
    try:
        for _ in range(600):
            if _get(base + "/-/versions.json", timeout=2)[0] == 200:
                break
            time.sleep(0.1)
        yield base, proc.pid, logs
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        threading.Timer(30, lambda: _killpg(proc.pid)).start()
        reap(proc, t0, outdir)


def _get(url: str, timeout: float = 60) -> tuple[int, str]:
    """(status, body); status 0 when no answer came within ``timeout``."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read(1 << 20).decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read(1 << 20).decode(errors="replace")
    except (OSError, TimeoutError) as e:
        return 0, f"no answer: {e}"


def _proc_kb(pid: int, key: str) -> int:
    """VmRSS or VmHWM of ``pid`` (kB) from /proc; 0 when it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


# ---------------------------------------------------------------------------------------------------- table

HEAD = f"{'case':<42} {'exit':>4} {'s':>7} {'peak MB':>8} {'intact':>6} {'held':>4}  {'limit':<44} note / command"


def _format(r: Row) -> str:
    run = r.run
    exit_, secs, mb = (str(run.code), f"{run.seconds:.1f}", f"{run.peak_mb:.0f}") if run else ("-", "-", "-")
    return (f"{r.case:<42} {exit_:>4} {secs:>7} {mb:>8} {r.intact:>6} {'yes' if r.held else 'NO':>4}  "
            f"{r.limit:<44} {r.note}  [indexer {r.command}]")


GROUPS = ("tokenizer", "private", "429", "bomb", "gguf", "pull", "gated", "low", "site")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help=f"run the groups whose name contains this ({', '.join(GROUPS)})")
    ap.add_argument("--skip-big", action="store_true", help="leave out the 12M-key GGUF, the 2 GiB bomb, the "
                                                            "300 MB cell")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="hostile-"))
    b = Bench(tmp, only=args.only)
    big = not args.skip_big
    t0 = time.monotonic()
    print(HEAD, flush=True)
    try:
        for group, fn in (("tokenizer", lambda: hostile_tokenizer(b)), ("private", lambda: private_ids(b)),
                          ("429", lambda: listing_429(b)), ("bomb", lambda: big_answers(b, big)),
                          ("gguf", lambda: gguf_keys(b, big)), ("pull", lambda: hostile_pull(b)),
                          ("gated", lambda: gated_tokens(b)), ("low", lambda: local_low(b)),
                          ("site", lambda: site_limits(b, big))):
            if b.wanted(group):
                fn()
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    failed = [r for r in b.rows if not r.held]
    print(f"\n{len(b.rows)} cases in {time.monotonic() - t0:.0f} s; {len(failed)} did not hold"
          + (": " + "; ".join(r.case for r in failed) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
