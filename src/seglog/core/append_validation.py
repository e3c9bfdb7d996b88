"""Checking a producer's chunk of batches before it is appended, and assigning its offsets.

Pure: bytes and config in, a private copy of the bytes with offsets assigned out (Kafka's
``LogValidator`` for the in-place case). Nothing here touches a file.

Rules, each raising a typed error that names the partition and the batch position:

* the chunk is whole v2 batches, each with a valid CRC (``CorruptRecordError`` otherwise; a
  torn chunk is corrupt input, never half-appended);
* magic 2 only (seglog writes no legacy format); no control batches from clients;
* each batch is at most ``max.message.bytes`` (``RecordTooLargeError``);
* a batch's record count equals its offset range (``lastOffsetDelta + 1``), and is > 0;
* on a compacted topic every record has a key (Kafka rejects keyless records there);
* with ``CreateTime``, record timestamps lie within ``message.timestamp.before.max.ms`` /
  ``after.max.ms`` of now (only checked when either bound is set);
* with ``LogAppendTime``, each batch gets the append time as its max timestamp and the
  timestamp-type bit, and its CRC is recomputed.

Offsets are assigned from ``log_end_offset`` by rewriting each batch's ``baseOffset`` and
stamping ``partitionLeaderEpoch`` (both outside the CRC). With ``CreateTime`` the batch's own
``maxTimestamp`` is trusted: it is covered by the CRC, and decoding every record only to
recompute it would cost the append path a full record scan (Kafka recomputes it; a producer
that writes a wrong max harms only its own time lookups).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from seglog.config import LogConfig
from seglog.errors import CorruptRecordError, InvalidRecordError, RecordTooLargeError
from seglog.format.batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    MAGIC_V2,
    TIMESTAMP_TYPE_MASK,
    RecordBatch,
    set_base_offset,
    set_partition_leader_epoch,
)
from seglog.format.columnar import scan_columns
from seglog.format.crc import crc32c
from seglog.format.reader import BatchReader, EndKind

LEADER_EPOCH = 0  # a single node is always the leader of epoch 0
INT64_MAX = (1 << 63) - 1

_MAX_TIMESTAMP_AT = 35
_INT64 = struct.Struct(">q")
_INT16 = struct.Struct(">h")
_UINT32 = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class BatchSpan:
    """One batch of an append: its position inside the appended bytes, size, last offset and
    max timestamp (after offset assignment)."""

    position: int
    size: int
    last_offset: int
    max_timestamp: int


@dataclass(frozen=True, slots=True)
class ValidatedAppend:
    """A checked chunk, offsets assigned: ready to be written as it is."""

    data: bytearray
    first_offset: int
    last_offset: int
    max_timestamp: int
    spans: list[BatchSpan]
    record_count: int


def has_timestamp_bounds(config: LogConfig) -> bool:
    """True when ``message.timestamp.before/after.max.ms`` limit CreateTime timestamps."""
    return (
        config.message_timestamp_before_max_ms < INT64_MAX
        or config.message_timestamp_after_max_ms < INT64_MAX
    )


def validate_append(
    data: bytes | bytearray | memoryview,
    *,
    config: LogConfig,
    log_end_offset: int,
    now_ms: int,
    where: str,
) -> ValidatedAppend:
    """Check every batch of a producer's chunk and assign offsets in a private copy."""
    out = bytearray(data)
    reader = BatchReader(out, verify_crc=True, check_offsets=False)
    next_offset = log_end_offset
    max_timestamp = -1
    spans: list[BatchSpan] = []
    records = 0
    log_append = config.message_timestamp_type == "LogAppendTime"
    for batch in reader:
        if batch.magic != MAGIC_V2:
            raise InvalidRecordError(
                f"{where}: batch at position {batch.position} has magic "
                f"{batch.magic}; seglog accepts only magic 2"
            )
        assert isinstance(batch, RecordBatch)
        if batch.size_in_bytes > config.max_message_bytes:
            raise RecordTooLargeError(
                f"{where}: batch at position {batch.position} is {batch.size_in_bytes} bytes, "
                f"above max.message.bytes {config.max_message_bytes}"
            )
        if batch.is_control:
            raise InvalidRecordError(f"{where}: clients cannot append control batches")
        if batch.records_count <= 0 or batch.records_count != batch.last_offset_delta + 1:
            raise InvalidRecordError(
                f"{where}: batch at position {batch.position} has {batch.records_count} "
                f"records but lastOffsetDelta {batch.last_offset_delta}"
            )
        view = memoryview(out)[batch.position : batch.position + batch.size_in_bytes]
        set_base_offset(view, next_offset)
        set_partition_leader_epoch(view, LEADER_EPOCH)
        batch_max = batch.max_timestamp
        if log_append:
            batch_max = now_ms
            _INT16.pack_into(view, ATTRIBUTES_OFFSET, batch.attributes | TIMESTAMP_TYPE_MASK)
            _INT64.pack_into(view, _MAX_TIMESTAMP_AT, now_ms)
            _UINT32.pack_into(view, CRC_OFFSET, crc32c(view[ATTRIBUTES_OFFSET:]))
        last = next_offset + batch.last_offset_delta
        max_timestamp = max(max_timestamp, batch_max)
        spans.append(BatchSpan(batch.position, batch.size_in_bytes, last, batch_max))
        next_offset = last + 1
        records += batch.records_count
    assert reader.end is not None
    if reader.end.kind is not EndKind.CLEAN:
        raise CorruptRecordError(f"{where}: {reader.end.reason}", position=reader.end.position)
    if not spans:
        raise InvalidRecordError(f"{where}: no batches to append")
    check_times = not log_append and has_timestamp_bounds(config)
    if config.is_compacted or check_times:
        _validate_records(out, config, now_ms, check_times, where)
    return ValidatedAppend(out, log_end_offset, next_offset - 1, max_timestamp, spans, records)


def _validate_records(
    data: bytearray, config: LogConfig, now_ms: int, check_times: bool, where: str
) -> None:
    """Record-level checks (keys on a compacted topic, timestamp bounds) with the kernel."""
    columns = scan_columns(bytes(data), verify_crc=False)
    if config.is_compacted:
        keyless = np.flatnonzero(columns.key_length < 0)
        if len(keyless):
            raise InvalidRecordError(
                f"{where}: a compacted topic requires a key; record {int(keyless[0])} of "
                f"the append has none"
            )
    if check_times:
        earliest = now_ms - config.message_timestamp_before_max_ms
        latest = now_ms + config.message_timestamp_after_max_ms
        bad = np.flatnonzero((columns.timestamp < earliest) | (columns.timestamp > latest))
        if len(bad):
            raise InvalidRecordError(
                f"{where}: record timestamp {int(columns.timestamp[bad[0]])} is outside "
                f"[{earliest}, {latest}] (message.timestamp.before/after.max.ms)"
            )
