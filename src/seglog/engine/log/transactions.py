"""A partition log's producer state and transactions: Kafka's ``UnifiedLog`` producer parts.

* **Loading**: a writable log builds its :class:`ProducerStateManager` at open: the newest
  valid ``.snapshot`` at or below the recovery point (a damaged one is reported in the load
  report, removed, and the next older one tried), then the batches after it replayed up to
  the log end offset. With no snapshot after a clean shutdown the log holds no producer state
  (nothing is scanned, as Kafka); after an unclean one it is rebuilt from the log start. A
  read-only log builds it on first use, so reads that never ask for it (``read_uncommitted``)
  never pay for a scan.
* **Snapshots** are written at every roll (the new segment's base offset) and at a clean
  close (the log end offset) once the partition has producer state or snapshots; a partition
  that never saw a producer id writes none (what Kafka's loader accepts: no snapshot after a
  clean shutdown is an empty state). Snapshots go with their segments (retention,
  DeleteRecords, truncation) and those above the log end offset are removed on load.
* **Markers**: :meth:`LogTransactions.append_marker` writes a COMMIT or ABORT control batch
  (the transaction coordinator's WriteTxnMarkers); an ABORT of a transaction with data adds
  the ``.txnindex`` entry to the active segment after the marker is written.
* **Last stable offset**: the first offset of the earliest open transaction, or the high
  watermark; ``read_committed`` readers stop there.
"""

from __future__ import annotations

from seglog.core.append_validation import LEADER_EPOCH
from seglog.core.producer_state import AppendPlan, LastRecord, OngoingTxn, ProducerStateManager
from seglog.engine.log.append_info import LogAppendInfo
from seglog.engine.log.log_state import LogState
from seglog.format.control import build_end_txn_marker_batch
from seglog.format.txn_index import AbortedTxn
from seglog.storage.producer_snapshots import list_snapshot_offsets, write_snapshot
from seglog.storage.producer_state_replay import rebuild_producer_state

DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000


