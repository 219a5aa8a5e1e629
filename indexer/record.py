"""Small value classes for the query path, without :mod:`dataclasses`.

``indexer query`` should cost little more than Python's own start (issue 24: within 3x ``python -c pass``).
:mod:`dataclasses` imports :mod:`inspect` (with ast, dis, tokenize: about 7 ms) and ``@dataclass`` compiles an
``__init__``, ``__repr__`` and ``__eq__`` for each class (about 0.7 ms a class); the query path builds a dozen such
classes and every engine's rule table on import. A :class:`Record` reads its fields from the class annotations
once, when the class is made, and shares one generic ``__init__``:

    class Side(Record):
        name: str
        vocab: dict | None = None
        memo: dict = Factory(dict, compare=False)   # a fresh dict per instance, not in repr or ==

    class Rule(Record, frozen=True, kw_only=True): ...

What it keeps of a dataclass: positional and keyword arguments in field order (keywords only with
``kw_only``), defaults and per-instance factories, ``==`` over the compared fields of the same class, ``repr``,
``frozen`` (immutable and hashable; a mutable record is unhashable, as a dataclass with ``eq``), :func:`asdict`
and :func:`replace`. A ``ClassVar`` annotation is not a field.
"""

from __future__ import annotations


class Factory:
    """A field's default made anew for each instance (``dataclasses.field(default_factory=...)``);
    ``compare=False`` leaves the field out of ``==`` and ``repr``, as a memo should be; ``repr=False`` only out
    of ``repr`` (a whole vocabulary)."""

    __slots__ = ("make", "compare", "repr")

    def __init__(self, make, *, compare: bool = True, repr: bool | None = None):  # noqa: A002 - dataclasses' name
        self.make, self.compare = make, compare
        self.repr = compare if repr is None else repr


class FrozenError(AttributeError):
    """Assigning to a field of a frozen record (``dataclasses.FrozenInstanceError``)."""


def _own_annotations(cls) -> dict:
    ann = cls.__dict__.get("__annotations__")
    if ann is None and "__annotate__" in cls.__dict__:  # Python 3.14 (PEP 649) without the __future__ import
        ann = cls.__annotations__
    return ann or {}


class Record:
    """A value class whose fields are its annotations (see the module's docstring)."""

    _fields: tuple[str, ...] = ()
    _compared: tuple[str, ...] = ()
    _shown: tuple[str, ...] = ()
    _defaults: dict = {}
    _plain_defaults: dict | None = {}  # the defaults when none is a Factory (the fast path of __init__), else None
    _field_set: frozenset = frozenset()
    _frozen = False
    _kw_only = False

    def __init_subclass__(cls, *, frozen: bool | None = None, kw_only: bool | None = None, **kw):
        super().__init_subclass__(**kw)
        fields = list(cls._fields)
        defaults = dict(cls._defaults)
        compared, shown = set(cls._compared), set(cls._shown)
        for name, kind in _own_annotations(cls).items():
            if "ClassVar" in str(kind):
                continue
            if name not in fields:
                fields.append(name)
            compared.add(name)
            shown.add(name)
            if name in cls.__dict__:
                default = cls.__dict__[name]
                defaults[name] = default
                if isinstance(default, Factory):
                    if not default.compare:
                        compared.discard(name)
                    if not default.repr:
                        shown.discard(name)
        cls._fields = tuple(fields)
        cls._compared = tuple(f for f in fields if f in compared)
        cls._shown = tuple(f for f in fields if f in shown)
        cls._defaults = defaults
        cls._plain_defaults = None if any(isinstance(d, Factory) for d in defaults.values()) else defaults
        cls._field_set = frozenset(fields)
        cls._frozen = cls._frozen if frozen is None else frozen
        cls._kw_only = cls._kw_only if kw_only is None else kw_only
        if not cls._kw_only:
            seen_default = False
            for name in fields:
                if name in defaults:
                    seen_default = True
                elif seen_default:
                    raise TypeError(f"{cls.__name__}: field {name!r} without a default follows one with a default")
        if cls._frozen:
            cls.__setattr__ = _refuse
            cls.__delattr__ = _refuse
        if cls.__dict__.get("__hash__") is None:  # a class's own __hash__ stays, as with @dataclass
            cls.__hash__ = Record._hash if cls._frozen else None

    def __init__(self, *args, **kw):
        if self._plain_defaults is not None:  # no factory: the defaults and the arguments, when they give every
            # field and nothing else (a query makes some 400 records, half of them tables on import: issue 31)
            if not args and self._field_set.issuperset(kw):
                values = {**self._plain_defaults, **kw}
            elif not kw and not self._kw_only and len(args) <= len(self._fields):
                values = {**self._plain_defaults, **dict(zip(self._fields, args))}
            else:
                values = None
            if values is not None and len(values) == len(self._fields):
                self.__dict__.update(values)
                return
        fields = self._fields
        if args:
            if self._kw_only:
                raise TypeError(f"{type(self).__name__} takes keyword arguments only")
            if len(args) > len(fields):
                raise TypeError(f"{type(self).__name__} takes at most {len(fields)} arguments ({len(args)} given)")
            for name in fields[:len(args)]:
                if name in kw:
                    raise TypeError(f"{type(self).__name__} got multiple values for argument {name!r}")
            kw.update(zip(fields, args))
        put = object.__setattr__
        for name in fields:
            if name in kw:
                put(self, name, kw.pop(name))
                continue
            default = self._defaults.get(name, _MISSING)
            if default is _MISSING:
                raise TypeError(f"{type(self).__name__} missing required argument {name!r}")
            put(self, name, default.make() if isinstance(default, Factory) else default)
        if kw:
            raise TypeError(f"{type(self).__name__} got an unexpected keyword argument {next(iter(kw))!r}")

    def _key(self) -> tuple:
        return tuple(getattr(self, n) for n in self._compared)

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()

    def _hash(self) -> int:
        return hash((type(self).__name__, self._key()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._shown)
        return f"{type(self).__name__}({shown})"


_MISSING = object()


def _refuse(self, name, value=None):
    raise FrozenError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")


def _plain(value):
    if isinstance(value, Record):
        return asdict(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    return value


def asdict(record: Record) -> dict:
    """Every field by name, records, lists and dicts within made plain too (``dataclasses.asdict``)."""
    return {n: _plain(getattr(record, n)) for n in record._fields}


def replace(record: Record, **changes) -> Record:
    """A copy with some fields changed (``dataclasses.replace``); a factory field keeps its value."""
    values = {n: getattr(record, n) for n in record._fields}
    values.update(changes)
    return type(record)(**values)


def field_names(cls) -> tuple[str, ...]:
    """The record class's fields in order (``[f.name for f in dataclasses.fields(cls)]``)."""
    return cls._fields
