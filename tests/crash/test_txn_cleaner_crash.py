"""Crash injection into a cleaning round over transactional logs (``seglog.testing.crash``).

The round (two partitions of transactions, commits, aborts, one left open, idempotent and
plain batches) is crashed right before each of its file operations -- the ``.txnindex``
writes of the cleaned segments and their swaps included -- the directory is reopened
(startup recovery), and then:

* no ``.cleaned``, ``.swap`` or ``.deleted`` file is left;
* a ``read_committed`` reader sees only committed records, in offset order, a subset of what
  it saw before the round, with every key's latest committed record the same as before (a
  round replaces its groups one at a time, so a mix of cleaned and uncleaned groups is fine);
* every ``.txnindex`` entry lies in its segment and matches an ABORT marker;
* one more cleaner pass gives the reference round's records, and no ``.txnindex`` entry the
  reference round does not have (a segment that recovery rebuilt holds the entries its log
  still shows; one whose ABORT marker outlives its data by a round is not among them, which
  changes no read: that data is gone).
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import pytest

from seglog.clock import ManualClock
from seglog.core.isolation import IsolationLevel
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.control import ControlRecordType, decode_control_key
from seglog.format.reader import BatchReader
from seglog.format.txn_index import AbortedTxn
from seglog.testing.crash import (
    SimulatedCrash,
    close_fds_opened_since,
    count_operations,
    crash_at,
    open_fds,
)
from support.cleaning_data import fill_transactional

pytestmark = pytest.mark.crash

T0 = 1_700_000_000_000
BROKER = {"log.cleaner.dedupe.buffer.size": str(2 * 1024 * 1024)}
LEFTOVER_SUFFIXES = (".cleaned", ".swap", ".deleted")
MAX_POINTS = 80  # crash points tried (spread over the round; all when it has fewer)

View = list[tuple[int, bytes | None, bytes | None]]


def open_at(directory: Path) -> LogManager:
    return open_log_dirs([directory], overrides=BROKER, clock=ManualClock(T0 + 10_000))


def committed_views(manager: LogManager) -> dict[int, View]:
    out = {}
    for partition in (0, 1):
        log = manager.get_log("txns", partition)
        out[partition] = [
            (r.offset, r.key, r.value)
            for r in log.iter_records(0, isolation_level=IsolationLevel.READ_COMMITTED)
        ]
    return out


def latest(view: View) -> dict[bytes | None, tuple[int, bytes | None]]:
    return {key: (offset, value) for offset, key, value in view}


def index_problems(log: Log) -> list[str]:
    """Entries outside their segment, or not ending at an ABORT marker of their producer."""
    problems = []
    aborts = set()
    for segment in log.segments:
        for batch in BatchReader(segment.read_at(0, segment.size)):
            if batch.is_control and batch.records_count:
                key = decode_control_key(batch.records()[0].key)
                if key.type is ControlRecordType.ABORT:
                    aborts.add((batch.producer_id, batch.base_offset))
    segments = log.segments
    for i, segment in enumerate(segments):
        upper = segments[i + 1].base_offset if i + 1 < len(segments) else log.log_end_offset
        for txn in segment.txn_index.entries():
            if not segment.base_offset <= txn.last_offset < upper:
                problems.append(f"{txn} outside segment {segment.base_offset}")
            if (txn.producer_id, txn.last_offset) not in aborts:
                problems.append(f"{txn} has no ABORT marker")
    return problems


def aborted_entries(manager: LogManager) -> dict[int, list[AbortedTxn]]:
    """Every partition's ``.txnindex`` entries."""
    out: dict[int, list[AbortedTxn]] = {}
    for partition in (0, 1):
        log = manager.get_log("txns", partition)
        out[partition] = list(log.aborted_transactions(0, log.log_end_offset))
    return out


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("txn-crash") / "template"
    clock = ManualClock(T0)
    with open_log_dirs([root], overrides=BROKER, clock=clock) as manager:
        fill_transactional(manager, clock, keys=60, records=700, seed=12)
    return root


def test_a_crash_at_any_point_of_a_transactional_round(template: Path, tmp_path: Path) -> None:
    reference = tmp_path / "reference"
    shutil.copytree(template, reference)
    with open_at(reference) as manager:
        before = committed_views(manager)
        with count_operations() as ops:
            results = manager.clean_once()
        assert len(results) == 2 and all(r.error is None for r in results), results
        after = committed_views(manager)
        expected = aborted_entries(manager)
    total = ops.count
    assert any(".txnindex" in path for _, path in ops.operations), "no .txnindex written"
    step = max(1, total // MAX_POINTS)
    points = sorted({*range(1, total + 1, step), total})
    for n in points:
        trial = tmp_path / f"trial-{n}"
        shutil.copytree(template, trial)
        fds = open_fds()
        manager = open_at(trial)
        with crash_at(n):
            try:
                manager.clean_once()
                pytest.fail(f"the round finished before operation {n}")
            except SimulatedCrash:
                pass
            with contextlib.suppress(SimulatedCrash):
                manager.abort()
        del manager
        close_fds_opened_since(fds, trial)
        with open_at(trial) as manager:
            left = [p.name for p in trial.rglob("*") if p.name.endswith(LEFTOVER_SUFFIXES)]
            assert left == [], (n, left)
            views = committed_views(manager)
            for partition, view in views.items():
                assert [o for o, _, _ in view] == sorted({o for o, _, _ in view}), n
                assert set(view) <= set(before[partition]), (n, partition)
                assert latest(view) == latest(before[partition]), (n, partition)
                assert index_problems(manager.get_log("txns", partition)) == [], n
            manager.clean_once()
            assert committed_views(manager) == after, n
            for partition, entries in aborted_entries(manager).items():
                # A segment recovery rebuilt has the entries its log still shows (a cleaned
                # segment's marker may outlive its data by one round): never more.
                ends = {(t.producer_id, t.last_offset) for t in expected[partition]}
                assert {(t.producer_id, t.last_offset) for t in entries} <= ends, n
        shutil.rmtree(trial)
