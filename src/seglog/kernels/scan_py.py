"""Plain-Python twins of the numba kernels in :mod:`seglog.kernels.scan`.

Written independently of the numba source (``struct`` on ``bytes`` instead of byte shifts on
an array) so a differential test compares two implementations of one specification. Same
arguments, same return tuples, same codes and positions, and the same bytes in every output
array (including the rows filled before an error). See :mod:`seglog.kernels.scan` for the
format and the validation rules, and :mod:`seglog.kernels.codes` for the codes.

The twin is also the fallback when numba is disabled (``SEGLOG_DISABLE_NUMBA=1``): about
100x slower, but with no compile step.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from seglog.kernels.codes import (
    END_BAD_MAGIC,
    END_BATCH_TOO_SMALL,
    END_CLEAN,
    END_FULL,
    END_NEGATIVE_COUNT,
    END_OFFSET_ORDER,
    END_OFFSET_OVERFLOW,
    END_SIZE_TOO_LARGE,
    END_SIZE_TOO_SMALL,
    END_TORN,
    END_ZERO_TAIL,
    FRAME_ATTRIBUTES,
    FRAME_BASE_OFFSET,
    FRAME_BASE_SEQUENCE,
    FRAME_BASE_TIMESTAMP,
    FRAME_BATCH_LENGTH,
    FRAME_CRC,
    FRAME_FIELDS,
    FRAME_LAST_OFFSET_DELTA,
    FRAME_MAGIC,
    FRAME_MAX_TIMESTAMP,
    FRAME_PARTITION_LEADER_EPOCH,
    FRAME_POSITION,
    FRAME_PRODUCER_EPOCH,
    FRAME_PRODUCER_ID,
    FRAME_RECORDS_COUNT,
    HEADER_SIZE_UP_TO_MAGIC,
    INT64_MAX,
    LOG_OVERHEAD,
    MAGIC_V2,
    MAX_VARINT_BYTES,
    MAX_VARLONG_BYTES,
    MIN_BATCH_LENGTH,
    MIN_RECORD_BODY_BYTES,
    MIN_RECORD_BYTES,
    REC_BAD_SECTION,
    REC_BYTES_LEFT,
    REC_COUNT_IMPOSSIBLE,
    REC_HEADER_COUNT_INVALID,
    REC_HEADER_KEY_LENGTH_INVALID,
    REC_HEADER_VALUE_LENGTH_INVALID,
    REC_KEY_LENGTH_INVALID,
    REC_LENGTH_INVALID,
    REC_LENGTH_MISMATCH,
    REC_OK,
    REC_OUTPUT_TOO_SMALL,
    REC_VALUE_LENGTH_INVALID,
    REC_VARINT_OUT_OF_RANGE,
    REC_VARINT_TOO_LONG,
    REC_VARINT_TRUNCATED,
    RECORD_OVERHEAD_V0,
)

# offset, size, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp,
# maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
_V2_HEADER = struct.Struct(">qiiBIhiqqqhii")
_OFFSET_SIZE = struct.Struct(">qi")
_UINT64 = 1 << 64


def _wrap64(value: int) -> int:
    """``value`` as Java's long arithmetic leaves it (two's complement, 64 bits)."""
    value &= _UINT64 - 1
    return value - _UINT64 if value > INT64_MAX else value


def walk_batches_py(
    buf: Any,
    start: int,
    stop: int,
    last_offset: int,
    max_batch_bytes: int,
    check_offsets: bool,
    frames: Any,
) -> tuple[int, int, int, int, int, int]:
    """Twin of :func:`seglog.kernels.scan.walk_batches_nb`."""
    data = memoryview(buf).cast("B")
    capacity = frames.shape[1]
    columns: list[list[int]] = [[] for _ in range(FRAME_FIELDS)]
    pos = start
    result: tuple[int, int, int, int, int, int]
    while True:
        count = len(columns[0])
        remaining = stop - pos
        if remaining == 0:
            result = (count, END_CLEAN, pos, 0, 0, last_offset)
            break
        if count == capacity:
            result = (count, END_FULL, pos, 0, 0, last_offset)
            break
        if remaining < LOG_OVERHEAD:
            result = (count, END_TORN, pos, LOG_OVERHEAD, 0, last_offset)
            break
        offset, size = _OFFSET_SIZE.unpack_from(data, pos)
        if size < RECORD_OVERHEAD_V0:
            if size == 0 and not any(data[pos:stop]):
                result = (count, END_ZERO_TAIL, pos, remaining, 0, last_offset)
            else:
                result = (count, END_SIZE_TOO_SMALL, pos, size, 0, last_offset)
            break
        if size > max_batch_bytes:
            result = (count, END_SIZE_TOO_LARGE, pos, size, 0, last_offset)
            break
        if remaining < HEADER_SIZE_UP_TO_MAGIC:
            result = (count, END_TORN, pos, LOG_OVERHEAD + size, 0, last_offset)
            break
        magic = data[pos + 16]
        if magic > MAGIC_V2:
            result = (count, END_BAD_MAGIC, pos, magic, 0, last_offset)
            break
        if LOG_OVERHEAD + size > remaining:
            result = (count, END_TORN, pos, LOG_OVERHEAD + size, 0, last_offset)
            break
        fields: list[int]
        if magic == MAGIC_V2:
            if size < MIN_BATCH_LENGTH:
                result = (count, END_BATCH_TOO_SMALL, pos, size, 0, last_offset)
                break
            (_, _, epoch, _, crc, attributes, delta, base_ts, max_ts, pid, pepoch, seq, n) = (
                _V2_HEADER.unpack_from(data, pos)
            )
            if delta < 0 or n < 0:
                result = (count, END_NEGATIVE_COUNT, pos, delta, n, last_offset)
                break
            if offset > INT64_MAX - delta:
                result = (count, END_OFFSET_OVERFLOW, pos, offset, delta, last_offset)
                break
            entry_last_offset = offset + delta
            fields = [epoch, crc, attributes, delta, base_ts, max_ts, pid, pepoch, seq, n]
        else:
            entry_last_offset = offset
            fields = [0] * 10
        if check_offsets and offset <= last_offset:
            result = (count, END_OFFSET_ORDER, pos, offset, last_offset, last_offset)
            break
        for row, value in zip(_FRAME_ROWS, [pos, offset, size, magic, *fields], strict=True):
            columns[row].append(value)
        last_offset = entry_last_offset
        pos += LOG_OVERHEAD + size
    count = result[0]
    if count:
        frames[:, :count] = np.array(columns, dtype=np.int64)
    return result


_FRAME_ROWS = (
    FRAME_POSITION,
    FRAME_BASE_OFFSET,
    FRAME_BATCH_LENGTH,
    FRAME_MAGIC,
    FRAME_PARTITION_LEADER_EPOCH,
    FRAME_CRC,
    FRAME_ATTRIBUTES,
    FRAME_LAST_OFFSET_DELTA,
    FRAME_BASE_TIMESTAMP,
    FRAME_MAX_TIMESTAMP,
    FRAME_PRODUCER_ID,
    FRAME_PRODUCER_EPOCH,
    FRAME_BASE_SEQUENCE,
    FRAME_RECORDS_COUNT,
)


class _RecordError(Exception):
    """Internal: a broken record (code and the position of the broken field)."""

    def __init__(self, code: int, position: int) -> None:
        super().__init__(code, position)
        self.code = code
        self.position = position


def _varint(data: bytes, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    """Decode a zig-zag varint; raise ``_RecordError`` like the kernel's error codes."""
    if pos < end:
        byte = data[pos]
        if byte < 0x80:  # most varints are one byte: skip the general loop
            return (byte >> 1) ^ -(byte & 1), pos + 1
    value = 0
    shift = 0
    cursor = pos
    while True:
        if cursor >= end:
            raise _RecordError(REC_VARINT_TRUNCATED, pos)
        if cursor - pos >= max_bytes:
            raise _RecordError(REC_VARINT_TOO_LONG, pos)
        byte = data[cursor]
        cursor += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
    # Python ints do not overflow, so the range check is on the whole decoded value.
    limit = 1 << (64 if max_bytes == MAX_VARLONG_BYTES else 32)
    if value >= limit:
        raise _RecordError(REC_VARINT_OUT_OF_RANGE, pos)
    return (value >> 1) ^ -(value & 1), cursor


