"""Crash injection into the transaction-aware file operations of a partition log.

A fixed workload of idempotent and transactional producers (appends, COMMIT and ABORT
markers, whose ``.txnindex`` entries are written after them; rolls, which write producer
``.snapshot`` files; retention, which deletes segments and their snapshots; a clean close,
which writes the last snapshot) runs under a :class:`~seglog.engine.log_manager.LogManager`
and is crashed right before, or right after, each of its file operations
(``seglog.testing.crash``). The directory is then reopened as after a crash (no clean
shutdown marker, the checkpoints as they were) and must:

* open, with no ``.tmp`` file left beside the snapshots;
* hold producer state equal to a rebuild from the log alone (a snapshot never lies);
* hold ``.txnindex`` entries equal to those the log's markers make (none lost, none extra);
* give ``read_committed`` readers only records of transactions committed in the
  uninterrupted run, and every one below the recovered log's last stable offset.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from seglog.clock import ManualClock
from seglog.config import LogConfig
from seglog.core.isolation import IsolationLevel
from seglog.core.producer_state import ProducerStateManager
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.topic_names import TopicPartition
from seglog.storage.producer_snapshots import list_snapshot_offsets
from seglog.storage.producer_state_replay import rebuild_producer_state, replay_segment
from seglog.testing.crash import (
    SimulatedCrash,
    close_fds_opened_since,
    count_operations,
    crash_at,
    open_fds,
)
from seglog.testing.transactions import append_idempotent, append_transactional

T0 = 1_700_000_000_000
OVERRIDES = {"log.retention.check.interval.ms": "9223372036854775807"}
TOPIC_CONFIGS = {"segment.bytes": "1024", "retention.ms": "60000", "file.delete.delay.ms": "0"}


def _workload(manager: LogManager, clock: ManualClock) -> None:
    log = manager.get_log("tx", 0)
    seq = {1: 0, 2: 0, 3: 0}
    for round_ in range(6):
        for pid, transactional in ((1, True), (2, True), (3, False)):
            records = [(b"k%d-%d-%d" % (pid, round_, i), b"v" * 40) for i in range(3)]
            append = append_transactional if transactional else append_idempotent
            append(log, pid, 0, seq[pid], records)
            seq[pid] += 3
        log.append_marker(1, 0, commit=round_ % 2 == 0, coordinator_epoch=0)
        log.append_marker(2, 0, commit=round_ % 3 != 0, coordinator_epoch=0)
        if round_ == 3:
            clock.advance(120_000)  # everything so far is past retention
            manager.run_retention()
    manager.checkpoint_recovery_points()
    manager.close()


def _committed(log: Log) -> list[bytes]:
    start = log.log_start_offset
    return [
        r.key or b"" for r in log.iter_records(start, isolation_level=IsolationLevel.READ_COMMITTED)
    ]


def _make(directory: Path, clock: ManualClock) -> LogManager:
    manager = open_log_dirs([directory], overrides=OVERRIDES, clock=clock)
    manager.create_topic("tx", 1, TOPIC_CONFIGS)
    return manager


def _check(directory: Path, reference: set[bytes]) -> None:
    manager = open_log_dirs([directory], overrides=OVERRIDES, clock=ManualClock(T0))
    try:
        log = manager.get_log("tx", 0)
        _assert_state_matches_the_log(log)
        committed = _committed(log)
        assert set(committed) <= reference
        assert len(committed) == len(set(committed))
        leftovers = [p.name for p in log.directory.iterdir() if p.name.endswith(".tmp")]
        assert leftovers == []
    finally:
        manager.close()


def _assert_state_matches_the_log(log: Log) -> None:
    """Producer state agrees with a rebuild from the log alone; every ``.txnindex`` holds
    exactly the entries the markers in its segment make."""
    rebuilt = ProducerStateManager("tx-0", expiration_ms=1 << 62)
    rebuild_producer_state(
        rebuilt,
        log.directory,
        log.segments,
        log_start_offset=log.log_start_offset,
        up_to=log.log_end_offset,
        now_ms=T0,
        trust_snapshots_below=-1,
        remove_damaged=False,
        problems=[],
    )
    # Producers whose batches retention removed live on in the snapshots until they expire
    # (as in Kafka); every producer with data in the log agrees with the rebuild.
    mine = {e.producer_id: e for e in log.producer_state.snapshot_entries()}
    from_log = {e.producer_id: e for e in rebuilt.snapshot_entries()}
    for pid, entry in mine.items():
        if pid in from_log:
            theirs = from_log[pid]
            if theirs.coordinator_epoch == -1:  # its last marker lies below the log start
                theirs = dataclasses.replace(theirs, coordinator_epoch=entry.coordinator_epoch)
            assert entry == theirs
        else:
            assert entry.last_offset < log.log_start_offset, entry
    assert set(from_log) <= set(mine)
    replayed = ProducerStateManager("tx-0", expiration_ms=1 << 62)
    replayed.clear(log.log_start_offset)
    segments = log.segments
    for i, segment in enumerate(segments):
        end = segments[i + 1].base_offset if i + 1 < len(segments) else log.log_end_offset
        aborted = replay_segment(replayed, segment, segment.base_offset, end)
        # entries of transactions that began before the log start are only in the files
        on_disk = [t for t in segment.txn_index.entries() if t.first_offset >= log.log_start_offset]
        assert on_disk == [t for t in aborted if t.first_offset >= log.log_start_offset]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, set[bytes]]:
    directory = tmp_path_factory.mktemp("reference")
    clock = ManualClock(T0)
    manager = _make(directory, clock)
    with count_operations() as ops:
        _workload(manager, clock)
    names = [op for op, _ in ops.operations]
    assert "rename" in names and any(path.endswith(".txnindex") for _, path in ops.operations)
    assert any(path.endswith(".snapshot.tmp") for _, path in ops.operations)
    reopened = open_log_dirs([directory], overrides=OVERRIDES, clock=ManualClock(T0))
    try:
        kept = set(_committed(reopened.get_log("tx", 0)))
    finally:
        reopened.close()
    committed = {
        b"k%d-%d-%d" % (pid, round_, i)
        for round_ in range(6)
        for pid, done in ((1, round_ % 2 == 0), (2, round_ % 3 != 0), (3, True))
        if done
        for i in range(3)
    }
    # what survived retention (rounds 4 and 5) is exactly the committed part of it
    assert kept == {k for k in committed if k.split(b"-")[1] in (b"4", b"5")}
    return ops.count, committed


@pytest.mark.crash
@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
def test_crash_at_every_operation_of_a_transactional_workload(
    tmp_path: Path, reference: tuple[int, set[bytes]], after: bool
) -> None:
    count, committed = reference
    crashed = 0
    for n in range(1, count + 1):
        directory = tmp_path / f"trial-{n}"
        clock = ManualClock(T0)
        manager = _make(directory, clock)
        fds = open_fds()
        with crash_at(n, after=after) as hook:
            # A roll's flush runs on the manager's flush thread, so the n-th operation is
            # not always the same one, and the last few may not be reached at all.
            try:
                _workload(manager, clock)
            except SimulatedCrash:
                crashed += 1
            if hook.crash_point is not None:
                manager.abort()
        close_fds_opened_since(fds, directory)
        _check(directory, committed)
        shutil.rmtree(directory)
    assert crashed >= count - 8, (crashed, count)


def _truncation_fixture(directory: Path) -> Log:
    log = Log.open(
        directory / "tx-0",
        TopicPartition("tx", 0),
        LogConfig(segment_bytes=1024),
        clock=ManualClock(T0),
    )
    for round_ in range(4):
        append_transactional(
            log, 1, 0, 3 * round_, [(b"t%d-%d" % (round_, i), b"v" * 40) for i in range(3)]
        )
        log.append_marker(1, 0, commit=round_ % 2 == 0, coordinator_epoch=0)
        append_idempotent(log, 2, 0, round_, [(b"i%d" % round_, b"v" * 40)])
    return log


@pytest.mark.crash
def test_crash_at_every_operation_of_a_truncation(tmp_path: Path) -> None:
    """``truncate_to`` on a transactional log (snapshots above the new end deleted first,
    segments dropped, the tail cut, its ``.txnindex`` trimmed) crashed before each of its file
    operations: the reopened log's producer state and ``.txnindex`` match a rebuild from the
    log, and no snapshot lies above its end."""
    reference = _truncation_fixture(tmp_path / "reference")
    bases = [b.base_offset for seg in reference.segments for b in seg.iter_batches(0, seg.size)]
    target = bases[len(bases) // 2]  # a batch boundary in the middle of the log
    assert len(reference.segments) >= 2
    with count_operations() as ops:
        reference.truncate_to(target)
    reference.close()
    assert ops.count > 3
    for n in range(1, ops.count + 1):
        directory = tmp_path / f"trial-{n}"
        log = _truncation_fixture(directory)
        log.flush()
        point = log.recovery_point
        fds = open_fds()
        with crash_at(n) as hook:
            with pytest.raises(SimulatedCrash):
                log.truncate_to(target)
            assert hook.crash_point is not None
        close_fds_opened_since(fds, directory)
        reopened = Log.open(
            directory / "tx-0",
            TopicPartition("tx", 0),
            LogConfig(segment_bytes=1024),
            clock=ManualClock(T0),
            recovery_point=point,
        )
        try:
            assert target <= reopened.log_end_offset <= point  # cut whole, in part, or not
            _assert_state_matches_the_log(reopened)
            assert all(
                o <= reopened.log_end_offset for o in list_snapshot_offsets(reopened.directory)
            )
        finally:
            reopened.close()
        shutil.rmtree(directory)
