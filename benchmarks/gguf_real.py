"""Our GGUF reader against real converter output: regenerate vocab-only GGUF files with llama.cpp's own
convert_hf_to_gguf.py and compare what indexer/gguf_file.py reads with what the real libllama reported.

Needs a separate environment with the converter (NOT the project's .venv; see docs/llamacpp.md "Real files"):
llama.cpp@0c1e57098 from the llama-cpp-python 0.3.36 sdist, torch 2.13.0+cpu, transformers 4.57.6 and the
vendored gguf-py, the versions oracle-engines.json records for ``llama.cpp_converter_env``.

    python benchmarks/gguf_real.py --convert --python /tmp/cvenv/bin/python \
        --llama-cpp /tmp/lcp/llama_cpp_python-0.3.36/vendor/llama.cpp --out /tmp/real
    python benchmarks/gguf_real.py --out /tmp/real            # compare only (files already written)
    python benchmarks/gguf_real.py --out /tmp/real --libllama /tmp/llvenv/bin/python   # also ask libllama

Compared per directory: vocab_type_name, n_vocab, add_bos, add_eos, bos, eos, pre, tokens_sha256 against
oracle-engines.json models[dir].gguf (libllama, vocab_only), and ``speculative_compatible`` on every
llama.cpp pair of oracle-engines.json pairs["llama.cpp"] whose both sides converted. With ``--libllama`` a
python that has llama_cpp (llama-cpp-python 0.3.36 built from the sdist) also loads each file (including any
``*.gguf`` variants in --out) and its answers are compared the same way.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from indexer.cli import cli  # noqa: E402
from indexer.gguf import LLAMA_TOKEN_NULL, speculative_compatible  # noqa: E402
from indexer.gguf_file import read_gguf  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
FIELDS = ("vocab_type_name", "n_vocab", "add_bos", "add_eos", "bos", "eos", "pre", "tokens_sha256")
VTYPES = {0: "none", 1: "spm", 2: "bpe", 3: "wpm", 4: "ugm", 5: "rwkv", 6: "plamo2"}  # include/llama.h

# run with --libllama's python: the facts libllama reports for each file given (vocab_only)
LIBLLAMA = r"""
import hashlib, json, sys, ctypes
import llama_cpp as L
L.llama_backend_init()
out = {}
for path in sys.argv[1:]:
    p = L.llama_model_default_params(); p.vocab_only = True
    m = L.llama_model_load_from_file(path.encode(), p)
    if not m:
        out[path] = {"loaded": False}; continue
    v = L.llama_model_get_vocab(m)
    n = L.llama_vocab_n_tokens(v)
    h = hashlib.sha256()
    for i in range(n):
        h.update(L.llama_vocab_get_text(v, i) + b"\0")
    pre = None
    buf = ctypes.create_string_buffer(256)
    if L.llama_model_meta_val_str(m, b"tokenizer.ggml.pre", buf, 256) >= 0:
        pre = buf.value.decode()
    out[path] = {"loaded": True, "vocab_type": L.llama_vocab_type(v), "n_vocab": n,
                 "add_bos": bool(L.llama_vocab_get_add_bos(v)), "add_eos": bool(L.llama_vocab_get_add_eos(v)),
                 "bos": L.llama_vocab_bos(v), "eos": L.llama_vocab_eos(v), "pre": pre,
                 "tokens_sha256": h.hexdigest()}
    L.llama_model_free(m)
