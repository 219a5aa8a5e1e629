"""Read the tables an engine keeps in its own source (registries, model-type lists, class-name exclusions) out of a
release's unpacked source tree, with ``ast``, into the versioned data the engine modules read
(``indexer/engines/data/<engine>/<release>.json``, :mod:`indexer.engines.tables`).

``scripts/extract_tables.py ENGINE RELEASE SOURCE_DIR`` runs it; a new release's update is "run the extractor, review
the diff". Nothing here imports an engine or runs its code: every value is read from the syntax tree, with the file
and line it was read at. The trees are laid out as the engine modules cite them:

* vLLM: the wheel or sdist unpacked (``vllm/...``);
* SGLang: the wheel unpacked under ``python/`` (``python/sglang/srt/...``, the repository's layout);
* transformers: the sdist unpacked (``src/transformers/...``);
* mlx-lm: the wheel, sdist or checkout (``mlx_lm/...``);
* llama.cpp: the checkout at its commit (``conversion/...``, ``convert_hf_to_gguf.py``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Speculator kinds, from a class name (then its module's name): the head algorithms the engines load, built-in MTP,
# and "other" (a registry entry that is neither, e.g. vLLM's ExtractHiddenStatesModel).
HEAD_KINDS = ("eagle", "eagle3", "dflash", "dspark")
_KIND_WORDS = (("eagle3", "eagle3"), ("peagle", "eagle3"), ("eagle", "eagle"), ("dflash", "dflash"),
               ("dspark", "dspark"), ("mtp", "mtp"), ("nextn", "mtp"))


def kind(name: str, module: str = "") -> str:
    """The speculator kind of a registered class: by its name, else by its module's name, else ``other``."""
    for text in (name.lower(), module.lower()):
        for word, k in _KIND_WORDS:
            if word in text:
                return k
    return "other"


class SourceError(Exception):
    """The tree lacks what the extractor reads (a file, an assignment): the release changed its shape."""


def _parse(root: Path, rel: str) -> ast.Module:
    path = root / rel
    if not path.is_file():
        raise SourceError(f"{rel}: no such file under {root}")
    return ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=rel)


def _assigned(tree: ast.Module, name: str, rel: str) -> Any:
    """The statement that assigns module-level ``name`` (an ``ast.Assign`` ``X = ...`` or ``ast.AnnAssign``
    ``X: T = ...``, its ``value`` set)."""
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
            return node
    raise SourceError(f"{rel}: no module-level assignment to {name}")


def _span(rel: str, node: ast.stmt | ast.expr) -> str:
    return f"{rel}:{node.lineno}-{node.end_lineno}" if node.end_lineno != node.lineno else f"{rel}:{node.lineno}"


def _dict_entries(node: Any, rel: str) -> list[tuple[Any, ast.expr]]:
    """The (key, value node) pairs of a dict literal, ``**other`` entries left out."""
    value = node.value
    if not isinstance(value, ast.Dict):
        raise SourceError(f"{rel}:{node.lineno}: not a dict literal")
    return [(k.value, v) for k, v in zip(value.keys, value.values) if isinstance(k, ast.Constant)]


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _literal_args(tree: ast.Module, name: str, rel: str, seen: tuple = ()) -> list[str]:
    """The strings of ``name = Literal[...]``, following the Literal names it unions (``A | B``, ``Literal[A, B]``)."""
    node = _assigned(tree, name, rel).value
    out: list[str] = []

    def walk(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            out.append(n.value)
        elif isinstance(n, ast.Name) and n.id not in seen and n.id != "Literal":
            out.extend(_literal_args(tree, n.id, rel, seen + (name,)))
        elif isinstance(n, ast.Subscript):
            walk(n.slice)
        elif isinstance(n, (ast.Tuple, ast.List)):
            for e in n.elts:
                walk(e)
        elif isinstance(n, ast.BinOp):
            walk(n.left)
            walk(n.right)

    walk(node)
    return out


# ------------------------------------------------------------------------------------------- classes and their bases
class Classes:
    """The classes of a source tree's modules, each base resolved through its module's imports (``from .llama
    import X``, ``from pkg.models.llama import X as Y``, ``import pkg.models.llama as llama``), so an inherited method
    or interface is found where it is defined. Dotted module names start in ``root / under``; paths are written
    relative to ``root``."""

    def __init__(self, root: Path, under: str = ""):
        self.root, self.src = root, root / under if under else root
        self._modules: dict[str, tuple[str, dict, dict] | None] = {}

    def module(self, dotted: str) -> tuple[str, dict, dict] | None:
        """(path relative to the tree, class name -> ClassDef, local name -> (module, name or None)) of a module
        (None: not in the tree)."""
        if dotted not in self._modules:
            self._modules[dotted] = self._read(dotted)
        return self._modules[dotted]

    def _read(self, dotted: str) -> tuple[str, dict, dict] | None:
        base = self.src / dotted.replace(".", "/")
        path = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
        if not path.is_file():
            return None
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        package = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        names: dict[str, tuple[str, str | None]] = {}
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom):
                parts = package.split(".")
                origin = ".".join(parts[:len(parts) - n.level + 1] + ([n.module] if n.module else [])) if n.level \
                    else (n.module or "")
                for a in n.names:
                    names.setdefault(a.asname or a.name, (origin, a.name))
            elif isinstance(n, ast.Import):
                for a in n.names:
                    names.setdefault(a.asname or a.name, (a.name, None))
        return path.relative_to(self.root).as_posix(), classes, names

    def resolve(self, dotted: str, name: str, depth: int = 0) -> tuple[str, str] | None:
        """(module, class name) where the class a module calls ``name`` is defined, following imports and
        re-exports (None: outside the tree)."""
        mod = self.module(dotted)
        if mod is None or depth > 20:
            return None
        if name in mod[1]:
            return dotted, name
        origin = mod[2].get(name)
        if origin is None or origin[1] is None:
            return None
        if self.module(f"{origin[0]}.{origin[1]}") is not None:  # ``from pkg import module``: not a class
            return None
        return self.resolve(origin[0], origin[1], depth + 1)

    def bases(self, dotted: str, node: ast.ClassDef) -> list[tuple[str, str] | str]:
        """A class's bases: (module, class) where resolved in the tree, else the name it is imported as."""
        out: list[tuple[str, str] | str] = []
        names = self.module(dotted)[2]  # type: ignore[index]
        for b in node.bases:
            if isinstance(b, ast.Subscript):  # Generic[T], Protocol[...]
                b = b.value
            if isinstance(b, ast.Name):
                found = self.resolve(dotted, b.id)
                out.append(found or (names.get(b.id, ("", b.id))[1] or b.id))
            elif isinstance(b, ast.Attribute) and isinstance(b.value, ast.Name):
                origin = names.get(b.value.id)
                module = origin[0] if origin and origin[1] is None else (
                    f"{origin[0]}.{origin[1]}" if origin else b.value.id)
                out.append(self.resolve(module, b.attr) or b.attr)
        return out

    def first(self, dotted: str, name: str, test: Callable[[ast.ClassDef, list], int | None],
              seen: set | None = None) -> tuple[str, int] | None:
        """(file, line) where ``test`` first holds on the class or a class it inherits from (depth first, in base
        order: whether an ancestor has it, not which one Python's MRO picks); ``test`` gets the class and its
        bases and gives a line or None."""
        seen = set() if seen is None else seen
        found = self.resolve(dotted, name)
        if found is None or found in seen:
            return None
        seen.add(found)
        rel, classes, _ = self.module(found[0])  # type: ignore[misc]
        node = classes[found[1]]
        bases = self.bases(found[0], node)
        line = test(node, bases)
        if line is not None:
            return rel, line
        for b in bases:
            if isinstance(b, tuple) and (hit := self.first(b[0], b[1], test, seen)) is not None:
                return hit
        return None


