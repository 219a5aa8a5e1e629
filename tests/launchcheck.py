"""Check a printed launch command against the flag table of the engine release it names
(indexer/engines/data/flags, read from the engines' source by indexer.engines.extract_flags), and against the setup
whose speed-up was printed beside it: every flag known and not removed, every choice one the source lists, and the
values the setup's (sources, quantizations, draft tokens).

``check(setup, steps, files)`` -> (errors of the flags, differences from the setup); both empty: valid and running
the estimated setup. ``files`` (``catalog_files``): the GGUF repos' model files in the catalog the setup came from,
so that a ``-hf REPO:TAG`` (or LM Studio's download at the tag) must pick a file the repo has, at the setup's type.
"""

from __future__ import annotations

import ast
import json
import os
import shlex

from indexer.engines import ENGINES, flags
from indexer.engines.lmstudio import LMS, MODELS, SDK, on_gguf
from indexer.engines.setup import DIR, FILE, GGUF, HF, MLX, from_dict, is_float, requantized
from indexer.gguf.names import hf_matches
from indexer.speed.quant import from_gguf_file_type

MLX_RELEASE = ENGINES["mlx"].release

# The argv prefix of each program, and the table that parses it: (engine, program) or, for huggingface_hub's CLI,
# None (checked by its own click command below).
PROGRAMS = (
    (("llama-server",), ("llama.cpp", "llama-server")),
    (("python", "convert_hf_to_gguf.py"), ("llama.cpp", "convert_hf_to_gguf.py")),
    (("llama-quantize",), ("llama.cpp", "llama-quantize")),
    (("python", "-m", "sglang.launch_server"), ("sglang", "sglang.launch_server")),
    (("vllm", "serve"), ("vllm", "vllm serve")),
    (("mlx_lm.generate",), ("mlx", "mlx_lm.generate")),
    (("mlx_lm.server",), ("mlx", "mlx_lm.server")),
    (("mlx_lm.convert",), ("mlx", "mlx_lm.convert")),
    (("lms", "import"), ("lms", "lms import")),
    (("hf", "download"), None),
)
LLAMACPP_RELEASE = "0c1e57098"  # the convert and quantize steps are llama.cpp's, whatever engine runs the file
OTHER_RELEASES = {"llama.cpp": LLAMACPP_RELEASE, "lms": LMS, "mlx": MLX_RELEASE}  # steps of another engine's tools


def hf_download_options() -> set[str]:
    """huggingface_hub's ``hf download`` options, from its installed CLI (a click command, loaded lazily)."""
    import click
    from huggingface_hub.cli.hf import app

    cmd = app.get_command(click.Context(app), "download")
    cmd = cmd.materialize() if hasattr(cmd, "materialize") else cmd
    return {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts)}


_HF_OPTIONS: set[str] | None = None


def words_of(step: str) -> list[str]:
    """The words of a step, without the note a launch may end with (``  # ...``, a shell comment)."""
    return shlex.split(step.split("  # ", 1)[0])


def program_of(argv: list[str], engine: str, release: str) -> tuple[tuple | None, list[str], dict | None]:
    """(the program's key, its arguments, its table) for one step."""
    for prefix, key in PROGRAMS:
        if tuple(argv[:len(prefix)]) == prefix:
            if key is None:
                return prefix, argv[len(prefix):], None
            eng, prog = key
            rel = release if eng == engine else OTHER_RELEASES.get(eng)
            return prefix, argv[len(prefix):], flags.program(eng, rel, prog)
    return None, argv, None


def check_hf(args: list[str]) -> list[str]:
    global _HF_OPTIONS
    if _HF_OPTIONS is None:
        _HF_OPTIONS = hf_download_options()
    if not _HF_OPTIONS:
        return []
    return [f"hf download: unknown option {a}" for a in args if a.startswith("-") and a not in _HF_OPTIONS]


