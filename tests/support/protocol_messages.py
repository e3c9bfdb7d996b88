"""Hypothesis strategies for seglog's generated protocol messages, and kafka-python as an oracle.

:func:`message_values` walks a message's field table (``seglog.protocol.messages.SPECS`` and
``STRUCTS``) for one version and draws a value of its dataclass: only the fields present in
that version get drawn values (the others keep their defaults, as a decoder leaves them), null
only where the version allows it, tagged fields sometimes left at their default (so writers
omit them) and sometimes set, ``records`` as bytes, integers over their whole range.

:func:`kafka_python_class` finds kafka-python's class for a message name; :func:`same_values`
compares one of our values with a kafka-python decoded object field by field, over the fields
of the version, and returns a description of the first difference (empty when equal).
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from functools import cache
from typing import Any

from hypothesis import strategies as st

from seglog.protocol import messages
from seglog.protocol.schema import FieldSpec, in_range

_INT_BOUNDS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
# Small sizes keep examples fast; the length encodings (int16, int32, uvarint) do not change
# shape with size, and the codec's own tests cover long values.
_MAX_ITEMS = 3
_TEXT = st.text(max_size=12)
_BINARY = st.binary(max_size=24)


def fields_of(cls: type) -> tuple[FieldSpec, ...]:
    """The field table of a message or struct class."""
    spec = messages.SPECS.get(cls.__name__)
    if spec is not None:
        return spec.fields
    return messages.STRUCTS[cls.__name__].fields


def _primitive(kind: str) -> st.SearchStrategy[Any]:
    if kind in _INT_BOUNDS:
        low, high = _INT_BOUNDS[kind]
        return st.integers(low, high)
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "bool":
        return st.booleans()
    if kind == "string":
        return _TEXT
    if kind in ("bytes", "records"):
        return _BINARY
    if kind == "uuid":
        return st.uuids()
    raise AssertionError(f"no strategy for field type {kind}")


def _field_strategy(spec: FieldSpec, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    if spec.kind == "struct":
        value = message_values(spec.struct_class, version, flexible)
    elif spec.kind == "array":
        if spec.struct_class is not None:
            element = message_values(spec.struct_class, version, flexible)
        else:
            assert spec.element is not None
            element = _primitive(spec.element)
        value = st.lists(element, max_size=_MAX_ITEMS)
    else:
        value = _primitive(spec.kind)
    if in_range(version, spec.nullable):
        value = st.none() | value
    return value


def _default(cls: type, name: str) -> Any:
    for item in fields(cls):  # type: ignore[arg-type]
        if item.name == name:
            if item.default is not MISSING:
                return item.default
            assert item.default_factory is not MISSING
            return item.default_factory()
    raise AssertionError(f"{cls.__name__} has no field {name}")


@cache
def message_values(cls: type, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    """Values of ``cls`` with every field of ``version`` drawn (see the module docstring)."""
    drawn: dict[str, st.SearchStrategy[Any]] = {}
    for spec in fields_of(cls):
        if not in_range(version, spec.versions):
            continue
        strategy = _field_strategy(spec, version, flexible)
        if flexible and in_range(version, spec.tagged):
            strategy = st.just(_default(cls, spec.name)) | strategy
        drawn[spec.name] = strategy
    return st.builds(cls, **drawn)


# --- kafka-python as the oracle ---------------------------------------------------------------


@cache
def kafka_python_classes() -> dict[str, Any]:
    """kafka-python's request and response classes by Kafka's message name."""
    import kafka.protocol.admin
    import kafka.protocol.consumer
    import kafka.protocol.metadata
    import kafka.protocol.producer  # noqa: F401  (registers the producer classes)
    from kafka.protocol.api_message import ApiMessage

    found: dict[str, Any] = {}
    pending = list(ApiMessage.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None and getattr(cls, "_json", None):
            found[cls.name] = cls
    return found


def kafka_python_class(name: str) -> Any:
    """kafka-python's class for ``name`` (e.g. ``ProduceRequest``)."""
    classes = kafka_python_classes()
    if name not in classes:
        raise AssertionError(f"kafka-python has no class for {name}")
    return classes[name]


def _bitfield(value: int) -> set[int] | None:
    """kafka-python's view of an int32 bitfield: the set bits; only bit 31 (Kafka's "not
    requested", INT32_MIN) reads as None."""
    bits = {bit for bit in range(32) if (value & 0xFFFFFFFF) >> bit & 1}
    return None if bits == {31} else bits


def _their_field(theirs: Any, name: str) -> Any:
    """kafka-python's value of our field ``name``: it renames ``*_authorized_operations``
    bitfields to ``authorized_operations``."""
    if name in theirs.fields:
        return getattr(theirs, name)
    if name.endswith("_authorized_operations"):
        return theirs.authorized_operations
    raise AssertionError(f"kafka-python's {type(theirs).__name__} has no field {name}")


def _same(ours: Any, theirs: Any, spec: FieldSpec, version: int, where: str) -> str:
    if spec.kind == "int32" and (theirs is None or isinstance(theirs, set)):
        mine = _bitfield(ours)
        return "" if mine == theirs else f"{where}: bits {mine} != {theirs}"
    if spec.kind == "struct" and theirs is None and in_range(version, spec.tagged):
        # an absent tagged struct: kafka-python says None, we keep the default instance
        return "" if ours == type(ours)() else f"{where}: {ours!r} != None"
    if ours is None or theirs is None:
        return "" if ours is None and theirs is None else f"{where}: {ours!r} != {theirs!r}"
    if spec.kind == "struct":
        return same_values(ours, theirs, version, where)
    if spec.kind == "array":
        if len(ours) != len(theirs):
            return f"{where}: {len(ours)} items != {len(theirs)}"
        for index, (mine, other) in enumerate(zip(ours, theirs, strict=True)):
            at = f"{where}[{index}]"
            if spec.struct_class is not None:
                problem = same_values(mine, other, version, at)
            else:
                problem = "" if _equal(mine, other) else f"{at}: {mine!r} != {other!r}"
            if problem:
                return problem
        return ""
    if spec.kind in ("bytes", "records"):
        return "" if bytes(ours) == bytes(theirs) else f"{where}: {ours!r} != {theirs!r}"
    return "" if _equal(ours, theirs) else f"{where}: {ours!r} != {theirs!r}"


def _equal(mine: Any, other: Any) -> bool:
    return bool(mine == other) and type(mine) is type(other)


def same_values(ours: Any, theirs: Any, version: int, where: str = "") -> str:
    """The first field of ``version`` where ``ours`` and kafka-python's ``theirs`` differ."""
    for spec in fields_of(type(ours)):
        if not in_range(version, spec.versions):
            continue
        at = f"{where}.{spec.name}"
        mine, other = getattr(ours, spec.name), _their_field(theirs, spec.name)
        problem = _same(mine, other, spec, version, at)
        if problem:
            return problem
    return ""
