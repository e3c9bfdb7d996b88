"""Raising a topic's partition count is crash-safe: a crash at any file operation of it leaves
a directory that opens with either the old count or the new one, every partition present
with its ``partition.metadata``, the records already written intact, and the increase
repeatable."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.checkpoint import parse_partition_metadata
from seglog.testing.crash import (
    SimulatedCrash,
    close_fds_opened_since,
    count_operations,
    crash_at,
    open_fds,
)

TOPIC = "events"


def prepare(root: Path) -> None:
    with open_log_dirs([root]) as manager:
        manager.create_topic(TOPIC, 2)
        for p in range(2):
            manager.get_log(TOPIC, p).append_records([(b"k%d" % p, b"v%d" % p)])


def check(root: Path) -> int:
    """Open the directory as the next start would; return the partition count seen."""
    with open_log_dirs([root]) as manager:
        partitions = manager.partitions_of(TOPIC)
        description = manager.describe_topic(TOPIC)
        for p in range(2):
            records = list(manager.get_log(TOPIC, p).iter_records(0))
            assert [(r.key, r.value) for r in records] == [(b"k%d" % p, b"v%d" % p)]
    assert partitions == list(range(len(partitions))), partitions
    for p in partitions:
        path = root / f"{TOPIC}-{p}" / "partition.metadata"
        topic_id = parse_partition_metadata(path.read_bytes(), path=str(path))
        assert topic_id == description.topic_id
    return len(partitions)


def increase(manager: LogManager) -> None:
    manager.increase_partitions(TOPIC, 4)


def test_a_crash_at_any_operation_leaves_the_old_or_the_new_count(tmp_path: Path) -> None:
    template = tmp_path / "template"
    prepare(template)
    counting = tmp_path / "count"
    shutil.copytree(template, counting)
    with open_log_dirs([counting]) as manager, count_operations() as ops:
        increase(manager)
    assert check(counting) == 4
    assert any(op == "mkdir" for op, _ in ops.operations), ops.operations
    seen = set()
    for n in range(1, ops.count + 1):
        for after in (False, True):
            trial = tmp_path / f"crash-{n}-{int(after)}"
            shutil.copytree(template, trial)
            fds = open_fds()
            manager = open_log_dirs([trial])
            with crash_at(n, after=after):
                with pytest.raises(SimulatedCrash):
                    increase(manager)
                manager.abort()
            del manager
            close_fds_opened_since(fds, trial)
            count = check(trial)
            seen.add(count)
            if count == 2:  # the crash came before the new count was durable: do it again
                with open_log_dirs([trial]) as manager:
                    increase(manager)
                assert check(trial) == 4
    assert seen == {2, 4}, seen
