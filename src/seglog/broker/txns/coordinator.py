"""Kafka's transaction coordinator as a sans-I/O state machine (no sockets, no files, no clock).

The caller (``seglog.broker.txn_service``) feeds requests with ``now_ms`` and performs the
effects of the returned :class:`Step` (see ``model.py``), acknowledging each. Requests that
write to ``__transaction_state`` return a :class:`Pending` ticket answered by a later step:

* ``init_producer_id``: a new id at epoch 0, an epoch bump, a new producer id when the epoch is
  exhausted, or, for an Ongoing transaction, a fence: the epoch is bumped, the transaction is
  aborted with it (PrepareAbort, markers, CompleteAbort) and the caller is answered
  CONCURRENT_TRANSACTIONS, so its retry gets the next epoch;
* ``add_partitions`` (AddPartitionsToTxn, and AddOffsetsToTxn with the group's
  ``__consumer_offsets`` partition): Ongoing with the partitions added;
* ``end_txn``: PrepareCommit/PrepareAbort is persisted and answered, then the markers are
  written and Complete* persisted.

``abort_timed_out`` fences and aborts every Ongoing transaction older than its timeout;
``expire`` removes ids idle for ``transactional.id.expiration.ms`` in Empty/Complete*;
``restore`` rebuilds the state from loaded values and completes Prepare* transactions. Until
``restore`` is called every request answers COORDINATOR_LOAD_IN_PROGRESS.

Error codes follow Kafka's ``TransactionCoordinator`` checks, in its order. A Complete* record
whose append failed is retried by the next ``abort_timed_out`` (the transaction stays in
Prepare* meanwhile and answers CONCURRENT_TRANSACTIONS, as in Kafka).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from seglog.broker.txns import views
from seglog.broker.txns.metadata import (
    NO_PRODUCER_EPOCH,
    IllegalTransitionError,
    TransactionMetadata,
    TransactionState,
    TxnTransit,
    epoch_exhausted,
    expirable,
)
from seglog.broker.txns.model import (
    Completion,
    InitResult,
    Pending,
    PersistTxn,
    RemoveTxnIds,
    Step,
    TxnDescription,
    TxnListing,
    WriteMarkers,
)
from seglog.broker.txns.txn_config import TransactionConfig
from seglog.format.topic_names import TopicPartition
from seglog.protocol.error_codes import ErrorCode

S = TransactionState
E = ErrorCode


@dataclass(slots=True)
class _Wait:
    """What an outstanding persist completes: ``kind`` is init, add, end, fence or complete."""

    kind: str
    transactional_id: str
    transit: TxnTransit
    ticket: int | None


class TransactionCoordinator:
    """Every transactional id of this broker; see the module docstring."""

    def __init__(
        self,
        config: TransactionConfig | None = None,
        *,
        new_producer_id: Callable[[], int | None],
    ) -> None:
        self.config = config or TransactionConfig()
        self._new_producer_id = new_producer_id
        self._txns: dict[str, TransactionMetadata] = {}
        self._waits: dict[int, _Wait] = {}
        self._markers: dict[int, tuple[str, TxnTransit]] = {}
        self._removals: dict[int, tuple[str, ...]] = {}
        self._retry: list[tuple[str, TxnTransit]] = []
        self._next_id = 0
        self.loaded = False

    # -- inspection ---------------------------------------------------------------------------

    def metadata(self, transactional_id: str) -> TransactionMetadata | None:
        """The id's live metadata (read it, do not change it), or None."""
        return self._txns.get(transactional_id)

    def transactional_ids(self) -> list[str]:
        return list(self._txns)

    def outstanding(self) -> int:
        """Effects issued and not acknowledged yet."""
        return len(self._waits) + len(self._markers) + len(self._removals)

    # -- start-up -----------------------------------------------------------------------------

    def restore(self, entries: Mapping[str, TxnTransit], now_ms: int) -> Step:
        """Rebuild from the last stored value of each id; Prepare* transactions get their
        markers written and complete (Kafka's loading of a transaction log partition)."""
        step = Step()
        for transactional_id, transit in entries.items():
            if transit.state is S.DEAD:
                continue
            metadata = TransactionMetadata.from_transit(transactional_id, transit)
            self._txns[transactional_id] = metadata
            if transit.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                self._send_markers(step, metadata, metadata.prepare_complete(now_ms))
        self.loaded = True
        return step

    # -- InitProducerId -----------------------------------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected: tuple[int, int] | None,
        now_ms: int,
    ) -> Pending:
        """InitProducerId with a transactional id; ``expected`` is the request's (producer
        id, epoch) when it names one (v3+)."""
        ticket = self._ticket()
        step = Step()
        error = self._init(step, ticket, transactional_id, timeout_ms, expected, now_ms)
        if error is not None:
            step.completions.append(Completion(ticket, InitResult(error)))
        return Pending(ticket, step)

    def _init(
        self,
        step: Step,
        ticket: int,
        transactional_id: str,
        timeout_ms: int,
        expected: tuple[int, int] | None,
        now_ms: int,
    ) -> ErrorCode | None:
        if not self.loaded:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        if not transactional_id:
            return E.INVALID_REQUEST
        if not self.config.valid_timeout(timeout_ms):
            return E.INVALID_TRANSACTION_TIMEOUT
        metadata = self._txns.get(transactional_id)
        if metadata is None:
            producer_id = self._new_producer_id()
            if producer_id is None:
                return E.COORDINATOR_NOT_AVAILABLE
            metadata = TransactionMetadata(
                transactional_id,
                producer_id=producer_id,
                timeout_ms=timeout_ms,
                last_update_ms=now_ms,
            )
            self._txns[transactional_id] = metadata
        if metadata.pending_in_progress:
            return E.CONCURRENT_TRANSACTIONS
        if expected is not None and not (
            metadata.producer_epoch == NO_PRODUCER_EPOCH
            or expected[0] == metadata.producer_id
            or (expected[0] == metadata.previous_producer_id and epoch_exhausted(expected[1]))
        ):
            return E.PRODUCER_FENCED
        state = metadata.state
        if state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            return E.CONCURRENT_TRANSACTIONS
        if state is S.ONGOING:
            fence = metadata.prepare_fence_epoch()
            return self._end(
                step,
                ticket,
                transactional_id,
                fence.producer_id,
                fence.producer_epoch,
                commit=False,
                from_client=False,
                now_ms=now_ms,
            )
        if state not in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT):
            raise IllegalTransitionError(f"{transactional_id} found in state {state.kafka_name}")
        if metadata.epoch_exhausted and (
            expected is None or expected[1] == metadata.producer_epoch
        ):
            producer_id = self._new_producer_id()
            if producer_id is None:
                return E.COORDINATOR_NOT_AVAILABLE
            transit: TxnTransit | None = metadata.prepare_rotate_producer_id(
                producer_id, timeout_ms, now_ms, record_last_epoch=expected is not None
            )
        else:
            transit = metadata.prepare_increment_epoch(
                timeout_ms, None if expected is None else expected[1], now_ms
            )
            if transit is None:
                return E.PRODUCER_FENCED
        assert transit is not None
        self._persist(step, "init", transactional_id, transit, ticket)
        return None

    # -- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------------

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        now_ms: int,
    ) -> Pending:
        """Add partitions to the producer's transaction (starting one if none is open)."""
        ticket = self._ticket()
        step = Step()
        added = frozenset(partitions)
        error = self._check_producer(transactional_id, producer_id, producer_epoch)
        metadata = self._txns.get(transactional_id)
        if error is None and metadata is not None:
            if metadata.pending_in_progress or metadata.state in (
                S.PREPARE_COMMIT,
                S.PREPARE_ABORT,
            ):
                error = E.CONCURRENT_TRANSACTIONS
            elif metadata.state is S.ONGOING and added <= metadata.partitions:
                error = E.NONE
            else:
                transit = metadata.prepare_add_partitions(added, now_ms)
                self._persist(step, "add", transactional_id, transit, ticket)
        if error is not None:
            step.completions.append(Completion(ticket, error))
        return Pending(ticket, step)

    def verify(
        self, transactional_id: str, producer_id: int, producer_epoch: int, tp: TopicPartition
    ) -> ErrorCode:
        """Whether a transactional produce to ``tp`` belongs to the producer's open
        transaction (Kafka's handleVerifyPartitionsInTransaction for one partition)."""
        error = self._check_producer(transactional_id, producer_id, producer_epoch)
        if error is not None:
            return error
        metadata = self._txns[transactional_id]
        if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return E.CONCURRENT_TRANSACTIONS
        return E.NONE if tp in metadata.partitions else E.TRANSACTION_ABORTABLE

    def _check_producer(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> ErrorCode | None:
        if not self.loaded:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        if not transactional_id:
            return E.INVALID_REQUEST
        metadata = self._txns.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return E.PRODUCER_FENCED
        return None

    # -- EndTxn -------------------------------------------------------------------------------

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        *,
        commit: bool,
        now_ms: int,
    ) -> Pending:
        """EndTxn from the client: answered once Prepare* is persisted (markers follow)."""
        ticket = self._ticket()
        step = Step()
        if not self.loaded:
            error: ErrorCode | None = E.COORDINATOR_LOAD_IN_PROGRESS
        else:
            error = self._end(
                step,
                ticket,
                transactional_id,
                producer_id,
                producer_epoch,
                commit=commit,
                from_client=True,
                now_ms=now_ms,
            )
        if error is not None:
            step.completions.append(Completion(ticket, error))
        return Pending(ticket, step)

    def _end(
        self,
        step: Step,
        ticket: int | None,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        *,
        commit: bool,
        from_client: bool,
        now_ms: int,
    ) -> ErrorCode | None:
        """Kafka's endTransaction: an error to answer now, or None when a persist was issued."""
        if not transactional_id:
            return E.INVALID_REQUEST
        metadata = self._txns.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        valid_epoch = (
            not from_client or producer_epoch == metadata.producer_epoch
        ) and producer_epoch >= metadata.producer_epoch
        if not valid_epoch:
            return E.PRODUCER_FENCED
        fencing = metadata.pending is S.PREPARE_EPOCH_FENCE
        if metadata.pending_in_progress and not fencing:
            return E.CONCURRENT_TRANSACTIONS
        state = metadata.state
        if state is S.ONGOING:
            if fencing:
                metadata.fence_in_place(producer_epoch)
            transit = metadata.prepare_end(commit, now_ms)
            kind = "fence" if fencing else "end"
            self._persist(step, kind, transactional_id, transit, ticket)
            return None
        if fencing:
            metadata.abandon()
        if state is S.COMPLETE_COMMIT or state is S.COMPLETE_ABORT:
            same = commit == (state is S.COMPLETE_COMMIT)
            return E.NONE if same else E.INVALID_TXN_STATE
        if state is S.PREPARE_COMMIT or state is S.PREPARE_ABORT:
            same = commit == (state is S.PREPARE_COMMIT)
            return E.CONCURRENT_TRANSACTIONS if same else E.INVALID_TXN_STATE
        if state is S.EMPTY:
            return E.INVALID_TXN_STATE
        raise IllegalTransitionError(f"{transactional_id} found in state {state.kafka_name}")

    # -- timers -------------------------------------------------------------------------------

    def abort_timed_out(self, now_ms: int) -> Step:
        """Fence and abort every Ongoing transaction open longer than its timeout; retry the
        Complete* records whose append failed."""
        step = Step()
        retry, self._retry = self._retry, []
        for transactional_id, transit in retry:
            self._persist(step, "complete", transactional_id, transit, None)
        if not self.loaded:
            return step
        for transactional_id, metadata in list(self._txns.items()):
            if (
                metadata.pending_in_progress
                or metadata.state is not S.ONGOING
                or metadata.start_ms + metadata.timeout_ms >= now_ms
            ):
                continue
            fence = metadata.prepare_fence_epoch()
            self._end(
                step,
                None,
                transactional_id,
                fence.producer_id,
                fence.producer_epoch,
                commit=False,
                from_client=False,
                now_ms=now_ms,
            )
        return step

    def expire(self, now_ms: int) -> Step:
        """Tombstones for ids idle past ``transactional.id.expiration.ms`` (Empty/Complete*)."""
        step = Step()
        cutoff = now_ms - self.config.transactional_id_expiration_ms
        expired: list[str] = []
        for transactional_id, metadata in self._txns.items():
            if (
                not metadata.pending_in_progress
                and expirable(metadata.state)
                and metadata.last_update_ms <= cutoff
            ):
                metadata.prepare_dead()
                expired.append(transactional_id)
        if expired:
            remove_id = self._ticket()
            self._removals[remove_id] = tuple(expired)
            step.effects.append(RemoveTxnIds(remove_id, tuple(expired)))
        return step

    # -- acknowledgements ---------------------------------------------------------------------

    def persisted(self, persist_id: int, error: ErrorCode, now_ms: int) -> Step:
        """The caller appended (``error`` NONE) or failed to append a :class:`PersistTxn`."""
        wait = self._waits.pop(persist_id)
        step = Step()
        metadata = self._txns.get(wait.transactional_id)
        if metadata is None:  # removed meanwhile: nothing to complete
            return step
        if error is not E.NONE:
            if wait.kind == "complete":
                self._retry.append((wait.transactional_id, wait.transit))
                return step
            if wait.kind == "fence":
                metadata.failed_epoch_fence = True
            metadata.abandon()
            if wait.ticket is not None:
                result = InitResult(error) if wait.kind in ("init", "fence") else error
                step.completions.append(Completion(wait.ticket, result))
            return step
        metadata.complete(wait.transit)
        if wait.kind == "init" and wait.ticket is not None:
            answer = InitResult(E.NONE, metadata.producer_id, metadata.producer_epoch)
            step.completions.append(Completion(wait.ticket, answer))
        elif wait.kind in ("end", "fence"):
            if wait.ticket is not None:
                answer_end = E.NONE if wait.kind == "end" else E.CONCURRENT_TRANSACTIONS
                step.completions.append(
                    Completion(
                        wait.ticket, InitResult(answer_end) if wait.kind == "fence" else answer_end
                    )
                )
            self._send_markers(step, metadata, metadata.prepare_complete(now_ms))
        elif wait.kind == "add" and wait.ticket is not None:
            step.completions.append(Completion(wait.ticket, E.NONE))
        return step

    def markers_written(self, markers_id: int, now_ms: int) -> Step:
        """Every marker of a :class:`WriteMarkers` is written: persist Complete*."""
        transactional_id, transit = self._markers.pop(markers_id)
        step = Step()
        self._persist(step, "complete", transactional_id, transit, None)
        return step

    def removed(self, remove_id: int, error: ErrorCode, now_ms: int) -> Step:
        """The tombstones of a :class:`RemoveTxnIds` were written (or failed)."""
        for transactional_id in self._removals.pop(remove_id):
            metadata = self._txns.get(transactional_id)
            if metadata is None or metadata.pending is not S.DEAD:
                continue
            if error is E.NONE:
                del self._txns[transactional_id]
            else:
                metadata.abandon()
        return Step()

    # -- DescribeTransactions / ListTransactions ------------------------------------------------

    def describe(self, transactional_id: str) -> TxnDescription:
        """DescribeTransactions for one id."""
        if not self.loaded:
            return TxnDescription(transactional_id, E.COORDINATOR_LOAD_IN_PROGRESS)
        return views.describe(self._txns, transactional_id)

    def list_transactions(
        self,
        state_filters: Iterable[str],
        producer_id_filters: Iterable[int],
        duration_filter_ms: int,
        now_ms: int,
    ) -> TxnListing:
        """ListTransactions: filters by state name, producer id and (v1) minimum age."""
        if not self.loaded:
            return TxnListing(E.COORDINATOR_LOAD_IN_PROGRESS)
        return views.list_transactions(
            self._txns.values(), state_filters, producer_id_filters, duration_filter_ms, now_ms
        )

    # -- internals ----------------------------------------------------------------------------

    def _ticket(self) -> int:
        self._next_id += 1
        return self._next_id

    def _persist(
        self, step: Step, kind: str, transactional_id: str, transit: TxnTransit, ticket: int | None
    ) -> None:
        persist_id = self._ticket()
        self._waits[persist_id] = _Wait(kind, transactional_id, transit, ticket)
        step.effects.append(PersistTxn(persist_id, transactional_id, transit))

    def _send_markers(
        self, step: Step, metadata: TransactionMetadata, complete: TxnTransit
    ) -> None:
        markers_id = self._ticket()
        self._markers[markers_id] = (metadata.transactional_id, complete)
        step.effects.append(
            WriteMarkers(
                markers_id,
                metadata.transactional_id,
                metadata.producer_id,
                metadata.producer_epoch,
                commit=complete.state is S.COMPLETE_COMMIT,
                partitions=tuple(sorted(metadata.partitions)),
            )
        )
