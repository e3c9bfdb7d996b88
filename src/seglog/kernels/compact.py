"""Numba kernel that writes the cleaner's output for a chunk of v2 record batches.

``rewrite_batches_nb(src, data, batches..., rows..., out, outputs...)`` takes a chunk of a
segment as read (``src``), the records sections the columnar scan decoded (``data``: ``src``
itself for uncompressed batches, or the scan's arena holding decompressed sections) and one
*action* per batch, decided by the engine from the cleaner's rules:

* ``ACTION_DROP``: nothing is written;
* ``ACTION_COPY``: the entry's bytes are copied unchanged (CRC, compression, everything);
* ``ACTION_REBUILD``: a new batch with the same header except ``batchLength``, the attributes
  (the delete-horizon bit 0x40 set when ``set_horizon``), ``baseTimestamp`` (``new_base_ts``),
  ``maxTimestamp`` (largest kept record timestamp; the original for LogAppendTime batches) and
  ``recordsCount``; CRC left 0. Only rows with ``keep`` are written, each record re-encoded:
  its length and timestamp delta (``timestamp - new_base_ts``) are recomputed, its attributes,
  offset delta, key, value and headers copied byte for byte, so offsets, timestamps, keys,
  values and headers are unchanged. The records are written *uncompressed* even for a
  compressed batch: the engine compresses them with the batch's codec afterwards;
* ``ACTION_EMPTY``: Kafka's empty header (61 bytes): same base offset, last offset delta,
  producer fields, leader epoch and timestamp type; no compression and no horizon bit;
  ``baseTimestamp`` -1; ``maxTimestamp`` the original; ``recordsCount`` 0; CRC left 0.

Per batch it reports where its output starts in ``out`` and how many bytes (0 for a drop),
and the maxTimestamp written. ``out`` must hold the worst case, which the engine sizes as
``len(src) + 10 * rows`` (a timestamp delta grows by at most 9 bytes and a length by 1).

Inputs come from a scan that already validated every record (lengths, varints), so the
kernel trusts the structure. It is ``nogil`` and has a Python twin in
:mod:`seglog.kernels.compact_py` with identical output.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np

from seglog.kernels.layouts import (  # noqa: F401  (re-exported: callers import them here)
    ACTION_COPY,
    ACTION_DROP,
    ACTION_EMPTY,
    ACTION_REBUILD,
    BATCH_HEADER_BYTES,
    COMPRESSION_MASK,
    DELETE_HORIZON_FLAG,
)

_F = TypeVar("_F", bound=Callable[..., Any])
_int64 = cast("Callable[[Any], int]", np.int64)
_uint8 = cast("Callable[[Any], int]", np.uint8)


def _jit(fn: _F) -> _F:
    return cast(_F, numba.njit(nogil=True, cache=True)(fn))


@_jit
def _put_be(out: Any, pos: int, value: int, width: int) -> None:
    for i in range(width):
        out[pos + width - 1 - i] = _uint8((value >> (8 * i)) & 0xFF)


@_jit
def _get_be(buf: Any, pos: int, width: int) -> int:
    value = _int64(0)
    for i in range(width):
        value = (value << 8) | _int64(buf[pos + i])
    if width < 8 and value >= (_int64(1) << (8 * width - 1)):
        value -= _int64(1) << (8 * width)
    return value


@_jit
def _skip_varint(buf: Any, pos: int) -> int:
    while buf[pos] >= 0x80:
        pos += 1
    return pos + 1


@_jit
def _read_varint(buf: Any, pos: int) -> tuple[int, int]:
    result = _int64(0)
    shift = 0
    while True:
        byte = _int64(buf[pos])
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
    return ((result >> 1) & 0x7FFFFFFFFFFFFFFF) ^ -(result & 1), pos


@_jit
def _varint_size(value: int) -> int:
    zigzag = np.uint64((value << 1) ^ (value >> 63))
    size = 1
    while zigzag >= np.uint64(0x80):
        zigzag >>= np.uint64(7)
        size += 1
    return size


@_jit
def _write_varint(out: Any, pos: int, value: int) -> int:
    zigzag = np.uint64((value << 1) ^ (value >> 63))
    while zigzag >= np.uint64(0x80):
        out[pos] = _uint8((zigzag & np.uint64(0x7F)) | np.uint64(0x80))
        zigzag >>= np.uint64(7)
        pos += 1
    out[pos] = _uint8(zigzag)
    return pos + 1


@_jit
def rewrite_batches_nb(
    src: Any,
    data: Any,
    batch_position: Any,
    batch_entry_bytes: Any,
    batch_action: Any,
    batch_section_start: Any,
    batch_row_start: Any,
    batch_new_base_timestamp: Any,
    batch_set_horizon: Any,
    batch_is_log_append_time: Any,
    keep: Any,
    timestamp: Any,
    out: Any,
    out_position: Any,
    out_bytes: Any,
    out_max_timestamp: Any,
) -> int:
    """Write every batch's output into ``out``; returns the bytes written (module docstring)."""
    cursor = 0
    for b in range(len(batch_action)):
        action = batch_action[b]
        src_pos = batch_position[b]
        out_position[b] = cursor
        out_max_timestamp[b] = _get_be(src, src_pos + 35, 8)
        if action == ACTION_DROP:
            out_bytes[b] = 0
            continue
        if action == ACTION_COPY:
            size = batch_entry_bytes[b]
            out[cursor : cursor + size] = src[src_pos : src_pos + size]
            out_bytes[b] = size
            cursor += size
            continue
        start = cursor
        out[start : start + BATCH_HEADER_BYTES] = src[src_pos : src_pos + BATCH_HEADER_BYTES]
        attributes = _get_be(src, src_pos + 21, 2)
        if action == ACTION_EMPTY:
            attributes &= ~(COMPRESSION_MASK | DELETE_HORIZON_FLAG)
            _put_be(out, start + 8, BATCH_HEADER_BYTES - 12, 4)
            _put_be(out, start + 17, 0, 4)
            _put_be(out, start + 21, attributes, 2)
            _put_be(out, start + 27, -1, 8)
            _put_be(out, start + 57, 0, 4)
            out_bytes[b] = BATCH_HEADER_BYTES
            cursor += BATCH_HEADER_BYTES
            continue
        # ACTION_REBUILD
        base_ts = batch_new_base_timestamp[b]
        pos = batch_section_start[b]
        w = start + BATCH_HEADER_BYTES
        kept = 0
        max_ts = _int64(-1)
        for row in range(batch_row_start[b], batch_row_start[b + 1]):
            length, body = _read_varint(data, pos)
            body_end = body + length
            if keep[row]:
                ts_end = _skip_varint(data, body + 1)
                tail = body_end - ts_end  # offset delta, key, value, headers: copied as is
                delta = timestamp[row] - base_ts
                new_length = 1 + _varint_size(delta) + tail
                w = _write_varint(out, w, new_length)
                out[w] = data[body]
                w = _write_varint(out, w + 1, delta)
                out[w : w + tail] = data[ts_end:body_end]
                w += tail
                kept += 1
                if kept == 1 or timestamp[row] > max_ts:
                    max_ts = timestamp[row]
            pos = body_end
        if batch_is_log_append_time[b]:
            max_ts = out_max_timestamp[b]
        if batch_set_horizon[b]:
            attributes |= DELETE_HORIZON_FLAG
        _put_be(out, start + 8, w - start - 12, 4)
        _put_be(out, start + 17, 0, 4)
        _put_be(out, start + 21, attributes, 2)
        _put_be(out, start + 27, base_ts, 8)
        _put_be(out, start + 35, max_ts, 8)
        _put_be(out, start + 57, kept, 4)
        out_max_timestamp[b] = max_ts
        out_bytes[b] = w - start
        cursor = w
    return cursor
