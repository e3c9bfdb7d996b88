"""Producer state snapshots (``<offset>.snapshot``): Kafka's ProducerSnapshot, version 1.

The file holds the producer state of a partition as of every offset below ``offset`` (the
exclusive end in its name). Layout, big-endian, not flexible::

    pos width field
      0   2  version                 1
      2   4  crc                     uint32 CRC-32C of bytes [6, end)
      6   4  entry count             int32
     10  46n entries

    entry: producerId int64, epoch int16, lastSequence int32, lastOffset int64,
           offsetDelta int32 (lastSequence - firstSequence of the last batch),
           timestamp int64 (the last batch's max timestamp), coordinatorEpoch int32,
           currentTxnFirstOffset int64 (-1: no open transaction)

A producer with no retained batch has ``lastSequence`` -1, ``lastOffset`` -1 and
``offsetDelta`` 0. Anything else (another version, a CRC mismatch, a length that does not
match the count) is a ``CorruptSnapshotError``: the loader skips such a file and rebuilds
the state from the log instead of trusting it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from seglog.errors import CorruptSnapshotError
from seglog.format.crc import crc32c

SNAPSHOT_VERSION = 1
SNAPSHOT_HEADER_SIZE = 10
SNAPSHOT_ENTRY_SIZE = 46
_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
assert _ENTRY.size == SNAPSHOT_ENTRY_SIZE and _HEADER.size == SNAPSHOT_HEADER_SIZE


@dataclass(frozen=True, slots=True)
class ProducerSnapshotEntry:
    """One producer's state in a snapshot."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int  # -1: no open transaction


def encode_producer_snapshot(entries: Sequence[ProducerSnapshotEntry]) -> bytes:
    """The whole snapshot file's bytes."""
    out = bytearray(SNAPSHOT_HEADER_SIZE + SNAPSHOT_ENTRY_SIZE * len(entries))
    position = SNAPSHOT_HEADER_SIZE
    for e in entries:
        _ENTRY.pack_into(
            out,
            position,
            e.producer_id,
            e.producer_epoch,
            e.last_sequence,
            e.last_offset,
            e.offset_delta,
            e.timestamp,
            e.coordinator_epoch,
            e.current_txn_first_offset,
        )
        position += SNAPSHOT_ENTRY_SIZE
    struct.pack_into(">i", out, 6, len(entries))
    _HEADER.pack_into(out, 0, SNAPSHOT_VERSION, crc32c(memoryview(out)[6:]), len(entries))
    return bytes(out)


def decode_producer_snapshot(
    data: bytes | bytearray | memoryview, *, path: str
) -> list[ProducerSnapshotEntry]:
    """Every entry of a snapshot file; ``CorruptSnapshotError`` names ``path`` and what broke."""
    if len(data) < SNAPSHOT_HEADER_SIZE:
        raise CorruptSnapshotError(
            f"producer snapshot is {len(data)} bytes, shorter than its 10-byte header",
            position=0,
            path=path,
        )
    version, crc, count = _HEADER.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(
            f"producer snapshot version {version}, only {SNAPSHOT_VERSION} is known",
            position=0,
            path=path,
        )
    actual = crc32c(memoryview(data)[6:])
    if actual != crc:
        raise CorruptSnapshotError(
            f"producer snapshot CRC mismatch: stored {crc:#010x}, computed {actual:#010x}",
            position=2,
            path=path,
        )
    if count < 0 or len(data) != SNAPSHOT_HEADER_SIZE + count * SNAPSHOT_ENTRY_SIZE:
        raise CorruptSnapshotError(
            f"producer snapshot holds {len(data)} bytes for {count} entries of "
            f"{SNAPSHOT_ENTRY_SIZE} bytes",
            position=6,
            path=path,
        )
    return [
        ProducerSnapshotEntry(
            *_ENTRY.unpack_from(data, SNAPSHOT_HEADER_SIZE + i * SNAPSHOT_ENTRY_SIZE)
        )
        for i in range(count)
    ]
