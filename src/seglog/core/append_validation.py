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

The CRC check may be deferred (``defer_crc``): the header walk then checks every other rule
and assigns offsets, and the caller runs :func:`check_batch_crcs` on another thread while the
bytes are written, cutting them back if it fails (the engine's pipelined append, for large
chunks of a topic whose records need no decoding). Everything else is still checked before
anything is written.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

from seglog.config import LogConfig
from seglog.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    KeylessRecordError,
    RecordTooLargeError,
)
from seglog.format.batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    LOG_OVERHEAD,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    parse_batch_header,
)
from seglog.format.columnar import scan_columns
from seglog.format.crc import crc32c_fast as crc32c

LEADER_EPOCH = 0  # a single node is always the leader of epoch 0
# Appends of at most this many records, uncompressed, are checked record by record in Python:
# the kernel's fixed cost per call (argument checks, column arrays) is larger than decoding a
# handful of records (a coordinator's one-record writes to __transaction_state and
# __consumer_offsets, single produced records).
SMALL_APPEND_RECORDS = 8
INT64_MAX = (1 << 63) - 1

_MAX_TIMESTAMP_AT = 35
_INT64 = struct.Struct(">q")
_INT16 = struct.Struct(">h")
_UINT32 = struct.Struct(">I")
_OFFSET_AND_LENGTH_AND_EPOCH = struct.Struct(">qii")  # baseOffset, batchLength, leader epoch
_PREFIX_BYTES = _OFFSET_AND_LENGTH_AND_EPOCH.size
# The header fields the checks read (HEADER_STRUCT minus the skipped ones, as pad bytes):
# batchLength, magic, crc, attributes, lastOffsetDelta, maxTimestamp, recordsCount.
_CHECKED_FIELDS = struct.Struct(">8xi4xbIhi8xq14xi")
assert _CHECKED_FIELDS.size == RECORD_BATCH_OVERHEAD


# One batch of an append: (position inside the appended bytes, size, last offset, max
# timestamp), offsets as assigned. A plain tuple: the append path makes one per batch.
BatchSpan = tuple[int, int, int, int]


class ValidatedAppend(NamedTuple):
    """A checked chunk with its offsets assigned, as the buffers to write in order.

    Offset assignment never copies the chunk: each batch is written as a 16-byte header
    prefix (new ``baseOffset``, ``batchLength``, leader epoch) followed by a view of the rest
    of the caller's batch (``pwritev``). With ``LogAppendTime`` the batches are rewritten (new
    attributes, max timestamp and CRC), so the chunk is copied once and written whole.
    """

    buffers: list[bytes | memoryview]
    size: int
    first_offset: int
    last_offset: int
    max_timestamp: int
    spans: list[BatchSpan]
    record_count: int
    crc_deferred: bool = False  # the CRCs are still to be checked (check_batch_crcs)


def needs_record_checks(config: LogConfig) -> bool:
    """True when an append's records must be decoded (keys on a compacted topic, CreateTime
    bounds); such an append is checked whole before it is written."""
    return config.is_compacted or (
        config.message_timestamp_type != "LogAppendTime" and has_timestamp_bounds(config)
    )


def has_timestamp_bounds(config: LogConfig) -> bool:
    """True when ``message.timestamp.before/after.max.ms`` limit CreateTime timestamps."""
    return (
        config.message_timestamp_before_max_ms < INT64_MAX
        or config.message_timestamp_after_max_ms < INT64_MAX
    )


def _corrupt(where: str, position: int, reason: str) -> CorruptRecordError:
    return CorruptRecordError(f"{where}: {reason}", position=position)


