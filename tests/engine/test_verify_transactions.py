"""``verify_log``'s transaction checks: logs written through the Log API (producers,
transactions, markers, ``.txnindex`` files, snapshots), one fault planted on disk, opened
read-only as ``seglog verify`` opens them."""

from __future__ import annotations

from pathlib import Path

import pytest
from log_support import T0, TP, config

from seglog.clock import ManualClock
from seglog.engine.inspect.verify import (
    KIND_ABORTED_DATA_RETAINED,
    KIND_TXN_INDEX_ENTRY,
    KIND_TXN_INDEX_MISSING,
    KIND_TXN_MARKER_MISSING,
    VerifyReport,
    verify_log,
)
from seglog.engine.log import Log
from seglog.format.batch import encode_batch
from seglog.format.reader import BatchReader
from seglog.format.records import Record
from seglog.format.txn_index import AbortedTxn, encode_aborted_txn
from seglog.testing.transactions import append_transactional

P_ABORT, P_COMMIT, P_OPEN = 1, 2, 3


def partition_dir(tmp_path: Path) -> Path:
    return tmp_path / "events-0"


def _plain(log: Log, key: bytes) -> None:
    log.append_records([(key, b"v")])


def write_transactions(tmp_path: Path) -> None:
    """Two segments. Segment 0: producer 1's aborted transaction (data 0-1, ABORT 2) and
    producer 2's data (3). Segment 4: producer 2's COMMIT (4), a plain record (5), producer
    3's open transaction (6). Closed cleanly (a snapshot at the log end)."""
    log = Log.open(partition_dir(tmp_path), TP, config(), clock=ManualClock(T0))
    append_transactional(log, P_ABORT, 0, 0, [(b"a", b"1"), (b"b", b"2")])
    log.append_marker(P_ABORT, 0, commit=False, coordinator_epoch=0)
    append_transactional(log, P_COMMIT, 0, 0, [(b"c", b"3")])
    log.roll()
    log.append_marker(P_COMMIT, 0, commit=True, coordinator_epoch=0)
    _plain(log, b"d")
    append_transactional(log, P_OPEN, 0, 0, [(b"e", b"4")])
    assert log.last_stable_offset == 6
    log.close()


def verify(tmp_path: Path, **kwargs: int) -> VerifyReport:
    # after a clean shutdown, as the manager knows it: the snapshot at the log end is loaded
    log = Log.open(
        partition_dir(tmp_path),
        TP,
        config(),
        clock=ManualClock(T0),
        writable=False,
        had_clean_shutdown=True,
    )
    try:
        return verify_log(log, **kwargs)
    finally:
        log.close()


def problems(report: VerifyReport) -> list[tuple[str, int | None]]:
    return [(p.kind, p.offset) for p in report.problems]


def txn_index(tmp_path: Path, base_offset: int = 0) -> Path:
    return partition_dir(tmp_path) / f"{base_offset:020d}.txnindex"


def test_a_healthy_transactional_log_has_no_problem(tmp_path: Path) -> None:
    write_transactions(tmp_path)
    assert txn_index(tmp_path).stat().st_size == 34  # producer 1's aborted transaction
    report = verify(tmp_path)
    assert report.ok, report.problems
    # below a checkpoint that stops before the aborted data, nothing is judged
    assert verify(tmp_path, cleaner_checkpoint=0).ok


def test_aborted_data_below_the_cleaner_checkpoint(tmp_path: Path) -> None:
    write_transactions(tmp_path)
    report = verify(tmp_path, cleaner_checkpoint=6)
    assert problems(report) == [(KIND_ABORTED_DATA_RETAINED, 0)]
    assert report.problems[0].position == 0
    assert "ABORT marker at offset 2" in report.problems[0].message


