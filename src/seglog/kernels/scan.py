"""Numba-compiled scanners over whole buffers of Kafka record batches (v2) — the hot loops.

Two kernels, each with a plain-Python twin in :mod:`seglog.kernels.scan_py` that returns the
same values bit for bit (tests compare them; the twin is also the fallback when numba is
disabled with ``SEGLOG_DISABLE_NUMBA=1``). Callers normally go through
:func:`seglog.kernels.walk_batches` / :func:`seglog.kernels.scan_records`, which check the
arguments and pick the implementation.

``walk_batches_nb(buf, start, stop, last_offset, max_batch_bytes, check_offsets, frames)``
    Kafka's batch framing over ``buf[start:stop]`` (a uint8 array). Per entry: int64 offset
    at byte 0, int32 size at byte 8, magic at byte 16; the entry spans ``12 + size`` bytes.
    Stops (end codes in :mod:`seglog.kernels.codes`) exactly where
    ``seglog.format.reader.BatchReader`` does: nothing left → clean; fewer than 12 bytes, fewer
    than 17, or fewer than ``12 + size`` → torn tail; size < 14 (zero-filled tail when the
    size is 0 and every byte to the end is 0), size above the limit, magic > 2, v2
    batchLength < 49, negative lastOffsetDelta/recordsCount, baseOffset + lastOffsetDelta
    above int64, offset not above the previous entry's last offset → corrupt. The CRC is
    *not* computed here (the format layer runs the ``crc32c`` C package per batch). Header
    fields are written column by column into ``frames`` (int64, shape ``(FRAME_FIELDS,
    capacity)``); a full matrix ends with ``END_FULL`` and the caller resumes.

``scan_records_nb(buf, sections..., outputs...)``
    Walks uncompressed v2 records: for each section ``s`` (an uncompressed batch's records in
    place, or a decompressed records section copied into ``buf``), ``sec_count[s]`` records
    from ``sec_start[s]`` that must end exactly at ``sec_end[s]``. Writes row ``r`` =
    ``sec_out_start[s] + k`` of every output: offset = baseOffset + offsetDelta, timestamp =
    baseTimestamp + timestampDelta (int64, wrapping as Java's long does), key/value position
    and length (position -1 and length -1 for null), header count, and the batch index.
    Validation is Kafka's (see the REC_* codes): varints neither truncated nor over-long nor
    out of range, lengths within the record, header count >= 0, each record consuming exactly
    its length, no bytes left after the last record. A record is written only once it is
    fully valid, so on error rows before the failing record are filled and no later row is.

Both kernels are ``nogil`` (callers may run them in threads) and ``cache=True`` (compiled
once per machine, then loaded from ``__pycache__``). They never raise on bad data: every
violation is a return code plus the byte position where the broken field starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
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

_F = TypeVar("_F", bound=Callable[..., Any])

_LOW63 = 0x7FFFFFFFFFFFFFFF
# np.int64 under a name mypy reads as int -> int; numba resolves globals by value, so the
# compiled code is the same as spelling np.int64.
_int64 = cast("Callable[[Any], int]", np.int64)
# Rows a legacy entry leaves at 0 (the format layer parses legacy messages itself).
_LEGACY_ZERO_FIELDS = (
    FRAME_PARTITION_LEADER_EPOCH,
    FRAME_CRC,
    FRAME_ATTRIBUTES,
    FRAME_BASE_TIMESTAMP,
    FRAME_MAX_TIMESTAMP,
    FRAME_PRODUCER_ID,
    FRAME_PRODUCER_EPOCH,
    FRAME_BASE_SEQUENCE,
)


def _jit(fn: _F) -> _F:
    """``numba.njit(nogil=True, cache=True)`` that keeps the function's type for mypy."""
    return cast(_F, numba.njit(nogil=True, cache=True)(fn))