def catalog_files(db: str) -> dict[str, list[tuple[str, str | None]]]:
    """Every GGUF repo's model files in a SQLite catalog: repo id -> [(path, the type its name says)]."""
    import sqlite3

    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT r.repo_id, g.path, g.quant FROM gguf_files g JOIN repos r ON r.id = g.repo_pk "
                         "ORDER BY r.repo_id, g.path").fetchall()
    out: dict[str, list[tuple[str, str | None]]] = {}
    for repo, path, quant in rows:
        out.setdefault(repo, []).append((path, quant))
    return out


def check(setup_d: dict, steps: list[str], files: dict | None = None) -> tuple[list[str], list[str]]:
    """(flag errors, differences from the setup) of the steps printed for ``setup_d`` (a ``setup`` JSON object)."""
    setup = from_dict(setup_d)
    errs: list[str] = []
    parsed: list[tuple[tuple, list[str], object]] = []
    for step in steps:
        argv = words_of(step)
        key, args, table = program_of(argv, setup.engine, setup.release)
        if key is None:
            if setup.engine in ("transformers", "lmstudio") and argv[:2] == ["python", "-c"]:
                parsed.append((("python", "-c"), argv[2:], None))
                continue
            errs.append(f"unknown program: {step[:60]}")
            continue
        if key == ("hf", "download"):
            errs += check_hf(args)
            parsed.append((key, args, None))
            continue
        if table is None:
            errs.append(f"no flag table for {' '.join(key)} at {setup.engine} {setup.release}")
            continue
        p = flags.parse(table, args)
        errs += [f"{' '.join(key)}: {e}" for e in p.errors]
        parsed.append((key, args, p))
    if errs:
        return errs, []
    engine_checks = SETUP_CHECKS[setup.engine]
    diffs = engine_checks(setup, parsed, files or {}) if setup.engine in GGUF_REPO_ENGINES else engine_checks(
        setup, parsed)
    return errs, diffs


# ---------------------------------------------------------------------------------------------- per engine

def _made(parsed, src, out_flag_value: str) -> list[str]:
    """The conversion chain that makes ``out_flag_value`` from an HF side at its quantization."""
    diffs = []
    convert = [p for k, a, p in parsed if k == ("python", "convert_hf_to_gguf.py")
               and p.value("--outfile") in (out_flag_value, out_flag_value.replace(f"-{src.quant}", "-F16"))]
    quantize = [p for k, a, p in parsed if k == ("llama-quantize",) and p.positionals[1:2] == [out_flag_value]]
    if quantize:
        if quantize[0].positionals[2].upper() != src.quant.upper():
            diffs.append(f"quantized to {quantize[0].positionals[2]}, estimated at {src.quant}")
    elif convert:
        if (convert[0].value("--outtype") or "").upper() != src.quant.upper():
            diffs.append(f"converted to {convert[0].value('--outtype')}, estimated at {src.quant}")
    else:
        diffs.append(f"nothing makes {out_flag_value}")
    if not convert:
        diffs.append(f"no convert step for {src.repo}")
    elif src.kind == HF:
        folder = convert[0].positionals[0] if convert[0].positionals else None
        dl = [a for k, a, _ in parsed if k == ("hf", "download") and a and a[0] == src.repo]
        if not dl or folder not in dl[0]:
            diffs.append(f"{src.repo} is converted from {folder}, which no step downloads")
    return diffs


def _llama_side(parsed, server, src, file_flags, hub_flags, files) -> list[str]:
    file_v, hub_v = server.value(*file_flags), server.value(*hub_flags)
    if src.kind == GGUF:
        want = f"{src.repo}:{src.tag}" if src.tag else src.repo
        ok = hub_v == want and _at(src.tag, src.quant)
        return ([] if ok else [f"{hub_flags[0]} {hub_v} for {want} at {src.quant}"]) + _listed(src, files)
    return _made_side(parsed, server, src, file_flags, file_v)


def _at(named: str | None, quant: str | None) -> bool:
    """Whether a GGUF name's tag is the type ``quant`` (Q4_K is Q4_K_M's alias)."""
    q = from_gguf_file_type(named) if named else None
    return q is not None and quant is not None and q.name.upper() == quant.upper()


