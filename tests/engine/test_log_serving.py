"""What a Kafka server needs of a partition log besides Fetch ranges: append listeners (the
long-poll wake-up) and ListOffsets (earliest, latest, max timestamp, by timestamp) with an
isolation level, on real logs."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from log_support import T0, config, open_log

from seglog.clock import ManualClock
from seglog.core.isolation import IsolationLevel
from seglog.engine.log import Log, LogAppendInfo
from seglog.format.builder import BatchBuilder
from seglog.testing.transactions import append_idempotent, append_transactional

COMMITTED = IsolationLevel.READ_COMMITTED


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


# --- append listeners --------------------------------------------------------------------------
def test_listeners_hear_every_append_that_wrote_something(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    heard: list[tuple[int, int, int]] = []

    def listener(info: LogAppendInfo) -> None:
        # called after the log end moved: a fetch from inside sees the new batches
        assert log.log_end_offset == info.last_offset + 1
        with log.fetch_file_ranges(info.first_offset) as result:
            assert result.next_offset == info.last_offset + 1
        heard.append((info.first_offset, info.last_offset, log.append_generation))

    log.add_append_listener(listener)
    log.append_records([(b"a", b"1"), (b"b", b"2")])
    append_idempotent(log, 7, 0, 0, [(b"c", b"3")])
    duplicate = append_idempotent(log, 7, 0, 0, [(b"c", b"3")])
    assert duplicate.duplicate  # a retry writes nothing: nobody is told
    append_transactional(log, 8, 0, 0, [(b"t", b"4")])
    log.append_marker(8, 0, commit=False, coordinator_epoch=0)
    assert heard == [(0, 1, 1), (2, 2, 2), (3, 3, 3), (4, 4, 4)]
    log.remove_append_listener(listener)
    log.remove_append_listener(listener)  # gone already: nothing happens
    log.append_records([(b"d", b"5")])
    assert len(heard) == 4 and log.append_generation == 5
    log.close()


def test_a_failing_listener_neither_fails_the_append_nor_silences_others(
    tmp_path: Path, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    log = open_log(tmp_path, clock)
    heard: list[int] = []

    def broken(info: LogAppendInfo) -> None:
        raise RuntimeError("listener bug")

    log.add_append_listener(broken)
    log.add_append_listener(lambda info: heard.append(info.first_offset))
    info = log.append_records([(b"a", b"1")])
    assert info.first_offset == 0 and heard == [0] and log.log_end_offset == 1
    assert "append listener of events-0 failed" in caplog.text
    log.close()


def test_a_long_poll_wakes_when_another_thread_appends(tmp_path: Path, clock: ManualClock) -> None:
    """A waiter registers, finds nothing at the high watermark, waits; an appender thread's
    append wakes it and its next fetch returns the new batch."""
    log = open_log(tmp_path, clock)
    log.append_records([(b"a", b"old")])
    woken = threading.Event()
    threads: list[int] = []

    def wake(info: LogAppendInfo) -> None:
        threads.append(threading.get_ident())
        woken.set()

    log.add_append_listener(wake)
    with log.fetch_file_ranges(1) as empty:
        assert empty.ranges == ()
    appender = threading.Thread(target=log.append_records, args=([(b"b", b"new")],))
    appender.start()
    assert woken.wait(30)
    appender.join()
    assert threads == [appender.ident]
    with log.fetch_file_ranges(1) as result:
        assert result.next_offset == 2 and result.size_bytes > 0
    log.close()


# --- ListOffsets -------------------------------------------------------------------------------
def stamped_log(tmp_path: Path, clock: ManualClock) -> tuple[Log, list[tuple[int, int]]]:
    """Batches over several segments, timestamps out of order; (offset, timestamp) of all."""
    log = open_log(tmp_path, clock, config=config(segment_bytes=1500, index_interval_bytes=100))
    stamps = [T0 + (i * 37) % 101 * 10 for i in range(240)]
    stamps[130] = T0 + 5000  # the largest, in the middle of the log
    stamps[131] = T0 + 5000  # twice: the first one answers
    for start in range(0, len(stamps), 4):
        builder = BatchBuilder()
        for ts in stamps[start : start + 4]:
            builder.append(ts, b"k", b"v%d" % ts)
        log.append(builder.build())
    assert len(log.segments) > 4
    return log, list(enumerate(stamps))


def test_list_offsets_earliest_latest_and_max_timestamp(tmp_path: Path, clock: ManualClock) -> None:
    log, _ = stamped_log(tmp_path, clock)
    first = log.list_offsets(-2)
    assert first is not None and (first.offset, first.timestamp) == (0, -1)
    latest = log.list_offsets(-1)
    assert latest is not None and (latest.offset, latest.timestamp) == (240, -1)
    top = log.list_offsets(-3)
    assert top is not None and (top.offset, top.timestamp) == (130, T0 + 5000)
    log.delete_records(50)
    earliest = log.list_offsets(-2)
    assert earliest is not None and (earliest.offset, earliest.timestamp) == (50, -1)
    log.close()


def test_list_offsets_by_timestamp_is_the_first_offset_at_or_after_it(
    tmp_path: Path, clock: ManualClock
) -> None:
    log, stamped = stamped_log(tmp_path, clock)
    for target in [T0 - 1, T0, T0 + 15, T0 + 500, T0 + 999, T0 + 1000, T0 + 4999, T0 + 5000]:
        want = next(((o, ts) for o, ts in stamped if ts >= target), None)
        found = log.list_offsets(target)
        assert (None if found is None else (found.offset, found.timestamp)) == want, target
    assert log.list_offsets(T0 + 5001) is None
    log.close()


def test_read_committed_list_offsets_stop_at_the_last_stable_offset(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    log.append_records([(b"a", b"1")], timestamp_ms=T0)
    append_transactional(log, 3, 0, 0, [(b"t", b"open")], timestamp_ms=T0 + 100)
    log.append_records([(b"b", b"2")], timestamp_ms=T0 + 50)
    assert (log.last_stable_offset, log.high_watermark) == (1, 3)
    latest = log.list_offsets(-1, isolation_level=COMMITTED)
    assert latest is not None and latest.offset == 1
    top = log.list_offsets(-3)
    assert top is not None and top.offset == 1
    assert log.list_offsets(-3, isolation_level=COMMITTED) is None  # at/above the LSO
    by_time = log.list_offsets(T0 + 10, isolation_level=COMMITTED)
    assert by_time is None  # offset 1 (T0 + 100) is not stable yet
    found = log.list_offsets(T0 + 10)
    assert found is not None and found.offset == 1
    log.append_marker(3, 0, commit=True, coordinator_epoch=0)
    found = log.list_offsets(T0 + 10, isolation_level=COMMITTED)
    assert found is not None and (found.offset, found.timestamp) == (1, T0 + 100)
    latest = log.list_offsets(-1, isolation_level=COMMITTED)
    assert latest is not None and latest.offset == 4 == log.high_watermark
    log.close()
