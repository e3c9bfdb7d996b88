"""Plain-Python twin of :mod:`seglog.kernels.compact` (same arguments, same output bytes).

Used by the differential tests and when numba is disabled (``SEGLOG_DISABLE_NUMBA=1``).
"""

from __future__ import annotations

from typing import Any

from seglog.kernels.layouts import (
    ACTION_COPY,
    ACTION_DROP,
    ACTION_EMPTY,
    BATCH_HEADER_BYTES,
    COMPRESSION_MASK,
    DELETE_HORIZON_FLAG,
)


def _read_varint(buf: Any, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = int(buf[pos])
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def _varint(value: int) -> bytes:
    zigzag = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def _put(out: Any, pos: int, value: int, width: int) -> None:
    out[pos : pos + width] = list((value & ((1 << (8 * width)) - 1)).to_bytes(width, "big"))


def _get(buf: Any, pos: int, width: int) -> int:
    return int.from_bytes(bytes(buf[pos : pos + width]), "big", signed=True)


def rewrite_batches_py(
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
    """Same contract as :func:`seglog.kernels.compact.rewrite_batches_nb`."""
    cursor = 0
    for b in range(len(batch_action)):
        action = int(batch_action[b])
        src_pos = int(batch_position[b])
        out_position[b] = cursor
        out_max_timestamp[b] = _get(src, src_pos + 35, 8)
        if action == ACTION_DROP:
            out_bytes[b] = 0
            continue
        if action == ACTION_COPY:
            size = int(batch_entry_bytes[b])
            out[cursor : cursor + size] = src[src_pos : src_pos + size]
            out_bytes[b] = size
            cursor += size
            continue
        start = cursor
        out[start : start + BATCH_HEADER_BYTES] = src[src_pos : src_pos + BATCH_HEADER_BYTES]
        attributes = _get(src, src_pos + 21, 2)
        if action == ACTION_EMPTY:
            attributes &= ~(COMPRESSION_MASK | DELETE_HORIZON_FLAG)
            _put(out, start + 8, BATCH_HEADER_BYTES - 12, 4)
            _put(out, start + 17, 0, 4)
            _put(out, start + 21, attributes, 2)
            _put(out, start + 27, -1, 8)
            _put(out, start + 57, 0, 4)
            out_bytes[b] = BATCH_HEADER_BYTES
            cursor += BATCH_HEADER_BYTES
            continue
        base_ts = int(batch_new_base_timestamp[b])
        pos = int(batch_section_start[b])
        body_parts = bytearray()
        kept = 0
        max_ts = -1
        for row in range(int(batch_row_start[b]), int(batch_row_start[b + 1])):
            length, body = _read_varint(data, pos)
            body_end = body + length
            if keep[row]:
                _, ts_end = _read_varint(data, body + 1)
                tail = bytes(data[ts_end:body_end])
                delta = int(timestamp[row]) - base_ts
                delta_bytes = _varint(delta)
                body_parts += _varint(1 + len(delta_bytes) + len(tail))
                body_parts.append(int(data[body]))
                body_parts += delta_bytes + tail
                kept += 1
                if kept == 1 or int(timestamp[row]) > max_ts:
                    max_ts = int(timestamp[row])
            pos = body_end
        if batch_is_log_append_time[b]:
            max_ts = int(out_max_timestamp[b])
        if batch_set_horizon[b]:
            attributes |= DELETE_HORIZON_FLAG
        w = start + BATCH_HEADER_BYTES
        out[w : w + len(body_parts)] = list(body_parts)
        w += len(body_parts)
        _put(out, start + 8, w - start - 12, 4)
        _put(out, start + 17, 0, 4)
        _put(out, start + 21, attributes, 2)
        _put(out, start + 27, base_ts, 8)
        _put(out, start + 35, max_ts, 8)
        _put(out, start + 57, kept, 4)
        out_max_timestamp[b] = max_ts
        out_bytes[b] = w - start
        cursor = w
    return cursor
