"""The cleaner's transaction rules (Kafka's CleanedTransactionMetadata and checkBatchRetention),
pure: batch header facts in, decisions out."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog.core.txn_retention import (
    CONTROL_TYPE_ABORT,
    CONTROL_TYPE_COMMIT,
    NO_CONTROL_RECORD,
    BatchFacts,
    BatchRetention,
    CleanedTransactionMetadata,
    batch_verdicts,
    check_batch_retention,
)
from seglog.format.txn_index import AbortedTxn

NOW = 1_000_000
LEADER_CHANGE = 2


def data(base: int, last: int, pid: int = -1, *, txn: bool = False, epoch: int = 0) -> BatchFacts:
    return BatchFacts(base, last, pid, epoch if pid >= 0 else -1, txn, False)


def marker(
    offset: int, pid: int, control_type: int, *, epoch: int = 0, horizon: int | None = None
) -> BatchFacts:
    return BatchFacts(offset, offset, pid, epoch, True, True, control_type, horizon)


def decide(
    txn: CleanedTransactionMetadata[AbortedTxn],
    batch: BatchFacts,
    *,
    upper_bound: int = 10**9,
    active: dict[int, tuple[int | None, int]] | None = None,
    now_ms: int = NOW,
) -> tuple[BatchRetention, bool, bool]:
    verdict = check_batch_retention(
        txn, batch, now_ms=now_ms, upper_bound=upper_bound, active_producers=active or {}
    )
    return verdict.retention, verdict.discard_records, verdict.contains_marker_for_empty_txn


def test_aborted_data_is_discarded_and_its_marker_kept_and_indexed() -> None:
    """testBasicTransactionAwareCleaning's shape: pid 1 aborts [0, 4], pid 2 commits."""
    txn: CleanedTransactionMetadata[AbortedTxn] = CleanedTransactionMetadata()
    aborted = AbortedTxn(1, 0, 6, 7)
    txn.add_aborted([aborted])
    assert decide(txn, data(0, 1, 1, txn=True)) == (BatchRetention.DELETE, True, False)
    assert decide(txn, data(2, 3, 2, txn=True)) == (BatchRetention.DELETE_EMPTY, False, False)
    assert decide(txn, data(4, 5, 1, txn=True)) == (BatchRetention.DELETE, True, False)
    assert decide(txn, marker(6, 1, CONTROL_TYPE_ABORT)) == (
        BatchRetention.DELETE_EMPTY,
        False,
        False,
    )
    assert decide(txn, marker(7, 2, CONTROL_TYPE_COMMIT)) == (
        BatchRetention.DELETE_EMPTY,
        False,
        False,
    )
    assert txn.take_kept_aborted() == [aborted]
    assert txn.take_kept_aborted() == []
    # pid 1's next transaction is not aborted: its data stays
    assert decide(txn, data(8, 8, 1, txn=True)) == (BatchRetention.DELETE_EMPTY, False, False)


def test_an_abort_marker_without_data_gets_a_horizon_then_goes() -> None:
    """testAbortMarkerRemoval: once no batch of the transaction is seen, the marker is
    discardable: kept and stamped while it has no horizon, dropped once the horizon passed."""
    entry = AbortedTxn(1, 1, 3, 4)
    for horizon, expected in (
        (None, (BatchRetention.DELETE_EMPTY, False, True)),
        (NOW + 1, (BatchRetention.DELETE_EMPTY, False, True)),
        (NOW, (BatchRetention.DELETE, True, True)),
    ):
        txn: CleanedTransactionMetadata[AbortedTxn] = CleanedTransactionMetadata()
        txn.add_aborted([entry])
        assert decide(txn, marker(3, 1, CONTROL_TYPE_ABORT, horizon=horizon)) == expected
        assert txn.take_kept_aborted() == []