def defines(method: str) -> Callable[[ast.ClassDef, list], int | None]:
    """A class test: the line where the class body defines ``method`` (a def or an assignment)."""
    def test(node: ast.ClassDef, bases: list) -> int | None:
        for s in node.body:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == method:
                return s.lineno
            if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == method for t in s.targets):
                return s.lineno
        return None
    return test


def subclasses(interface: str) -> Callable[[ast.ClassDef, list], int | None]:
    """A class test: the class's line when one of its bases is named ``interface`` (vLLM's protocols)."""
    def test(node: ast.ClassDef, bases: list) -> int | None:
        return node.lineno if any((b[1] if isinstance(b, tuple) else b) == interface for b in bases) else None
    return test


# ------------------------------------------------------------------------------------------------------------ vLLM
VLLM_REGISTRY = "vllm/model_executor/models/registry.py"
VLLM_SPECULATIVE = "vllm/config/speculative.py"


def vllm(root: Path) -> dict:
    """vLLM's model registry: every speculator class with its kind, the models it dropped (and the release they
    were last supported at), the natively registered architectures and the Transformers-backend ones; the
    ``SpeculativeMethod`` and MTP model-type literals."""
    tree = _parse(root, VLLM_REGISTRY)
    tables: dict = {}
    node = _assigned(tree, "_SPECULATIVE_DECODING_MODELS", VLLM_REGISTRY)
    classes = {}
    for key, value in zip(node.value.keys, node.value.values):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            module, cls = (_strings(value) + ["", ""])[:2]
            classes[key.value] = {"module": module, "class": cls, "kind": kind(key.value, module), "line": key.lineno}
    tables["speculative_models"] = {"source": _span(VLLM_REGISTRY, node), "values": classes}
    native = {}
    for name in ("_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS"):
        try:
            n = _assigned(tree, name, VLLM_REGISTRY)
        except SourceError:
            continue
        native[name] = {"source": _span(VLLM_REGISTRY, n),
                        "values": sorted(k for k, _ in _dict_entries(n, VLLM_REGISTRY))}
    tables["native_models"] = native
    for name, key in (("_PREVIOUSLY_SUPPORTED_MODELS", "previously_supported"),
                      ("_TRANSFORMERS_SUPPORTED_MODELS", "transformers_backend_models")):
        try:
            n = _assigned(tree, name, VLLM_REGISTRY)
        except SourceError:
            tables[key] = {"source": None, "values": {}}
            continue
        entries = _dict_entries(n, VLLM_REGISTRY)
        tables[key] = {"source": _span(VLLM_REGISTRY, n),
                       "values": {k: (v.value if isinstance(v, ast.Constant) else _strings(v)[-1]) for k, v in entries}}
    tables["eagle3_classes"] = _vllm_eagle3(root, tree)
    spec = _parse(root, VLLM_SPECULATIVE)
    for name, key in (("SpeculativeMethod", "speculative_methods"), ("MTPModelTypes", "mtp_model_types")):
        tables[key] = {"source": _span(VLLM_SPECULATIVE, _assigned(spec, name, VLLM_SPECULATIVE)),
                       "values": _literal_args(spec, name, VLLM_SPECULATIVE)}
    override = _function(spec, "hf_config_override")
    if override is None:
        raise SourceError(f"{VLLM_SPECULATIVE}: no hf_config_override")
    tables["mtp_rewrites"] = {"source": _span(VLLM_SPECULATIVE, override), "values": _if_strings(override)}
    return tables


