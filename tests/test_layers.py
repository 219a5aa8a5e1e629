"""The import graph of indexer/ keeps the layers of docs/architecture.md: no import from a lower layer up,
no import circle at import time, and only the lazy circles listed here (each one a function-level import
inside one package). Read from the source with ``ast``, so nothing is imported to check it.

``python tests/test_layers.py`` prints the graph (one line per module, ``*`` marks a function-level import).
"""

from __future__ import annotations

import ast
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

# Function-level imports that close a circle inside one package (none crosses a layer). None is left: a new one
# must be listed here with why the import is deferred.
KNOWN_LAZY_CIRCLES: set[frozenset[str]] = set()


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


def import_graph() -> dict[str, set[tuple[str, bool]]]:
    """module -> {(imported indexer module, at module level?)}."""
    mods = modules()
    graph: dict[str, set[tuple[str, bool]]] = {m: set() for m in mods}
    for mod, (path, is_pkg) in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = set(map(id, tree.body))
        for node in ast.walk(tree):
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
    assert ("indexer.crawl.loop", False) in graph["indexer.answer.live"]  # function level
    assert ("indexer.gguf.file", False) in graph["indexer.answer.lookup"]


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
