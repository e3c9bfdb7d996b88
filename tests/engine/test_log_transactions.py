"""Transactions and idempotent producers in a partition log (Kafka's ``UnifiedLogTest`` and
``ProducerStateManagerTest`` cases that need files: duplicates, sequence and epoch errors,
markers and the ``.txnindex``, the LSO, ``read_committed`` reads, snapshots written at roll and
close, loaded, skipped when damaged, deleted with their segments, truncation, recovery)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from log_support import T0, config, open_log

from seglog.clock import ManualClock
from seglog.core.isolation import IsolationLevel
from seglog.core.producer_state import OngoingTxn
from seglog.engine.log import Log
from seglog.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)
from seglog.format.txn_index import AbortedTxn, decode_txn_index
from seglog.storage.producer_snapshots import list_snapshot_offsets, read_snapshot
from seglog.testing.transactions import append_idempotent, append_transactional, producer_batch

COMMITTED = IsolationLevel.READ_COMMITTED


def keys(log: Log, level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED) -> list[bytes]:
    return [r.key or b"" for r in log.iter_records(log.log_start_offset, isolation_level=level)]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def log(tmp_path: Path, clock: ManualClock) -> Log:
    return open_log(tmp_path, clock)


def test_duplicate_append_answers_the_original_offsets_and_writes_nothing(log: Log) -> None:
    append_idempotent(log, 1, 0, 0, [(b"a", b"1"), (b"b", b"2")])
    first = append_idempotent(log, 1, 0, 2, [(b"c", b"3")])
    size = log.active_segment.size
    again = append_idempotent(log, 1, 0, 2, [(b"c", b"3")])
    assert again.duplicate and (again.first_offset, again.last_offset) == (2, 2)
    assert (first.first_offset, first.last_offset) == (2, 2)
    assert log.log_end_offset == 3 and log.active_segment.size == size
    assert keys(log) == [b"a", b"b", b"c"]


def test_producer_errors_are_typed_and_write_nothing(log: Log) -> None:
    append_idempotent(log, 1, 2, 0, [(b"a", b"1")])
    with pytest.raises(OutOfOrderSequenceError, match="producer 1 at offset 1"):
        append_idempotent(log, 1, 2, 5, [(b"x", b"x")])
    with pytest.raises(InvalidProducerEpochError):
        append_idempotent(log, 1, 1, 1, [(b"x", b"x")])
    with pytest.raises(UnknownProducerIdError):
        append_idempotent(log, 9, 0, 3, [(b"x", b"x")])
    append_transactional(log, 4, 0, 0, [(b"t", b"1")])
    with pytest.raises(InvalidTxnStateError):
        append_idempotent(log, 4, 0, 1, [(b"x", b"x")])
    assert log.log_end_offset == 2 and keys(log) == [b"a", b"t"]


def test_a_chunk_mixing_a_retry_with_new_batches_is_refused(log: Log) -> None:
    append_idempotent(log, 1, 0, 0, [(b"a", b"1")])
    retry = producer_batch(
        [(b"a", b"1")], producer_id=1, producer_epoch=0, base_sequence=0, transactional=False
    )
    new = producer_batch(
        [(b"b", b"2")], producer_id=1, producer_epoch=0, base_sequence=1, transactional=False
    )
    with pytest.raises(OutOfOrderSequenceError, match="mixes 1 batch"):
        log.append(retry + new)
    assert log.log_end_offset == 1


def test_markers_the_txn_index_and_read_committed(log: Log) -> None:
    append_transactional(log, 1, 0, 0, [(b"a1", b"x"), (b"a2", b"x")])  # 0-1, aborted
    append_transactional(log, 2, 0, 0, [(b"c1", b"x")])  # 2, committed
    append_idempotent(log, 3, 0, 0, [(b"n", b"x")])  # 3, no transaction
    assert log.last_stable_offset == 0
    assert log.ongoing_transactions() == [OngoingTxn(1, 0, 0), OngoingTxn(2, 0, 2)]
    assert keys(log, COMMITTED) == []  # nothing below the LSO yet
    abort = log.append_marker(1, 0, commit=False, coordinator_epoch=3)  # offset 4
    assert (abort.first_offset, abort.size_bytes) == (4, 78)
    assert log.last_stable_offset == 2
    assert keys(log, COMMITTED) == []  # offsets 0-1 aborted, LSO 2
    log.append_marker(2, 0, commit=True, coordinator_epoch=3)  # offset 5
    assert log.last_stable_offset == log.log_end_offset == 6
    assert keys(log, COMMITTED) == [b"c1", b"n"]
    assert keys(log) == [b"a1", b"a2", b"c1", b"n"]  # markers are never records
    entry = AbortedTxn(producer_id=1, first_offset=0, last_offset=4, last_stable_offset=2)
    assert log.aborted_transactions(0, 6) == [entry]
    txn_path = log.directory / "00000000000000000000.txnindex"
    assert decode_txn_index(txn_path.read_bytes(), path=str(txn_path)) == [entry]


def test_aborted_transaction_spanning_segments(log: Log) -> None:
    append_transactional(log, 1, 0, 0, [(b"a", b"x")])
    log.roll()
    append_idempotent(log, 2, 0, 0, [(b"b", b"x")])
    append_transactional(log, 1, 0, 1, [(b"c", b"x")])
    log.roll()
    log.append_marker(1, 0, commit=False, coordinator_epoch=0)
    assert keys(log, COMMITTED) == [b"b"]
    # the entry lives in the segment of the marker
    assert log.segments[-1].txn_index.entries() == [AbortedTxn(1, 0, 3, 4)]
    assert log.segments[0].txn_index.entries() == []
    # a read starting in the middle still leaves the aborted batch out
    assert [r.key for r in log.iter_records(2, isolation_level=COMMITTED)] == []


def test_snapshots_at_roll_and_close_reload_the_same_state(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    append_idempotent(log, 1, 0, 0, [(b"a", b"1")])
    append_transactional(log, 2, 5, 0, [(b"b", b"1")])
    log.roll()
    assert list_snapshot_offsets(log.directory) == [2]
    append_idempotent(log, 1, 0, 1, [(b"c", b"1")])
    state = log.producer_state.snapshot_entries()
    log.close()
    assert list_snapshot_offsets(log.directory) == [2, 3]
    assert read_snapshot(log.directory / "00000000000000000003.snapshot") == state
    reopened = open_log(tmp_path, clock, had_clean_shutdown=True, recovery_point=3)
    assert reopened.producer_state.snapshot_entries() == state
    assert reopened.ongoing_transactions() == [OngoingTxn(2, 5, 1)]
    # the reopened state keeps checking: a retry is a duplicate, a gap is refused
    assert append_idempotent(reopened, 1, 0, 1, [(b"c", b"1")]).duplicate
    with pytest.raises(OutOfOrderSequenceError):
        append_idempotent(reopened, 1, 0, 5, [(b"c", b"1")])
    reopened.close()


def test_every_partition_writes_snapshots_like_a_broker(tmp_path: Path, clock: ManualClock) -> None:
    """Kafka writes a snapshot at every roll, empty or not: an unclean restart then replays
    only the batches after the newest one instead of the whole log."""
    log = open_log(tmp_path, clock)
    log.append_records([(b"k", b"v")])
    log.roll()
    log.append_records([(b"k", b"v")])
    log.close()
    assert list_snapshot_offsets(log.directory) == [1, 2]
    assert read_snapshot(log.directory / "00000000000000000002.snapshot") == []


def test_a_damaged_snapshot_is_skipped_and_the_state_rebuilt(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    append_idempotent(log, 1, 0, 0, [(b"a", b"1")])
    append_transactional(log, 2, 0, 0, [(b"b", b"1")])
    state = log.producer_state.snapshot_entries()
    log.close()
    path = log.directory / "00000000000000000002.snapshot"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    reopened = open_log(tmp_path, clock, had_clean_shutdown=True, recovery_point=2)
    assert reopened.producer_state.snapshot_entries() == state
    assert any("CRC mismatch" in p for p in reopened.load_report.snapshot_problems)
    assert not path.exists() or read_snapshot(path) == state  # removed, or rewritten whole
    reopened.close()


def test_unclean_shutdown_rebuilds_state_and_the_txn_index(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    append_transactional(log, 1, 0, 0, [(b"a", b"1")])
    log.append_marker(1, 0, commit=False, coordinator_epoch=0)
    append_transactional(log, 1, 0, 1, [(b"b", b"1")])
    log.flush()
    txn = log.active_segment.txn_index.path
    state = log.producer_state.snapshot_entries()
    for segment in log.segments:
        segment.release_files()  # a crash: nothing closed, no snapshot at close
    os.remove(txn)  # the entry was not written before the crash
    reopened = open_log(tmp_path, clock, recovery_point=0)
    assert reopened.producer_state.snapshot_entries() == state
    assert reopened.active_segment.txn_index.entries() == [AbortedTxn(1, 0, 1, 2)]
    assert keys(reopened, COMMITTED) == []  # LSO 2: producer 1's second txn is open
    reopened.close()


def test_truncation_trims_the_txn_index_and_reloads_producer_state(log: Log) -> None:
    append_transactional(log, 1, 0, 0, [(b"a", b"1")])
    log.append_marker(1, 0, commit=False, coordinator_epoch=0)  # 1
    append_transactional(log, 1, 0, 1, [(b"b", b"1")])  # 2, open
    log.roll()
    append_idempotent(log, 2, 0, 0, [(b"c", b"1")])  # 3
    log.truncate_to(1)
    assert log.aborted_transactions(0, 10) == []
    assert log.ongoing_transactions() == [OngoingTxn(1, 0, 0)]
    assert list_snapshot_offsets(log.directory) == []  # the roll's snapshot at 3 went
    assert log.producer_state.entry(2) is None


def test_retention_deletes_snapshots_with_their_segments(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock, config=config(retention_ms=1000))
    for i in range(3):
        append_idempotent(log, 1, 0, i, [(b"k", b"v")], timestamp_ms=T0)
        log.roll()
    assert list_snapshot_offsets(log.directory) == [1, 2, 3]
    clock.advance(10_000)
    append_idempotent(log, 1, 0, 3, [(b"k", b"v")])
    log.apply_retention()
    assert log.log_start_offset == 3
    assert list_snapshot_offsets(log.directory) == [3]
    assert log.producer_state.entry(1).last_sequence == 3  # type: ignore[union-attr]


def test_producer_expiration(tmp_path: Path, clock: ManualClock) -> None:
    log = Log.open(
        tmp_path / "events-0",
        open_log(tmp_path, clock).topic_partition,
        config(),
        clock=clock,
        producer_id_expiration_ms=1000,
    )
    append_idempotent(log, 1, 0, 0, [(b"a", b"1")])
    append_transactional(log, 2, 0, 0, [(b"b", b"1")])
    clock.advance(1000)
    assert log.remove_expired_producers() == 1
    assert set(log.producer_state.producers()) == {2}
    # an expired producer is unknown again: it must restart at sequence 0
    with pytest.raises(UnknownProducerIdError):
        append_idempotent(log, 1, 0, 1, [(b"a", b"1")])


def test_a_damaged_snapshot_is_named_in_the_load_summary(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    append_idempotent(log, 1, 0, 0, [(b"a", b"1")])
    log.close()
    path = log.directory / "00000000000000000001.snapshot"
    path.write_bytes(b"\x00\x07" + path.read_bytes()[2:])  # an unknown version
    reopened = open_log(tmp_path, clock, had_clean_shutdown=True, recovery_point=1)
    summary = reopened.load_report.summary()
    assert "producer snapshot 00000000000000000001.snapshot: skipped" in summary
    assert "version 7" in summary
    assert reopened.producer_state.entry(1) is not None  # rebuilt from the log
    reopened.close()
