"""The transaction-aware cleaner on real logs: the transaction cases of Kafka's LogCleanerTest
and LogCleanerManagerTest, each with Kafka's expected offsets, keys and batches.

Kafka's helpers, here: a transactional producer appends its keys as key = value = the decimal
text (``appendTransactionalAsLeader``), a coordinator writes COMMIT/ABORT markers
(``Log.append_marker``), ``offsets`` lists every record with a key and a value (markers
included, as Kafka's ``offsetsInLog``), ``keys`` the data records' keys (``keysInLog``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from seglog.clock import ManualClock
from seglog.core.cleaning import LogToClean
from seglog.core.isolation import IsolationLevel
from seglog.core.offset_map import OffsetMap
from seglog.engine.cleaning.cleaner import Cleaner
from seglog.engine.cleaning.cleaner_manager import cleaning_candidate
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.builder import BatchBuilder
from seglog.format.reader import BatchReader
from seglog.format.txn_index import AbortedTxn
from seglog.testing.transactions import append_idempotent, append_transactional
from support.cleaning_data import fill_transactional

READ_COMMITTED = IsolationLevel.READ_COMMITTED

DAY = 86_400_000
T0 = 1_700_000_000_000
#: Kafka's ``largeTimestamp`` (Long.MaxValue - delete.retention.ms - 1): a clean "now" at which
#: no horizon stamped by an earlier round at T0 has passed... and every horizon stamped at T0
#: has passed (T0 + 1 day is far below it). The second pass of ``two_pass`` runs a day later.
LARGE = (1 << 63) - 1 - DAY - 1


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def manager(tmp_path: Path, clock: ManualClock) -> Iterator[LogManager]:
    m = open_log_dirs([tmp_path / "data"], clock=clock)
    yield m
    m.close()


def make_log(manager: LogManager, **configs: str) -> Log:
    manager.create_topic("test", 1, configs={"cleanup.policy": "compact", **configs})
    return manager.get_log("test", 0)


class Producer:
    """Kafka's ``appendTransactionalAsLeader``: each call is one batch of ``keys``."""

    def __init__(self, log: Log, producer_id: int, epoch: int = 0, *, txn: bool = True) -> None:
        self.log, self.producer_id, self.epoch, self.txn = log, producer_id, epoch, txn
        self.sequence = 0

    def __call__(self, keys: list[int]) -> None:
        records = [(str(k).encode(), str(k).encode()) for k in keys]
        append = append_transactional if self.txn else append_idempotent
        append(self.log, self.producer_id, self.epoch, self.sequence, records)
        self.sequence += len(keys)


def commit(log: Log, producer_id: int, epoch: int = 0) -> None:
    log.append_marker(producer_id, epoch, commit=True, coordinator_epoch=0)


def abort(log: Log, producer_id: int, epoch: int = 0) -> None:
    log.append_marker(producer_id, epoch, commit=False, coordinator_epoch=0)


def record(log: Log, key: int, value: int) -> None:
    builder = BatchBuilder()
    builder.append(log.clock.now_ms(), str(key).encode(), str(value).encode())
    log.append(builder.build())


def batches(log: Log) -> list[object]:
    out: list[object] = []
    for segment in log.segments:
        out += list(BatchReader(segment.read_at(0, segment.size)))
    return out


def offsets(log: Log) -> list[int]:
    """Kafka's ``offsetsInLog``: every record with a key and a value, markers included."""
    return [
        r.offset
        for b in batches(log)
        for r in b.records()  # type: ignore[attr-defined]
        if r.key is not None and r.value is not None
    ]


def keys(log: Log) -> list[int]:
    """Kafka's ``keysInLog``: the keys of the data records with a value."""
    return [
        int(r.key)
        for b in batches(log)
        if not b.is_control  # type: ignore[attr-defined]
        for r in b.records()  # type: ignore[attr-defined]
        if r.key is not None and r.value is not None
    ]


def last_offsets(log: Log) -> list[int]:
    return [b.last_offset for b in batches(log)]  # type: ignore[attr-defined]


