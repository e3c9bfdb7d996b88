"""What the cleaner keeps of transactional data: Kafka's ``CleanedTransactionMetadata`` and
``checkBatchRetention``, pure (batch header facts in, decisions out).

Both cleaners (the in-process cleaner and the Spark job, through the same engine code) and
the Pulsar-style compactor take every transaction decision from here, so they cannot drift.

State of one pass (one per map build, one shared by every group of a cleaning round, as
KAFKA-8351 fixed it): a heap of aborted transactions (the ``.txnindex`` entries added with
:meth:`CleanedTransactionMetadata.add_aborted`, ordered by first offset), the aborted
transactions under way (producer id -> the entry and whether a batch of it was seen), the
producers with a committed-or-open transaction seen, and the aborted transactions whose ABORT
marker was kept with data seen (what the cleaned segment's ``.txnindex`` gets,
:meth:`CleanedTransactionMetadata.take_kept_aborted`).

Rules, per batch in log order:

* Before any batch: every aborted transaction whose first offset is at or below the batch's
  last offset moves from the heap to the ones under way (unless its producer already has one
  under way: Kafka keeps the first).
* A data batch is *aborted* (its records are discarded without being read) iff it is
  transactional and its producer has an aborted transaction under way; that notes the batch
  as seen. A transactional batch of any other producer marks the producer committed.
* A control batch without records (an emptied marker) is discardable. An ABORT marker ends
  its producer's aborted transaction: kept (and the entry goes to the cleaned index) iff a
  batch of it was seen in this pass, else discardable. A COMMIT marker is discardable iff no
  batch of its producer's transaction was seen. Other control types are kept.
* :func:`check_batch_retention`: the records of a batch are discarded when it is aborted data,
  or a discardable marker whose delete horizon (KIP-534) has passed. The batch itself is
  retained as an empty header when it is the last batch of an active producer (its last data
  batch by last offset, or, when the producer has no data batch retained, a control batch of
  its current epoch), or when it ends exactly at the round's upper bound (KAFKA-17076);
  otherwise it is deleted when its records are discarded, or kept only if a record survives.
  A discardable marker that is kept gets a delete horizon stamped (``contains_marker_for_
  empty_txn``), so a later round can remove it.

:func:`batch_verdicts` applies the rules to the columns of a chunk, calling the per-batch
state machine only for transactional and control batches (a plain batch changes no state).
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

#: ``control_type`` of a batch that is not a control batch, or a control batch with no record.
NO_CONTROL_RECORD = -2
#: ``control_type`` of a control record whose key Kafka cannot parse (kept, never a marker).
CONTROL_TYPE_UNKNOWN = -1
CONTROL_TYPE_ABORT = 0
CONTROL_TYPE_COMMIT = 1

_TRANSACTIONAL = 0x10
_CONTROL = 0x20
_DELETE_HORIZON = 0x40


class AbortedTxnEntry(Protocol):
    """What the rules read of a ``.txnindex`` entry (``seglog.format.txn_index.AbortedTxn``)."""

    @property
    def producer_id(self) -> int: ...

    @property
    def first_offset(self) -> int: ...

    @property
    def last_offset(self) -> int: ...


TxnT = TypeVar("TxnT", bound=AbortedTxnEntry)

#: Per active producer id: (last offset of its last retained data batch, or None when it has
#: none, e.g. after an epoch bump or with only markers; its current epoch). Kafka's
#: ``LastRecord``; ``seglog.core.producer_state.LastRecord`` has this shape.
ActiveProducers = Mapping[int, tuple[int | None, int]]


class BatchRetention(enum.IntEnum):
    """Kafka's ``BatchRetention``."""

    DELETE = 0  # the whole batch goes, records unread
    DELETE_EMPTY = 1  # records judged one by one; the batch goes if none survives
    RETAIN_EMPTY = 2  # records judged one by one; an empty header stays if none survives


class BatchFacts(NamedTuple):
    """The header facts of one batch that the rules read."""

    base_offset: int
    last_offset: int
    producer_id: int
    producer_epoch: int
    is_transactional: bool
    is_control: bool
    control_type: int = NO_CONTROL_RECORD  # of its first record (control batches)
    delete_horizon_ms: int | None = None  # the stamped horizon (KIP-534), if any


