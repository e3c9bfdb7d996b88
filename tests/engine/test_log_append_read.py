"""Log: append (validation, offsets, timestamps), read, ListOffsets, roll, truncate, reopen."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from log_support import T0, TP, batch, config, open_log, values

from seglog.clock import ManualClock
from seglog.core.roll import RollReason
from seglog.engine.log import Log
from seglog.errors import (
    CorruptRecordError,
    InvalidRecordError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from seglog.format.batch import encode_batch
from seglog.format.records import Record, TimestampType
from support.index_oracle import check_partition_dir
from support.kafka_oracle import read_partition_dir_with_kafka_python


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


def test_offsets_are_assigned_from_the_log_end(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    first = log.append(batch([b"a", b"b"]))
    second = log.append(batch([b"c"]) + batch([b"d", b"e"]))
    assert (first.first_offset, first.last_offset) == (0, 1)
    assert (second.first_offset, second.last_offset, second.batch_count) == (2, 4, 2)
    assert log.log_end_offset == log.high_watermark == 5
    assert values(log) == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d"), (4, b"e")]
    assert values(log, 3) == [(3, b"d"), (4, b"e")]
    log.close()
    decoded = read_partition_dir_with_kafka_python(tmp_path / "events-0")
    assert [(r[0], r[3]) for r in decoded] == [
        (0, b"a"),
        (1, b"b"),
        (2, b"c"),
        (3, b"d"),
        (4, b"e"),
    ]


def test_reads_outside_the_log_are_out_of_range(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append(batch([b"a"]))
    assert log.read(1).data == b""
    with pytest.raises(OffsetOutOfRangeError, match="offset 2"):
        log.read(2)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1)


def test_read_respects_max_bytes_but_returns_one_whole_batch(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    big = batch([b"x" * 5000])
    log.append(big)
    log.append(batch([b"y"]))
    fetched = log.read(0, max_bytes=100)
    assert len(fetched.data) == len(big)  # min one message
    partial = log.read(0, max_bytes=100, min_one_message=False)
    assert len(partial.data) == 100


def test_append_rejects_bad_input_without_changing_the_log(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock, config=config(max_message_bytes=2000))
    log.append(batch([b"ok"]))
    corrupt = bytearray(batch([b"bad"]))
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match=r"CRC|crc"):
        log.append(bytes(corrupt))
    with pytest.raises(RecordTooLargeError, match=r"max\.message\.bytes"):
        log.append(batch([b"z" * 3000]))
    with pytest.raises(CorruptRecordError, match="torn"):
        log.append(batch([b"ok"])[:-3])
    with pytest.raises(InvalidRecordError):
        log.append(b"")
    assert values(log) == [(0, b"ok")]
    assert log.log_end_offset == 1


def test_compacted_topic_rejects_keyless_records(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, config=config(cleanup_policy=("compact",)))
    log.append(batch([b"v"], keys=[b"key"]))
    with pytest.raises(InvalidRecordError, match="requires a key"):
        log.append(batch([b"v", b"w"], keys=[b"key", None]))
    assert log.log_end_offset == 1


def test_record_checks_cover_every_batch_of_a_multi_batch_append(
    tmp_path: Path, clock: ManualClock
) -> None:
    """Producer batches all have base offset 0: the record scan once stopped after the
    first batch, so a keyless record (or a bad timestamp) in a later one got in."""
    log = open_log(tmp_path, clock, config=config(cleanup_policy=("compact",)))
    keyed = batch([b"v", b"w"], keys=[b"a", b"b"])
    with pytest.raises(InvalidRecordError, match="record 4 of the append has none"):
        log.append(keyed + keyed + batch([b"x"], keys=[None]))
    assert log.log_end_offset == 0
    bounded = open_log(
        tmp_path / "bounded", clock, config=config(message_timestamp_before_max_ms=1000)
    )
    with pytest.raises(InvalidRecordError, match=f"timestamp {T0 - 5000} is outside"):
        bounded.append(batch([b"a"]) + batch([b"b"]) + batch([b"c"], timestamp=T0 - 5000))
    assert bounded.log_end_offset == 0


def test_log_append_time_stamps_the_batch(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, config=config(message_timestamp_type="LogAppendTime"))
    clock.set_wall(T0 + 12345)
    info = log.append(batch([b"a", b"b"], timestamp=5))
    assert info.log_append_time_ms == T0 + 12345
    records = log.read_records(0)
    assert {r.timestamp for r in records} == {T0 + 12345}
    assert {r.timestamp_type for r in records} == {TimestampType.LOG_APPEND_TIME}
    log.close()
    decoded = read_partition_dir_with_kafka_python(tmp_path / "events-0")
    assert [r[1] for r in decoded] == [T0 + 12345] * 2  # CRC was recomputed: kafka-python agrees


def test_create_time_bounds_are_enforced_when_configured(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock, config=config(message_timestamp_after_max_ms=1000))
    log.append(batch([b"a"], timestamp=T0 + 1000))
    with pytest.raises(InvalidRecordError, match="outside"):
        log.append(batch([b"b"], timestamp=T0 + 1001))


def test_roll_on_segment_bytes(tmp_path: Path, clock: ManualClock) -> None:
    one = batch([b"x" * 100])
    log = open_log(tmp_path, clock, config=config(segment_bytes=len(one) * 3))
    reasons = [log.append(one).rolled for _ in range(7)]
    assert reasons == [
        None,
        None,
        None,
        RollReason.SEGMENT_BYTES,
        None,
        None,
        RollReason.SEGMENT_BYTES,
    ]
    assert [s.base_offset for s in log.segments] == [0, 3, 6]
    assert all(s.size <= len(one) * 3 for s in log.segments)
    with pytest.raises(RecordTooLargeError, match=r"segment\.bytes"):
        log.append(one * 4)


def test_roll_on_segment_ms_by_record_time_and_jitter(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, config=config(segment_ms=1000))
    log.append(batch([b"a"], timestamp=T0))
    assert log.append(batch([b"b"], timestamp=T0 + 1000)).rolled is None
    assert log.append(batch([b"c"], timestamp=T0 + 1001)).rolled is RollReason.SEGMENT_MS
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll_on_segment_ms_by_wall_clock_without_timestamps(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock, config=config(segment_ms=1000))
    log.append(batch([b"a"], timestamp=-1))
    clock.advance(1001)
    assert log.append(batch([b"b"], timestamp=-1)).rolled is RollReason.SEGMENT_MS


def test_roll_when_the_index_is_full(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, config=config(index_interval_bytes=0, segment_index_bytes=24))
    reasons = [log.append(batch([b"v"])).rolled for _ in range(6)]
    # 3 offset slots, first append never indexed: entries after appends 2..4 fill it
    assert reasons.count(RollReason.INDEX_FULL) >= 1
    for segment in log.segments[:-1]:
        assert segment.offset_index.file_size_bytes() == segment.offset_index.entries * 8


def test_roll_on_relative_offset_overflow(tmp_path: Path, clock: ManualClock) -> None:
    directory = tmp_path / "events-0"
    directory.mkdir()
    high = 2**31 - 2
    (directory / "00000000000000000000.log").write_bytes(
        encode_batch([Record(high, T0, b"k", b"v")], partition_leader_epoch=0)
    )
    log = open_log(tmp_path, clock)
    assert log.log_end_offset == high + 1
    info = log.append(batch([b"a", b"b"]))
    assert info.rolled is RollReason.OFFSET_OVERFLOW
    assert log.active_segment.base_offset == high + 1


def test_sparse_index_follows_kafka_and_is_trimmed_on_close(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock, config=config(segment_bytes=64 * 1024))
    for i in range(300):
        log.append(batch([b"v" * 200], timestamp=T0 + i * 7 % 50))
    assert len(log.segments) > 1
    for segment in log.segments[:-1]:
        assert segment.offset_index.entries > 0
        assert segment.offset_index.file_size_bytes() == segment.offset_index.entries * 8
        assert segment.time_index.file_size_bytes() == segment.time_index.entries * 12
    active = log.active_segment
    assert active.offset_index.file_size_bytes() == 10485760  # preallocated while active
    log.close()
    assert active.offset_index.file_size_bytes() == active.offset_index.entries * 8
    assert check_partition_dir(tmp_path / "events-0", index_interval_bytes=4096) == []


def test_list_offsets_by_timestamp(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, config=config(segment_bytes=2000, index_interval_bytes=100))
    stamps = [T0 + 10 * i for i in range(40)]
    stamps[17] = T0 + 10_000  # an out-of-order producer clock
    for i, ts in enumerate(stamps):
        log.append(batch([b"x" * 50], keys=[b"k%d" % i], timestamp=ts))
    assert len(log.segments) >= 3
    assert log.fetch_offset_by_timestamp(-2).offset == 0
    assert log.fetch_offset_by_timestamp(-1).offset == 40
    found = log.fetch_offset_by_timestamp(T0 + 55)
    assert (found.offset, found.timestamp) == (6, T0 + 60)
    assert log.fetch_offset_by_timestamp(T0 + 400).offset == 17  # first record with ts >= target
    assert log.fetch_offset_by_timestamp(T0 + 10_001) is None
    top = log.fetch_offset_by_timestamp(-3)
    assert (top.offset, top.timestamp) == (17, T0 + 10_000)


def test_truncate_to_removes_later_records_and_segments(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, config=config(segment_bytes=400))
    for i in range(20):
        log.append(batch([b"%d" % i]))
    bases = [s.base_offset for s in log.segments]
    target = bases[2] + 1
    log.truncate_to(target)
    assert log.log_end_offset == target
    assert [s.base_offset for s in log.segments] == bases[:3]
    assert values(log)[-1] == (target - 1, b"%d" % (target - 1))
    info = log.append(batch([b"new"]))
    assert info.first_offset == target
    log.close()
    names = sorted(p.name for p in (tmp_path / "events-0").iterdir())
    assert not [n for n in names if n.endswith(".deleted")]
    assert check_partition_dir(tmp_path / "events-0") == []


def test_truncate_below_the_first_segment_restarts_empty(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    log.append(batch([b"a", b"b"]))
    log.truncate_to(0)
    assert log.log_end_offset == 0 and values(log) == []
    assert log.append(batch([b"c"])).first_offset == 0


def test_clean_reopen_reads_everything_without_recovery(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, config=config(segment_bytes=1000))
    for i in range(30):
        log.append(batch([b"%d" % i]))
    expected = values(log)
    log.close()
    again = open_log(
        tmp_path,
        clock,
        config=config(segment_bytes=1000),
        had_clean_shutdown=True,
        recovery_point=30,
    )
    assert again.load_report.recovered == []
    assert values(again) == expected
    assert again.log_end_offset == 30 and again.recovery_point == 30
    assert again.append(batch([b"more"])).first_offset == 30


def test_leader_epoch_checkpoint_is_written_like_kafka(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    path = tmp_path / "events-0" / "leader-epoch-checkpoint"
    assert path.read_bytes() == b""  # Kafka creates it empty when the log opens (spec §6.3)
    log.append(batch([b"a"]))
    assert path.read_bytes() == b"0\n1\n0 0\n"
    raw = (tmp_path / "events-0" / "00000000000000000000.log").read_bytes()
    assert struct.unpack_from(">i", raw, 12)[0] == 0  # partitionLeaderEpoch stamped


def test_roll_flushes_in_the_background_and_a_truncation_voids_it(
    tmp_path: Path, clock: ManualClock
) -> None:
    from concurrent.futures import Future, ThreadPoolExecutor

    class Deferred(ThreadPoolExecutor):
        """Runs nothing until told: the test decides when the background flush happens."""

        def __init__(self) -> None:
            super().__init__(max_workers=1)
            self.tasks: list[tuple[object, tuple[object, ...]]] = []

        def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def, override]
            self.tasks.append((fn, args))
            return Future()

        def run(self) -> None:
            for fn, args in self.tasks:
                fn(*args)  # type: ignore[operator]
            self.tasks.clear()

    executor = Deferred()
    one = batch([b"x" * 100])
    log = Log.open(
        tmp_path / "events-0",
        TP,
        config(segment_bytes=len(one) * 2),
        clock=clock,
        flush_executor=executor,
    )
    for _ in range(3):
        log.append(one)
    assert len(log.segments) == 2 and log.recovery_point == 0  # the roll did not wait
    executor.run()
    assert log.recovery_point == 2
    for _ in range(2):
        log.append(one)  # rolls again at 4
    log.truncate_to(3)
    executor.run()
    assert log.recovery_point == 2  # planned before the truncation: void