def base_offsets(log: Log) -> list[int]:
    return [b.base_offset for b in batches(log)]  # type: ignore[attr-defined]


def aborted(log: Log) -> list[AbortedTxn]:
    return log.aborted_transactions(0, log.log_end_offset)


def cleaner(map_bytes: int = 1 << 20, load_factor: float = 0.9) -> Cleaner:
    return Cleaner(OffsetMap(map_bytes, load_factor), clock=ManualClock(T0))


def clean(c: Cleaner, log: Log, first_dirty: int, now_ms: int = LARGE) -> int:
    """``cleaner.doClean(LogToClean(tp, log, first_dirty, activeSegment.baseOffset), now)``.

    Kafka's test map (``FakeOffsetMap``) keeps its latest offset across ``clear()``, so a
    round over an empty dirty range still recopies the log up to it; a round with a real map
    does that when it maps the log from its start, which is what this does then."""
    upper = log.segments[-1].base_offset
    if first_dirty >= upper:
        first_dirty = 0
    end, _ = c.clean(log, LogToClean(first_dirty, upper, 0, 0, 0, 0.5), now_ms=now_ms)
    return end


def two_pass(c: Cleaner, log: Log, first_dirty: int, now_ms: int = LARGE) -> int:
    """Kafka's ``runTwoPassClean``: the second round a delete.retention.ms (+1) later."""
    clean(c, log, first_dirty, now_ms)
    return clean(c, log, first_dirty, now_ms + DAY + 1)


def test_basic_transaction_aware_cleaning(manager: LogManager) -> None:
    """testBasicTransactionAwareCleaning."""
    log = make_log(manager, **{"segment.bytes": "2048"})
    p1, p2 = Producer(log, 1), Producer(log, 2)
    p1([1, 2])
    p2([2, 3])
    p1([3, 4])
    abort(log, 1)
    commit(log, 2)
    p1([2])
    commit(log, 1)
    before = aborted(log)
    assert before == [AbortedTxn(1, 0, 6, 2)]  # pid 2's transaction (from 2) was open
    log.roll()
    clean(cleaner(), log, 0, T0)
    assert keys(log) == [3, 2]
    assert offsets(log) == [3, 6, 7, 8, 9]
    assert aborted(log) == before  # the cleaned .txnindex is still right


def test_clean_with_transactions_spanning_segments(manager: LogManager) -> None:
    """testCleanWithTransactionsSpanningSegments."""
    log = make_log(manager, **{"segment.bytes": "1024"})
    p1, p2, p3 = Producer(log, 1), Producer(log, 2), Producer(log, 3)
    p1([1, 2])
    p3([2, 3])
    p2([3, 4])
    log.roll()
    p2([5, 6])
    p3([6, 7])
    p1([7, 8])
    abort(log, 2)
    p3([8, 9])
    commit(log, 3)
    p1([9, 10])
    abort(log, 1)
    c = cleaner()
    dirty = clean(c, log, 0, T0)  # only the first segment is cleaned
    assert keys(log) == [2, 3, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10]
    log.roll()
    p2([11])
    p1([12])
    clean(c, log, dirty, T0)
    assert keys(log) == [2, 3, 6, 7, 8, 9, 11, 12]


def test_commit_marker_removal(manager: LogManager) -> None:
    """testCommitMarkerRemoval: a COMMIT stays while its transaction has data, then gets a
    horizon and goes after it."""
    log = make_log(manager, **{"segment.bytes": "256"})
    p = Producer(log, 1)
    p([1])
    p([2, 3])
    commit(log, 1)
    p([2])
    commit(log, 1)
    log.roll()
    c = cleaner()
    dirty = clean(c, log, 0)
    assert keys(log) == [1, 3, 2]
    assert offsets(log) == [0, 2, 3, 4, 5]
    p([1, 3])
    commit(log, 1)
    log.roll()
    dirty = clean(c, log, dirty)
    assert keys(log) == [2, 1, 3]
    assert offsets(log) == [3, 4, 5, 6, 7, 8]
    dirty = clean(c, log, dirty)  # same time: the marker is not removed early
    assert keys(log) == [2, 1, 3]
    assert offsets(log) == [3, 4, 5, 6, 7, 8]
    clean(c, log, dirty, (1 << 63) - 1)  # past the horizon: the marker goes
    assert keys(log) == [2, 1, 3]
    assert offsets(log) == [4, 5, 6, 7, 8]


