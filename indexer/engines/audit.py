"""Audit an engine's citations against a release's source tree: does every cited file:line still hold what the rule
depends on?

    python -m indexer.engines.audit SOURCE_DIR [SOURCE_DIR ...] --engine vllm==0.35.0 [--pin]

Every ``file:line`` the engine module states (its rows, sources, fixes, head rules, launch commands, comments) is a
citation. Each is read at one release (the ``since`` of the row it is in, the ``release`` of the head-rules class it
is in, the release its comment names, else the module's ``READ_AT`` or the engine's oldest release) and holds until
the row's ``until`` (or the release its row was re-lined at, or the ``release`` of a subclass of its head-rules
class). What a citation depends on is pinned two ways:

* a **pin**: the text of the cited lines at the release it was read at (``--pin`` records it from that release's
  tree into ``indexer/engines/data/<engine>/pins.json``, with its first and last line): the condition, the
  ``raise`` and its message, the ``return`` or the value, whatever the range holds;
* an **anchor** a row keeps (``ArchRule.anchors``): a short text found in the cited lines, matched as whole words.

Per citation the audit says:

* ``holds``: the pinned lines are the cited lines (and the anchor is among them);
* ``moved``: the pinned lines are in the same file at other lines (the new place is printed), or, with the file
  gone, in another file;
* ``changed``: the file is there but the pinned lines are not (a raise became a warning, a class was renamed);
* ``vanished``: the file is gone and the lines are nowhere;
* ``unchecked``: neither a pin nor an anchor, or the file is not in the trees given.

``--pin`` at a release also records how each citation holding there held (``indexer/engines/data/<engine>/
audited.json``: release -> read at -> citation -> ``"here"``, or its place): a citation read at another release whose
lines moved is **re-pinned** at its ``file:line`` there (the audit checks the pinned text at that place, and an answer
for that release cites it: :func:`indexer.engines.tables.reline`); one whose text differs but whose rule a person
re-read as the same is recorded with ``--same`` (its place, its own pin and why). A citation that changed or vanished
otherwise cannot be pinned: the module must say what that release does (a row with ``since``/``until``). The tests
compare this record with the citations each release has now, so a module edited without re-running the audit fails
without the source trees.

The tables extracted at the release (``indexer/engines/data/<engine>/<release>.json``: registries, the classes that
capture hidden states, the converter's architectures, with their file:line) are checked too: each ``holds`` when
the extractor reads the same from the trees, else it ``changed``.

Exit 0 only when every citation and table holds and at least one was checked; 1 otherwise; 2 on bad input. Nothing
is downloaded: docs/engines.md says how to bring a release in with it.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib
import io
import json
import os
import re
import sys
import tokenize
from pathlib import Path
from typing import Any

from . import ENGINES
from .archrules import ArchRule
from .archrules import holds as row_holds
from .extract import EXTRACTORS, SourceError
from .tables import CITED
from .tables import ranges as _ranges

SUFFIXES = (".py", ".cpp", ".h", ".c", ".go", ".txt")
DATA = Path(__file__).resolve().parent / "data"
# Where the engines' packages sit in their trees: a path cited relative to one (vLLM's and SGLang's head rules) is
# looked for there first.
PACKAGE_ROOTS = ("python/sglang/srt/", "vllm/", "src/transformers/", "mlx_lm/", "mlx_engine/")
STATUSES = ("holds", "moved", "changed", "vanished", "unchecked")


def pieces(source: str) -> list[tuple[str, int, int]]:
    """The (file, first line, last line) citations of a source string such as
    ``"a/b.py:10-12, 40; c/d.py:7 (words)"``: the ranges after a file's colon, joined by ", ", are its."""
    return [(m["file"], a, b) for m in CITED.finditer(re.sub(r"\([^)]*\)", "", source))
            for a, b in _ranges(m["ranges"])]


