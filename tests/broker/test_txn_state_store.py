"""The ``__transaction_state`` store on real log directories: creation as Kafka does, writes
and reloads, tombstones and the cleaner, damaged records, a real broker's partition (read-only,
then a copy that takes seglog's writes)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from corpus_location import NO_CORPUS_REASON, corpus_root, snapshot
from seglog.broker.txns.state_store import (
    TRANSACTION_STATE_TOPIC,
    TransactionStateStore,
    TxnStateSettings,
)
from seglog.clock import ManualClock
from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager
from seglog.errors import CorruptTxnRecordError, InvalidRecordError
from seglog.format.reader import iter_batches_strict
from seglog.format.topic_names import TopicPartition
from seglog.format.txn_records import (
    TransactionLogEntry,
    TxnState,
    decode_key,
    decode_value,
    encode_key,
    transaction_partition,
)

T0 = 1_700_000_000_000
CORPUS_BROKER = "broker/itumelengmogase-cp-kraft"
A0, B1 = TopicPartition("a", 0), TopicPartition("b", 1)


def open_manager(root: Path, partitions: int = 3, **props: str) -> LogManager:
    """A manager whose __transaction_state gets ``partitions`` partitions (50 is slow)."""
    base = {"log.dirs": str(root), "transaction.state.log.num.partitions": str(partitions)}
    broker = BrokerConfig.from_properties(base | props)
    return LogManager.open(broker, clock=ManualClock(T0))


def ongoing(pid: int = 7, epoch: int = 0, at: int = T0) -> TransactionLogEntry:
    return TransactionLogEntry(pid, epoch, 60_000, TxnState.ONGOING, (A0, B1), at, T0)


def batches_of(
    manager: LogManager, partition: int
) -> list[list[tuple[bytes | None, bytes | None]]]:
    log = manager.get_log(TRANSACTION_STATE_TOPIC, partition)
    out = []
    for segment in log.segments:
        for batch in iter_batches_strict(segment.log_path.read_bytes()):
            assert batch.magic == 2 and batch.producer_id == -1
            assert batch.compression == 0
            out.append([(r.key, r.value) for r in batch.records()])
    return out


def test_first_write_creates_the_topic_as_kafka_does(tmp_path: Path) -> None:
    with open_manager(tmp_path, 50) as manager:
        store = TransactionStateStore.open(manager)
        assert store.entries() == {} and not store.exists()
        assert store.settings == TxnStateSettings(50, 104_857_600)
        store.write("my-txn", ongoing(), now_ms=T0)
        assert len(manager.describe_topic(TRANSACTION_STATE_TOPIC).partitions) == 50
        config = manager.log_config(TRANSACTION_STATE_TOPIC)
        assert config.cleanup_policy == ("compact",)
        assert config.segment_bytes == 104_857_600
        partition = store.partition_for("my-txn")
        assert partition == transaction_partition("my-txn", 50)
        assert store.coordinator_epoch("my-txn") == 0
        [[(key, value)]] = batches_of(manager, partition)
        assert key is not None and value is not None
        assert decode_key(key) == "my-txn" and decode_value(value) == ongoing()
        assert value[:2] == b"\x00\x00"  # v0, as Kafka writes before transaction.version 1


def test_segment_bytes_setting_is_followed(tmp_path: Path) -> None:
    with open_manager(tmp_path, 1, **{"transaction.state.log.segment.bytes": "4096"}) as manager:
        store = TransactionStateStore(manager)
        store.ensure_topic()
        store.ensure_topic()  # a second call changes nothing
        assert manager.log_config(TRANSACTION_STATE_TOPIC).segment_bytes == 4096
        assert manager.partitions_of(TRANSACTION_STATE_TOPIC) == [0]


def test_the_last_entry_wins_across_a_restart(tmp_path: Path) -> None:
    done = TransactionLogEntry(7, 0, 60_000, TxnState.COMPLETE_COMMIT, (), T0 + 2, T0)
    fenced = TransactionLogEntry(9, 3, 1_000, TxnState.EMPTY, (), T0, -1, 8, -1, 2)
    with open_manager(tmp_path) as manager:
        store = TransactionStateStore.open(manager)
        store.write("t1", ongoing(), now_ms=T0)
        store.write("t1", done, now_ms=T0 + 2)
        store.write("t2", fenced, now_ms=T0 + 3)
        assert store.entry("t1") == done
        written = store.entries()
    with open_manager(tmp_path) as manager:
        store = TransactionStateStore(manager)
        assert store.load() == written == {"t1": done, "t2": fenced}
        assert store.last_load is not None
        assert (store.last_load.records, store.last_load.ids) == (3, 2)
        assert store.entry("nobody") is None


def test_remove_writes_tombstones_and_the_cleaner_keeps_only_live_ids(tmp_path: Path) -> None:
    with open_manager(tmp_path, 1) as manager:
        store = TransactionStateStore.open(manager)
        for i, txn_id in enumerate(["gone", "keep", "gone"]):
            store.write(txn_id, ongoing(pid=i), now_ms=T0 + i)
        assert store.remove(["gone", "unknown", "gone"], now_ms=T0 + 5) == ["gone"]
        assert set(store.entries()) == {"keep"}
        assert batches_of(manager, 0)[-1] == [(encode_key("gone"), None)]
        manager.get_log(TRANSACTION_STATE_TOPIC, 0).roll()
        manager.clean_once(topic=TRANSACTION_STATE_TOPIC)
        keys = [k for batch in batches_of(manager, 0) for k, _ in batch]
        # the old values are gone; the tombstone stays until delete.retention.ms has passed
        assert keys.count(encode_key("gone")) == 1 and keys.count(encode_key("keep")) == 1
    with open_manager(tmp_path, 1) as manager:
        store = TransactionStateStore.open(manager)
        assert store.entries() == {"keep": ongoing(pid=1)}
        assert store.last_load is not None and store.last_load.tombstones == 1


def test_a_refused_write_changes_nothing(tmp_path: Path) -> None:
    bad = TransactionLogEntry(1, 0, 1, TxnState.EMPTY, (A0,), T0, T0)
    with open_manager(tmp_path) as manager:
        store = TransactionStateStore.open(manager)
        store.write("t", ongoing(), now_ms=T0)
        with pytest.raises(InvalidRecordError):
            store.write("t", bad, now_ms=T0)
        assert store.entry("t") == ongoing()
        assert sum(len(b) for b in batches_of(manager, store.partition_for("t"))) == 1


def test_a_damaged_record_is_named_with_partition_and_offset(tmp_path: Path) -> None:
    with open_manager(tmp_path) as manager:
        store = TransactionStateStore.open(manager)
        store.write("t", ongoing(), now_ms=T0)
        partition = store.partition_for("t")
        log = manager.get_log(TRANSACTION_STATE_TOPIC, partition)
        log.append_records([(encode_key("t"), b"\x00\x00\x00")], timestamp_ms=T0)
        with pytest.raises(CorruptTxnRecordError) as info:
            store.load()
        assert f"record at offset 1 of {TRANSACTION_STATE_TOPIC}-{partition}" in str(info.value)
        assert "producerId" in str(info.value)


def test_another_partition_count_on_disk_is_followed(tmp_path: Path) -> None:
    with open_manager(tmp_path, 7) as manager:
        TransactionStateStore.open(manager).write("t", ongoing(), now_ms=T0)
    with open_manager(tmp_path, 50) as manager:
        store = TransactionStateStore.open(manager)
        assert store.partition_count() == 7
        assert store.partition_for("other") == transaction_partition("other", 7)
        assert store.entry("t") == ongoing()


def _corpus_broker() -> Path:
    root = corpus_root()
    if root is None or not (root / CORPUS_BROKER / f"{TRANSACTION_STATE_TOPIC}-44").is_dir():
        pytest.skip(NO_CORPUS_REASON)
    return root / CORPUS_BROKER


def test_a_brokers_partition_loads_read_only() -> None:
    data_dir = _corpus_broker()
    before = snapshot(data_dir)
    broker = BrokerConfig.from_properties({"log.dirs": str(data_dir)})
    with LogManager.open(broker, clock=ManualClock(T0), read_only=True) as manager:
        store = TransactionStateStore.open(manager)
        entry = store.entry("default_")
        assert entry is not None
        assert entry.state == TxnState.COMPLETE_COMMIT and entry.partitions == ()
        assert (entry.producer_id, entry.producer_epoch, entry.transaction_timeout_ms) == (
            0,
            0,
            60_000,
        )
        assert store.partition_for("default_") == 44
        assert store.partition_count() == 50  # only partition 44 is here: the setting's count
    assert snapshot(data_dir) == before


def test_a_copy_of_a_brokers_directory_takes_writes(tmp_path: Path) -> None:
    src = _corpus_broker() / f"{TRANSACTION_STATE_TOPIC}-44"
    shutil.copytree(src, tmp_path / src.name)
    for path in (tmp_path / src.name).iterdir():
        path.chmod(0o644)
    (tmp_path / src.name).chmod(0o755)
    with open_manager(tmp_path, 50) as manager:
        store = TransactionStateStore.open(manager)
        next_txn = TransactionLogEntry(0, 0, 60_000, TxnState.ONGOING, (A0,), T0, T0)
        store.write("default_", next_txn, now_ms=T0)
        assert batches_of(manager, 44)[-1][0][0] == encode_key("default_")
        assert store.remove(["default_"], now_ms=T0 + 1) == ["default_"]
    with open_manager(tmp_path, 50) as manager:
        assert TransactionStateStore.open(manager).entries() == {}


def test_a_write_torn_by_a_crash_is_gone_whole_after_recovery(tmp_path: Path) -> None:
    with open_manager(tmp_path, 1) as manager:
        store = TransactionStateStore.open(manager)
        store.write("t", ongoing(at=T0), now_ms=T0)
        store.write("t", ongoing(epoch=1, at=T0 + 1), now_ms=T0 + 1)
        segment = manager.get_log(TRANSACTION_STATE_TOPIC, 0).segments[-1].log_path
    # the second batch lost its last 10 bytes (the process died mid-write); no clean shutdown
    (tmp_path / ".kafka_cleanshutdown").unlink(missing_ok=True)
    data = segment.read_bytes()
    segment.write_bytes(data[:-10])
    with open_manager(tmp_path, 1) as manager:
        store = TransactionStateStore.open(manager)
        assert store.entries() == {"t": ongoing(at=T0)}
        store.write("t", ongoing(epoch=2, at=T0 + 2), now_ms=T0 + 2)
    with open_manager(tmp_path, 1) as manager:
        assert TransactionStateStore.open(manager).entry("t") == ongoing(epoch=2, at=T0 + 2)
