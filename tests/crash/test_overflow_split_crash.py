"""Crash injection into the split of an offset-overflowed segment (KAFKA-6264) at load.

Kafka's ``LogLoaderTest.testRecoveryAfterCrashDuringSplitPhase1``-``4`` stop a split after
each phase by renaming files by hand; here the load that splits is crashed right before and
right after *every* file operation it makes (``seglog.testing.crash``), and the next
(unclean) load must give back every one of the 16 records in segments whose offsets fit, with
no ``.cleaned``, ``.swap`` or ``.deleted`` file left.
"""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

from seglog.clock import ManualClock
from seglog.config import LogConfig
from seglog.engine.log import Log
from seglog.format.batch import encode_batch
from seglog.format.records import Record
from seglog.format.topic_names import TopicPartition
from seglog.testing.crash import (
    SimulatedCrash,
    close_fds_opened_since,
    count_operations,
    crash_at,
    open_fds,
)

INT_MAX = (1 << 31) - 1
T0 = 1_700_000_000_000
BASES = [0, INT_MAX, 2 * INT_MAX + 1, 3 * INT_MAX]


def _batch(*offsets: int) -> bytes:
    return encode_batch([Record(o, T0, str(o).encode(), str(o).encode()) for o in offsets])


def _sample(base: int) -> bytes:
    return _batch(base) + _batch(base + 1, base + 2) + _batch(base + INT_MAX - 1)


def _write(directory: Path) -> list[int]:
    """Kafka's ``initializeLogDirWithOverflowedSegment`` (see the recovery-case tests)."""
    directory.mkdir(parents=True)
    layout = {
        0: _sample(0),
        INT_MAX: _sample(INT_MAX) + _sample(2 * INT_MAX),
        3 * INT_MAX: _sample(3 * INT_MAX),
    }
    for base, data in layout.items():
        (directory / f"{base:020d}.log").write_bytes(data)
        (directory / f"{base:020d}.index").write_bytes(b"")
        (directory / f"{base:020d}.timeindex").write_bytes(b"")
    keys = []
    for base in (0, INT_MAX, 2 * INT_MAX, 3 * INT_MAX):
        keys += [base, base + 1, base + 2, base + INT_MAX - 1]
    return keys


def _open(directory: Path) -> Log:
    return Log.open(
        directory,
        TopicPartition("overflow", 0),
        LogConfig(index_interval_bytes=1, file_delete_delay_ms=1000),
        clock=ManualClock(T0),
        recovery_point=0,
        had_clean_shutdown=False,
    )


def _check_recovered(directory: Path, keys: list[int]) -> None:
    log = _open(directory)
    try:
        got = [
            int(r.key)
            for s in log.segments
            for b in s.iter_batches(0, s.size)
            for r in b.records()
            if r.key is not None
        ]
        assert got == keys
        assert [s.base_offset for s in log.segments] == BASES
        for segment in log.segments:
            for batch in segment.iter_batches(0, segment.size):
                assert 0 <= batch.last_offset - segment.base_offset <= INT_MAX
    finally:
        log.close()
    leftovers = [
        p.name for p in directory.iterdir() if p.name.endswith((".cleaned", ".swap", ".deleted"))
    ]
    assert leftovers == []


@pytest.fixture(scope="module")
def operations(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str]]:
    """The file operations of the load that splits (the crash points)."""
    directory = tmp_path_factory.mktemp("reference") / "overflow-0"
    _write(directory)
    with count_operations() as ops:
        log = _open(directory)
    log.close()
    names = [op for op, _ in ops.operations]
    assert "rename" in names and names.count("fsync-dir") >= 2
    return [(op, os.path.basename(path)) for op, path in ops.operations]


@pytest.mark.crash
@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
def test_recovery_after_crash_during_split_at_every_operation(
    tmp_path: Path, operations: list[tuple[str, str]], after: bool
) -> None:
    """``LogLoaderTest.testRecoveryAfterCrashDuringSplitPhase1``-``4``, at every file
    operation: a load crashed anywhere in the split (copying ``.cleaned`` pieces, renaming
    them ``.swap``, renaming the original ``.deleted``, removing the suffixes, unlinking) or
    in the recoveries around it leaves a directory the next load turns into the same split
    log, every record kept."""
    for n in range(1, len(operations) + 1):
        directory = tmp_path / f"trial-{n}" / "overflow-0"
        keys = _write(directory)
        fds = open_fds()
        with crash_at(n, after=after) as hook:
            with pytest.raises(SimulatedCrash):
                _open(directory)
            assert hook.crash_point is not None
        close_fds_opened_since(fds, directory)
        _check_recovered(directory, keys)
        shutil.rmtree(directory.parent)


@pytest.mark.crash
def test_sigkill_during_split_renames(tmp_path: Path, operations: list[tuple[str, str]]) -> None:
    """A real SIGKILL (forked child) right after each rename of the split: the next load
    finishes or undoes the split and loses no record."""
    renames = [i + 1 for i, (op, _) in enumerate(operations) if op == "rename"]
    for n in renames:
        directory = tmp_path / f"kill-{n}" / "overflow-0"
        keys = _write(directory)
        pid = os.fork()
        if pid == 0:  # the child: load until SIGKILLed after rename n
            try:
                with crash_at(n, kill=True, after=True):
                    _open(directory)
            finally:
                os._exit(3)  # not reached when killed
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        _check_recovered(directory, keys)
