"""The log cleaner's bounded offset map: latest offset per key in fixed memory.

Kafka's ``SkimpyOffsetMap`` reshaped: one cleaning round puts every keyed record of the dirty
range (oldest first) until the map is full, then the cleaner keeps a record only if its offset
is the latest one the map holds for its key. The map never grows; it is cleared and reused for
every round.

Layout (exactly 24 bytes per slot, no Python object per key): one C-contiguous int64 table of
shape ``(slots, 3)`` whose row ``s`` is slot ``s``: the key's 128-bit hash (``h0``, ``h1``,
kept as int64 words with the same bits) then ``stored`` (the key's latest offset + 1,
**0 = empty slot**). A slot's 24 bytes are adjacent, so a probe touches one cache line (two
for the rows that straddle a line boundary) instead of one per column. The ``hash0``,
``hash1`` (uint64) and ``stored`` (int64) properties are read-only strided views of the
table's columns. ``slots`` is the largest prime
<= ``memory_bytes // 24`` and at most ``limit = int(slots * load_factor)`` keys go in, so the
map uses ``24 * slots <= memory_bytes`` bytes whatever the keys. Kafka's defaults (128 MiB,
0.9) give 5,592,373 slots and 5,033,135 keys per round (Kafka: 5,592,405 and
5,033,164).

Probing is double hashing over the prime table (``start = h0 % slots``,
``step = 1 + h1 % (slots - 1)``); details and the invariants are in
:mod:`seglog.kernels.offset_map`, whose numba kernels (and their Python twins) do every loop
over rows. This class checks the arguments, owns the arrays and picks the implementation.

Invariants between calls: ``0 <= size <= limit <= slots``; ``size`` equals the number of
non-empty slots; no two non-empty slots hold the same hash; ``get(k)`` is the offset of the
last put of ``k`` since the last ``clear()`` (or -1); ``latest_offset`` is the offset of the
last put or of the last ``update_latest_offset`` (-1 after a clear).

Hash and collisions: SipHash-2-4 with 128-bit output, keyed by 16 bytes drawn from
``os.urandom`` when the map is built and again at every ``clear()`` (one key per round). Keys
are compared only by hash, so two keys with equal hashes count as one and the cleaner would
drop the older key's latest record; Kafka accepts the same risk with MD5. Among ``n`` distinct
keys of a round the chance of any collision is about ``n**2 / 2**129`` (~1.5e-21 for 1e9
keys), and because the hash key is secret and new each round this holds against keys chosen
by an attacker too, unlike MD5 or murmur3, whose collisions are key-independent and can be
precomputed. A fixed ``hash_key`` (tests) is kept across ``clear()``.

Not thread-safe: the kernels release the GIL, but one map belongs to one cleaner thread, as in
Kafka.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from seglog.errors import InvalidConfigError, OffsetMapFullError
from seglog.kernels import numba_enabled
from seglog.kernels.offset_map_py import (
    COL_HASH0,
    COL_HASH1,
    COL_STORED,
    HASH_KEY_BYTES,
    SLOT_BYTES,
    SLOT_WORDS,
    STATE_FIELDS,
    STATE_LATEST_OFFSET,
    STATE_LOOKUPS,
    STATE_PROBES,
    STATE_SIZE,
    get_columns_py,
    hash_columns_py,
    put_columns_py,
)

__all__ = ["MAX_MEMORY_BYTES", "SLOT_BYTES", "OffsetMap", "is_prime", "largest_prime_at_most"]

# Kafka caps one cleaner thread's dedupe buffer at Int.MaxValue bytes.
MAX_MEMORY_BYTES = (1 << 31) - 1

Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]


def is_prime(n: int) -> bool:
    """Deterministic primality by trial division (fine below 2**31 / 24 ~ 9e7)."""
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    if n % 3 == 0:
        return n == 3
    divisor = 5
    root = math.isqrt(n)
    while divisor <= root:
        if n % divisor == 0 or n % (divisor + 2) == 0:
            return False
        divisor += 6
    return True


def largest_prime_at_most(n: int) -> int:
    """The largest prime <= ``n``; ValueError when ``n < 2``."""
    if n < 2:
        raise ValueError(f"no prime <= {n}")
    candidate = n
    while not is_prime(candidate):
        candidate -= 1
    return candidate


def _check_data(data: Any) -> None:
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 1:
        raise TypeError("data must be a 1-D uint8 numpy array")
    if not data.flags.c_contiguous:
        raise ValueError("data must be a contiguous buffer")


def _check_column(name: str, column: Any, rows: int, kinds: str = "i") -> None:
    if not isinstance(column, np.ndarray) or column.ndim != 1 or column.dtype.kind not in kinds:
        raise TypeError(f"{name} must be a 1-D signed integer numpy array")
    if len(column) != rows:
        raise ValueError(f"{name} has {len(column)} rows, key_position has {rows}")


def _check_key_spans(
    data: npt.NDArray[np.uint8], key_position: Any, key_length: Any, start: int, stop: int
) -> None:
    """Every non-null key of rows [start, stop) lies inside ``data`` (the kernels trust it)."""
    position = key_position[start:stop].astype(np.int64, copy=False)
    length = key_length[start:stop].astype(np.int64, copy=False)
    keyed = length >= 0
    bad = keyed & ((position < 0) | (position > len(data) - length))
    if bad.any():
        row = start + int(np.argmax(bad))
        raise ValueError(
            f"row {row}: key span [{int(key_position[row])}, +{int(key_length[row])}) "
            f"is outside the {len(data)}-byte data buffer"
        )


def plan_slots(
    memory_bytes: int, slot_bytes: int, load_factor: float, *, what: str
) -> tuple[int, int]:
    """Check a bounded map's settings; its slot count (the largest prime that fits
    ``memory_bytes``) and key limit (``int(slots * load_factor)``, at least 1)."""
    if isinstance(memory_bytes, bool) or not isinstance(memory_bytes, int):
        raise InvalidConfigError(f"{what} memory_bytes must be an int: {memory_bytes!r}")
    if not 2 * slot_bytes <= memory_bytes <= MAX_MEMORY_BYTES:
        raise InvalidConfigError(
            f"{what} memory_bytes={memory_bytes} must be in [{2 * slot_bytes}, "
            f"{MAX_MEMORY_BYTES}] ({slot_bytes} bytes per slot, at least 2 slots)"
        )
    if isinstance(load_factor, bool) or not isinstance(load_factor, int | float):
        raise InvalidConfigError(f"{what} load_factor must be a number: {load_factor!r}")
    # `not (0 < x <= 1)` also rejects NaN.
    if not 0.0 < load_factor <= 1.0:
        raise InvalidConfigError(
            f"{what} load_factor={load_factor} must be in (0, 1] "
            "(log.cleaner.io.buffer.load.factor)"
        )
    slots = largest_prime_at_most(memory_bytes // slot_bytes)
    limit = int(slots * load_factor)
    if limit < 1:
        raise InvalidConfigError(
            f"{what} of {memory_bytes} bytes ({slots} slots) at load factor "
            f"{load_factor} holds no key: slots * load_factor must be >= 1"
        )
    return slots, limit


_NO_MARKS = np.zeros(0, dtype=np.uint8)


class OffsetMap:
    """Bounded map key -> latest offset for one cleaning round (Kafka's SkimpyOffsetMap)."""

    __slots__ = (
        "_fixed_key",
        "_get_impl",
        "_hash_impl",
        "_hash_key",
        "_k0",
        "_k1",
        "_limit",
        "_load_factor",
        "_put_impl",
        "_slots",
        "_state",
        "_table",
        "_uses_numba",
    )

    def __init__(
        self,
        memory_bytes: int,
        load_factor: float = 0.9,
        *,
        hash_key: bytes | None = None,
        use_numba: bool | None = None,
    ) -> None:
        """Allocate ``24 * slots <= memory_bytes`` bytes; raise InvalidConfigError if unusable."""
        slots, limit = plan_slots(memory_bytes, SLOT_BYTES, load_factor, what="offset map")
        if hash_key is not None and (
            not isinstance(hash_key, bytes) or len(hash_key) != HASH_KEY_BYTES
        ):
            raise InvalidConfigError(f"offset map hash_key must be {HASH_KEY_BYTES} bytes")
        self._slots = slots
        self._limit = limit
        self._load_factor = float(load_factor)
        self._fixed_key = hash_key is not None
        self._hash_key = b""
        self._k0 = np.uint64(0)
        self._k1 = np.uint64(0)
        self._set_key(hash_key if hash_key is not None else os.urandom(HASH_KEY_BYTES))
        # Row s = slot s: h0, h1 (int64 words with the hash's bits), offset + 1 (0 = empty).
        self._table: Int64Array = np.zeros((slots, SLOT_WORDS), dtype=np.int64)
        self._state: Int64Array = np.zeros(STATE_FIELDS, dtype=np.int64)
        self._state[STATE_LATEST_OFFSET] = -1
        self._uses_numba = numba_enabled() if use_numba is None else (use_numba and numba_enabled())
        self._put_impl: Callable[..., int]
        self._get_impl: Callable[..., None]
        self._hash_impl: Callable[..., None]
        if self._uses_numba:
            from seglog.kernels.offset_map import get_columns_nb, hash_columns_nb, put_columns_nb

            self._put_impl, self._get_impl = put_columns_nb, get_columns_nb
            self._hash_impl = hash_columns_nb
        else:
            self._put_impl, self._get_impl = put_columns_py, get_columns_py
            self._hash_impl = hash_columns_py

    def _set_key(self, key: bytes) -> None:
        self._hash_key = key
        self._k0 = np.uint64(int.from_bytes(key[:8], "little"))
        self._k1 = np.uint64(int.from_bytes(key[8:], "little"))

    def __repr__(self) -> str:
        return (
            f"OffsetMap(slots={self._slots}, limit={self._limit}, size={self.size}, "
            f"latest_offset={self.latest_offset}, numba={self._uses_numba})"
        )

    # --- sizes and counters -----------------------------------------------------------------
    @property
    def slots(self) -> int:
        """Number of slots (a prime)."""
        return self._slots

    @property
    def limit(self) -> int:
        """Most distinct keys one round may put: ``int(slots * load_factor)``."""
        return self._limit

    @property
    def load_factor(self) -> float:
        """The configured load factor."""
        return self._load_factor

    @property
    def memory_bytes(self) -> int:
        """Bytes the table actually uses: 24 per slot."""
        return SLOT_BYTES * self._slots

    @property
    def size(self) -> int:
        """Distinct keys in the map."""
        return int(self._state[STATE_SIZE])

    @property
    def latest_offset(self) -> int:
        """Offset of the last put (or of update_latest_offset); -1 after a clear."""
        return int(self._state[STATE_LATEST_OFFSET])

    @property
    def lookups(self) -> int:
        """Puts and gets of a key since the last clear."""
        return int(self._state[STATE_LOOKUPS])

    @property
    def probes(self) -> int:
        """Slot positions computed since the last clear (>= lookups)."""
        return int(self._state[STATE_PROBES])

    @property
    def utilization(self) -> float:
        """``size / slots`` (Kafka's buffer utilization)."""
        return self.size / self._slots

    @property
    def is_full(self) -> bool:
        """True when no further key may be put: ``size >= limit``."""
        return self.size >= self._limit

    @property
    def hash_key(self) -> bytes:
        """The 16-byte SipHash key of the current round."""
        return self._hash_key

    @property
    def uses_numba(self) -> bool:
        """True when the numba kernels run, False for the Python twins."""
        return self._uses_numba

    @property
    def hash0(self) -> UInt64Array:
        """Read-only uint64 view of the table's h0 column (strided; diagnostics and tests)."""
        return _read_only(self._table[:, COL_HASH0].view(np.uint64))

    @property
    def hash1(self) -> UInt64Array:
        """Read-only uint64 view of the table's h1 column (strided; diagnostics and tests)."""
        return _read_only(self._table[:, COL_HASH1].view(np.uint64))

    @property
    def stored(self) -> Int64Array:
        """Read-only view of the stored column: offset + 1, 0 for an empty slot (strided)."""
        return _read_only(self._table[:, COL_STORED])

    # --- state changes ----------------------------------------------------------------------
    def clear(self) -> None:
        """Empty the map for a new round: zero ``stored``, reset counters, draw a new hash key."""
        self._table[:, COL_STORED] = 0
        self._state[:] = 0
        self._state[STATE_LATEST_OFFSET] = -1
        if not self._fixed_key:
            self._set_key(os.urandom(HASH_KEY_BYTES))

    def update_latest_offset(self, offset: int) -> None:
        """Set ``latest_offset`` (the cleaner moves it to each batch's last offset)."""
        self._state[STATE_LATEST_OFFSET] = offset

    def put(self, key: bytes, offset: int) -> None:
        """Record ``offset`` as the latest offset of ``key``; OffsetMapFullError when full."""
        if offset < 0:
            raise ValueError(f"offset {offset} is negative")
        if self.is_full:
            raise OffsetMapFullError(
                f"offset map is full: {self.size} keys, limit {self._limit} ({self._slots} slots)"
            )
        data, key_position, key_length = _one_key(key)
        row = self._put_impl(
            data,
            key_position,
            key_length,
            np.array([offset], dtype=np.int64),
            0,
            1,
            0,
            self._limit,
            self._k0,
            self._k1,
            self._table,
            self._state,
            _NO_MARKS,
            0,
        )
        assert row == 1, "a put into a map below its limit always succeeds"

    def get(self, key: bytes) -> int:
        """The latest offset put for ``key``, -1 when absent."""
        return int(self.get_columns(*_one_key(key))[0])

    def put_columns(
        self,
        data: npt.NDArray[np.uint8],
        key_position: npt.NDArray[np.integer[Any]],
        key_length: npt.NDArray[np.integer[Any]],
        offset: Int64Array,
        *,
        start_row: int = 0,
        stop_row: int | None = None,
        min_offset: int,
        superseded: npt.NDArray[np.uint8] | None = None,
        superseded_base: int = 0,
    ) -> int:
        """Put rows ``[start_row, stop_row)`` in order; return the row where the map filled up.

        With ``superseded`` (one byte per offset from ``superseded_base``), a put that
        replaces an earlier offset of its key sets that offset's byte to 1: after the build,
        a record put at offset ``o`` is its key's latest iff ``superseded[o - base] == 0``,
        so the cleaner need not look those keys up again.

        Row ``r``'s key is ``data[key_position[r] : key_position[r] + key_length[r]]``; a
        negative ``key_length`` is a null key and the row is skipped, as is a row with
        ``offset[r] < min_offset``. Before every other row (even one whose key is already in
        the map) the map must hold fewer than ``limit`` keys: when it does not, nothing is put
        for that row and its index is returned. Otherwise returns ``stop_row``. Each put sets
        ``latest_offset`` to the row's offset.
        """
        _check_data(data)
        rows = len(key_position) if isinstance(key_position, np.ndarray) else -1
        _check_column("key_position", key_position, rows)
        _check_column("key_length", key_length, rows)
        _check_column("offset", offset, rows)
        if offset.dtype != np.int64:
            raise TypeError("offset must be an int64 array")
        stop = rows if stop_row is None else stop_row
        if not 0 <= start_row <= stop <= rows:
            raise ValueError(f"bad row range [{start_row}, {stop}) of {rows} rows")
        if min_offset < 0:
            # Offsets are stored + 1 with 0 meaning empty: a negative offset cannot be stored.
            raise ValueError(f"min_offset {min_offset} is negative")
        _check_key_spans(data, key_position, key_length, start_row, stop)
        row = self._put_impl(
            data,
            key_position,
            key_length,
            offset,
            start_row,
            stop,
            min_offset,
            self._limit,
            self._k0,
            self._k1,
            self._table,
            self._state,
            _NO_MARKS if superseded is None else superseded,
            superseded_base,
        )
        return int(row)

    # --- reads --------------------------------------------------------------------------------
    def get_columns(
        self,
        data: npt.NDArray[np.uint8],
        key_position: npt.NDArray[np.integer[Any]],
        key_length: npt.NDArray[np.integer[Any]],
        out: Int64Array | None = None,
    ) -> Int64Array:
        """Latest offset of every row's key: -1 for a null key or a key not in the map."""
        _check_data(data)
        rows = len(key_position) if isinstance(key_position, np.ndarray) else -1
        _check_column("key_position", key_position, rows)
        _check_column("key_length", key_length, rows)
        if out is None:
            out = np.empty(rows, dtype=np.int64)
        elif not (
            isinstance(out, np.ndarray)
            and out.dtype == np.int64
            and out.shape == (rows,)
            and out.flags.writeable
        ):
            raise TypeError(f"out must be a writable 1-D int64 array of {rows} rows")
        _check_key_spans(data, key_position, key_length, 0, rows)
        self._get_impl(
            data,
            key_position,
            key_length,
            self._k0,
            self._k1,
            self._table,
            self._state,
            out,
        )
        return out

    def hash_columns(
        self,
        data: npt.NDArray[np.uint8],
        key_position: npt.NDArray[np.integer[Any]],
        key_length: npt.NDArray[np.integer[Any]],
    ) -> tuple[UInt64Array, UInt64Array]:
        """Every row's ``(h0, h1)`` under the current hash key; ``(0, 0)`` for a null key."""
        _check_data(data)
        rows = len(key_position) if isinstance(key_position, np.ndarray) else -1
        _check_column("key_position", key_position, rows)
        _check_column("key_length", key_length, rows)
        _check_key_spans(data, key_position, key_length, 0, rows)
        h0 = np.empty(rows, dtype=np.uint64)
        h1 = np.empty(rows, dtype=np.uint64)
        self._hash_impl(data, key_position, key_length, self._k0, self._k1, h0, h1)
        return h0, h1


def _one_key(key: bytes) -> tuple[npt.NDArray[np.uint8], Int64Array, npt.NDArray[np.int32]]:
    """One key as columns, with the dtypes scan_records produces (int64 positions, int32
    lengths) and a writable buffer, so single puts reuse the hot path's compiled kernel."""
    data = np.frombuffer(key, dtype=np.uint8).copy()
    return data, np.zeros(1, dtype=np.int64), np.array([len(key)], dtype=np.int32)


def _read_only(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    view = array.view()
    view.flags.writeable = False
    return view
