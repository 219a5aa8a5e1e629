"""Audit an engine's citations against a release's source tree (issue 29 part 6): does every cited file:line
still hold the text the rule depends on?

    python -m indexer.engines.audit SOURCE_DIR --engine vllm==0.35.0

Each rule row (``archrules.ArchRule``, ``archrules.Ranged``) names its source as ``file:line`` pieces and keeps one
short anchor per piece, a text found at that line in the release it was read from. For the rows of the newest
release we have read (or of VERSION, when it is one we know), the audit looks for each anchor in SOURCE_DIR (the
unpacked sdist or checkout) and says, per citation:

* ``holds``: the anchor is within the cited lines;
* ``moved``: it is in the same file at other lines, or in another file (the new place is printed);
* ``changed``: the file is there but the anchor is in no file of the tree;
* ``vanished``: the file is gone and the anchor is nowhere;
* ``no anchor``: the row keeps no anchor for it (not checked).

Exit 0 when everything holds, 1 when something moved, changed or vanished, 2 on bad input. Nothing is downloaded:
docs/engines.md says how to bring a release in with it.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from .archrules import ArchRule

PIECE = re.compile(r"^(?:(?P<file>[\w./-]+\.\w+):)?(?P<a>\d+)(?:-(?P<b>\d+))?$")
SUFFIXES = (".py", ".cpp", ".h", ".c", ".go", ".txt")


def pieces(source: str) -> list[tuple[str, int, int]]:
    """The (file, first line, last line) citations of a source string such as
    ``"a/b.py:10-12, 40; c/d.py:7 (words)"``: a bare line range belongs to the file before it."""
    out: list[tuple[str, int, int]] = []
    current = None
    for part in re.split(r"[;,]", re.sub(r"\([^)]*\)", "", source)):
        m = PIECE.match(part.strip())
        if not m:
            continue
        current = m["file"] or current
        if current is None:
            continue
        a = int(m["a"])
        out.append((current, a, int(m["b"] or a)))
    return out


def citations(engine) -> list[dict]:
    """Every anchored citation of the engine entry's rows at its release: where (the row), file, lines, anchor."""
    out, seen = [], []
    for field, rows in engine.ranged.items():
        for row in rows:
            if row not in _held(engine, rows) or row in seen:  # a table listed twice (llama.cpp's GGUF rows)
                continue
            seen.append(row)
            where = row.check if isinstance(row, ArchRule) else field
            source = row.source
            if not source and isinstance(getattr(row, "value", None), dict):  # Engine.sources: check -> file:line
                source = "; ".join(v for v in row.value.values() if isinstance(v, str))
            cited = pieces(source)
            for i, (file, a, b) in enumerate(cited):
                anchor = row.anchors[i] if i < len(row.anchors) else None
                out.append({"where": where, "file": file, "lines": (a, b), "anchor": anchor})
    return out


def _held(engine, rows) -> tuple:
    from .archrules import at_release

    return at_release(rows, engine.release, engine.releases)


def _resolve(root: Path, file: str) -> Path | None:
    """The cited file under the tree: as written, or under one of the tree's top-level folders (a path relative
    to the package, such as vLLM's head rules)."""
    direct = root / file
    if direct.is_file():
        return direct
    for sub in sorted(p for p in root.iterdir() if p.is_dir()):
        if (sub / file).is_file():
            return sub / file
    return None


def _lines_with(text: str, anchor: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines(), 1) if anchor in line]


class Tree:
    """The source tree, its files read once."""

    def __init__(self, root: Path):
        self.root = root
        self._all: list[Path] | None = None

    def elsewhere(self, anchor: str, skip: Path | None) -> list[str]:
        """file:line of the anchor in other files of the tree."""
        if self._all is None:
            self._all = [p for p in self.root.rglob("*") if p.suffix in SUFFIXES and p.is_file()]
        hits = []
        for p in self._all:
            if p == skip:
                continue
            try:
                text = p.read_text(errors="replace")
            except OSError:
                continue
            if anchor in text:
                hits += [f"{p.relative_to(self.root)}:{n}" for n in _lines_with(text, anchor)]
        return hits


def audit(engine, root: Path) -> list[dict]:
    """Each citation with its ``status`` and, when it moved, ``now`` (file:line)."""
    tree = Tree(root)
    out = []
    for c in citations(engine):
        path = _resolve(root, c["file"])
        a, b = c["lines"]
        if c["anchor"] is None:
            out.append({**c, "status": "no anchor", "now": None})
            continue
        if path is not None:
            found = _lines_with(path.read_text(errors="replace"), c["anchor"])
            if any(a <= n <= b for n in found):
                out.append({**c, "status": "holds", "now": None})
                continue
            if found:
                near = min(found, key=lambda n: abs(n - a))
                out.append({**c, "status": "moved", "now": f"{c['file']}:{near}"})
                continue
        other = tree.elsewhere(c["anchor"], path)
        if other:
            out.append({**c, "status": "moved", "now": ", ".join(other[:3])})
        else:
            out.append({**c, "status": "changed" if path is not None else "vanished", "now": None})
    return out


def render(engine, results: list[dict], release: str) -> str:
    """One line per citation that needs a look, then the counts."""
    lines = [f"{engine.name}: the rows of {engine.release} against the source of {release}"]
    for r in results:
        if r["status"] == "holds":
            continue
        a, b = r["lines"]
        cited = f"{r['file']}:{a}" + (f"-{b}" if b != a else "")
        now = f" -> {r['now']}" if r["now"] else ""
        anchor = f" {r['anchor']!r}" if r["anchor"] else ""
        lines.append(f"  {r['status']:9} {cited}{now}{anchor} ({r['where']})")
    counts = {s: sum(1 for r in results if r["status"] == s)
              for s in ("holds", "moved", "changed", "vanished", "no anchor")}
    lines.append("  " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status."""
    from . import ENGINES

    p = argparse.ArgumentParser(prog="python -m indexer.engines.audit",
                                description="Check every cited file:line of an engine's rules in a release's source "
                                            "tree.")
    p.add_argument("source_dir", help="the release's unpacked source (sdist or checkout)")
    p.add_argument("--engine", required=True, help="ENGINE==VERSION, e.g. vllm==0.35.0")
    args = p.parse_args(argv)
    name, _, release = args.engine.partition("==")
    root = Path(args.source_dir)
    if name not in ENGINES or not release:
        print(f"error: --engine {args.engine!r}: give ENGINE==VERSION with ENGINE one of {', '.join(ENGINES)}",
              file=sys.stderr)
        return 2
    if not root.is_dir():
        print(f"error: {root}: not a directory", file=sys.stderr)
        return 2
    e = ENGINES[name]
    e = e.at(release) if release in e.releases else e
    results = audit(e, root)
    print(render(e, results, release))
    return 0 if all(r["status"] in ("holds", "no anchor") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
