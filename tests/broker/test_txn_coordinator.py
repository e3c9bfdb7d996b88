"""The transaction coordinator's flows and error codes (Kafka's TransactionCoordinatorTest
semantics), driven by an in-memory caller and a manual clock."""

from __future__ import annotations

from txn_harness import T0, TP0, TP1, TxnHarness

from seglog.broker.txns.metadata import TransactionState, TxnTransit
from seglog.broker.txns.model import InitResult
from seglog.broker.txns.txn_config import TransactionConfig
from seglog.format.topic_names import TopicPartition
from seglog.protocol.error_codes import ErrorCode

E = ErrorCode
S = TransactionState


def ready(**kwargs: object) -> tuple[TxnHarness, int]:
    """A restored coordinator with id ``t`` initialised at epoch 0; returns its producer id."""
    h = TxnHarness(**kwargs)  # type: ignore[arg-type]
    h.restore()
    result = h.init()
    assert result is not None and result.error is E.NONE and result.producer_epoch == 0
    return h, result.producer_id


def test_requests_before_loading_answer_load_in_progress() -> None:
    h = TxnHarness()
    assert h.init() == InitResult(E.COORDINATOR_LOAD_IN_PROGRESS)
    assert h.add(1, 0) is E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.end(1, 0, commit=True) is E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.coord.describe("t").error is E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.coord.list_transactions([], [], -1, T0).error is E.COORDINATOR_LOAD_IN_PROGRESS


def test_init_validates_id_and_timeout() -> None:
    h = TxnHarness(config=TransactionConfig(max_timeout_ms=10_000))
    h.restore()
    assert h.init("") == InitResult(E.INVALID_REQUEST)
    assert h.init(timeout_ms=10_001) == InitResult(E.INVALID_TRANSACTION_TIMEOUT)
    assert h.init(timeout_ms=0) == InitResult(E.INVALID_TRANSACTION_TIMEOUT)
    assert h.log == []


def test_init_allocates_then_bumps_and_persists_each_answer() -> None:
    h, pid = ready()
    assert pid == 1000
    value = h.last_value()
    assert value is not None and (value.state, value.producer_epoch, value.start_ms) == (
        S.EMPTY,
        0,
        -1,
    )
    assert h.init() == InitResult(E.NONE, pid, 1)
    assert h.init(expected=(pid, 1)) == InitResult(E.NONE, pid, 2)
    # an unknown producer id is fenced; so is an epoch that is neither current nor last
    assert h.init(expected=(pid + 5, 2)) == InitResult(E.PRODUCER_FENCED)
    assert h.init(expected=(pid, 0)) == InitResult(E.PRODUCER_FENCED)


def test_init_answers_only_after_the_append() -> None:
    h = TxnHarness(hold=True)
    h.restore()
    pending = h.coord.init_producer_id("t", 60_000, None, h.now)
    h.run(pending.step)
    assert pending.ticket not in h.answers and len(h.held) == 1
    assert h.init() == InitResult(E.CONCURRENT_TRANSACTIONS)  # a transition is pending
    h.release()
    assert h.answers[pending.ticket] == InitResult(E.NONE, 1000, 0)


def test_add_partitions_error_codes() -> None:
    h, pid = ready()
    assert h.add(pid, 0, txn_id="other") is E.INVALID_PRODUCER_ID_MAPPING
    assert h.add(pid + 1, 0) is E.INVALID_PRODUCER_ID_MAPPING
    assert h.add(pid, 1) is E.PRODUCER_FENCED
    assert h.add(pid, 0, txn_id="") is E.INVALID_REQUEST
    assert h.add(pid, 0, TP0) is E.NONE
    value = h.last_value()
    assert value is not None and value.state is S.ONGOING and value.partitions == {TP0}
    assert value.start_ms == T0
    writes = len(h.log)
    assert h.add(pid, 0, TP0) is E.NONE  # already in the transaction: no write
    assert len(h.log) == writes
    h.hold = True
    pending = h.coord.add_partitions("t", pid, 0, [TP1], h.now)
    h.run(pending.step)
    assert h.add(pid, 0, TP0) is E.CONCURRENT_TRANSACTIONS
    h.release()
    assert h.answers[pending.ticket] is E.NONE
    assert h.coord.verify("t", pid, 0, TP1) is E.NONE
    assert h.coord.verify("t", pid, 0, TopicPartition("out", 9)) is E.TRANSACTION_ABORTABLE
    assert h.coord.verify("t", pid, 1, TP1) is E.PRODUCER_FENCED


