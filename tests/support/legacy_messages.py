"""Legacy (v0/v1) messages as a pre-0.11 broker wrote them, for tests that need such a log."""

from __future__ import annotations

import struct

from seglog.format.crc import crc32_ieee


def legacy_message(
    offset: int, magic: int, key: bytes | None, value: bytes | None, *, timestamp: int = -1
) -> bytes:
    """One framed, uncompressed v0/v1 message: offset, size, CRC-32, magic, attributes 0,
    [timestamp for v1], key, value."""

    def field(data: bytes | None) -> bytes:
        return struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data

    body = bytes((magic, 0))
    if magic == 1:
        body += struct.pack(">q", timestamp)
    body += field(key) + field(value)
    message = struct.pack(">I", crc32_ieee(body)) + body
    return struct.pack(">qi", offset, len(message)) + message