# ------------------------------------------------------------------------------------ which citations, at which release
def _scopes(tree: ast.Module, releases: tuple) -> list[tuple[int, int, Any, Any, Any]]:
    """(first line, last line, read at, until) of the module's release scopes: a call with ``since=``/``until=``
    (ArchRule, Ranged, replace), ``relined(row, R, source)`` (the source from R, the row until R), a class with a
    ``release = "R"`` attribute (read at R, until the release of a subclass in the module that has a later one;
    from R when it subclasses such a class, else from the oldest release: its rules answer older releases too)."""
    until_of: dict[str, Any] = {}  # a row's variable -> the release it was re-lined or replaced at
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Name):
            func = getattr(n.func, "id", getattr(n.func, "attr", ""))
            if func == "relined" and len(n.args) > 1 and isinstance(n.args[1], ast.Constant):
                until_of[n.args[0].id] = n.args[1].value
            kw = {k.arg: k.value.value for k in n.keywords if isinstance(k.value, ast.Constant)}
            if func == "replace" and "until" in kw and "source" not in kw:
                until_of[n.args[0].id] = kw["until"]
    class_release = {n.name: s.value.value for n in ast.walk(tree) if isinstance(n, ast.ClassDef) for s in n.body
                     if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and s.value.value in releases
                     and any(isinstance(t, ast.Name) and t.id == "release" for t in s.targets)}
    out: list[tuple[int, int | None, Any, Any, Any]] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign):
            for target in n.targets:  # X = row, or X, Y = (row, row)
                pairs = ([(target, n.value)] if isinstance(target, ast.Name) else
                         list(zip(target.elts, n.value.elts)) if isinstance(target, ast.Tuple)
                         and isinstance(n.value, ast.Tuple) else [])
                for name, value in pairs:
                    if isinstance(name, ast.Name) and name.id in until_of:
                        out.append((value.lineno, value.end_lineno, None, None, until_of[name.id]))
        if isinstance(n, ast.Call):
            kw = {k.arg: k.value.value for k in n.keywords if isinstance(k.value, ast.Constant)}
            func = getattr(n.func, "id", getattr(n.func, "attr", ""))
            if func == "relined" and len(n.args) > 2 and isinstance(n.args[1], ast.Constant):
                out.append((n.args[2].lineno, n.args[2].end_lineno, n.args[1].value, n.args[1].value, None))
            elif "since" in kw or "until" in kw:
                out.append((n.lineno, n.end_lineno, kw.get("read_at") or kw.get("since"), kw.get("since"),
                            kw.get("until")))
        elif isinstance(n, ast.ClassDef) and n.name in class_release:
            # a subclass with a later release supersedes the class's own citations from then
            later = sorted((class_release[c.name] for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
                            and c.name in class_release and any(getattr(b, "id", None) == n.name for b in c.bases)
                            and releases.index(class_release[c.name]) > releases.index(class_release[n.name])),
                           key=releases.index)
            derived = any(getattr(b, "id", None) in class_release for b in n.bases)
            out.append((n.lineno, n.end_lineno, class_release[n.name], class_release[n.name] if derived else None,
                        later[0] if later else None))
    return [(first, last if last is not None else first, at, since, until) for first, last, at, since, until in out]