def _listed(src, files) -> list[str]:
    """A GGUF repo's tag must pick files of the setup's type (llama-server takes the first path holding the tag:
    common/download.cpp:655-673); without the repo's list, it must be the file whose header the catalog read."""
    listed = files.get(src.repo)
    if listed:
        named = dict(listed)
        hits = hf_matches([p for p, _ in listed], src.tag or "")
        if not hits or not all(_at(named[h], src.quant) for h in hits):
            return [f"{src.repo}:{src.tag}: the catalog lists no {src.quant} file it picks ({hits or 'none'})"]
        return []
    if src.stored is not None and (src.tag or "").upper() != src.stored.upper():
        return [f"{src.repo}:{src.tag}: the catalog lists only its {src.stored} file"]
    return []


def _made_side(parsed, server, src, file_flags, file_v) -> list[str]:
    if src.kind == FILE:
        return [] if file_v == src.repo else [f"{file_flags[0]} {file_v} for {src.repo}"]
    if file_v is None:
        return [f"no {file_flags[0]} for {src.repo}"]
    return _made(parsed, src, file_v)


def llamacpp_checks(setup, parsed, files) -> list[str]:
    server = next((p for k, a, p in parsed if k == ("llama-server",)), None)
    if server is None:
        return ["no llama-server step"]
    diffs = _llama_side(parsed, server, setup.target, ("-m", "--model"), ("-hf", "-hfr", "--hf-repo"), files)
    if setup.draft is not None:
        diffs += _llama_side(parsed, server, setup.draft, ("-md", "--model-draft"),
                             ("-hfd", "-hfrd", "--hf-repo-draft"), files)
    tokens = "--spec-ngram-simple-size-m" if setup.method == "ngram" else "--spec-draft-n-max"
    n = server.value(tokens)
    if str(setup.draft_tokens or "") != (n or ""):
        diffs.append(f"{tokens} {n}, estimated at {setup.draft_tokens}")
    if setup.method == "ngram" and server.value("--spec-type") != "ngram-simple":
        diffs.append(f"--spec-type {server.value('--spec-type')} for n-gram drafting")
    return diffs


def _mlx_side(parsed, path: str, src) -> list[str]:
    if src.kind in (MLX, DIR) or is_float(src.quant) or src.quant == src.stored:
        return [] if path == src.repo else [f"{path} for {src.repo}"]
    conv = [p for k, a, p in parsed if k == ("mlx_lm.convert",) and p.value("--mlx-path") == path]
    if not conv:
        return [f"nothing makes {path}"]
    c = conv[0]
    bits = c.value("--q-bits")
    made = "mxfp4" if c.value("--q-mode") == "mxfp4" else f"{bits}bit"
    diffs = [] if "-q" in c.options or "--quantize" in c.options else ["convert without -q"]
    if c.value("--hf-path", "--model") != src.repo:
        diffs.append(f"converts {c.value('--hf-path')} for {src.repo}")
    if made != src.quant:
        diffs.append(f"converted to {made}, estimated at {src.quant}")
    return diffs


def mlx_checks(setup, parsed) -> list[str]:
    gen = next((p for k, a, p in parsed if k in (("mlx_lm.generate",), ("mlx_lm.server",))), None)
    if gen is None:
        return ["no mlx_lm.generate step"]
    diffs = _mlx_side(parsed, gen.value("--model", "-m"), setup.target)
    diffs += _mlx_side(parsed, gen.value("--draft-model"), setup.draft)
    if gen.value("--num-draft-tokens") != str(setup.draft_tokens or 3):
        diffs.append(f"--num-draft-tokens {gen.value('--num-draft-tokens')}, estimated at {setup.draft_tokens}")
    return diffs


def _serving_quant(src, given: str | None) -> list[str]:
    want = requantized(src)
    if want != given:
        return [f"quantization {given} for {src.repo} at {src.quant} (stored {src.stored})"]
    if src.kind != HF and src.kind != DIR:
        return [f"{src.repo} is a {src.kind} repo"]
    return []