def test_deleted_batches_with_no_messages_read(manager: LogManager) -> None:
    """testDeletedBatchesWithNoMessagesRead (with a small read buffer): an aborted batch is
    dropped unread; the COMMIT marker of the next transaction goes after its horizon."""
    log = make_log(manager, **{"segment.bytes": "1000", "max.message.bytes": "100"})
    p = Producer(log, 1)
    p([1])
    abort(log, 1)
    p([2])
    p([2])
    commit(log, 1)
    log.roll()
    c = Cleaner(OffsetMap(1 << 20, 0.9), clock=ManualClock(T0), read_chunk_bytes=100)
    clean(c, log, 0)
    assert keys(log) == [2]
    assert offsets(log) == [1, 3, 4]
    two_pass(c, log, 0)
    assert keys(log) == [2]
    assert offsets(log) == [3, 4]


def test_commit_marker_retention_with_empty_batch(manager: LogManager) -> None:
    """testCommitMarkerRetentionWithEmptyBatch."""
    log = make_log(manager, **{"segment.bytes": "256"})
    p1, p2 = Producer(log, 1), Producer(log, 2)
    p1([2, 3])  # 0, 1
    log.roll()
    p2([2, 3])  # 2, 3
    commit(log, 2)  # 4
    log.roll()
    record(log, 2, 2)  # 5
    record(log, 3, 3)  # 6
    commit(log, 1)  # 7
    log.roll()
    c = cleaner()
    dirty = clean(c, log, 0)
    assert keys(log) == [2, 3]
    assert offsets(log) == [4, 5, 6, 7]
    assert last_offsets(log) == [1, 3, 4, 5, 6, 7]
    dirty = clean(c, log, dirty)  # the empty batches hold the last sequences: they stay
    assert keys(log) == [2, 3]
    assert offsets(log) == [4, 5, 6, 7]
    assert last_offsets(log) == [1, 3, 4, 5, 6, 7]
    p2([1])  # 8
    commit(log, 2)  # 9
    log.roll()
    dirty = clean(c, log, dirty)
    assert keys(log) == [2, 3, 1]
    assert offsets(log) == [4, 5, 6, 7, 8, 9]
    assert last_offsets(log) == [1, 4, 5, 6, 7, 8, 9]
    two_pass(c, log, dirty)
    assert keys(log) == [2, 3, 1]
    assert offsets(log) == [5, 6, 7, 8, 9]
    assert last_offsets(log) == [1, 5, 6, 7, 8, 9]


def test_clean_empty_control_batch(manager: LogManager) -> None:
    """testCleanEmptyControlBatch: a marker-only producer's marker becomes an empty batch
    (it holds the producer's epoch) and an empty control batch cleans without error."""
    log = make_log(manager, **{"segment.bytes": "256"})
    commit(log, 1)  # 0
    record(log, 2, 2)  # 1
    record(log, 3, 3)  # 2
    log.roll()
    c = cleaner()
    dirty = two_pass(c, log, 0)
    assert keys(log) == [2, 3]
    assert offsets(log) == [1, 2]
    assert last_offsets(log) == [0, 1, 2]
    clean(c, log, dirty, (1 << 63) - 1)
    assert keys(log) == [2, 3]
    assert offsets(log) == [1, 2]
    assert last_offsets(log) == [0, 1, 2]


def test_committed_transaction_spanning_segments(manager: LogManager) -> None:
    """testCommittedTransactionSpanningSegments: the record and its marker both stay."""
    log = make_log(manager, **{"segment.bytes": "128"})
    Producer(log, 1)([1])
    log.roll()
    commit(log, 1)
    log.roll()
    two_pass(cleaner(), log, 0)
    assert offsets(log) == [0, 1]
    assert last_offsets(log) == [0, 1]


