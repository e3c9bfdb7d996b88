"""Kafka's own storage tests, ported: recovery, truncation and preallocation cases (issue 16).

Each test is named after the Kafka test it ports (the docstring names it); the facts come from
Kafka 4.x's ``LogSegmentTest``, ``LogLoaderTest``, ``LogCleanerTest`` and ``TimeIndexTest``.
Real files on a tmp dir; no mocks of seglog's storage.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from seglog.clock import ManualClock
from seglog.config import LogConfig
from seglog.core.offset_map import OffsetMap
from seglog.core.roll import PendingAppend, roll_reason, time_waited_for_roll_ms
from seglog.engine.cleaning.cleaner import Cleaner, never_done
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.errors import CorruptIndexError, CorruptRecordError
from seglog.format.batch import encode_batch
from seglog.format.builder import BatchBuilder
from seglog.format.records import Record
from seglog.format.topic_names import TopicPartition
from seglog.storage.index_file import OffsetIndexFile, TimeIndexFile
from seglog.storage.overflow_split import NoOffsetOverflowError, split_overflowed_segment
from seglog.storage.segment import LogSegment
from seglog.testing.crash import close_fds_opened_since, open_fds

NO_TIMESTAMP = -1
T0 = 1_700_000_000_000


def _segment(directory: Path, base_offset: int, now_ms: int) -> LogSegment:
    segment = LogSegment(
        directory,
        base_offset,
        index_interval_bytes=4096,
        segment_index_bytes=10 * 1024 * 1024,
        created_ms=now_ms,
    )
    segment.make_active()
    return segment


def _append(segment: LogSegment, base_offset: int, *values: bytes, timestamp: int = -1) -> None:
    """Append one batch of ``values`` at ``base_offset`` (Kafka's ``records(offset, ...)``)."""
    data = encode_batch([Record(base_offset + i, timestamp, None, v) for i, v in enumerate(values)])
    last_offset = base_offset + len(values) - 1
    segment.append([data], len(data), [(0, len(data), last_offset, timestamp)])


def _waited(segment: LogSegment, now_ms: int) -> int:
    return time_waited_for_roll_ms(segment, PendingAppend(0, NO_TIMESTAMP, 0), now_ms)


# --- 2. a segment emptied by truncation restarts its roll timer --------------------------------
def test_truncate_full(tmp_path: Path) -> None:
    """``LogSegmentTest.testTruncateFull``: truncating every record away resets the segment's
    creation time (and rolling-based timestamp), so its roll clock restarts at zero."""
    now = 1_000
    segment = _segment(tmp_path, 40, now)
    _append(segment, 40, b"hello", b"there")
    now += 500
    assert _waited(segment, now) == 500
    size = segment.size
    assert segment.truncate_to(0, now) == size
    assert segment.size == 0
    assert _waited(segment, now) == 0
    assert not segment.offset_index.is_full
    assert not segment.time_index.is_full
    assert list(segment.iter_batches(0, segment.size)) == []
    _append(segment, 40, b"hello", b"there")
    assert [r.value for b in segment.iter_batches(0, segment.size) for r in b.records()] == [
        b"hello",
        b"there",
    ]
    segment.close()


def test_truncate_full_with_timestamps_restarts_from_next_append(tmp_path: Path) -> None:
    """``LogSegmentTest.testTruncateFull`` with record timestamps: after the segment is emptied,
    ``segment.ms`` is measured from the next append's timestamp, not from the removed records."""
    now = 1_000
    segment = _segment(tmp_path, 0, now)
    _append(segment, 0, b"old", timestamp=10)
    assert segment.rolling_based_timestamp == 10
    segment.truncate_to(0, now + 500)
    assert segment.rolling_based_timestamp == NO_TIMESTAMP
    _append(segment, 0, b"new", timestamp=90_000)
    assert segment.rolling_based_timestamp == 90_000
    assert time_waited_for_roll_ms(segment, PendingAppend(0, 90_100, 1), now) == 100
    segment.close()


def test_truncate_empty_segment(tmp_path: Path) -> None:
    """``LogSegmentTest.testTruncateEmptySegment``: a reopened empty segment truncated (a
    follower truncating to an empty segment) restarts its roll clock, gets its preallocated
    indexes back, and is not rolled by ``segment.ms`` while empty; only an offset that cannot
    be stored relative to its base rolls it."""
    max_segment_ms = 300_000
    now = 1_000
    segment = _segment(tmp_path, 0, now)
    segment.on_become_inactive()
    segment.close()
    reopened = LogSegment(
        tmp_path, 0, index_interval_bytes=4096, segment_index_bytes=10 * 1024 * 1024, created_ms=now
    )
    assert reopened.offset_index.path.stat().st_size == 0
    assert reopened.time_index.path.stat().st_size == 0
    now += 500
    reopened.truncate_to(57, now)
    assert _waited(reopened, now) == 0
    assert not reopened.time_index.is_full
    assert not reopened.offset_index.is_full

    def reason(last_offset: int) -> object:
        return roll_reason(
            reopened,
            PendingAppend(1024, NO_TIMESTAMP, last_offset),
            segment_bytes=(1 << 31) - 1,
            max_segment_ms=max_segment_ms,
            now_ms=now,
        )

    assert reason(100) is None
    now += max_segment_ms + 1
    assert _waited(reopened, now) == max_segment_ms + 1
    assert reason(100) is None  # an empty segment never rolls by time
    assert reason((1 << 31) - 1 + 200) is not None  # but it rolls when the offset cannot fit
    reopened.close()


# --- 4. TimeIndex sanity check on a live, preallocated index ----------------------------------
def _poke(path: Path, position: int, data: bytes) -> None:
    with path.open("r+b") as handle:
        handle.seek(position)
        handle.write(data)


def test_time_index_sanity_check(tmp_path: Path) -> None:
    """``TimeIndexTest.testSanityCheck``: a live time index (preallocated to 30 entries, its
    tail zeros) passes the check empty and with 5 entries; reopened live, it fails on a last
    entry whose offset is below the base, on a last timestamp below the first, and on a file
    length that is not a whole number of entries, and passes again once each is undone."""
    base_offset = 45
    path = tmp_path / "00000000000000000045.timeindex"
    index = TimeIndexFile(path, base_offset, segment_index_bytes=30 * 12)
    index.create_preallocated()
    index.sanity_check()
    for i in range(1, 6):
        index.maybe_append(i * 10, i + base_offset)
    index.sanity_check()
    assert path.stat().st_size == 30 * 12  # live: preallocated, a zero tail after 5 entries
    index.trim()
    index.close()
    assert path.stat().st_size == 5 * 12

    live = TimeIndexFile(path, base_offset, segment_index_bytes=30 * 12)
    live.create_preallocated()
    assert path.stat().st_size == 30 * 12
    assert live.last_entry() == (50, 50)
    last = 4 * 12
    original = path.read_bytes()[last : last + 12]

    _poke(path, last + 8, (-1).to_bytes(4, "big", signed=True))  # offset base - 1
    with pytest.raises(CorruptIndexError, match="last offset is 44"):
        live.sanity_check()
    _poke(path, last, original)

    _poke(path, last, (9).to_bytes(8, "big"))  # first timestamp (10) - 1
    with pytest.raises(CorruptIndexError, match="last timestamp is 9"):
        live.sanity_check()
    _poke(path, last, original)

    os.truncate(path, 30 * 12 - 1)
    with pytest.raises(CorruptIndexError, match="not a multiple of 12"):
        live.sanity_check()
    os.truncate(path, 30 * 12)

    live.sanity_check()
    live.close()


def test_offset_index_sanity_check_live(tmp_path: Path) -> None:
    """``OffsetIndexTest.testSanityCheck``'s live case: a preallocated offset index with entries
    passes; an entry below the base offset fails, naming the file."""
    path = tmp_path / "00000000000000000045.index"
    index = OffsetIndexFile(path, 45, segment_index_bytes=30 * 8)
    index.create_preallocated()
    for i in range(1, 6):
        index.append(45 + i, i * 100)
    index.sanity_check()
    index.flush()
    _poke(path, 4 * 8, (-1).to_bytes(4, "big", signed=True))
    with pytest.raises(CorruptIndexError, match=str(path)):
        index.sanity_check()
    index.close()


# --- 5. a batch larger than the bytes left is a CorruptRecordError -----------------------------
def _log_with_large_messages(
    tmp_path: Path, large_message_size: int
) -> tuple[LogManager, Log, ManualClock]:
    """Kafka's ``createLogWithMessagesLargerThanMaxSize``: messages of ``large_message_size``
    bytes with ``segment.bytes`` 16 times that, until the log has two segments."""
    clock = ManualClock()
    manager = open_log_dirs([tmp_path / "data"], clock=clock)
    manager.create_topic(
        "t",
        1,
        configs={
            "cleanup.policy": "compact",
            "min.cleanable.dirty.ratio": "0.01",
            "segment.bytes": str(large_message_size * 16),
            "max.message.bytes": str(large_message_size * 2),
        },
    )
    log = manager.get_log("t", 0)
    key = 0
    while len(log.segments) < 2:
        builder = BatchBuilder(max_batch_bytes=large_message_size * 2)
        builder.append(clock.now_ms(), b"%d" % key, bytes(large_message_size))
        log.append(builder.build())
        key += 1
    return manager, log, clock


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "python-twin"])
def test_corrupt_message_size_larger_than_bytes_available(tmp_path: Path, use_numba: bool) -> None:
    """``LogCleanerTest.testCorruptMessageSizeLargerThanBytesAvailable``: the first segment's
    ``.log`` is cut to 1024 bytes under the open log, so its first batch claims more bytes than
    the file has left; cleaning it raises ``CorruptRecordError`` naming the file and position
    (never a ``ValueError`` from mapping past the file's end), with the kernels and with their
    Python twins, and the header walk the cleaner's pre-pass uses raises the same."""
    manager, log, clock = _log_with_large_messages(tmp_path, 64 * 1024)
    try:
        first = log.segments[0]
        os.truncate(first.log_path, 1024)
        with pytest.raises(CorruptRecordError) as walk_error:
            first.batch_headers()
        assert walk_error.value.position == 0
        assert walk_error.value.path == str(first.log_path)
        assert "larger than the 1024 bytes left" in str(walk_error.value)

        cleaner = Cleaner(OffsetMap(1 << 20, 0.9), clock=clock, use_numba=use_numba)
        with pytest.raises(CorruptRecordError) as read_error:
            list(cleaner.chunks(first, 0, never_done))
        assert read_error.value.path == str(first.log_path)
        assert read_error.value.position == 0

        [result] = manager.clean_once()
        assert result.error is not None and result.error.startswith("CorruptRecordError")
        assert first.log_path.name in result.error
    finally:
        manager.close()