def sglang_head_checks(setup, p) -> list[str]:
    """A head, MTP or n-gram serve command: the setup's target, head, algorithm, chain and quantizations."""
    from indexer.engines.sglang import SGLANG_ALGORITHM

    want = "NGRAM" if setup.method == "ngram" else SGLANG_ALGORITHM.get(setup.method, setup.method.upper())
    diffs = [] if p.value("--model-path", "--model") == setup.target.repo else ["another target"]
    if (p.value("--speculative-algorithm") or "").upper() != want:
        diffs.append(f"--speculative-algorithm {p.value('--speculative-algorithm')} for {setup.method}")
    if p.value("--speculative-draft-model-path") != (setup.draft.repo if setup.draft else None):
        diffs.append("another head")
    n = setup.draft_tokens if setup.method not in ("dflash", "dspark", "ngram") else None
    chain = (p.value("--speculative-num-steps"), p.value("--speculative-eagle-topk"),
             p.value("--speculative-num-draft-tokens"))
    if chain != ((str(n), "1", str(n + 1)) if n else (None, None, None)):
        diffs.append(f"not a chain of {n}")
    diffs += _serving_quant(setup.target, p.value("--quantization"))
    if setup.draft is not None:
        diffs += _serving_quant(setup.draft, p.value("--speculative-draft-model-quantization"))
    return diffs


def vllm_head_checks(setup, p) -> list[str]:
    """A head, MTP or n-gram serve command: a speculators head served as the verifier's, else the config's method,
    model and num_speculative_tokens, with SpeculativeConfig's keys and methods only."""
    table = flags.program("vllm", setup.release, "vllm serve")["speculative_config"]
    if setup.method == "speculators":
        ok = p.positionals[:1] == [setup.draft.repo] and p.value("--speculative-config") is None
        return ([] if ok else ["not served from the head"]) + _serving_quant(setup.target, p.value("--quantization"))
    diffs = [] if p.positionals[:1] == [setup.target.repo] else ["another target"]
    cfg = json.loads(p.value("--speculative-config"))
    diffs += [f"--speculative-config key {k} is not a SpeculativeConfig field" for k in set(cfg) - set(table["keys"])]
    if cfg.get("method") not in table["methods"] or cfg["method"] != ("eagle3" if setup.method == "peagle"
                                                                        else setup.method):
        diffs.append(f"method {cfg.get('method')} for {setup.method}")
    if cfg.get("model") != (setup.draft.repo if setup.draft else None):
        diffs.append("another head")
    if cfg.get("num_speculative_tokens") != setup.draft_tokens:
        diffs.append(f"num_speculative_tokens {cfg.get('num_speculative_tokens')}, estimated at {setup.draft_tokens}")
    diffs += _serving_quant(setup.target, p.value("--quantization"))
    if setup.draft is not None:
        diffs += _serving_quant(setup.draft, cfg.get("quantization"))
    return diffs


def sglang_checks(setup, parsed) -> list[str]:
    p = parsed[-1][2]
    if setup.method != "draft_model":
        return sglang_head_checks(setup, p)
    diffs = []
    if p.value("--model-path", "--model") != setup.target.repo:
        diffs.append(f"--model-path {p.value('--model-path')} for {setup.target.repo}")
    if p.value("--speculative-draft-model-path", "--speculative-draft-model") != setup.draft.repo:
        diffs.append("draft path differs")
    if (p.value("--speculative-algorithm") or "").upper() != "STANDALONE":
        diffs.append("not STANDALONE")
    n = setup.draft_tokens
    if n and (p.value("--speculative-num-steps"), p.value("--speculative-eagle-topk"),
              p.value("--speculative-num-draft-tokens")) != (str(n), "1", str(n + 1)):
        diffs.append(f"not a chain of {n}")
    diffs += _serving_quant(setup.target, p.value("--quantization"))
    diffs += _serving_quant(setup.draft, p.value("--speculative-draft-model-quantization"))
    return diffs


