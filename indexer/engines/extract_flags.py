"""Read each engine's command-line table from its source tree and write it as versioned data beside the rules:

    python -m indexer.engines.extract_flags SOURCE_DIR --engine llama.cpp==0c1e57098 [--out DIR]

SOURCE_DIR is an unpacked sdist, wheel or checkout of the release (docs/engines.md says where each comes from).
What is read, per engine:

* ``llama.cpp``: ``common/arg.cpp`` (every ``add_opt(common_arg(...))`` that llama-server takes, and the removed
  ones, whose handler calls ``arg_removed``), the ``--spec-type`` names (``common/speculative.cpp``),
  ``convert_hf_to_gguf.py``'s argparse, and ``llama-quantize``'s options and type list
  (``tools/quantize/quantize.cpp``);
* ``sglang``: the server arguments: the ``A[T, "help"]`` / ``A[T, Arg(...)]`` fields of the namespaces under
  ``srt/arg_groups/fields/`` (their flag is the field name, dashed, plus aliases; ``Literal`` types and ``choices=``
  give the choices) and the ``parser.add_argument`` calls of ``srt/server_args.py``;
* ``vllm``: ``EngineArgs.add_cli_args`` (``vllm/engine/arg_utils.py``: every ``add_argument`` flag), and
  ``SpeculativeConfig``'s fields and method literals (``vllm/config/speculative.py``), the keys of
  ``--speculative-config``;
* ``mlx``: the argparse of ``mlx_lm/generate.py``, ``server.py`` and ``convert.py``;
* ``lmstudio``: the Python SDK's prediction-config keys (``lmstudio/_kv_config.py``), what
  ``respond(config=...)`` takes, and the public names of its sync client (:func:`sdk_api`);
* ``lms``: LM Studio's CLI, ``lms import``'s options (``src/subcommands/importCmd.ts``, commander).

Python is parsed with ``ast`` (nothing is imported or run); ``arg.cpp`` and ``quantize.cpp`` by balanced-paren
scanning. Every entry keeps the line it was read from. The output is
``indexer/engines/data/flags/<engine>-<release>.json`` (:mod:`indexer.engines.flags` reads it).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data" / "flags"


# ---------------------------------------------------------------------------------------------- Python argparse

def _literal(node, names: dict):
    """A literal value, resolving module-level names (lists, tuples, Literal aliases) of the same file."""
    if isinstance(node, ast.Name) and node.id in names:
        return _literal(names[node.id], names)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        out: list = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                out.extend(_literal(elt.value, names) or [])
            else:
                out.append(_literal(elt, names))
        return out
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "sorted", "tuple") \
            and node.args:
        value = _literal(node.args[0], names)
        return sorted(value) if node.func.id == "sorted" and value is not None else value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "keys":
        value = node.func.value
        if isinstance(value, ast.Name) and isinstance(names.get(value.id), ast.Dict):
            return [_literal(k, names) for k in names[value.id].keys]
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return None


def module_names(tree: ast.Module) -> dict:
    """Module-level ``NAME = value`` assignments (what a ``choices=NAME`` may refer to)."""
    names = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            names[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            names[node.target.id] = node.value
    return names


NO_VALUE_ACTIONS = ("store_true", "store_false", "store_const", "count", "help", "version", "append_const",
                    "BooleanOptionalAction")


def argparse_table(path: Path, *, within: str | None = None) -> dict:
    """The ``add_argument`` calls of a Python file (``within``: only inside this function or method)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = module_names(tree)
    scope: ast.AST = tree
    if within:
        found = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and n.name == within), None)
        if found is None:
            raise SystemExit(f"{path}: no function {within}")
        scope = found
    options, positionals = {}, []
    for node in ast.walk(scope):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        action = kw.get("action")
        action_name = (action.value if isinstance(action, ast.Constant) else
                       action.attr if isinstance(action, ast.Attribute) else
                       action.id if isinstance(action, ast.Name) else None)
        nargs = _literal(kw["nargs"], names) if "nargs" in kw else None
        entry: dict = {"line": node.lineno}
        if action_name in NO_VALUE_ACTIONS:
            entry["values"] = 0
            if action_name == "BooleanOptionalAction":
                entry["negated"] = True
        else:
            entry["values"] = nargs if nargs is not None else 1
        if "choices" in kw:
            choices = _literal(kw["choices"], names)
            if isinstance(choices, (list, tuple)) and all(isinstance(c, (str, int, float)) for c in choices):
                entry["choices"] = list(choices)
            else:
                entry["choices_unread"] = ast.unparse(kw["choices"])
        if not flags and any(k.arg is None for k in node.keywords):
            continue  # add_argument(*names, **kwargs): a generic helper, not a flag of its own
        if flags and not flags[0].startswith("-"):
            positionals.append({"name": flags[0], **entry})
            continue
        for flag in flags:
            options[flag] = entry
            if entry.get("negated") and flag.startswith("--"):
                options["--no-" + flag[2:]] = entry
    return {"source": None, "options": dict(sorted(options.items())), "positionals": positionals}


