"""indexer/jsontext.py reads and writes JSON as the json module does, without importing it (issue 31).

The query path answers without ``json`` (which imports ``re`` and ``enum``, 8 ms of a fresh process), so the
catalog's JSON columns are read and every --json answer is written by jsontext: on random values of every JSON
kind (and values json writes by ``default``), both give json's value and json's text, byte for byte.
"""

from __future__ import annotations

import datetime
import json
import random

import pytest

from indexer import jsontext

CHARS = 'ab"\\\n\t\x01\x7f\u00e9\U0001f600\u2028 /'
LEAVES = [None, True, False, 0, -5, 2**70, 1.5, -0.0, 1e300, 5e-324, float("nan"), float("inf"), float("-inf"),
          datetime.date(2026, 1, 2), (), [], {}]
KEYS = ["a", "b\u00e9", "", 1, 2.5, True, None, False, 'x"y', float("nan")]


def value(rng: random.Random, depth: int = 0):
    r = rng.random()
    if depth > 3 or r < 0.4:
        if rng.random() < 0.4:
            return "".join(rng.choice(CHARS) for _ in range(rng.randint(0, 8)))
        return rng.choice(LEAVES)
    if r < 0.7:
        items = [value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
        return items if rng.random() < 0.7 else tuple(items)
    return {rng.choice(KEYS): value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


SETTINGS = [dict(indent=2, ensure_ascii=False, default=str), dict(default=str), dict(indent=4, default=str),
            dict(ensure_ascii=False, default=str)]


@pytest.mark.parametrize("kw", SETTINGS, ids=str)
def test_dumps_writes_what_json_writes(kw):
    rng = random.Random(31)
    values = [value(rng) for _ in range(5000)]
    assert [jsontext.dumps(v, **kw) for v in values] == [json.dumps(v, **kw) for v in values]


def test_dumps_refuses_what_json_refuses():
    for bad in ({(1, 2): 3}, object(), [1, {2}]):
        with pytest.raises(TypeError) as ours:
            jsontext.dumps(bad)
        with pytest.raises(TypeError) as theirs:
            json.dumps(bad)
        assert str(ours.value) == str(theirs.value)


def test_loads_reads_what_json_reads():
    rng = random.Random(32)
    texts = [json.dumps(value(rng), default=str, indent=rng.choice([None, 1])) for _ in range(5000)]
    texts += [" \n[1, 2]\t", "\"\\ud800\"", "-0", "1E400", "NaN", "[-Infinity]", "{\"a\": {}}"]
    for text in texts:
        ours, theirs = jsontext.loads(text), json.loads(text)
        assert json.dumps(ours) == json.dumps(theirs) and type(ours) is type(theirs), text
    assert jsontext.loads(b'{"a": 1}') == {"a": 1}  # bytes: json.loads itself


@pytest.mark.parametrize("text", ["", " ", "[1,", "[1] x", "\ufeff[]", "{'a': 1}", "nul", "[1]]", "\"a", "01"])
def test_loads_refuses_what_json_refuses(text):
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        jsontext.loads(text)
