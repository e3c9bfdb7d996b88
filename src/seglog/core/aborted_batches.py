"""Which batches of a decoded chunk belong to aborted transactions: a ``read_committed``
reader's filter over columns (no Python object per batch).

A Kafka consumer reading with ``isolation.level=read_committed`` gets, with each fetch, the
aborted transactions overlapping it (the ``.txnindex`` entries: producer id, first offset,
ABORT marker offset) and skips a **transactional data batch** of producer ``p`` at base
offset ``b`` exactly when an aborted transaction of ``p`` has ``first_offset <= b <=
last_offset`` (the consumer's walk adds ``p`` to its aborted set at the transaction's first
offset and removes it at the marker; the interval test gives the same answer because a
producer's transactions never overlap). Non-transactional batches, legacy entries and
control batches are never aborted data (control batches are left out by every reader
anyway). This is the columnar twin of :class:`seglog.core.isolation.AbortedRanges` (one
batch at a time, for the record reads); the two give the same answers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from seglog.format.batch import CONTROL_FLAG_MASK, MAGIC_V2, TRANSACTIONAL_FLAG_MASK
from seglog.format.columnar import BatchColumns
from seglog.format.txn_index import AbortedTxn

BoolArray = npt.NDArray[np.bool_]


class AbortedIntervals:
    """The aborted transactions of a read, by producer: sorted ``[first, last]`` intervals."""

    def __init__(self, aborted: Sequence[AbortedTxn]) -> None:
        by_producer: dict[int, list[tuple[int, int]]] = {}
        for txn in aborted:
            by_producer.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
        self._intervals: dict[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = {}
        for producer_id, pairs in by_producer.items():
            pairs.sort()
            firsts = np.array([p[0] for p in pairs], dtype=np.int64)
            lasts = np.array([p[1] for p in pairs], dtype=np.int64)
            self._intervals[producer_id] = (firsts, lasts)

    def __bool__(self) -> bool:
        return bool(self._intervals)

    def aborted_batches(self, batches: BatchColumns) -> BoolArray:
        """Per batch row, True for a transactional data batch of an aborted transaction."""
        out = np.zeros(len(batches.base_offset), dtype=np.bool_)
        if not self._intervals:
            return out
        attributes = batches.attributes
        candidate = (
            (batches.magic == MAGIC_V2)
            & ((attributes & TRANSACTIONAL_FLAG_MASK) != 0)
            & ((attributes & CONTROL_FLAG_MASK) == 0)
        )
        rows = np.flatnonzero(candidate)
        if not len(rows):
            return out
        producers = batches.producer_id[rows]
        for producer_id in np.unique(producers).tolist():
            intervals = self._intervals.get(int(producer_id))
            if intervals is None:
                continue
            firsts, lasts = intervals
            mine = rows[producers == producer_id]
            base = batches.base_offset[mine].astype(np.int64)
            index = np.searchsorted(firsts, base, side="right") - 1
            inside = (index >= 0) & (base <= lasts[np.maximum(index, 0)])
            out[mine[inside]] = True
        return out
