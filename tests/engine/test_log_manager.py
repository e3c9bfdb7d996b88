"""LogManager: log directories, lock, checkpoints, topics, placement, restart, deletion."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from log_support import T0, batch

from seglog.clock import ManualClock
from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager
from seglog.engine.producer import Producer, ProduceRecord
from seglog.errors import (
    InvalidConfigError,
    InvalidTopicError,
    TopicExistsError,
    UnknownTopicError,
)
from seglog.format.checkpoint import parse_offset_checkpoint
from seglog.format.topic_names import TopicPartition


def broker(*dirs: Path, **props: str) -> BrokerConfig:
    return BrokerConfig.from_properties({"log.dirs": ",".join(str(d) for d in dirs)} | props)


def open_manager(*dirs: Path, clock: ManualClock | None = None, **props: str) -> LogManager:
    return LogManager.open(broker(*dirs, **props), clock=clock or ManualClock(T0))


def test_a_new_root_gets_kafkas_files(tmp_path: Path) -> None:
    root = tmp_path / "data"
    with open_manager(root) as manager:
        assert manager.meta is not None and manager.meta.node_id == 1
    names = {p.name for p in root.iterdir()}
    assert {
        ".lock",
        "meta.properties",
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "replication-offset-checkpoint",
        "cleaner-offset-checkpoint",
        ".kafka_cleanshutdown",
    } <= names
    assert (root / ".kafka_cleanshutdown").read_bytes() == b'{"version":0,"brokerEpoch":-1}'
    assert (root / "recovery-point-offset-checkpoint").read_bytes() == b"0\n0\n"


def test_second_process_gets_a_clear_lock_error(tmp_path: Path) -> None:
    root = tmp_path / "data"
    with open_manager(root):
        code = (
            "import sys\n"
            "from seglog.config import BrokerConfig\n"
            "from seglog.engine.log_manager import LogManager\n"
            "from seglog.errors import LogDirectoryLockedError\n"
            f"props = {{'log.dirs': {str(root)!r}}}\n"
            "try:\n    LogManager.open(BrokerConfig.from_properties(props))\n"
            "except LogDirectoryLockedError as e:\n    print(e); sys.exit(3)\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=False
        )
        assert result.returncode == 3, result.stderr
        # the holder named: this test's process and its command line, from /proc/locks
        assert f"is locked by process {os.getpid()} (" in result.stdout, result.stdout
    with open_manager(root):  # released on close
        pass


def test_topics_create_describe_alter_and_survive_restart(tmp_path: Path) -> None:
    root = tmp_path / "data"
    with open_manager(root) as manager:
        manager.create_topic("prices", 3, {"cleanup.policy": "compact", "segment.bytes": "4096"})
        with pytest.raises(TopicExistsError):
            manager.create_topic("prices", 1)
        described = manager.describe_topic("prices")
        assert [p.partition for p in described.partitions] == [0, 1, 2]
        assert described.overrides == {"cleanup.policy": "compact", "segment.bytes": "4096"}
        assert described.config["segment.bytes"] == "4096"
        assert described.config["retention.ms"] == "604800000"
        manager.alter_topic("prices", {"retention.ms": "1000"})
        assert manager.get_log("prices", 1).config.retention_ms == 1000
        assert (
            (root / "prices-2" / "partition.metadata")
            .read_bytes()
            .startswith(b"version: 0\ntopic_id: ")
        )
    with open_manager(root) as manager:
        assert manager.topic_names() == ["prices"]
        log = manager.get_log("prices", 0)
        assert (
            log.config.is_compacted
            and log.config.segment_bytes == 4096
            and log.config.retention_ms == 1000
        )


def test_bad_topics_and_configs_are_rejected_with_nothing_created(tmp_path: Path) -> None:
    root = tmp_path / "data"
    with open_manager(root) as manager:
        for name in ("../escape", "a/b", ".", "..", "x" * 250, "", "bad name"):
            with pytest.raises(InvalidTopicError):
                manager.create_topic(name, 1)
        with pytest.raises(InvalidConfigError, match=r"segment\.bytez"):
            manager.create_topic("ok", 1, {"segment.bytez": "1"})
        with pytest.raises(InvalidConfigError, match=r"retention\.ms"):
            manager.create_topic("ok", 1, {"retention.ms": "soon"})
        with pytest.raises(UnknownTopicError):
            manager.get_log("missing", 0)
        assert manager.topic_names() == []
    assert not (tmp_path / "escape").exists()
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == []


def test_partitions_go_to_the_root_with_the_fewest(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    with open_manager(a, b, c) as manager:
        manager.create_topic("one", 4)
        manager.create_topic("two", 2)
    counts = {root.name: len([p for p in root.iterdir() if p.is_dir()]) for root in (a, b, c)}
    assert counts == {"a": 2, "b": 2, "c": 2}
    with open_manager(a, b, c) as manager:
        assert sorted(manager.partitions_of("one")) == [0, 1, 2, 3]
        manager.create_topic("three", 1)
    assert len([p for p in a.iterdir() if p.is_dir()]) == 3


def test_checkpoints_after_clean_shutdown_and_no_recovery_on_restart(tmp_path: Path) -> None:
    root = tmp_path / "data"
    with open_manager(root) as manager:
        manager.create_topic("events", 2)
        manager.get_log("events", 0).append(batch([b"a", b"b", b"c"]))
        manager.get_log("events", 1).append(batch([b"d"]))
    recovery = parse_offset_checkpoint((root / "recovery-point-offset-checkpoint").read_bytes())
    assert recovery == {TopicPartition("events", 0): 3, TopicPartition("events", 1): 1}
    hw = parse_offset_checkpoint((root / "replication-offset-checkpoint").read_bytes())
    assert hw == recovery
    assert parse_offset_checkpoint((root / "log-start-offset-checkpoint").read_bytes()) == {}
    with open_manager(root) as manager:
        assert all(not r.recovered for r in manager.load_reports)
        assert not (root / ".kafka_cleanshutdown").exists()  # taken at startup
        assert manager.get_log("events", 0).log_end_offset == 3


def test_unclean_shutdown_recovers_from_the_checkpointed_point(tmp_path: Path) -> None:
    root = tmp_path / "data"
    manager = open_manager(root)
    manager.create_topic("events", 1)
    log = manager.get_log("events", 0)
    log.append(batch([b"a"]))
    manager.checkpoint_all()
    log.append(batch([b"b"]))
    manager._release()  # the process dies: no flush, no marker
    with open_manager(root) as again:
        (report,) = again.load_reports
        assert not report.had_clean_shutdown and report.recovered
        assert again.get_log("events", 0).log_end_offset == 2


def test_delete_topic_renames_then_removes_after_the_delay(tmp_path: Path) -> None:
    root = tmp_path / "data"
    clock = ManualClock(T0)
    with open_manager(root, clock=clock) as manager:
        manager.create_topic("gone", 2)
        manager.get_log("gone", 0).append(batch([b"x"]))
        renamed = manager.delete_topic("gone")
        assert len(renamed) == 2 and all(p.name.endswith("-delete") for p in renamed)
        assert all(p.exists() for p in renamed)
        assert manager.topic_names() == []
        clock.advance(60_000)
        manager.scheduler.run_due()
        assert not any(p.exists() for p in renamed)
    with open_manager(root) as manager:
        assert manager.topic_names() == []


def test_delete_leftovers_are_removed_after_restart(tmp_path: Path) -> None:
    root = tmp_path / "data"
    clock = ManualClock(T0)
    with open_manager(root, clock=clock) as manager:
        manager.create_topic("gone", 1)
        (renamed,) = manager.delete_topic("gone")
    assert renamed.exists()
    with open_manager(root, clock=clock):
        assert not renamed.exists()  # nobody can be reading it: removed at startup


def test_producer_partitions_like_kafka(tmp_path: Path) -> None:
    from kafka.partitioner.default import murmur2  # the oracle

    with open_manager(tmp_path / "data") as manager:
        manager.create_topic("keyed", 5)
        producer = Producer(manager, "keyed")
        keys = [b"key-%d" % i for i in range(50)]
        placed = [producer.send(ProduceRecord(b"v", key=k, timestamp_ms=T0)) for k in keys]
        assert placed == [(murmur2(k) & 0x7FFFFFFF) % 5 for k in keys]
        keyless = [producer.send(ProduceRecord(b"v")) for _ in range(10)]
        assert keyless == [0, 1, 2, 3, 4] * 2
        summary = producer.flush()
        assert summary.records == 60
        assert sum(manager.get_log("keyed", p).log_end_offset for p in range(5)) == 60


def test_read_only_manager_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "data"
    with open_manager(root) as manager:
        manager.create_topic("t", 1)
        manager.get_log("t", 0).append(batch([b"x"]))
    before = sorted((p.name, p.stat().st_mtime_ns) for p in root.rglob("*"))
    manager = LogManager.open(broker(root), read_only=True)
    assert manager.get_log("t", 0).read_records(0)[0].value == b"x"
    with pytest.raises(InvalidConfigError, match="read-only"):
        manager.create_topic("u", 1)
    manager.close()
    assert sorted((p.name, p.stat().st_mtime_ns) for p in root.rglob("*")) == before


def test_log_dirs_describe_is_shaped_like_kafka_log_dirs(tmp_path: Path) -> None:
    with open_manager(tmp_path / "data") as manager:
        manager.create_topic("t", 1)
        manager.get_log("t", 0).append(batch([b"x"]))
        described = manager.describe_log_dirs()
    (broker_entry,) = described["brokers"]  # type: ignore[index]
    (log_dir,) = broker_entry["logDirs"]
    assert log_dir["partitions"] == [
        {"partition": "t-0", "size": len(batch([b"x"])), "offsetLag": 0, "isFuture": False}
    ]


def test_flush_messages_moves_the_recovery_point(tmp_path: Path) -> None:
    with open_manager(tmp_path / "data") as manager:
        manager.create_topic("f", 1, {"flush.messages": "3"})
        log = manager.get_log("f", 0)
        log.append(batch([b"a", b"b"]))
        assert log.recovery_point == 0
        log.append(batch([b"c"]))
        assert log.recovery_point == 3


def test_flush_ms_is_run_by_the_scheduler(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    props = {"log.flush.scheduler.interval.ms": "1000", "log.initial.task.delay.ms": "0"}
    with open_manager(tmp_path / "data", clock=clock, **props) as manager:
        manager.create_topic("f", 1, {"flush.ms": "5000"})
        log = manager.get_log("f", 0)
        log.append(batch([b"a"]))
        clock.advance(1000)
        manager.scheduler.run_due()
        assert log.recovery_point == 0  # flush.ms not reached yet
        clock.advance(4000)
        manager.scheduler.run_due()
        assert log.recovery_point == 1


def test_checkpoints_are_written_by_the_scheduler(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    root = tmp_path / "data"
    with open_manager(root, clock=clock) as manager:
        manager.create_topic("c", 1)
        manager.get_log("c", 0).append(batch([b"a", b"b"]))
        clock.advance(30_000 + 5_000)  # initial delay, then the high-watermark period
        manager.scheduler.run_due()
        hw = parse_offset_checkpoint((root / "replication-offset-checkpoint").read_bytes())
        assert hw == {TopicPartition("c", 0): 2}


def test_crash_after_topic_metadata_creates_the_missing_partitions(tmp_path: Path) -> None:
    """Step 1 of create (metadata in every root) done, step 2 (partition dirs) not."""
    root = tmp_path / "data"
    with open_manager(root) as manager:
        manager.create_topic("t", 3)
    for partition in (1, 2):
        for path in (root / f"t-{partition}").iterdir():
            path.unlink()
        (root / f"t-{partition}").rmdir()
    with open_manager(root) as manager:
        assert manager.partitions_of("t") == [0, 1, 2]
        assert (root / "t-2" / "partition.metadata").exists()


def test_crash_during_delete_is_finished_at_startup(tmp_path: Path) -> None:
    """Step 1 of delete (metadata marks the topic deleting) done, dirs still live."""
    root = tmp_path / "data"
    with open_manager(root) as manager:
        manager.create_topic("t", 2)
        manager.create_topic("keep", 1)
        manager._topics.topics["t"].deleting = True
        manager._write_topics()
    with open_manager(root) as manager:
        assert manager.topic_names() == ["keep"]
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == ["keep-0"]


def test_newest_topic_metadata_wins_across_roots(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    with open_manager(a, b) as manager:
        manager.create_topic("t", 2)
        stale = (a / "seglog-topics.json").read_bytes()
        manager.alter_topic("t", {"retention.ms": "1234"})
    (a / "seglog-topics.json").write_bytes(stale)  # a crash between the two roots' writes
    with open_manager(a, b) as manager:
        assert manager.get_log("t", 0).config.retention_ms == 1234


def test_roots_of_different_clusters_are_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    with open_manager(a):
        pass
    with open_manager(b):
        pass
    with pytest.raises(InvalidConfigError, match="different clusters"):
        open_manager(a, b)
    with open_manager(a):  # the failed open released its locks
        pass


def test_abort_leaves_no_marker_and_the_next_open_recovers(tmp_path: Path) -> None:
    root = tmp_path / "data"
    manager = open_manager(root)
    manager.create_topic("t", 1)
    manager.get_log("t", 0).append(batch([b"a"]))
    manager.abort()
    assert not (root / ".kafka_cleanshutdown").exists()
    with open_manager(root) as again:
        (report,) = again.load_reports
        assert report.recovered and again.get_log("t", 0).log_end_offset == 1


def test_a_damaged_metadata_copy_is_skipped_when_another_root_has_one(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    with open_manager(a, b) as manager:
        manager.create_topic("t", 2, {"cleanup.policy": "compact"})
    (a / "seglog-topics.json").write_bytes(b"{not json")
    with open_manager(a, b) as manager:
        assert manager.get_log("t", 0).config.is_compacted
        assert manager.metadata_problems and "seglog-topics.json" in manager.metadata_problems[0]


def test_metadata_damaged_everywhere_is_a_clear_error(tmp_path: Path) -> None:
    from seglog.errors import CorruptCheckpointError

    root = tmp_path / "data"
    with open_manager(root) as manager:
        manager.create_topic("t", 1, {"cleanup.policy": "compact"})
    (root / "seglog-topics.json").write_bytes(b'{"version": 1, "generation": "x", "topics": {}}')
    with pytest.raises(CorruptCheckpointError, match=r"seglog-topics\.json"):
        open_manager(root)
    # the failed open released its lock: the next attempt gets the same clear error, not
    # "locked by another process"
    with pytest.raises(CorruptCheckpointError, match=r"seglog-topics\.json"):
        open_manager(root)