def scan_records_py(
    buf: Any,
    sec_start: Any,
    sec_end: Any,
    sec_base_offset: Any,
    sec_base_timestamp: Any,
    sec_count: Any,
    sec_batch: Any,
    sec_out_start: Any,
    out_offset: Any,
    out_timestamp: Any,
    out_key_position: Any,
    out_key_length: Any,
    out_value_position: Any,
    out_value_length: Any,
    out_header_count: Any,
    out_batch_index: Any,
) -> tuple[int, int, int]:
    """Twin of :func:`seglog.kernels.scan.scan_records_nb`."""
    data = bytes(memoryview(buf).cast("B"))
    outputs = (
        out_offset,
        out_timestamp,
        out_key_position,
        out_key_length,
        out_value_position,
        out_value_length,
        out_header_count,
        out_batch_index,
    )
    rows = len(out_offset)
    for section in range(len(sec_start)):
        pos = int(sec_start[section])
        end = int(sec_end[section])
        count = int(sec_count[section])
        first_row = int(sec_out_start[section])
        if pos < 0 or end < pos or end > len(data):
            return REC_BAD_SECTION, section, pos
        if count < 0 or count * MIN_RECORD_BYTES > end - pos:
            return REC_COUNT_IMPOSSIBLE, section, pos
        if first_row < 0 or first_row + count > rows:
            return REC_OUTPUT_TOO_SMALL, section, pos
        base_offset = int(sec_base_offset[section])
        base_timestamp = int(sec_base_timestamp[section])
        batch = int(sec_batch[section])
        columns: list[list[int]] = [[] for _ in outputs]
        failure: tuple[int, int, int] | None = None
        try:
            pos = _scan_section(
                data,
                pos,
                end=end,
                count=count,
                base_offset=base_offset,
                base_timestamp=base_timestamp,
                batch=batch,
                columns=columns,
            )
            if pos != end:
                failure = (REC_BYTES_LEFT, section, pos)
        except _RecordError as exc:
            failure = (exc.code, section, exc.position)
        written = len(columns[0])
        for out, column in zip(outputs, columns, strict=True):
            out[first_row : first_row + written] = column
        if failure is not None:
            return failure
    return REC_OK, -1, -1