def test_aborted_transaction_spanning_segments(manager: LogManager) -> None:
    """testAbortedTransactionSpanningSegments: the aborted batch is the producer's last (kept
    empty), so its marker, which still sees a batch of the transaction, stays too."""
    log = make_log(manager, **{"segment.bytes": "128"})
    Producer(log, 1)([1])
    log.roll()
    abort(log, 1)
    log.roll()
    c = cleaner()
    clean(c, log, 0)
    assert offsets(log) == [1]
    assert last_offsets(log) == [0, 1]
    clean(c, log, 0, (1 << 63) - 1)
    assert offsets(log) == [1]
    assert last_offsets(log) == [0, 1]


def test_abort_marker_removal(manager: LogManager) -> None:
    """testAbortMarkerRemoval."""
    log = make_log(manager, **{"segment.bytes": "256"})
    p = Producer(log, 1)
    p([1])
    p([2, 3])
    abort(log, 1)
    p([3])
    commit(log, 1)
    log.roll()
    c = cleaner()
    dirty = clean(c, log, 0)
    assert keys(log) == [3]
    assert offsets(log) == [3, 4, 5]
    two_pass(c, log, dirty)
    assert keys(log) == [3]
    assert offsets(log) == [4, 5]


def test_abort_marker_retention_with_empty_batch(manager: LogManager) -> None:
    """testAbortMarkerRetentionWithEmptyBatch: the .txnindex keeps the aborted transaction
    while a batch of it (the producer's empty last batch) remains, then drops it."""
    log = make_log(manager, **{"segment.bytes": "256"})
    p = Producer(log, 1)
    p([2, 3])  # last offset 1
    abort(log, 1)  # 2
    log.roll()

    def assert_indexed() -> None:
        [txn] = log.aborted_transactions(0, 100)
        assert (txn.producer_id, txn.first_offset, txn.last_offset) == (1, 0, 2)

    assert_indexed()
    c = cleaner()
    dirty = clean(c, log, 0)
    assert_indexed()
    assert keys(log) == []
    assert offsets(log) == [2]
    assert last_offsets(log) == [1, 2]
    dirty = two_pass(c, log, dirty)
    assert_indexed()
    assert keys(log) == []
    assert offsets(log) == [2]
    assert last_offsets(log) == [1, 2]
    p([1])
    log.roll()
    dirty = clean(c, log, dirty)
    assert_indexed()
    assert keys(log) == [1]
    assert offsets(log) == [2, 3]  # the marker saw the empty batch: not gone yet
    assert last_offsets(log) == [2, 3]
    two_pass(c, log, dirty)
    assert keys(log) == [1]
    assert offsets(log) == [3]
    assert last_offsets(log) == [3]
    assert log.aborted_transactions(0, 100) == []


def test_retains_producer_last_sequence(manager: LogManager) -> None:
    """testLogCleanerRetainsProducerLastSequence: idempotent producers' last batches stay."""
    log = make_log(manager, **{"segment.bytes": "1024"})
    record(log, 0, 0)  # 0
    p1, p2, p3 = (Producer(log, pid, txn=False) for pid in (1, 2, 3))
    for p, value in ((p1, 1), (p2, 2), (p3, 3)):
        append_idempotent(log, p.producer_id, 0, 0, [(b"0", str(value).encode())])
    append_idempotent(log, 2, 0, 1, [(b"1", b"1")])  # 4
    log.roll()
    clean(cleaner(), log, 0, T0)
    assert last_offsets(log) == [1, 3, 4]
    last_sequences = {
        b.producer_id: b.base_sequence + b.last_offset - b.base_offset  # type: ignore[attr-defined]
        for b in batches(log)
        if b.producer_id >= 0 and not b.is_control  # type: ignore[attr-defined]
    }
    assert last_sequences == {1: 0, 2: 1, 3: 0}
    assert keys(log) == [0, 1]
    assert offsets(log) == [3, 4]