def test_a_commit_marker_stays_while_its_transaction_has_data() -> None:
    """testCommitMarkerRemoval: a COMMIT is discardable iff no batch of its transaction was
    seen in the pass."""
    txn: CleanedTransactionMetadata[AbortedTxn] = CleanedTransactionMetadata()
    assert decide(txn, data(0, 0, 1, txn=True))[1] is False
    assert decide(txn, marker(1, 1, CONTROL_TYPE_COMMIT)) == (
        BatchRetention.DELETE_EMPTY,
        False,
        False,
    )
    assert decide(txn, marker(2, 1, CONTROL_TYPE_COMMIT)) == (
        BatchRetention.DELETE_EMPTY,
        False,
        True,
    )
    assert decide(txn, marker(3, 1, CONTROL_TYPE_COMMIT, horizon=NOW - 1)) == (
        BatchRetention.DELETE,
        True,
        True,
    )


def test_an_emptied_marker_is_discardable_and_other_control_types_stay() -> None:
    """testCleanEmptyControlBatch: a control batch with no record is discardable; a
    LeaderChange record (producer -1) is never judged a marker."""
    txn: CleanedTransactionMetadata[AbortedTxn] = CleanedTransactionMetadata()
    empty = marker(0, 1, NO_CONTROL_RECORD, horizon=NOW)
    assert decide(txn, empty) == (BatchRetention.DELETE, True, True)
    leader_change = BatchFacts(1, 1, -1, -1, False, True, LEADER_CHANGE, None)
    assert decide(txn, leader_change) == (BatchRetention.DELETE_EMPTY, False, False)


def test_the_last_entry_of_an_active_producer_is_retained_empty() -> None:
    """testLogCleanerRetainsLastSequenceEvenIfTransactionAborted and testCleanEmptyControlBatch:
    the producer's last data batch (by last offset), or with no data batch a control batch of
    its current epoch, is RETAIN_EMPTY even when its records are discarded."""
    txn: CleanedTransactionMetadata[AbortedTxn] = CleanedTransactionMetadata()
    txn.add_aborted([AbortedTxn(1, 0, 3, 4)])
    active: dict[int, tuple[int | None, int]] = {1: (2, 0)}
    assert decide(txn, data(0, 0, 1, txn=True), active=active)[0] is BatchRetention.DELETE
    assert decide(txn, data(1, 2, 1, txn=True), active=active) == (
        BatchRetention.RETAIN_EMPTY,
        True,
        False,
    )
    # marker-only producer: a control batch of its epoch is its last entry
    fresh: CleanedTransactionMetadata[AbortedTxn] = CleanedTransactionMetadata()
    only_markers: dict[int, tuple[int | None, int]] = {1: (None, 3)}
    stale = marker(0, 1, CONTROL_TYPE_COMMIT, epoch=2, horizon=NOW)
    current = marker(1, 1, CONTROL_TYPE_COMMIT, epoch=3, horizon=NOW)
    assert decide(fresh, stale, active=only_markers)[0] is BatchRetention.DELETE
    assert decide(fresh, current, active=only_markers) == (BatchRetention.RETAIN_EMPTY, True, True)


def test_the_batch_ending_at_the_upper_bound_is_retained_empty() -> None:
    """KAFKA-17076: the batch whose next offset is the round's upper bound stays (empty)."""
    txn: CleanedTransactionMetadata[AbortedTxn] = CleanedTransactionMetadata()
    txn.add_aborted([AbortedTxn(1, 0, 9, 10)])
    assert decide(txn, data(0, 4, 1, txn=True), upper_bound=5) == (
        BatchRetention.RETAIN_EMPTY,
        True,
        False,
    )


def test_state_spans_groups_and_a_producer_keeps_its_first_aborted_entry() -> None:
    """KAFKA-8351: one state for the whole round, so a transaction whose data is in one group
    and whose marker is in the next is still known; an entry added twice (collected for two
    segments) counts once."""
    txn: CleanedTransactionMetadata[AbortedTxn] = CleanedTransactionMetadata()
    entry = AbortedTxn(7, 5, 20, 21)
    txn.add_aborted([entry])  # collected for the first segment
    assert decide(txn, data(5, 9, 7, txn=True))[1] is True
    txn.add_aborted([entry])  # and again for the segment holding the marker
    assert decide(txn, data(10, 19, 8, txn=True))[1] is False  # another producer: committed
    assert decide(txn, marker(20, 7, CONTROL_TYPE_ABORT))[2] is False
    assert txn.take_kept_aborted() == [entry]
    # the duplicate was consumed before the marker: nothing lingers for pid 7
    assert decide(txn, data(30, 30, 7, txn=True))[1] is False


