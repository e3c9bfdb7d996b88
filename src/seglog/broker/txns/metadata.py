"""One transactional id's metadata and Kafka's legal transitions between its states.

A transition is made in two halves, as in Kafka's ``TransactionMetadata``: ``prepare_*`` checks
the move is legal from the current state, sets the *pending state* and returns the target as a
:class:`TxnTransit` (what is written to ``__transaction_state``); once that record is appended,
:meth:`TransactionMetadata.complete` applies it. While a transition is pending no other may be
prepared (the coordinator answers CONCURRENT_TRANSACTIONS); a failed append calls
:meth:`TransactionMetadata.abandon`.

States and the states each may be entered from (Kafka's ``validPreviousStates``):

=================  ==  =========================================  =========================
state              id  entered from                               expirable
=================  ==  =========================================  =========================
Empty              0   Empty, CompleteCommit, CompleteAbort       yes
Ongoing            1   Ongoing, Empty, CompleteCommit, CompleteAbort  no
PrepareCommit      2   Ongoing                                    no
PrepareAbort       3   Ongoing, PrepareEpochFence                 no
CompleteCommit     4   PrepareCommit                              yes
CompleteAbort      5   PrepareAbort                               yes
Dead               6   Empty, CompleteAbort, CompleteCommit       no
PrepareEpochFence  7   Ongoing                                    no
=================  ==  =========================================  =========================

Invariants: the producer epoch only grows for one producer id, and a new producer id starts at
epoch 0; partitions are non-empty only in Ongoing and Prepare*; the start timestamp is -1 in
Empty. An epoch at or above ``32766`` is *exhausted*: the next InitProducerId rotates to a new
producer id, so the coordinator can always fence with one more epoch.

Decision: only transaction protocol versions 0 and 1 are served (EndTxn up to v3), so EndTxn
never bumps the epoch (KIP-890's version 2 does); ``client_transaction_version`` is stored as 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from seglog.format.topic_names import TopicPartition
from seglog.format.txn_records import TxnState as TransactionState

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 2**15 - 1


def state_named(name: str) -> TransactionState | None:
    """The state Kafka calls ``name`` (``PrepareCommit``), or None."""
    for state in TransactionState:
        if state.kafka_name == name:
            return state
    return None


def expirable(state: TransactionState) -> bool:
    """Whether an id idle in ``state`` may expire (Kafka's ``isExpirationAllowed``)."""
    return state in _EXPIRABLE


S = TransactionState
_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
_EXPIRABLE = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})


def valid_previous_states(state: TransactionState) -> frozenset[TransactionState]:
    """The states ``state`` may be entered from."""
    return _PREVIOUS[state]


def epoch_exhausted(epoch: int) -> bool:
    """Kafka's ``isEpochExhausted``: no epoch at or above ``Short.MaxValue - 1`` is handed out."""
    return epoch >= SHORT_MAX - 1


class IllegalTransitionError(RuntimeError):
    """A transition the coordinator must never attempt (a seglog bug, as Kafka's
    IllegalStateException)."""


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """The target of a transition: exactly what one ``__transaction_state`` value holds, plus
    the last epoch (kept in memory only, as Kafka does not persist it before version 2)."""

    producer_id: int
    previous_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition]
    start_ms: int
    last_update_ms: int