def test_corrupt_message_size_cut_inside_a_later_batch(tmp_path: Path) -> None:
    """The same cut inside the third batch: the cleaner's chunked reader and the header walk
    name the position of the batch that runs past the file's end."""
    manager, log, clock = _log_with_large_messages(tmp_path, 16 * 1024)
    try:
        first = log.segments[0]
        positions = [b.position for b in first.iter_batches(0, first.size)]
        os.truncate(first.log_path, positions[2] + 100)
        with pytest.raises(CorruptRecordError) as walk_error:
            first.batch_headers()
        assert walk_error.value.position == positions[2]
        cleaner = Cleaner(OffsetMap(1 << 20, 0.9), clock=clock, read_chunk_bytes=64 * 1024)
        with pytest.raises(CorruptRecordError) as read_error:
            list(cleaner.chunks(first, 0, never_done))
        assert read_error.value.path == str(first.log_path)
    finally:
        manager.close()


# --- 6. one-shot retention with file.delete.delay.ms=0 ----------------------------------------
def test_run_retention_with_file_delete_delay_0_leaves_no_deleted_files(tmp_path: Path) -> None:
    """``LogManager.run_retention`` with ``file.delete.delay.ms=0``: the files of every deleted
    segment are gone when it returns (no scheduler tick needed), and the log keeps the rest."""
    clock = ManualClock()
    manager = open_log_dirs([tmp_path / "data"], clock=clock)
    try:
        manager.create_topic(
            "t",
            1,
            configs={"retention.bytes": "300", "segment.bytes": "200", "file.delete.delay.ms": "0"},
        )
        log = manager.get_log("t", 0)
        for i in range(20):
            builder = BatchBuilder()
            builder.append(clock.now_ms(), b"k%d" % i, b"value-%04d" % i)
            log.append(builder.build())
        before = len(log.segments)
        [(_, plan)] = manager.run_retention()
        assert plan.deletions
        assert len(log.segments) == before - len(plan.deletions)
        assert not list((tmp_path / "data").rglob("*.deleted"))
        assert not [n for n in manager.scheduler.pending() if n.startswith("delete-file")]
    finally:
        manager.close()