# ---------------------------------------------------------------------------------------------- llama.cpp

def _balanced(text: str, start: int) -> int:
    """The index just after the parenthesis that closes the one at ``start`` (strings and chars skipped)."""
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "/" and text[i:i + 2] == "//":
            i = text.find("\n", i)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced parenthesis")


_STRINGS = re.compile(r'"((?:[^"\\]|\\.)*)"')
_EXAMPLES = re.compile(r"\.set_examples\(\{([^}]*)\}\)")
_EXCLUDES = re.compile(r"\.set_excludes\(\{([^}]*)\}\)")
_LAMBDA = re.compile(r"\[\]\s*\(\s*common_params\s*&\s*(?:/\*\s*)?\w*(?:\s*\*/)?\s*((?:,[^)]*)?)\)")


def arg_cpp(root: Path, example: str = "LLAMA_EXAMPLE_SERVER") -> dict:
    """llama.cpp's options for one example (llama-server): ``add_opt(common_arg(...))`` calls whose examples hold
    it or LLAMA_EXAMPLE_COMMON (common/arg.cpp common_params_parser_init), and are not excluded from it."""
    path = root / "common" / "arg.cpp"
    text = path.read_text(encoding="utf-8")
    options, removed = {}, {}
    for m in re.finditer(r"add_opt\(common_arg\(", text):
        open_at = m.end() - 1
        end = _balanced(text, open_at)
        body = text[open_at + 1:end - 1]
        tail_end = text.find(";", end)
        tail = text[end:tail_end]
        line = text.count("\n", 0, m.start()) + 1
        lists = re.findall(r"^\s*\{([^}]*)\}", body) or []
        names = _STRINGS.findall(lists[0]) if lists else []
        rest = body[body.find("}") + 1:]
        negated = []
        second = re.match(r"\s*,\s*\{([^}]*)\}", rest)
        if second:
            negated = _STRINGS.findall(second.group(1))
        lam = _LAMBDA.search(body)
        params = lam.group(1) if lam else ""
        values = params.count(",")  # int / string: one value; two strings: two; none (void) or bool: none
        if "bool" in params:
            values = 0
        examples = _EXAMPLES.search(tail)
        wanted = {e.strip() for e in (examples.group(1) if examples else "LLAMA_EXAMPLE_COMMON").split(",")}
        excludes = _EXCLUDES.search(tail)
        if example not in wanted and "LLAMA_EXAMPLE_COMMON" not in wanted:
            continue
        if excludes and example in {e.strip() for e in excludes.group(1).split(",")}:
            continue
        gone = re.search(r'arg_removed\("((?:[^"\\]|\\.)*)"\)', body)
        for name in names + negated:
            if gone:
                removed[name] = {"line": line, "says": gone.group(1)}
            else:
                options[name] = {"values": 0 if name in negated else values, "line": line}
    spec = spec_types(root)
    if "--spec-type" in options:
        options["--spec-type"].update(choices=spec["names"], separator=",", choices_from=spec["source"])
    return {"source": "common/arg.cpp", "options": dict(sorted(options.items())), "positionals": [],
            "removed": dict(sorted(removed.items()))}


