"""A stateful model test of the transaction coordinator: random clients, failures, restarts.

Hypothesis drives two transactional ids through InitProducerId (with and without the current
producer id and epoch), AddPartitionsToTxn, EndTxn (with current and stale epochs), time
passing (timeout aborts), expiry, failed ``__transaction_state`` appends and restarts (a new
coordinator restored from what was appended). After every step:

* every ticket was answered exactly once, and nothing is left unacknowledged;
* a producer id's epochs handed out only grow;
* every transaction that reached PrepareCommit/PrepareAbort got its markers, with the same
  commit/abort result, before its Complete record;
* what the coordinator holds equals the last value appended for the id (when no transition
  is pending), so a restart loses nothing.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from txn_harness import TP0, TP1, TxnHarness

from seglog.broker.txns.coordinator import TransactionCoordinator
from seglog.broker.txns.metadata import TransactionState, TxnTransit
from seglog.broker.txns.model import InitResult
from seglog.broker.txns.txn_config import TransactionConfig
from seglog.format.topic_names import TopicPartition
from seglog.protocol.error_codes import ErrorCode

S = TransactionState
IDS = st.sampled_from(["a", "b"])
PARTITIONS = st.sets(st.sampled_from([TP0, TP1, TopicPartition("other", 0)]), min_size=1)


class CoordinatorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        config = TransactionConfig(transactional_id_expiration_ms=500_000)
        self.h = TxnHarness(config=config)
        self.h.restore()
        self.known: dict[str, tuple[int, int]] = {}  # what each id's client was last given
        self.highest: dict[int, int] = {}  # producer id -> highest epoch handed out

    # -- clients -------------------------------------------------------------------------------

    @rule(txn_id=IDS, name_current=st.booleans())
    def init(self, txn_id: str, name_current: bool) -> None:
        expected = self.known.get(txn_id) if name_current else None
        result = self.h.init(txn_id, 60_000, expected)
        assert isinstance(result, InitResult)
        if result.error is ErrorCode.NONE:
            previous = self.highest.get(result.producer_id, -1)
            assert result.producer_epoch > previous, (result, previous)
            self.highest[result.producer_id] = result.producer_epoch
            self.known[txn_id] = (result.producer_id, result.producer_epoch)
        else:
            assert result.error in (
                ErrorCode.CONCURRENT_TRANSACTIONS,
                ErrorCode.PRODUCER_FENCED,
                ErrorCode.NOT_COORDINATOR,
            ), result

    @rule(txn_id=IDS, partitions=PARTITIONS, stale=st.booleans())
    def add(self, txn_id: str, partitions: set[TopicPartition], stale: bool) -> None:
        if txn_id not in self.known:
            return
        pid, epoch = self.known[txn_id]
        code = self.h.add(pid, epoch - 1 if stale else epoch, *sorted(partitions), txn_id=txn_id)
        assert code is not None
        if stale:
            assert code in (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_ID_MAPPING)

    @rule(txn_id=IDS, commit=st.booleans(), stale=st.booleans())
    def end(self, txn_id: str, commit: bool, stale: bool) -> None:
        if txn_id not in self.known:
            return
        pid, epoch = self.known[txn_id]
        code = self.h.end(pid, epoch - 1 if stale else epoch, commit=commit, txn_id=txn_id)
        assert code is not None
        if stale:
            assert code in (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_ID_MAPPING)

    # -- the server ----------------------------------------------------------------------------

    @rule(ms=st.sampled_from([0, 1_000, 61_000, 600_000]))
    def time_passes(self, ms: int) -> None:
        self.h.now += ms
        self.h.run(self.h.coord.abort_timed_out(self.h.now))
        self.h.run(self.h.coord.expire(self.h.now))

    @rule()
    def next_append_fails(self) -> None:
        self.h.fail_next = ErrorCode.NOT_COORDINATOR

    @rule()
    def restart(self) -> None:
        """A new coordinator over what was appended (the last value of each id; the last epoch
        is not stored)."""
        self.h.fail_next = None
        last: dict[str, TxnTransit] = {}
        for txn_id, value in self.h.log:
            if value is None:
                last.pop(txn_id, None)
            else:
                last[txn_id] = replace(value, last_producer_epoch=-1)
        self.h.coord = TransactionCoordinator(
            self.h.config, new_producer_id=lambda: next(self.h.ids)
        )
        self.h.answers = {}  # the new coordinator numbers its tickets from 1 again
        self.h.run(self.h.coord.restore(last, self.h.now))

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def nothing_outstanding(self) -> None:
        assert self.h.coord.outstanding() == 0

    @invariant()
    def markers_precede_completion(self) -> None:
        markers = iter(self.h.markers)
        prepared: dict[str, bool] = {}
        for txn_id, value in self.h.log:
            if value is None:
                continue
            if value.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                prepared[txn_id] = value.state is S.PREPARE_COMMIT
            elif value.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
                commit = prepared.pop(txn_id)
                assert commit == (value.state is S.COMPLETE_COMMIT)
                marker = next(m for m in markers if m.transactional_id == txn_id)
                assert marker.commit == commit

    @invariant()
    def memory_matches_the_log(self) -> None:
        for txn_id in self.h.coord.transactional_ids():
            metadata = self.h.coord.metadata(txn_id)
            assert metadata is not None
            if metadata.pending_in_progress or metadata.failed_epoch_fence:
                continue
            stored = self.h.last_value(txn_id)
            if stored is None:  # allocated, never appended (the append failed)
                assert metadata.state is S.EMPTY
                continue
            assert (stored.state, stored.producer_id, stored.producer_epoch) == (
                metadata.state,
                metadata.producer_id,
                metadata.producer_epoch,
            )
            assert stored.partitions == frozenset(metadata.partitions)


CoordinatorMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40)
TestCoordinatorModel = CoordinatorMachine.TestCase
