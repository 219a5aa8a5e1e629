"""JSON text to values and back without importing :mod:`json`, for the query path (issue 31).

``import json`` imports ``re`` and with it ``enum``: about 8 ms of a fresh process on this machine, a fifth of a
whole ``indexer query`` above a bare start. What ``json.loads`` runs on CPython is the C scanner of ``_json``
(``json.scanner.c_make_scanner``, built from a ``JSONDecoder``'s attributes, CPython 3.11
Lib/json/decoder.py:284-329), so :func:`loads` builds that same scanner from the same attributes and gives what
``json.loads`` gives for any ``str``. Anything else (``bytes``, a Python without ``_json``) goes to ``json.loads``.

:func:`dumps` writes what ``json.dumps`` writes for the arguments it takes, as ``_make_iterencode``
(Lib/json/encoder.py:260) does (the indented writer; the C one writes the same text), with ``_json``'s C string
escapes. ``tests/test_jsontext.py`` holds both to ``json`` on random values.
"""

from __future__ import annotations

try:
    from _json import encode_basestring as _quote
    from _json import encode_basestring_ascii as _quote_ascii
    from _json import make_scanner as _make_scanner
except ImportError:  # not CPython: json does it all
    _make_scanner = _quote = _quote_ascii = None

_WHITESPACE = " \t\n\r"  # json.decoder.WHITESPACE: what JSON allows around a value


class _Decoder:
    """The attributes ``_json.make_scanner`` reads, as ``json.JSONDecoder()`` sets them (decoder.py:318-329)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__
    memo: dict = {}


_scan = _make_scanner(_Decoder()) if _make_scanner is not None else None


def loads(text):
    """``json.loads(text)``: the same value, or a ``ValueError`` where it raises one (``JSONDecodeError`` is one)."""
    if _scan is None or not isinstance(text, str):
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as e:
        raise ValueError(f"Expecting value: char {e.value}") from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError(f"Extra data: char {end}")
    return value


def answer_json(data) -> str:
    """Every --json output: indented, UTF-8 as is, anything else by str() (the CLI's and its fast path's)."""
    return dumps(data, indent=2, ensure_ascii=False, default=str)


def dumps(value, *, indent: int | None = None, ensure_ascii: bool = True, default=None) -> str:
    """``json.dumps(value, indent=indent, ensure_ascii=ensure_ascii, default=default)``: the same text."""
    if _quote is None:
        import json

        return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii, default=default)
    out: list[str] = []
    pad = None if indent is None else " " * indent
    _write(value, out, _quote_ascii if ensure_ascii else _quote, pad, 0, default, ", " if pad is None else ",")
    return "".join(out)


def _float(x: float) -> str:
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    return float.__repr__(x)


def _key(k) -> str:
    """A dict key as json writes it (encoder.py's _iterencode_dict: str, float, bool, None, int; else TypeError)."""
    if isinstance(k, str):
        return k
    if isinstance(k, float):
        return _float(k)
    if k is True or k is False or k is None:
        return {True: "true", False: "false", None: "null"}[k]
    if isinstance(k, int):
        return int.__repr__(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {k.__class__.__name__}")


def _write(v, out: list, quote, pad: str | None, level: int, default, comma: str) -> None:
    if isinstance(v, str):
        out.append(quote(v))
    elif v is None or v is True or v is False:
        out.append("null" if v is None else "true" if v else "false")
    elif isinstance(v, int):
        out.append(int.__repr__(v))
    elif isinstance(v, float):
        out.append(_float(v))
    elif isinstance(v, (list, tuple, dict)):
        is_dict = isinstance(v, dict)
        if not v:
            out.append("{}" if is_dict else "[]")
            return
        newline = None if pad is None else "\n" + pad * (level + 1)
        out.append(("{" if is_dict else "[") + (newline or ""))
        for i, item in enumerate(v.items() if is_dict else v):
            if i:
                out.append(comma + (newline or ""))
            if is_dict:
                out.append(quote(_key(item[0])) + ": ")
                item = item[1]
            _write(item, out, quote, pad, level + 1, default, comma)
        out.append(("" if pad is None else "\n" + pad * level) + ("}" if is_dict else "]"))
    elif default is not None:
        _write(default(v), out, quote, pad, level, default, comma)
    else:
        raise TypeError(f"Object of type {v.__class__.__name__} is not JSON serializable")