def spec_types(root: Path) -> dict:
    """The ``--spec-type`` names: common/speculative.cpp's common_speculative_type_from_name_map."""
    path = root / "common" / "speculative.cpp"
    text = path.read_text(encoding="utf-8")
    m = re.search(r"common_speculative_type_from_name_map\s*=\s*\{(.*?)\n\};", text, re.S)
    if m is None:
        raise SystemExit(f"{path}: no common_speculative_type_from_name_map")
    line = text.count("\n", 0, m.start()) + 1
    names = re.findall(r'\{\s*"([^"]+)"\s*,', m.group(1))
    return {"names": names, "source": f"common/speculative.cpp:{line}"}


def quantize_cpp(root: Path) -> dict:
    """llama-quantize: its ``--`` options (strcmp in main) and QUANT_OPTIONS' type names (matched without case)."""
    rel = "tools/quantize/quantize.cpp"
    text = (root / rel).read_text(encoding="utf-8")
    m = re.search(r"QUANT_OPTIONS\s*=\s*\{(.*?)\n\};", text, re.S)
    if m is None:
        raise SystemExit(f"{rel}: no QUANT_OPTIONS")
    types = re.findall(r'\{\s*"([^"]+)"\s*,\s*LLAMA_FTYPE', m.group(1))
    types_line = text.count("\n", 0, m.start()) + 1
    options = {}
    for om in re.finditer(r'strcmp\(argv\[arg_idx\],\s*"(--[\w-]+)"\)\s*==\s*0\)\s*\{', text):
        block = text[om.end():text.find("} else", om.end())]
        takes = "++arg_idx" in block
        options[om.group(1)] = {"values": 1 if takes else 0, "line": text.count("\n", 0, om.start()) + 1}
    return {"source": rel, "options": dict(sorted(options.items())),
            "positionals": [{"name": "model-in", "values": 1}, {"name": "model-out", "values": "?"},
                            {"name": "type", "values": 1, "choices": types, "case_insensitive": True,
                             "line": types_line}, {"name": "nthreads", "values": "?"}]}


def llamacpp(root: Path) -> dict:
    """llama-server's options (common/arg.cpp, removed ones included), the converter's argparse and
    llama-quantize's types."""
    convert = argparse_table(root / "convert_hf_to_gguf.py", within="parse_args")
    convert["source"] = "convert_hf_to_gguf.py"
    return {"llama-server": arg_cpp(root), "convert_hf_to_gguf.py": convert, "llama-quantize": quantize_cpp(root)}


# ---------------------------------------------------------------------------------------------- SGLang

def _find(root: Path, rel: str) -> Path:
    """``rel`` under the tree, as written or under any folder (a wheel has sglang/, a checkout python/sglang/)."""
    direct = root / rel
    if direct.exists():
        return direct
    hits = sorted(root.glob(f"**/{rel}"))
    if not hits:
        raise SystemExit(f"{root}: no {rel}")
    return hits[0]


