"""Transactional offsets in the ``__consumer_offsets`` store, on real log directories: the
transactional batch (read back by kafka-python), pending until the marker, COMMIT and ABORT,
reloads of open and finished transactions, plain commits racing a transaction, deletions and
expiry, and a real broker's directory."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch

from corpus_location import NO_CORPUS_REASON, corpus_root
from seglog.broker.groups.offsets_store import OFFSETS_TOPIC, OffsetAndMetadata, OffsetsStore
from seglog.clock import ManualClock
from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager
from seglog.errors import InvalidProducerEpochError
from seglog.format.group_records import OffsetCommitKey, decode_record
from seglog.format.reader import iter_batches_strict
from seglog.format.topic_names import TopicPartition

T0 = 1_700_000_000_000
MINUTE = 60_000
RETENTION = 10080 * MINUTE
A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
PID, EPOCH = 4000, 3


def open_manager(root: Path, partitions: int = 3) -> LogManager:
    props = {"log.dirs": str(root), "offsets.topic.num.partitions": str(partitions)}
    return LogManager.open(BrokerConfig.from_properties(props), clock=ManualClock(T0))


def offsets_log_bytes(manager: LogManager, partition: int) -> bytes:
    log = manager.get_log(OFFSETS_TOPIC, partition)
    return b"".join(segment.log_path.read_bytes() for segment in log.segments)


def peer_batches(data: bytes) -> list[DefaultRecordBatch]:
    """Every batch of ``data`` as kafka-python decodes it (a peer's reader, not seglog's)."""
    out = []
    for batch in iter_batches_strict(data):
        start = batch.position
        out.append(DefaultRecordBatch(data[start : start + batch.size_in_bytes]))
    return out


def txn_commit(
    store: OffsetsStore,
    group: str,
    offsets: dict[TopicPartition, int],
    *,
    pid: int = PID,
    epoch: int = EPOCH,
    now: int = T0,
) -> None:
    store.commit_transactional(
        group,
        {tp: OffsetAndMetadata(o, 1, f"m{o}") for tp, o in offsets.items()},
        producer_id=pid,
        producer_epoch=epoch,
        now_ms=now,
    )


def end_txn(
    manager: LogManager,
    store: OffsetsStore,
    group: str,
    *,
    commit: bool,
    pid: int = PID,
    epoch: int = EPOCH,
) -> int:
    """What the transaction coordinator does: the marker, then the store is told."""
    partition = store.partition_for(group)
    manager.get_log(OFFSETS_TOPIC, partition).append_marker(
        pid, epoch, commit=commit, coordinator_epoch=0
    )
    return store.complete_transaction(partition, pid, commit=commit)


def offsets_of(store: OffsetsStore, group: str) -> dict[TopicPartition, int]:
    return {tp: v.offset for tp, v in store.committed(group).items()}


def test_a_txn_offset_commit_is_a_transactional_batch_of_the_producer(tmp_path: Path) -> None:
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        txn_commit(store, "g", {A0: 5, A1: 6})
        txn_commit(store, "g", {A0: 7})  # the same transaction, a second send_offsets
        assert end_txn(manager, store, "g", commit=True) == 2
        txn_commit(store, "g", {B0: 1})  # the next transaction of the producer
        with pytest.raises(InvalidProducerEpochError):
            txn_commit(store, "g", {B0: 2}, epoch=EPOCH - 1)  # a zombie
        batches = peer_batches(offsets_log_bytes(manager, store.partition_for("g")))
    described = [
        (b.is_transactional, b.is_control_batch, b.producer_id, b.producer_epoch, b.base_sequence)
        for b in batches
    ]
    assert described == [
        (True, False, PID, EPOCH, 0),
        (True, False, PID, EPOCH, 2),  # the log checks sequences: they follow on
        (True, True, PID, EPOCH, -1),  # the COMMIT marker
        (True, False, PID, EPOCH, 3),
    ]
    keys = [decode_record(r.key, r.value).key for r in batches[0]]
    assert keys == [OffsetCommitKey("g", "a", 0), OffsetCommitKey("g", "a", 1)]


def test_offsets_are_pending_until_the_commit_marker_and_reload_alike(tmp_path: Path) -> None:
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        store.commit("g", {A0: OffsetAndMetadata(1)}, now_ms=T0)
        txn_commit(store, "g", {A0: 5, A1: 6})
        assert offsets_of(store, "g") == {A0: 1}
        assert store.has_pending("g", A0) and store.has_pending("g", A1)
        assert not store.has_pending("g", B0) and not store.has_pending("other", A0)
        assert set(store.pending("g")[PID]) == {A0, A1}
    with open_manager(tmp_path) as manager:  # restarted with the transaction open
        store = OffsetsStore.open(manager)
        assert offsets_of(store, "g") == {A0: 1}
        assert store.has_pending("g", A0)
        assert store.load().pending == 2
        assert end_txn(manager, store, "g", commit=True) == 2
        assert offsets_of(store, "g") == {A0: 5, A1: 6}
        assert store.committed("g")[A0].metadata == "m5"
        assert not store.has_pending("g", A0)
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        assert offsets_of(store, "g") == {A0: 5, A1: 6}
        assert not store.has_pending("g", A0)


def test_an_aborted_transactions_offsets_are_dropped(tmp_path: Path) -> None:
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        store.commit("g", {A0: OffsetAndMetadata(1)}, now_ms=T0)
        txn_commit(store, "g", {A0: 5, B0: 9})
        assert end_txn(manager, store, "g", commit=False) == 0
        assert offsets_of(store, "g") == {A0: 1}
        assert not store.has_pending("g", A0)
        txn_commit(store, "g", {A0: 8})  # the producer's next transaction commits
        end_txn(manager, store, "g", commit=True)
        assert offsets_of(store, "g") == {A0: 8}
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        assert offsets_of(store, "g") == {A0: 8}
        assert store.groups() == ["g"]


def test_a_plain_commit_after_the_transactional_one_wins(tmp_path: Path) -> None:
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        txn_commit(store, "g", {A0: 10, A1: 10})
        store.commit("g", {A0: OffsetAndMetadata(20)}, now_ms=T0)  # later in the log
        end_txn(manager, store, "g", commit=True)
        assert offsets_of(store, "g") == {A0: 20, A1: 10}
        store.commit("g", {A1: OffsetAndMetadata(30)}, now_ms=T0)  # earlier than the next txn
        txn_commit(store, "g", {A1: 40})
        end_txn(manager, store, "g", commit=True)
        assert offsets_of(store, "g") == {A0: 20, A1: 40}
    with open_manager(tmp_path) as manager:
        assert offsets_of(OffsetsStore.open(manager), "g") == {A0: 20, A1: 40}


def test_two_producers_and_two_groups_complete_apart(tmp_path: Path) -> None:
    with open_manager(tmp_path, 1) as manager:  # both groups in partition 0
        store = OffsetsStore.open(manager)
        txn_commit(store, "g1", {A0: 1}, pid=1)
        txn_commit(store, "g2", {A0: 2}, pid=2)
        txn_commit(store, "g2", {B0: 3}, pid=1)
        end_txn(manager, store, "g1", commit=True, pid=1)
        assert offsets_of(store, "g1") == {A0: 1}
        assert offsets_of(store, "g2") == {B0: 3}
        assert store.has_pending("g2", A0)
        assert store.complete_transaction(1, 2, commit=True) == 0  # another partition: nothing
        assert store.has_pending("g2", A0)
    with open_manager(tmp_path, 1) as manager:
        store = OffsetsStore.open(manager)
        assert offsets_of(store, "g2") == {B0: 3}
        assert store.has_pending("g2", A0)
        end_txn(manager, store, "g2", commit=False, pid=2)
        assert offsets_of(store, "g2") == {B0: 3}
        assert store.groups() == ["g1", "g2"]


def test_deleting_a_group_does_not_let_its_commit_marker_resurrect_offsets(
    tmp_path: Path,
) -> None:
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        store.commit("g", {A0: OffsetAndMetadata(1)}, now_ms=T0)
        txn_commit(store, "g", {A0: 5, A1: 6})
        assert store.groups() == ["g"]
        assert store.delete_group("g", now_ms=T0) == 2  # A0 and the pending-only A1
        assert not store.has_pending("g", A1)
        assert store.groups() == []
        end_txn(manager, store, "g", commit=True)
        assert store.committed("g") == {}
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        assert store.committed("g") == {} and store.groups() == []


def test_offset_delete_and_topic_deletion_cover_pending_offsets(tmp_path: Path) -> None:
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        txn_commit(store, "g", {A0: 5, A1: 6, B0: 7})
        assert store.delete_offsets("g", [A0], now_ms=T0) == [A0]
        assert store.topic_deleted("b", now_ms=T0) == {"g": [B0]}
        end_txn(manager, store, "g", commit=True)
        assert offsets_of(store, "g") == {A1: 6}
    with open_manager(tmp_path) as manager:
        assert offsets_of(OffsetsStore.open(manager), "g") == {A1: 6}


def test_expiry_spares_pending_partitions_and_groups_in_a_transaction(tmp_path: Path) -> None:
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        store.commit("g", {A0: OffsetAndMetadata(1), A1: OffsetAndMetadata(1)}, now_ms=T0)
        txn_commit(store, "g", {A0: 5}, now=T0 + MINUTE)
        txn_commit(store, "only-pending", {B0: 5})
        result = store.expire_offsets(now_ms=T0 + RETENTION)
        assert result.offsets == {"g": [A1]} and result.groups == []
        assert offsets_of(store, "g") == {A0: 1}
        assert store.groups() == ["g", "only-pending"]
        end_txn(manager, store, "g", commit=True)
        end_txn(manager, store, "only-pending", commit=False)
        assert offsets_of(store, "g") == {A0: 5}
        assert store.expire_offsets(now_ms=T0 + RETENTION).offsets == {}  # 5 came a minute later
        assert store.groups() == ["g"]


@pytest.fixture
def broker_copy(tmp_path: Path) -> Path:
    root = corpus_root()
    if root is None:
        pytest.skip(NO_CORPUS_REASON)
    source = root / "broker" / "mscaldas2012-cp512"
    if not source.is_dir():
        pytest.skip(f"{source} is not in this corpus")
    target = tmp_path / "broker"
    shutil.copytree(source, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return target


def test_a_real_brokers_offsets_partitions_take_a_transaction(broker_copy: Path) -> None:
    """A Kafka broker's ``__consumer_offsets`` (Confluent Platform 5.1) loads; a transaction
    committed into it by seglog reloads, and every other group's offsets stay as Kafka left
    them."""
    with open_manager(broker_copy, 50) as manager:
        store = OffsetsStore.open(manager)
        groups = store.groups()
        before = {group: store.committed(group) for group in groups}
        assert any(before.values()), "the corpus broker has committed offsets"
        group = next(g for g in groups if before[g])
        tp = sorted(before[group])[0]
        txn_commit(store, group, {tp: before[group][tp].offset + 100})
    with open_manager(broker_copy, 50) as manager:
        store = OffsetsStore.open(manager)
        assert store.has_pending(group, tp)
        assert {g: store.committed(g) for g in groups} == before
        end_txn(manager, store, group, commit=True)
    with open_manager(broker_copy, 50) as manager:
        store = OffsetsStore.open(manager)
        after = {g: store.committed(g) for g in groups}
        assert after[group][tp].offset == before[group][tp].offset + 100
        after[group][tp] = before[group][tp]
        assert after == before


def test_the_cleaner_keeps_what_a_reload_gives(tmp_path: Path) -> None:
    """Kafka's cleaner rules on transactions (aborted records go and shadow nothing, markers
    stay while their data does) leave the same committed and pending offsets."""
    with open_manager(tmp_path, 1) as manager:
        store = OffsetsStore.open(manager)
        store.commit("g", {A0: OffsetAndMetadata(1), A1: OffsetAndMetadata(3)}, now_ms=T0)
        txn_commit(store, "g", {A0: 5}, pid=1)
        end_txn(manager, store, "g", commit=False, pid=1)
        txn_commit(store, "g", {A1: 7}, pid=2)
        end_txn(manager, store, "g", commit=True, pid=2)
        store.commit("h", {B0: OffsetAndMetadata(2)}, now_ms=T0)
        store.commit("h", {B0: OffsetAndMetadata(4)}, now_ms=T0)
        log = manager.get_log(OFFSETS_TOPIC, 0)
        log.roll()
        txn_commit(store, "g", {A0: 9}, pid=3)  # still open at the cleaning
        before = {g: offsets_of(store, g) for g in ("g", "h")}
        assert before == {"g": {A0: 1, A1: 7}, "h": {B0: 4}}
        records_before = sum(len(list(b)) for b in peer_batches(offsets_log_bytes(manager, 0)))
        manager.clean_once(topic=OFFSETS_TOPIC)
        records_after = sum(len(list(b)) for b in peer_batches(offsets_log_bytes(manager, 0)))
        assert records_after < records_before  # the cleaner did remove records
    with open_manager(tmp_path, 1) as manager:
        store = OffsetsStore.open(manager)
        assert {g: offsets_of(store, g) for g in ("g", "h")} == before
        assert store.has_pending("g", A0)
        end_txn(manager, store, "g", commit=True, pid=3)
        assert offsets_of(store, "g") == {A0: 9, A1: 7}