def vllm_checks(setup, parsed) -> list[str]:
    p = parsed[-1][2]
    if setup.method != "draft_model":
        return vllm_head_checks(setup, p)
    table = flags.program("vllm", setup.release, "vllm serve")["speculative_config"]
    diffs = []
    if p.positionals[:1] != [setup.target.repo]:
        diffs.append(f"serves {p.positionals[:1]} for {setup.target.repo}")
    cfg = json.loads(p.value("--speculative-config"))
    unknown = set(cfg) - set(table["keys"])
    if unknown:
        diffs.append(f"--speculative-config keys {sorted(unknown)} are not SpeculativeConfig fields")
    if cfg.get("method") not in table["methods"]:
        diffs.append(f"method {cfg.get('method')} is not one of SpeculativeConfig's")
    if cfg.get("model") != setup.draft.repo or cfg.get("num_speculative_tokens") != (setup.draft_tokens or 5):
        diffs.append("draft model or tokens differ")
    diffs += _serving_quant(setup.target, p.value("--quantization"))
    diffs += _serving_quant(setup.draft, cfg.get("quantization"))
    return diffs


def _python(parsed) -> ast.Module:
    return ast.parse(parsed[-1][1][0])


def transformers_checks(setup, parsed) -> list[str]:
    from transformers import GenerationConfig

    tree = _python(parsed)
    loads = [n.args[0].value for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "from_pretrained" and n.args and isinstance(n.args[0], ast.Constant)]
    gen = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "generate")
    kw = {k.arg: k.value for k in gen.keywords if k.arg}
    fields = set(vars(GenerationConfig()))
    diffs = [f"generate({k}=) is no GenerationConfig field nor generate argument" for k in kw
             if k not in fields and k not in ("assistant_model", "tokenizer", "assistant_tokenizer")]
    if setup.method == "ngram":  # prompt lookup: the target alone, at the draft length the setup states
        n = kw.get("prompt_lookup_num_tokens")
        if set(loads) != {setup.target.repo} or "assistant_model" in kw:
            diffs.append("prompt lookup loads other models")
        if n is None or (setup.draft_tokens is not None and n.value != setup.draft_tokens):
            diffs.append(f"prompt_lookup_num_tokens differs from {setup.draft_tokens}")
        return diffs
    if setup.method == "mtp":  # the target's own MTP layers: the target alone, generate(use_mtp=True)
        use = kw.get("use_mtp")
        if set(loads) != {setup.target.repo} or "assistant_model" in kw:
            diffs.append("MTP loads other models")
        if not (isinstance(use, ast.Constant) and use.value is True):
            diffs.append("generate() is not given use_mtp=True")
        if not is_float(setup.target.quant) and setup.target.quant != setup.target.stored:
            diffs.append(f"{setup.target.repo} estimated at {setup.target.quant}, loaded as stored")
        return diffs
    if setup.target.repo not in loads or setup.draft.repo not in loads:
        diffs.append("loads other models")
    n = kw.get("num_assistant_tokens")
    if (n.value if n is not None else None) != setup.draft_tokens:
        diffs.append(f"num_assistant_tokens differs from {setup.draft_tokens}")
    for src in (setup.target, setup.draft):
        if not is_float(src.quant) and src.quant != src.stored:
            diffs.append(f"{src.repo} estimated at {src.quant}, loaded as stored")
    return diffs


STDLIB = {"exit", "upper", "startswith"}  # the names the script takes from Python itself (sys.exit, str methods)


def _calls(tree, name: str) -> list[list]:
    """The literal arguments of every call of ``name`` in the script."""
    return [[ast.literal_eval(a) for a in n.args] for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]


def _assigned(tree, var: str):
    """The call assigned to ``var`` (``target = get(...)``)."""
    return next(n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == var for t in n.targets))


