"""Numba kernels of the log cleaner's bounded offset map.

The map answers "latest offset of this key" for one cleaning round in a fixed amount of
memory, like Kafka's ``SkimpyOffsetMap``, but keyed by a 128-bit keyed hash instead of MD5.
Each kernel has a plain-Python twin in :mod:`seglog.kernels.offset_map_py` that leaves the
same bytes in every array (tests compare them; the twin is the fallback when numba is
disabled with ``SEGLOG_DISABLE_NUMBA=1``). Callers go through
:class:`seglog.core.offset_map.OffsetMap`, which checks the arguments and picks the
implementation; the kernels trust them (key spans inside ``data``, arrays of one length).

Layout: exactly 24 bytes per slot, in ONE C-contiguous int64 ``table`` of shape ``(slots, 3)``,
so a slot's three words are adjacent in memory (a probe touches one cache line, or two when
the 24-byte row straddles a 64-byte line boundary, which 2 rows in 8 do):
    ``table[s, COL_HASH0]``, ``table[s, COL_HASH1]``: the key's SipHash-2-4-128 (h0, h1), each
    kept as the int64 with the same 64 bits (only ever compared for equality);
    ``table[s, COL_STORED]``: the key's latest offset + 1; **0 means the slot is empty**.
No Python object per key. ``clear`` zeroes only the stored column: hashes left in an empty
slot are never read, because every probe looks at the stored word first.

Hash: SipHash-2-4 with 128-bit output (the reference ``siphash`` with ``outlen == 16``:
``v1 ^= 0xee`` at init, ``0xee`` into ``v2`` before the first finalization, ``0xdd`` into
``v1`` before the second), keyed by 16 bytes read as two little-endian words ``k0, k1``.
``h0`` is output bytes 0..7 and ``h1`` bytes 8..15, each read little-endian.

Probe sequence (double hashing): ``start = h0 % slots``, ``step = 1 + h1 % (slots - 1)``
(``step = 1`` when ``slots < 3``); attempt ``i`` looks at ``(start + i * step) % slots``.
``slots`` is prime, so every step is coprime to it and ``slots`` attempts visit every slot
exactly once. A put stops at an empty slot (insert: write both hashes, ``size += 1``) or at a
slot holding the same ``(h0, h1)`` (overwrite the offset); it always finds one because the
caller keeps ``size < limit <= slots``. A get stops at an empty slot (absent), at an equal
hash (found) or after ``slots`` attempts (absent from a completely full table).

Invariants (held between calls):
    * ``size`` == number of slots with a non-zero stored word <= ``limit`` <= ``slots``;
    * no two non-empty slots hold the same ``(h0, h1)``;
    * a key's slot lies on its probe sequence after only non-empty slots (no deletes, so
      probing never skips over a hole);
    * ``table[s, COL_STORED] - 1`` is the offset of the last put of that key since the last
      clear.

Counters follow Kafka's: ``lookups`` +1 per put or get of a key, ``probes`` +1 per slot
position computed (so ``probes >= lookups``), and every put sets ``latest_offset`` to the
record's offset. They live in the int64 ``state`` vector (indices ``STATE_*`` of the twin
module) so that one kernel call updates them all.

Collisions: keys are compared only by their 128-bit hash. For ``n`` distinct keys in one round
the chance that any two share a hash is about ``n**2 / 2**129`` (1e9 keys: ~1.5e-21). The key
is drawn from ``os.urandom`` for every round, so that bound holds for keys chosen by an
attacker too: unlike MD5 (Kafka's digest) or murmur3, whose collisions do not depend on a key
and can be precomputed, a SipHash collision under an unknown random key cannot. A collision
would make the cleaner treat two keys as one and drop the older key's latest record: the same
risk Kafka accepts with MD5, made smaller and chosen-key proof.

All kernels are ``nogil`` and ``cache=True`` and loop over every row inside one call. The put
and get kernels work in blocks of ``PREFETCH_ROWS`` rows: pass 1 hashes the block and issues a
prefetch (``llvm.prefetch``, a hint with no effect on results) of each row's first slot (its
first and last word, so both lines of a straddling row), pass 2 does the puts or gets in row
order exactly as the twin does. The cache misses of a block then overlap instead of following
each other: 1.6-2.5x the throughput of a row-at-a-time loop when the table is far larger than
the CPU caches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]  # numba's own dependency, no stubs
from numba.core import cgutils, types
from numba.extending import intrinsic

from seglog.kernels.offset_map_py import (
    COL_HASH0,
    COL_HASH1,
    COL_STORED,
    STATE_LATEST_OFFSET,
    STATE_LOOKUPS,
    STATE_PROBES,
    STATE_SIZE,
)

_F = TypeVar("_F", bound=Callable[..., Any])

# Rows hashed (and their first slots prefetched) before any of them is put or looked up.
PREFETCH_ROWS = 16

# np.int64 / np.uint64 under names mypy reads as int -> int; numba resolves globals by value,
# so the compiled code is the same as spelling the numpy types.
_int64 = cast("Callable[[Any], int]", np.int64)
_u64 = cast("Callable[[Any], int]", np.uint64)

# Every operand of a uint64 operation must itself be uint64: numba turns uint64 mixed with a
# signed int into float64.
_C0 = _u64(0x736F6D6570736575)
_C1 = _u64(0x646F72616E646F6D)
_C2 = _u64(0x6C7967656E657261)
_C3 = _u64(0x7465646279746573)
_XEE = _u64(0xEE)
_XDD = _u64(0xDD)
_U0 = _u64(0)
_U1 = _u64(1)
_U7 = _u64(7)
_U8 = _u64(8)
_U13 = _u64(13)
_U16 = _u64(16)
_U17 = _u64(17)
_U21 = _u64(21)
_U32 = _u64(32)
_U51 = _u64(51)
_U47 = _u64(47)
_U48 = _u64(48)
_U43 = _u64(43)
_U56 = _u64(56)


def _jit(fn: _F) -> _F:
    """``numba.njit(nogil=True, cache=True)`` that keeps the function's type for mypy."""
    return cast(_F, numba.njit(nogil=True, cache=True)(fn))