def test_a_removed_commit_marker_leaves_data_below_the_lso(tmp_path: Path) -> None:
    """Producer 2's COMMIT (offset 4) overwritten by a plain batch of the same size: the
    snapshot knows the transaction ended, so its data (3) is below the LSO, markerless."""
    write_transactions(tmp_path)
    segment = partition_dir(tmp_path) / f"{4:020d}.log"
    data = bytearray(segment.read_bytes())
    marker = next(b for b in BatchReader(bytes(data)) if b.base_offset == 4)
    plain = encode_batch([Record(4, T0, None, b"x" * 10)], base_offset=4)
    assert len(plain) == marker.size_in_bytes == 78
    data[marker.position : marker.position + 78] = plain
    segment.write_bytes(bytes(data))
    report = verify(tmp_path)
    assert problems(report) == [(KIND_TXN_MARKER_MISSING, 3)]
    assert "below the last stable offset" in report.problems[0].message


def test_a_new_epochs_transaction_without_a_marker_between(tmp_path: Path) -> None:
    log = Log.open(partition_dir(tmp_path), TP, config(), clock=ManualClock(T0))
    append_transactional(log, P_ABORT, 0, 0, [(b"a", b"1")])  # 0
    log.append_marker(P_ABORT, 0, commit=True, coordinator_epoch=0)  # 1
    append_transactional(log, P_ABORT, 1, 0, [(b"b", b"2")])  # 2
    log.append_marker(P_ABORT, 1, commit=True, coordinator_epoch=0)  # 3
    log.close()
    segment = partition_dir(tmp_path) / f"{0:020d}.log"
    data = bytearray(segment.read_bytes())
    marker = next(b for b in BatchReader(bytes(data)) if b.base_offset == 1)
    data[marker.position : marker.position + 78] = encode_batch(
        [Record(1, T0, None, b"x" * 10)], base_offset=1
    )
    segment.write_bytes(bytes(data))
    report = verify(tmp_path)
    assert problems(report) == [(KIND_TXN_MARKER_MISSING, 0)]
    assert "next transactional batch at offset 2 (epoch 1)" in report.problems[0].message


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (AbortedTxn(P_ABORT, 1, 2, 3), "below the entry's firstOffset"),
        (AbortedTxn(9, 0, 2, 3), "no ABORT marker of producer 9 is at offset 2"),
        (AbortedTxn(P_ABORT, 0, 1, 3), "no ABORT marker of producer 1 is at offset 1"),
    ],
    ids=["first-offset-too-high", "wrong-producer", "not-at-the-marker"],
)
def test_a_txn_index_entry_that_does_not_match_its_marker(
    tmp_path: Path, entry: AbortedTxn, why: str
) -> None:
    write_transactions(tmp_path)
    txn_index(tmp_path).write_bytes(encode_aborted_txn(entry))
    report = verify(tmp_path)
    kinds = problems(report)
    assert (KIND_TXN_INDEX_ENTRY, entry.last_offset) in kinds
    found = next(p for p in report.problems if p.kind == KIND_TXN_INDEX_ENTRY)
    assert why in found.message and found.path == str(txn_index(tmp_path))
    if entry.producer_id != P_ABORT or entry.last_offset != 2:
        # the real transaction lost its entry
        assert (KIND_TXN_INDEX_MISSING, 2) in kinds


def test_a_txn_index_entry_outside_its_segment(tmp_path: Path) -> None:
    write_transactions(tmp_path)
    real = encode_aborted_txn(AbortedTxn(P_ABORT, 0, 2, 3))
    txn_index(tmp_path).write_bytes(real + encode_aborted_txn(AbortedTxn(P_COMMIT, 3, 4, 5)))
    report = verify(tmp_path)
    assert problems(report) == [(KIND_TXN_INDEX_ENTRY, 4)]
    assert "outside the segment's offsets [0, 4)" in report.problems[0].message


def test_an_abort_whose_data_remains_without_its_entry(tmp_path: Path) -> None:
    write_transactions(tmp_path)
    txn_index(tmp_path).unlink()
    report = verify(tmp_path)
    assert problems(report) == [(KIND_TXN_INDEX_MISSING, 2)]
    assert "read_committed readers would read the aborted records" in report.problems[0].message
