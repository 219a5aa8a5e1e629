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
from indexer.engines.llamacpp import speculative_compatible  # noqa: E402
from indexer.gguf.file import read_gguf  # noqa: E402
from indexer.gguf.predict import LLAMA_TOKEN_NULL  # noqa: E402

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

# run with --libllama's python: common_speculative_are_compatible (common/speculative.cpp:67-130, transcribed
# as the oracle did) on the values libllama reads from the two files; prints true/false
LIBLLAMA_PAIR = r"""
import sys
import llama_cpp as L
L.llama_backend_init()
v = []
for path in sys.argv[1:3]:
    p = L.llama_model_default_params(); p.vocab_only = True
    m = L.llama_model_load_from_file(path.encode(), p)
    if not m:
        print("false"); sys.exit()
    v.append(L.llama_model_get_vocab(m))
t, d = v
ok = L.llama_vocab_type(t) == L.llama_vocab_type(d)
ok = ok and L.llama_vocab_get_add_bos(t) == L.llama_vocab_get_add_bos(d) and not (
    L.llama_vocab_get_add_bos(t) and L.llama_vocab_bos(t) != L.llama_vocab_bos(d))
ok = ok and L.llama_vocab_get_add_eos(t) == L.llama_vocab_get_add_eos(d) and not (
    L.llama_vocab_get_add_eos(t) and L.llama_vocab_eos(t) != L.llama_vocab_eos(d))
nt, nd = L.llama_vocab_n_tokens(t), L.llama_vocab_n_tokens(d)
ok = ok and abs(nt - nd) <= 128 and all(
    L.llama_vocab_get_text(t, i) == L.llama_vocab_get_text(d, i) for i in range(5, min(nt, nd)))
print("true" if ok else "false")
"""
_SPM, _QWEN, _GPT2 = ("Josue1855__vicuna", "infinityarpan__qwen-25-api__Qwen2.5-0.5B-Instruct",
                      "CHJCHJCH__microsoft-DialoGPT-small")
VARIANT_PAIRS = [(_SPM, v) for v in ("spm-renamed-100", "spm-renamed-3", "spm-no-add-bos", "spm-add-eos",
                                      "spm-eos-32000", "spm-empty-200", "spm-nul-unique-300", "spm-nul-first-300",
                                      "spm-types-normal",
                                      "spm-types-control", "spm-no-scores")] + \
                [(_QWEN, v) for v in ("qwen-pre-llama-bpe", "qwen-pre-llama-bpe-no-add-bos", "qwen-renamed-im-end",
                                       "qwen-eos-im-end", "qwen-pre-gemma4", "qwen-no-add-bos", "qwen-no-pre",
                                       "qwen-types-normal", "qwen-no-bos-eos")] + \
                [(_GPT2, "gpt2-add-bos"), (_GPT2, "gpt2-no-bos-eos")]


def pair_truth(python: str, target: Path, draft: Path) -> bool:
    r = subprocess.run([python, "-c", LIBLLAMA_PAIR, str(target), str(draft)], capture_output=True, text=True)
    return r.stdout.strip().splitlines()[-1] == "true"


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