def _annotated_fields(path: Path, names: dict) -> dict:
    """``name: A[T, "help"]`` or ``A[T, Arg(...)]`` class fields as CLI options (srt/arg_groups/arg_utils.py
    add_cli_args_from_dataclass)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {**names, **module_names(tree)}
    options = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for node in cls.body:
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            ann = node.annotation
            if not (isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "A"):
                continue
            elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            if len(elts) < 2:
                continue
            typ, meta = elts[0], elts[1]
            arg = {}
            if isinstance(meta, ast.Call):
                arg = {k.arg: k.value for k in meta.keywords if k.arg}
            elif not (isinstance(meta, ast.Constant) and isinstance(meta.value, str)):
                continue
            if "no_cli" in arg and _literal(arg["no_cli"], names):
                continue
            flag = _literal(arg["cli_name"], names) if "cli_name" in arg else "--" + node.target.id.replace("_", "-")
            aliases = _literal(arg["aliases"], names) if "aliases" in arg else []
            inner = ast.unparse(typ)
            entry: dict = {"line": node.lineno, "values": 1, "file": path.name}
            literal = _literal_values(typ, names)
            if "choices" in arg:
                choices = _literal(arg["choices"], names)
                if isinstance(choices, list):
                    entry["choices"] = choices
                else:
                    entry["choices_unread"] = ast.unparse(arg["choices"])
            elif literal is not None:
                entry["choices"] = literal
            if "action" in arg:
                entry["values"] = 0 if "store" in ast.unparse(arg["action"]).lower() else 1
            elif re.fullmatch(r"(Optional\[)?bool\]?", inner.replace(" ", "")):
                entry["values"] = 0
            elif re.match(r"(Optional\[)?(List|list)\[", inner.replace(" ", "")) and "type_parser" not in arg:
                entry["values"] = _literal(arg["nargs"], names) if "nargs" in arg else "+"
            for name in [flag, *(aliases or [])]:
                options[name] = entry
    return options


def _literal_values(typ, names: dict) -> list | None:
    """The values of a ``Literal[...]`` type (inside Optional), or None."""
    if isinstance(typ, ast.Subscript) and isinstance(typ.value, ast.Name):
        if typ.value.id == "Optional":
            return _literal_values(typ.slice, names)
        if typ.value.id == "Literal":
            elts = typ.slice.elts if isinstance(typ.slice, ast.Tuple) else [typ.slice]
            out = []
            for e in elts:
                if isinstance(e, ast.Constant):
                    out.append(e.value)
                elif isinstance(e, ast.Name) and e.id in names:
                    out.extend(_literal_values(names[e.id], names) or [])
            return out
    if isinstance(typ, ast.Name) and typ.id in names:
        return _literal_values(names[typ.id], names)
    return None


def speculative_algorithms(srt: Path) -> dict:
    """--speculative-algorithm's builtin names: SpeculativeAlgorithm's members (NONE aside) and the reserved aliases
    (speculative/spec_info.py from_string upper-cases the name; speculative/spec_registry.py _RESERVED_ALIASES)."""
    info, registry = srt / "speculative" / "spec_info.py", srt / "speculative" / "spec_registry.py"
    if not info.is_file():
        return {}
    tree = ast.parse(info.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SpeculativeAlgorithm")
    names = [t.id for n in cls.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    if registry.is_file():
        aliases = module_names(ast.parse(registry.read_text(encoding="utf-8"))).get("_RESERVED_ALIASES")
        if isinstance(aliases, ast.Call) and aliases.args:
            names += sorted(_literal(aliases.args[0], {}) or [])
    return {"choices": [n for n in names if n != "NONE"], "case_insensitive": True,
            "choices_from": "speculative/spec_info.py SpeculativeAlgorithm, speculative/spec_registry.py "
                            "_RESERVED_ALIASES"}


def sglang(root: Path) -> dict:
    """SGLang's server arguments, read from its annotated argument-group fields and their choices."""
    server_args = _find(root, "srt/server_args.py")
    srt = server_args.parent
    choices = module_names(ast.parse((srt / "arg_groups" / "choices.py").read_text(encoding="utf-8")))
    options = {}
    for path in sorted((srt / "arg_groups" / "fields").glob("*.py")):
        options.update(_annotated_fields(path, choices))
    explicit = argparse_table(server_args, within="add_cli_args")
    for entry in explicit["options"].values():
        entry["file"] = "server_args.py"
    options.update(explicit["options"])
    algorithms = speculative_algorithms(srt)
    if algorithms and "--speculative-algorithm" in options:
        options["--speculative-algorithm"] = {**options["--speculative-algorithm"], **algorithms}
    prefix = str(srt.relative_to(root).as_posix())
    return {"sglang.launch_server": {"source": f"{prefix}/server_args.py, {prefix}/arg_groups/fields/*.py",
                                     "options": dict(sorted(options.items())), "positionals": []}}


# ---------------------------------------------------------------------------------------------- vLLM

def _class_fields(tree: ast.Module, name: str) -> dict:
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    return {n.target.id: n for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}