def _jit_inline(fn: _F) -> _F:
    """:func:`_jit`, and inlined by numba into every caller (LLVM does not inline it alone)."""
    return cast(_F, numba.njit(nogil=True, cache=True, inline="always")(fn))


# --- big-endian fixed-width reads (the caller has checked the bytes are there) -----------------
@_jit
def _be64(buf: Any, pos: int) -> int:
    value = _int64(0)
    for i in range(8):
        # int64 shifts wrap into the sign bit, which is what a signed int64 read wants.
        value = (value << 8) | _int64(buf[pos + i])
    return value


@_jit
def _be32(buf: Any, pos: int) -> int:
    value = (
        (_int64(buf[pos]) << 24)
        | (_int64(buf[pos + 1]) << 16)
        | (_int64(buf[pos + 2]) << 8)
        | _int64(buf[pos + 3])
    )
    return value - (_int64(1) << 32) if value >= (_int64(1) << 31) else value


@_jit
def _be32u(buf: Any, pos: int) -> int:
    return (
        (_int64(buf[pos]) << 24)
        | (_int64(buf[pos + 1]) << 16)
        | (_int64(buf[pos + 2]) << 8)
        | _int64(buf[pos + 3])
    )


@_jit
def _be16(buf: Any, pos: int) -> int:
    value = (_int64(buf[pos]) << 8) | _int64(buf[pos + 1])
    return value - 65536 if value >= 32768 else value


@_jit
def _all_zero(buf: Any, start: int, stop: int) -> bool:
    for i in range(start, stop):  # noqa: SIM110 - an explicit loop is what numba compiles best
        if buf[i] != 0:
            return False
    return True


# --- batch framing -------------------------------------------------------------------------------
@_jit
def walk_batches_nb(
    buf: Any,
    start: int,
    stop: int,
    last_offset: int,
    max_batch_bytes: int,
    check_offsets: bool,
    frames: Any,
) -> tuple[int, int, int, int, int, int]:
    """Frame the entries of ``buf[start:stop]`` into ``frames``; see the module docstring."""
    capacity = frames.shape[1]
    pos = _int64(start)
    count = _int64(0)
    while True:
        remaining = stop - pos
        if remaining == 0:
            return count, END_CLEAN, pos, 0, 0, last_offset
        if count == capacity:
            return count, END_FULL, pos, 0, 0, last_offset
        if remaining < LOG_OVERHEAD:
            return count, END_TORN, pos, LOG_OVERHEAD, 0, last_offset
        offset = _be64(buf, pos)
        size = _be32(buf, pos + 8)
        if size < RECORD_OVERHEAD_V0:
            if size == 0 and _all_zero(buf, pos, stop):
                return count, END_ZERO_TAIL, pos, remaining, 0, last_offset
            return count, END_SIZE_TOO_SMALL, pos, size, 0, last_offset
        if size > max_batch_bytes:
            return count, END_SIZE_TOO_LARGE, pos, size, 0, last_offset
        if remaining < HEADER_SIZE_UP_TO_MAGIC:
            return count, END_TORN, pos, LOG_OVERHEAD + size, 0, last_offset
        magic = _int64(buf[pos + 16])
        if magic > MAGIC_V2:
            return count, END_BAD_MAGIC, pos, magic, 0, last_offset
        if LOG_OVERHEAD + size > remaining:
            return count, END_TORN, pos, LOG_OVERHEAD + size, 0, last_offset
        if magic == MAGIC_V2:
            if size < MIN_BATCH_LENGTH:
                return count, END_BATCH_TOO_SMALL, pos, size, 0, last_offset
            last_offset_delta = _be32(buf, pos + 23)
            records_count = _be32(buf, pos + 57)
            if last_offset_delta < 0 or records_count < 0:
                return (
                    count,
                    END_NEGATIVE_COUNT,
                    pos,
                    last_offset_delta,
                    records_count,
                    last_offset,
                )
            # The last offset must be an int64: a baseOffset (outside the CRC) near 2**63
            # would otherwise make the batch's offsets wrap to negative numbers.
            if offset > INT64_MAX - last_offset_delta:
                return (
                    count,
                    END_OFFSET_OVERFLOW,
                    pos,
                    offset,
                    last_offset_delta,
                    last_offset,
                )
            entry_last_offset = offset + last_offset_delta
        else:
            last_offset_delta = _int64(0)
            records_count = _int64(0)
            entry_last_offset = offset
        if check_offsets and offset <= last_offset:
            return count, END_OFFSET_ORDER, pos, offset, last_offset, last_offset
        frames[FRAME_POSITION, count] = pos
        frames[FRAME_BASE_OFFSET, count] = offset
        frames[FRAME_BATCH_LENGTH, count] = size
        frames[FRAME_MAGIC, count] = magic
        frames[FRAME_LAST_OFFSET_DELTA, count] = last_offset_delta
        frames[FRAME_RECORDS_COUNT, count] = records_count
        if magic == MAGIC_V2:
            frames[FRAME_PARTITION_LEADER_EPOCH, count] = _be32(buf, pos + 12)
            frames[FRAME_CRC, count] = _be32u(buf, pos + 17)
            frames[FRAME_ATTRIBUTES, count] = _be16(buf, pos + 21)
            frames[FRAME_BASE_TIMESTAMP, count] = _be64(buf, pos + 27)
            frames[FRAME_MAX_TIMESTAMP, count] = _be64(buf, pos + 35)
            frames[FRAME_PRODUCER_ID, count] = _be64(buf, pos + 43)
            frames[FRAME_PRODUCER_EPOCH, count] = _be16(buf, pos + 51)
            frames[FRAME_BASE_SEQUENCE, count] = _be32(buf, pos + 53)
        else:
            for field in _LEGACY_ZERO_FIELDS:
                frames[field, count] = 0
        count += 1
        last_offset = entry_last_offset
        pos += LOG_OVERHEAD + size


