"""The primitives of Kafka's generated messages (its JSON schemas), written and read.

Big-endian two's complement integers. Non-flexible versions: ``string`` = int16 length + UTF-8
(-1 = null), ``bytes`` = int32 length + bytes, arrays = int32 count. Flexible versions
(KIP-482): an unsigned varint ``length + 1`` for strings, bytes and arrays (0 = null), and a
tagged-field buffer after every struct (unsigned varint count, then per field an unsigned
varint tag, an unsigned varint size and the bytes). Strings are written as Java writes them
(``String.getBytes(UTF_8)``: a lone surrogate becomes ``?``) and read with invalid UTF-8
replaced by U+FFFD (Java's decoder). :class:`FieldReader` raises
:class:`~seglog.errors.CorruptGroupRecordError` naming the field and byte position for any
overrun, over-long varint or impossible length, never ``IndexError`` or ``struct.error``.
"""

from __future__ import annotations

import struct

from seglog.errors import CorruptGroupRecordError, InvalidRecordError

INT16_MAX = (1 << 15) - 1
UVARINT_MAX_BYTES = 5

_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


def utf8(text: str) -> bytes:
    """``text`` as Java's ``String.getBytes(UTF_8)`` writes it."""
    # Java's String.getBytes(UTF_8) writes '?' for a lone surrogate; so does "replace".
    return text.encode("utf-8", "replace")


def write_string(text: str | None, *, flexible: bool = False) -> bytes:
    """A (nullable) string; more than 32767 UTF-8 bytes cannot be written non-flexibly."""
    if text is None:
        return b"\x00" if flexible else _I16.pack(-1)
    data = utf8(text)
    if flexible:
        return write_uvarint(len(data) + 1) + data
    if len(data) > INT16_MAX:
        raise InvalidRecordError(f"string of {len(data)} UTF-8 bytes is longer than {INT16_MAX}")
    return _I16.pack(len(data)) + data


def write_bytes(data: bytes, *, flexible: bool = False) -> bytes:
    """A (non-null) byte string."""
    return (write_uvarint(len(data) + 1) if flexible else _I32.pack(len(data))) + data


def write_uvarint(value: int) -> bytes:
    """An unsigned varint (7 bits a byte, least significant first)."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class FieldReader:
    """Sequential reader of one message (``what`` names it in errors); overruns raise
    CorruptGroupRecordError."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what
        self.field = ""  # the field being read, named in errors

    def fail(self, reason: str, position: int | None = None) -> CorruptGroupRecordError:
        at = self.pos if position is None else position
        field = f" {self.field}" if self.field else ""
        return CorruptGroupRecordError(f"{self.what}{field}: {reason}", position=at)

    def take(self, size: int) -> bytes:
        end = self.pos + size
        if size < 0 or end > len(self.data):
            raise self.fail(f"needs {size} bytes here but only {len(self.data) - self.pos} remain")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def int16(self, field: str = "") -> int:
        self.field = field or self.field
        return int(_I16.unpack(self.take(2))[0])

    def int32(self, field: str = "") -> int:
        self.field = field or self.field
        return int(_I32.unpack(self.take(4))[0])

    def int64(self, field: str = "") -> int:
        self.field = field or self.field
        return int(_I64.unpack(self.take(8))[0])

    def uvarint(self) -> int:
        start, value = self.pos, 0
        for shift in range(0, 7 * UVARINT_MAX_BYTES, 7):
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
        raise self.fail("unsigned varint longer than 5 bytes", start)

    def string(self, field: str, *, flexible: bool, nullable: bool = False) -> str | None:
        start, self.field = self.pos, field
        length = self.uvarint() - 1 if flexible else self.int16()
        if length < 0:
            if length == -1 and nullable:
                return None
            raise self.fail(f"{field} has length {length} (not a nullable string)", start)
        return self.take(length).decode("utf-8", "replace")

    def required(self, field: str, *, flexible: bool = False) -> str:
        text = self.string(field, flexible=flexible)
        assert text is not None
        return text

    def bytes_(self, field: str, *, flexible: bool) -> bytes:
        start, self.field = self.pos, field
        length = self.uvarint() - 1 if flexible else self.int32()
        if length < 0:
            raise self.fail(f"{field} has length {length} (not nullable)", start)
        return self.take(length)

    def array_length(self, field: str, *, flexible: bool) -> int:
        start, self.field = self.pos, field
        count = self.uvarint() - 1 if flexible else self.int32()
        if count < 0:
            raise self.fail(f"{field} array has count {count} (not nullable)", start)
        if count > len(self.data) - self.pos:  # each element takes at least one byte
            raise self.fail(f"{field} array count {count} is more than the bytes left", start)
        return count

    def tagged_fields(self) -> dict[int, bytes]:
        self.field = "tagged fields"
        tags: dict[int, bytes] = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            tags[tag] = self.take(self.uvarint())
        return tags
