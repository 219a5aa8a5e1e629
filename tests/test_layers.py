"""The import graph of indexer/ keeps the layers of docs/architecture.md: no import from a lower layer up,
no import circle at import time, and only the lazy circles listed here; every import sits at the top of its module
but the deferred ones, read through ``indexer.deferred``. Read from the source with ``ast``, so nothing is imported
to check it.

``python tests/test_layers.py`` prints the graph (one line per module, ``*`` marks a deferred import).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "indexer"

# Bottom to top: a module may import its own layer and the layers below it, never one above.
LAYERS = [
    ("base", ("indexer", "indexer.errors", "indexer.files", "indexer.resources", "indexer.runlog", "indexer.scratch",
              "indexer.lockfile")),
    ("hub", ("indexer.hub",)),
    ("vocab", ("indexer.vocab",)),
    ("gguf", ("indexer.gguf",)),
    ("speed", ("indexer.speed",)),
    ("engines", ("indexer.engines",)),
    ("catalog", ("indexer.catalog",)),
    ("crawl", ("indexer.crawl",)),
    ("answer", ("indexer.answer",)),
    ("measure", ("indexer.measure",)),
    ("site", ("indexer.site", "indexer.hubsim")),
    ("jobs", ("indexer.jobs",)),
    ("commands", ("indexer.cli", "indexer.commands")),
]

# Deferred imports that close a circle inside one package (none crosses a layer). None is left: a new one
# must be listed here with why the import is deferred.
KNOWN_LAZY_CIRCLES: set[frozenset[str]] = set()


def deferred_modules() -> dict[str, str]:
    """indexer/deferred.py's MODULES: attribute -> the module it imports when first read."""
    tree = ast.parse((PACKAGE / "deferred.py").read_text(encoding="utf-8"))
    found = [n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "MODULES"]
    return ast.literal_eval(found[0])


def is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def module_level(tree: ast.Module) -> list[ast.stmt]:
    """The statements run when the module is imported: its body, into ``if`` and ``try`` blocks (a version's
    fallback), not into functions, classes or ``if TYPE_CHECKING:`` (a type checker's imports, none at run time)."""
    out, todo = [], list(tree.body)
    while todo:
        node = todo.pop()
        if is_type_checking(node):
            continue
        out.append(node)
        if isinstance(node, (ast.If, ast.Try)):
            todo += node.body + node.orelse + getattr(node, "finalbody", [])
            todo += [s for h in getattr(node, "handlers", []) for s in h.body]
    return out