def _vllm_eagle3(root: Path, registry: ast.Module) -> dict:
    """Every architecture vLLM's registry holds (the dicts ``_VLLM_MODELS`` unpacks) whose class implements
    ``SupportsEagle3``, itself or through a class it inherits from, with the file:line of the class that lists it:
    ``supports_eagle3(model)`` is the check before EAGLE-3 or DFlash aux hidden states are turned on."""
    parts = [e.id for e in _assigned(registry, "_VLLM_MODELS", VLLM_REGISTRY).value.values
             if isinstance(e, ast.Name)]  # **_TEXT_GENERATION_MODELS, ...: the keys of a dict literal are None
    found = Classes(root)
    registered: dict[str, str] = {}
    eagle3: dict[str, str] = {}
    for part in parts:
        for arch, value in _dict_entries(_assigned(registry, part, VLLM_REGISTRY), VLLM_REGISTRY):
            module, cls = (_strings(value) + ["", ""])[:2]
            registered.setdefault(arch, f"{module}.{cls}")
            # a dotted module is a full name (vllm.models.<name>, the hardware-isolated layout), else a file of
            # vllm/model_executor/models (registry.py _LazyRegisteredModel)
            dotted = module if "." in module else f"vllm.model_executor.models.{module}"
            hit = found.first(dotted, cls, subclasses("SupportsEagle3"))
            if hit is not None:
                eagle3.setdefault(arch, f"{hit[0]}:{hit[1]}")
    return {"source": f"{VLLM_REGISTRY} (_VLLM_MODELS), vllm/model_executor/models/*.py (SupportsEagle3)",
            "registered": dict(sorted(registered.items())), "values": dict(sorted(eagle3.items()))}


def _if_strings(fn: ast.AST, module: ast.Module | None = None) -> dict[str, int]:
    """Every string an ``if``/``elif`` test of ``fn`` names (a model type, an architecture; also through a
    module-level tuple it names), with the line of its first ``if``: the rewrites of a target config into its MTP
    model (vLLM's hf_config_override, SGLang's _config_draft_model)."""
    named: dict[str, list[str]] = {}
    for n in (module.body if module is not None else []):
        if isinstance(n, ast.Assign) and isinstance(n.value, (ast.Tuple, ast.List, ast.Set)):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    named[t.id] = _strings(n.value)
    out: dict[str, int] = {}
    for n in sorted((n for n in ast.walk(fn) if isinstance(n, ast.If)), key=lambda n: n.lineno):
        for c in ast.walk(n.test):
            if isinstance(c, ast.Constant) and isinstance(c.value, str):
                out.setdefault(c.value, n.lineno)
            elif isinstance(c, ast.Name):
                for v in named.get(c.id, []):
                    out.setdefault(v, n.lineno)
    return out


# ---------------------------------------------------------------------------------------------------------- SGLang
SGLANG_MODELS = "python/sglang/srt/models"
SGLANG_SPEC_INFO = "python/sglang/srt/speculative/spec_info.py"
SGLANG_MODEL_CONFIG = "python/sglang/srt/configs/model_config.py"
# The methods a target model class must have (hasattr) for a head to capture the hidden states it reads
# (model_executor/model_runner_components/attention_backend_setup.py configure_aux_hidden_state_capture): EAGLE-3
# needs set_eagle3_layers_to_capture; DFlash set_dflash_layers_to_capture; DSpark either that or
# set_dspark_layers_to_capture.
CAPTURE_METHODS = {"eagle3": "set_eagle3_layers_to_capture", "dflash": "set_dflash_layers_to_capture",
                   "dspark": "set_dspark_layers_to_capture"}