def _lms_side(parsed, src, gguf: bool, expr, files) -> list[str]:
    """One side: downloaded by ``get`` at its tag (GGUF) or as it is (MLX, float), else made by the steps and
    found by ``find`` at the path they put it."""
    name, args = expr.func.id, [ast.literal_eval(a) for a in expr.args]
    if src.kind == GGUF:
        ok = name == "get" and args[:2] == [src.repo, "gguf"] and (args[2:] or [""])[0].upper() == (
            src.tag or "").upper() and _at(src.tag, src.quant)
        return ([] if ok else [f"{src.repo}: {name}{tuple(args)} for its {src.quant} file"]) + _listed(src, files)
    if not gguf and src.kind != DIR and (src.kind == MLX or is_float(src.quant) or src.quant == src.stored):
        return [] if (name, args) == ("get", [src.repo, "safetensors"]) else [f"{src.repo}: {name}{tuple(args)}"]
    if name != "find":
        return [f"{src.repo} at {src.quant} is downloaded as it is"]
    path = args[0]
    if gguf:
        folder, file_name = path.rsplit("/", 1)
        imports = [p for k, a, p in parsed if k == ("lms", "import") and p.value("--user-repo") == folder
                   and os.path.basename(p.positionals[0]) == file_name]
        if not imports:
            return [f"no lms import puts {path}"]
        file = imports[0].positionals[0]
        return [] if src.kind == FILE and file == src.repo else _made(parsed, src, file) if src.kind != FILE else [
            f"imports {file} for {src.repo}"]
    conv = [p for k, a, p in parsed if k == ("mlx_lm.convert",) and p.value("--mlx-path") == f"{MODELS}/{path}"]
    if not conv:
        return [f"nothing makes {path} in LM Studio's models folder"]
    return _mlx_side(parsed, conv[0].value("--mlx-path"), src) if not is_float(src.quant) else (
        [] if conv[0].value("--hf-path") == src.repo and "-q" not in conv[0].options else ["converts another"])


def lmstudio_checks(setup, parsed, files) -> list[str]:
    """The script: only lmstudio-python's names (flags/lmstudio-1.5.0: its sync client's functions, methods and
    properties, a search hit's and a download option's fields) and prediction-config keys; each side's key from
    the download or the step that makes it; the draft and its tokens in respond(config=...)."""
    sdk = flags.program("lmstudio", SDK, "lmstudio")
    keys = flags.program("lmstudio", SDK, "lmstudio.respond")["config_keys"]
    tree = _python(parsed)
    defined = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    used |= {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    diffs = [f"{n} is not lmstudio-python {SDK}'s" for n in sorted(used - set(sdk["api"]) - STDLIB - defined
                                                                    - {"next", "print"})]
    diffs += [f"compatibility type {k} is not the SDK's" for _, k, *_ in _calls(tree, "get")
              if k not in sdk["compatibility_types"]]
    config = next(k.value for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords if k.arg == "config")
    cfg = {ast.literal_eval(k): v for k, v in zip(config.keys, config.values)}
    diffs += [f"config key {k} is not lmstudio-python's" for k in cfg if k not in keys]
    llm = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "llm")
    draft = cfg.get("draftModel")
    if ast.unparse(llm.args[0]) != "target" or draft is None or ast.unparse(draft) != "draft":
        diffs.append("other model keys")
    n = cfg.get("speculativeDecodingNumDraftTokensExact")
    if (ast.literal_eval(n) if n is not None else None) != setup.draft_tokens:
        diffs.append("draft tokens differ")
    gguf = on_gguf(setup)
    diffs += _lms_side(parsed, setup.target, gguf, _assigned(tree, "target"), files)
    diffs += _lms_side(parsed, setup.draft, gguf, _assigned(tree, "draft"), files)
    return diffs


GGUF_REPO_ENGINES = ("llama.cpp", "lmstudio")  # their checks take the catalog's GGUF files
SETUP_CHECKS = {"llama.cpp": llamacpp_checks, "mlx": mlx_checks, "sglang": sglang_checks, "vllm": vllm_checks,
                "transformers": transformers_checks, "lmstudio": lmstudio_checks}


def check_flags_only(engine: str, release: str, step: str) -> list[str]:
    """The flag errors of one command with no setup (a head's, an n-gram's)."""
    argv = words_of(step.split("  #", 1)[0])
    key, args, table = program_of(argv, engine, release)
    if key is None or table is None:
        return [f"no table for {step[:50]}"]
    return [f"{' '.join(key)}: {e}" for e in flags.parse(table, args).errors]
