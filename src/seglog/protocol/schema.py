"""The shape of Kafka's message definitions, as the generated ``messages`` module states them.

A message (``ProduceRequest``) or a nested struct is a list of fields. Each field says in which
versions it exists (``versions``), in which it may be null (``nullable``), in which it is a tagged
field and under which tag (``tagged``, ``tag``), and whether it ignores flexible encoding
(``never_flexible``: the request header's ``ClientId``, kept an int16-length string so that any
broker can read an ApiVersions request). Version ranges are inclusive ``(low, high)`` tuples;
``None`` means "never". ``MAX_VERSION`` stands for Kafka's ``N+``.

``Records`` is the value type of ``records`` fields: bytes as received (a ``memoryview`` of the
request frame on decode, so Produce never copies them) or ``ExternalRecords``, bytes that live
elsewhere (a file range the network edge sends with ``sendfile``) and are only counted here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

MAX_VERSION = 0x7FFF
ZERO_UUID = UUID(int=0)


class ExternalRecords:
    """Records bytes the codec does not hold: it writes their length and leaves a gap for them.

    Subclasses (the broker's file ranges) set ``size``; the encoder emits the object itself as a
    part of the frame, between the bytes before and after it, as Kafka's ``RecordsSend`` does.
    """

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size


Records = bytes | bytearray | memoryview | ExternalRecords | None
VersionRange = tuple[int, int] | None


def in_range(version: int, bounds: VersionRange) -> bool:
    """Whether ``version`` lies in an inclusive ``(low, high)`` range (``None``: never)."""
    return bounds is not None and bounds[0] <= version <= bounds[1]


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a message or struct.

    ``kind`` is a primitive type name (``int32``, ``string``, ``records``...), ``"struct"`` for a
    nested struct, or ``"array"`` with ``element`` the primitive element type or ``struct_class``
    the element struct.
    """

    name: str
    kind: str
    element: str | None
    struct_class: Any
    versions: VersionRange
    nullable: VersionRange
    tagged: VersionRange
    tag: int | None
    never_flexible: bool


@dataclass(frozen=True, slots=True)
class StructSpec:
    """A nested struct: its dataclass and its fields."""

    cls: Any
    fields: tuple[FieldSpec, ...]


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """A top-level message: request, response, header or data (``api_key`` -1 for non-APIs)."""

    name: str
    cls: Any
    api_key: int
    type: str
    valid_versions: tuple[int, int]
    flexible_versions: VersionRange
    fields: tuple[FieldSpec, ...]

    def is_flexible(self, version: int) -> bool:
        return in_range(version, self.flexible_versions)
