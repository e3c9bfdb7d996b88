"""Offset commits are atomic: a crash at any file operation of a commit (also the first one,
which creates ``__consumer_offsets``) leaves a directory whose store loads every partition
of the commit at the old offset or every one at the new offset, never a mix, and takes the
commit again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from seglog.broker.groups.offsets_store import OffsetAndMetadata, OffsetsStore
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.topic_names import TopicPartition
from seglog.testing.crash import (
    SimulatedCrash,
    close_fds_opened_since,
    count_operations,
    crash_at,
    open_fds,
)

T0 = 1_700_000_000_000
PARTITIONS = [TopicPartition("t", p) for p in range(3)]
PROPS = {"offsets.topic.num.partitions": "2"}


def _open(root: Path) -> LogManager:
    return open_log_dirs([root], overrides=PROPS)


def commit(manager: LogManager, offset: int) -> None:
    store = OffsetsStore.open(manager)
    store.commit("g", {tp: OffsetAndMetadata(offset) for tp in PARTITIONS}, now_ms=T0)


def committed(root: Path) -> set[int]:
    """The distinct committed offsets of the group (empty: none)."""
    with _open(root) as manager:
        offsets = OffsetsStore.open(manager).committed("g")
    assert not offsets or set(offsets) == set(PARTITIONS), offsets
    return set(v.offset for v in offsets.values())


@pytest.mark.parametrize("first", [True, False], ids=["creating-the-topic", "later-commit"])
def test_a_crash_at_any_operation_of_a_commit_keeps_it_whole_or_not_at_all(
    tmp_path: Path, first: bool
) -> None:
    template = tmp_path / "template"
    with _open(template) as manager:
        if not first:
            commit(manager, 1)
    before = set() if first else {1}
    counting = tmp_path / "count"
    shutil.copytree(template, counting)
    with _open(counting) as manager, count_operations() as ops:
        commit(manager, 5)
    assert committed(counting) == {5}
    assert any(op == "write" for op, _ in ops.operations), ops.operations
    seen = []
    for n in range(1, ops.count + 1):
        for after in (False, True):
            trial = tmp_path / f"crash-{n}-{int(after)}"
            shutil.copytree(template, trial)
            fds = open_fds()
            manager = _open(trial)
            with crash_at(n, after=after):
                with pytest.raises(SimulatedCrash):
                    commit(manager, 5)
                manager.abort()
            del manager
            close_fds_opened_since(fds, trial)
            state = committed(trial)
            assert state in (before, {5}), (n, after, state)
            seen.append(state == {5})
            if state == before:  # not durable yet: the client retries
                with _open(trial) as manager:
                    commit(manager, 5)
                assert committed(trial) == {5}
            shutil.rmtree(trial)
    assert any(seen) and not all(seen), seen