class LogTransactions(LogState):
    """Producer state, snapshots, markers and the LSO of a partition log."""

    _producer_state: ProducerStateManager | None
    _producer_id_expiration_ms: int
    _writes_snapshots: bool
    _had_clean_shutdown: bool
    _initial_recovery_point: int

    # --- the state -------------------------------------------------------------------------------
    @property
    def producer_state(self) -> ProducerStateManager:
        """The partition's producer state (built on first use for a read-only log); read it,
        never change it from outside the log."""
        state = self._producer_state
        if state is None:
            with self._lock:
                state = self._producer_state
                if state is None:
                    state = self._load_producer_state()
                    self._producer_state = state
        return state

    def _load_producer_state(self) -> ProducerStateManager:
        """Snapshot + replay up to the log end offset (see the module docstring)."""
        state = ProducerStateManager(
            str(self.topic_partition), expiration_ms=self._producer_id_expiration_ms
        )
        snapshots = list_snapshot_offsets(self.directory)
        self._writes_snapshots = bool(snapshots)
        if not snapshots and self._had_clean_shutdown:
            state.clear(self.log_end_offset)
            return state
        problems: list[str] = []
        rebuild_producer_state(
            state,
            self.directory,
            self._list.segments,
            log_start_offset=self.log_start_offset,
            up_to=self.log_end_offset,
            now_ms=self.clock.now_ms(),
            trust_snapshots_below=self._initial_recovery_point,
            remove_damaged=self.writable,
            problems=problems,
        )
        self.load_report.snapshot_problems.extend(problems)
        if state.producer_count:
            self._writes_snapshots = True
        return state

    def _reload_producer_state(self) -> None:
        """Rebuild the state after a truncation (snapshots above the new end are gone)."""
        self._producer_state = None
        self._initial_recovery_point = min(self._initial_recovery_point, self.log_end_offset)
        self._had_clean_shutdown = False
        _ = self.producer_state

    # --- views ---------------------------------------------------------------------------------
    @property
    def last_stable_offset(self) -> int:
        """The first offset of the earliest open transaction, or the high watermark."""
        return self.producer_state.last_stable_offset(self.high_watermark)

    def ongoing_transactions(self) -> list[OngoingTxn]:
        """The open transactions, earliest first."""
        return self.producer_state.ongoing_transactions()

    def last_records_of_active_producers(self) -> dict[int, LastRecord]:
        """What the cleaner keeps for each producer with state (Kafka's
        ``lastRecordsOfActiveProducers``)."""
        with self._lock:
            return self.producer_state.last_records_of_active_producers()

    def aborted_transactions(self, start_offset: int, end_offset: int) -> list[AbortedTxn]:
        """Every ``.txnindex`` entry with ``last_offset >= start_offset`` and ``first_offset
        < end_offset``, over the segments, in order (a fetch's aborted-transactions list)."""
        out: list[AbortedTxn] = []
        segments = self._list.segments
        for i, segment in enumerate(segments):
            upper = segments[i + 1].base_offset if i + 1 < len(segments) else None
            if upper is not None and upper <= start_offset:
                continue  # every marker of this segment lies below start_offset
            for txn in segment.txn_index.entries():
                if txn.last_offset >= start_offset and txn.first_offset < end_offset:
                    out.append(txn)
        return out

    # --- markers -------------------------------------------------------------------------------
    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        *,
        commit: bool,
        coordinator_epoch: int,
    ) -> LogAppendInfo:
        """Write a COMMIT or ABORT marker for the producer's transaction, as a transaction
        coordinator's WriteTxnMarkers has the leader do (one 78-byte control batch at the log
        end). The producer's open transaction (if any) ends; an aborted one with data gets
        its ``.txnindex`` entry once the marker is written. Raises
        ``InvalidProducerEpochError`` for an epoch older than the producer's and
        ``TransactionCoordinatorFencedError`` for an older coordinator epoch."""
        with self._lock:
            self._check_writable()
            now_ms = self.clock.now_ms()
            offset = self.log_end_offset
            plan = AppendPlan()
            self.producer_state.check_marker(
                plan,
                producer_id,
                producer_epoch,
                offset=offset,
                commit=commit,
                coordinator_epoch=coordinator_epoch,
                timestamp=now_ms,
                where=self._append_where,
            )
            batch = build_end_txn_marker_batch(
                producer_id,
                producer_epoch,
                commit=commit,
                coordinator_epoch=coordinator_epoch,
                timestamp_ms=now_ms,
                base_offset=offset,
                partition_leader_epoch=LEADER_EPOCH,
            )
            rolled = self._maybe_roll(len(batch), now_ms, offset, now_ms)
            if not self._epochs:
                self._assign_epoch(offset)
            self.active_segment.append([batch], len(batch), [(0, len(batch), offset, now_ms)])
            self.log_end_offset = offset + 1
            for txn in self.producer_state.apply(plan, self.log_end_offset):
                self.active_segment.txn_index.append(txn)
            if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
                self.flush()
            return LogAppendInfo(offset, offset, now_ms, -1, 1, 1, len(batch), rolled)

    # --- snapshots -----------------------------------------------------------------------------
    def _maybe_write_snapshot(self, offset: int, *, durable: bool) -> None:
        """Write the state as the snapshot at ``offset`` (roll, close), when this partition
        keeps snapshots (see the module docstring); a roll's is made durable by the flush
        that follows it, a close's at once."""
        state = self._producer_state
        if state is None or not (self._writes_snapshots or state.producer_count):
            return
        write_snapshot(self.directory, offset, state.snapshot_entries(), durable=durable)
        self._writes_snapshots = True

    def remove_expired_producers(self) -> int:
        """Forget producers idle for ``producer.id.expiration.ms`` with no open transaction
        (the LogManager's periodic check); returns how many."""
        with self._lock:
            if self._producer_state is None:
                return 0
            return self._producer_state.remove_expired(self.clock.now_ms())
