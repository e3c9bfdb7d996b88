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

import dataclasses
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from seglog.format.batch import CONTROL_FLAG_MASK, MAGIC_V2, TRANSACTIONAL_FLAG_MASK
from seglog.format.columnar import BatchColumns, RecordColumns
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

    def without_aborted_rows(self, columns: RecordColumns) -> RecordColumns:
        """``columns`` without the records of aborted batches: the per-record columns taken
        at the kept rows (one numpy take each) and each batch's ``record_start`` renumbered
        (an aborted batch keeps its row with no records, as an excluded control batch does);
        the data buffer and ``end`` are the same objects. Offsets still increase, so a reader
        selects rows by offset as before. ``columns`` itself when nothing is dropped."""
        if not self._intervals or not len(columns):
            return columns
        dropped = self.aborted_batches(columns.batches)
        if not dropped.any():
            return columns
        keep = np.flatnonzero(~dropped[columns.batch_index])
        batches = columns.batches
        counts = np.diff(batches.record_start)
        counts[dropped] = 0
        record_start = np.zeros(len(batches.record_start), dtype=batches.record_start.dtype)
        np.cumsum(counts, out=record_start[1:])
        return dataclasses.replace(
            columns,
            batches=dataclasses.replace(batches, record_start=record_start),
            offset=columns.offset[keep],
            timestamp=columns.timestamp[keep],
            key_position=columns.key_position[keep],
            key_length=columns.key_length[keep],
            value_position=columns.value_position[keep],
            value_length=columns.value_length[keep],
            header_count=columns.header_count[keep],
            batch_index=columns.batch_index[keep],
        )