def variants(out: Path) -> list[Path]:
    """Real converter files rewritten the ways real conversions and hand edits differ (gguf-py's own
    gguf_new_metadata.copy_with_new_metadata, as ``gguf_new_metadata.py`` / ``gguf_set_metadata.py`` do)."""
    from gguf import GGUFReader, GGUFValueType, GGUFWriter
    from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

    S, U32, I32, BOOL, U8 = (GGUFValueType.STRING, GGUFValueType.UINT32, GGUFValueType.INT32, GGUFValueType.BOOL,
                             GGUFValueType.UINT8)
    tk = "tokenizer.ggml."
    spm, qwen, gpt2 = _SPM, _QWEN, _GPT2

    def tokens(name, edit):
        t = list(GGUFReader(out / f"{name}.gguf").fields[tk + "tokens"].contents())
        edit(t)
        return {tk + "tokens": MetadataDetails(GGUFValueType.ARRAY, t, sub_type=S)}

    def types(name, value, sub=I32, n=None, edit=None):
        t = list(GGUFReader(out / f"{name}.gguf").fields[tk + "token_type"].contents())
        t = [value] * len(t) if value is not None else t
        for i, typ in (edit or {}).items():
            t[i] = typ
        return {tk + "token_type": MetadataDetails(GGUFValueType.ARRAY, t[:n] if n else t, sub_type=sub)}

    def rename(i, text):
        def edit(t):
            t[i] = text
        return edit

    cases = {  # variant name: (base, new or changed keys, removed keys[, general.architecture])
        "spm-no-add-bos": (spm, {}, [tk + "add_bos_token"]),
        "spm-no-add-eos-no-bos-id": (spm, {}, [tk + "add_eos_token", tk + "bos_token_id"]),
        "spm-add-eos": (spm, {tk + "add_eos_token": MetadataDetails(BOOL, True)}, []),
        "spm-eos-32000": (spm, {tk + "eos_token_id": MetadataDetails(U32, 32000)}, []),
        "spm-eos-beyond": (spm, {tk + "eos_token_id": MetadataDetails(U32, 40000)}, []),
        "spm-eos-int32": (spm, {tk + "eos_token_id": MetadataDetails(I32, 2)}, []),
        "spm-add-bos-uint8": (spm, {tk + "add_bos_token": MetadataDetails(U8, 1)}, []),
        "spm-pad-int32": (spm, {tk + "padding_token_id": MetadataDetails(I32, 0)}, []),
        "spm-add-prefix-uint8": (spm, {tk + "add_space_prefix": MetadataDetails(U8, 1)}, []),
        "spm-renamed-100": (spm, tokens(spm, rename(100, "RENAMED")), []),
        "spm-renamed-3": (spm, tokens(spm, rename(3, "RENAMED")), []),
        "spm-empty-200": (spm, tokens(spm, rename(200, "")), []),
        "spm-nul-300": (spm, tokens(spm, rename(300, "ab\0cd")), []),
        "spm-nul-unique-300": (spm, tokens(spm, rename(300, "zqxjzqxj\0cd")), []),
        "spm-nul-first-300": (spm, tokens(spm, rename(300, "\0cd")), []),
        "spm-duplicate": (spm, tokens(spm, rename(100, "<s>")), []),
        "spm-type-byte-100": (spm, types(spm, None, edit={100: 6}), []),
        "qwen-type-byte-64": (qwen, types(qwen, None, edit={64: 6}), []),
        "qwen-type-control-64": (qwen, types(qwen, None, edit={64: 3}), []),
        "spm-types-normal": (spm, types(spm, 1), []),
        "spm-types-control": (spm, types(spm, 3), []),
        "spm-types-uint32": (spm, types(spm, None, GGUFValueType.UINT32), []),
        "spm-types-short": (spm, types(spm, None, n=100), []),
        "spm-no-scores": (spm, {}, [tk + "scores"]),
        "spm-model-bert": (spm, {tk + "model": MetadataDetails(S, "bert")}, []),
        "qwen-no-add-bos": (qwen, {}, [tk + "add_bos_token"]),
        "qwen-pre-llama-bpe": (qwen, {tk + "pre": MetadataDetails(S, "llama-bpe")}, []),
        "qwen-pre-llama-bpe-no-add-bos": (qwen, {tk + "pre": MetadataDetails(S, "llama-bpe")},
                                          [tk + "add_bos_token"]),
        "qwen-pre-chatglm": (qwen, {tk + "pre": MetadataDetails(S, "chatglm-bpe")}, [tk + "bos_token_id"]),
        "qwen-pre-gemma4": (qwen, {tk + "pre": MetadataDetails(S, "gemma4")}, []),
        "qwen-pre-empty": (qwen, {tk + "pre": MetadataDetails(S, "")}, []),
        "qwen-no-pre": (qwen, {}, [tk + "pre"]),
        "qwen-pre-unknown": (qwen, {tk + "pre": MetadataDetails(S, "my-own-pre")}, []),
        "qwen-no-merges": (qwen, {}, [tk + "merges"]),
        "qwen-no-bos-eos": (qwen, {}, [tk + "bos_token_id", tk + "eos_token_id"]),
        "qwen-eos-im-end": (qwen, {tk + "eos_token_id": MetadataDetails(U32, 151643)}, []),
        "qwen-renamed-im-end": (qwen, tokens(qwen, rename(151645, "<|im_stop|>")), []),
        "qwen-types-normal": (qwen, types(qwen, 1), []),
        "gpt2-no-bos-eos": (gpt2, {}, [tk + "bos_token_id", tk + "eos_token_id"]),
        "gpt2-add-bos": (gpt2, {tk + "add_bos_token": MetadataDetails(BOOL, True)}, []),
        "spm-arch-unknown": (spm, {}, [], "qwen9next"),  # a newer llama.cpp's architecture
        "qwen-arch-qwen3": (qwen, {}, [], "qwen3"),
    }
    written = []
    vdir = out / "variants"
    vdir.mkdir(exist_ok=True)
    for name, (base, new, removed, *arch) in cases.items():
        reader = GGUFReader(out / f"{base}.gguf")
        arch = arch[0] if arch else reader.fields["general.architecture"].contents()
        path = vdir / f"{name}.gguf"
        copy_with_new_metadata(reader, GGUFWriter(str(path), arch=arch), dict(new), removed)
        written.append(path)
    return written


