"""Crash injection into producer id allocation: a process that claims a new block of
producer ids (``producer-id-block``: tmp file, fsync, rename, directory fsync) is crashed
right before, or right after, each file operation of the claim. The node then restarts
(startup removes a stray ``.tmp``) and must hand out an id that no earlier process handed
out, from a mark that parses: never a repeated id, whatever the crash point."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from seglog.clock import ManualClock
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.storage.producer_id_block import PRODUCER_ID_BLOCK_FILE, read_next_block_start
from seglog.testing.crash import (
    SimulatedCrash,
    close_fds_opened_since,
    count_operations,
    crash_at,
    open_fds,
)

T0 = 1_700_000_000_000
OVERRIDES = {"log.retention.check.interval.ms": "9223372036854775807"}


def _open(directory: Path) -> LogManager:
    return open_log_dirs([directory], clock=ManualClock(T0), overrides=OVERRIDES)


def _first_block(manager: LogManager) -> list[int]:
    """The ids of a whole first block; the next call claims a new block."""
    return [manager.producer_ids.next_producer_id() for _ in range(1000)]


def test_a_claim_writes_through_the_atomic_steps(tmp_path: Path) -> None:
    with _open(tmp_path / "data") as manager:
        _first_block(manager)
        with count_operations() as ops:
            assert manager.producer_ids.next_producer_id() == 1000
    names = [op for op, _ in ops.operations]
    assert names == ["open", "create", "write", "fsync", "rename", "fsync-dir"], ops.operations
    assert read_next_block_start(tmp_path / "data") == 2000


@pytest.mark.crash
@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
def test_crash_at_every_operation_of_a_block_claim(tmp_path: Path, after: bool) -> None:
    with _open(tmp_path / "reference") as reference:
        _first_block(reference)
        with count_operations() as ops:
            reference.producer_ids.next_producer_id()
    count = ops.count
    assert count >= 4
    crashed = 0
    for n in range(1, count + 1):
        directory = tmp_path / f"trial-{n}"
        manager = _open(directory)
        handed = set(_first_block(manager))
        fds = open_fds()
        with crash_at(n, after=after) as hook:
            try:
                handed.add(manager.producer_ids.next_producer_id())
            except SimulatedCrash:
                crashed += 1
            if hook.crash_point is not None:
                manager.abort()
        close_fds_opened_since(fds, directory)
        if hook.crash_point is None:
            manager.close()
        with _open(directory) as restarted:
            assert not any(p.name.endswith(".tmp") for p in directory.iterdir())
            mark = read_next_block_start(directory)
            assert mark in (1000, 2000), (n, mark)  # the old mark or the new one, whole
            fresh = [restarted.producer_ids.next_producer_id() for _ in range(1500)]
            assert not handed.intersection(fresh), (n, after)
            assert fresh[0] == mark
        assert (directory / PRODUCER_ID_BLOCK_FILE).exists()
        shutil.rmtree(directory)
    assert crashed == count