# --- 1. offset overflow (KAFKA-6264): recovery splits the segment -----------------------------
INT_MAX = (1 << 31) - 1


def _kafka_record_batch(base_offset: int, *offsets: int) -> bytes:
    """Kafka's ``MemoryRecords.withRecords(base, ...)`` of ``SimpleRecord(data, data)``, data
    the offset as text."""
    return encode_batch([Record(o, T0, str(o).encode(), str(o).encode()) for o in offsets])


def _sample_batches(base_offset: int) -> tuple[bytes, int]:
    """Kafka's ``writeSampleBatches``: offsets base, base+1..base+2 and base+Int.MaxValue-1;
    returns the bytes and the next base (base + Int.MaxValue)."""
    data = (
        _kafka_record_batch(base_offset, base_offset)
        + _kafka_record_batch(base_offset + 1, base_offset + 1, base_offset + 2)
        + _kafka_record_batch(base_offset + INT_MAX - 1, base_offset + INT_MAX - 1)
    )
    return data, base_offset + INT_MAX


def _write_raw_segment(directory: Path, base_offset: int, data: bytes) -> None:
    """A segment written as Kafka's test does: the ``.log``, and empty index files (so a load
    does not recover it for a missing index)."""
    name = f"{base_offset:020d}"
    (directory / f"{name}.log").write_bytes(data)
    (directory / f"{name}.index").write_bytes(b"")
    (directory / f"{name}.timeindex").write_bytes(b"")


