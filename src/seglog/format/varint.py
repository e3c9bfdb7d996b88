"""Zig-zag variable-length integers, as Kafka's record format v2 writes them.

Format: the signed value ``n`` is zig-zag mapped (``(n << 1) ^ (n >> 63)``) to an unsigned
integer, then written as protobuf base-128 groups, least significant first, with the high bit
of each byte set when another byte follows. A Kafka ``varint`` holds an int32 (at most 5
bytes) and a ``varlong`` an int64 (at most 10 bytes). ``-1`` encodes as ``0x01``, ``0`` as
``0x00``, ``1`` as ``0x02`` and ``64`` as ``0x80 0x01``.

Decoding never reads past ``end`` and raises :class:`VarintError` (a ``ValueError``) for a
truncated or over-long varint; callers turn it into a positioned ``CorruptRecordError``.
"""

from __future__ import annotations

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

MAX_VARINT_BYTES = 5
MAX_VARLONG_BYTES = 10


class VarintError(ValueError):
    """A varint that is truncated, too long for its type, or out of range."""


def encode_varint(value: int) -> bytes:
    """Encode a signed integer (int64 range) as a zig-zag varint."""
    if value < INT64_MIN or value > INT64_MAX:
        raise VarintError(f"varint value {value} is outside the int64 range")
    zigzag = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    if zigzag < 0x80:
        return bytes((zigzag,))
    out = bytearray()
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def size_of_varint(value: int) -> int:
    """Number of bytes :func:`encode_varint` writes for ``value``."""
    zigzag = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    size = 1
    while zigzag >= 0x80:
        zigzag >>= 7
        size += 1
    return size


def decode_varint(
    buf: bytes | bytearray | memoryview, pos: int, end: int, max_bytes: int = MAX_VARLONG_BYTES
) -> tuple[int, int]:
    """Decode one zig-zag varint at ``pos``; return ``(value, next_pos)``.

    ``max_bytes`` is 5 for a Kafka varint (int32) and 10 for a varlong (int64).
    """
    if pos >= end:
        raise VarintError("truncated varint: no bytes left")
    byte = buf[pos]
    if byte < 0x80:  # the common one-byte case
        return (byte >> 1) ^ -(byte & 1), pos + 1
    result = byte & 0x7F
    shift = 7
    pos += 1
    count = 1
    while True:
        if pos >= end:
            raise VarintError("truncated varint: continuation bit set on the last byte")
        if count >= max_bytes:
            raise VarintError(f"varint longer than {max_bytes} bytes")
        byte = buf[pos]
        pos += 1
        count += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
    value = (result >> 1) ^ -(result & 1)
    if max_bytes == MAX_VARINT_BYTES and not INT32_MIN <= value <= INT32_MAX:
        raise VarintError(f"varint value {value} is outside the int32 range")
    if not INT64_MIN <= value <= INT64_MAX:
        raise VarintError(f"varlong value {value} is outside the int64 range")
    return value, pos
