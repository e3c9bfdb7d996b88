"""The compacted copy across truncation, damaged status files, no-op runs and interrupts."""

from __future__ import annotations

from pathlib import Path

import pytest

from seglog.clock import ManualClock
from seglog.engine.compaction.compactor import iter_compacted_records, read_compacted_records
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.builder import BatchBuilder
from seglog.format.topic_names import TopicPartition

TP = TopicPartition("t", 0)


def produce(log: Log, clock: ManualClock, pairs: list[tuple[bytes, bytes | None]]) -> None:
    for key, value in pairs:
        builder = BatchBuilder()
        builder.append(clock.now_ms(), key, value)
        log.append(builder.build())


def view(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for r in iter_compacted_records(log, 0)]


@pytest.fixture
def setup(tmp_path: Path) -> tuple[LogManager, Log, ManualClock]:
    clock = ManualClock()
    manager = open_log_dirs([tmp_path / "d"], clock=clock)
    manager.create_topic("t", 1)
    return manager, manager.get_log("t", 0), clock


def test_truncation_below_the_horizon_withdraws_the_copy(
    setup: tuple[LogManager, Log, ManualClock],
) -> None:
    manager, log, clock = setup
    produce(log, clock, [(b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"b", b"2")])
    manager.compact("t")
    assert view(log) == [(2, b"a", b"2"), (3, b"b", b"2")]
    manager.truncate(TP, 2)
    produce(log, clock, [(b"z", b"1"), (b"y", b"1")])
    assert view(log) == [(0, b"a", b"1"), (1, b"b", b"1"), (2, b"z", b"1"), (3, b"y", b"1")]
    assert not (log.directory / "compaction" / "published.json").exists()
    assert not list((log.directory / "compaction").glob("copy-*"))
    manager.compact("t")
    assert view(log) == [(0, b"a", b"1"), (1, b"b", b"1"), (2, b"z", b"1"), (3, b"y", b"1")]
    manager.close()


def test_a_copy_ahead_of_the_log_is_withdrawn_at_startup(
    setup: tuple[LogManager, Log, ManualClock], tmp_path: Path
) -> None:
    manager, log, clock = setup
    produce(log, clock, [(b"a", b"1"), (b"a", b"2"), (b"a", b"3")])
    manager.compact("t")
    directory = log.directory
    manager.close()
    # Simulate a log that lost its tail (e.g. an unflushed tail cut by recovery).
    published = (directory / "compaction" / "published.json").read_text()
    (directory / "compaction" / "published.json").write_text(
        published.replace('"horizon": 2', '"horizon": 7')
    )
    again = open_log_dirs([tmp_path / "d"], clock=clock)
    log = again.get_log("t", 0)
    assert view(log) == [(0, b"a", b"1"), (1, b"a", b"2"), (2, b"a", b"3")]
    assert not list((directory / "compaction").glob("copy-*"))
    again.close()


def test_a_damaged_status_file_does_not_block_opening(
    setup: tuple[LogManager, Log, ManualClock], tmp_path: Path
) -> None:
    manager, log, clock = setup
    produce(log, clock, [(b"a", b"1"), (b"a", b"2")])
    manager.compact("t")
    directory = log.directory
    manager.close()
    (directory / "compaction" / "status.json").write_text("{")
    again = open_log_dirs([tmp_path / "d"], clock=clock)
    [status] = again.compaction_status("t").values()
    assert status.state == "ERROR" and "unreadable" in status.message
    assert view(again.get_log("t", 0)) == [(1, b"a", b"2")]
    again.compact("t")  # a no-op run (nothing new) still succeeds
    again.close()


def test_a_noop_run_keeps_the_figures_of_the_copy(
    setup: tuple[LogManager, Log, ManualClock],
) -> None:
    manager, log, clock = setup
    produce(log, clock, [(b"a", b"1"), (b"a", b"2"), (b"b", b"1")])
    manager.compact("t")
    first = manager.compaction_status("t")[TP].figures
    manager.compact("t")
    status = manager.compaction_status("t")[TP]
    assert status.state == "SUCCESS" and "nothing new" in status.message
    assert status.figures == first
    manager.close()


def test_an_interrupt_leaves_error_not_running(
    setup: tuple[LogManager, Log, ManualClock], monkeypatch: pytest.MonkeyPatch
) -> None:
    manager, log, clock = setup
    produce(log, clock, [(b"a", b"1"), (b"a", b"2")])

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("seglog.engine.compaction.compactor.Compactor.compact", interrupted)
    with pytest.raises(KeyboardInterrupt):
        manager.compact("t")
    status = manager.compaction_status("t")[TP]
    assert status.state == "ERROR" and "KeyboardInterrupt" in status.message
    manager.close()


def test_reads_from_the_middle_use_the_index(setup: tuple[LogManager, Log, ManualClock]) -> None:
    manager, log, clock = setup
    produce(log, clock, [(b"k%03d" % i, b"v") for i in range(300)])
    manager.compact("t")
    produce(log, clock, [(b"k000", b"new")])
    records = [(r.offset, r.key) for r in iter_compacted_records(log, 250)]
    assert records[0] == (250, b"k250") and records[-1] == (300, b"k000")
    assert [o for o, _ in records] == list(range(250, 301))
    manager.close()


def test_read_compacted_readers(setup: tuple[LogManager, Log, ManualClock]) -> None:
    manager, log, clock = setup
    produce(log, clock, [(b"a", b"1"), (b"a", b"2"), (b"b", b"1")])
    manager.compact("t")
    produce(log, clock, [(b"a", b"3")])
    got = [(r.offset, r.value) for r in iter_compacted_records(log, 0)]
    assert got == [(1, b"2"), (2, b"1"), (3, b"3")]
    assert [r.offset for r in read_compacted_records(log, 0, 2)] == [1, 2]
    assert [r.offset for r in manager.read_compacted("t", 0, 0, 2)] == [1, 2]
    assert [r.offset for r in log.read_records(0)] == [0, 1, 2, 3]
    manager.close()
