"""indexer/record.py: the query path's value classes behave as the dataclasses they replace."""

from __future__ import annotations

from typing import ClassVar

import pytest

from indexer.record import Factory, FrozenError, Record, asdict, field_names, replace


class Point(Record):
    x: int
    y: int = 0
    tags: list = Factory(list)
    memo: dict = Factory(dict, compare=False)
    LIMIT: ClassVar[int] = 3


class Rule(Record, frozen=True, kw_only=True):
    name: str
    when: Point | None = None


class Point3(Point):
    z: int = 0


def test_fields_arguments_and_defaults():
    assert field_names(Point) == ("x", "y", "tags", "memo")  # a ClassVar is no field
    p = Point(1, y=2)
    assert (p.x, p.y, p.tags, p.memo) == (1, 2, [], {})
    assert Point(1).tags is not Point(1).tags  # a factory makes a fresh value per instance
    assert field_names(Point3) == ("x", "y", "tags", "memo", "z") and Point3(1, z=5).z == 5


@pytest.mark.parametrize("make, words", [
    (lambda: Point(), "missing required argument 'x'"),
    (lambda: Point(1, x=2), "multiple values for argument 'x'"),
    (lambda: Point(1, w=2), "unexpected keyword argument 'w'"),
    (lambda: Point(1, 2, [], {}, 5), "at most 4 arguments"),
    (lambda: Rule("r"), "keyword arguments only"),
])
def test_bad_arguments_are_refused_as_a_dataclass_refuses_them(make, words):
    with pytest.raises(TypeError, match=words):
        make()


def test_a_required_field_after_a_default_is_refused_unless_keyword_only():
    with pytest.raises(TypeError, match="'b' without a default"):
        type("Bad", (Record,), {"__annotations__": {"a": "int", "b": "int"}, "a": 1})

    class Fine(Record, kw_only=True):
        a: int = 1
        b: int

    assert Fine(b=2).a == 1


def test_equality_repr_and_hashing():
    a, b = Point(1, memo={"k": 1}), Point(1)
    assert a == b and repr(a) == "Point(x=1, y=0, tags=[])"  # memo: not compared, not shown
    assert a != Point(2) and Point(1) != Point3(1)
    with pytest.raises(TypeError):
        hash(a)  # mutable with ==: unhashable, as a dataclass
    r = Rule(name="r", when=None)
    assert hash(r) == hash(Rule(name="r")) and {r, Rule(name="r")} == {r}
    with pytest.raises(FrozenError):
        r.name = "s"
    with pytest.raises(AttributeError):
        del r.name
    a.y = 5  # a mutable record takes assignments
    assert a.y == 5


def test_asdict_and_replace():
    r = Rule(name="r", when=Point(1, tags=[Point(2)]))
    assert asdict(r) == {"name": "r", "when": {"x": 1, "y": 0, "tags": [{"x": 2, "y": 0, "tags": [], "memo": {}}],
                                               "memo": {}}}
    s = replace(r, name="s")
    assert s == Rule(name="s", when=r.when) and r.name == "r"


def test_copies_and_pickles_of_a_frozen_record_are_equal():
    import copy
    import pickle

    r = Rule(name="r")
    for twin in (copy.copy(r), copy.deepcopy(r), pickle.loads(pickle.dumps(r))):
        assert twin == r and hash(twin) == hash(r)
    deep = Rule(name="r", when=Point(1, tags=[2]))
    assert copy.deepcopy(deep) == deep and copy.deepcopy(deep).when.tags is not deep.when.tags


def test_a_record_keeps_its_own_hash():
    class Keyed(Record):
        key: str
        note: str = ""

        def __hash__(self):
            return hash(self.key)

    assert hash(Keyed("k", "a")) == hash(Keyed("k", "b")) == hash("k")


class Plain(Record, frozen=True):
    """No factory: made by __init__'s fast path (issue 31)."""

    a: int
    b: str = "x"
    c: tuple = ()


@pytest.mark.parametrize("make, words", [
    (lambda: Plain(), "missing required argument 'a'"),
    (lambda: Plain(b="y"), "missing required argument 'a'"),
    (lambda: Plain(1, 2, 3, 4), "takes at most 3 arguments (4 given)"),
    (lambda: Plain(1, a=2), "multiple values for argument 'a'"),
    (lambda: Plain(1, d=2), "unexpected keyword argument 'd'"),
    (lambda: Plain(a=1, d=2), "unexpected keyword argument 'd'"),
])
def test_the_fast_path_refuses_what_the_general_one_refuses(make, words):
    with pytest.raises(TypeError, match=words.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_the_fast_path_makes_what_the_general_one_makes():
    made = [Plain(1), Plain(1, "y"), Plain(1, "y", (2,)), Plain(a=1), Plain(c=(2,), a=1, b="y"), Plain(1, c=(2,))]
    assert [(p.a, p.b, p.c) for p in made] == [(1, "x", ()), (1, "y", ()), (1, "y", (2,)), (1, "x", ()),
                                               (1, "y", (2,)), (1, "x", (2,))]
    assert Plain(a=1, b="y") == Plain(1, "y") and hash(Plain(1)) == hash(Plain(a=1))
    assert repr(Plain(c=(2,), a=1)) == "Plain(a=1, b='x', c=(2,))"
    with pytest.raises(FrozenError):
        Plain(1).a = 2
    assert replace(Plain(1), b="z") == Plain(1, "z") and asdict(Plain(1)) == {"a": 1, "b": "x", "c": ()}