class BatchVerdict(NamedTuple):
    """:func:`check_batch_retention`'s answer for one batch."""

    retention: BatchRetention
    discard_records: bool
    contains_marker_for_empty_txn: bool  # a kept marker of this kind gets a horizon stamped


@dataclass(slots=True)
class _UnderWay(Generic[TxnT]):
    txn: TxnT
    last_observed_batch_offset: int | None = None


@dataclass(slots=True)
class CleanedTransactionMetadata(Generic[TxnT]):
    """Kafka's ``CleanedTransactionMetadata`` (module docstring)."""

    _heap: list[tuple[int, int, TxnT]] = field(default_factory=list)
    _sequence: int = 0
    _aborted_under_way: dict[int, _UnderWay[TxnT]] = field(default_factory=dict)
    _committed_under_way: set[int] = field(default_factory=set)
    _kept_aborted: list[TxnT] = field(default_factory=list)

    def add_aborted(self, txns: Iterable[TxnT]) -> None:
        """Add ``.txnindex`` entries (duplicates are harmless: a producer keeps its first)."""
        for txn in txns:
            heapq.heappush(self._heap, (txn.first_offset, self._sequence, txn))
            self._sequence += 1

    def _consume_up_to(self, offset: int) -> None:
        heap = self._heap
        while heap and heap[0][0] <= offset:
            txn = heapq.heappop(heap)[2]
            if txn.producer_id not in self._aborted_under_way:
                self._aborted_under_way[txn.producer_id] = _UnderWay(txn)

    def on_batch_read(self, batch: BatchFacts) -> bool:
        """A data batch: True iff it belongs to an aborted transaction (discard its records)."""
        self._consume_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        under_way = self._aborted_under_way.get(batch.producer_id)
        if under_way is not None:
            under_way.last_observed_batch_offset = batch.last_offset
            return True
        self._committed_under_way.add(batch.producer_id)
        return False

    def on_control_batch_read(self, batch: BatchFacts) -> bool:
        """A control batch: True iff the marker may be discarded (module docstring)."""
        self._consume_up_to(batch.last_offset)
        if batch.control_type == NO_CONTROL_RECORD:
            return True  # an emptied marker
        if batch.control_type == CONTROL_TYPE_ABORT:
            under_way = self._aborted_under_way.pop(batch.producer_id, None)
            if under_way is not None and under_way.last_observed_batch_offset is not None:
                self._kept_aborted.append(under_way.txn)
                return False
            return True
        if batch.control_type == CONTROL_TYPE_COMMIT:
            if batch.producer_id in self._committed_under_way:
                self._committed_under_way.discard(batch.producer_id)
                return False
            return True
        return False

    def on_any_batch(self, batch: BatchFacts) -> bool:
        """``on_control_batch_read`` or ``on_batch_read``, by the batch's kind."""
        if batch.is_control:
            return self.on_control_batch_read(batch)
        return self.on_batch_read(batch)

    def take_kept_aborted(self) -> list[TxnT]:
        """The aborted transactions whose markers were kept since the last call, in order
        (the cleaned segment's ``.txnindex`` entries)."""
        kept, self._kept_aborted = self._kept_aborted, []
        return kept


def is_last_of_producer(batch: BatchFacts, active_producers: ActiveProducers) -> bool:
    """Whether ``batch`` is an active producer's last entry (Kafka never removes it)."""
    if batch.producer_id < 0:
        return False
    last = active_producers.get(batch.producer_id)
    if last is None:
        return False
    last_data_offset, epoch = last
    if last_data_offset is not None:
        return batch.last_offset == last_data_offset
    return batch.is_control and batch.producer_epoch == epoch


