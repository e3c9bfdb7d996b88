"""The consumer protocol's subscription and assignment bytes (``protocolType`` "consumer").

A classic group whose protocol type is ``consumer`` stores, per member, Kafka's
``ConsumerProtocolSubscription`` and ``ConsumerProtocolAssignment`` (non-flexible, int16
version first). seglog reads only what the offsets store and ``consumer-groups`` need:

* subscription (versions 0-3): version int16, ``topics`` array (int32 count) of string, then
  user data, owned partitions, generation and rack, which are not read;
* assignment (versions 0-3): version int16, ``assignedPartitions`` array of (``topic`` string,
  ``partitions`` array of int32), then user data, not read.

Any version is read by these leading fields, which every version shares (Kafka's consumer
also reads newer versions by their prefix). Bad bytes raise
:class:`~seglog.errors.CorruptGroupRecordError`.
"""

from __future__ import annotations

import struct

from seglog.format.message_fields import FieldReader

_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")


def subscription_topics(data: bytes) -> tuple[str, ...]:
    """The topics a member's subscription bytes name."""
    reader = FieldReader(bytes(data), "ConsumerProtocolSubscription")
    reader.int16()
    return tuple(
        reader.required("topics") for _ in range(reader.array_length("topics", flexible=False))
    )


def assignment_partitions(data: bytes) -> tuple[tuple[str, int], ...]:
    """The (topic, partition) pairs a member's assignment bytes give it; empty bytes (a
    member before its first assignment) give none."""
    if not data:
        return ()
    reader = FieldReader(bytes(data), "ConsumerProtocolAssignment")
    reader.int16()
    out: list[tuple[str, int]] = []
    for _ in range(reader.array_length("assignedPartitions", flexible=False)):
        topic = reader.required("topic")
        count = reader.array_length("partitions", flexible=False)
        out.extend((topic, reader.int32()) for _ in range(count))
    return tuple(out)


def encode_subscription(topics: tuple[str, ...] | list[str], version: int = 0) -> bytes:
    """A version-0-layout subscription (null user data): for tests and tools."""
    out = [_I16.pack(version), _I32.pack(len(topics))]
    for topic in topics:
        data = topic.encode("utf-8")
        out += [_I16.pack(len(data)), data]
    return b"".join([*out, _I32.pack(-1)])


def encode_assignment(partitions: dict[str, list[int]], version: int = 0) -> bytes:
    """A version-0-layout assignment (null user data): for tests and tools."""
    out = [_I16.pack(version), _I32.pack(len(partitions))]
    for topic, numbers in partitions.items():
        data = topic.encode("utf-8")
        out += [_I16.pack(len(data)), data, _I32.pack(len(numbers))]
        out += [_I32.pack(n) for n in numbers]
    return b"".join([*out, _I32.pack(-1)])