def _scan_section(
    data: bytes,
    pos: int,
    *,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    batch: int,
    columns: list[list[int]],
) -> int:
    """Append ``count`` records' columns; return the position after the last record."""
    offsets, timestamps, key_positions, key_lengths = columns[:4]
    value_positions, value_lengths, header_counts, batches = columns[4:]
    for _ in range(count):
        record_start = pos
        length, pos = _varint(data, pos, end, MAX_VARINT_BYTES)
        if length < MIN_RECORD_BODY_BYTES or pos + length > end:
            raise _RecordError(REC_LENGTH_INVALID, record_start)
        record_end = pos + length
        pos += 1  # the attributes byte
        timestamp_delta, pos = _varint(data, pos, record_end, MAX_VARLONG_BYTES)
        offset_delta, pos = _varint(data, pos, record_end, MAX_VARINT_BYTES)
        key_position, key_length, pos = _bytes_field(data, pos, record_end, REC_KEY_LENGTH_INVALID)
        value_position, value_length, pos = _bytes_field(
            data, pos, record_end, REC_VALUE_LENGTH_INVALID
        )
        field = pos
        header_count, pos = _varint(data, pos, record_end, MAX_VARINT_BYTES)
        if header_count < 0 or header_count > record_end - pos:
            raise _RecordError(REC_HEADER_COUNT_INVALID, field)
        for _h in range(header_count):
            field = pos
            header_key_length, pos = _varint(data, pos, record_end, MAX_VARINT_BYTES)
            if header_key_length < 0 or pos + header_key_length > record_end:
                raise _RecordError(REC_HEADER_KEY_LENGTH_INVALID, field)
            pos += header_key_length
            _, _, pos = _bytes_field(data, pos, record_end, REC_HEADER_VALUE_LENGTH_INVALID)
        if pos != record_end:
            raise _RecordError(REC_LENGTH_MISMATCH, record_start)
        offsets.append(_wrap64(base_offset + offset_delta))
        timestamps.append(_wrap64(base_timestamp + timestamp_delta))
        key_positions.append(key_position)
        key_lengths.append(key_length)
        value_positions.append(value_position)
        value_lengths.append(value_length)
        header_counts.append(header_count)
        batches.append(batch)
    return pos


def _bytes_field(data: bytes, pos: int, end: int, invalid_code: int) -> tuple[int, int, int]:
    """A nullable length-prefixed field: ``(position or -1, length or -1, next_pos)``."""
    field = pos
    length, pos = _varint(data, pos, end, MAX_VARINT_BYTES)
    if length == -1:
        return -1, -1, pos
    if length < 0 or pos + length > end:
        raise _RecordError(invalid_code, field)
    return pos, length, pos + length
