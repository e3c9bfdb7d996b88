"""Kafka's message encoding: values of ``seglog.protocol.messages`` <-> bytes, per version.

The codec is table-driven: for a (message, version) pair it compiles, once, a reader and a writer
from the message's field table, and caches them. Encodings (all integers big-endian):

==========  =================================  ======================================
kind        non-flexible version               flexible version (KIP-482)
==========  =================================  ======================================
string      int16 length, -1 = null, UTF-8     uvarint(length + 1), 0 = null
bytes       int32 length, -1 = null            uvarint(length + 1), 0 = null
records     int32 length, -1 = null            uvarint(length + 1), 0 = null
array       int32 count, -1 = null             uvarint(count + 1), 0 = null
uuid        16 bytes                           16 bytes
==========  =================================  ======================================

In a flexible version every struct (the message, each nested struct, each struct element of an
array) ends with a tag buffer: ``uvarint count``, then per field in ascending tag order ``uvarint
tag``, ``uvarint size``, the value. Writers leave out tagged fields holding their default; readers
skip tags they do not know. A field absent from a version is neither read nor written and keeps
its default.

Decoding never trusts a length: every string, bytes, records and array length is checked against
the bytes left, and any damage raises :class:`ProtocolDecodeError` naming the message, version and
byte position. ``records`` decode as ``memoryview`` slices of the input (no copy). On encode a
``records`` value may be :class:`ExternalRecords`: the writer emits the length, then the object
itself as a separate part, so a frame is ``list[bytes | ExternalRecords]`` (header bytes, a file
range, trailing bytes), as Kafka's ``RecordsSend`` does.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import fields as dataclass_fields
from typing import Any, TypeVar
from uuid import UUID

from seglog.errors import ProtocolDecodeError
from seglog.protocol import messages
from seglog.protocol.schema import ExternalRecords, FieldSpec, MessageSpec, in_range

T = TypeVar("T")
Buffer = bytes | bytearray | memoryview
Reader = Callable[[memoryview, int], tuple[Any, int]]
Writer = Callable[[bytearray, list[tuple[int, ExternalRecords]], Any], None]

_INT = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}
_I16 = _INT["int16"]
_I32 = _INT["int32"]


class _Short(Exception):
    """Internal: a read ran past the end of the buffer or met an impossible length."""


def read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    """An unsigned LEB128 varint (at most 5 bytes, as Kafka's ``ByteUtils.readUnsignedVarint``)."""
    value = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise _Short("varint runs past the end")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise _Short("varint longer than 5 bytes")


def write_uvarint(out: bytearray, value: int) -> None:
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


# --- readers -------------------------------------------------------------------------------


def _fixed_reader(layout: struct.Struct) -> Reader:
    size = layout.size
    unpack = layout.unpack_from

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        if pos + size > len(buf):
            raise _Short(f"{size}-byte value runs past the end")
        return unpack(buf, pos)[0], pos + size

    return read


def _read_bool(buf: memoryview, pos: int) -> tuple[Any, int]:
    if pos >= len(buf):
        raise _Short("bool runs past the end")
    return buf[pos] != 0, pos + 1


def _read_uuid(buf: memoryview, pos: int) -> tuple[Any, int]:
    if pos + 16 > len(buf):
        raise _Short("uuid runs past the end")
    return UUID(bytes=bytes(buf[pos : pos + 16])), pos + 16


def _length_reader(flexible: bool, wide: bool) -> Callable[[memoryview, int], tuple[int, int]]:
    """Reads a length/count: -1 = null, as int16/int32 or compact uvarint(n + 1)."""
    if flexible:

        def read_compact(buf: memoryview, pos: int) -> tuple[int, int]:
            value, pos = read_uvarint(buf, pos)
            return value - 1, pos

        return read_compact
    fixed = _fixed_reader(_I32 if wide else _I16)
    return fixed


def _sized_reader(kind: str, flexible: bool, nullable: bool) -> Reader:
    read_length = _length_reader(flexible, wide=kind != "string")

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        length, pos = read_length(buf, pos)
        if length < 0:
            if length == -1 and nullable:
                return None, pos
            raise _Short(f"{kind} length {length} (null is not allowed here)")
        end = pos + length
        if end > len(buf):
            raise _Short(f"{kind} of {length} bytes runs past the end")
        if kind == "string":
            return str(buf[pos:end], "utf-8"), end
        if kind == "bytes":
            return bytes(buf[pos:end]), end
        return buf[pos:end], end

    return read


def _array_reader(element: Reader, flexible: bool, nullable: bool) -> Reader:
    read_count = _length_reader(flexible, wide=True)

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        count, pos = read_count(buf, pos)
        if count < 0:
            if count == -1 and nullable:
                return None, pos
            raise _Short(f"array count {count} (null is not allowed here)")
        if count > len(buf) - pos:
            raise _Short(f"array of {count} elements cannot fit in {len(buf) - pos} bytes")
        items: list[Any] = []
        append = items.append
        for _ in range(count):
            item, pos = element(buf, pos)
            append(item)
        return items, pos

    return read


def _primitive_reader(kind: str, flexible: bool, nullable: bool) -> Reader:
    if kind in _INT:
        return _fixed_reader(_INT[kind])
    if kind == "bool":
        return _read_bool
    if kind == "uuid":
        return _read_uuid
    return _sized_reader(kind, flexible, nullable)


def _field_reader(spec: FieldSpec, version: int, flexible: bool) -> Reader:
    flexible = flexible and not spec.never_flexible
    nullable = in_range(version, spec.nullable)
    if spec.kind == "struct":
        inner = struct_reader(spec.struct_class, version, flexible)
        if not nullable:
            return inner
        return _nullable_struct_reader(inner)
    if spec.kind == "array":
        if spec.struct_class is not None:
            element = struct_reader(spec.struct_class, version, flexible)
        else:
            assert spec.element is not None
            element = _primitive_reader(spec.element, flexible, nullable=False)
        return _array_reader(element, flexible, nullable)
    return _primitive_reader(spec.kind, flexible, nullable)


def _nullable_struct_reader(inner: Reader) -> Reader:
    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        marker, pos = _fixed_reader(_INT["int8"])(buf, pos)
        if marker < 0:
            return None, pos
        return inner(buf, pos)

    return read


def _skip_tags(buf: memoryview, pos: int, obj: Any, known: dict[int, tuple[str, Reader]]) -> int:
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise _Short(f"tagged field {tag} of {size} bytes runs past the end")
        entry = known.get(tag)
        if entry is not None:
            value, _ = entry[1](buf[:end], pos)
            setattr(obj, entry[0], value)
        pos = end
    return pos


_READERS: dict[tuple[type, int, bool], Reader] = {}
_WRITERS: dict[tuple[type, int, bool], Writer] = {}


def _fields_of(cls: type) -> tuple[FieldSpec, ...]:
    name = cls.__name__
    spec = messages.SPECS.get(name)
    if spec is not None:
        return spec.fields
    return tuple(messages.STRUCTS[name].fields)


def struct_reader(cls: type, version: int, flexible: bool) -> Reader:
    """The compiled reader of one struct (or message) at one version."""
    key = (cls, version, flexible)
    cached = _READERS.get(key)
    if cached is not None:
        return cached
    regular: list[tuple[str, Reader]] = []
    tagged: dict[int, tuple[str, Reader]] = {}
    for spec in _fields_of(cls):
        if not in_range(version, spec.versions):
            continue
        if flexible and in_range(version, spec.tagged):
            assert spec.tag is not None
            tagged[spec.tag] = (spec.name, _field_reader(spec, version, flexible))
        else:
            regular.append((spec.name, _field_reader(spec, version, flexible)))
    setters = tuple(regular)

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        obj = cls()
        for name, reader in setters:
            value, pos = reader(buf, pos)
            setattr(obj, name, value)
        if flexible:
            pos = _skip_tags(buf, pos, obj, tagged)
        return obj, pos

    _READERS[key] = read
    return read


# --- writers -------------------------------------------------------------------------------

Refs = list[tuple[int, ExternalRecords]]


def _fixed_writer(layout: struct.Struct) -> Writer:
    pack = layout.pack

    def write(out: bytearray, refs: Refs, value: Any) -> None:
        out += pack(value)

    return write


def _write_bool(out: bytearray, refs: Refs, value: Any) -> None:
    out.append(1 if value else 0)


def _write_uuid(out: bytearray, refs: Refs, value: Any) -> None:
    out += value.bytes


def _length_writer(flexible: bool, wide: bool) -> Callable[[bytearray, int], None]:
    if flexible:

        def write_compact(out: bytearray, length: int) -> None:
            write_uvarint(out, length + 1)

        return write_compact
    pack = (_I32 if wide else _I16).pack

    def write_fixed(out: bytearray, length: int) -> None:
        out += pack(length)

    return write_fixed


def _sized_writer(kind: str, flexible: bool, name: str) -> Writer:
    write_length = _length_writer(flexible, wide=kind != "string")

    def write(out: bytearray, refs: Refs, value: Any) -> None:
        if value is None:
            write_length(out, -1)
            return
        if isinstance(value, ExternalRecords):
            write_length(out, value.size)
            refs.append((len(out), value))
            return
        data = value.encode("utf-8") if kind == "string" else value
        write_length(out, len(data))
        out += data

    return write


def _array_writer(element: Writer, flexible: bool) -> Writer:
    write_count = _length_writer(flexible, wide=True)

    def write(out: bytearray, refs: Refs, value: Any) -> None:
        if value is None:
            write_count(out, -1)
            return
        write_count(out, len(value))
        for item in value:
            element(out, refs, item)

    return write


def _primitive_writer(kind: str, flexible: bool, name: str) -> Writer:
    if kind in _INT:
        return _fixed_writer(_INT[kind])
    if kind == "bool":
        return _write_bool
    if kind == "uuid":
        return _write_uuid
    return _sized_writer(kind, flexible, name)


def _field_writer(spec: FieldSpec, version: int, flexible: bool) -> Writer:
    flexible = flexible and not spec.never_flexible
    if spec.kind == "struct":
        inner = struct_writer(spec.struct_class, version, flexible)
        if not in_range(version, spec.nullable):
            return inner

        def write_nullable(out: bytearray, refs: Refs, value: Any) -> None:
            if value is None:
                out.append(0xFF)
                return
            out.append(1)
            inner(out, refs, value)

        return write_nullable
    if spec.kind == "array":
        if spec.struct_class is not None:
            element = struct_writer(spec.struct_class, version, flexible)
        else:
            assert spec.element is not None
            element = _primitive_writer(spec.element, flexible, spec.name)
        return _array_writer(element, flexible)
    return _primitive_writer(spec.kind, flexible, spec.name)


def struct_writer(cls: type, version: int, flexible: bool) -> Writer:
    """The compiled writer of one struct (or message) at one version."""
    key = (cls, version, flexible)
    cached = _WRITERS.get(key)
    if cached is not None:
        return cached
    regular: list[tuple[str, Writer]] = []
    tagged: list[tuple[int, str, Writer, Any]] = []
    defaults = {f.name: f for f in dataclass_fields(cls)}
    for spec in _fields_of(cls):
        if not in_range(version, spec.versions):
            continue
        writer = _field_writer(spec, version, flexible)
        if flexible and in_range(version, spec.tagged):
            assert spec.tag is not None
            tagged.append((spec.tag, spec.name, writer, _default_of(defaults[spec.name])))
        else:
            regular.append((spec.name, writer))
    tagged.sort(key=lambda entry: entry[0])
    plain = tuple(regular)

    def write(out: bytearray, refs: Refs, obj: Any) -> None:
        for name, writer in plain:
            writer(out, refs, getattr(obj, name))
        if flexible:
            present = [
                (tag, name, w) for tag, name, w, default in tagged if getattr(obj, name) != default
            ]
            write_uvarint(out, len(present))
            for tag, name, field_writer in present:
                payload = bytearray()
                field_writer(payload, [], getattr(obj, name))
                write_uvarint(out, tag)
                write_uvarint(out, len(payload))
                out += payload

    _WRITERS[key] = write
    return write


def _default_of(field: Any) -> Any:
    from dataclasses import MISSING

    if field.default is not MISSING:
        return field.default
    if field.default_factory is not MISSING:
        return field.default_factory()
    return None


# --- whole messages ------------------------------------------------------------------------


def spec_of(cls: type) -> MessageSpec:
    return messages.SPECS[cls.__name__]


def decode(
    cls: type[T], data: Buffer, version: int, *, offset: int = 0, whole: bool = True
) -> tuple[T, int]:
    """Decode a message of type ``cls`` at ``version`` from ``data[offset:]``.

    Returns the value and the position after it. With ``whole`` (the default) bytes left over
    after the message are an error, as a request frame holds exactly one message.

    Raises:
        ProtocolDecodeError: truncated or malformed bytes, or a version outside the message's
            valid versions, naming the message, version, position.
    """
    spec = spec_of(cls)
    if not in_range(version, spec.valid_versions):
        # Also bounds the compiled-reader cache to Kafka's versions, whatever a frame claims.
        low, high = spec.valid_versions
        raise ProtocolDecodeError(spec.name, version, offset, f"not a version of {low}-{high}")
    view = data if isinstance(data, memoryview) else memoryview(data)
    reader = struct_reader(cls, version, spec.is_flexible(version))
    try:
        value, end = reader(view, offset)
    except (_Short, struct.error, UnicodeDecodeError, ValueError) as exc:
        raise ProtocolDecodeError(spec.name, version, offset, str(exc)) from None
    if whole and end != len(view):
        raise ProtocolDecodeError(
            spec.name, version, end, f"{len(view) - end} bytes left after the message"
        )
    return value, end


def encode_parts(
    value: Any, version: int, out: bytearray | None = None
) -> list[bytes | ExternalRecords]:
    """Encode ``value`` at ``version``: a list of byte parts and external records ranges."""
    cls = type(value)
    spec = spec_of(cls)
    buffer = bytearray() if out is None else out
    refs: Refs = []
    struct_writer(cls, version, spec.is_flexible(version))(buffer, refs, value)
    if not refs:
        return [bytes(buffer)]
    parts: list[bytes | ExternalRecords] = []
    start = 0
    for position, ref in refs:
        parts.append(bytes(buffer[start:position]))
        parts.append(ref)
        start = position
    parts.append(bytes(buffer[start:]))
    return parts


def encode(value: Any, version: int) -> bytes:
    """Encode ``value`` at ``version`` to bytes (no external records allowed)."""
    parts = encode_parts(value, version)
    if len(parts) != 1:
        raise TypeError(f"{type(value).__name__} holds external records: use encode_parts")
    part = parts[0]
    assert isinstance(part, bytes)
    return part