def _jit_inline(fn: _F) -> _F:
    """:func:`_jit`, and inlined by numba into every caller."""
    return cast(_F, numba.njit(nogil=True, cache=True, inline="always")(fn))


def _prefetch_typer(typingctx: Any, array: Any, row: Any, column: Any) -> Any:
    """``_prefetch(table, i, j)``: ask the CPU to start loading ``table[i, j]`` of a 2-D array
    (``llvm.prefetch``); ``i`` and ``j`` must be in range (no wraparound, no bounds check)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        array_type = signature.args[0]
        array_struct = context.make_array(array_type)(context, builder, args[0])
        pointer = cgutils.get_item_pointer(  # type: ignore[no-untyped-call]
            context, builder, array_type, array_struct, [args[1], args[2]], wraparound=False
        )
        byte_pointer = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        function_type = ir.FunctionType(ir.VoidType(), [byte_pointer, i32, i32, i32])
        function = builder.module.declare_intrinsic("llvm.prefetch", [byte_pointer], function_type)
        # read, keep in every cache level (locality 3), data cache
        builder.call(function, [builder.bitcast(pointer, byte_pointer), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    if not isinstance(array, types.Array) or array.ndim != 2:
        return None
    return types.void(array, types.intp, types.intp), codegen


# A hint only: results never depend on it (the twin has none). Typed for mypy's sake.
_prefetch = cast("Callable[[Any, int, int], None]", intrinsic(_prefetch_typer))


@_jit_inline
def _sipround(v0: int, v1: int, v2: int, v3: int) -> tuple[int, int, int, int]:
    # Rotations spelled as shift pairs with uint64 constants (rotl(x, b) = x<<b | x>>(64-b)).
    v0 = v0 + v1
    v1 = ((v1 << _U13) | (v1 >> _U51)) ^ v0
    v0 = (v0 << _U32) | (v0 >> _U32)
    v2 = v2 + v3
    v3 = ((v3 << _U16) | (v3 >> _U48)) ^ v2
    v0 = v0 + v3
    v3 = ((v3 << _U21) | (v3 >> _U43)) ^ v0
    v2 = v2 + v1
    v1 = ((v1 << _U17) | (v1 >> _U47)) ^ v2
    v2 = (v2 << _U32) | (v2 >> _U32)
    return v0, v1, v2, v3


@_jit_inline
def _le64(data: Any, pos: int) -> int:
    # Byte-wise little-endian read; LLVM merges it into one unaligned 8-byte load.
    return (
        _u64(data[pos])
        | (_u64(data[pos + 1]) << _U8)
        | (_u64(data[pos + 2]) << _U16)
        | (_u64(data[pos + 3]) << _u64(24))
        | (_u64(data[pos + 4]) << _U32)
        | (_u64(data[pos + 5]) << _u64(40))
        | (_u64(data[pos + 6]) << _U48)
        | (_u64(data[pos + 7]) << _U56)
    )


@_jit_inline
def _siphash128(data: Any, pos: int, length: int, k0: int, k1: int) -> tuple[int, int]:
    v0 = k0 ^ _C0
    v1 = k1 ^ _C1 ^ _XEE
    v2 = k0 ^ _C2
    v3 = k1 ^ _C3
    end = pos + length - (length & 7)
    p = pos
    while p < end:
        m = _le64(data, p)
        v3 ^= m
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
        v0 ^= m
        p += 8
    b = _u64(length) << _U56
    shift = _U0
    while p < pos + length:
        b |= _u64(data[p]) << shift
        shift += _U8
        p += 1
    v3 ^= b
    v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    v0 ^= b
    v2 ^= _XEE
    for _ in range(4):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    h0 = v0 ^ v1 ^ v2 ^ v3
    v1 ^= _XDD
    for _ in range(4):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    h1 = v0 ^ v1 ^ v2 ^ v3
    return h0, h1


@_jit_inline
def _probe_start_step(h0: int, h1: int, slots: int) -> tuple[int, int]:
    start = _int64(h0 % _u64(slots))
    step = _int64(1)
    if slots >= 3:
        step = _int64(1) + _int64(h1 % _u64(slots - 1))
    return start, step


@_jit
def siphash128_nb(data: Any, pos: int, length: int, k0: int, k1: int) -> tuple[int, int]:
    """SipHash-2-4-128 of ``data[pos:pos+length]`` under key words ``(k0, k1)``: ``(h0, h1)``."""
    return _siphash128(data, _int64(pos), _int64(length), _u64(k0), _u64(k1))


@_jit
def hash_columns_nb(
    data: Any,
    key_position: Any,
    key_length: Any,
    k0: int,
    k1: int,
    out_h0: Any,
    out_h1: Any,
) -> None:
    """Hash every row's key into ``out_h0``/``out_h1``; null keys (length < 0) get 0, 0."""
    k0 = _u64(k0)
    k1 = _u64(k1)
    for row in range(key_position.shape[0]):
        length = _int64(key_length[row])
        if length < 0:
            out_h0[row] = 0
            out_h1[row] = 0
            continue
        h0, h1 = _siphash128(data, _int64(key_position[row]), length, k0, k1)
        out_h0[row] = h0
        out_h1[row] = h1