class TransactionMetadata:
    """The live metadata of one transactional id (see the module docstring)."""

    def __init__(
        self,
        transactional_id: str,
        *,
        producer_id: int,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        last_producer_epoch: int = NO_PRODUCER_EPOCH,
        previous_producer_id: int = NO_PRODUCER_ID,
        next_producer_id: int = NO_PRODUCER_ID,
        timeout_ms: int,
        state: TransactionState = S.EMPTY,
        partitions: frozenset[TopicPartition] = frozenset(),
        start_ms: int = -1,
        last_update_ms: int,
    ) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.last_producer_epoch = last_producer_epoch
        self.previous_producer_id = previous_producer_id
        self.next_producer_id = next_producer_id
        self.timeout_ms = timeout_ms
        self.state = state
        self.partitions: set[TopicPartition] = set(partitions)
        self.start_ms = start_ms
        self.last_update_ms = last_update_ms
        self.pending: TransactionState | None = None
        # A fence whose append failed: its epoch was taken but never handed out, so the next
        # fence reuses it instead of bumping again (Kafka's hasFailedEpochFence).
        self.failed_epoch_fence = False

    @classmethod
    def from_transit(cls, transactional_id: str, transit: TxnTransit) -> TransactionMetadata:
        """Metadata as loaded from a stored value (no pending transition)."""
        return cls(
            transactional_id,
            producer_id=transit.producer_id,
            producer_epoch=transit.producer_epoch,
            last_producer_epoch=transit.last_producer_epoch,
            previous_producer_id=transit.previous_producer_id,
            next_producer_id=transit.next_producer_id,
            timeout_ms=transit.timeout_ms,
            state=transit.state,
            partitions=transit.partitions,
            start_ms=transit.start_ms,
            last_update_ms=transit.last_update_ms,
        )

    # -- reading ------------------------------------------------------------------------------

    @property
    def epoch_exhausted(self) -> bool:
        return epoch_exhausted(self.producer_epoch)

    @property
    def pending_in_progress(self) -> bool:
        return self.pending is not None

    def current(self) -> TxnTransit:
        """The metadata as it stands, as a value (no transition prepared)."""
        return TxnTransit(
            producer_id=self.producer_id,
            previous_producer_id=self.previous_producer_id,
            next_producer_id=self.next_producer_id,
            producer_epoch=self.producer_epoch,
            last_producer_epoch=self.last_producer_epoch,
            timeout_ms=self.timeout_ms,
            state=self.state,
            partitions=frozenset(self.partitions),
            start_ms=self.start_ms,
            last_update_ms=self.last_update_ms,
        )

    # -- preparing ----------------------------------------------------------------------------

    def prepare_fence_epoch(self) -> TxnTransit:
        """Ongoing -> PrepareEpochFence with the epoch bumped (not bumped again after a failed
        fence). The transit is never persisted: the abort that follows carries the epoch."""
        if self.producer_epoch == SHORT_MAX:
            raise IllegalTransitionError("cannot fence a producer whose epoch is Short.MaxValue")
        epoch = self.producer_epoch if self.failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(
            S.PREPARE_EPOCH_FENCE,
            epoch=epoch,
            last_epoch=NO_PRODUCER_EPOCH,
            partitions=frozenset(self.partitions),
            start_ms=self.start_ms,
            now_ms=self.last_update_ms,
        )

    def prepare_increment_epoch(
        self, timeout_ms: int, expected_epoch: int | None, now_ms: int
    ) -> TxnTransit | None:
        """InitProducerId on Empty/Complete*: the next epoch, or None when ``expected_epoch``
        is neither the current nor the last epoch (the caller answers PRODUCER_FENCED). A retry
        of a bump already made (``expected_epoch`` is the last epoch) keeps the epoch."""
        if self.epoch_exhausted:
            raise IllegalTransitionError(f"producer id {self.producer_id}: epochs exhausted")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch in (NO_PRODUCER_EPOCH, expected_epoch):
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            return None
        return self._prepare(
            S.EMPTY,
            epoch=epoch,
            last_epoch=last,
            partitions=frozenset(),
            start_ms=-1,
            now_ms=now_ms,
            timeout_ms=timeout_ms,
        )

    def prepare_rotate_producer_id(
        self, producer_id: int, timeout_ms: int, now_ms: int, *, record_last_epoch: bool
    ) -> TxnTransit:
        """InitProducerId with the epoch exhausted: a new producer id at epoch 0."""
        if self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT):
            raise IllegalTransitionError("cannot rotate producer ids while a transaction is open")
        return self._prepare(
            S.EMPTY,
            producer_id=producer_id,
            epoch=0,
            last_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            partitions=frozenset(),
            start_ms=-1,
            now_ms=now_ms,
            timeout_ms=timeout_ms,
        )

    def prepare_add_partitions(self, added: frozenset[TopicPartition], now_ms: int) -> TxnTransit:
        """AddPartitionsToTxn / AddOffsetsToTxn: Ongoing with the union of partitions; a new
        transaction starts its clock now."""
        starting = self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT)
        return self._prepare(
            S.ONGOING,
            epoch=self.producer_epoch,
            last_epoch=self.last_producer_epoch,
            partitions=frozenset(self.partitions) | added,
            start_ms=now_ms if starting else self.start_ms,
            now_ms=now_ms,
        )

    def prepare_end(self, commit: bool, now_ms: int) -> TxnTransit:
        """EndTxn: PrepareCommit or PrepareAbort with the transaction's partitions."""
        return self._prepare(
            S.PREPARE_COMMIT if commit else S.PREPARE_ABORT,
            epoch=self.producer_epoch,
            last_epoch=self.last_producer_epoch,
            partitions=frozenset(self.partitions),
            start_ms=self.start_ms,
            now_ms=now_ms,
        )

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """Markers written: CompleteCommit or CompleteAbort, no partitions."""
        self.failed_epoch_fence = False
        done = S.COMPLETE_COMMIT if self.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        return self._prepare(
            done,
            epoch=self.producer_epoch,
            last_epoch=self.producer_epoch,
            partitions=frozenset(),
            start_ms=self.start_ms,
            now_ms=now_ms,
        )

    def prepare_dead(self) -> TxnTransit:
        """Expiry: Dead (written as a tombstone, never as a value)."""
        return self._prepare(
            S.DEAD,
            epoch=self.producer_epoch,
            last_epoch=self.last_producer_epoch,
            partitions=frozenset(),
            start_ms=self.start_ms,
            now_ms=self.last_update_ms,
        )

    def _prepare(
        self,
        state: TransactionState,
        *,
        epoch: int,
        last_epoch: int,
        partitions: frozenset[TopicPartition],
        start_ms: int,
        now_ms: int,
        producer_id: int | None = None,
        timeout_ms: int | None = None,
    ) -> TxnTransit:
        if self.pending is not None:
            raise IllegalTransitionError(
                f"{self.transactional_id}: preparing {state.kafka_name} while "
                f"{self.pending.kafka_name} is pending"
            )
        new_id = self.producer_id if producer_id is None else producer_id
        if new_id < 0:
            raise IllegalTransitionError(f"illegal new producer id {new_id}")
        if state is not S.DEAD and epoch < 0:
            raise IllegalTransitionError(f"illegal new producer epoch {epoch}")
        if self.state not in _PREVIOUS[state]:
            raise IllegalTransitionError(
                f"{self.transactional_id}: {self.state.kafka_name} -> {state.kafka_name} "
                "is not a legal transition"
            )
        self.pending = state
        return TxnTransit(
            producer_id=new_id,
            previous_producer_id=self.producer_id,
            next_producer_id=NO_PRODUCER_ID,
            producer_epoch=epoch,
            last_producer_epoch=last_epoch,
            timeout_ms=self.timeout_ms if timeout_ms is None else timeout_ms,
            state=state,
            partitions=partitions,
            start_ms=start_ms,
            last_update_ms=now_ms,
        )

    # -- completing ---------------------------------------------------------------------------

    def abandon(self) -> None:
        """The pending transition's append failed: forget it."""
        self.pending = None

    def complete(self, transit: TxnTransit) -> None:
        """Apply a prepared transition whose record was appended (Kafka's
        ``completeTransitionTo``, with its consistency checks)."""
        target = self.pending
        if target is None or target is not transit.state:
            self._fail(transit)
        if target is S.EMPTY:
            bump_ok = transit.producer_epoch == self.producer_epoch + 1 or (
                transit.producer_epoch == 0 and transit.producer_id != self.producer_id
            )
            if (
                (transit.producer_epoch != self.producer_epoch and not bump_ok)
                or transit.partitions
                or transit.start_ms != -1
            ):
                self._fail(transit)
            self.timeout_ms = transit.timeout_ms
            self.producer_epoch = transit.producer_epoch
            self.last_producer_epoch = transit.last_producer_epoch
            self.producer_id = transit.producer_id
            self.previous_producer_id = transit.previous_producer_id
        elif target is S.ONGOING:
            if (
                not self._same_producer(transit)
                or not self.partitions <= transit.partitions
                or self.timeout_ms != transit.timeout_ms
            ):
                self._fail(transit)
            self.start_ms = transit.start_ms
            self.partitions |= transit.partitions
        elif target in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            if (
                not self._same_producer(transit)
                or self.partitions != transit.partitions
                or self.timeout_ms != transit.timeout_ms
                or self.start_ms != transit.start_ms
            ):
                self._fail(transit)
        elif target in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            if (
                not self._same_producer(transit)
                or self.timeout_ms != transit.timeout_ms
                or transit.start_ms == -1
            ):
                self._fail(transit)
            self.start_ms = transit.start_ms
            self.partitions.clear()
        else:  # PrepareEpochFence and Dead are never completed
            self._fail(transit)
        self.last_update_ms = transit.last_update_ms
        self.pending = None
        self.state = target

    def _same_producer(self, transit: TxnTransit) -> bool:
        return (
            transit.producer_epoch == self.producer_epoch
            and transit.producer_id == self.producer_id
        )

    def _fail(self, transit: TxnTransit) -> NoReturn:
        raise IllegalTransitionError(
            f"{self.transactional_id}: cannot complete the transition to {transit} from "
            f"{self.state.kafka_name} (pending "
            f"{self.pending.kafka_name if self.pending else None})"
        )

    def fence_in_place(self, epoch: int) -> None:
        """The abort of a fence: the bumped epoch is taken in memory before PrepareAbort is
        prepared (Kafka's endTransaction for a PrepareEpochFence pending state)."""
        self.pending = None
        self.producer_epoch = epoch
        self.last_producer_epoch = NO_PRODUCER_EPOCH


__all__ = [
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "IllegalTransitionError",
    "TransactionMetadata",
    "TransactionState",
    "TxnTransit",
    "epoch_exhausted",
    "expirable",
    "state_named",
    "valid_previous_states",
]