def module_citations(path: Path, releases: tuple, default: str | None = None) -> list[dict]:
    """Every citation in an engine module's strings (implicitly joined ones whole) and comments: where (module
    line), file, lines, read_at, until."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    scopes = _scopes(tree, releases)
    lines = text.splitlines()
    found: list[tuple[int, str, int | None]] = [(n.lineno, n.value, None) for n in ast.walk(tree)
             if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    found += [(t.start[0], t.string, t.start[1]) for t in tokenize.generate_tokens(io.StringIO(text).readline)
              if t.type == tokenize.COMMENT]
    out = []
    for i, words, comment_col in sorted(found, key=lambda f: f[0]):
        inner = sorted((s for s in scopes if s[0] <= i <= s[1]), key=lambda s: s[1] - s[0])  # innermost first
        named = _named_release(lines, i, comment_col, releases) if comment_col is not None else None
        scope = next((s for s in inner if s[2]), None)
        read_at = named or (scope[2] if scope else None)
        since = named or (scope[3] if scope else None)
        until = next((s[4] for s in inner if s[4]), None)
        for m in CITED.finditer(words):
            for a, b in _ranges(m["ranges"]):
                out.append({"where": f"{path.name}:{i}", "file": m["file"], "lines": (a, b), "anchor": None,
                            "read_at": read_at or default or releases[0], "since": since, "until": until})
    return out


def _named_release(lines: list[str], i: int, col: int, releases: tuple) -> str | None:
    """The release a comment names for its citations: on the citation's line, else the nearest line above in the
    same comment block (``# ... at 5.25.0: ... utils.py:4002``)."""
    def named(text: str) -> str | None:
        hits = [r for r in releases if re.search(rf"(?<![\w.]){re.escape(r)}(?![\w])", text)]
        return hits[-1] if len(hits) == 1 else None

    line = lines[i - 1]
    if (r := named(line[col:])) is not None:
        return r
    j = i - 1
    while j >= 1 and lines[j - 1].lstrip().startswith("#"):
        if (r := named(lines[j - 1])) is not None:
            return r
        j -= 1
    return None


def _row_citations(engine, default: str | None = None) -> list[dict]:
    """The anchored citations of the engine's rows (architecture rows, Ranged values), each at its own release."""
    out, seen = [], []
    for field, rows in engine.ranged.items():
        for row in rows:
            if row in seen:  # a table listed twice (llama.cpp's GGUF rows)
                continue
            seen.append(row)
            where = row.check if isinstance(row, ArchRule) else field
            source = row.source
            if not source and isinstance(getattr(row, "value", None), dict):  # Engine.sources: check -> file:line
                source = "; ".join(v for v in row.value.values() if isinstance(v, str))
            for i, (file, a, b) in enumerate(pieces(source)):
                anchor = row.anchors[i] if i < len(row.anchors) else None
                out.append({"where": where, "file": file, "lines": (a, b), "anchor": anchor,
                            "read_at": row.read_at or row.since or default or engine.releases[0], "since": row.since,
                            "until": row.until})
    return out


def engine_module(engine) -> Path | None:
    """The file of the engine's module (where its launch function is defined), None for an engine made elsewhere."""
    module = getattr(engine.launch, "__module__", None)
    if not module or not module.startswith("indexer.engines."):
        return None
    return Path(str(importlib.import_module(module).__file__))


def citations(engine, *, release: str | None = None) -> list[dict]:
    """Every citation of the engine that holds at ``release`` (default: its newest), with the anchor its row keeps:
    the module's text when the engine is one of ours, else its rows."""
    releases = engine.releases or (engine.release,)
    release = release or releases[-1]
    path = engine_module(engine)
    # the release a module's citations without a scope were read at: READ_AT where releases older than the one
    # first read were added later, else the oldest
    default = getattr(importlib.import_module(engine.launch.__module__), "READ_AT", None) if path else None
    rows = _row_citations(engine, default)
    # the rows know their releases exactly (also where a module builds them in a loop): the module's text adds the
    # citations no row states (head rules, launch commands, comments)
    in_rows = {(c["file"], c["lines"]) for c in rows}
    found = rows + ([c for c in module_citations(path, releases, default) if (c["file"], c["lines"]) not in in_rows]
                    if path else [])
    anchors = {(c["file"], c["lines"], c["read_at"]): c["anchor"] for c in rows if c["anchor"]}
    out, seen = [], set()
    for c in found:
        if not _holds(c, release, releases):
            continue
        key = (c["file"], c["lines"], c["read_at"])
        if key in seen:
            continue
        seen.add(key)
        out.append({**c, "anchor": anchors.get(key, c["anchor"])})
    return out


def _holds(c: dict, release: str, releases: tuple) -> bool:
    if release not in releases:  # a release we have not read: what holds at the newest
        release = releases[-1]
    return row_holds(_Span(c["since"], c["until"]), release, releases)


class _Span:
    def __init__(self, since, until):
        self.since, self.until = since, until


# ------------------------------------------------------------------------------------------------ the source trees
class Trees:
    """The source trees given (a release's unpacked sources), their files found once."""

    def __init__(self, roots: list[Path]):
        self.roots = roots
        self._files: list[tuple[Path, str]] | None = None
        self._text: dict[Path, list[str]] = {}

    def files(self) -> list[tuple[Path, str]]:
        """Every source file under the roots with its path relative to its root, listed once."""
        if self._files is None:
            self._files = []
            for root in self.roots:
                for dirpath, _, names in os.walk(root):
                    for n in names:
                        if n.endswith(SUFFIXES):
                            p = Path(dirpath, n)
                            self._files.append((p, p.relative_to(root).as_posix()))
        return self._files

    def resolve(self, file: str) -> list[Path]:
        """The cited file: as written under a root, else the files whose path ends with it (a path relative to a
        package, such as vLLM's head rules), shortest first."""
        for root in self.roots:
            if (root / file).is_file():
                return [root / file]
        ends = [(p, rel) for p, rel in self.files() if rel.endswith("/" + file)]
        under = [p for p, rel in ends if any(rel == r + file for r in PACKAGE_ROOTS)]
        return under[:1] if len(under) == 1 else sorted((p for p, _ in ends), key=lambda p: len(p.parts))

    def lines(self, path: Path) -> list[str]:
        """A file's lines, read once (a citation's anchor is matched against them)."""
        if path not in self._text:
            self._text[path] = path.read_text(encoding="utf-8", errors="replace").splitlines()
        return self._text[path]


def _digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(s.strip() for s in lines).encode()).hexdigest()[:16]