def test_commit_writes_prepare_markers_complete_in_order() -> None:
    h, pid = ready()
    h.add(pid, 0, TP0, TP1)
    assert h.end(pid, 0, commit=True) is E.NONE
    assert [(m.commit, m.producer_id, m.producer_epoch, m.partitions) for m in h.markers] == [
        (True, pid, 0, (TP0, TP1))
    ]
    states = [v.state for k, v in h.log if v is not None]
    assert states == [S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]
    assert h.state() == "CompleteCommit"
    # a retried commit is fine; an abort now is not
    assert h.end(pid, 0, commit=True) is E.NONE
    assert h.end(pid, 0, commit=False) is E.INVALID_TXN_STATE
    # the next transaction on the same epoch
    assert h.add(pid, 0, TP1) is E.NONE
    assert h.end(pid, 0, commit=False) is E.NONE
    assert h.markers[-1].commit is False and h.state() == "CompleteAbort"


def test_end_txn_error_codes() -> None:
    h, pid = ready()
    assert h.end(pid, 0, commit=True) is E.INVALID_TXN_STATE  # Empty
    assert h.end(pid, 0, commit=True, txn_id="") is E.INVALID_REQUEST
    assert h.end(pid, 0, commit=True, txn_id="nobody") is E.INVALID_PRODUCER_ID_MAPPING
    h.add(pid, 0)
    assert h.end(pid + 1, 0, commit=True) is E.INVALID_PRODUCER_ID_MAPPING
    assert h.end(pid, 1, commit=True) is E.PRODUCER_FENCED
    h.hold_markers = True
    assert h.end(pid, 0, commit=True) is E.NONE
    assert h.state() == "PrepareCommit"
    # markers in flight: everything waits
    assert h.end(pid, 0, commit=True) is E.CONCURRENT_TRANSACTIONS
    assert h.end(pid, 0, commit=False) is E.CONCURRENT_TRANSACTIONS
    assert h.add(pid, 0) is E.CONCURRENT_TRANSACTIONS
    assert h.init() == InitResult(E.CONCURRENT_TRANSACTIONS)
    h.release_markers()
    assert h.state() == "CompleteCommit"


def test_init_on_an_ongoing_transaction_fences_and_aborts_it() -> None:
    h, pid = ready()
    h.add(pid, 0, TP0)
    assert h.init() == InitResult(E.CONCURRENT_TRANSACTIONS)
    [marker] = h.markers
    assert (marker.commit, marker.producer_epoch, marker.partitions) == (False, 1, (TP0,))
    assert h.state() == "CompleteAbort"
    prepare = [v for _, v in h.log if v is not None and v.state is S.PREPARE_ABORT]
    assert [v.producer_epoch for v in prepare] == [1]
    # the zombie (epoch 0) is fenced everywhere; the retried init gets epoch 2
    assert h.add(pid, 0, TP1) is E.PRODUCER_FENCED
    assert h.end(pid, 0, commit=True) is E.PRODUCER_FENCED
    assert h.init() == InitResult(E.NONE, pid, 2)


def test_failed_fence_write_does_not_bump_twice() -> None:
    h, pid = ready()
    h.add(pid, 0, TP0)
    h.fail_next = E.NOT_COORDINATOR
    assert h.init() == InitResult(E.NOT_COORDINATOR)
    assert h.state() == "Ongoing"
    assert h.init() == InitResult(E.CONCURRENT_TRANSACTIONS)
    assert h.markers[-1].producer_epoch == 1
    assert h.init() == InitResult(E.NONE, pid, 2)


def test_timed_out_transaction_is_fenced_and_aborted() -> None:
    h, pid = ready()
    h.init()  # epoch 1
    h.add(pid, 1, TP0)
    h.now += 60_000
    h.run(h.coord.abort_timed_out(h.now))
    assert h.markers == []  # start + timeout is not yet before now
    h.now += 1
    h.run(h.coord.abort_timed_out(h.now))
    [marker] = h.markers
    assert (marker.commit, marker.producer_epoch) == (False, 2)
    assert h.state() == "CompleteAbort"
    assert h.end(pid, 1, commit=True) is E.PRODUCER_FENCED
    assert h.init(expected=(pid, 1)) == InitResult(E.PRODUCER_FENCED)
    assert h.init() == InitResult(E.NONE, pid, 3)


def test_failed_complete_write_is_retried_by_the_timer() -> None:
    h, pid = ready()
    h.add(pid, 0, TP0)
    h.hold_markers = True
    h.end(pid, 0, commit=True)
    h.fail_next = E.NOT_COORDINATOR
    h.release_markers()
    assert h.state() == "PrepareCommit"
    h.run(h.coord.abort_timed_out(h.now))
    assert h.state() == "CompleteCommit" and h.coord.outstanding() == 0