def test_retains_last_sequence_even_if_transaction_aborted(manager: LogManager) -> None:
    """testLogCleanerRetainsLastSequenceEvenIfTransactionAborted."""
    log = make_log(manager, **{"segment.bytes": "1024"})
    p = Producer(log, 1)
    p([1])
    p([2, 3])
    abort(log, 1)
    log.roll()
    c = cleaner()
    clean(c, log, 0, T0)
    assert last_offsets(log) == [2, 3]
    assert keys(log) == []
    assert offsets(log) == [3]
    p([1, 5])
    log.roll()
    clean(c, log, 0, T0)
    assert last_offsets(log) == [3, 5]
    assert keys(log) == [1, 5]
    assert offsets(log) == [3, 4, 5]


def test_keys_conflicting_with_marker_keys(manager: LogManager) -> None:
    """testCleaningWithKeysConflictingWithTxnMarkerKeys (KAFKA-14055): a data record whose
    key equals the COMMIT marker's key does not make the marker look superseded."""
    log = make_log(manager, **{"segment.bytes": "1024"})
    Producer(log, 1)([1])
    commit(log, 1)
    commit_key = bytes([0, 0, 0, 1])
    append_transactional(log, 2, 0, 0, [(commit_key, b"foo")])
    commit(log, 2)
    log.roll()
    assert offsets(log) == [0, 1, 2, 3]
    clean(cleaner(), log, 0, T0)
    assert last_offsets(log) == [0, 1, 2, 3]
    assert offsets(log) == [0, 1, 2, 3]


def test_multi_pass_cleaning_with_aborted_transactions(manager: LogManager) -> None:
    """testMultiPassSegmentCleaningWithAbortedTransactions: a map of 3 keys makes partial
    rounds; the aborted data goes at once, the .txnindex keeps its entries while their data
    is seen and the markers go after the horizon (KAFKA-13727)."""
    log = make_log(manager, **{"delete.retention.ms": "50000"})
    p1, p2 = Producer(log, 1), Producer(log, 2)
    p1([1, 2])  # [0, 1]
    p2([2, 3])  # [2, 3]
    p1([3, 4])  # [4, 5]
    commit(log, 1)  # 6
    commit(log, 2)  # 7
    p1([2, 3])  # [8, 9]
    abort(log, 1)  # 10
    p2([4, 5])  # [11, 12]
    p1([5, 6])  # [13, 14]
    commit(log, 1)  # 15
    abort(log, 2)  # 16
    p2([6, 7])  # [17, 18]
    commit(log, 2)  # 19
    log.roll()
    assert log.log_end_offset == 20
    expected = [AbortedTxn(1, 8, 10, 11), AbortedTxn(2, 11, 16, 17)]
    assert aborted(log) == expected
    assert log.ongoing_transactions() == []
    c = cleaner(24 * 5, 0.75)  # 5 slots x 0.75: 3 keys, as Kafka's FakeOffsetMap(4)
    now = T0
    dirty = clean(c, log, 0, now)
    assert dirty == 4
    assert base_offsets(log) == [0, 2, 4, 6, 7, 10, 13, 15, 16, 17, 19]
    assert offsets(log) == [0, 2, 3, 4, 5, 6, 7, 10, 13, 14, 15, 16, 17, 18, 19]
    assert aborted(log) == expected
    dirty = clean(c, log, dirty, now)
    assert dirty == 14
    assert base_offsets(log) == [0, 2, 4, 6, 7, 10, 13, 15, 16, 17, 19]
    assert offsets(log) == [0, 2, 4, 5, 6, 7, 10, 13, 14, 15, 16, 17, 18, 19]
    assert aborted(log) == []
    dirty = clean(c, log, dirty, now + 50_000)
    assert dirty == 20
    assert base_offsets(log) == [0, 2, 4, 6, 7, 13, 15, 17, 19]
    assert offsets(log) == [0, 2, 4, 5, 6, 7, 13, 15, 17, 18, 19]
    assert aborted(log) == []