def type_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes inside ``if TYPE_CHECKING:`` blocks: imports that never run."""
    return {id(n) for t in ast.walk(tree) if is_type_checking(t) for n in ast.walk(t)}


def late_imports(source: str) -> list[str]:
    """The import statements of ``source`` that run later than its import (inside a function or class)."""
    tree = ast.parse(source)
    top, skip = set(map(id, module_level(tree))), type_only(tree)
    return [f"{n.lineno}: {ast.unparse(n)}" for n in ast.walk(tree)
            if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in top and id(n) not in skip]


def modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        if "versions" in rel.parts:  # Alembic revisions: they import alembic and sqlalchemy only
            continue
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


@functools.lru_cache(maxsize=1)
def import_graph() -> dict[str, set[tuple[str, bool]]]:
    """module -> {(imported indexer module, at import time?)}; ``deferred.NAME`` is a deferred import of the
    module deferred.py names for it."""
    mods = modules()
    later = deferred_modules()
    graph: dict[str, set[tuple[str, bool]]] = {m: set() for m in mods}
    for mod, (path, is_pkg) in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top, skip = set(map(id, module_level(tree))), type_only(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "deferred"
                    and later.get(node.attr) in mods):
                graph[mod].add((later[node.attr], False))
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    pkg = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = ".".join(pkg[: len(pkg) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                names = [base] + [f"{base}.{a.name}" for a in node.names]
                if names[1:] and all(n in mods for n in names[1:]) and mod.startswith(base + "."):
                    # ``from . import submodule`` of the module's own package, imported before it: no edge to
                    # the package (a name defined in the package's __init__ still is one)
                    names = names[1:]
            else:
                continue
            for name in names:
                if name in mods and name != mod:
                    graph[mod].add((name, id(node) in top))
    return graph


def layer_of(mod: str) -> int:
    best, found = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and len(p) > best:
                best, found = len(p), i
    assert found is not None, f"{mod} is in no layer: add it to LAYERS (and to docs/architecture.md)"
    return found


def circles(graph, module_level_only: bool) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    edges = {m: {t for t, top in ts if top or not module_level_only} for m, ts in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_layer_and_no_import_goes_up():
    graph = import_graph()
    upward = [f"{m} ({LAYERS[layer_of(m)][0]}) imports {t} ({LAYERS[layer_of(t)][0]})"
              for m, ts in graph.items() for t, _ in ts if layer_of(t) > layer_of(m)]
    assert upward == []


def test_no_import_circle_at_import_time():
    assert circles(import_graph(), module_level_only=True) == []


def test_only_the_known_lazy_circles():
    found = {frozenset(c) for c in circles(import_graph(), module_level_only=False)}
    assert found == KNOWN_LAZY_CIRCLES
    mods = modules()
    for c in found:  # a lazy circle never spans two packages
        assert len({m if mods[m][1] else m.rsplit(".", 1)[0] for m in c}) == 1, c


def test_layer_packages_stay_light():
    """A layer's ``__init__`` imports nothing but base modules, so importing one module of a layer (the query
    path imports a few) does not load the rest of it."""
    graph = import_graph()
    for p in ("indexer.hub", "indexer.vocab", "indexer.gguf", "indexer.catalog", "indexer.crawl", "indexer.answer"):
        assert {t for t, top in graph[p] if top and layer_of(t) != 0} == set(), p


def test_the_graph_sees_real_imports():
    """The walker is not blind: known edges of each kind are found."""
    graph = import_graph()
    assert ("indexer.hub.pacing", True) in graph["indexer.hub.client"]  # relative, module level
    assert ("indexer.catalog.db", True) in graph["indexer.crawl.loop"]  # two dots up
    assert ("indexer.crawl.loop", True) in graph["indexer.answer.live"]
    assert ("indexer.gguf.file", False) in graph["indexer.answer.target"]  # deferred.gguf_file
    assert ("indexer.answer.live", False) in graph["indexer.commands.query"]  # deferred.live


def test_imports_sit_at_the_top():
    """Every import runs when its module is imported; only deferred.py imports later (its MODULES, by name)."""
    late = {p.relative_to(PACKAGE.parent).as_posix(): found for p in sorted(PACKAGE.rglob("*.py"))
            if "versions" not in p.relative_to(PACKAGE).parts and (found := late_imports(p.read_text()))}
    assert late == {}
    mods = modules()
    assert [m for m in deferred_modules().values() if m.startswith("indexer") and m not in mods] == []


def test_the_late_import_walker_sees_them():
    source = ("import os\nif os.name:\n    import json\ntry:\n    import tomllib\nexcept ImportError:\n"
              "    import tomli as tomllib\nif TYPE_CHECKING:\n    from x import Y\n"
              "def f():\n    import re\n    if True:\n        from . import a\nclass C:\n    import sys\n")
    assert late_imports(source) == ["11: import re", "15: import sys", "13: from . import a"]


if __name__ == "__main__":
    for m, ts in sorted(import_graph().items()):
        print(f"{m} [{LAYERS[layer_of(m)][0]}] ->", ", ".join(sorted(t + ("" if top else "*") for t, top in ts)))


SQL_WORDS = ("SELECT ", "INSERT ", "UPDATE ", "DELETE FROM")


def sql_literals(path: Path) -> list[str]:
    """String literals in a module that read as SQL statements (upper-case keywords, as the catalog writes them)."""
    return [n.value for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and any(n.value.lstrip().startswith(w) for w in SQL_WORDS)]


def test_the_answer_layer_holds_no_sql():
    """The answer words and decides; what it reads is asked of the catalog layer's functions."""
    found = {p.relative_to(PACKAGE).as_posix(): lits for p in sorted((PACKAGE / "answer").rglob("*.py"))
             if (lits := sql_literals(p))}
    assert not found, found
    assert sql_literals(PACKAGE / "catalog" / "repoids.py")  # the check sees the statements it looks for
