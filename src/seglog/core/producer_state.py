"""Producer state of one partition: Kafka's ``ProducerStateManager`` for a single leader.

Pure: batch header fields in, decisions and state out; files are :mod:`seglog.storage`'s.

Per producer id the state keeps its epoch, the metadata of its last
:data:`NUM_BATCHES_TO_RETAIN` data batches (first/last sequence, last offset, max
timestamp), the coordinator epoch of its last marker, the first offset of its ongoing
transaction and its last timestamp. From it follow:

* **duplicates**: a batch with the same producer id, epoch and sequence range as one of the
  retained five is not written again; the append answers the original offsets;
* **fencing and ordering** (typed errors named like Kafka's): an epoch older than the
  producer's (``InvalidProducerEpochError``); within an epoch, a first sequence that is not
  the last one + 1 (``OutOfOrderSequenceError``); a new epoch must start at sequence 0
  unless the producer had no epoch; an unknown producer must start at sequence 0
  (``UnknownProducerIdError``: the older Kafka rule, kept because it tells a producer whose
  state expired to reset rather than silently accepting a gap); a non-transactional batch
  while the producer's transaction is open (``InvalidTxnStateError``); a marker with an
  older coordinator epoch (``TransactionCoordinatorFencedError``);
* **ongoing transactions** and the **last stable offset**: the first offset of the earliest
  open transaction, or the high watermark;
* **completed transactions**: a COMMIT or ABORT marker ends the producer's open transaction
  (a marker with none open completes nothing, as in Kafka); an aborted one becomes a
  ``.txnindex`` entry whose ``lastStableOffset`` is the first offset of the next open
  transaction of another producer, else the marker's offset + 1;
* **expiry**: a producer with no open transaction whose last timestamp is
  ``producer.id.expiration.ms`` old is forgotten.

Appends are checked in two steps so a refused chunk changes nothing: :meth:`check_batch`
looks a batch up against the state plus the earlier batches of the same chunk (an
:class:`AppendPlan`), and :meth:`apply` commits the plan once the bytes are written.
Replaying a log (load, recovery, truncation) uses :meth:`replay_data` and
:meth:`replay_marker`, which trust the log and never raise for sequence gaps (the cleaner
and retention legitimately leave them).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from seglog.errors import (
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
    UnknownProducerIdError,
)
from seglog.format.producer_snapshot import ProducerSnapshotEntry
from seglog.format.txn_index import AbortedTxn

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = (1 << 31) - 1


def first_sequence(last_sequence: int, offset_delta: int) -> int:
    """A batch's first sequence from its last and their distance (Kafka's
    ``decrementSequence``: sequences wrap from int32 max to 0)."""
    first = last_sequence - offset_delta
    return first + INT32_MAX + 1 if first < 0 else first


class BatchMetadata(NamedTuple):
    """A retained data batch of a producer."""

    last_sequence: int
    last_offset: int
    offset_delta: int  # last_sequence - first_sequence (= last offset - first offset)
    timestamp: int  # the batch's max timestamp

    @property
    def first_sequence(self) -> int:
        """The batch's first sequence (sequences wrap at int32 max)."""
        return first_sequence(self.last_sequence, self.offset_delta)

    @property
    def first_offset(self) -> int:
        """The batch's first offset."""
        return self.last_offset - self.offset_delta


class OngoingTxn(NamedTuple):
    """An open transaction: its producer and its first offset."""

    producer_id: int
    producer_epoch: int
    first_offset: int


class LastRecord(NamedTuple):
    """What the cleaner must keep of an active producer (Kafka's ``LastRecord``): the last
    offset of its last data batch (None when no data batch is retained) and its epoch."""

    last_data_offset: int | None
    producer_epoch: int


class DataBatch(NamedTuple):
    """The header fields of a producer's data batch that the state reads."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    first_offset: int
    last_offset: int
    max_timestamp: int
    is_transactional: bool

    @property
    def last_sequence(self) -> int:
        """The batch's last sequence (wrapping at int32 max)."""
        last = self.base_sequence + (self.last_offset - self.first_offset)
        return last - INT32_MAX - 1 if last > INT32_MAX else last


class _ProducerFields(Protocol):
    """What :func:`producer_fields` reads of a v2 batch header."""

    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def base_sequence(self) -> int: ...
    @property
    def base_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def max_timestamp(self) -> int: ...
    @property
    def is_transactional(self) -> bool: ...


def producer_fields(batch: _ProducerFields) -> DataBatch:
    """The producer fields of a v2 data batch (a decoded header)."""
    return DataBatch(
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.base_offset,
        batch.last_offset,
        batch.max_timestamp,
        batch.is_transactional,
    )


