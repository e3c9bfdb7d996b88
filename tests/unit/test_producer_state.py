"""The pure producer state (Kafka's ``ProducerStateManagerTest`` cases, with its results)."""

from __future__ import annotations

import pytest

from seglog.core.producer_state import (
    INT32_MAX,
    AppendPlan,
    DataBatch,
    LastRecord,
    OngoingTxn,
    ProducerStateManager,
)
from seglog.errors import (
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
    UnknownProducerIdError,
)
from seglog.format.txn_index import AbortedTxn

PID = 1000
EXPIRATION_MS = 60 * 60 * 1000


class Harness:
    """A state and a log end offset, appending as a leader does."""

    def __init__(self) -> None:
        self.state = ProducerStateManager("t-0", expiration_ms=EXPIRATION_MS)
        self.offset = 0
        self.now = 1_000_000

    def append(
        self,
        pid: int,
        epoch: int,
        seq: int,
        *,
        count: int = 1,
        transactional: bool = False,
        offset: int | None = None,
    ) -> object:
        first = self.offset if offset is None else offset
        batch = DataBatch(pid, epoch, seq, first, first + count - 1, self.now, transactional)
        plan = AppendPlan()
        duplicate = self.state.check_batch(plan, batch, "t-0")
        if duplicate is not None:
            return duplicate
        self.offset = first + count
        return self.state.apply(plan, self.offset)

    def marker(
        self, pid: int, epoch: int, *, commit: bool, coordinator_epoch: int = 0
    ) -> list[AbortedTxn]:
        plan = AppendPlan()
        self.state.check_marker(
            plan,
            pid,
            epoch,
            offset=self.offset,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
            timestamp=self.now,
            where="t-0",
        )
        self.offset += 1
        return self.state.apply(plan, self.offset)


@pytest.fixture
def h() -> Harness:
    return Harness()


def test_basic_id_mapping(h: Harness) -> None:
    h.append(PID, 0, 0)
    h.append(PID, 0, 1)
    with pytest.raises(OutOfOrderSequenceError, match=r"sequence 3 does not follow .* 1"):
        h.append(PID, 0, 3)
    entry = h.state.entry(PID)
    assert entry is not None and entry.last_sequence == 1 and entry.producer_epoch == 0


def test_an_unknown_producer_must_start_at_sequence_zero(h: Harness) -> None:
    with pytest.raises(UnknownProducerIdError, match=r"no state for the producer .* sequence 5"):
        h.append(PID, 0, 5)
    assert h.state.producer_count == 0  # a refused append changes nothing


def test_a_batch_with_a_producer_id_needs_a_sequence(h: Harness) -> None:
    with pytest.raises(InvalidRecordError, match="base sequence -1"):
        h.append(PID, 0, -1)


def test_producer_sequence_wrap_around(h: Harness) -> None:
    h.append(PID, 16, 0, count=1)
    h.append(PID, 16, 1, count=INT32_MAX - 1)
    h.append(PID, 16, INT32_MAX)  # the last sequence before the wrap
    h.append(PID, 16, 0, count=2)  # sequences wrap to 0
    entry = h.state.entry(PID)
    assert entry is not None and entry.last_sequence == 1


def test_producer_sequence_invalid_wrap_around(h: Harness) -> None:
    h.append(PID, 15, 0, count=1)
    h.append(PID, 15, 1, count=INT32_MAX)
    with pytest.raises(OutOfOrderSequenceError):
        h.append(PID, 15, 1)


def test_duplicates_of_the_last_five_batches_answer_their_offsets(h: Harness) -> None:
    for seq in range(0, 30, 5):
        h.append(PID, 0, seq, count=5)
    # the batch at sequence 5 (offsets 5-9) is among the last five: a duplicate
    dup = h.append(PID, 0, 5, count=5, offset=30)
    assert dup.first_offset == 5 and dup.last_offset == 9  # type: ignore[attr-defined]
    # the first batch (sequence 0) is no longer retained: out of order, not a duplicate
    with pytest.raises(OutOfOrderSequenceError):
        h.append(PID, 0, 0, count=5, offset=30)


def test_fenced_epoch_and_new_epoch_rules(h: Harness) -> None:
    h.append(PID, 1, 0)
    with pytest.raises(InvalidProducerEpochError, match=r"epoch 0, older than .* 1"):
        h.append(PID, 0, 1)
    with pytest.raises(OutOfOrderSequenceError, match=r"new epoch 2 .* must start at sequence 0"):
        h.append(PID, 2, 7)
    h.append(PID, 2, 0)
    assert h.state.entry(PID).producer_epoch == 2  # type: ignore[union-attr]


def test_control_record_bumps_producer_epoch(h: Harness) -> None:
    h.append(PID, 0, 0, transactional=True)
    h.marker(PID, 1, commit=False)
    entry = h.state.entry(PID)
    assert entry is not None and entry.producer_epoch == 1 and not entry.batches
    with pytest.raises(InvalidProducerEpochError):
        h.append(PID, 0, 1, transactional=True)
    h.append(PID, 1, 0, transactional=True)