# --- records -------------------------------------------------------------------------------------
@_jit_inline
def _read_varint(buf: Any, pos: int, end: int, max_bytes: int) -> tuple[int, int, int]:
    """Zig-zag varint at ``pos`` bounded by ``end``: ``(value, next_pos, error_code)``."""
    if end - pos >= 2:
        # Fast path for one- and two-byte varints (nearly all of a record's): both bytes lie
        # before the bound, and two bytes are never over-long nor out of range, so no check
        # is needed. Anything longer (or nearer the bound) takes the checked loop below.
        first = _int64(buf[pos])
        if first < 0x80:
            return (first >> 1) ^ -(first & 1), pos + 1, REC_OK
        second = _int64(buf[pos + 1])
        if second < 0x80:
            result = (first & 0x7F) | (second << 7)
            return (result >> 1) ^ -(result & 1), pos + 2, REC_OK
    if pos >= end:
        return 0, pos, REC_VARINT_TRUNCATED
    byte = _int64(buf[pos])
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos + 1, REC_OK
    result = byte & 0x7F
    shift = 7
    cursor = pos + 1
    used = 1
    while True:
        if cursor >= end:
            return 0, pos, REC_VARINT_TRUNCATED
        if used >= max_bytes:
            return 0, pos, REC_VARINT_TOO_LONG
        byte = _int64(buf[cursor])
        cursor += 1
        used += 1
        if byte < 0x80:
            # The last allowed byte may only carry the bits that still fit the type: 4 for an
            # int32 (shift 28), 1 for an int64 (shift 63). More means a value out of range.
            type_bits = 64 if max_bytes == MAX_VARLONG_BYTES else 32
            if used == max_bytes and (byte >> (type_bits - shift)) != 0:
                return 0, pos, REC_VARINT_OUT_OF_RANGE
            result |= byte << shift
            return ((result >> 1) & _LOW63) ^ -(result & 1), cursor, REC_OK
        result |= (byte & 0x7F) << shift
        shift += 7