def validate_append(
    data: bytes | bytearray | memoryview,
    *,
    config: LogConfig,
    log_end_offset: int,
    now_ms: int,
    where: str,
    defer_crc: bool = False,
    leader_epoch: int = LEADER_EPOCH,
) -> ValidatedAppend:
    """Check every batch of a producer's chunk and assign offsets in a private copy.

    The walk unpacks each 61-byte header once with :mod:`struct` and checks the CRC with one
    ``crc32c`` call: no object per batch beyond its :class:`BatchSpan` (this is the append
    hot path; see BENCHMARKS.md). The rules on the header are tested together, and only a
    batch that fails them is examined again for the exact error (:func:`_refusal`). With
    ``defer_crc`` the CRCs are left to :func:`check_batch_crcs` (``crc_deferred`` says so);
    it is ignored, and every CRC checked here, when the append needs record checks or
    rewrites its batches (``LogAppendTime``). Each batch is stamped with ``leader_epoch``
    (the log's current one: a broker's copied log may be past epoch 0, and epochs never go
    down in a log).
    """
    log_append = config.message_timestamp_type == "LogAppendTime"
    defer_crc = defer_crc and not log_append and not needs_record_checks(config)
    out: bytes | bytearray | memoryview = bytearray(data) if log_append else data
    view = memoryview(out)
    total = len(out)
    buffers: list[bytes | memoryview] = [view] if log_append else []
    next_offset = log_end_offset
    max_timestamp = -1
    spans: list[BatchSpan] = []
    records = 0
    max_bytes = config.max_message_bytes
    unpack = _CHECKED_FIELDS.unpack_from
    pack_prefix = _OFFSET_AND_LENGTH_AND_EPOCH.pack
    add_buffer, add_span = buffers.append, spans.append
    position = 0
    while position < total:
        if total - position < RECORD_BATCH_OVERHEAD:
            raise _corrupt(where, position, f"torn batch: {total - position} bytes left")
        length, magic, crc, attributes, delta, batch_max, count = unpack(out, position)
        size = length + LOG_OVERHEAD
        end = position + size
        if (
            magic != MAGIC_V2
            or length < MIN_BATCH_LENGTH
            or end > total
            or size > max_bytes
            or attributes & CONTROL_FLAG_MASK
            or count <= 0
            or count != delta + 1
        ):
            raise _refusal(where, view, position, max_bytes)
        if not defer_crc and crc32c(view[position + ATTRIBUTES_OFFSET : end]) != crc:
            raise _corrupt(where, position, f"batch CRC mismatch (stored {crc})")
        if not log_append:
            add_buffer(pack_prefix(next_offset, length, leader_epoch))
            add_buffer(view[position + _PREFIX_BYTES : end])
        else:
            _OFFSET_AND_LENGTH_AND_EPOCH.pack_into(out, position, next_offset, length, leader_epoch)
            batch = view[position:end]
            batch_max = now_ms
            _INT16.pack_into(batch, ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_MASK)
            _INT64.pack_into(batch, _MAX_TIMESTAMP_AT, now_ms)
            _UINT32.pack_into(batch, CRC_OFFSET, crc32c(batch[ATTRIBUTES_OFFSET:]))
        last = next_offset + delta
        if batch_max > max_timestamp:  # noqa: PLR1730  (a builtin call costs more per batch)
            max_timestamp = batch_max
        add_span((position, size, last, batch_max))
        next_offset = last + 1
        records += count
        position = end
    if not spans:
        raise InvalidRecordError(f"{where}: no batches to append")
    if needs_record_checks(config):
        check_times = not log_append and has_timestamp_bounds(config)
        _validate_records(view, config, now_ms, check_times, where, records)
    return ValidatedAppend(
        buffers, total, log_end_offset, next_offset - 1, max_timestamp, spans, records, defer_crc
    )


def check_batch_crcs(
    data: bytes | bytearray | memoryview, spans: list[BatchSpan], where: str
) -> None:
    """Check the CRC of each batch of ``data`` (spans from :func:`validate_append`).

    Meant for a side thread while the appending thread waits in ``pwritev``: the loop keeps
    the GIL (releasing it per batch measured slower, the hand-offs costing more than they
    give), which the appending thread needs only once its write has returned. Raises
    ``CorruptRecordError`` naming the first bad batch's position in the append, as
    :func:`validate_append` does.
    """
    view = memoryview(data)
    stored_crc = _UINT32.unpack_from
    for position, size, _, _ in spans:
        (stored,) = stored_crc(view, position + CRC_OFFSET)
        if crc32c(view[position + ATTRIBUTES_OFFSET : position + size]) != stored:
            raise _corrupt(where, position, f"batch CRC mismatch (stored {stored})")