@_jit
def put_columns_nb(
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
    """Put rows ``[start_row, stop_row)``; return the row where the map was full, else stop_row.

    A row is put when its key is not null and its offset is >= ``min_offset``; before each
    such put the map must hold fewer than ``limit`` keys, else the kernel stops there. When a
    put replaces an earlier offset of the same key, ``superseded[old - superseded_base]`` is
    set to 1 if that index is inside the array (an empty array records nothing).
    """
    marks = _int64(superseded.shape[0])
    k0 = _u64(k0)
    k1 = _u64(k1)
    slots = _int64(table.shape[0])
    size = _int64(state[STATE_SIZE])
    latest_offset = _int64(state[STATE_LATEST_OFFSET])
    lookups = _int64(state[STATE_LOOKUPS])
    probes = _int64(state[STATE_PROBES])
    result = _int64(stop_row)
    # Hashes as the int64 words the table holds (same bits as the uint64 h0, h1).
    block_h0 = np.empty(PREFETCH_ROWS, dtype=np.int64)
    block_h1 = np.empty(PREFETCH_ROWS, dtype=np.int64)
    block_slot = np.empty(PREFETCH_ROWS, dtype=np.int64)
    block_step = np.empty(PREFETCH_ROWS, dtype=np.int64)
    full = False
    for block in range(start_row, stop_row, PREFETCH_ROWS):
        block_end = min(block + PREFETCH_ROWS, stop_row)
        # Pass 1 (no state change): hash the block's rows and start loading their first
        # slots, so the cache misses of a whole block overlap instead of coming one by one.
        for row in range(block, block_end):
            length = _int64(key_length[row])
            if length < 0 or _int64(offset[row]) < min_offset:
                continue
            h0, h1 = _siphash128(data, _int64(key_position[row]), length, k0, k1)
            slot, step = _probe_start_step(h0, h1, slots)
            i = row - block
            block_h0[i] = _int64(h0)
            block_h1[i] = _int64(h1)
            block_slot[i] = slot
            block_step[i] = step
            _prefetch(table, slot, COL_HASH0)  # the row's first word and, when the row
            _prefetch(table, slot, COL_STORED)  # straddles two cache lines, its last one
        # Pass 2: the puts, row by row in order, exactly as the twin does them.
        for row in range(block, block_end):
            length = _int64(key_length[row])
            if length < 0:
                continue
            record_offset = _int64(offset[row])
            if record_offset < min_offset:
                continue
            if size >= limit:
                result = row
                full = True
                break
            i = row - block
            h0 = block_h0[i]
            h1 = block_h1[i]
            slot = block_slot[i]
            step = block_step[i]
            lookups += 1
            while True:
                probes += 1
                if table[slot, COL_STORED] == 0:
                    table[slot, COL_HASH0] = h0
                    table[slot, COL_HASH1] = h1
                    size += 1
                    break
                if table[slot, COL_HASH0] == h0 and table[slot, COL_HASH1] == h1:
                    mark = table[slot, COL_STORED] - 1 - superseded_base
                    if 0 <= mark < marks:
                        superseded[mark] = 1
                    break
                slot += step
                if slot >= slots:
                    slot -= slots
            table[slot, COL_STORED] = record_offset + 1
            latest_offset = record_offset
        if full:
            break
    state[STATE_SIZE] = size
    state[STATE_LATEST_OFFSET] = latest_offset
    state[STATE_LOOKUPS] = lookups
    state[STATE_PROBES] = probes
    return result


@_jit
def get_columns_nb(
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
    k0 = _u64(k0)
    k1 = _u64(k1)
    slots = _int64(table.shape[0])
    lookups = _int64(state[STATE_LOOKUPS])
    probes = _int64(state[STATE_PROBES])
    rows = key_position.shape[0]
    # Hashes as the int64 words the table holds (same bits as the uint64 h0, h1).
    block_h0 = np.empty(PREFETCH_ROWS, dtype=np.int64)
    block_h1 = np.empty(PREFETCH_ROWS, dtype=np.int64)
    block_slot = np.empty(PREFETCH_ROWS, dtype=np.int64)
    block_step = np.empty(PREFETCH_ROWS, dtype=np.int64)
    for block in range(0, rows, PREFETCH_ROWS):
        block_end = min(block + PREFETCH_ROWS, rows)
        for row in range(block, block_end):  # pass 1: hash and prefetch (see put_columns_nb)
            length = _int64(key_length[row])
            if length < 0:
                continue
            h0, h1 = _siphash128(data, _int64(key_position[row]), length, k0, k1)
            slot, step = _probe_start_step(h0, h1, slots)
            i = row - block
            block_h0[i] = _int64(h0)
            block_h1[i] = _int64(h1)
            block_slot[i] = slot
            block_step[i] = step
            _prefetch(table, slot, COL_HASH0)
            _prefetch(table, slot, COL_STORED)
        for row in range(block, block_end):  # pass 2: the lookups
            found = _int64(-1)
            if _int64(key_length[row]) >= 0:
                i = row - block
                h0 = block_h0[i]
                h1 = block_h1[i]
                slot = block_slot[i]
                step = block_step[i]
                lookups += 1
                # `slots` attempts visit every slot once (prime slot count): bounds a full
                # table.
                for _ in range(slots):
                    probes += 1
                    value = _int64(table[slot, COL_STORED])
                    if value == 0:
                        break
                    if table[slot, COL_HASH0] == h0 and table[slot, COL_HASH1] == h1:
                        found = value - 1
                        break
                    slot += step
                    if slot >= slots:
                        slot -= slots
            out[row] = found
    state[STATE_LOOKUPS] = lookups
    state[STATE_PROBES] = probes
