"""The ``__consumer_offsets`` store on real log directories: commits, reloads, tombstones,
expiry, the cleaner, damaged records."""

from __future__ import annotations

from pathlib import Path

import pytest

from seglog.broker.groups.offsets_store import (
    OFFSETS_TOPIC,
    OffsetAndMetadata,
    OffsetsStore,
)
from seglog.clock import ManualClock
from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager
from seglog.errors import CorruptGroupRecordError, RecordTooLargeError
from seglog.format.consumer_protocol import encode_assignment, encode_subscription
from seglog.format.group_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_record,
    encode_key,
    group_partition,
)
from seglog.format.reader import iter_batches_strict
from seglog.format.topic_names import TopicPartition

T0 = 1_700_000_000_000
MINUTE = 60_000
RETENTION = 10080 * MINUTE
A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def open_manager(root: Path, partitions: int = 3, **props: str) -> LogManager:
    """A manager whose __consumer_offsets gets ``partitions`` partitions (50 is slow to make)."""
    base = {"log.dirs": str(root), "offsets.topic.num.partitions": str(partitions)}
    broker = BrokerConfig.from_properties(base | props)
    return LogManager.open(broker, clock=ManualClock(T0))


def batches_of(
    manager: LogManager, partition: int
) -> list[list[tuple[bytes | None, bytes | None]]]:
    log = manager.get_log(OFFSETS_TOPIC, partition)
    out = []
    for segment in log.segments:
        data = segment.log_path.read_bytes()
        for batch in iter_batches_strict(data):
            assert batch.magic == 2 and batch.producer_id == -1
            out.append([(r.key, r.value) for r in batch.records()])
    return out


def member(member_id: str, topics: list[str]) -> MemberMetadata:
    return MemberMetadata(
        member_id,
        "client",
        "/127.0.0.1",
        300000,
        45000,
        encode_subscription(topics),
        encode_assignment({t: [0] for t in topics}),
    )


def test_first_commit_creates_the_topic_as_kafka_does(tmp_path: Path) -> None:
    with open_manager(tmp_path, 50) as manager:
        store = OffsetsStore.open(manager)
        assert OFFSETS_TOPIC not in manager.topic_names()
        store.commit("g1", {A0: OffsetAndMetadata(5)}, now_ms=T0)
        description = manager.describe_topic(OFFSETS_TOPIC)
        assert len(description.partitions) == 50
        config = manager.log_config(OFFSETS_TOPIC)
        assert config.cleanup_policy == ("compact",)
        assert config.compression_type == "producer"
        assert config.segment_bytes == 104857600


def test_a_commit_is_one_batch_in_the_groups_partition_and_survives_a_restart(
    tmp_path: Path,
) -> None:
    offsets = {A0: OffsetAndMetadata(5, 2, "m"), A1: OffsetAndMetadata(7), B0: OffsetAndMetadata(0)}
    with open_manager(tmp_path, 50) as manager:
        store = OffsetsStore.open(manager)
        stored = store.commit("my-group", offsets, now_ms=T0)
        assert stored[A0] == OffsetCommitValue(5, "m", T0, 2)
        partition = group_partition("my-group")
        assert partition == 12
        batches = batches_of(manager, partition)
        assert len(batches) == 1 and len(batches[0]) == 3
        key, value = batches[0][0]
        assert decode_record(key, value).key == OffsetCommitKey("my-group", "a", 0)
        assert value is not None and value[:2] == b"\x00\x03"  # v3, as Kafka 3.x writes
    with open_manager(tmp_path, 50) as manager:
        store = OffsetsStore.open(manager)
        assert store.committed("my-group") == {
            A0: OffsetCommitValue(5, "m", T0, 2),
            A1: OffsetCommitValue(7, "", T0),
            B0: OffsetCommitValue(0, "", T0),
        }
        assert set(store.committed("my-group", ["b"])) == {B0}
        assert store.groups() == ["my-group"]


def test_the_last_commit_wins_and_group_metadata_reloads(tmp_path: Path) -> None:
    meta = GroupMetadataValue("consumer", 3, "range", "m1", T0, (member("m1", ["a"]),))
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        store.commit("g", {A0: OffsetAndMetadata(1)}, now_ms=T0)
        store.commit("g", {A0: OffsetAndMetadata(9)}, now_ms=T0 + 1)
        store.store_group("g", meta, now_ms=T0 + 2)
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        assert store.committed("g")[A0].offset == 9
        assert store.group_metadata("g") == meta


def test_an_explicit_expire_timestamp_is_stored_as_v1(tmp_path: Path) -> None:
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        store.commit("g", {A0: OffsetAndMetadata(1, 4)}, now_ms=T0, expire_timestamp_ms=T0 + 10)
        [[(_, value)]] = batches_of(manager, store.partition_for("g"))
        assert value is not None and value[:2] == b"\x00\x01"
    with open_manager(tmp_path) as manager:
        assert OffsetsStore.open(manager).committed("g")[A0] == OffsetCommitValue(
            1, "", T0, -1, T0 + 10
        )


