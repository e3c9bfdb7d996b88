"""Transactional offset commits are atomic too: a crash at any file operation of a
TxnOffsetCommit append or of its COMMIT marker leaves a directory whose store loads the
group's partitions all at the old offset with nothing pending, all pending, or all committed
at the new offset, never a mix, and the transaction can always be finished."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from seglog.broker.groups.offsets_store import OFFSETS_TOPIC, OffsetAndMetadata, OffsetsStore
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
PID, EPOCH = 77, 1


def _open(root: Path) -> LogManager:
    return open_log_dirs([root], overrides=PROPS)


def send_offsets(store: OffsetsStore, offset: int) -> None:
    values = {tp: OffsetAndMetadata(offset) for tp in PARTITIONS}
    store.commit_transactional("g", values, producer_id=PID, producer_epoch=EPOCH, now_ms=T0)


def write_commit_marker(manager: LogManager, store: OffsetsStore) -> None:
    partition = store.partition_for("g")
    log = manager.get_log(OFFSETS_TOPIC, partition)
    log.append_marker(PID, EPOCH, commit=True, coordinator_epoch=0)
    store.complete_transaction(partition, PID, commit=True)


def transaction(manager: LogManager) -> None:
    store = OffsetsStore.open(manager)
    send_offsets(store, 5)
    write_commit_marker(manager, store)


def state_of(root: Path) -> str:
    """``old``, ``pending`` or ``new``; a mix fails the test."""
    with _open(root) as manager:
        store = OffsetsStore.open(manager)
        offsets = {v.offset for v in store.committed("g").values()}
        pending = {store.has_pending("g", tp) for tp in PARTITIONS}
    assert len(store.committed("g")) == len(PARTITIONS)
    assert len(offsets) == 1 and len(pending) == 1, (offsets, pending)
    if offsets == {5}:
        assert pending == {False}
        return "new"
    assert offsets == {1}
    return "pending" if pending == {True} else "old"


def test_a_crash_at_any_operation_of_a_transaction_keeps_it_whole(tmp_path: Path) -> None:
    template = tmp_path / "template"
    with _open(template) as manager:
        OffsetsStore.open(manager).commit(
            "g", {tp: OffsetAndMetadata(1) for tp in PARTITIONS}, now_ms=T0
        )
    counting = tmp_path / "count"
    shutil.copytree(template, counting)
    with _open(counting) as manager, count_operations() as ops:
        transaction(manager)
    assert state_of(counting) == "new"
    seen: set[str] = set()
    for n in range(1, ops.count + 1):
        for after in (False, True):
            trial = tmp_path / f"crash-{n}-{int(after)}"
            shutil.copytree(template, trial)
            fds = open_fds()
            manager = _open(trial)
            with crash_at(n, after=after):
                with pytest.raises(SimulatedCrash):
                    transaction(manager)
                manager.abort()
            del manager
            close_fds_opened_since(fds, trial)
            state = state_of(trial)
            seen.add(state)
            with _open(trial) as manager:  # the client or the coordinator finishes it
                store = OffsetsStore.open(manager)
                if state == "old":
                    send_offsets(store, 5)
                if state != "new":
                    write_commit_marker(manager, store)
            assert state_of(trial) == "new", (n, after)
            shutil.rmtree(trial)
    assert seen == {"old", "pending", "new"}, seen
