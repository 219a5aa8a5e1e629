"""Every public function, class and method of indexer/ has a docstring (one line that says
why). Public: its name has no leading underscore, and so has every class it sits in; functions nested in functions
are not counted. Alembic revisions are skipped (migrations/env.py is not). Read from the source with ``ast``, so
nothing is imported to check it.

``python tests/test_docstrings.py`` prints the offenders, one ``path:line: name`` a line.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "indexer"
ROOT = PACKAGE.parent

# Public defs allowed without a docstring: none. Add one here only with a reason beside it.
EXEMPT: set[str] = set()

DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def undocumented(source: str) -> list[tuple[int, str]]:
    """(line, qualified name) of each public def of ``source`` without a docstring."""
    out: list[tuple[int, str]] = []

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, DEFS):
                if node.name.startswith("_"):
                    continue  # private, or a dunder: and a private class's methods are private too
                if ast.get_docstring(node) is None:
                    out.append((node.lineno, prefix + node.name))
                if isinstance(node, ast.ClassDef):
                    walk(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, (ast.If, ast.Try)):  # e.g. a def chosen by Python version
                for part in (node.body, node.orelse, getattr(node, "finalbody", []),
                             *(h.body for h in getattr(node, "handlers", []))):
                    walk(part, prefix)

    walk(ast.parse(source).body, "")
    return out


def sources() -> list[Path]:
    """indexer/'s modules, Alembic revisions left out (generated, and run only by Alembic)."""
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if "versions" not in p.relative_to(PACKAGE).parts)


def offenders() -> dict[str, int]:
    """``path:qualname`` -> line of every public def of indexer/ without a docstring."""
    out = {}
    for path in sources():
        rel = path.relative_to(ROOT).as_posix()
        for line, name in undocumented(path.read_text("utf-8")):
            out[f"{rel}:{name}"] = line
    return out


def test_every_public_def_has_a_docstring():
    missing = {k: line for k, line in offenders().items() if k not in EXEMPT}
    assert not missing, "public defs without a docstring (one line that says why):\n" + "\n".join(
        f"  {k.split(':')[0]}:{line}: {k.split(':')[1]}" for k, line in sorted(missing.items()))


def test_exemptions_are_still_needed():
    stale = EXEMPT - set(offenders())
    assert not stale, f"exempt but documented or gone, remove from EXEMPT: {sorted(stale)}"


def test_walk_finds_what_it_should():
    src = '''
def public(): pass
def documented():
    """Why."""
def _private(): pass
class Thing:
    def method(self): pass
    def __init__(self): pass
    class Inner:
        """Why."""
        async def hook(self): pass
    def outer(self):
        """Why."""
        def nested(): pass
class _Hidden:
    def method(self): pass
try:
    def chosen(): pass
except ImportError:
    pass
'''
    assert undocumented(src) == [(2, "public"), (6, "Thing"), (7, "Thing.method"), (11, "Thing.Inner.hook"),
                                 (18, "chosen")]


def test_walk_covers_the_package():
    names = {p.relative_to(ROOT).as_posix() for p in sources()}
    assert "indexer/catalog/migrations/env.py" in names and "indexer/cli.py" in names
    assert not any("/versions/" in n for n in names)


if __name__ == "__main__":
    for key, line in sorted(offenders().items(), key=lambda kv: (kv[0].split(":")[0], kv[1])):
        path, name = key.split(":")
        print(f"{path}:{line}: {name}" + ("  (exempt)" if key in EXEMPT else ""))