def vllm(root: Path) -> dict:
    """vLLM's engine arguments and the keys and methods ``--speculative-config`` takes."""
    args = _find(root, "vllm/engine/arg_utils.py")
    table = argparse_table(args, within="add_cli_args")
    table["source"] = "vllm/engine/arg_utils.py"
    spec_path = _find(root, "vllm/config/speculative.py")
    tree = ast.parse(spec_path.read_text(encoding="utf-8"))
    names = module_names(tree)
    fields = _class_fields(tree, "SpeculativeConfig")
    keys = {k: {"line": n.lineno} for k, n in fields.items() if not k.startswith("_")}
    methods = _literal_values(fields["method"].annotation, names) if "method" in fields else None
    if methods is None and "method" in fields:  # method: SpeculativeMethod | None
        ann = fields["method"].annotation
        for n in ast.walk(ann):
            if isinstance(n, ast.Name) and n.id in names:
                methods = _literal_values(names[n.id], names)
                if methods:
                    break
    # `vllm serve`'s positional model_tag: entrypoints/common/ since 0.33.0, entrypoints/launchers/ before
    cli = next((_find(root, rel) for rel in ("vllm/entrypoints/common/cli_args.py",
                                              "vllm/entrypoints/launchers/cli_args.py")
                if any(root.glob(f"**/{rel}"))), None)
    if cli is not None:
        table["positionals"] = [p for p in argparse_table(cli)["positionals"] if p["name"] == "model_tag"]
    table["speculative_config"] = {"source": "vllm/config/speculative.py", "keys": keys, "methods": methods}
    quant = table["options"].get("--quantization")
    if quant is not None and "choices" not in quant:
        qpath = _find(root, "vllm/model_executor/layers/quantization/__init__.py") if any(
            root.glob("**/vllm/model_executor/layers/quantization/__init__.py")) else None
        if qpath is not None:
            qnames = module_names(ast.parse(qpath.read_text(encoding="utf-8")))
            if "QuantizationMethods" in qnames:
                quant["choices"] = _literal_values(qnames["QuantizationMethods"], qnames)
                quant["choices_from"] = "vllm/model_executor/layers/quantization/__init__.py QuantizationMethods"
    return {"vllm serve": table}


# ---------------------------------------------------------------------------------------------- mlx-lm, LM Studio

def mlx(root: Path) -> dict:
    """mlx-lm's generate, server and convert argparse tables."""
    out = {}
    for program, rel, within in (("mlx_lm.generate", "mlx_lm/generate.py", "setup_arg_parser"),
                                 ("mlx_lm.server", "mlx_lm/server.py", "main"),
                                 ("mlx_lm.convert", "mlx_lm/convert.py", "configure_parser")):
        path = _find(root, rel)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        has = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        table = argparse_table(path, within=within if within in has else None)
        table["source"] = rel
        out[program] = table
    return out


def lmstudio(root: Path) -> dict:
    """lmstudio-python: the client keys ``respond(config=...)`` takes: the first argument of each ``ConfigField`` /
    ``CheckboxField`` under ``SUPPORTED_SERVER_KEYS["llm.prediction"]`` (nested scopes are flattened in the client
    API)."""
    rel = "lmstudio/_kv_config.py"
    tree = ast.parse(_find(root, rel).read_text(encoding="utf-8"))
    table = module_names(tree)["SUPPORTED_SERVER_KEYS"]
    prediction = next(v for k, v in zip(table.keys, table.values)
                      if isinstance(k, ast.Constant) and k.value == "llm.prediction")
    keys: dict = {}
    for node in ast.walk(prediction):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("ConfigField", "CheckboxField") and node.args
                and isinstance(node.args[0], ast.Constant)):
            keys[node.args[0].value] = {"line": node.lineno}
    return {"lmstudio.respond": {"source": rel, "config_keys": dict(sorted(keys.items()))},
            "lmstudio": sdk_api(root)}


SDK_FILES = ("lmstudio/sync_api.py", "lmstudio/json_api.py")  # the sync client and the data wrappers it returns
SDK_STRUCTS = ("ModelSearchResultEntryData", "ModelSearchResultDownloadOptionData")  # a search hit, a download


