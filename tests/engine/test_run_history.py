"""The retention and compaction histories (``seglog.storage.history_file``,
``seglog.engine.run_history``) on real data dirs: what is recorded, the bound, pruning of
deleted partitions, damaged files (never fatal, started over) and read-only opens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seglog.clock import ManualClock
from seglog.engine.cleaning.cleaner import LegacyFormatError
from seglog.engine.inspect.report_data import gather_report
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.batch import encode_batch
from seglog.format.records import Record
from seglog.storage.history_file import (
    COMPACTION_HISTORY_FILE,
    HISTORY_ENTRIES_MAX,
    RETENTION_HISTORY_FILE,
    History,
    HistoryFile,
)
from support.legacy_messages import legacy_message

T0 = 1_700_000_000_000
DAY = 86_400_000


def one_record(key: bytes, value: bytes, timestamp: int) -> bytes:
    return encode_batch([Record(0, timestamp, key, value)])


SEGMENT_BYTES = str(len(one_record(b"k", b"v" * 40, T0)))


def make_events(manager: LogManager, partitions: int = 1) -> None:
    manager.create_topic(
        "events", partitions, {"retention.ms": str(DAY), "segment.bytes": SEGMENT_BYTES}
    )


def age_out(
    manager: LogManager,
    clock: ManualClock,
    partition: int = 0,
    count: int = 2,
    *,
    fresh: bool = True,
) -> None:
    """Append ``count`` old segments and (``fresh``) a new one, so retention deletes ``count``
    (without the new one, it rolls first and deletes them all)."""
    log = manager.get_log("events", partition)
    for i in range(count):
        log.append(one_record(b"k", b"%d" % i + b"v" * 39, clock.now_ms() - 2 * DAY))
    if fresh:
        log.append(one_record(b"k", b"n" + b"v" * 39, clock.now_ms()))


def read_json(path: Path) -> dict[str, list[dict[str, object]]]:
    body = json.loads(path.read_text())
    assert body["version"] == 1
    partitions: dict[str, list[dict[str, object]]] = body["partitions"]
    return partitions


def test_retention_pass_is_recorded_with_segments_bytes_and_reasons(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    with open_log_dirs([tmp_path], clock=clock) as manager:
        make_events(manager)
        age_out(manager, clock)
        log = manager.get_log("events", 0)
        sizes = [s.size for s in log.segments[:2]]
        clock.advance(5_000)
        [(tp, plan)] = manager.run_retention()
    (entry,) = read_json(tmp_path / RETENTION_HISTORY_FILE)["events-0"]
    assert entry["time_ms"] == T0 + 5_000
    assert entry["segment_count"] == 2 and entry["bytes"] == sum(sizes) == plan.size_bytes
    assert entry["rules"] == ["retention.ms"] and entry["log_start_offset"] == 2
    assert entry["rolled"] is False
    segments = entry["segments"]
    assert isinstance(segments, list)
    assert [(s["base_offset"], s["size_bytes"], s["rule"]) for s in segments] == [
        (0, sizes[0], "retention.ms"),
        (1, sizes[1], "retention.ms"),
    ]
    assert all("over retention.ms 86400000" in s["reason"] for s in segments)
    # a pass that deletes nothing records nothing
    with open_log_dirs([tmp_path], clock=clock) as manager:
        assert manager.run_retention() == []
        assert len(manager.history.retention_events(tp)) == 1


def test_compactor_runs_are_recorded_including_failures(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    with open_log_dirs([tmp_path], clock=clock) as manager:
        manager.create_topic("kv", 1, {"cleanup.policy": "compact"})
        log = manager.get_log("kv", 0)
        for i in range(6):
            log.append(one_record(b"k%d" % (i % 3), b"v%d" % i, T0))
        run = manager.compact("kv")[log.topic_partition]
        clock.advance(1_000)
        noop = manager.compact("kv")[log.topic_partition]
        assert noop.is_noop
        segment = log.active_segment.log_path
    # A legacy (v1) message set, as a pre-0.11 broker wrote it, makes the run fail (the
    # compactor refuses what the cleaner refuses): recorded too.
    with open(segment, "ab") as handle:
        handle.write(legacy_message(6, 1, b"t", b"x", timestamp=T0))
    with open_log_dirs([tmp_path], clock=clock) as manager:
        log = manager.get_log("kv", 0)
        clock.advance(1_000)
        with pytest.raises(LegacyFormatError):
            manager.compact("kv")
        runs = manager.history.compaction_runs(log.topic_partition)
    first, second, failed = runs
    assert first["time_ms"] == T0 and first["state"] == "SUCCESS"
    assert (first["horizon"], first["previous_horizon"], first["keys"]) == (5, -1, 3)
    assert first["bytes_before"] == run.bytes_read > first["bytes_after"] == run.copy_bytes > 0
    assert (first["records_read"], first["records_kept"]) == (6, 3)
    assert first["is_noop"] is False and second["is_noop"] is True
    assert second["time_ms"] == T0 + 1_000
    assert failed["state"] == "ERROR" and failed["time_ms"] == T0 + 2_000
    assert isinstance(failed["error"], str)
    assert failed["error"].startswith("LegacyFormatError: ")
    assert read_json(tmp_path / COMPACTION_HISTORY_FILE)["kv-0"] == runs


def test_history_keeps_the_newest_entries_per_partition(tmp_path: Path) -> None:
    history = HistoryFile(tmp_path / "h.json", max_entries=3)
    for i in range(7):
        history.append([("a-0", {"time_ms": i}), ("b-0", {"time_ms": 100 + i})])
    partitions = read_json(tmp_path / "h.json")
    assert [e["time_ms"] for e in partitions["a-0"]] == [4, 5, 6]
    assert [e["time_ms"] for e in partitions["b-0"]] == [104, 105, 106]
    with pytest.raises(ValueError):
        HistoryFile(tmp_path / "x.json", max_entries=0)
    with pytest.raises(ValueError):
        History().add("a-0", {"time_ms": "soon"}, 3)


def test_retention_history_is_bounded_on_a_real_data_dir(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    passes = HISTORY_ENTRIES_MAX + 5
    with open_log_dirs([tmp_path], clock=clock) as manager:
        make_events(manager)
        for _ in range(passes):
            age_out(manager, clock, count=1, fresh=False)
            clock.advance(1)
            assert len(manager.run_retention()) == 1
        events = manager.history.retention_events(manager.get_log("events", 0).topic_partition)
    assert len(events) == HISTORY_ENTRIES_MAX
    assert [e["time_ms"] for e in events] == [T0 + i for i in range(5 + 1, passes + 1)]
    assert len(read_json(tmp_path / RETENTION_HISTORY_FILE)["events-0"]) == HISTORY_ENTRIES_MAX


def test_entries_of_deleted_partitions_are_dropped_at_the_next_write(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    with open_log_dirs([tmp_path], clock=clock) as manager:
        make_events(manager, partitions=2)
        age_out(manager, clock, partition=0)
        manager.run_retention()
        assert set(read_json(tmp_path / RETENTION_HISTORY_FILE)) == {"events-0"}
        manager.delete_topic("events")
        make_events(manager, partitions=2)
        age_out(manager, clock, partition=1)
        manager.run_retention()
    assert set(read_json(tmp_path / RETENTION_HISTORY_FILE)) == {"events-1"}


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"{not json",
        b'{"version": 2, "partitions": {}}',
        b'{"version": 1, "partitions": {"events-0": [{"no_time": 1}]}}',
        b'{"version": 1, "partitions": {"events-0": "x"}}',
        b"[1, 2, 3]",
        b"\xff\xfe\x00",
        b"[" * 100_000,
    ],
    ids=["empty", "truncated", "version", "entry", "list", "array", "binary", "deep"],
)
def test_a_damaged_history_never_stops_the_log_and_starts_over(
    tmp_path: Path, damage: bytes
) -> None:
    clock = ManualClock(T0)
    with open_log_dirs([tmp_path], clock=clock) as manager:
        make_events(manager)
    for name in (RETENTION_HISTORY_FILE, COMPACTION_HISTORY_FILE):
        (tmp_path / name).write_bytes(damage)
    # A read-only open reports the damage and changes nothing.
    with open_log_dirs([tmp_path], clock=clock, read_only=True) as manager:
        report = gather_report(manager)
        assert len([p for p in report.problems if "unreadable history" in p]) == 2
        assert report.topics[0].partitions[0].retention_events == ()
    assert (tmp_path / RETENTION_HISTORY_FILE).read_bytes() == damage
    # A read-write open works as usual; the next write starts the file over.
    with open_log_dirs([tmp_path], clock=clock) as manager:
        age_out(manager, clock)
        assert len(manager.run_retention()) == 1
        manager.compact("events")
        assert any(RETENTION_HISTORY_FILE in p for p in manager.history.problems())
    assert [
        e["segment_count"] for e in read_json(tmp_path / RETENTION_HISTORY_FILE)["events-0"]
    ] == [2]
    assert len(read_json(tmp_path / COMPACTION_HISTORY_FILE)["events-0"]) == 1


def test_an_oversized_history_reads_as_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "h.json"
    HistoryFile(path).append([("a-0", {"time_ms": 1, "pad": "x" * 200})])
    monkeypatch.setattr("seglog.storage.history_file.HISTORY_MAX_BYTES", 100)
    history = HistoryFile(path)
    assert history.read().partitions == {}
    assert "above the limit" in history.problems[0]


def test_read_only_manager_records_nothing(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    with open_log_dirs([tmp_path], clock=clock) as manager:
        make_events(manager)
        age_out(manager, clock)
    with open_log_dirs([tmp_path], clock=clock, read_only=True) as manager:
        assert manager.run_retention(dry_run=True)  # a plan, nothing applied
    assert not (tmp_path / RETENTION_HISTORY_FILE).exists()
    assert not (tmp_path / COMPACTION_HISTORY_FILE).exists()
