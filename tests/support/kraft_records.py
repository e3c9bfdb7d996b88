"""Test-side encoders of KRaft metadata records (independent of seglog's decoder)."""

from __future__ import annotations

import struct
import uuid


def uvarint(value: int) -> bytes:
    """Kafka's unsigned varint (test-side encoder, independent of the decoder)."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def compact_string(text: str | None) -> bytes:
    if text is None:
        return b"\x00"
    raw = text.encode()
    return uvarint(len(raw) + 1) + raw


def frame(api_key: int, version: int, body: bytes) -> bytes:
    return uvarint(1) + uvarint(api_key) + uvarint(version) + body + b"\x00"  # no tagged fields


def topic_record(name: str, topic_id: uuid.UUID) -> bytes:
    return frame(2, 0, compact_string(name) + topic_id.bytes)


def partition_record(partition: int, topic_id: uuid.UUID) -> bytes:
    # Replicas [1], Isr [1], Removing [], Adding [], Leader 1, LeaderEpoch 0, PartitionEpoch 0
    rest = b"\x02\x00\x00\x00\x01" * 2 + b"\x01\x01" + struct.pack(">iii", 1, 0, 0)
    return frame(3, 0, struct.pack(">i", partition) + topic_id.bytes + rest)


def config_record(resource_type: int, resource: str, name: str, value: str | None) -> bytes:
    body = struct.pack(">b", resource_type) + compact_string(resource) + compact_string(name)
    return frame(4, 0, body + compact_string(value))


def remove_topic_record(topic_id: uuid.UUID) -> bytes:
    return frame(9, 0, topic_id.bytes)
