"""Scale benchmark: `indexer compute` and `indexer query` on a synthetic 1,000,000-repo catalog.

Generates the catalog directly in SQLite (schema via the real migrations, rows via
executemany): a few tokenizer classes with 100,000+ members and a long tail, skewed
parameter counts and downloads, base-model chains. Then measures, each as a subprocess:

- `indexer compute`: wall time and peak RSS (getrusage RUSAGE_CHILDREN), against the
  targets (<= 60 s, <= 2 GB) and, as a ratio, against compute on a catalog 10x smaller; the
  vocabulary-agreement step (indexer/catalog/compute_agreement.py) is reported on its own line;
- `indexer query --target X` for several targets: median wall time including process
  start, against the target (<= 0.5 s) and, as a ratio, against `python -c pass`.

    python benchmarks/scale.py --repos 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from indexer.catalog.db import upgrade

# (name, vocab_len, hf_vocab_size, config vocab sizes, share of repos)
MAJOR = [
    ("qwen2.5", 151665, 151643, (152064, 151936), 0.22),
    ("llama3", 128256, 128000, (128256,), 0.18),
    ("mistral", 32768, 32768, (32768,), 0.12),
    ("gemma", 256000, 256000, (256000,), 0.10),
    ("gpt2", 50257, 50257, (50257,), 0.08),
    ("phi3", 32011, 32000, (32064,), 0.05),
]
TAIL_TOKENIZERS = 3000


def _sha(i: int, salt: str) -> str:
    import hashlib

    return hashlib.sha256(f"{salt}{i}".encode()).hexdigest()


def generate(path: Path, n: int, seed: int = 0) -> list[str]:
    """Write a synthetic catalog of ``n`` repos; returns a few target repo ids."""
    if path.exists():
        path.unlink()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    upgrade(str(path))
    rnd = random.Random(seed)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-262144")
    toks = []  # (id, family, hf, vocab_len, config sizes)
    for i, (fam, vlen, hf, sizes, _share) in enumerate(MAJOR, start=1):
        toks.append((i, fam, hf, vlen, sizes))
    for j in range(TAIL_TOKENIZERS):
        major = MAJOR[j % len(MAJOR)]
        vlen = major[1] + rnd.randint(1, 400)  # a base vocabulary plus its own added tokens
        toks.append((len(toks) + 1, major[0], major[2], vlen, (vlen + rnd.choice((0, 0, 64, 128)),)))
    conn.executemany(
        "INSERT INTO tokenizers (id, vocab_sha256, base_vocab_sha256, vocab_len, max_id, id_holes, "
        "hf_vocab_size, added_tokens, bos_token_id, eos_token_id, add_bos_token, add_eos_token, model_type, "
        "method, repo_count) "
        "VALUES (?, ?, ?, ?, ?, 0, ?, '[]', 1, 2, 0, 0, 'BPE', 'fast', 0)",
        [(t[0], _sha(t[0], "vocab"), _sha(t[1], "base"), t[3], t[3] - 1, t[2]) for t in toks])
    shares = [m[4] for m in MAJOR]
    tail_share = 1 - sum(shares)
    tail_weights = [1 / (k + 1) ** 1.1 for k in range(TAIL_TOKENIZERS)]
    authors = [f"org{k}" for k in range(50_000)]
    author_weights = [1 / (k + 1) for k in range(len(authors))]
    majors_idx = list(range(len(MAJOR)))

    def rows():
        tail_picks = rnd.choices(range(TAIL_TOKENIZERS), tail_weights, k=int(n * tail_share) + 10)
        author_picks = rnd.choices(authors, author_weights, k=n)
        tp = 0
        for i in range(1, n + 1):
            r = rnd.random()
            if r < 0.06:  # no tokenizer
                author = author_picks[i - 1]
                yield (i, f"{author}/m{i}", author, "no_tokenizer", None, None, None, None, None, None, 0,
                       None, 0, None)
                continue
            if r < 0.06 + (1 - 0.06) * sum(shares):
                tok = toks[rnd.choices(majors_idx, shares)[0]]
            else:
                tok = toks[len(MAJOR) + tail_picks[tp]]
                tp += 1
            vs = rnd.choice(tok[4])
            params = None if rnd.random() < 0.1 else int(10 ** rnd.triangular(7.0, 11.5, 9.3))
            downloads = int(rnd.paretovariate(0.8)) - 1
            base = None
            if i > 1 and rnd.random() < 0.5:
                base = json.dumps([f"{author_picks[i - 1]}/m{rnd.randint(1, i - 1)}"])
            gated = "auto" if rnd.random() < 0.05 else None
            disabled = 1 if rnd.random() < 0.001 else 0
            author = author_picks[i - 1]
            yield (i, f"{author}/m{i}", author, "ok", tok[0], vs, vs, params, downloads, base, disabled,
                   gated, int(rnd.random() < 0.6), tok[1])

    batch = []
    sql = ("INSERT INTO repos (id, repo_id, author, status, tokenizer_id, vocab_size, "
           "vocab_size_transformers, params, downloads, base_models, disabled, gated, is_chat, family) "
           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
    for row in rows():
        batch.append(row)
        if len(batch) >= 50_000:
            conn.executemany(sql, batch)
            batch.clear()
    conn.executemany(sql, batch)
    # Named targets: one big repo in each of three big classes, and one in the tail.
    targets = []
    # Their config facts too (model type, hidden size, layers), so that `query --method all` answers them.
    for tok_id, vs, name, mtype in ((1, 152064, "Qwen/Qwen2.5-7B-Instruct", "qwen2"),
                                    (2, 128256, "meta-llama/Llama-3.1-8B", "llama"),
                                    (3, 32768, "mistralai/Mistral-7B-v0.3", "mistral"),
                                    (len(MAJOR) + 1, None, "tail/target", "llama")):
        if vs is None:
            vs = conn.execute("SELECT vocab_size FROM repos WHERE tokenizer_id = ? LIMIT 1",
                              (tok_id,)).fetchone()
            vs = vs[0] if vs else 50000
        conn.execute(
            "INSERT INTO repos (repo_id, author, status, tokenizer_id, vocab_size, vocab_size_transformers, "
            "params, downloads, disabled, is_chat, family, model_type, architectures, hidden_size, num_hidden_layers) "
            "VALUES (?, ?, 'ok', ?, ?, ?, ?, 1000000, 0, 1, ?, ?, ?, 4096, 32)",
            (name, name.split("/")[0], tok_id, vs, vs, 8_000_000_000, toks[tok_id - 1][1], mtype,
             json.dumps([mtype.capitalize() + "ForCausalLM"])))
        targets.append(name)
    # Engine facts as compute derives them from stored blobs: one file set and one GGUF vocabulary per
    # tokenizer here (llama.cpp's class key is the GGUF signature).
    conn.executemany("INSERT INTO file_sets (id, key, files, status, tokenizer_id) VALUES (?, ?, '{}', 'ok', ?)",
                     [(t[0], _sha(t[0], "files"), t[0]) for t in toks])
    conn.executemany(
        "INSERT INTO engine_facts (file_set_id, config_blob, has_vision_config, gguf_converted, gguf_n_vocab, "
        "gguf_signature) VALUES (?, '', 0, 1, ?, ?)", [(t[0], t[3], _sha(t[0], "gguf")) for t in toks])
    conn.execute("UPDATE repos SET file_set_id = tokenizer_id, config_blob = '' WHERE tokenizer_id IS NOT NULL")
    conn.commit()
    conn.close()
    return targets


def indexer_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "indexer"
    return [str(exe)] if exe.exists() else [shutil.which("indexer") or "indexer"]


def timed(cmd: list[str], **kw) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return time.perf_counter() - t0, proc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repos", type=int, default=1_000_000)
    ap.add_argument("--dir", help="Where to put the catalogs (default: a temporary directory).")
    ap.add_argument("--queries", type=int, default=5, help="Calls per target (median reported).")
    args = ap.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="indexer-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, INDEXER_TOKENS=str(work / "tokens"))
    ok = True

    def line(name, value, unit, target=None, better="<=", extra=""):
        nonlocal ok
        status = ""
        if target is not None:
            passed = value <= target if better == "<=" else value >= target
            ok &= passed
            status = f"  target {better} {target:g} {unit}: {'PASS' if passed else 'FAIL'}"
        print(f"{name:44} {value:10.3f} {unit}{status}{extra}", flush=True)

    big = work / "scale.db"
    t0 = time.perf_counter()
    targets = generate(big, args.repos)
    print(f"generated {args.repos} repos in {time.perf_counter() - t0:.1f} s at {big}", flush=True)

    wall, proc = timed([*indexer_cmd(), "compute", "--json", "--db", str(big)], env=env)
    if proc.returncode:
        sys.exit(f"compute failed: {proc.stderr}")
    rss_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 / 1e9
    stats = json.loads(proc.stdout)

    small = work / "scale-small.db"
    n_small = max(1000, args.repos // 10)
    generate(small, n_small, seed=1)
    wall_small, proc_small = timed([*indexer_cmd(), "compute", "--json", "--db", str(small)], env=env)
    if proc_small.returncode:
        sys.exit(f"compute (small) failed: {proc_small.stderr}")

    print(f"\ncompute: {stats['repos']} ok repos, classes {stats['classes']}")
    line(f"compute wall, {args.repos} repos", wall, "s", 60.0,
         extra=f"  ({wall / wall_small:.1f}x the {n_small}-repo run's {wall_small:.2f} s; "
               f"{args.repos // n_small}x the repos)")
    line("compute peak RSS", rss_gb, "GB", 2.0)
    agreement = stats.get("agreement") or {}
    line("  of which the agreement step", agreement.get("seconds", 0.0), "s",
         extra=f"  ({agreement.get('flagged', 0)} tokenizers flagged, {agreement.get('agree_by_base', 0)} agree by "
               f"base vocabulary, {agreement.get('measured', 0)} pairs measured; "
               f"{agreement.get('seconds', 0.0) / wall:.1%} of compute)")

    # Queries as an installed package runs them: its modules compiled once (a bytecode cache, warmed by one query),
    # not recompiled on every run as PYTHONDONTWRITEBYTECODE would make them (benchmarks/query_path.py does the same).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    timed([*indexer_cmd(), "query", "--target", targets[0], "--db", str(big)], env=env)
    base = [timed([sys.executable, "-c", "pass"], env=env)[0] for _ in range(args.queries)]
    baseline = statistics.median(base)
    print(f"\nbaseline `python -c pass`: {baseline * 1000:.1f} ms (median of {args.queries})")
    for target in targets:
        for flags in ([], ["--near-misses", "--json"], ["--engine", "llama.cpp"]):
            times = []
            for _ in range(args.queries):
                t, p = timed([*indexer_cmd(), "query", "--target", target, "--db", str(big), *flags], env=env)
                if p.returncode:
                    sys.exit(f"query {target} failed: {p.stderr}")
                times.append(t)
            med = statistics.median(times)
            label = f"query {target} {' '.join(flags)}".strip()
            line(label[:44], med, "s", 0.5, extra=f"  ({med / baseline:.1f}x python startup)")
    print(f"\nbest SGLang draft for {targets[0]}:")
    print(subprocess.run([*indexer_cmd(), "query", "--target", targets[0], "--db", str(big), "--limit", "5"],
                         capture_output=True, text=True, env=env).stdout)
    print("ALL TARGETS MET" if ok else "SOME TARGETS MISSED")
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
