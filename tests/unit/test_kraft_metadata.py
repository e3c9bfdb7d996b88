"""KRaft metadata records: decoding, the image fold, and the read-only image of a directory."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from corpus_location import NO_CORPUS_REASON, corpus_root
from seglog.errors import CorruptRecordError
from seglog.format.batch import encode_batch
from seglog.format.kraft_metadata import (
    ConfigRecord,
    MetadataImage,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
    decode_metadata_record,
)
from seglog.format.records import Record
from seglog.storage.kraft_image import read_metadata_image
from support.kraft_records import (
    config_record,
    frame,
    partition_record,
    remove_topic_record,
    topic_record,
    uvarint,
)

TOPIC_A = uuid.UUID("11111111-2222-3333-4444-555555555555")
TOPIC_B = uuid.UUID("66666666-7777-8888-9999-aaaaaaaaaaaa")


def test_each_record_type_decodes() -> None:
    assert decode_metadata_record(topic_record("a", TOPIC_A)) == TopicRecord("a", TOPIC_A)
    assert decode_metadata_record(partition_record(3, TOPIC_A)) == PartitionRecord(3, TOPIC_A)
    assert decode_metadata_record(config_record(2, "a", "retention.ms", None)) == ConfigRecord(
        2, "a", "retention.ms", None
    )
    assert decode_metadata_record(remove_topic_record(TOPIC_A)) == RemoveTopicRecord(TOPIC_A)
    # A record type seglog does not use (RegisterBrokerRecord, 0) is skipped, not an error.
    assert decode_metadata_record(frame(0, 0, b"\x00\x00\x00\x01")) is None


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (topic_record("a", TOPIC_A)[:-5], "type 2: .*ends at"),
        (b"\x00" + topic_record("a", TOPIC_A)[1:], "frame version 0 is not 1"),
        (frame(4, 1, b""), "type 4 version 1 is unknown"),
        (uvarint(1) + uvarint(2) + b"\x00" + b"\x00" + TOPIC_A.bytes + b"\x00", "null topic name"),
    ],
)
def test_a_damaged_record_raises_a_typed_error(value: bytes, reason: str) -> None:
    with pytest.raises(CorruptRecordError, match=reason):
        decode_metadata_record(value)


def test_the_image_folds_latest_wins_null_deletes_and_removals() -> None:
    image = MetadataImage()
    for value in (
        topic_record("a", TOPIC_A),
        partition_record(0, TOPIC_A),
        partition_record(1, TOPIC_A),
        config_record(2, "a", "cleanup.policy", "compact"),
        config_record(2, "a", "retention.ms", "1000"),
        config_record(2, "a", "retention.ms", "2000"),
        config_record(2, "a", "cleanup.policy", None),
        config_record(4, "", "log.retention.ms", "5"),
        config_record(4, "1", "log.retention.ms", "6"),
        topic_record("b", TOPIC_B),
        config_record(2, "b", "segment.bytes", "100000"),
        remove_topic_record(TOPIC_B),
    ):
        record = decode_metadata_record(value)
        assert record is not None
        image.apply(record)
    topic = image.topic_by_name("a")
    assert topic is not None and topic.partitions == {0, 1}
    assert image.topic_configs == {"a": {"retention.ms": "2000"}}
    assert image.broker_configs == {"": {"log.retention.ms": "5"}, "1": {"log.retention.ms": "6"}}
    assert image.topic_by_name("b") is None


def write_metadata_log(
    root: Path, values: list[bytes], *, name: str = "00000000000000000000.log"
) -> Path:
    directory = root / "__cluster_metadata-0"
    directory.mkdir(parents=True, exist_ok=True)
    records = [Record(offset, 0, None, value) for offset, value in enumerate(values)]
    path = directory / name
    path.write_bytes(encode_batch(records, base_offset=0))
    return path


def test_a_damaged_record_in_the_log_names_file_and_offset(tmp_path: Path) -> None:
    path = write_metadata_log(tmp_path, [topic_record("a", TOPIC_A), b"\x01\x02"])
    with pytest.raises(CorruptRecordError, match="offset 1") as raised:
        read_metadata_image(tmp_path)
    assert raised.value.path == str(path)


def test_the_log_after_the_newest_snapshot_is_folded_on_top(tmp_path: Path) -> None:
    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    older = encode_batch([Record(0, 0, None, topic_record("old", TOPIC_B))], base_offset=0)
    (directory / "00000000000000000001-0000000001.checkpoint").write_bytes(older)
    snapshot = encode_batch(
        [
            Record(0, 0, None, topic_record("a", TOPIC_A)),
            Record(1, 0, None, config_record(2, "a", "retention.ms", "10")),
        ],
        base_offset=0,
    )
    (directory / "00000000000000000002-0000000001.checkpoint").write_bytes(snapshot)
    log = encode_batch(
        [
            Record(0, 0, None, config_record(2, "a", "retention.ms", "99")),  # in the snapshot
            Record(1, 0, None, config_record(2, "a", "retention.ms", "98")),  # in the snapshot
            Record(2, 0, None, config_record(2, "a", "segment.ms", "7")),
        ],
        base_offset=0,
    )
    (directory / "00000000000000000000.log").write_bytes(log)
    before = {p.name: p.read_bytes() for p in directory.iterdir()}
    image = read_metadata_image(tmp_path)
    assert image is not None
    assert image.topic_by_name("old") is None  # only the newest snapshot counts
    assert image.topic_configs == {"a": {"retention.ms": "10", "segment.ms": "7"}}
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == before  # read-only


def test_no_metadata_dir_means_no_image(tmp_path: Path) -> None:
    assert read_metadata_image(tmp_path) is None


KRAFT_CORPUS = {
    # directory: (a topic it holds, that topic's configs, the broker configs)
    "broker/itumelengmogase-cp-kraft": ("_schemas", {"cleanup.policy": "compact"}, {}),
    "broker/apache-kafka-pr15553/kafka-1168504093769635972": ("topic", {}, {}),
    "no-licence/ldi-poc-kraft": ("TestTopicPatient", {}, {}),
    "no-licence/ronem123-kraft39": ("topic_transactions", {}, {"": {"min.insync.replicas": "1"}}),
}


@pytest.mark.parametrize("name", sorted(KRAFT_CORPUS))
def test_the_image_of_real_kraft_directories(name: str) -> None:
    root = corpus_root()
    if root is None or not (root / name).is_dir():
        pytest.skip(NO_CORPUS_REASON)
    topic_name, topic_configs, broker_configs = KRAFT_CORPUS[name]
    image = read_metadata_image(root / name)
    assert image is not None
    topic = image.topic_by_name(topic_name)
    assert topic is not None and topic.partitions
    assert image.topic_configs.get(topic_name, {}) == topic_configs
    assert image.broker_configs == broker_configs
    offsets = image.topic_by_name("__consumer_offsets")
    assert offsets is not None
    assert image.topic_configs["__consumer_offsets"] == {
        "cleanup.policy": "compact",
        "compression.type": "producer",
        "segment.bytes": "104857600",
    }