_BATCH = st.tuples(
    st.integers(1, 3),  # length
    st.sampled_from([-1, 1, 2, 3]),  # producer id
    st.sampled_from(["data", "txn", "abort", "commit", "empty", "other"]),
    st.sampled_from([None, NOW - 5, NOW + 5]),  # horizon (markers)
)


@settings(max_examples=200, deadline=None)
@given(
    batches=st.lists(_BATCH, max_size=40),
    aborts=st.lists(st.tuples(st.sampled_from([1, 2, 3]), st.integers(0, 80)), max_size=6),
    active=st.dictionaries(
        st.sampled_from([1, 2, 3]),
        st.tuples(st.one_of(st.none(), st.integers(0, 80)), st.integers(0, 1)),
    ),
    upper=st.integers(0, 100),
)
def test_the_columnar_verdicts_equal_the_batch_by_batch_rules(
    batches: list[tuple[int, int, str, int | None]],
    aborts: list[tuple[int, int]],
    active: dict[int, tuple[int | None, int]],
    upper: int,
) -> None:
    """batch_verdicts (state moved only by transactional and control batches) gives what
    check_batch_retention gives batch by batch."""
    facts: list[BatchFacts] = []
    offset = 0
    for length, pid, kind, horizon in batches:
        if kind in ("data", "txn"):
            facts.append(data(offset, offset + length - 1, pid, txn=kind == "txn" and pid >= 0))
            offset += length
            continue
        control = {"abort": 0, "commit": 1, "empty": NO_CONTROL_RECORD, "other": 2}[kind]
        facts.append(marker(offset, max(pid, 1), control, epoch=pid % 2, horizon=horizon))
        offset += 1
    entries = [AbortedTxn(pid, first, first + 5, first + 6) for pid, first in aborts]
    one: CleanedTransactionMetadata[AbortedTxn] = CleanedTransactionMetadata()
    one.add_aborted(entries)
    expected = [
        check_batch_retention(one, f, now_ms=NOW, upper_bound=upper, active_producers=active)
        for f in facts
    ]
    many: CleanedTransactionMetadata[AbortedTxn] = CleanedTransactionMetadata()
    many.add_aborted(entries)
    attributes = np.array(
        [
            (0x10 if f.is_transactional else 0)
            | (0x20 if f.is_control else 0)
            | (0x40 if f.delete_horizon_ms is not None else 0)
            for f in facts
        ],
        dtype=np.int16,
    )
    got = batch_verdicts(
        many,
        base_offset=np.array([f.base_offset for f in facts], dtype=np.int64),
        last_offset=np.array([f.last_offset for f in facts], dtype=np.int64),
        producer_id=np.array([f.producer_id for f in facts], dtype=np.int64),
        producer_epoch=np.array([f.producer_epoch for f in facts], dtype=np.int16),
        attributes=attributes,
        base_timestamp=np.array(
            [f.delete_horizon_ms if f.delete_horizon_ms is not None else 0 for f in facts],
            dtype=np.int64,
        ),
        control_type=np.array([f.control_type for f in facts], dtype=np.int16),
        now_ms=NOW,
        upper_bound=upper,
        active_producers=active,
    )
    assert got.retention.tolist() == [int(v.retention) for v in expected]
    assert got.discard_records.tolist() == [v.discard_records for v in expected]
    assert got.contains_marker_for_empty_txn.tolist() == [
        v.contains_marker_for_empty_txn for v in expected
    ]
    assert many.take_kept_aborted() == one.take_kept_aborted()