def sdk_api(root: Path) -> dict:
    """lmstudio-python's public names a script may use: every public function, method and property of the sync
    client and its data wrappers, the fields of a search result and of a download option
    (``lmstudio/_sdk_models``), and the ``compatibility_types`` a search takes (ModelCompatibilityType)."""
    names: dict = {}
    for rel in SDK_FILES:
        tree = ast.parse(_find(root, rel).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                names.setdefault(node.name, {"line": node.lineno, "file": rel})
    rel = "lmstudio/_sdk_models/__init__.py"
    tree = ast.parse(_find(root, rel).read_text(encoding="utf-8"))
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name in SDK_STRUCTS):
        for node in cls.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.setdefault(node.target.id, {"line": node.lineno, "file": rel})
    kinds = module_names(tree)["ModelCompatibilityType"]
    return {"source": ", ".join((*SDK_FILES, rel)), "api": dict(sorted(names.items())),
            "compatibility_types": _literal_values(kinds, {}),
            "compatibility_types_line": kinds.lineno}


# ---------------------------------------------------------------------------------------------- lms (LM Studio's CLI)

_COMMANDER_OPTION = re.compile(r'(?:\.option|\bnew Option)\(\s*"([^"]+)"')
_COMMANDER_ARGUMENT = re.compile(r'\.argument\(\s*"([^"]+)"')


def commander_table(path: Path, rel: str) -> dict:
    """A commander command's options (``.option("-y, --yes", ...)``, ``new Option("--gpu <ratio>", ...)``: the
    names before the value, which takes one word when written ``<v>`` or ``[v]``) and its ``.argument``s."""
    text = path.read_text(encoding="utf-8")
    options, positionals = {}, []
    for m in _COMMANDER_OPTION.finditer(text):
        spec = m.group(1)
        takes = 1 if re.search(r"[<\[]", spec) else 0
        line = text.count("\n", 0, m.start()) + 1
        for name in re.findall(r"(-{1,2}[\w-]+)", spec.split("<")[0].split("[")[0]):
            options[name] = {"values": takes, "line": line}
    for m in _COMMANDER_ARGUMENT.finditer(text):
        name = m.group(1)
        positionals.append({"name": name.strip("<>[]"), "values": 1 if name.startswith("<") else "?",
                            "line": text.count("\n", 0, m.start()) + 1})
    return {"source": rel, "options": dict(sorted(options.items())), "positionals": positionals}


def lms(root: Path) -> dict:
    """lms, LM Studio's CLI (lmstudio-ai/lms): ``lms import``'s options (src/subcommands/importCmd.ts), the step
    that puts a local GGUF file in LM Studio's models folder."""
    rel = "src/subcommands/importCmd.ts"
    return {"lms import": commander_table(_find(root, rel), rel)}


READERS = {"llama.cpp": llamacpp, "sglang": sglang, "vllm": vllm, "mlx": mlx, "lmstudio": lmstudio, "lms": lms}


def extract(root: Path, engine: str, release: str, read_from: str = "") -> dict:
    """The flag table of ``engine`` at ``release`` from the source tree ``root``."""
    if engine not in READERS:
        raise SystemExit(f"unknown engine {engine!r}; choose one of {', '.join(READERS)}")
    return {"engine": engine, "release": release, "read_from": read_from,
            "programs": READERS[engine](root)}


def main(argv: list[str] | None = None) -> int:
    """Write one release's flag table from its source tree (the command line of this module)."""
    p = argparse.ArgumentParser(prog="python -m indexer.engines.extract_flags", description=__doc__.split("\n")[0])
    p.add_argument("source", type=Path, help="the unpacked source tree of the release")
    p.add_argument("--engine", required=True, help="ENGINE==RELEASE, e.g. llama.cpp==0c1e57098")
    p.add_argument("--read-from", default="", help="what the tree is (e.g. 'vllm 0.34.0 wheel'), kept in the file")
    p.add_argument("--out", type=Path, default=OUT, help=f"output directory (default {OUT})")
    a = p.parse_args(argv)
    engine, _, release = a.engine.partition("==")
    if not release or not a.source.is_dir():
        p.error("give --engine ENGINE==RELEASE and an existing source directory")
    table = extract(a.source, engine, release, a.read_from)
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / f"{engine}-{release}.json"
    path.write_text(json.dumps(table, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    n = sum(len(t.get("options", t.get("config_keys", {}))) for t in table["programs"].values())
    print(f"{path}: {len(table['programs'])} programs, {n} options")
    return 0


if __name__ == "__main__":
    sys.exit(main())