def test_failed_add_write_answers_the_error_and_clears_the_pending_state() -> None:
    h, pid = ready()
    h.fail_next = E.COORDINATOR_NOT_AVAILABLE
    assert h.add(pid, 0, TP0) is E.COORDINATOR_NOT_AVAILABLE
    assert h.state() == "Empty"
    assert h.add(pid, 0, TP0) is E.NONE


def test_expired_ids_get_tombstones_and_are_forgotten() -> None:
    h, pid = ready(config=TransactionConfig(transactional_id_expiration_ms=1000))
    h.init("busy")
    busy = h.coord.metadata("busy")
    assert busy is not None
    h.add(busy.producer_id, 0, TP0, txn_id="busy")
    h.now += 999
    h.run(h.coord.expire(h.now))
    assert h.tombstones == []
    h.now += 1
    h.run(h.coord.expire(h.now))
    assert h.tombstones == ["t"]  # "busy" is Ongoing: never expired
    assert h.coord.metadata("t") is None
    assert h.coord.describe("t").error is E.TRANSACTIONAL_ID_NOT_FOUND
    # a new init starts over with a new producer id
    result = h.init()
    assert result is not None and result.producer_id != pid and result.producer_epoch == 0


def test_exhausted_epoch_rotates_to_a_new_producer_id() -> None:
    h = TxnHarness(first_producer_id=50)
    old = TxnTransit(7, -1, -1, 32766, -1, 60_000, S.EMPTY, frozenset(), -1, T0)
    h.restore({"t": old})
    assert h.init(expected=(7, 32766)) == InitResult(E.NONE, 50, 0)
    metadata = h.coord.metadata("t")
    assert metadata is not None and metadata.previous_producer_id == 7
    # the retry of that call (its answer lost) is recognised, not fenced
    assert h.init(expected=(7, 32766)) == InitResult(E.NONE, 50, 0)


def test_restore_completes_prepared_transactions() -> None:
    h = TxnHarness()
    prepared = TxnTransit(9, -1, -1, 4, -1, 60_000, S.PREPARE_COMMIT, frozenset({TP0}), T0, T0)
    aborting = TxnTransit(10, -1, -1, 2, -1, 60_000, S.PREPARE_ABORT, frozenset({TP1}), T0, T0)
    ongoing = TxnTransit(11, -1, -1, 0, -1, 60_000, S.ONGOING, frozenset({TP0}), T0, T0)
    h.restore({"a": prepared, "b": aborting, "c": ongoing})
    assert sorted((m.transactional_id, m.commit, m.producer_epoch) for m in h.markers) == [
        ("a", True, 4),
        ("b", False, 2),
    ]
    assert (h.state("a"), h.state("b"), h.state("c")) == (
        "CompleteCommit",
        "CompleteAbort",
        "Ongoing",
    )
    # the restored Ongoing transaction times out like any other
    h.now += 60_001
    h.run(h.coord.abort_timed_out(h.now))
    assert h.state("c") == "CompleteAbort" and h.markers[-1].producer_epoch == 1


def test_describe_and_list() -> None:
    h, pid = ready()
    h.init("u")
    h.add(pid, 0, TP1, TP0)
    described = h.coord.describe("t")
    assert (described.error, described.state, described.producer_id, described.partitions) == (
        E.NONE,
        "Ongoing",
        pid,
        (TP0, TP1),
    )
    assert described.start_ms == T0 and described.timeout_ms == 60_000
    assert h.coord.describe("").error is E.INVALID_REQUEST
    assert h.coord.describe("nobody").error is E.TRANSACTIONAL_ID_NOT_FOUND
    listing = h.coord.list_transactions(["Ongoing", "Sleeping"], [], -1, h.now)
    assert listing.unknown_state_filters == ("Sleeping",)
    assert [t.transactional_id for t in listing.transactions] == ["t"]
    everything = h.coord.list_transactions([], [], -1, h.now)
    assert sorted(t.transactional_id for t in everything.transactions) == ["t", "u"]
    by_pid = h.coord.list_transactions([], [pid], -1, h.now)
    assert [t.transactional_id for t in by_pid.transactions] == ["t"]
    h.now += 5000
    older = h.coord.list_transactions(["Ongoing"], [], 4999, h.now)
    assert [t.transactional_id for t in older.transactions] == ["t"]
    assert h.coord.list_transactions(["Ongoing"], [], 5000, h.now).transactions == ()
