"""Plain-Python twin of the bounded offset map kernels in :mod:`seglog.kernels.offset_map`.

Same arguments, same return values, and the same bytes left in every array (the slot table,
state vector, outputs) as the numba kernels, so a differential test compares two
implementations of one specification. Written independently of the numba source: Python
ints masked to 64 bits and ``int.from_bytes`` on ``bytes`` instead of ``uint64`` shifts on
an array. See :mod:`seglog.kernels.offset_map` for the table layout, the probe sequence and
the invariants, and :mod:`seglog.core.offset_map` for the class callers use.

The twin is also the fallback when numba is disabled (``SEGLOG_DISABLE_NUMBA=1``): about
three orders of magnitude slower, but with no compile step.

The state vector (``int64``, :data:`STATE_FIELDS` entries) holds the map's counters so that
one kernel call can update them all: ``state[STATE_SIZE]`` distinct keys,
``state[STATE_LATEST_OFFSET]`` (``-1`` when none), ``state[STATE_LOOKUPS]`` and
``state[STATE_PROBES]``.
"""

from __future__ import annotations

from typing import Any

# Indices into the int64 state vector shared by the kernels and their twins.
STATE_SIZE = 0
STATE_LATEST_OFFSET = 1
STATE_LOOKUPS = 2
STATE_PROBES = 3
STATE_FIELDS = 4

SLOT_BYTES = 24  # hash0 (8) + hash1 (8) + stored offset (8), adjacent in one table row

# Columns of the int64 slot table of shape (slots, SLOT_WORDS): one row per slot.
COL_HASH0 = 0  # h0's 64 bits as an int64
COL_HASH1 = 1  # h1's 64 bits as an int64
COL_STORED = 2  # latest offset + 1, 0 = empty slot
SLOT_WORDS = 3
HASH_KEY_BYTES = 16

_MASK64 = (1 << 64) - 1
_SIGN64 = 1 << 63

# SipHash initialisation constants: "somepseudorandomlygeneratedbytes" read as four words.
_C0 = 0x736F6D6570736575
_C1 = 0x646F72616E646F6D
_C2 = 0x6C7967656E657261
_C3 = 0x7465646279746573


def _wrap64(value: int) -> int:
    """Two's complement int64 wrap of a Python int (what numba's int64 arithmetic does)."""
    value &= _MASK64
    return value - (1 << 64) if value & _SIGN64 else value


def _rotl(x: int, bits: int) -> int:
    return ((x << bits) | (x >> (64 - bits))) & _MASK64


def _sip_rounds(v0: int, v1: int, v2: int, v3: int, rounds: int) -> tuple[int, int, int, int]:
    for _ in range(rounds):
        v0 = (v0 + v1) & _MASK64
        v1 = _rotl(v1, 13) ^ v0
        v0 = _rotl(v0, 32)
        v2 = (v2 + v3) & _MASK64
        v3 = _rotl(v3, 16) ^ v2
        v0 = (v0 + v3) & _MASK64
        v3 = _rotl(v3, 21) ^ v0
        v2 = (v2 + v1) & _MASK64
        v1 = _rotl(v1, 17) ^ v2
        v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash128_py(message: bytes, k0: int, k1: int) -> tuple[int, int]:
    """SipHash-2-4 with 128-bit output of ``message`` under key words ``(k0, k1)``.

    Returns ``(h0, h1)``: the first and the second 8 output bytes read little-endian.
    """
    v0 = k0 ^ _C0
    v1 = k1 ^ _C1 ^ 0xEE  # the 128-bit variant's domain separation
    v2 = k0 ^ _C2
    v3 = k1 ^ _C3
    length = len(message)
    whole = length - length % 8
    for pos in range(0, whole, 8):
        m = int.from_bytes(message[pos : pos + 8], "little")
        v3 ^= m
        v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 2)
        v0 ^= m
    # Last block: the tail bytes little-endian, the length's low byte in the top byte.
    b = ((length & 0xFF) << 56) | int.from_bytes(message[whole:], "little")
    v3 ^= b
    v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 2)
    v0 ^= b
    v2 ^= 0xEE
    v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 4)
    h0 = v0 ^ v1 ^ v2 ^ v3
    v1 ^= 0xDD
    v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 4)
    h1 = v0 ^ v1 ^ v2 ^ v3
    return h0, h1