def pin_of(lines: list[str], a: int, b: int) -> dict | None:
    """The pin of lines a..b of a file (None: the file is shorter)."""
    if a < 1 or b > len(lines) or b < a:
        return None
    cut = lines[a - 1:b]
    texts = [s.strip() for s in cut if s.strip()]
    lead = next((i for i, s in enumerate(cut) if s.strip()), 0)
    return {"sha": _digest(cut), "first": texts[0] if texts else "", "last": texts[-1] if texts else "",
            **({"lead": lead} if lead else {})}


def _find(lines: list[str], pin: dict, n: int) -> list[int]:
    """First lines of the n-line windows of ``lines`` whose text is the pin's (a window starts ``lead`` blank lines
    before a line equal to the pin's first)."""
    lead = pin.get("lead", 0)
    starts = [j - lead for j, line in enumerate(lines) if line.strip() == pin["first"]] if pin["first"] else \
        range(len(lines))
    return [i + 1 for i in starts if 0 <= i <= len(lines) - n and _digest(lines[i:i + n]) == pin["sha"]]


def _word_hits(lines: list[str], anchor: str) -> list[int]:
    """Lines holding the anchor as whole words (a renamed ``class ArraysCacheV2`` is not ``class ArraysCache``)."""
    pattern = re.compile((r"(?<![\w])" if anchor[:1].isalnum() or anchor[:1] == "_" else "") + re.escape(anchor)
                         + (r"(?![\w])" if anchor[-1:].isalnum() or anchor[-1:] == "_" else ""))
    return [i for i, line in enumerate(lines, 1) if pattern.search(line)]


def key_of(c: dict) -> str:
    """A citation's ``file:line`` or ``file:a-b`` key, as pins.json records it."""
    a, b = c["lines"]
    return f"{c['file']}:{a}" + (f"-{b}" if b != a else "")


def load_pins(engine_name: str) -> dict:
    """release -> citation -> pin, as ``--pin`` recorded them."""
    path = DATA / _folder(engine_name) / "pins.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def load_audited(engine_name: str) -> dict:
    """release -> read at -> citation -> ``"here"`` or its place at the release, as ``--pin`` recorded them."""
    path = DATA / _folder(engine_name) / "audited.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _folder(engine_name: str) -> str:
    return engine_name.replace(".", "")


