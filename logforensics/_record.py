"""``record``: a class of named fields, as ``dataclasses.dataclass`` makes one, without its
start-up cost.

``dataclass`` writes each class's ``__init__`` as source and compiles it at import, about 0.4 ms
a class; with ``import dataclasses`` (which imports ``inspect``) the ~34 classes a small log's
``logx status`` defines cost ~24 ms of its ~100 ms. ``record`` reads the same class body (the
annotations, their defaults, ``field(default_factory=…)``) and installs one shared ``__init__``
that binds the arguments by the field list: defining a class costs microseconds, constructing
one ~1.5 µs instead of ~0.3 µs. The types built per line (``RawLine``, ``LogLine``, ``Event``)
are written out by hand for that reason; everything else is built a few times a run.

What it does, of ``dataclass``'s options: ``slots`` (the class is rebuilt with ``__slots__``),
``frozen`` (assignment raises), ``eq`` (``__eq__`` over the compared fields; a frozen one is
also hashed by them), ``__post_init__``, ``replace``, ``fields``. ``__repr__`` names the fields.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")
_MISSING: Any = object()


class Field:
    """A field's declaration: ``name``, its ``default`` or ``default_factory``, whether
    ``__eq__`` compares it and ``__repr__`` shows it."""

    __slots__ = ("name", "default", "default_factory", "compare", "repr")

    def __init__(self, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None,
                 compare: bool = True, repr: bool = True):
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.compare = compare
        self.repr = repr


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None,
          compare: bool = True, repr: bool = True) -> Any:
    """A field's options, as ``dataclasses.field`` takes them."""
    return Field(default, default_factory, compare, repr)


def fields(cls_or_obj: Any) -> tuple[Field, ...]:
    """The fields of a record class (or instance), in declaration order."""
    return cls_or_obj.__record_fields__


def replace(obj: T, **changes: Any) -> T:
    """A copy of ``obj`` with ``changes``; ``__post_init__`` runs on it, as ``dataclasses.replace``'s does."""
    values = {f.name: getattr(obj, f.name) for f in fields(obj)}
    unknown = changes.keys() - values.keys()
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field(s) {', '.join(sorted(unknown))}")
    values.update(changes)
    return type(obj)(**values)


def _declared(cls: type) -> list[Field]:
    """The fields of ``cls``: its bases' (records), then its own annotations, which are
    strings here (``from __future__ import annotations``); ``ClassVar`` ones are not fields."""
    out: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for f in getattr(base, "__record_fields__", ()):
            out[f.name] = f
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if isinstance(annotation, str) and annotation.startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = cls.__dict__.get(name, _MISSING)
        f = value if isinstance(value, Field) else Field(value)
        f.name = name
        out[name] = f
    return list(out.values())


def _make_init(declared: tuple[Field, ...], frozen: bool) -> Callable[..., None]:
    names = tuple(f.name for f in declared)
    options = [(f.name, f.default, f.default_factory) for f in declared]
    bind = object.__setattr__ if frozen else setattr
    seen_default = False
    for f in declared:
        has_default = f.default is not _MISSING or f.default_factory is not None
        if seen_default and not has_default:
            raise TypeError(f"non-default field {f.name!r} follows a field with a default")
        seen_default = seen_default or has_default

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes {len(names)} positional arguments, "
                            f"{len(args)} given")
        for name, value in zip(names, args, strict=False):
            bind(self, name, value)
        for name, default, factory in options[len(args):]:
            value = kwargs.pop(name, _MISSING)
            if value is _MISSING:
                if default is not _MISSING:
                    value = default
                elif factory is not None:
                    value = factory()
                else:
                    raise TypeError(f"{type(self).__name__}() missing argument {name!r}")
            bind(self, name, value)
        if kwargs:
            raise TypeError(f"{type(self).__name__}() got unexpected argument(s) "
                            f"{', '.join(sorted(kwargs))}")
        post_init = getattr(self, "__post_init__", None)
        if post_init is not None:
            post_init()

    return __init__


def _repr(self: Any) -> str:
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in self.__record_fields__ if f.repr)
    return f"{type(self).__qualname__}({shown})"


def _compared(self: Any) -> tuple:
    return tuple(getattr(self, f.name) for f in self.__record_fields__ if f.compare)


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _compared(self) == _compared(other)


def _hash(self: Any) -> int:
    return hash(_compared(self))


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise AttributeError(f"{type(self).__name__} is frozen: cannot assign {name!r}")


def _build(cls: type, slots: bool, frozen: bool, eq: bool) -> type:
    declared = tuple(_declared(cls))
    if slots:
        body = {k: v for k, v in cls.__dict__.items()
                if k not in ("__dict__", "__weakref__") and not isinstance(v, Field)}
        own = [f.name for f in declared if f.name in cls.__dict__.get("__annotations__", {})]
        for name in own:
            body.pop(name, None)  # a default lives in the field, not on the class, beside a slot
        body["__slots__"] = tuple(own)
        cls = type(cls)(cls.__name__, cls.__bases__, body)
    else:
        for f in declared:
            if isinstance(cls.__dict__.get(f.name), Field):
                if f.default is _MISSING:
                    delattr(cls, f.name)
                else:
                    setattr(cls, f.name, f.default)
    cls.__record_fields__ = declared  # type: ignore[attr-defined]
    cls.__init__ = _make_init(declared, frozen)  # type: ignore[misc]
    if "__repr__" not in cls.__dict__:
        cls.__repr__ = _repr  # type: ignore[assignment]
    if eq:
        cls.__eq__ = _eq  # type: ignore[assignment]
        cls.__hash__ = _hash if frozen else None  # type: ignore[assignment]
    if frozen:
        cls.__setattr__ = _frozen_setattr  # type: ignore[assignment]
    return cls


@overload
def record(cls: type[T], /) -> type[T]: ...
@overload
def record(*, slots: bool = ..., frozen: bool = ..., eq: bool = ...) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(field_specifiers=(field,))
def record(cls: type[T] | None = None, /, *, slots: bool = False, frozen: bool = False,
           eq: bool = True) -> Any:
    """Make ``cls`` a record, as ``@dataclass`` (or ``@dataclass(slots=…, frozen=…, eq=…)``) would."""
    if cls is None:
        return lambda c: _build(c, slots, frozen, eq)
    return _build(cls, slots, frozen, eq)