print(json.dumps(out))
"""


def convert(python: str, llama_cpp: Path, directory: Path, out: Path) -> str | None:
    """convert_hf_to_gguf.py --vocab-only; None when it wrote the file, else its last error line."""
    r = subprocess.run([python, str(llama_cpp / "convert_hf_to_gguf.py"), "--vocab-only", "--outfile", str(out),
                        str(directory)], capture_output=True, text=True)
    if r.returncode == 0 and out.exists():
        return None
    lines = [x for x in (r.stderr or r.stdout).splitlines() if x.strip()]
    return lines[-1] if lines else f"exit {r.returncode}"


def ours(path: Path) -> dict:
    d = read_gguf(path).to_dict()
    d["vocab_type_name"] = d.get("vocab_type")
    return d


def diff(mine: dict, truth: dict) -> list[str]:
    return [f"{k}: ours {mine.get(k)!r} libllama {truth.get(k)!r}" for k in FIELDS if mine.get(k) != truth.get(k)]


def check_cli(target: Path, draft: Path) -> bool:
    """``indexer check TARGET.gguf DRAFT.gguf --engine llama.cpp --json``: does llama.cpp speculate?"""
    r = CliRunner().invoke(cli, ["check", str(target), str(draft), "--engine", "llama.cpp", "--json"])
    return bool(json.loads(r.output)["verdicts"]["llama.cpp"]["accepted"])


def libllama_facts(python: str, files: list[Path]) -> dict[str, dict]:
    r = subprocess.run([python, "-c", LIBLLAMA, *map(str, files)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"libllama run failed: {r.stderr.strip().splitlines()[-1:]}")
    facts = json.loads(r.stdout.strip().splitlines()[-1])
    for d in facts.values():
        if d.get("loaded"):
            d["vocab_type_name"] = VTYPES.get(d["vocab_type"], str(d["vocab_type"]))
            d["bos"] = d["bos"] if d["bos"] >= 0 else LLAMA_TOKEN_NULL
            d["eos"] = d["eos"] if d["eos"] >= 0 else LLAMA_TOKEN_NULL
    return facts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/real"))
    ap.add_argument("--convert", action="store_true", help="(re)write the vocab-only GGUF files first")
    ap.add_argument("--python", default=sys.executable, help="the converter environment's python")
    ap.add_argument("--llama-cpp", type=Path, help="vendor/llama.cpp of the llama-cpp-python 0.3.36 sdist")
    ap.add_argument("--libllama", help="a python with llama_cpp built from the same sdist: also ask libllama")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    args = ap.parse_args()
    oracle = json.loads((args.corpus / "oracle-engines.json").read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    bad = 0
    converted: dict[str, object] = {}
    for name, entry in sorted(oracle["models"].items()):
        truth = entry.get("gguf") or {}
        path = args.out / f"{name}.gguf"
        if args.convert:
            if not args.llama_cpp:
                sys.exit("--convert needs --llama-cpp")
            path.unlink(missing_ok=True)
            err = convert(args.python, args.llama_cpp, args.corpus / "models" / name, path)
            if (err is None) != bool(truth.get("converted")):
                bad += 1
                print(f"DIFF {name}: converter {'wrote' if err is None else 'refused: ' + err}, "
                      f"oracle converted={truth.get('converted')}")
        if not truth.get("loaded"):
            print(f"skip {name}: the oracle has no GGUF ({truth.get('error', 'not converted')})")
            continue
        if not path.exists():
            print(f"MISSING {name}: {path} (run with --convert)")
            bad += 1
            continue
        mine = ours(path)
        problems = diff(mine, truth)
        bad += bool(problems)
        print(f"{'DIFF' if problems else 'same'} {name}" + "".join(f"\n    {p}" for p in problems))
        converted[name] = read_gguf(path).vocab
    pairs = oracle["pairs"]["llama.cpp"]
    n_pairs = pair_bad = 0
    for verdict, lists in (("accept", pairs["accept"]), ("reject", pairs["reject"])):
        for target, draft, *why in lists:  # a rejected pair carries libllama's reason third
            if target in converted and draft in converted:
                n_pairs += 1
                ok, reasons = speculative_compatible(converted[target], converted[draft])
                cli = check_cli(args.out / f"{target}.gguf", args.out / f"{draft}.gguf")
                if ok != (verdict == "accept") or cli != (verdict == "accept"):
                    pair_bad += 1
                    print(f"PAIR DIFF {target} <- {draft}: ours {ok} (indexer check: {cli}) oracle {verdict} "
                          f"{why} {reasons[:1]}")
    print(f"{len(converted)} files read, {bad} with differences; {n_pairs} llama.cpp pairs, {pair_bad} differ")
    if args.libllama:
        files = sorted(args.out.glob("*.gguf"))
        facts = libllama_facts(args.libllama, files)
        lib_bad = 0
        for f in files:
            truth = facts[str(f)]
            try:
                mine = ours(f)
            except Exception as e:  # our reader refusing a file libllama loads is a difference
                mine = {"error": str(e)}
            if not truth.get("loaded"):
                same = mine.get("converted") is False or "error" in mine
                print(f"{'same' if same else 'DIFF'} {f.name}: libllama does not load it; ours "
                      f"{mine.get('error')!r}")
                lib_bad += not same
                continue
            problems = diff(mine, truth)
            lib_bad += bool(problems)
            print(f"{'DIFF' if problems else 'same'} {f.name} (libllama)" + "".join(f"\n    {p}" for p in problems))
        print(f"libllama: {len(files)} files, {lib_bad} with differences")
        bad += lib_bad
    return 1 if bad or pair_bad else 0


if __name__ == "__main__":
    sys.exit(main())
