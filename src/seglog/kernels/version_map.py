"""Numba kernels for compaction strategies other than "latest offset wins" (KIP-280).

``put_versions_nb`` / ``get_versions_nb`` work on a slot table of shape ``(slots, 4)`` int64:
``h0, h1`` (the key's SipHash-2-4-128, as in :mod:`seglog.kernels.offset_map`, same probe
sequence), the winner's offset + 1 (0 = empty slot) and the winner's **version** (its
timestamp, or the numeric value of a header). Rows are put in offset order; a row replaces
the stored winner iff its version is >= the winner's (so ties go to the later offset), and
whichever of the two loses has its ``superseded`` mark set (when inside the array). 32 bytes
per key: one more word than the offset strategy needs.

``header_versions_nb`` reads, for every record, the numeric value of its first header named
``name`` (ASCII decimal, optional sign, at most 18 digits); a record without that header, or
with a value that is not such a number, gets ``MISSING_VERSION`` (the lowest: any versioned
record wins over it; among unversioned records the later offset wins).

The map kernels' Python twins are in :mod:`seglog.kernels.version_map_py`; the header parser's
fallback is the same function run by the interpreter (``.py_func``: it calls no other
kernel). The tests compare both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np

from seglog.kernels.compact import _read_varint, _skip_varint
from seglog.kernels.layouts import (  # noqa: F401  (re-exported: callers import them here)
    COL_H0,
    COL_H1,
    COL_STORED,
    COL_VERSION,
    MISSING_VERSION,
    STATE_LATEST,
    STATE_LOOKUPS,
    STATE_PROBES,
    STATE_SIZE,
    VERSION_SLOT_WORDS,
)
from seglog.kernels.offset_map import _probe_start_step, _siphash128

_F = TypeVar("_F", bound=Callable[..., Any])
_int64 = cast("Callable[[Any], int]", np.int64)
_u64 = cast("Callable[[Any], int]", np.uint64)


def _jit(fn: _F) -> _F:
    return cast(_F, numba.njit(nogil=True, cache=True)(fn))


@_jit
def _word(h: int) -> int:
    """A hash half's 64 bits as the int64 word the table holds (wrapping)."""
    return _int64(h)


@_jit
def put_versions_nb(
    data: Any,
    key_position: Any,
    key_length: Any,
    offset: Any,
    version: Any,
    start_row: int,
    stop_row: int,
    min_offset: int,
    limit: int,
    k0: int,
    k1: int,
    table: Any,
    state: Any,
    superseded: Any,
    superseded_base: int,
) -> int:
    """Put rows in order (module docstring); return the row where the map was full, else
    ``stop_row``. The full check comes before every keyed row, as in the offset map."""
    slots = _int64(table.shape[0])
    marks = _int64(superseded.shape[0])
    size = _int64(state[STATE_SIZE])
    for row in range(start_row, stop_row):
        length = _int64(key_length[row])
        if length < 0:
            continue
        record_offset = _int64(offset[row])
        if record_offset < min_offset:
            continue
        if size >= limit:
            state[STATE_SIZE] = size
            return row
        h0, h1 = _siphash128(data, _int64(key_position[row]), length, _u64(k0), _u64(k1))
        slot, step = _probe_start_step(h0, h1, slots)
        w0, w1 = _word(h0), _word(h1)
        record_version = _int64(version[row])
        state[STATE_LOOKUPS] += 1
        while True:
            state[STATE_PROBES] += 1
            if table[slot, COL_STORED] == 0:
                table[slot, COL_H0] = w0
                table[slot, COL_H1] = w1
                table[slot, COL_STORED] = record_offset + 1
                table[slot, COL_VERSION] = record_version
                size += 1
                break
            if table[slot, COL_H0] == w0 and table[slot, COL_H1] == w1:
                if record_version >= table[slot, COL_VERSION]:
                    loser = table[slot, COL_STORED] - 1
                    table[slot, COL_STORED] = record_offset + 1
                    table[slot, COL_VERSION] = record_version
                else:
                    loser = record_offset
                mark = loser - superseded_base
                if 0 <= mark < marks:
                    superseded[mark] = 1
                break
            slot += step
            if slot >= slots:
                slot -= slots
        state[STATE_LATEST] = record_offset
    state[STATE_SIZE] = size
    return stop_row


@_jit
def get_versions_nb(
    data: Any,
    key_position: Any,
    key_length: Any,
    k0: int,
    k1: int,
    table: Any,
    out_offset: Any,
    out_version: Any,
) -> None:
    """Per row, the stored winner's offset and version (-1 and MISSING_VERSION if absent)."""
    slots = _int64(table.shape[0])
    for row in range(len(key_position)):
        out_offset[row] = -1
        out_version[row] = MISSING_VERSION
        length = _int64(key_length[row])
        if length < 0:
            continue
        h0, h1 = _siphash128(data, _int64(key_position[row]), length, _u64(k0), _u64(k1))
        slot, step = _probe_start_step(h0, h1, slots)
        w0, w1 = _word(h0), _word(h1)
        for _ in range(slots):
            stored = table[slot, COL_STORED]
            if stored == 0:
                break
            if table[slot, COL_H0] == w0 and table[slot, COL_H1] == w1:
                out_offset[row] = stored - 1
                out_version[row] = table[slot, COL_VERSION]
                break
            slot += step
            if slot >= slots:
                slot -= slots


@_jit
def _parse_decimal(buf: Any, start: int, stop: int) -> int:
    if stop <= start or stop - start > 19:
        return MISSING_VERSION
    pos = start
    negative = False
    if buf[pos] == 45 or buf[pos] == 43:  # '-' or '+'
        negative = buf[pos] == 45
        pos += 1
    if pos == stop or stop - pos > 18:  # no digit, or more than an int64 surely holds
        return MISSING_VERSION
    value = _int64(0)
    for i in range(pos, stop):
        digit = _int64(buf[i]) - 48
        if digit < 0 or digit > 9:
            return MISSING_VERSION
        value = value * 10 + digit
    return -value if negative else value


@_jit
def header_versions_nb(
    data: Any, records_position: Any, record_start: Any, name: Any, out: Any
) -> None:
    """``out[row]`` := the numeric value of the record's first header named ``name``."""
    name_length = len(name)
    for batch in range(len(records_position)):
        pos = records_position[batch]
        for row in range(record_start[batch], record_start[batch + 1]):
            out[row] = MISSING_VERSION
            if pos < 0:
                continue
            length, body = _read_varint(data, pos)
            end = body + length
            cursor = _skip_varint(data, body + 1)  # attributes, then timestamp delta
            cursor = _skip_varint(data, cursor)  # offset delta
            key_length, cursor = _read_varint(data, cursor)
            cursor += max(key_length, 0)
            value_length, cursor = _read_varint(data, cursor)
            cursor += max(value_length, 0)
            headers, cursor = _read_varint(data, cursor)
            for _ in range(headers):
                header_key_length, cursor = _read_varint(data, cursor)
                key_at = cursor
                cursor += max(header_key_length, 0)
                header_value_length, cursor = _read_varint(data, cursor)
                value_at = cursor
                cursor += max(header_value_length, 0)
                if header_key_length == name_length and header_value_length >= 0:
                    same = True
                    for i in range(name_length):
                        if data[key_at + i] != name[i]:
                            same = False
                            break
                    if same:
                        out[row] = _parse_decimal(data, value_at, value_at + header_value_length)
                        break
            pos = end