def check(c: dict, trees: Trees, pins: dict, place: str | dict | None = None) -> dict:
    """One citation's status against the trees, with ``now`` (file:line) when it moved; ``place``: where it was
    re-pinned at the trees' release (its pinned text is looked for there; a dict: re-read there, with its own pin
    and why the rule is the same)."""
    pin = pins.get(c["read_at"], {}).get(key_of(c))
    if place is not None:
        where = place["at"] if isinstance(place, dict) else place
        if isinstance(place, dict):
            pin = place["pin"]
        file, _, lines = where.rpartition(":")
        first, _, last = lines.partition("-")
        got = check({**c, "file": file, "lines": (int(first), int(last or first)), "anchor": None}, trees,
                    {c["read_at"]: {where: pin}} if pin is not None else {})
        return {**got, "file": c["file"], "lines": c["lines"], "anchor": c["anchor"], "at": where}
    a, b = c["lines"]
    paths = trees.resolve(c["file"])
    if pin is None and c["anchor"] is None:
        return {**c, "status": "unchecked", "now": None, "why": "no pin and no anchor"}
    if len(paths) > 1:
        return {**c, "status": "unchecked", "now": None, "why": f"{len(paths)} files end with {c['file']}"}
    path = paths[0] if paths else None
    lines = trees.lines(path) if path else []

    def at(lines: list[str]) -> list[int]:
        """Where the pinned lines (else the anchor, as whole words) are in a file."""
        return _find(lines, pin, b - a + 1) if pin is not None else _word_hits(lines, c["anchor"])

    here = path is not None
    if here and pin is not None:
        now = pin_of(lines, a, b)
        here = now is not None and now["sha"] == pin["sha"]
    if here and c["anchor"] is not None:
        here = any(a <= n <= b for n in _word_hits(lines, c["anchor"]))
    if here:
        return {**c, "status": "holds", "now": None}
    found = at(lines) if path is not None else []
    if found:
        return {**c, "status": "moved", "now": f"{c['file']}:{min(found, key=lambda n: abs(n - a))}"}
    # elsewhere: the pinned lines in another file of the same kind are a move; a deleted file whose anchor alone
    # turns up elsewhere is not (mlx_lm/server.py's condition is also generate.py's)
    if pin is not None or path is not None:
        for p, rel in trees.files():
            if p != path and p.suffix == Path(c["file"]).suffix:
                hit = at(trees.lines(p))
                if hit:
                    return {**c, "status": "moved", "now": f"{rel}:{hit[0]}"}
    return {**c, "status": "changed" if path is not None else "vanished", "now": None}


def audit(engine, roots, *, release: str | None = None, pins: dict | None = None,
          audited: dict | None = None) -> list[dict]:
    """Each citation of ``engine`` that holds at ``release`` with its ``status`` against the trees ``roots`` (a
    citation re-pinned at ``release`` is checked at its place there)."""
    roots = [Path(roots)] if isinstance(roots, (str, Path)) else [Path(r) for r in roots]
    trees = Trees(roots)
    pins = load_pins(engine.name) if pins is None else pins
    places = (load_audited(engine.name) if audited is None else audited).get(release or engine.release, {})
    return [check(c, trees, pins, _place(places.get(c["read_at"], {}).get(key_of(c))))
            for c in citations(engine, release=release)]


def _place(recorded):
    """A recorded place (None: the citation's own lines)."""
    return None if recorded == "here" else recorded