@dataclass
class ProducerEntry:
    """One producer's state (Kafka's ``ProducerStateEntry``)."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int | None = None

    @property
    def last_sequence(self) -> int:
        """The last sequence written (-1 when no batch is retained)."""
        return self.batches[-1].last_sequence if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        """The last offset of the last retained data batch (-1 when none)."""
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, batch: DataBatch) -> BatchMetadata | None:
        """The retained batch ``batch`` repeats (same epoch and sequence range), if any."""
        if batch.producer_epoch != self.producer_epoch:
            return None
        last_sequence = batch.last_sequence
        for meta in self.batches:
            if meta.first_sequence == batch.base_sequence and meta.last_sequence == last_sequence:
                return meta
        return None

    def _bump_epoch(self, epoch: int) -> None:
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def end_txn(self, producer_epoch: int, coordinator_epoch: int, timestamp: int) -> None:
        """A marker was written: the transaction (if any) is over."""
        self._bump_epoch(producer_epoch)
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = timestamp
        self.current_txn_first_offset = None


def in_sequence(last_sequence: int, next_sequence: int) -> bool:
    """Whether ``next_sequence`` follows ``last_sequence`` (wrapping at int32 max)."""
    return next_sequence == last_sequence + 1 or (next_sequence == 0 and last_sequence == INT32_MAX)


def _at(where: str, batch: DataBatch) -> str:
    """An error's context (formatted only when an error is raised: appends are hot)."""
    return f"{where}: producer {batch.producer_id} at offset {batch.first_offset}"


class AppendPlan:
    """The changes one append makes, checked but not yet applied: its producers' data
    batches and markers, in order (applied by replaying them, exactly as a load would)."""

    def __init__(self) -> None:
        # per producer with batches in the plan: (epoch, last sequence, txn first offset)
        self.views: dict[int, tuple[int, int, int | None]] = {}
        self.batches: list[DataBatch] = []
        # (producer id, epoch, offset, commit, coordinator epoch, timestamp)
        self.markers: list[tuple[int, int, int, bool, int, int]] = []


