"""Write tests/data/gguf_hybrid_oracle.json: what llama.cpp's own converter classes write for the state-space,
hybrid and Gemma 3n/4 cases of tests/hybridkit.py, read back with indexer/gguf/file.py.

Needs the converter environment of docs/llamacpp.md ("Checked on real files": llama.cpp@0c1e57098 from the
llama-cpp-python 0.3.36 sdist, torch 2.13.0+cpu, transformers 4.57.6, the vendored gguf-py):

    python benchmarks/gguf_hybrid_real.py --python /tmp/cvenv/bin/python \
        --llama-cpp /tmp/src-llama-cpp-python/llama_cpp_python-0.3.36/vendor/llama.cpp

Each case runs in its own process as convert_hf_to_gguf.py does up to the model class (``load_hparams``,
``get_model_architecture``, ``get_model_class``, the class's ``__init__``), then ``set_vocab()`` and the
writer's header and key/value section. ``set_gguf_parameters`` is skipped: its per-architecture hyperparameter
checks are not part of the vocabulary path the indexer models (docs/llamacpp.md), and the written configs carry
only the fields the vocabulary path and the classes' ``__init__`` read.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from gguf_real import LIBLLAMA  # noqa: E402
from hybridkit import CASES, ORACLE, write_case  # noqa: E402

from indexer.gguf.file import read_gguf  # noqa: E402

DRIVER = r"""
import sys
from pathlib import Path
llama, d, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
sys.path.insert(0, str(llama))
import convert_hf_to_gguf as c
import gguf
hparams = c.ModelBase.load_hparams(d, False)
arch = c.get_model_architecture(hparams, c.ModelType.TEXT)
m = c.get_model_class(arch)(d, gguf.LlamaFileType.ALL_F32, out)
m.set_vocab()
w = m.gguf_writer
w.write_header_to_file(path=out)
w.write_kv_data_to_file()
w.close()
"""
FIELDS = ("converted", "error", "vocab_type", "n_vocab", "add_bos", "add_eos", "bos", "eos", "pre", "tokens_sha256")


def run(python: str, llama_cpp: Path, d: Path, out: Path) -> dict:
    """The case's facts as libllama would read the written file, or the converter's last error line."""
    r = subprocess.run([python, "-c", DRIVER, str(llama_cpp), str(d), str(out)], capture_output=True, text=True)
    if r.returncode != 0 or not out.exists():
        lines = [x for x in (r.stderr or r.stdout).splitlines() if x.strip()]
        return {"converted": False, "error": lines[-1] if lines else f"exit {r.returncode}"}
    facts = read_gguf(out).to_dict()
    return {k: facts.get(k) for k in FIELDS}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", required=True, help="the converter environment's python")
    ap.add_argument("--llama-cpp", required=True, type=Path, help="llama.cpp tree (convert_hf_to_gguf.py)")
    ap.add_argument("--libllama", help="a python with llama_cpp (llama-cpp-python 0.3.36 from the sdist): also "
                    "load each written file with the real libllama and compare its facts with file.py's")
    ap.add_argument("cases", nargs="*", help="only these cases (the others keep their recorded result)")
    args = ap.parse_args()
    results = json.loads(ORACLE.read_text())["cases"] if args.cases and ORACLE.is_file() else {}
    with tempfile.TemporaryDirectory() as tmp:
        written = {}
        for name in args.cases or CASES:
            d = write_case(Path(tmp), name)
            results[name] = run(args.python, args.llama_cpp, d, Path(tmp) / f"{name}.gguf")
            if results[name]["converted"]:
                written[name] = Path(tmp) / f"{name}.gguf"
            print(name, json.dumps(results[name])[:160], flush=True)
        if args.libllama and written:
            r = subprocess.run([args.libllama, "-c", LIBLLAMA, *map(str, written.values())], capture_output=True,
                               text=True)
            real = json.loads(r.stdout.strip().splitlines()[-1])
            types = {1: "spm", 2: "bpe", 3: "wpm", 4: "ugm"}
            for name, path in written.items():
                got = dict(real[str(path)], vocab_type=types.get(real[str(path)].get("vocab_type")))
                diff = {k: (results[name][k], got.get(k)) for k in FIELDS[2:] if results[name][k] != got.get(k)}
                print(f"libllama {name}: {'same' if not diff else diff}", flush=True)
    ORACLE.parent.mkdir(exist_ok=True)
    ORACLE.write_text(json.dumps({"llama.cpp": "0c1e57098 (llama-cpp-python 0.3.36 sdist)",
                                  "how": "benchmarks/gguf_hybrid_real.py",
                                  "cases": {n: results[n] for n in CASES if n in results}}, indent=1) + "\n")


if __name__ == "__main__":
    main()