def sglang(root: Path) -> dict:
    """SGLang's registry (every class a model file lists in ``EntryClass``, keyed by class name: models/
    registry.py): its speculator classes (whose name or file says EAGLE, EAGLE-3, DFlash, DSpark or MTP), and per
    capture method the registered classes that have it, defined or inherited, with the file:line of its ``def``;
    ``_config_draft_model``'s MTP rewrites; the ``SpeculativeAlgorithm`` members."""
    folder = root / SGLANG_MODELS
    if not folder.is_dir():
        raise SourceError(f"{SGLANG_MODELS}: no such folder under {root}")
    classes = {}
    registered: dict[str, str] = {}
    found = Classes(root, "python")
    capture: dict[str, dict[str, str]] = {k: {} for k in CAPTURE_METHODS}
    for path in sorted(folder.glob("*.py")):
        rel = f"{SGLANG_MODELS}/{path.name}"
        tree = _parse(root, rel)
        try:
            node = _assigned(tree, "EntryClass", rel)
        except SourceError:
            continue
        dotted = rel.removeprefix("python/").removesuffix(".py").replace("/", ".")
        for n in (n for n in ast.walk(node.value) if isinstance(n, ast.Name)):
            k = kind(n.id, path.stem)
            if k != "other":
                classes[n.id] = {"file": rel, "line": n.lineno, "kind": k}
            resolved = found.resolve(dotted, n.id)
            name = resolved[1] if resolved else n.id  # the registry keys a class by its __name__
            registered.setdefault(name, f"{rel}:{n.lineno}")
            # a wrapper that forwards attributes (``__getattr__``: MiniCPMV) has what the class of its module it
            # holds has, the one the config's version selects; a wrapper named after such a class
            # (MiniCPMV4_6ForConditionalGeneration: model type minicpmv4_6, version 4.6) holds that one, the generic
            # one (MiniCPMV) any version, so it is not counted
            forwards = found.first(dotted, n.id, defines("__getattr__"))
            for what, method in CAPTURE_METHODS.items():
                hit = found.first(dotted, n.id, defines(method))
                module = found.module(dotted)
                if hit is None and forwards is not None and module is not None:
                    held = ((c, found.first(dotted, c, defines(method))) for c in sorted(module[1], key=len,
                                                                                          reverse=True)
                            if c != n.id and name.startswith(c))
                    hit = next((h for _, h in held if h is not None), None)
                if hit is not None:
                    capture[what].setdefault(name, f"{hit[0]}:{hit[1]}")
    tables = {"speculative_models": {"source": f"{SGLANG_MODELS}/*.py (EntryClass)", "values": classes},
              "registered_models": {"source": f"{SGLANG_MODELS}/*.py (EntryClass)", "values": dict(sorted(
                  registered.items()))},
              "capture_classes": {"source": f"{SGLANG_MODELS}/*.py ({', '.join(CAPTURE_METHODS.values())}, "
                                            "defined or inherited)",
                                  "values": {k: dict(sorted(v.items())) for k, v in capture.items()}}}
    config = _parse(root, SGLANG_MODEL_CONFIG)
    draft = _function(config, "_config_draft_model")
    if draft is None:
        raise SourceError(f"{SGLANG_MODEL_CONFIG}: no _config_draft_model")
    tables["mtp_rewrites"] = {"source": _span(SGLANG_MODEL_CONFIG, draft), "values": _if_strings(draft, config)}
    spec = _parse(root, SGLANG_SPEC_INFO)
    for node in spec.body:
        if isinstance(node, ast.ClassDef) and node.name == "SpeculativeAlgorithm":
            members = [t.id for n in node.body if isinstance(n, ast.Assign)
                       for t in n.targets if isinstance(t, ast.Name)]
            tables["speculative_algorithms"] = {"source": _span(SGLANG_SPEC_INFO, node), "values": members}
    return tables


# ---------------------------------------------------------------------------------------------------- transformers
TF = "src/transformers"
TF_GENERATION = f"{TF}/generation/utils.py"
TF_AUTO_MODELING = f"{TF}/models/auto/modeling_auto.py"
TF_AUTO_CONFIG = f"{TF}/models/auto/configuration_auto.py"
TF_AUTO_MAPPINGS = f"{TF}/models/auto/auto_mappings.py"


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _mapping_pairs(tree: ast.Module, name: str, rel: str) -> dict[str, str]:
    """An auto mapping ``NAME = OrderedDict([("model_type", "ClassName"), ...])`` as a dict."""
    node = _assigned(tree, name, rel)
    out: dict = {}
    for t in ast.walk(node.value):  # (type, class) tuples; a {type: class} dict literal too
        if isinstance(t, ast.Dict):
            out.update({k.value: v.value for k, v in zip(t.keys, t.values)
                        if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)})
        if (isinstance(t, ast.Tuple) and len(t.elts) == 2 and isinstance(t.elts[0], ast.Constant)
                and isinstance(t.elts[1], ast.Constant)):
            out[t.elts[0].value] = t.elts[1].value
    return out