def test_old_epoch_for_control_record(h: Harness) -> None:
    h.append(PID, 3, 0, transactional=True)
    with pytest.raises(InvalidProducerEpochError):
        h.marker(PID, 1, commit=True)


def test_coordinator_fencing(h: Harness) -> None:
    h.append(PID, 0, 0, transactional=True)
    h.marker(PID, 0, commit=True, coordinator_epoch=5)
    h.append(PID, 0, 1, transactional=True)
    with pytest.raises(TransactionCoordinatorFencedError, match="coordinator epoch 4"):
        h.marker(PID, 0, commit=True, coordinator_epoch=4)


def test_non_transactional_append_with_ongoing_transaction(h: Harness) -> None:
    h.append(PID, 0, 0, transactional=True)
    with pytest.raises(InvalidTxnStateError, match="transaction from offset 0 is open"):
        h.append(PID, 0, 1, transactional=False)


def test_skip_empty_transactions(h: Harness) -> None:
    # a marker with no transaction open completes nothing and makes no txn index entry
    assert h.marker(PID, 0, commit=False) == []
    assert h.state.ongoing_transactions() == []


def test_last_stable_offset_and_aborted_entries(h: Harness) -> None:
    h.append(1, 0, 0, transactional=True)  # offset 0
    h.append(2, 0, 0, transactional=True)  # offset 1
    h.append(3, 0, 0)  # offset 2, idempotent only
    assert h.state.ongoing_transactions() == [OngoingTxn(1, 0, 0), OngoingTxn(2, 0, 1)]
    assert h.state.last_stable_offset(high_watermark=3) == 0
    # producer 1 aborts: its LSO entry is the first offset of producer 2's open txn
    assert h.marker(1, 0, commit=False) == [AbortedTxn(1, 0, 3, 1)]
    assert h.state.last_stable_offset(high_watermark=4) == 1
    assert h.marker(2, 0, commit=True) == []
    assert h.state.last_stable_offset(high_watermark=5) == 5
    h.append(2, 0, 1, transactional=True)  # offset 5
    # no other producer open: the entry's LSO is the marker's offset + 1
    assert h.marker(2, 0, commit=False) == [AbortedTxn(2, 5, 6, 7)]


def test_last_records_of_active_producers(h: Harness) -> None:
    h.append(1, 0, 0, count=3)
    h.append(2, 0, 0, transactional=True)
    h.marker(2, 1, commit=True)  # epoch bump forgets producer 2's batches
    assert h.state.last_records_of_active_producers() == {
        1: LastRecord(2, 0),
        2: LastRecord(None, 1),
    }


def test_prepare_update_does_not_mutate(h: Harness) -> None:
    h.append(PID, 0, 0)
    plan = AppendPlan()
    h.state.check_batch(plan, DataBatch(PID, 0, 1, 1, 1, 0, False), "t-0")
    assert h.state.entry(PID).last_sequence == 0  # type: ignore[union-attr]


def test_producer_expiration_keeps_open_transactions(h: Harness) -> None:
    h.append(1, 0, 0)
    h.append(2, 0, 0, transactional=True)
    assert h.state.remove_expired(h.now + EXPIRATION_MS - 1) == 0
    assert h.state.remove_expired(h.now + EXPIRATION_MS) == 1
    assert set(h.state.producers()) == {2}


def test_snapshot_round_trip_and_expiry_on_load(h: Harness) -> None:
    h.append(1, 0, 0, count=4)
    h.append(2, 3, 0, transactional=True)
    entries = h.state.snapshot_entries()
    restored = ProducerStateManager("t-0", expiration_ms=EXPIRATION_MS)
    restored.load_snapshot(entries, h.offset, now_ms=h.now)
    assert restored.snapshot_entries() == entries
    assert restored.ongoing_transactions() == [OngoingTxn(2, 3, 4)]
    # loading much later drops the expired idle producer, never the open transaction
    late = ProducerStateManager("t-0", expiration_ms=EXPIRATION_MS)
    late.load_snapshot(entries, h.offset, now_ms=h.now + EXPIRATION_MS)
    assert set(late.producers()) == {2}


def test_replay_never_raises_for_gaps() -> None:
    state = ProducerStateManager("t-0", expiration_ms=EXPIRATION_MS)
    state.replay_data(DataBatch(PID, 0, 17, 40, 42, 5, True))  # unknown producer, seq 17
    state.replay_data(DataBatch(PID, 0, 30, 50, 50, 6, True))  # a gap the cleaner left
    assert state.first_unstable_offset() == 40
    aborted = state.replay_marker(PID, 0, offset=51, commit=False, coordinator_epoch=2, timestamp=7)
    assert aborted == AbortedTxn(PID, 40, 51, 52)
    assert state.first_unstable_offset() is None
