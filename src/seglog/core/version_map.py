"""The bounded key map for compaction strategies other than "latest offset wins".

Like :class:`seglog.core.offset_map.OffsetMap` (same keyed SipHash-2-4-128, prime slot count,
double hashing, ``limit = int(slots * load_factor)`` checked before every keyed put, no
Python object per key), but each slot also holds the winner's **version**: 32 bytes per key
(:mod:`seglog.kernels.version_map` documents the table). A key's winner is the record with
the highest ``(version, offset)``: the highest timestamp (``compaction.strategy=timestamp``)
or header value (``header:<name>``), ties to the later offset. Used only for those
strategies, so the default strategy keeps Kafka's 24 bytes per key.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from seglog.core.offset_map import _check_key_spans, plan_slots
from seglog.kernels import numba_enabled
from seglog.kernels.layouts import COL_STORED, STATE_LATEST, STATE_SIZE, VERSION_SLOT_WORDS
from seglog.kernels.version_map_py import get_versions_py, put_versions_py

VERSION_SLOT_BYTES = 8 * VERSION_SLOT_WORDS
Int64Array = npt.NDArray[np.int64]


class VersionMap:
    """Bounded map key -> (winner offset, winner version) for one round (module docstring)."""

    def __init__(
        self,
        memory_bytes: int,
        load_factor: float = 0.9,
        *,
        hash_key: bytes | None = None,
        use_numba: bool | None = None,
    ) -> None:
        self.slots, self.limit = plan_slots(
            memory_bytes, VERSION_SLOT_BYTES, load_factor, what="version map"
        )
        self._fixed_key = hash_key
        self._table: Int64Array = np.zeros((self.slots, VERSION_SLOT_WORDS), dtype=np.int64)
        self._state: Int64Array = np.zeros(4, dtype=np.int64)
        self._k0 = np.uint64(0)
        self._k1 = np.uint64(0)
        numba_on = numba_enabled() if use_numba is None else (use_numba and numba_enabled())
        self._put: Callable[..., int] = put_versions_py
        self._get: Callable[..., None] = get_versions_py
        if numba_on:  # numba is imported on first use, not with this module
            from seglog.kernels.version_map import get_versions_nb, put_versions_nb

            self._put, self._get = put_versions_nb, get_versions_nb
        self.clear()

    def clear(self) -> None:
        """Empty the map for a new round (a new random hash key unless one was fixed)."""
        self._table[:, COL_STORED] = 0
        self._state[:] = 0
        self._state[STATE_LATEST] = -1
        key = self._fixed_key if self._fixed_key is not None else os.urandom(16)
        self._k0 = np.uint64(int.from_bytes(key[:8], "little"))
        self._k1 = np.uint64(int.from_bytes(key[8:16], "little"))

    @property
    def size(self) -> int:
        """Distinct keys put since the last clear."""
        return int(self._state[STATE_SIZE])

    @property
    def latest_offset(self) -> int:
        """Offset of the last put (or as updated); -1 after a clear."""
        return int(self._state[STATE_LATEST])

    @property
    def utilization(self) -> float:
        """size / slots."""
        return self.size / self.slots

    @property
    def memory_bytes(self) -> int:
        """Bytes of the slot table."""
        return int(self._table.nbytes)

    def update_latest_offset(self, offset: int) -> None:
        """Set the latest offset (a fully read segment moves it to its end)."""
        self._state[STATE_LATEST] = offset

    def put_columns(
        self,
        data: npt.NDArray[np.uint8],
        key_position: npt.NDArray[np.integer[Any]],
        key_length: npt.NDArray[np.integer[Any]],
        offset: Int64Array,
        versions: Int64Array,
        *,
        min_offset: int,
        stop_row: int | None = None,
        superseded: npt.NDArray[np.uint8],
        superseded_base: int,
    ) -> int:
        """Put rows ``[0, stop_row)`` in order; return the row where the map filled up."""
        stop = len(offset) if stop_row is None else stop_row
        _check_key_spans(data, key_position, key_length, 0, stop)
        return int(
            self._put(
                data,
                key_position,
                key_length,
                offset,
                versions,
                0,
                stop,
                min_offset,
                self.limit,
                self._k0,
                self._k1,
                self._table,
                self._state,
                superseded,
                superseded_base,
            )
        )

    def get_columns(
        self,
        data: npt.NDArray[np.uint8],
        key_position: npt.NDArray[np.integer[Any]],
        key_length: npt.NDArray[np.integer[Any]],
    ) -> tuple[Int64Array, Int64Array]:
        """Per row: the winner's offset (-1 if absent) and version."""
        rows = len(key_position)
        _check_key_spans(data, key_position, key_length, 0, rows)
        offsets = np.empty(rows, dtype=np.int64)
        versions = np.empty(rows, dtype=np.int64)
        self._get(
            data, key_position, key_length, self._k0, self._k1, self._table, offsets, versions
        )
        return offsets, versions