def _initialize_log_dir_with_overflowed_segment(directory: Path) -> list[int]:
    """Kafka's ``initializeLogDirWithOverflowedSegment``: three segments, the second of which
    holds two rounds of sample batches (offsets past its base + Int.MaxValue). Returns the
    keys written, in order (16)."""
    directory.mkdir(parents=True, exist_ok=True)
    first, next_offset = _sample_batches(0)
    _write_raw_segment(directory, 0, first)
    overflow_base = next_offset
    part_1, next_offset = _sample_batches(next_offset)
    part_2, next_offset = _sample_batches(next_offset)
    _write_raw_segment(directory, overflow_base, part_1 + part_2)
    last, _ = _sample_batches(next_offset)
    _write_raw_segment(directory, next_offset, last)
    keys = []
    for base in (0, overflow_base, overflow_base + INT_MAX, next_offset):
        keys += [base, base + 1, base + 2, base + INT_MAX - 1]
    return keys


def _keys_in_log(log: Log) -> list[int]:
    """Kafka's ``LogTestUtils.keysInLog``: every key of every segment, as a number."""
    return [
        int(record.key)
        for segment in log.segments
        for batch in segment.iter_batches(0, segment.size)
        for record in batch.records()
        if record.key is not None and record.value is not None
    ]


def _recover(directory: Path, clock: ManualClock) -> Log:
    """Kafka's ``recoverAndCheck`` (a hard reset): an unclean open from recovery point 0."""
    return Log.open(
        directory,
        TopicPartition("overflow", 0),
        LogConfig(index_interval_bytes=1, file_delete_delay_ms=1000),
        clock=clock,
        recovery_point=0,
        had_clean_shutdown=False,
    )


