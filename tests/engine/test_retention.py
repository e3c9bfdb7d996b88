"""Retention on real logs (spec §14, seeds 002/003) with an injected clock: each rule, the roll
before deleting everything, file times, clock skew, reads during deletion, a crash in the
rename phase, and DeleteRecords under a reader."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from log_support import T0, batch, config

from seglog.clock import ManualClock
from seglog.config import BrokerConfig
from seglog.core.retention import RetentionRule
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager
from seglog.errors import InvalidConfigError, OffsetOutOfRangeError
from seglog.format.checkpoint import parse_offset_checkpoint
from seglog.format.topic_names import TopicPartition

DAY = 86_400_000
TP = TopicPartition("events", 0)


def one_per_segment(
    tmp_path: Path, clock: ManualClock, stamps: list[int], **overrides: object
) -> Log:
    """A log with one batch per segment, the i-th stamped ``stamps[i]``."""
    sample = batch([b"x" * 40])
    cfg = config(segment_bytes=len(sample), **overrides)
    log = Log.open(tmp_path / "events-0", TP, cfg, clock=clock)
    for i, ts in enumerate(stamps):
        log.append(batch([b"%039d" % i + b"x"], timestamp=ts))
    return log


def live_files(log: Log) -> list[str]:
    return sorted(p.name for p in log.directory.iterdir() if p.name.endswith((".log", ".deleted")))


def test_time_rule_deletes_expired_segments_by_their_largest_timestamp(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = one_per_segment(
        tmp_path, clock, [T0 - 9 * DAY, T0 - 8 * DAY, T0 - DAY, T0], retention_ms=7 * DAY
    )
    assert [s.base_offset for s in log.segments] == [0, 1, 2, 3]
    plan = log.apply_retention()
    assert [(d.base_offset, d.rule) for d in plan.deletions] == [
        (0, RetentionRule.TIME),
        (1, RetentionRule.TIME),
    ]
    assert [s.base_offset for s in log.segments] == [2, 3]
    assert log.log_start_offset == 2
    assert [r.offset for r in log.read_records(2)] == [2, 3]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(1)
    assert not list(log.directory.glob("*.deleted"))  # no manager: unlinked at once
    clock.advance(6 * DAY)
    assert log.apply_retention().is_empty  # exactly 7 days old: not "more than"
    clock.advance(1)
    assert [d.base_offset for d in log.apply_retention().deletions] == [2]


def test_size_rule_keeps_the_newest_bytes(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = one_per_segment(tmp_path, clock, [T0] * 5)
    size = log.segments[0].size
    log.config = config(segment_bytes=size, retention_bytes=2 * size)
    plan = log.apply_retention()
    assert [d.rule for d in plan.deletions] == [RetentionRule.SIZE] * 3
    assert log.size_bytes() == 2 * size and log.log_start_offset == 3


def test_all_expired_rolls_a_new_active_segment_first(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = one_per_segment(tmp_path, clock, [T0 - 9 * DAY] * 3, retention_ms=DAY)
    plan = log.apply_retention()
    assert plan.needs_roll and len(plan.deletions) == 3
    assert [s.base_offset for s in log.segments] == [3]
    assert log.active_segment.size == 0 and log.log_start_offset == log.log_end_offset == 3
    assert log.append(batch([b"after"])).first_offset == 3


def test_segments_without_timestamps_fall_back_to_the_file_time(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = one_per_segment(tmp_path, clock, [-1, -1, -1], retention_ms=DAY)
    old = (T0 - 3 * DAY) / 1000
    os.utime(log.segments[0].log_path, (old, old))
    young = T0 / 1000
    for segment in log.segments[1:]:
        os.utime(segment.log_path, (young, young))
    assert [d.base_offset for d in log.apply_retention().deletions] == [0]


def test_a_touched_file_does_not_save_a_segment_with_timestamps(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = one_per_segment(tmp_path, clock, [T0 - 9 * DAY, T0], retention_ms=DAY)
    now = T0 / 1000
    os.utime(log.segments[0].log_path, (now, now))  # seed 002: mtime is not trusted first
    assert [d.base_offset for d in log.apply_retention().deletions] == [0]


def test_producer_clocks_in_the_future_or_far_past(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = one_per_segment(tmp_path, clock, [T0 + 30 * DAY, 1_000, T0], retention_ms=7 * DAY)
    assert log.apply_retention().is_empty  # the future segment blocks the prefix, as in Kafka
    clock.advance(38 * DAY)
    assert [d.base_offset for d in log.apply_retention().deletions] == [0, 1, 2]


def test_far_past_timestamps_expire_at_once(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = one_per_segment(tmp_path, clock, [1_000, 2_000, T0], retention_ms=7 * DAY)
    assert [d.base_offset for d in log.apply_retention().deletions] == [0, 1]


def test_delete_records_moves_the_start_and_retention_follows(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = one_per_segment(tmp_path, clock, [T0] * 4)
    assert log.delete_records(2) == 2
    assert log.read_records(log.log_start_offset)[0].offset == 2
    with pytest.raises(OffsetOutOfRangeError):
        log.read(1)
    plan = log.apply_retention()
    assert [(d.base_offset, d.rule) for d in plan.deletions] == [
        (0, RetentionRule.LOG_START_OFFSET),
        (1, RetentionRule.LOG_START_OFFSET),
    ]
    assert log.delete_records(-1) == log.high_watermark == 4
    with pytest.raises(OffsetOutOfRangeError, match="high watermark"):
        log.delete_records(5)
    assert log.delete_records(1) == 4  # never moves back


def test_delete_records_needs_the_delete_policy(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = one_per_segment(tmp_path, clock, [T0], cleanup_policy=("compact",))
    with pytest.raises(InvalidConfigError, match=r"cleanup\.policy"):
        log.delete_records(0)


def test_a_reader_below_the_new_start_gets_out_of_range(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = one_per_segment(tmp_path, clock, [T0] * 6)
    reader = log.iter_records(0, max_bytes=1)  # one batch per fetch
    assert next(reader).offset == 0
    log.delete_records(4)
    with pytest.raises(OffsetOutOfRangeError, match="outside"):
        next(reader)  # its next fetch (offset 1) is below the log start now
    assert [r.offset for r in log.iter_records(log.log_start_offset)] == [4, 5]


def manager(root: Path, clock: ManualClock, **props: str) -> LogManager:
    return LogManager.open(
        BrokerConfig.from_properties({"log.dirs": str(root)} | props), clock=clock
    )


def test_manager_renames_now_and_unlinks_after_the_delay(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    root = tmp_path / "data"
    sample = batch([b"x" * 40])
    with manager(root, clock) as mgr:
        mgr.create_topic("events", 1, {"segment.bytes": str(len(sample)), "retention.ms": str(DAY)})
        log = mgr.get_log("events", 0)
        for ts in (T0 - 9 * DAY, T0 - 9 * DAY, T0):
            log.append(batch([b"x" * 40], timestamp=ts))
        held = log.segments[0]  # a reader holding the first segment
        results = mgr.run_retention()
        assert [(tp, [d.base_offset for d in plan.deletions]) for tp, plan in results] == [
            (TP, [0, 1])
        ]
        assert sorted(p.name for p in log.directory.glob("*.log.deleted")) == [
            "00000000000000000000.log.deleted",
            "00000000000000000001.log.deleted",
        ]
        assert held.read(0, 1000) is not None  # the holder still reads, files renamed
        # Kafka lists a log only when its start is past its first segment's base (here equal)
        checkpoint = root / "log-start-offset-checkpoint"
        assert parse_offset_checkpoint(checkpoint.read_bytes()) == {}
        mgr.delete_records({TP: 3})  # inside segment 2: now the checkpoint must say so
        assert parse_offset_checkpoint(checkpoint.read_bytes()) == {TP: 3}
        clock.advance(60_000)
        mgr.scheduler.run_due()
        assert not list(log.directory.glob("*.deleted"))


def test_scheduler_runs_retention_every_check_interval(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    props = {"log.retention.check.interval.ms": "1000", "log.initial.task.delay.ms": "0"}
    with manager(tmp_path / "data", clock, **props) as mgr:
        mgr.create_topic("events", 1, {"segment.bytes": "200", "retention.ms": "5000"})
        log = mgr.get_log("events", 0)
        for _ in range(3):
            log.append(batch([b"x" * 40], timestamp=T0))
        clock.advance(1000)
        mgr.scheduler.run_due()
        assert log.log_start_offset == 0
        clock.advance(5000)
        mgr.scheduler.run_due()
        assert log.log_start_offset > 0


def test_crash_in_the_rename_phase_leaves_nothing_half_deleted(tmp_path: Path) -> None:
    """Step 4 interrupted: segment 0 fully renamed, segment 1's .log renamed but its indexes
    not. After restart no .deleted file and no orphan index remains, and no record of a
    segment that was being deleted is readable as data."""
    clock = ManualClock(T0)
    log = one_per_segment(tmp_path, clock, [T0] * 4)
    log.close()
    directory = tmp_path / "events-0"
    for name in (
        "00000000000000000000.log",
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
        "00000000000000000001.log",
    ):
        (directory / name).rename(directory / (name + ".deleted"))
    again = Log.open(
        directory,
        TP,
        log.config,
        clock=clock,
        had_clean_shutdown=True,
        recovery_point=4,
        log_start_offset=0,
    )
    names = sorted(p.name for p in directory.iterdir())
    assert not [n for n in names if n.endswith(".deleted")]
    assert (
        "00000000000000000001.index" not in names and "00000000000000000001.timeindex" not in names
    )
    assert [s.base_offset for s in again.segments] == [2, 3]
    assert again.log_start_offset == 2
    assert [r.offset for r in again.read_records(2)] == [2, 3]


@pytest.mark.parametrize(
    ("policy", "offset_5_survives"),
    [("delete", False), ("compact", True), ("compact,delete", False)],
)
def test_seed_003_one_queue_under_three_policies(
    tmp_path: Path, policy: str, offset_5_survives: bool
) -> None:
    """Seed 003: the record at offset 5 is the latest for key2 but past retention. Under
    ``delete`` and ``compact,delete`` retention removes it; under ``compact`` retention does not
    apply and it stays (the whole example, with the log cleaner, is
    ``test_cleaner.test_seed_003_one_queue_under_three_policies_with_the_cleaner``)."""
    clock = ManualClock(T0)
    sample = batch([b"v"], keys=[b"key0"])
    cfg = config(
        segment_bytes=len(sample) * 3, retention_ms=7 * DAY, cleanup_policy=tuple(policy.split(","))
    )
    log = Log.open(tmp_path / "events-0", TP, cfg, clock=clock)
    keys = [b"key1", b"key2", b"key1", b"key3", b"key1", b"key2", b"key3", b"key4", b"key4"]
    old = T0 - 30 * DAY
    for i, key in enumerate(keys):
        log.append(batch([b"v%d" % i], keys=[key], timestamp=old if i < 6 else T0))
    log.apply_retention()
    kept = {r.offset: r.key for r in log.read_records(log.log_start_offset, 100)}
    assert (5 in kept) is offset_5_survives
    assert {6, 7, 8} <= set(kept)


def test_rules_combine_in_kafkas_order_on_a_real_log(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    stamps = [T0 - 10 * DAY, T0 - 9 * DAY, T0 - 8 * DAY, T0 - 3 * DAY, T0 - DAY, T0]
    log = one_per_segment(tmp_path, clock, stamps)
    size = log.segments[0].size
    log.config = config(segment_bytes=size, retention_ms=7 * DAY, retention_bytes=4 * size)
    log.delete_records(1)  # segment 0 holds only offset 0
    plan = log.apply_retention()
    assert [(d.base_offset, d.rule) for d in plan.deletions] == [
        (0, RetentionRule.LOG_START_OFFSET),
        (1, RetentionRule.SIZE),  # 5 segments left, 4 allowed
        (2, RetentionRule.TIME),  # 8 days old
    ]
    assert [s.base_offset for s in log.segments] == [3, 4, 5] and log.log_start_offset == 3