class ProducerStateManager:
    """The producer state of one partition; see the module docstring."""

    def __init__(self, topic_partition: str, *, expiration_ms: int) -> None:
        self.topic_partition = topic_partition
        self.expiration_ms = expiration_ms
        self._producers: dict[int, ProducerEntry] = {}
        self._ongoing: dict[int, OngoingTxn] = {}  # by first offset
        self.last_map_offset = 0  # the state covers every offset below this one

    # --- reads ---------------------------------------------------------------------------------
    @property
    def producer_count(self) -> int:
        """Producers with state (Kafka's ``ProducerIdCount`` gauge)."""
        return len(self._producers)

    def entry(self, producer_id: int) -> ProducerEntry | None:
        """The state of ``producer_id`` (do not change it), or None."""
        return self._producers.get(producer_id)

    def producers(self) -> dict[int, ProducerEntry]:
        """Every producer's state by id (a copy of the mapping; do not change the entries)."""
        return dict(self._producers)

    def ongoing_transactions(self) -> list[OngoingTxn]:
        """Open transactions, earliest first."""
        return [self._ongoing[first] for first in sorted(self._ongoing)]

    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest open transaction, or None."""
        return min(self._ongoing) if self._ongoing else None

    def last_stable_offset(self, high_watermark: int) -> int:
        """The LSO: the first unstable offset, capped by the high watermark."""
        first = self.first_unstable_offset()
        return high_watermark if first is None else min(first, high_watermark)

    def last_records_of_active_producers(self) -> dict[int, LastRecord]:
        """For each producer with state: its last data offset (None if none) and epoch."""
        return {
            pid: LastRecord(entry.last_data_offset if entry.batches else None, entry.producer_epoch)
            for pid, entry in self._producers.items()
        }

    def snapshot_entries(self) -> list[ProducerSnapshotEntry]:
        """The state as snapshot entries (sorted by producer id)."""
        out: list[ProducerSnapshotEntry] = []
        for pid in sorted(self._producers):
            e = self._producers[pid]
            last = e.batches[-1] if e.batches else None
            out.append(
                ProducerSnapshotEntry(
                    producer_id=pid,
                    producer_epoch=e.producer_epoch,
                    last_sequence=last.last_sequence if last else NO_SEQUENCE,
                    last_offset=last.last_offset if last else -1,
                    offset_delta=last.offset_delta if last else 0,
                    timestamp=e.last_timestamp,
                    coordinator_epoch=e.coordinator_epoch,
                    current_txn_first_offset=(
                        -1 if e.current_txn_first_offset is None else e.current_txn_first_offset
                    ),
                )
            )
        return out

    # --- loading ------------------------------------------------------------------------------
    def load_snapshot(
        self, entries: list[ProducerSnapshotEntry], snapshot_offset: int, now_ms: int
    ) -> None:
        """Replace the state with a snapshot's (expired producers are left out)."""
        self._producers.clear()
        self._ongoing.clear()
        for s in entries:
            txn_first = None if s.current_txn_first_offset < 0 else s.current_txn_first_offset
            if txn_first is None and now_ms - s.timestamp >= self.expiration_ms:
                continue
            entry = ProducerEntry(
                s.producer_id,
                s.producer_epoch,
                coordinator_epoch=s.coordinator_epoch,
                last_timestamp=s.timestamp,
                current_txn_first_offset=txn_first,
            )
            if s.last_offset >= 0:
                entry.batches.append(
                    BatchMetadata(s.last_sequence, s.last_offset, s.offset_delta, s.timestamp)
                )
            self._producers[s.producer_id] = entry
            if txn_first is not None:
                self._ongoing[txn_first] = OngoingTxn(s.producer_id, s.producer_epoch, txn_first)
        self.last_map_offset = snapshot_offset

    def clear(self, offset: int) -> None:
        """Forget everything; the (empty) state covers offsets below ``offset``."""
        self._producers.clear()
        self._ongoing.clear()
        self.last_map_offset = offset

    def replay_data(self, batch: DataBatch) -> None:
        """Apply a data batch read from the log (no checks: the log is what it is)."""
        pid = batch.producer_id
        entry = self._producers.get(pid)
        if entry is None:
            entry = self._producers[pid] = ProducerEntry(pid)
        if batch.producer_epoch != entry.producer_epoch:
            entry.batches.clear()
            entry.producer_epoch = batch.producer_epoch
        last_offset = batch.last_offset
        first_offset = batch.first_offset
        entry.batches.append(
            BatchMetadata(
                batch.last_sequence, last_offset, last_offset - first_offset, batch.max_timestamp
            )
        )
        entry.last_timestamp = batch.max_timestamp
        if batch.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = first_offset
            self._ongoing[first_offset] = OngoingTxn(pid, batch.producer_epoch, first_offset)
        if last_offset >= self.last_map_offset:
            self.last_map_offset = last_offset + 1

    def replay_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        *,
        offset: int,
        commit: bool,
        coordinator_epoch: int,
        timestamp: int,
    ) -> AbortedTxn | None:
        """Apply a marker read from the log; returns the ``.txnindex`` entry it makes, if any."""
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = ProducerEntry(producer_id)
        completed = self._complete(
            entry, producer_epoch, offset, commit, coordinator_epoch, timestamp
        )
        self.last_map_offset = max(self.last_map_offset, offset + 1)
        return completed

    def _complete(
        self,
        entry: ProducerEntry,
        producer_epoch: int,
        offset: int,
        commit: bool,
        coordinator_epoch: int,
        timestamp: int,
    ) -> AbortedTxn | None:
        first = entry.current_txn_first_offset
        entry.end_txn(producer_epoch, coordinator_epoch, timestamp)
        if first is None:
            return None
        self._ongoing.pop(first, None)
        if commit:
            return None
        return AbortedTxn(
            entry.producer_id, first, offset, self._lso_after(entry.producer_id, offset)
        )

    def _lso_after(
        self, producer_id: int, marker_offset: int, ended: frozenset[int] = frozenset()
    ) -> int:
        """Kafka's ``lastStableOffset(completedTxn)``: the first offset of the earliest open
        transaction of another producer (leaving out those ``ended`` first offsets), else the
        marker's offset + 1."""
        others = [
            f
            for f, txn in self._ongoing.items()
            if txn.producer_id != producer_id and f not in ended
        ]
        return min(others) if others else marker_offset + 1

    # --- checked appends -----------------------------------------------------------------------
    def check_batch(self, plan: AppendPlan, batch: DataBatch, where: str) -> BatchMetadata | None:
        """Check a client's data batch against the state and the plan so far.

        Returns the duplicate's metadata when ``batch`` repeats a retained batch (the
        caller then writes nothing and answers those offsets), else None after adding the
        batch to ``plan``. Raises the typed producer-state errors of the module docstring.
        The common case (the next batch of a known producer) copies nothing.
        """
        pid = batch.producer_id
        first_seq = batch.base_sequence
        if first_seq < 0:
            raise InvalidRecordError(
                f"{where}: the batch at offset {batch.first_offset} has producer id {pid} but "
                f"base sequence {first_seq} (an idempotent batch starts at >= 0)"
            )
        view = plan.views.get(pid)
        if view is None:
            entry = self._producers.get(pid)
            if entry is None:
                known, current_epoch, last_seq, txn_first = False, NO_PRODUCER_EPOCH, -1, None
            else:
                known, current_epoch = True, entry.producer_epoch
                batches = entry.batches
                last_seq = batches[-1].last_sequence if batches else NO_SEQUENCE
                txn_first = entry.current_txn_first_offset
                if (
                    not (
                        batch.producer_epoch == current_epoch
                        and batches
                        and in_sequence(last_seq, first_seq)
                    )
                    and (duplicate := entry.find_duplicate(batch)) is not None
                ):
                    return duplicate
        else:
            known, current_epoch, last_seq, txn_first = True, *view
        epoch = batch.producer_epoch
        if epoch < current_epoch:
            raise InvalidProducerEpochError(
                f"{_at(where, batch)} has epoch {epoch}, older than its current epoch "
                f"{current_epoch} (the producer was fenced)"
            )
        if not known:
            if first_seq != 0:
                raise UnknownProducerIdError(
                    f"{_at(where, batch)}: this partition has no state for the producer and "
                    f"its first batch starts at sequence {first_seq}, not 0"
                )
        elif epoch != current_epoch:
            if first_seq != 0 and current_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"{_at(where, batch)}: a new epoch {epoch} (current {current_epoch}) must "
                    f"start at sequence 0, got {first_seq}"
                )
        elif last_seq != NO_SEQUENCE and not in_sequence(last_seq, first_seq):
            raise OutOfOrderSequenceError(
                f"{_at(where, batch)}: sequence {first_seq} does not follow the last sequence "
                f"{last_seq} of epoch {epoch}"
            )
        transactional = batch.is_transactional
        if txn_first is not None and not transactional:
            raise InvalidTxnStateError(
                f"{_at(where, batch)}: a non-transactional batch while the producer's "
                f"transaction from offset {txn_first} is open"
            )
        if transactional and txn_first is None:
            txn_first = batch.first_offset
        plan.views[pid] = (epoch, batch.last_sequence, txn_first)
        plan.batches.append(batch)
        return None

    def check_marker(
        self,
        plan: AppendPlan,
        producer_id: int,
        producer_epoch: int,
        *,
        offset: int,
        commit: bool,
        coordinator_epoch: int,
        timestamp: int,
        where: str,
    ) -> None:
        """Check a COMMIT/ABORT marker (WriteTxnMarkers) and add it to ``plan``."""
        entry = self._producers.get(producer_id)
        current_epoch = NO_PRODUCER_EPOCH if entry is None else entry.producer_epoch
        current_coordinator = -1 if entry is None else entry.coordinator_epoch
        at = f"{where}: marker of producer {producer_id} at offset {offset}"
        if producer_epoch < current_epoch:
            raise InvalidProducerEpochError(
                f"{at} has epoch {producer_epoch}, older than the producer's current epoch "
                f"{current_epoch} (the producer was fenced)"
            )
        if coordinator_epoch < current_coordinator:
            raise TransactionCoordinatorFencedError(
                f"{at} has coordinator epoch {coordinator_epoch}, older than "
                f"{current_coordinator} (a newer transaction coordinator wrote here)"
            )
        plan.markers.append(
            (producer_id, producer_epoch, offset, commit, coordinator_epoch, timestamp)
        )

    def aborted_by(self, plan: AppendPlan) -> list[AbortedTxn]:
        """The ``.txnindex`` entries :meth:`apply` will return for ``plan`` (markers only;
        the state is not changed), so they can be written before the markers."""
        out: list[AbortedTxn] = []
        ended: frozenset[int] = frozenset()
        for pid, _epoch, offset, commit, _coordinator, _ts in plan.markers:
            entry = self._producers.get(pid)
            first = None if entry is None else entry.current_txn_first_offset
            if first is None:
                continue
            ended |= {first}
            if not commit:
                out.append(AbortedTxn(pid, first, offset, self._lso_after(pid, offset, ended)))
        return out

    def apply(self, plan: AppendPlan, next_offset: int) -> list[AbortedTxn]:
        """Commit a checked plan (the bytes are written); returns the aborted transactions
        it completed, as ``.txnindex`` entries, in marker order."""
        for batch in plan.batches:
            self.replay_data(batch)
        aborted: list[AbortedTxn] = []
        for pid, epoch, offset, commit, coordinator_epoch, timestamp in plan.markers:
            txn = self.replay_marker(
                pid,
                epoch,
                offset=offset,
                commit=commit,
                coordinator_epoch=coordinator_epoch,
                timestamp=timestamp,
            )
            if txn is not None:
                aborted.append(txn)
        self.last_map_offset = max(self.last_map_offset, next_offset)
        return aborted

    # --- expiry --------------------------------------------------------------------------------
    def remove_expired(self, now_ms: int) -> int:
        """Forget producers with no open transaction idle for ``expiration_ms``; the count."""
        expired = [
            pid
            for pid, e in self._producers.items()
            if e.current_txn_first_offset is None
            and now_ms - e.last_timestamp >= self.expiration_ms
        ]
        for pid in expired:
            del self._producers[pid]
        return len(expired)