def _raise_line(tree: ast.Module, message: str) -> int | None:
    """The line of the ``raise`` whose message starts with ``message``."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Raise) and n.exc is not None:
            if any(s.startswith(message) for s in _strings(n.exc)):
                return n.lineno
    return None


def transformers(root: Path) -> dict:
    """``_supports_default_dynamic_cache``'s class-name exclusions and exemptions, and the causal-LM model types they
    exclude (so assisted decoding raises "Assisted decoding requires a cache"); the model types whose model class
    sets ``_is_stateful = True``."""
    tree = _parse(root, TF_GENERATION)
    fn = _function(tree, "_supports_default_dynamic_cache")
    if fn is None:
        raise SourceError(f"{TF_GENERATION}: no _supports_default_dynamic_cache")
    excluded = next((_strings(n.value) for n in ast.walk(fn) if isinstance(n, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == "unsupported_model_names" for t in n.targets)), [])
    exempt: list[Any] = [n.left.value for n in ast.walk(fn) if isinstance(n, ast.Compare)
                         and isinstance(n.left, ast.Constant) and isinstance(n.ops[0], ast.In)]
    causal = _mapping_pairs(_parse(root, TF_AUTO_MODELING), "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", TF_AUTO_MODELING)
    def supported(cls: str) -> bool:  # the function's own expression, on the class name
        name = cls.lower()
        return any(e in name for e in exempt) or all(x not in name for x in excluded)
    no_cache = {t: c for t, c in sorted(causal.items()) if not supported(c)}
    raise_line = _raise_line(tree, "Assisted decoding requires a cache")
    tables: dict[str, dict[str, Any]] = {
        "no_default_cache": {"source": _span(TF_GENERATION, fn), "excluded_names": excluded, "exempt_names": exempt,
                             "values": no_cache, "raise": f"{TF_GENERATION}:{raise_line}" if raise_line else None}}
    tables["stateful"] = {"source": f"{TF}/models/*/modeling_*.py (_is_stateful = True)",
                          "values": _stateful_types(root)}
    tables["causal_lm"] = {"source": f"{TF_AUTO_MODELING} (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)",
                           "values": _causal_classes(root, causal)}
    tables["spans"] = {"source": "the statements the rules cite", "values": _tf_spans(root, tree)}
    tables["mtp"] = {"source": f"{TF}/models/*/configuration_*.py (num_mtp_layers)",
                     "values": _mtp_types(root, causal)}
    return tables


TF_MODELING_LAYERS = f"{TF}/modeling_layers.py"
_LAYER_NUMBER = re.compile(r"layers\\?\.(\d+)")  # r"model\.layers\.61.*": the MTP layer's index in the checkpoint


def _mtp_types(root: Path, causal: dict[str, str]) -> dict[str, dict]:
    """model_type -> how ``generate(use_mtp=True)`` runs it: the model types whose config class declares
    ``num_mtp_layers`` (a field, or an ``attribute_map`` entry naming the config.json key it is read from), the
    causal-LM class AutoModelForCausalLM builds for them, and that class's ``_keys_to_ignore_on_load_unexpected``,
    the patterns MtpModel.from_pretrained finds the MTP weights by (modeling_layers.py get_mtp_weights_regex): the
    fixed checkpoint layer numbers they name (None: no number, any depth; the patterns made from
    ``config.num_hidden_layers`` in ``__init__`` count as no number)."""
    configs: dict[str, str] = {}
    for rel in (TF_AUTO_MAPPINGS, TF_AUTO_CONFIG):
        if (root / rel).is_file():
            try:
                configs.update(_mapping_pairs(_parse(root, rel), "CONFIG_MAPPING_NAMES", rel))
            except SourceError:
                continue
    declared: dict[str, tuple[str, str]] = {}  # config class -> (file:line, config.json key)
    for path in sorted((root / TF / "models").glob("*/configuration_*.py")):
        rel = path.relative_to(root).as_posix()
        for node in _parse(root, rel).body:
            if isinstance(node, ast.ClassDef):
                found = _declares_mtp(node, rel)
                if found:
                    declared[node.name] = found
    classes: dict[str, tuple[str, ast.ClassDef, ast.Module]] = {}
    for path in sorted((root / TF / "models").glob("*/modeling_*.py")):
        rel = path.relative_to(root).as_posix()
        tree = _parse(root, rel)
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, (rel, node, tree))
    out: dict[str, dict] = {}
    for model_type, config_class in sorted(configs.items()):
        if config_class not in declared:
            continue
        where, key = declared[config_class]
        entry: dict[str, Any] = {"config": where, "key": key, "class": causal.get(model_type), "weights": None,
                                 "layers": None}
        if entry["class"] in classes:
            entry["weights"], entry["layers"] = _mtp_patterns(*classes[entry["class"]], classes)
        out[model_type] = entry
    return out


def _declares_mtp(node: ast.ClassDef, rel: str) -> tuple[str, str] | None:
    """(file:line, config.json key) of a config class that declares ``num_mtp_layers``: the ``attribute_map``
    entry (its key is the value) or the field (its key is the name)."""
    field = None
    for stmt in node.body:
        target = stmt.target if isinstance(stmt, ast.AnnAssign) else (
            stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None)
        if not isinstance(target, ast.Name):
            continue
        value = getattr(stmt, "value", None)
        if target.id == "attribute_map" and isinstance(value, ast.Dict):
            for k, v in zip(value.keys, value.values):
                if isinstance(k, ast.Constant) and k.value == "num_mtp_layers" and isinstance(v, ast.Constant):
                    return f"{rel}:{k.lineno}", str(v.value)
        if target.id == "num_mtp_layers":
            field = f"{rel}:{stmt.lineno}"
    return (field, "num_mtp_layers") if field else None


def _mtp_patterns(rel: str, node: ast.ClassDef, tree: ast.Module, classes: dict
                  ) -> tuple[str | None, list[int] | None]:
    """The file:line of the ``_keys_to_ignore_on_load_unexpected`` a causal-LM class has (its own, a base's in
    its file, or one its file's ``__init__`` sets from the config) and the checkpoint layer numbers it names."""
    seen, todo = set(), [node]
    while todo:
        cls = todo.pop(0)
        seen.add(cls.name)
        for stmt in cls.body:
            if (isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name)
                                                     and t.id == "_keys_to_ignore_on_load_unexpected"
                                                     for t in stmt.targets)
                    and not (isinstance(stmt.value, ast.Constant) and stmt.value.value is None)):
                numbers = sorted({int(n) for s in _strings(stmt.value) for n in _LAYER_NUMBER.findall(s)})
                return _span(rel, stmt), numbers or None
        todo += [classes[b.id][1] for b in cls.bases if isinstance(b, ast.Name) and b.id in classes
                 and classes[b.id][0] == rel and b.id not in seen]
    for n in ast.walk(tree):  # set in a model's __init__ from the config (layers num_hidden_layers and on)
        if (isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "_keys_to_ignore_on_load_"
                                              "unexpected" for t in n.targets)
                and "num_hidden_layers" in ast.unparse(n)):
            return _span(rel, n), None
    return None, None


