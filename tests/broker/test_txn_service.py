"""The transaction coordinator's service on real log directories: persists, markers, restore.

No server process: the service is built as ``seglog serve`` builds it (``app.open_txns``) over a
LogManager on a temporary directory, driven by a manual clock; what it writes is checked in the
partition logs and by reloading ``__transaction_state`` from disk.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from seglog.broker.app import open_txns
from seglog.broker.server_config import ServerConfig
from seglog.broker.txns.state_store import TransactionStateStore
from seglog.clock import ManualClock
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.builder import BatchBuilder
from seglog.format.topic_names import TopicPartition
from seglog.format.txn_records import TransactionLogEntry, TxnState
from seglog.protocol.error_codes import ErrorCode

OUT0 = TopicPartition("out", 0)
OUT1 = TopicPartition("out", 1)


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[LogManager]:
    clock = ManualClock()
    with open_log_dirs([tmp_path / "data"], clock=clock) as opened:
        opened.create_topic("out", 2)
        yield opened


def _txn_batch(producer_id: int, epoch: int, value: bytes, sequence: int = 0) -> bytes:
    builder = BatchBuilder(
        is_transactional=True,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
    )
    builder.append(1_700_000_000_000, b"k", value)
    return builder.build()


def test_commit_through_the_service_writes_state_and_markers(manager: LogManager) -> None:
    service = open_txns(manager, ServerConfig())
    marked: list[tuple[TopicPartition, int, bool]] = []
    service.on_marker.append(lambda tp, pid, commit: marked.append((tp, pid, commit)))
    service.restore()

    async def flow() -> tuple[int, list[ErrorCode]]:
        init = await service.init_producer_id("app-1", 60_000, None)
        assert init.error is ErrorCode.NONE
        pid = init.producer_id
        added = await service.add_partitions("app-1", pid, 0, [OUT0, OUT1])
        for tp in (OUT0, OUT1):
            assert service.verify("app-1", pid, 0, tp) is ErrorCode.NONE
            manager.get_log(tp.topic, tp.partition).append(_txn_batch(pid, 0, b"v"))
        ended = await service.end_txn("app-1", pid, 0, commit=True)
        return pid, [added, ended]

    pid, codes = asyncio.run(flow())
    assert codes == [ErrorCode.NONE, ErrorCode.NONE]
    assert sorted(marked) == [(OUT0, pid, True), (OUT1, pid, True)]
    for tp in (OUT0, OUT1):
        log = manager.get_log(tp.topic, tp.partition)
        assert log.ongoing_transactions() == []
        assert log.last_stable_offset == log.log_end_offset == 2
    reloaded = TransactionStateStore.open(manager).entry("app-1")
    assert reloaded is not None
    assert (reloaded.state, reloaded.producer_id, reloaded.partitions) == (
        TxnState.COMPLETE_COMMIT,
        pid,
        (),
    )


def test_restore_completes_a_prepared_commit_left_by_a_crash(manager: LogManager) -> None:
    """The server died after PrepareCommit was written and before the markers: at start-up
    the markers are written and CompleteCommit is stored."""
    pid = 4242
    log = manager.get_log("out", 1)
    log.append(_txn_batch(pid, 3, b"in flight"))
    assert len(log.ongoing_transactions()) == 1
    store = TransactionStateStore.open(manager)
    store.write(
        "crashed",
        TransactionLogEntry(
            producer_id=pid,
            producer_epoch=3,
            transaction_timeout_ms=60_000,
            state=TxnState.PREPARE_COMMIT,
            partitions=(OUT1,),
            last_update_timestamp_ms=1_700_000_000_000,
            start_timestamp_ms=1_700_000_000_000,
        ),
        now_ms=1_700_000_000_000,
    )

    service = open_txns(manager, ServerConfig())
    assert service.restore() == 1
    assert log.ongoing_transactions() == []
    assert log.last_stable_offset == log.log_end_offset == 2
    entry = TransactionStateStore.open(manager).entry("crashed")
    assert entry is not None and entry.state is TxnState.COMPLETE_COMMIT
    described = service.describe("crashed")
    assert (described.state, described.producer_epoch) == ("CompleteCommit", 3)


def test_an_ongoing_transaction_found_at_restore_is_aborted_once_timed_out(
    manager: LogManager,
) -> None:
    clock = manager.clock
    assert isinstance(clock, ManualClock)
    pid = 77
    log = manager.get_log("out", 0)
    log.append(_txn_batch(pid, 0, b"open"))
    store = TransactionStateStore.open(manager)
    now = clock.now_ms()
    store.write(
        "open",
        TransactionLogEntry(pid, 0, 1000, TxnState.ONGOING, (OUT0,), now, now),
        now_ms=now,
    )
    service = open_txns(manager, ServerConfig())
    service.restore()
    service.abort_timed_out()
    assert len(log.ongoing_transactions()) == 1  # not timed out yet
    clock.advance(1001)
    service.abort_timed_out()
    assert log.ongoing_transactions() == []
    assert log.last_stable_offset == log.log_end_offset
    entry = TransactionStateStore.open(manager).entry("open")
    assert entry is not None
    assert (entry.state, entry.producer_epoch) == (TxnState.COMPLETE_ABORT, 1)


def test_restore_after_a_crash_between_two_markers(manager: LogManager) -> None:
    """Step 2 of ending a transaction died half way: one partition has its marker, the other
    not. Restore writes both again; the partition marked twice reads the same."""
    pid = 999
    logs = [manager.get_log("out", 0), manager.get_log("out", 1)]
    for log in logs:
        log.append(_txn_batch(pid, 0, b"committed"))
    logs[0].append_marker(pid, 0, commit=True, coordinator_epoch=0)
    store = TransactionStateStore.open(manager)
    now = 1_700_000_000_000
    store.write(
        "half",
        TransactionLogEntry(pid, 0, 60_000, TxnState.PREPARE_COMMIT, (OUT0, OUT1), now, now),
        now_ms=now,
    )
    open_txns(manager, ServerConfig()).restore()
    assert [log.log_end_offset for log in logs] == [3, 2]  # out-0 got a second marker
    for log in logs:
        assert log.ongoing_transactions() == []
        assert log.last_stable_offset == log.log_end_offset
        assert log.aborted_transactions(0, log.log_end_offset) == []
    entry = TransactionStateStore.open(manager).entry("half")
    assert entry is not None and entry.state is TxnState.COMPLETE_COMMIT


def test_a_partition_deleted_before_its_marker_is_skipped(manager: LogManager) -> None:
    """Kafka drops the markers of a partition that is gone; the transaction still completes."""
    manager.create_topic("gone", 1)
    service = open_txns(manager, ServerConfig())
    service.restore()
    gone = TopicPartition("gone", 0)

    async def flow() -> list[ErrorCode]:
        init = await service.init_producer_id("app-2", 60_000, None)
        pid = init.producer_id
        codes = [await service.add_partitions("app-2", pid, 0, [OUT0, gone])]
        manager.get_log("out", 0).append(_txn_batch(pid, 0, b"kept"))
        manager.delete_topic("gone")
        codes.append(await service.end_txn("app-2", pid, 0, commit=True))
        return codes

    assert asyncio.run(flow()) == [ErrorCode.NONE, ErrorCode.NONE]
    log = manager.get_log("out", 0)
    assert log.ongoing_transactions() == [] and log.last_stable_offset == 2
    assert service.describe("app-2").state == "CompleteCommit"