def test_recovery_of_segment_with_offset_overflow(tmp_path: Path) -> None:
    """``LogLoaderTest.testRecoveryOfSegmentWithOffsetOverflow``: recovery splits the segment
    whose offsets pass its base + 2^31 - 1 into segments that fit, losing no record (today's
    cut lost 7 of the 16); splitting any recovered segment again is refused and changes
    nothing."""
    directory = tmp_path / "overflow-0"
    keys = _initialize_log_dir_with_overflowed_segment(directory)
    assert len(keys) == 16
    log = _recover(directory, ManualClock(T0))
    try:
        assert _keys_in_log(log) == keys
        assert [r.key for r in log.read_records(0, 10**9)][:1] == [b"0"]
        assert [s.base_offset for s in log.segments] == [
            0,
            INT_MAX,
            2 * INT_MAX + 1,
            3 * INT_MAX,
        ]
        for segment in log.segments:
            batches = list(segment.iter_batches(0, segment.size))
            assert all(0 <= b.last_offset - segment.base_offset <= INT_MAX for b in batches)
        assert log.log_end_offset == 4 * INT_MAX
        assert [r.offset for r in log.read_records(2 * INT_MAX + 1, 10**9)][:2] == [
            2 * INT_MAX + 1,
            2 * INT_MAX + 2,
        ]
        assert not [
            p.name
            for p in directory.iterdir()
            if p.name.endswith((".deleted", ".swap", ".cleaned"))
        ]
    finally:
        log.close()
    before = sorted((p.name, p.stat().st_size) for p in directory.iterdir())
    bases = [0, INT_MAX, 2 * INT_MAX + 1, 3 * INT_MAX]
    for base, next_base in zip(bases, [*bases[1:], None], strict=True):
        with pytest.raises(NoOffsetOverflowError):
            split_overflowed_segment(directory, base, next_base)
    assert sorted((p.name, p.stat().st_size) for p in directory.iterdir()) == before
    reopened = _recover(directory, ManualClock(T0))
    try:
        assert _keys_in_log(reopened) == keys
        assert len(reopened.segments) == 4
    finally:
        reopened.close()


def test_recovery_of_segment_with_offset_overflow_reports_the_split(tmp_path: Path) -> None:
    """The load report names the split (and loses nothing): a user sees why the directory has
    one segment more than before."""
    directory = tmp_path / "overflow-0"
    _initialize_log_dir_with_overflowed_segment(directory)
    log = _recover(directory, ManualClock(T0))
    try:
        report = log.load_report
        assert report.lost_ranges == []
        assert report.split_segments == [
            f"segment {INT_MAX} overflowed its int32 relative offsets: split at {INT_MAX}, "
            f"{2 * INT_MAX + 1}"
        ]
        assert f"split at {INT_MAX}" in report.summary()
    finally:
        log.close()