@_jit
def scan_records_nb(
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
    """Decode the records of every section into the output columns; see the module docstring."""
    buf_size = buf.shape[0]
    rows = out_offset.shape[0]
    for section in range(sec_start.shape[0]):
        pos = _int64(sec_start[section])
        end = _int64(sec_end[section])
        count = _int64(sec_count[section])
        row = _int64(sec_out_start[section])
        if pos < 0 or end < pos or end > buf_size:
            return REC_BAD_SECTION, section, pos
        if count < 0 or count * MIN_RECORD_BYTES > end - pos:
            return REC_COUNT_IMPOSSIBLE, section, pos
        if row < 0 or row + count > rows:
            return REC_OUTPUT_TOO_SMALL, section, pos
        base_offset = _int64(sec_base_offset[section])
        base_timestamp = _int64(sec_base_timestamp[section])
        batch = sec_batch[section]
        for _ in range(count):
            record_start = pos
            length, pos, err = _read_varint(buf, pos, end, MAX_VARINT_BYTES)
            if err != REC_OK:
                return err, section, record_start
            if length < MIN_RECORD_BODY_BYTES or length > end - pos:
                return REC_LENGTH_INVALID, section, record_start
            record_end = pos + length
            pos += 1  # attributes: unused by Kafka, inside the record by the length check
            field = pos
            timestamp_delta, pos, err = _read_varint(buf, pos, record_end, MAX_VARLONG_BYTES)
            if err != REC_OK:
                return err, section, field
            field = pos
            offset_delta, pos, err = _read_varint(buf, pos, record_end, MAX_VARINT_BYTES)
            if err != REC_OK:
                return err, section, field
            field = pos
            key_length, pos, err = _read_varint(buf, pos, record_end, MAX_VARINT_BYTES)
            if err != REC_OK:
                return err, section, field
            if key_length < -1 or key_length > record_end - pos:
                return REC_KEY_LENGTH_INVALID, section, field
            key_position = _int64(-1)
            if key_length >= 0:
                key_position = pos
                pos += key_length
            field = pos
            value_length, pos, err = _read_varint(buf, pos, record_end, MAX_VARINT_BYTES)
            if err != REC_OK:
                return err, section, field
            if value_length < -1 or value_length > record_end - pos:
                return REC_VALUE_LENGTH_INVALID, section, field
            value_position = _int64(-1)
            if value_length >= 0:
                value_position = pos
                pos += value_length
            field = pos
            header_count, pos, err = _read_varint(buf, pos, record_end, MAX_VARINT_BYTES)
            if err != REC_OK:
                return err, section, field
            if header_count < 0 or header_count > record_end - pos:
                return REC_HEADER_COUNT_INVALID, section, field
            for _h in range(header_count):
                field = pos
                header_key_length, pos, err = _read_varint(buf, pos, record_end, MAX_VARINT_BYTES)
                if err != REC_OK:
                    return err, section, field
                if header_key_length < 0 or header_key_length > record_end - pos:
                    return REC_HEADER_KEY_LENGTH_INVALID, section, field
                pos += header_key_length
                field = pos
                header_value_length, pos, err = _read_varint(buf, pos, record_end, MAX_VARINT_BYTES)
                if err != REC_OK:
                    return err, section, field
                if header_value_length < -1 or header_value_length > record_end - pos:
                    return REC_HEADER_VALUE_LENGTH_INVALID, section, field
                if header_value_length > 0:
                    pos += header_value_length
            if pos != record_end:
                return REC_LENGTH_MISMATCH, section, record_start
            out_offset[row] = base_offset + offset_delta
            out_timestamp[row] = base_timestamp + timestamp_delta
            out_key_position[row] = key_position
            out_key_length[row] = key_length
            out_value_position[row] = value_position
            out_value_length[row] = value_length
            out_header_count[row] = header_count
            out_batch_index[row] = batch
            row += 1
        if pos != end:
            return REC_BYTES_LEFT, section, pos
    return REC_OK, -1, -1
