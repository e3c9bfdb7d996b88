"""Plain-Python twins of :mod:`seglog.kernels.version_map`'s map kernels (same arguments, same
table contents), used by the tests and when numba is disabled."""

from __future__ import annotations

from typing import Any

from seglog.kernels.layouts import (
    COL_H0,
    COL_H1,
    COL_STORED,
    COL_VERSION,
    MISSING_VERSION,
    STATE_LATEST,
    STATE_LOOKUPS,
    STATE_PROBES,
    STATE_SIZE,
)
from seglog.kernels.offset_map_py import _key, _probe_start_step, _wrap64, siphash128_py


def put_versions_py(
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
    """Same contract as ``put_versions_nb``."""
    slots = len(table)
    marks = len(superseded)
    size = int(state[STATE_SIZE])
    for row in range(start_row, stop_row):
        length = int(key_length[row])
        if length < 0:
            continue
        record_offset = int(offset[row])
        if record_offset < min_offset:
            continue
        if size >= limit:
            state[STATE_SIZE] = size
            return row
        h0, h1 = siphash128_py(_key(data, int(key_position[row]), length), int(k0), int(k1))
        slot, step = _probe_start_step(h0, h1, slots)
        w0, w1 = _wrap64(h0), _wrap64(h1)
        record_version = int(version[row])
        state[STATE_LOOKUPS] += 1
        while True:
            state[STATE_PROBES] += 1
            if int(table[slot, COL_STORED]) == 0:
                table[slot] = (w0, w1, record_offset + 1, record_version)
                size += 1
                break
            if int(table[slot, COL_H0]) == w0 and int(table[slot, COL_H1]) == w1:
                if record_version >= int(table[slot, COL_VERSION]):
                    loser = int(table[slot, COL_STORED]) - 1
                    table[slot, COL_STORED] = record_offset + 1
                    table[slot, COL_VERSION] = record_version
                else:
                    loser = record_offset
                mark = loser - superseded_base
                if 0 <= mark < marks:
                    superseded[mark] = 1
                break
            slot = (slot + step) % slots
        state[STATE_LATEST] = record_offset
    state[STATE_SIZE] = size
    return stop_row


def get_versions_py(
    data: Any,
    key_position: Any,
    key_length: Any,
    k0: int,
    k1: int,
    table: Any,
    out_offset: Any,
    out_version: Any,
) -> None:
    """Same contract as ``get_versions_nb``."""
    slots = len(table)
    for row in range(len(key_position)):
        out_offset[row] = -1
        out_version[row] = MISSING_VERSION
        length = int(key_length[row])
        if length < 0:
            continue
        h0, h1 = siphash128_py(_key(data, int(key_position[row]), length), int(k0), int(k1))
        slot, step = _probe_start_step(h0, h1, slots)
        w0, w1 = _wrap64(h0), _wrap64(h1)
        for _ in range(slots):
            stored = int(table[slot, COL_STORED])
            if stored == 0:
                break
            if int(table[slot, COL_H0]) == w0 and int(table[slot, COL_H1]) == w1:
                out_offset[row] = stored - 1
                out_version[row] = int(table[slot, COL_VERSION])
                break
            slot = (slot + step) % slots