def _tf_spans(root: Path, generation: ast.Module) -> dict[str, str | None]:
    """file:first-last of the statements transformers' rules cite, found by what they say (None: not in this
    release): the ``if`` that refuses stateful models, the vocabulary-size comparison, ``get_text_config``, the
    assistant's cache update, the UAG translator, and generate(use_mtp=True)'s branch and refusals."""
    def if_raising(tree: ast.Module, rel: str, words: str) -> str | None:
        best = None
        for n in ast.walk(tree):
            if isinstance(n, ast.If) and any(isinstance(r, ast.Raise) and any(words in x for x in _strings(r))
                                             for b in n.body for r in ast.walk(b)):
                if best is None or n.lineno > best.lineno:  # the innermost if
                    best = n
        return _span(rel, best) if best else None

    def comparing(tree: ast.Module, rel: str, words: str) -> str | None:
        n = next((n for n in ast.walk(tree) if isinstance(n, ast.If) and words in ast.unparse(n.test)), None)
        return _span(rel, n) if n else None

    def defined(rel: str, name: str) -> str | None:
        if not (root / rel).is_file():
            return None
        fn = _function(_parse(root, rel), name)
        return _span(rel, fn) if fn else None

    def elif_body(tree: ast.Module, rel: str, test: str) -> str | None:  # the branch alone, not the elifs after it
        n = next((n for n in ast.walk(tree) if isinstance(n, ast.If) and ast.unparse(n.test) == test), None)
        return f"{rel}:{n.lineno}-{n.body[-1].end_lineno}" if n else None

    candidate = f"{TF}/generation/candidate_generator.py"
    trees = {rel: _parse(root, rel) for rel in (candidate, TF_MODELING_LAYERS) if (root / rel).is_file()}

    def raising(rel: str, words: str) -> str | None:
        return if_raising(trees[rel], rel, words) if rel in trees else None

    return {"stateful_check": if_raising(generation, TF_GENERATION, "not supported with stateful models"),
            "vocab_size_check": comparing(generation, TF_GENERATION,
                                          "get_text_config().vocab_size == assistant_model.config.get_text_config()"),
            "get_text_config": defined(f"{TF}/configuration_utils.py", "get_text_config"),
            "assistant_cache_update": defined(candidate, "_update_past_and_masks"),
            "uag_translator": defined(candidate, "_get_assistant_to_target_input_ids"),
            "mtp_generator": elif_body(generation, TF_GENERATION, "generation_config.use_mtp"),
            "mtp_layers_read": raising(candidate, "Could not find `num_mtp_layers`"),
            "batch_size_one": if_raising(generation, TF_GENERATION, "only supported for batch_size = 1"),
            "mtp_no_patterns": raising(TF_MODELING_LAYERS, "does not seem to register any known MTP"),
            "mtp_weights_missing": raising(TF_MODELING_LAYERS, "weights are missing from")}


# PreTrainedModel._can_set_attn_implementation's heuristic on the class's module source (modeling_utils.py): with an
# ``*Attention*(nn.Module)`` class, the module must call the attention interface; without one it is assumed to.
_ATTENTION_CLASS = re.compile(r"^class \w*Attention\w*\(nn\.Module\):", re.M)