def test_delete_group_writes_tombstones_and_the_cleaner_removes_them(tmp_path: Path) -> None:
    with open_manager(tmp_path, 1) as manager:
        store = OffsetsStore.open(manager)
        store.commit("g", {A0: OffsetAndMetadata(1), A1: OffsetAndMetadata(2)}, now_ms=T0)
        store.store_group("g", GroupMetadataValue("consumer", 1, "range", None, T0), now_ms=T0)
        store.commit("keep", {B0: OffsetAndMetadata(3)}, now_ms=T0)
        assert store.delete_group("g", now_ms=T0 + 1) == 3
        assert store.delete_group("unknown", now_ms=T0 + 1) == 0
        assert store.groups() == ["keep"]
        last = batches_of(manager, 0)[-1]
        assert sorted(k for k, v in last if v is None) == sorted(
            [
                encode_key(OffsetCommitKey("g", "a", 0)),
                encode_key(OffsetCommitKey("g", "a", 1)),
                encode_key(GroupMetadataKey("g")),
            ]
        )
        manager.get_log(OFFSETS_TOPIC, 0).roll()
        manager.clean_once(topic=OFFSETS_TOPIC)
        keys = [k for batch in batches_of(manager, 0) for k, _ in batch]
        # the old values are gone; the tombstones stay until delete.retention.ms has passed
        assert keys.count(encode_key(OffsetCommitKey("g", "a", 0))) == 1
    with open_manager(tmp_path, 1) as manager:
        store = OffsetsStore.open(manager)
        assert store.groups() == ["keep"] and store.committed("g") == {}


def test_topic_deletion_tombstones_its_offsets(tmp_path: Path) -> None:
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        store.commit("g1", {A0: OffsetAndMetadata(1), B0: OffsetAndMetadata(2)}, now_ms=T0)
        store.commit("g2", {A1: OffsetAndMetadata(3)}, now_ms=T0)
        assert store.topic_deleted("a", now_ms=T0) == {"g1": [A0], "g2": [A1]}
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        assert store.committed("g1") == {B0: OffsetCommitValue(2, "", T0)}
        assert store.groups() == ["g1"]


def test_expiry_follows_kafkas_rule(tmp_path: Path) -> None:
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        # a simple consumer: from the commit time
        store.commit("simple", {A0: OffsetAndMetadata(1)}, now_ms=T0)
        # an Empty consumer group: from the time it became Empty
        store.commit("empty", {A0: OffsetAndMetadata(1)}, now_ms=T0)
        store.store_group(
            "empty", GroupMetadataValue("consumer", 2, None, None, T0 + 5 * MINUTE), now_ms=T0
        )
        # a Stable consumer group: only unsubscribed topics, from the commit time
        store.commit("stable", {A0: OffsetAndMetadata(1), B0: OffsetAndMetadata(1)}, now_ms=T0)
        stable = GroupMetadataValue("consumer", 1, "range", "m1", T0, (member("m1", ["a"]),))
        store.store_group("stable", stable, now_ms=T0)
        # an explicit expire timestamp wins
        store.commit("explicit", {A0: OffsetAndMetadata(1)}, now_ms=T0, expire_timestamp_ms=T0 + 1)

        early = store.expire_offsets(now_ms=T0 + RETENTION - 1)
        assert early.offsets == {"explicit": [A0]} and early.groups == []
        done = store.expire_offsets(now_ms=T0 + RETENTION)
        assert done.offsets == {"simple": [A0], "stable": [B0]}
        assert store.committed("empty") != {}
        later = store.expire_offsets(now_ms=T0 + RETENTION + 5 * MINUTE)
        assert later.offsets == {"empty": [A0]} and later.groups == ["empty"]
        # a live state overrides the stored view: rebalancing groups keep everything
        store.commit("stable", {B0: OffsetAndMetadata(2)}, now_ms=T0)
        live = store.expire_offsets(
            now_ms=T0 + 2 * RETENTION, states={"stable": "PreparingRebalance"}
        )
        assert "stable" not in live.offsets
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        assert store.groups() == ["stable"]
        assert set(store.committed("stable")) == {A0, B0}


def test_a_commit_larger_than_one_batch_is_refused_whole(tmp_path: Path) -> None:
    with open_manager(tmp_path, **{"message.max.bytes": "2000"}) as manager:
        store = OffsetsStore.open(manager)
        offsets = {TopicPartition("t" * 50, p): OffsetAndMetadata(p) for p in range(100)}
        with pytest.raises(RecordTooLargeError, match="one batch"):
            store.commit("g", offsets, now_ms=T0)
        assert store.committed("g") == {}


def test_unknown_record_types_are_skipped_and_damage_is_named(tmp_path: Path) -> None:
    with open_manager(tmp_path) as manager:
        store = OffsetsStore.open(manager)
        store.commit("g1", {A0: OffsetAndMetadata(1)}, now_ms=T0)
        log = manager.get_log(OFFSETS_TOPIC, store.partition_for("g1"))
        log.append_records([(b"\x00\x05\x00\x01x", b"\x00\x00kip-848")], timestamp_ms=T0)
        summary = store.load()
        assert (summary.records, summary.skipped, summary.offsets) == (2, 1, 1)
        log.append_records([(encode_key(OffsetCommitKey("g1", "a", 1)), b"\x00\x03\x00")])
        with pytest.raises(CorruptGroupRecordError) as info:
            store.load()
        where = f"record at offset 2 of {OFFSETS_TOPIC}-{store.partition_for('g1')}"
        assert where in str(info.value)
        assert "OffsetCommitValue v3" in str(info.value)


def test_metadata_size_is_checked_as_kafka_does(tmp_path: Path) -> None:
    with open_manager(tmp_path, **{"offset.metadata.max.bytes": "4"}) as manager:
        store = OffsetsStore(manager)
        assert not store.is_metadata_too_large(None)
        assert not store.is_metadata_too_large("abcd")
        assert store.is_metadata_too_large("abcde")
        assert not store.is_metadata_too_large("\U0001f600\U0001f600")  # 4 UTF-16 units
        assert store.is_metadata_too_large("\U0001f600\U0001f600x")