def _refusal(
    where: str, view: memoryview, position: int, max_bytes: int
) -> CorruptRecordError | InvalidRecordError | RecordTooLargeError:
    """The error for a batch that failed the walk's combined test, the rules checked in
    the module docstring's order (the CRC before the rules on its content, so a damaged
    batch is reported as corrupt, never as breaking a content rule)."""
    length, magic, crc, attributes, delta, _, count = _CHECKED_FIELDS.unpack_from(view, position)
    size = length + LOG_OVERHEAD
    total = len(view)
    if magic != MAGIC_V2:
        return InvalidRecordError(
            f"{where}: batch at position {position} has magic {magic}; seglog accepts only magic 2"
        )
    if length < MIN_BATCH_LENGTH:
        return _corrupt(where, position, f"batch length {length} is below {MIN_BATCH_LENGTH}")
    if position + size > total:
        return _corrupt(
            where, position, f"torn batch: {total - position} bytes of {size} are present"
        )
    if size > max_bytes:
        return RecordTooLargeError(
            f"{where}: batch at position {position} is {size} bytes, above "
            f"max.message.bytes {max_bytes}"
        )
    if crc32c(view[position + ATTRIBUTES_OFFSET : position + size]) != crc:
        return _corrupt(where, position, f"batch CRC mismatch (stored {crc})")
    if attributes & CONTROL_FLAG_MASK:
        return InvalidRecordError(f"{where}: clients cannot append control batches")
    return InvalidRecordError(
        f"{where}: batch at position {position} has {count} records but lastOffsetDelta {delta}"
    )


def _validate_records(
    data: memoryview,
    config: LogConfig,
    now_ms: int,
    check_times: bool,
    where: str,
    record_count: int,
) -> None:
    """Record-level checks (keys on a compacted topic, timestamp bounds) with the kernel.

    Every batch of a producer's chunk has base offset 0, so the scan must not stop where
    offsets fail to increase (``check_offsets=False``: it once checked only the first batch
    of a multi-batch append); it must decode all ``record_count`` records the headers count.
    """
    if record_count <= SMALL_APPEND_RECORDS:
        small = _small_append(data, where)
        if small is not None:
            _check_small(small, config, now_ms, check_times, where)
            return
    columns = scan_columns(data, verify_crc=False, check_offsets=False)
    if len(columns.offset) != record_count:
        raise _corrupt(
            where,
            int(columns.end.position),
            f"the batches hold {len(columns.offset)} decodable records where their headers "
            f"count {record_count}",
        )
    if config.is_compacted:
        keyless = np.flatnonzero(columns.key_length < 0)
        if len(keyless):
            raise KeylessRecordError(
                f"{where}: a compacted topic requires a key; record {int(keyless[0])} of "
                f"the append has none",
                record_index=int(keyless[0]),
            )
    if check_times:
        earliest = now_ms - config.message_timestamp_before_max_ms
        latest = now_ms + config.message_timestamp_after_max_ms
        bad = np.flatnonzero((columns.timestamp < earliest) | (columns.timestamp > latest))
        if len(bad):
            raise InvalidTimestampError(
                f"{where}: record timestamp {int(columns.timestamp[bad[0]])} is outside "
                f"[{earliest}, {latest}] (message.timestamp.before/after.max.ms)",
                record_index=int(bad[0]),
            )


def _small_append(data: memoryview, where: str) -> list[tuple[bool, int]] | None:
    """(key is null, timestamp) of every record of an uncompressed append, decoded in Python;
    None when a batch is compressed (the kernel path decompresses). The batch frames are
    already checked by the header walk; a record section that does not decode is corrupt."""
    out: list[tuple[bool, int]] = []
    position, total = 0, len(data)
    while position < total:
        batch = parse_batch_header(data, position)
        if batch.attributes & COMPRESSION_CODEC_MASK:
            return None
        try:
            records = batch.records()
        except CorruptRecordError as error:
            raise _corrupt(where, position, str(error)) from None
        if len(records) != batch.records_count:
            raise _corrupt(
                where,
                position,
                f"the batch holds {len(records)} decodable records where its header counts "
                f"{batch.records_count}",
            )
        out.extend((record.key is None, record.timestamp) for record in records)
        position += batch.size_in_bytes
    return out


def _check_small(
    records: list[tuple[bool, int]], config: LogConfig, now_ms: int, check_times: bool, where: str
) -> None:
    """:func:`_validate_records`' rules on records decoded by :func:`_small_append`."""
    if config.is_compacted:
        for index, (keyless, _) in enumerate(records):
            if keyless:
                raise KeylessRecordError(
                    f"{where}: a compacted topic requires a key; record {index} of the append "
                    f"has none",
                    record_index=index,
                )
    if check_times:
        earliest = now_ms - config.message_timestamp_before_max_ms
        latest = now_ms + config.message_timestamp_after_max_ms
        for index, (_, timestamp) in enumerate(records):
            if timestamp < earliest or timestamp > latest:
                raise InvalidTimestampError(
                    f"{where}: record timestamp {timestamp} is outside [{earliest}, {latest}] "
                    f"(message.timestamp.before/after.max.ms)",
                    record_index=index,
                )