def unit_files(out: Path) -> list[Path]:
    """The small files tests/test_gguf_header.py builds with GGUFWriter (every refusal case, and loads): libllama
    must agree with the reader on them too, or the unit tests assert something libllama does not do."""
    sys.path.insert(0, str(ROOT / "tests"))
    import test_gguf_header as t
    from gguf.constants import TokenType
    from ggufkit import bpe_tokens, write_gguf

    mark = next(m for m in t.test_what_libllama_refuses_to_load.pytestmark if m.name == "parametrize")
    types = [TokenType.CONTROL] * 5 + [TokenType.NORMAL] * 295
    byte9 = types[:9] + [TokenType.BYTE] + types[10:]
    kws = [kw for kw, _ in mark.args[1]] + [
        dict(tokens=bpe_tokens(300, {9: "zz\0x", 8: "\0x"})), dict(tokens=bpe_tokens(300, {9: "tok7\0x"})),
        dict(tokens=bpe_tokens(300, {9: "a"}), types=byte9), dict(types=byte9),
        dict(model="bert", pre=None, types=byte9), {}, dict(pre=None), dict(pre="glm4", bos=3),
        dict(model="t5", pre=None, scores=[0.0] * 300), dict(bos=100000), dict(tokens=bpe_tokens(8), merges=["a b"]),
        dict(tokens=bpe_tokens(300, {9: ""}))]
    (out / "unit").mkdir(exist_ok=True)
    return [write_gguf(out / "unit" / f"case{i:02d}.gguf", **kw) for i, kw in enumerate(kws)]


def check_cli(target: Path, draft: Path) -> bool:
    """``indexer check TARGET.gguf DRAFT.gguf --engine llama.cpp --json``: does llama.cpp speculate?"""
    r = CliRunner().invoke(cli, ["check", str(target), str(draft), "--engine", "llama.cpp", "--json"])
    return bool(json.loads(r.output)["verdicts"]["llama.cpp"]["accepted"])


def libllama_facts(python: str, files: list[Path]) -> dict[str, dict]:
    facts = {}
    for f in files:  # one process per file: a GGML_ASSERT aborts the process
        r = subprocess.run([python, "-c", LIBLLAMA, str(f)], capture_output=True, text=True)
        facts.update(json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else
                     {str(f): {"loaded": False, "aborted": r.stderr.strip().splitlines()[-1:]}})
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
    ap.add_argument("--variants", action="store_true", help="also write edited copies into OUT/variants (with "
                    "--libllama they are compared too)")
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
    extra = variants(args.out) if args.variants else sorted(args.out.glob("variants/*.gguf"))
    if args.libllama:
        files = sorted(args.out.glob("*.gguf")) + extra + unit_files(args.out)
        facts = libllama_facts(args.libllama, files)
        lib_bad = 0
        for f in files:
            truth = facts[str(f)]
            try:
                mine = ours(f)
            except Exception as e:  # our reader refusing a file libllama loads is a difference
                mine = {"error": str(e)}
            if not truth.get("loaded"):
                same = not mine.get("converted")
                print(f"{'same' if same else 'DIFF'} {f.name}: libllama does not load it; ours "
                      f"{mine.get('error')!r}")
                lib_bad += not same
                continue
            problems = diff(mine, truth)
            lib_bad += bool(problems)
            print(f"{'DIFF' if problems else 'same'} {f.name} (libllama)" + "".join(f"\n    {p}" for p in problems))
        print(f"libllama: {len(files)} files, {lib_bad} with differences")
        bad += lib_bad
        names = {f.stem: f for f in files}
        for target, draft in VARIANT_PAIRS:  # common_speculative_are_compatible on libllama's values
            truth = pair_truth(args.libllama, names[target], names[draft])
            mine = check_cli(names[target], names[draft])
            bad += mine != truth
            print(f"{'same' if mine == truth else 'DIFF'} pair {target} <- {draft}: ours {mine} libllama {truth}")
    else:
        for f in extra:
            try:
                d = ours(f)
                print(f"{f.name}: " + ", ".join(f"{k}={d.get(k)!r}" for k in FIELDS + ("error",)))
            except Exception as e:
                print(f"{f.name}: {e}")
    return 1 if bad or pair_bad else 0


if __name__ == "__main__":
    sys.exit(main())