def _key(data: Any, position: int, length: int) -> bytes:
    return bytes(data[position : position + length])


def hash_columns_py(
    data: Any,
    key_position: Any,
    key_length: Any,
    k0: int,
    k1: int,
    out_h0: Any,
    out_h1: Any,
) -> None:
    """Hash every row's key into ``out_h0``/``out_h1``; null keys (length < 0) get 0, 0."""
    k0 = int(k0)
    k1 = int(k1)
    for row in range(len(key_position)):
        length = int(key_length[row])
        if length < 0:
            out_h0[row] = 0
            out_h1[row] = 0
            continue
        h0, h1 = siphash128_py(_key(data, int(key_position[row]), length), k0, k1)
        out_h0[row] = h0
        out_h1[row] = h1


def _probe_start_step(h0: int, h1: int, slots: int) -> tuple[int, int]:
    step = 1 if slots < 3 else 1 + h1 % (slots - 1)
    return h0 % slots, step


def put_columns_py(
    data: Any,
    key_position: Any,
    key_length: Any,
    offset: Any,
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
    """Put rows ``[start_row, stop_row)``; return the row where the map was full, else stop_row."""
    marks = len(superseded)
    k0 = int(k0)
    k1 = int(k1)
    slots = len(table)
    size = int(state[STATE_SIZE])
    latest_offset = int(state[STATE_LATEST_OFFSET])
    lookups = int(state[STATE_LOOKUPS])
    probes = int(state[STATE_PROBES])
    result = stop_row
    for row in range(start_row, stop_row):
        length = int(key_length[row])
        if length < 0:
            continue
        record_offset = int(offset[row])
        if record_offset < min_offset:
            continue
        if size >= limit:
            result = row
            break
        h0, h1 = siphash128_py(_key(data, int(key_position[row]), length), k0, k1)
        lookups += 1
        slot, step = _probe_start_step(h0, h1, slots)
        word0, word1 = _wrap64(h0), _wrap64(h1)  # the hashes as the table's int64 words
        while True:
            probes += 1
            if int(table[slot, COL_STORED]) == 0:
                table[slot, COL_HASH0] = word0
                table[slot, COL_HASH1] = word1
                size += 1
                break
            if int(table[slot, COL_HASH0]) == word0 and int(table[slot, COL_HASH1]) == word1:
                mark = int(table[slot, COL_STORED]) - 1 - superseded_base
                if 0 <= mark < marks:
                    superseded[mark] = 1
                break
            slot = (slot + step) % slots
        table[slot, COL_STORED] = _wrap64(record_offset + 1)
        latest_offset = record_offset
    state[STATE_SIZE] = size
    state[STATE_LATEST_OFFSET] = latest_offset
    state[STATE_LOOKUPS] = lookups
    state[STATE_PROBES] = probes
    return result


def get_columns_py(
    data: Any,
    key_position: Any,
    key_length: Any,
    k0: int,
    k1: int,
    table: Any,
    state: Any,
    out: Any,
) -> None:
    """Write each row's latest offset into ``out``: -1 for a null key or a key not in the map."""
    k0 = int(k0)
    k1 = int(k1)
    slots = len(table)
    lookups = int(state[STATE_LOOKUPS])
    probes = int(state[STATE_PROBES])
    for row in range(len(key_position)):
        length = int(key_length[row])
        found = -1
        if length >= 0:
            h0, h1 = siphash128_py(_key(data, int(key_position[row]), length), k0, k1)
            lookups += 1
            slot, step = _probe_start_step(h0, h1, slots)
            word0, word1 = _wrap64(h0), _wrap64(h1)
            # With a prime slot count every step is coprime to it, so `slots` attempts visit
            # every slot once: that bounds the search in a completely full table.
            for _ in range(slots):
                probes += 1
                value = int(table[slot, COL_STORED])
                if value == 0:
                    break
                if int(table[slot, COL_HASH0]) == word0 and int(table[slot, COL_HASH1]) == word1:
                    found = _wrap64(value - 1)
                    break
                slot = (slot + step) % slots
        out[row] = found
    state[STATE_LOOKUPS] = lookups
    state[STATE_PROBES] = probes