def pin(engine, roots, release: str, pins: dict | None = None,
        same: dict | None = None) -> tuple[dict, list[dict], dict]:
    """Pins of the engine's citations read at ``release``, from its trees; how each citation held at ``release``
    (read at -> citation -> ``"here"``, or its place where its pinned lines moved, or its re-read entry from
    ``same``: read at -> citation -> {"at", "pin", "same"}, kept while its pin holds); and the citations that can be
    neither (file missing or ambiguous, lines past its end, changed, vanished)."""
    roots = [Path(roots)] if isinstance(roots, (str, Path)) else [Path(r) for r in roots]
    trees = Trees(roots)
    pins = load_pins(engine.name) if pins is None else pins
    made: dict = {}
    failed: list[dict] = []
    moved: dict[str, dict] = {}
    for c in citations(engine, release=release):
        if c["read_at"] != release:
            reread = (same or {}).get(c["read_at"], {}).get(key_of(c))
            got = check(c, trees, pins, reread)
            if got["status"] == "holds":
                moved.setdefault(c["read_at"], {})[key_of(c)] = reread or "here"
            elif got["status"] == "moved" and reread is None:
                file, _, line = got["now"].rpartition(":")
                a, b = c["lines"]
                moved.setdefault(c["read_at"], {})[key_of(c)] = f"{file}:{line}" + (f"-{int(line) + b - a}" if b > a
                                                                                       else "")
            elif got["status"] != "holds":
                failed.append({**c, "why": f"{got['status']} at {release} (read at {c['read_at']})"})
            continue
        paths = trees.resolve(c["file"])
        p = pin_of(trees.lines(paths[0]), *c["lines"]) if len(paths) == 1 else None
        if p is None:
            failed.append({**c, "why": f"{len(paths)} files end with {c['file']}" if len(paths) != 1
                           else "the file is shorter"})
        else:
            made[key_of(c)] = p
            moved.setdefault(release, {})[key_of(c)] = "here"
    return made, failed, moved


def table_results(engine_name: str, release: str, roots, data: Path = DATA) -> list[dict]:
    """The tables extracted at ``release`` (``data/<engine>/<release>.json``) against the trees: each holds when the
    extractor reads the same table from them (its values and every file:line in it), else it changed; unchecked when
    no tree has what the extractor reads. None for an engine or release without extracted tables."""
    folder = _folder(engine_name)
    path = data / folder / f"{release}.json"
    if folder not in EXTRACTORS or not path.is_file():
        return []
    recorded = json.loads(path.read_text(encoding="utf-8"))["tables"]
    got = None
    for root in ([Path(roots)] if isinstance(roots, (str, Path)) else [Path(r) for r in roots]):
        try:
            got = json.loads(json.dumps(EXTRACTORS[folder](root)))  # as the data file holds it (tuples as lists)
            break
        except SourceError:
            continue
    out = []
    for name, table in sorted(recorded.items()):
        status = "unchecked" if got is None else "holds" if got.get(name) == table else "changed"
        out.append({"table": name, "where": f"data/{folder}/{release}.json", "file": str(table.get("source")),
                    "lines": (0, 0), "anchor": None, "read_at": release, "status": status, "now": None,
                    **({"why": "no tree has what the extractor reads"} if got is None else {})})
    return out


def coverage(results: list[dict]) -> tuple[int, int]:
    """(checked, all): the citations that could be checked (holds, moved, changed, vanished) and every one."""
    return sum(1 for r in results if r["status"] != "unchecked"), len(results)


def exit_status(results: list[dict]) -> int:
    """0 when every citation holds and one at least was checked, else 1."""
    checked, _ = coverage(results)
    return 0 if checked and all(r["status"] == "holds" for r in results) else 1