def check_batch_retention(
    txn: CleanedTransactionMetadata[TxnT],
    batch: BatchFacts,
    *,
    now_ms: int,
    upper_bound: int,
    active_producers: ActiveProducers,
) -> BatchVerdict:
    """Kafka's ``checkBatchRetention`` for one batch (module docstring); advances ``txn``."""
    can_discard = txn.on_any_batch(batch)
    if batch.is_control:
        horizon = batch.delete_horizon_ms
        discard_records = can_discard and horizon is not None and horizon <= now_ms
    else:
        discard_records = can_discard
    if is_last_of_producer(batch, active_producers) or batch.last_offset + 1 == upper_bound:
        retention = BatchRetention.RETAIN_EMPTY
    elif discard_records:
        retention = BatchRetention.DELETE
    else:
        retention = BatchRetention.DELETE_EMPTY
    return BatchVerdict(retention, discard_records, can_discard and batch.is_control)


@dataclass(frozen=True, slots=True)
class BatchVerdicts:
    """:func:`check_batch_retention` for every batch of a chunk, as columns."""

    retention: npt.NDArray[np.int8]
    discard_records: npt.NDArray[np.bool_]
    contains_marker_for_empty_txn: npt.NDArray[np.bool_]


def is_special(attributes: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.bool_]:
    """Transactional or control batches: the ones that move the transaction state."""
    flags: npt.NDArray[np.bool_] = (attributes & (_TRANSACTIONAL | _CONTROL)) != 0
    return flags


def facts_of(
    b: int,
    base_offset: npt.NDArray[np.int64],
    last_offset: npt.NDArray[np.int64],
    producer_id: npt.NDArray[np.int64],
    producer_epoch: npt.NDArray[np.integer[Any]],
    attributes: npt.NDArray[np.integer[Any]],
    base_timestamp: npt.NDArray[np.int64],
    control_type: npt.NDArray[np.integer[Any]],
) -> BatchFacts:
    """Batch ``b``'s facts from header columns."""
    attrs = int(attributes[b])
    return BatchFacts(
        int(base_offset[b]),
        int(last_offset[b]),
        int(producer_id[b]),
        int(producer_epoch[b]),
        bool(attrs & _TRANSACTIONAL),
        bool(attrs & _CONTROL),
        int(control_type[b]),
        int(base_timestamp[b]) if attrs & _DELETE_HORIZON else None,
    )


def batch_verdicts(
    txn: CleanedTransactionMetadata[TxnT],
    *,
    base_offset: npt.NDArray[np.int64],
    last_offset: npt.NDArray[np.int64],
    producer_id: npt.NDArray[np.int64],
    producer_epoch: npt.NDArray[np.integer[Any]],
    attributes: npt.NDArray[np.integer[Any]],
    base_timestamp: npt.NDArray[np.int64],
    control_type: npt.NDArray[np.integer[Any]],
    now_ms: int,
    upper_bound: int,
    active_producers: ActiveProducers,
) -> BatchVerdicts:
    """:func:`check_batch_retention` for batches in log order (v2 header columns;
    ``control_type`` per batch, :data:`NO_CONTROL_RECORD` for none). Plain batches are
    decided at once: they change no transaction state (an aborted transaction is moved under
    way by the next transactional or control batch, before it is read, exactly as if each
    plain batch had moved it)."""
    count = len(base_offset)
    retain_empty = last_offset + 1 == upper_bound
    if active_producers:
        for pid in np.unique(producer_id[producer_id >= 0]).tolist():
            last = active_producers.get(int(pid))
            if last is not None and last[0] is not None:
                retain_empty |= (producer_id == pid) & (last_offset == last[0])
    retention = np.where(
        retain_empty, BatchRetention.RETAIN_EMPTY, BatchRetention.DELETE_EMPTY
    ).astype(np.int8)
    discard = np.zeros(count, dtype=np.bool_)
    marker_empty = np.zeros(count, dtype=np.bool_)
    columns = (
        base_offset,
        last_offset,
        producer_id,
        producer_epoch,
        attributes,
        base_timestamp,
        control_type,
    )
    for b in np.flatnonzero(is_special(attributes)).tolist():
        verdict = check_batch_retention(
            txn,
            facts_of(b, *columns),
            now_ms=now_ms,
            upper_bound=upper_bound,
            active_producers=active_producers,
        )
        retention[b] = verdict.retention
        discard[b] = verdict.discard_records
        marker_empty[b] = verdict.contains_marker_for_empty_txn
    return BatchVerdicts(retention, discard, marker_empty)