# --- 3. preallocate=true --------------------------------------------------------------------
def _produce(log: Log, clock: ManualClock, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        builder = BatchBuilder()
        builder.append(clock.now_ms(), b"k%d" % i, b"value-%04d" % i)
        log.append(builder.build())


def _preallocated_log(directory: Path, clock: ManualClock, **kwargs: Any) -> Log:
    return Log.open(
        directory,
        TopicPartition("pre", 0),
        LogConfig(preallocate=True, segment_bytes=4096),
        clock=clock,
        **kwargs,
    )


def test_preallocate_sizes_on_disk_while_open_after_roll_and_after_close(tmp_path: Path) -> None:
    """``preallocate=true`` (Kafka's ``FileRecords.open(..., preallocate)``,
    ``LogSegmentTest``'s preallocated cases): the active ``.log`` is ``segment.bytes`` long on
    disk from its creation while the segment's size counts only its batches; a roll trims the
    old one to its batches and preallocates the new one; close trims the active one."""
    clock = ManualClock(T0)
    directory = tmp_path / "pre-0"
    log = _preallocated_log(directory, clock)
    try:
        first = log.active_segment
        assert first.log_path.stat().st_size == 4096
        assert first.size == 0
        _produce(log, clock, 10)
        assert first.log_path.stat().st_size == 4096
        assert 0 < first.size < 4096
        assert [v for _, v in [(r.offset, r.value) for r in log.read_records(0, 10**9)]] == [
            b"value-%04d" % i for i in range(10)
        ]
        size_before_roll = first.size
        log.roll()
        assert first.log_path.stat().st_size == size_before_roll
        second = log.active_segment
        assert second.log_path.stat().st_size == 4096
        _produce(log, clock, 3, start=10)
        active_size = second.size
    finally:
        log.close()
    assert second.log_path.stat().st_size == active_size
    reopened = _preallocated_log(directory, clock, had_clean_shutdown=True, recovery_point=13)
    try:
        assert reopened.load_report.truncated_bytes == 0
        assert [r.offset for r in reopened.read_records(0, 10**9)] == list(range(13))
    finally:
        reopened.close()


def test_preallocated_segments_roll_by_size_and_are_each_trimmed(tmp_path: Path) -> None:
    """Appends that fill ``segment.bytes`` roll; every rolled ``.log`` is exactly its batches,
    only the active one carries the preallocated tail."""
    clock = ManualClock(T0)
    log = _preallocated_log(tmp_path / "pre-0", clock)
    try:
        _produce(log, clock, 200)
        assert len(log.segments) > 2
        for segment in log.segments[:-1]:
            assert segment.log_path.stat().st_size == segment.size <= 4096
        assert log.active_segment.log_path.stat().st_size == 4096
    finally:
        log.close()


def test_preallocated_active_segment_recovers_every_record_after_a_simulated_crash(
    tmp_path: Path,
) -> None:
    """A crash with the active ``.log`` still preallocated (nothing trimmed: the log is dropped
    without close, its descriptors closed as the kernel would): the unclean reopen reads
    batches up to the zero tail, cuts the tail, and keeps every record."""
    clock = ManualClock(T0)
    directory = tmp_path / "pre-0"
    fds = open_fds()
    log = _preallocated_log(directory, clock)
    _produce(log, clock, 25)
    log.flush()
    end = log.log_end_offset
    active = log.active_segment.log_path
    assert active.stat().st_size == 4096
    del log
    close_fds_opened_since(fds, directory)
    reopened = _preallocated_log(directory, clock, recovery_point=0)
    try:
        assert [r.offset for r in reopened.read_records(0, 10**9)] == list(range(end))
        assert reopened.log_end_offset == end
        assert reopened.load_report.lost_ranges == []
        assert active.stat().st_size == reopened.segments[-1].size
        _produce(reopened, clock, 1, start=end)  # appends go on at the end of the batches
        assert [r.offset for r in reopened.read_records(0, 10**9)][-2:] == [end - 1, end]
    finally:
        reopened.close()


_KILL_CHILD = """
import sys
from pathlib import Path
from seglog.clock import ManualClock
from seglog.config import LogConfig
from seglog.engine.log import Log
from seglog.format.builder import BatchBuilder
from seglog.format.topic_names import TopicPartition
import os, signal
clock = ManualClock(1_700_000_000_000)
log = Log.open(Path(sys.argv[1]), TopicPartition("pre", 0),
               LogConfig(preallocate=True, segment_bytes=4096), clock=clock)
for i in range(int(sys.argv[2])):
    b = BatchBuilder()
    b.append(clock.now_ms(), b"k%d" % i, b"value-%04d" % i)
    log.append(b.build())
log.flush()
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_preallocated_active_segment_recovers_every_record_after_sigkill(tmp_path: Path) -> None:
    """The same with a real SIGKILL of a writer process: every flushed record is back."""
    directory = tmp_path / "pre-0"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", _KILL_CHILD, str(directory), "30"], env=env, check=False
    )
    assert done.returncode == -signal.SIGKILL
    assert max(p.stat().st_size for p in directory.glob("*.log")) == 4096
    reopened = _preallocated_log(directory, ManualClock(T0), recovery_point=0)
    try:
        assert [r.value for r in reopened.read_records(0, 10**9)] == [
            b"value-%04d" % i for i in range(30)
        ]
    finally:
        reopened.close()
