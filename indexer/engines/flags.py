"""Each engine release's command-line table, as :mod:`indexer.engines.extract_flags` read it from the source
(``engines/data/flags/<engine>-<release>.json``), and a strict parse of a command against it: no unknown option,
no removed option, every value a choice the source lists. The launch commands are checked with it
(tests/test_launch_flags.py); llama.cpp's quantize types are read from it when a conversion chain is printed."""

from __future__ import annotations

import json
import os

_TABLES: dict[tuple[str, str], dict | None] = {}


def table(engine: str, release: str) -> dict | None:
    """The flag table of ``engine`` at ``release`` (None: not extracted)."""
    key = (engine, release)
    if key not in _TABLES:

        path = os.path.join(os.path.dirname(__file__), "data", "flags", f"{engine}-{release}.json")  # package data
        try:
            with open(path, encoding="utf-8") as f:
                _TABLES[key] = json.load(f)
        except FileNotFoundError:
            _TABLES[key] = None
    return _TABLES[key]


def program(engine: str, release: str, name: str) -> dict | None:
    """One program's table (``llama-server``, ``vllm serve``, ``mlx_lm.convert``, ...)."""
    t = table(engine, release)
    return (t or {}).get("programs", {}).get(name)


def quantize_types(release: str) -> list[str]:
    """The types llama-quantize takes at this llama.cpp release (its QUANT_OPTIONS)."""
    prog = program("llama.cpp", release, "llama-quantize") or {}
    return next((p.get("choices", []) for p in prog.get("positionals", []) if p["name"] == "type"), [])


def convert_outtypes(release: str) -> list[str]:
    """The --outtype choices of convert_hf_to_gguf.py at this llama.cpp release."""
    prog = program("llama.cpp", release, "convert_hf_to_gguf.py") or {}
    return prog.get("options", {}).get("--outtype", {}).get("choices", [])


class Parsed:
    """A command parsed against a program's table: option -> values given, positionals, and what is wrong."""

    def __init__(self):
        self.options: dict[str, list[str]] = {}
        self.positionals: list[str] = []
        self.errors: list[str] = []

    def value(self, *names: str) -> str | None:
        """The value of the first of ``names`` given (an option's aliases)."""
        for n in names:
            if n in self.options and self.options[n]:
                return self.options[n][0]
        return None


def _check_choice(entry: dict, flag: str, value: str, out: Parsed) -> None:
    choices = entry.get("choices")
    if choices is None:
        return
    values = value.split(entry["separator"]) if entry.get("separator") else [value]
    listed = [str(c) for c in choices]
    if entry.get("case_insensitive"):
        listed = [c.upper() for c in listed]
        values = [v.upper() for v in values]
    for v in values:
        if v not in listed:
            out.errors.append(f"{flag} {v!r} is not one of the {len(listed)} choices the source lists")


def parse(prog: dict, args: list[str]) -> Parsed:
    """Parse ``args`` (the words after the program's name) strictly against ``prog``: exact option names (no
    abbreviation), each option's value count, removed options and choices reported as errors."""
    out = Parsed()
    options, removed = prog.get("options", {}), prog.get("removed", {})
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if word.startswith("-") and len(word) > 1 and not word[1:].replace(".", "").isdigit():
            flag, eq, inline = word.partition("=")
            if flag in removed:
                out.errors.append(f"{flag} was removed ({removed[flag].get('says', 'the source says so')}, line "
                                  f"{removed[flag].get('line')})")
                continue
            entry = options.get(flag)
            if entry is None:
                out.errors.append(f"unknown option {flag}")
                continue
            n = entry.get("values", 1)
            if n == 0:
                if eq:
                    out.errors.append(f"{flag} takes no value")
                out.options.setdefault(flag, [])
                continue
            count = 1 if n in ("?", "+", "*") else int(n)
            if eq:
                values = [inline]
            else:
                values = args[i:i + count]
                if len(values) < count or any(v.startswith("--") for v in values):
                    out.errors.append(f"{flag} needs {count} value(s)")
                    continue
                i += count
            for v in values:
                _check_choice(entry, flag, v, out)
            out.options.setdefault(flag, []).extend(values)
        else:
            at = len(out.positionals)
            spec = prog.get("positionals", [])
            if at < len(spec):
                _check_choice(spec[at], spec[at]["name"], word, out)
            elif not any(p.get("values") in ("+", "*") for p in spec):
                out.errors.append(f"unexpected argument {word!r}")
            out.positionals.append(word)
    return out