def render(engine, results: list[dict], release: str) -> str:
    """One line per citation that needs a look, then the counts and the coverage."""
    lines = [f"{engine.name}: the citations of {engine.release} against the source of {release}"]
    for r in results:
        if r["status"] == "holds":
            continue
        now = f" -> {r['now']}" if r["now"] else (f" (re-pinned at {r['at']})" if r.get("at") else "")
        anchor = f" {r['anchor']!r}" if r["anchor"] else ""
        why = f" [{r['why']}]" if r.get("why") else ""
        cited = f"table {r['table']} ({r['file']})" if r.get("table") else key_of(r)
        lines.append(f"  {r['status']:9} {cited}{now}{anchor} ({r['where']}, read at {r['read_at']}){why}")
    counts = {s: sum(1 for r in results if r["status"] == s) for s in STATUSES}
    checked, total = coverage(results)
    lines.append("  " + ", ".join(f"{n} {s}" for s, n in counts.items()) + f"; checked {checked} / {total}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status."""
    p = argparse.ArgumentParser(prog="python -m indexer.engines.audit",
                                description="Check every cited file:line of an engine's module in a release's source "
                                            "trees.")
    p.add_argument("source_dirs", nargs="+", help="the release's unpacked sources (sdist, wheel or checkout)")
    p.add_argument("--engine", required=True, help="ENGINE==VERSION, e.g. vllm==0.35.0")
    p.add_argument("--pin", action="store_true", help="record the pins of the citations read at VERSION (one of the "
                                                      "engine's releases) from these trees")
    p.add_argument("--same", action="append", default=[], metavar="CITATION=PLACE: WHY",
                   help="with --pin: a citation read at another release whose lines differ at VERSION but whose rule "
                        "is the same, re-read at PLACE (file:line there), and why (repeatable)")
    args = p.parse_args(argv)
    name, _, release = args.engine.partition("==")
    if name not in ENGINES or not release:
        print(f"error: --engine {args.engine!r}: give ENGINE==VERSION with ENGINE one of {', '.join(ENGINES)}",
              file=sys.stderr)
        return 2
    roots = [Path(d) for d in args.source_dirs]
    bad = next((r for r in roots if not r.is_dir()), None)
    if bad is not None:
        print(f"error: {bad}: not a directory", file=sys.stderr)
        return 2
    e = ENGINES[name]
    if args.pin:
        if release not in e.releases:
            print(f"error: --pin needs one of {name}'s releases ({', '.join(e.releases)}), not {release!r}",
                  file=sys.stderr)
            return 2
        e_at = e.at(release)
        audited = load_audited(name)
        same = {at: {k: v for k, v in m.items() if isinstance(v, dict)}
                for at, m in audited.get(release, {}).items()}
        trees = Trees(roots)
        for spec in args.same:
            cited, _, rest = spec.partition("=")
            place, _, why = rest.partition(": ")
            c = next((c for c in citations(e_at, release=release) if key_of(c) == cited), None)
            file, _, lines = place.rpartition(":")
            first, _, last = lines.partition("-")
            paths = trees.resolve(file) if file else []
            got = pin_of(trees.lines(paths[0]), int(first), int(last or first)) if len(paths) == 1 and \
                first.isdigit() and (last or first).isdigit() else None
            if c is None or got is None or not why:
                print(f"error: --same {spec!r}: give CITATION=FILE:LINES: WHY, a citation of {name} at {release} "
                      "and lines of a file in the trees", file=sys.stderr)
                return 2
            same.setdefault(c["read_at"], {})[cited] = {"at": place, "pin": got, "same": why}
        made, failed, moved = pin(e_at, roots, release, same=same)
        path = DATA / _folder(name) / "pins.json"
        pins = load_pins(name)
        pins[release] = dict(sorted(made.items()))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(dict(sorted(pins.items())), indent=1) + "\n")
        audited[release] = {at: dict(sorted(m.items())) for at, m in sorted(moved.items())}
        (DATA / _folder(name) / "audited.json").write_text(json.dumps(dict(sorted(audited.items())), indent=1) + "\n")
        for c in failed:
            print(f"  cannot pin {key_of(c)} ({c['where']}): {c['why']}")
        print(f"{path}: {len(made)} pins at {release}, "
              f"{sum(1 for m in moved.values() for v in m.values() if v != 'here')} re-pinned, "
              f"{len(failed)} cannot be pinned")
        return 1 if failed else 0
    e_at = e.at(release) if release in e.releases else e
    results = audit(e_at, roots, release=release)
    tabled = table_results(name, release, roots)
    print(render(e_at, results, release))
    if tabled:
        counts = {s: sum(1 for r in tabled if r["status"] == s) for s in STATUSES}
        for r in tabled:
            if r["status"] != "holds":
                why = f" [{r['why']}]" if r.get("why") else ""
                print(f"  {r['status']:9} table {r['table']} ({r['file']}){why}")
        print(f"  extracted tables ({tabled[0]['where']}): "
              + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    return exit_status(results + tabled)


if __name__ == "__main__":
    sys.exit(main())
