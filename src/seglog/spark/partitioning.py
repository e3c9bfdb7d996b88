"""Kafka's default partition choice over whole Arrow columns (the sink's partitioner).

:func:`murmur2_positive` is :func:`seglog.core.partitioner.murmur2` followed by Kafka's
``toPositive`` for every non-null row of an Arrow ``binary``/``large_binary`` array at
once: the 4-byte words of all keys are mixed in lockstep with numpy ``uint32`` arithmetic
(which wraps modulo 2**32 exactly like Java ``int`` multiplication), so no Python object is
made per key. Keys longer than :data:`VECTOR_KEY_BYTES_MAX` are hashed one by one with the
pure-Python reference (a lockstep loop costs one numpy pass per word of the longest key).
Tests compare both against :mod:`seglog.core.partitioner` on random keys.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from seglog.core.partitioner import MURMUR2_SEED, murmur2, to_positive

VECTOR_KEY_BYTES_MAX = 1024
_M = np.uint32(0x5BD1E995)


def _spans(array: pa.Array) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """The data buffer and the ``len + 1`` value offsets of a binary array (slice-aware)."""
    offset_type = np.int64 if pa.types.is_large_binary(array.type) else np.int32
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=offset_type)[
        array.offset : array.offset + len(array) + 1
    ].astype(np.int64)
    data = (
        np.frombuffer(buffers[2], dtype=np.uint8)
        if buffers[2] is not None
        else np.zeros(0, dtype=np.uint8)
    )
    return data, offsets


def murmur2_positive(keys: pa.Array) -> npt.NDArray[np.int64]:
    """``toPositive(murmur2(key))`` per row of a binary array; -1 for a null key."""
    if not (pa.types.is_binary(keys.type) or pa.types.is_large_binary(keys.type)):
        raise TypeError(f"keys must be binary or large_binary, not {keys.type}")
    rows = len(keys)
    out = np.full(rows, -1, dtype=np.int64)
    if rows == 0:
        return out
    data, offsets = _spans(keys)
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    valid = (
        np.ones(rows, dtype=bool)
        if keys.null_count == 0
        else np.asarray(keys.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    )
    long_rows = np.flatnonzero(valid & (lengths > VECTOR_KEY_BYTES_MAX))
    for row in long_rows.tolist():
        first = int(starts[row])
        out[row] = to_positive(murmur2(data[first : first + int(lengths[row])].tobytes()))
    rows_vec = np.flatnonzero(valid & (lengths <= VECTOR_KEY_BYTES_MAX))
    if not len(rows_vec):
        return out
    start = starts[rows_vec]
    length = lengths[rows_vec]
    with np.errstate(over="ignore"):
        h = np.uint32(MURMUR2_SEED) ^ length.astype(np.uint32)
        words = length // 4
        for j in range(int(words.max()) if len(words) else 0):
            active = np.flatnonzero(words > j)
            at = start[active] + 4 * j
            k = (
                data[at].astype(np.uint32)
                | (data[at + 1].astype(np.uint32) << np.uint32(8))
                | (data[at + 2].astype(np.uint32) << np.uint32(16))
                | (data[at + 3].astype(np.uint32) << np.uint32(24))
            )
            k = k * _M
            k ^= k >> np.uint32(24)
            k = k * _M
            h[active] = (h[active] * _M) ^ k
        tail = start + (length & ~3)
        remaining = length % 4
        three = np.flatnonzero(remaining == 3)
        h[three] ^= data[tail[three] + 2].astype(np.uint32) << np.uint32(16)
        two = np.flatnonzero(remaining >= 2)
        h[two] ^= data[tail[two] + 1].astype(np.uint32) << np.uint32(8)
        one = np.flatnonzero(remaining >= 1)
        h[one] ^= data[tail[one]].astype(np.uint32)
        h[one] = h[one] * _M
        h ^= h >> np.uint32(13)
        h = h * _M
        h ^= h >> np.uint32(15)
    out[rows_vec] = (h & np.uint32(0x7FFFFFFF)).astype(np.int64)
    return out