def _causal_classes(root: Path, causal: dict[str, str]) -> dict[str, dict]:
    """model_type -> its causal-LM class, where it is defined, and whether vLLM's Transformers modeling backend
    takes it: ``is_backend_compatible()`` (``_supports_attention_backend = True``) or
    ``_can_set_attn_implementation()`` (the heuristic above), both read from the class's modeling file."""
    where: dict[str, tuple[str, int, str]] = {}
    for path in sorted((root / TF / "models").glob("*/modeling_*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in re.finditer(r"^class (\w+)\(", text, re.M):
            where.setdefault(m.group(1), (path.relative_to(root).as_posix(), text.count("\n", 0, m.start()) + 1, text))
    out: dict[str, dict[str, Any]] = {}
    for model_type, cls in sorted(causal.items()):
        if cls not in where:
            out[model_type] = {"class": cls, "file": None}
            continue
        rel, line, text = where[cls]
        out[model_type] = {"class": cls, "file": f"{rel}:{line}",
                           "backend_compatible": "_supports_attention_backend = True" in text,
                           "can_set_attn": (not _ATTENTION_CLASS.search(text)
                                            or "ALL_ATTENTION_FUNCTIONS.get_interface(" in text)}
    return out


# A vision or audio tower's config beside a stateful language model: its model type is never a config.json's or a
# text config's, and its tower keeps no recurrent state.
SUB_CONFIG = re.compile(r"(Vision|Audio|WordTimestamp)\w*Config$")


def _stateful_types(root: Path) -> dict[str, str]:
    """model_type -> file:line, for the model folders whose modeling file sets ``_is_stateful = True``: the model
    types whose config class that folder's configuration file defines (configuration_auto.CONFIG_MAPPING_NAMES)."""
    configs: dict[str, str] = {}
    for rel in (TF_AUTO_MAPPINGS, TF_AUTO_CONFIG):  # auto_mappings.py holds the table where it exists
        if (root / rel).is_file():
            try:
                configs.update(_mapping_pairs(_parse(root, rel), "CONFIG_MAPPING_NAMES", rel))
            except SourceError:
                continue
    out = {}
    for path in sorted((root / TF / "models").glob("*/modeling_*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        m = re.search(r"^\s*_is_stateful = True", text, re.M)
        if not m:
            continue
        line = text.count("\n", 0, m.start()) + 1
        folder = path.parent
        defined = set()
        for cfg in folder.glob("configuration_*.py"):
            defined |= set(re.findall(r"^class (\w+)[(:]", cfg.read_text(encoding="utf-8", errors="replace"), re.M))
        rel = path.relative_to(root).as_posix()
        for model_type, cls in configs.items():
            if cls in defined and not SUB_CONFIG.search(cls):
                out[model_type] = f"{rel}:{line}"
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------------------------------------------- mlx-lm
MLX_UTILS = "mlx_lm/utils.py"
MLX_MODELS = "mlx_lm/models"
_NOT_MODELS = {"__init__", "base", "cache"}


def _closure(direct: set[str], imports: dict[str, set[str]], builds: set[str], remapping: dict[str, str]
             ) -> dict[str, str]:
    """model_type -> the model file of ``direct`` it ends in: those files, the files that import one of them and
    build no cache of their own, and the MODEL_REMAPPING names of any of these."""
    found = {m: m for m in direct}
    changed = True
    while changed:
        changed = False
        for module in sorted(imports):
            used = sorted(imports[module] & found.keys())
            if module not in found and module not in builds and used:
                found[module] = found[used[0]]
                changed = True
    found.update({k: found[v] for k, v in remapping.items() if v in found})
    return dict(sorted(found.items()))


def mlx(root: Path) -> dict:
    """mlx-lm's model modules and MODEL_REMAPPING (what ``load`` finds for a model_type), and the model types whose
    ``make_cache`` keeps an ``ArraysCache`` (not trimmable) or a ``RotatingKVCache`` (trimmable only inside its
    window)."""
    node = _assigned(_parse(root, MLX_UTILS), "MODEL_REMAPPING", MLX_UTILS)
    remapping: dict[str, str] = {k: v.value for k, v in _dict_entries(node, MLX_UTILS)
                                 if isinstance(v, ast.Constant) and isinstance(v.value, str)}
    folder = root / MLX_MODELS
    modules = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
    texts = {p.stem: p.read_text(encoding="utf-8", errors="replace") for p in folder.glob("*.py")
             if p.stem not in _NOT_MODELS}
    imports = {m: set(re.findall(r"^from \.(\w+) import", t, re.M)) | set(re.findall(r"^from \. import (\w+)", t, re.M))
               for m, t in texts.items()}
    builds = {m for m, t in texts.items() if re.search(r"\b\w*Cache\(", t)}
    tables = {"model_modules": {"source": f"{MLX_MODELS}/*.py", "values": modules},
              "model_remapping": {"source": _span(MLX_UTILS, node), "values": remapping}}
    for key, cls in (("arrays_cache", "ArraysCache"), ("rotating_cache", "RotatingKVCache")):
        direct = {m for m, t in texts.items() if f"{cls}(" in t}
        tables[key] = {"source": f"{MLX_MODELS}/*.py ({cls}( in make_cache)",
                       "values": _closure(direct, imports, builds, remapping)}
    tables["spans"] = {"source": "the statements the rules cite", "values": _mlx_spans(root)}
    return tables


def _statement(root: Path, rel: str, find: Callable[[ast.AST], bool], whole: bool = True,
               innermost: bool = False) -> str | None:
    """file:first-last (or the first line only, ``whole`` False) of the first node ``find`` accepts in file order
    (``innermost``: the last, for nested ifs that all contain what is looked for)."""
    if not (root / rel).is_file():
        return None
    nodes = sorted((n for n in ast.walk(_parse(root, rel)) if hasattr(n, "lineno") and find(n)),
                   key=lambda n: n.lineno)
    if not nodes:
        return None
    node: Any = nodes[-1] if innermost else nodes[0]
    return _span(rel, node) if whole else f"{rel}:{node.lineno}"


def _mlx_spans(root: Path) -> dict[str, str | None]:
    """file:lines of the statements mlx-lm's rules cite, found by what they say (None: not in this release)."""
    gen, cache, server = "mlx_lm/generate.py", f"{MLX_MODELS}/cache.py", "mlx_lm/server.py"

    def if_raising(words: str):
        return lambda n: isinstance(n, ast.If) and any(
            isinstance(r, ast.Raise) and any(words in x for x in _strings(r)) for b in n.body for r in ast.walk(b))

    def method(cls: str, name: str):
        def find(n):
            return (isinstance(n, ast.ClassDef) and n.name == cls
                    and any(isinstance(f, ast.FunctionDef) and f.name == name for f in n.body))
        return find

    def method_span(cls: str, name: str) -> str | None:
        if not (root / cache).is_file():
            return None
        for n in ast.walk(_parse(root, cache)):
            if isinstance(n, ast.ClassDef) and n.name == cls:
                f = next((f for f in n.body if isinstance(f, ast.FunctionDef) and f.name == name), None)
                return _span(cache, f) if f else None
        return None

    def calling(name: str, first_arg: str):  # name(...) or cache.name(...)
        return lambda n: (isinstance(n, ast.Call) and n.args and getattr(n.args[0], "id", None) == first_arg
                          and name in (getattr(n.func, "id", None), getattr(n.func, "attr", None)))

    def comparing_sizes(n) -> bool:
        return isinstance(n, ast.If) and "draft_tokenizer.vocab_size != tokenizer.vocab_size" in ast.unparse(n.test)

    return {"trimmable_check": _statement(root, gen, if_raising("requires a trimmable prompt cache"), innermost=True),
            "vocab_size_check": _statement(root, gen, if_raising("Draft model tokenizer does not match"),
                                           innermost=True),
            "server_vocab_size_check": _statement(root, server, comparing_sizes),
            "target_trim": _statement(root, gen, calling("trim_prompt_cache", "model_cache"), whole=False),
            "draft_trim": _statement(root, gen, calling("trim_prompt_cache", "draft_cache"), whole=False),
            "can_trim": _statement(root, cache, lambda n: isinstance(n, ast.FunctionDef)
                                   and n.name == "can_trim_prompt_cache"),
            "rotating_is_trimmable": method_span("RotatingKVCache", "is_trimmable"),
            "arrays_is_trimmable": method_span("ArraysCache", "is_trimmable"),
            "arrays_cache_class": _statement(root, cache, lambda n: isinstance(n, ast.ClassDef)
                                             and n.name == "ArraysCache", whole=False),
            "model_remapping": _statement(root, MLX_UTILS, lambda n: isinstance(n, ast.Assign) and any(
                getattr(t, "id", None) == "MODEL_REMAPPING" for t in n.targets)),
            "model_type_unsupported": _statement(root, MLX_UTILS, lambda n: isinstance(n, ast.Assign) and any(
                "not supported." in x for x in _strings(n.value)), whole=False)}


# ------------------------------------------------------------------------------------------------------- llama.cpp
LCP_CONVERSION = "conversion/__init__.py"


def _is_mmproj(node: ast.ClassDef, bases: list) -> int | None:
    """A class test: the line of a class that is MmprojModel or sets ``model_arch = gguf.MODEL_ARCH.MMPROJ``."""
    if node.name == "MmprojModel":
        return node.lineno
    for s in node.body:
        if (isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "model_arch" for t in s.targets)
                and isinstance(s.value, ast.Attribute)):
            return s.lineno if s.value.attr == "MMPROJ" else None
    return None


def llamacpp(root: Path) -> dict:
    """convert_hf_to_gguf.py's architecture registry: ``get_model_class`` looks an architecture up in
    ``TEXT_MODEL_MAP`` (architecture -> module of conversion/), imports that module and takes the class its
    ``@ModelBase.register(...)`` decorators filed for the name (the last one wins; an MmprojModel class is filed
    apart). An architecture converts when both hold; one the map names but its module does not register makes the
    converter fail (KeyError)."""
    tree = _parse(root, LCP_CONVERSION)
    node = _assigned(tree, "TEXT_MODEL_MAP", LCP_CONVERSION)
    mapped: dict[str, str] = {k: v.value for k, v in _dict_entries(node, LCP_CONVERSION)
                              if isinstance(v, ast.Constant) and isinstance(v.value, str)}
    found = Classes(root)
    registered: dict[str, dict[str, str]] = {}  # module -> architecture -> where (text classes only)
    for module in sorted(set(mapped.values())):
        got = found.module(f"conversion.{module}")
        if got is None:
            raise SourceError(f"conversion/{module}.py: no such file under {root}")
        rel, classes, _ = got
        text: dict[str, str] = {}
        for cls in sorted(classes.values(), key=lambda c: c.lineno):
            for deco in cls.decorator_list:
                if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute)
                        and deco.func.attr == "register" and getattr(deco.func.value, "id", None) == "ModelBase"):
                    mmproj = found.first(f"conversion.{module}", cls.name, _is_mmproj) is not None
                    for name in _strings(deco):
                        if mmproj:
                            continue
                        text[name] = f"{rel}:{deco.lineno} ({cls.name})"
        registered[module] = text
    converts = {a: registered[m][a] for a, m in sorted(mapped.items()) if a in registered[m]}
    unregistered = {a: f"conversion/{m}.py" for a, m in sorted(mapped.items()) if a not in registered[m]}
    return {"text_model_map": {"source": _span(LCP_CONVERSION, node), "values": dict(sorted(mapped.items()))},
            "converter_architectures": {"source": "conversion/*.py (@ModelBase.register on a text model class)",
                                        "values": converts},
            "mapped_not_registered": {"source": _span(LCP_CONVERSION, node), "values": unregistered}}


EXTRACTORS: dict[str, Callable[[Path], dict]] = {"vllm": vllm, "sglang": sglang, "transformers": transformers,
                                                 "mlx": mlx, "llamacpp": llamacpp}


def extract(engine: str, root: Path, release: str, read_from: str = "") -> dict:
    """The data file's content for ``engine`` at ``release`` read from the tree ``root``."""
    if engine not in EXTRACTORS:
        raise SourceError(f"no extractor for {engine!r}; known: {', '.join(EXTRACTORS)}")
    return {"engine": engine, "release": release, "read_from": read_from, "tables": EXTRACTORS[engine](root)}