def test_undecided_transactional_data_is_not_cleanable(
    manager: LogManager, clock: ManualClock
) -> None:
    """LogCleanerManagerTest.testUndecidedTransactionalDataNotCleanable: the cleanable range
    never passes the last stable offset, even past the compaction lag."""
    lag = 3_600_000
    log = make_log(manager, **{"segment.bytes": "1024", "min.compaction.lag.ms": str(lag)})
    append_transactional(log, 15, 0, 0, [(b"1", b"a"), (b"2", b"b")])
    append_transactional(log, 15, 0, 2, [(b"3", b"c")])
    log.roll()
    clock.advance(lag + 1)
    tp = log.topic_partition
    offsets_now = cleaning_candidate(tp, log, 0, clock.now_ms()).offsets
    assert (offsets_now.first_dirty_offset, offsets_now.first_uncleanable_offset) == (0, 0)
    abort(log, 15)
    log.roll()
    offsets_now = cleaning_candidate(tp, log, 0, clock.now_ms()).offsets
    assert (offsets_now.first_dirty_offset, offsets_now.first_uncleanable_offset) == (0, 3)
    clock.advance(lag + 1)
    offsets_now = cleaning_candidate(tp, log, 0, clock.now_ms()).offsets
    assert (offsets_now.first_dirty_offset, offsets_now.first_uncleanable_offset) == (0, 4)


def test_the_cleaner_stops_at_an_open_transaction(manager: LogManager, clock: ManualClock) -> None:
    """Through the cleaner manager: an open transaction's segment and everything after it
    stay dirty; once it is committed a round cleans them, read_committed sees the same."""
    log = make_log(manager, **{"min.cleanable.dirty.ratio": "0.01"})
    record(log, 1, 1)
    record(log, 1, 2)
    log.roll()
    p = Producer(log, 7)
    p([1])
    log.roll()
    record(log, 2, 1)
    log.roll()
    manager.clean_once()
    assert keys(log) == [1, 1, 2]  # offset 0 went; the transaction and after it wait
    assert manager.cleaner_manager.checkpoints()[log.topic_partition] == 2
    commit(log, 7)
    log.roll()
    manager.clean_once()
    assert keys(log) == [1, 2]
    assert offsets(log) == [2, 3, 4]


def committed(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    return [
        (r.offset, r.key, r.value)
        for r in log.iter_records(log.log_start_offset, isolation_level=READ_COMMITTED)
    ]


def test_read_committed_sees_the_compaction_of_what_it_saw_before(tmp_path: Path) -> None:
    """Many producers' transactions (commits, aborts, one left open), idempotent and plain
    batches: after a round, a read_committed reader sees exactly the committed records
    below the round's end that are their key's latest committed record, then everything
    from the end on unchanged; after a second round past the horizons, the same minus the
    tombstones."""
    clock = ManualClock(T0)
    with open_log_dirs([tmp_path / "data"], clock=clock) as manager:
        fill_transactional(manager, clock, keys=150, records=4000, seed=9)
        for partition in (0, 1):
            log = manager.get_log("txns", partition)
            before = committed(log)
            aborted_before = aborted(log)
            assert aborted_before, "the data has aborted transactions"
            c = cleaner()
            to_clean = cleaning_candidate(log.topic_partition, log, None, clock.now_ms()).to_clean
            end, _ = c.clean(log, to_clean, now_ms=clock.now_ms())
            assert end <= log.last_stable_offset
            last = {key: offset for offset, key, _ in before if offset < end}
            expected = [
                (offset, key, value)
                for offset, key, value in before
                if offset >= end or (key is not None and last[key] == offset)
            ]
            assert committed(log) == expected
            # no aborted record is left below the end: every data record read uncommitted
            # below it is one read_committed sees
            uncommitted = {(r.offset, r.key, r.value) for r in log.iter_records(0, end)}
            assert uncommitted == {r for r in expected if r[0] < end}
            c.clean(log, to_clean, now_ms=clock.now_ms() + DAY + 1)
            assert committed(log) == [r for r in expected if r[0] >= end or r[2] is not None]
