"""The cleaner manager's state machine (spec ``kafka-cleaner.md`` §2.6), checkpoints, the
throttler and the cleaner threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from seglog.clock import ManualClock
from seglog.config import BrokerConfig
from seglog.engine.cleaning.cleaner import CleaningAbortedError, Throttler
from seglog.engine.cleaning.cleaner_manager import IllegalCleaningStateError
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.builder import BatchBuilder
from seglog.format.topic_names import TopicPartition

TP = TopicPartition("t", 0)


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[LogManager]:
    m = open_log_dirs([tmp_path / "data"], clock=ManualClock())
    m.create_topic("t", 1, configs={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0"})
    yield m
    m.close()


def fill(log: Log, clock: ManualClock, count: int = 50) -> None:
    for i in range(count):
        builder = BatchBuilder()
        builder.append(clock.now_ms(), b"k%d" % (i % 5), b"v%d" % i)
        log.append(builder.build())
    log.roll()


def test_state_transitions(manager: LogManager) -> None:
    cm = manager.cleaner_manager
    assert cm.state_of(TP) == "none"
    cm.abort_and_pause(TP)
    assert cm.state_of(TP) == "paused(1)"
    cm.abort_and_pause(TP)
    assert cm.state_of(TP) == "paused(2)"
    cm.resume(TP)
    assert cm.state_of(TP) == "paused(1)"
    cm.resume(TP)
    assert cm.state_of(TP) == "none"
    with pytest.raises(IllegalCleaningStateError):
        cm.resume(TP)
    with pytest.raises(IllegalCleaningStateError):
        cm.done_deleting(TP)
    assert cm.claim_for_deletion(TP)
    assert cm.state_of(TP) == "in progress"
    assert not cm.claim_for_deletion(TP)
    with pytest.raises(IllegalCleaningStateError):
        cm.resume(TP)
    cm.done_deleting(TP)
    assert cm.state_of(TP) == "none"


def test_paused_partition_is_not_cleaned(manager: LogManager) -> None:
    clock = manager.clock
    assert isinstance(clock, ManualClock)
    fill(manager.get_log("t", 0), clock)
    with manager.cleaner_manager.paused(TP):
        assert manager.clean_once() == []
        assert manager.run_retention() == []  # retention cannot claim it either
    [result] = manager.clean_once()
    assert result.stats is not None


def test_abort_during_a_round_waits_and_writes_no_checkpoint(manager: LogManager) -> None:
    clock = manager.clock
    assert isinstance(clock, ManualClock)
    log = manager.get_log("t", 0)
    fill(log, clock)
    before = [(r.offset, r.value) for r in log.iter_records(0)]
    cm = manager.cleaner_manager
    entered, release = threading.Event(), threading.Event()
    cleaner = manager.log_cleaner._cleaner(0)
    original = cleaner.build_offset_map

    def slow_build(*args: object, **kwargs: object) -> None:
        entered.set()
        release.wait(5)
        original(*args, **kwargs)  # type: ignore[arg-type]

    cleaner.build_offset_map = slow_build  # type: ignore[method-assign]
    results: list[object] = []
    worker = threading.Thread(target=lambda: results.extend(manager.clean_once()))
    worker.start()
    assert entered.wait(5)
    assert cm.state_of(TP) == "in progress"
    aborter = threading.Thread(target=cm.abort_and_pause, args=(TP,))
    aborter.start()
    time.sleep(0.05)
    assert cm.state_of(TP) == "aborted"
    release.set()
    aborter.join(5)
    worker.join(5)
    assert cm.state_of(TP) == "paused(1)"
    assert TP not in manager.cleaner_checkpoints()
    assert [(r.offset, r.value) for r in log.iter_records(0)] == before
    assert not list(log.directory.glob("*.cleaned"))
    cm.resume(TP)


def test_check_done_raises_when_aborted(manager: LogManager) -> None:
    cm = manager.cleaner_manager
    assert cm.claim_for_deletion(TP)
    done = threading.Thread(target=cm.abort_and_pause, args=(TP,))
    done.start()
    time.sleep(0.05)
    assert cm.is_aborted(TP)
    with pytest.raises(CleaningAbortedError):
        if cm.is_aborted(TP):
            raise CleaningAbortedError("aborted")
    cm.done_deleting(TP)
    done.join(5)
    assert cm.state_of(TP) == "paused(1)"


def test_invalid_checkpoint_is_reset_even_when_not_chosen(manager: LogManager) -> None:
    clock = manager.clock
    assert isinstance(clock, ManualClock)
    log = manager.get_log("t", 0)
    fill(log, clock, 3)
    cm = manager.cleaner_manager
    cm.update_checkpoint(TP, log, 10_000)  # past the log end: corruption, re-clean all
    manager.alter_topic("t", {"min.cleanable.dirty.ratio": "1"})  # not eligible
    assert cm.grab_filthiest(clock.now_ms()) is None
    assert manager.cleaner_checkpoints()[TP] == 0


def test_topic_deletion_removes_the_checkpoint_entry(manager: LogManager) -> None:
    clock = manager.clock
    assert isinstance(clock, ManualClock)
    fill(manager.get_log("t", 0), clock)
    manager.clean_once()
    assert TP in manager.cleaner_checkpoints()
    manager.delete_topic("t")
    assert TP not in manager.cleaner_checkpoints()


def test_throttler_sleeps_to_the_target_rate() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    throttler = Throttler(1000.0, monotonic=lambda: now[0], sleep=sleep)
    now[0] = 0.5
    throttler.maybe_throttle(1000)  # 2000 B/s observed over 0.5 s: sleep 0.5 s
    assert slept == [pytest.approx(0.5)]
    now[0] += 0.1
    throttler.maybe_throttle(10)  # below the check interval: no decision
    assert len(slept) == 1
    unlimited = Throttler(float("inf"), monotonic=lambda: now[0], sleep=sleep)
    unlimited.maybe_throttle(10**12)
    assert len(slept) == 1


def test_cleaner_threads_clean_in_the_background(tmp_path: Path) -> None:
    m = LogManager.open(
        BrokerConfig.from_properties(
            {"log.dirs": str(tmp_path / "d"), "log.cleaner.backoff.ms": "20"}
        ),
        start_scheduler=True,
    )
    try:
        m.create_topic("t", 1, configs={"cleanup.policy": "compact"})
        log = m.get_log("t", 0)
        for i in range(40):
            builder = BatchBuilder()
            builder.append(int(time.time() * 1000), b"k%d" % (i % 4), b"v%d" % i)
            log.append(builder.build())
        log.roll()
        deadline = time.monotonic() + 20
        while TP not in m.cleaner_checkpoints() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert m.cleaner_checkpoints()[TP] == 40
        assert [r.value for r in log.iter_records(0)] == [b"v36", b"v37", b"v38", b"v39"]
        assert m.log_cleaner.metrics()["DeadThreadCount"] == 0
    finally:
        m.close()
    assert not m.log_cleaner.is_running


def test_truncation_pauses_cleaning_and_lowers_the_checkpoint(manager: LogManager) -> None:
    clock = manager.clock
    assert isinstance(clock, ManualClock)
    log = manager.get_log("t", 0)
    fill(log, clock, 20)
    fill(log, clock, 20)
    manager.clean_once()
    assert manager.cleaner_checkpoints()[TP] == 40
    removed = manager.truncate(TP, 10)
    assert removed > 0 and log.log_end_offset == 10
    assert manager.cleaner_checkpoints()[TP] == log.active_segment.base_offset <= 10
    assert manager.cleaner_manager.state_of(TP) == "none"
