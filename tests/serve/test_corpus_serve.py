"""Real Kafka brokers' data directories, served as they are.

Each corpus directory (written by Kafka brokers from 0.10 to 3.x: legacy magic 0/1 message
sets, gzip / snappy / lz4 batches, several segments, compacted topics, transactional batches
with their markers) is copied to a tmp dir and served by ``seglog serve``. Every partition of
every topic (the internal ``__*`` ones aside) must read back through confluent-kafka,
kafka-python, aiokafka and ``seglog consume`` exactly as kafka-python decodes the segment
files (from the log start offset on, control records left out), and through kcat when the keys
and values are UTF-8 text (kcat's JSON carries text only). A copy from one broker of a cluster
may hold partition 1 of a topic without partition 0: Metadata lists the missing ones as
offline and the present ones still serve.
"""

from __future__ import annotations

import re
import shutil
import stat
from pathlib import Path

import pytest
from serve_clients import disk_records, kcat_read, seglog_consume
from serve_harness import ServeFactory
from serve_python_clients import aiokafka_read, confluent_read, kafka_python_read
from serve_records import Rec

from corpus_location import corpus_root
from seglog.protocol import messages
from serve_wire import WireClient
from support.kafka_oracle import read_partition_dir_with_kafka_python

LEADER_NOT_AVAILABLE = 5
OFFSET_OUT_OF_RANGE = 1
FENCED_LEADER_EPOCH = 74
PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


def _partitions(root: Path) -> list[tuple[str, int]]:
    found = []
    for child in sorted(root.iterdir()):
        match = PARTITION_DIR.match(child.name)
        if match and child.is_dir() and any(child.glob("*.log")):
            found.append((match["topic"], int(match["partition"])))
    return found


def _roots() -> list[Path]:
    root = corpus_root()
    if root is None:
        return []
    candidates = [p for p in sorted(root.rglob("*")) if p.is_dir()]
    return [p for p in candidates if any(not t.startswith("__") for t, _ in _partitions(p))]


def _root_params() -> list[object]:
    roots = _roots()
    if not roots:
        return [pytest.param(None, id="no-corpus")]
    base = corpus_root()
    assert base is not None
    return [pytest.param(p, id=str(p.relative_to(base))) for p in roots]


def _writable_copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return target


def _check_epochs(
    bootstrap: str, listed: list[messages.MetadataResponseMetadataResponseTopic]
) -> None:
    """A Fetch naming an older leader epoch than the log's is FENCED_LEADER_EPOCH; the log's
    own epoch (Metadata's) reads."""
    with WireClient(bootstrap) as wire:
        for entry in listed:
            for p in entry.partitions:
                if p.error_code != 0 or p.leader_epoch <= 0:
                    continue
                for current, code in (
                    (p.leader_epoch - 1, FENCED_LEADER_EPOCH),
                    (p.leader_epoch, 0),
                ):
                    request = messages.FetchRequest(
                        max_bytes=1 << 16,
                        topics=[
                            messages.FetchRequestFetchTopic(
                                topic=entry.name,
                                partitions=[
                                    messages.FetchRequestFetchPartition(
                                        partition=p.partition_index,
                                        current_leader_epoch=current,
                                        fetch_offset=0,
                                        partition_max_bytes=1 << 16,
                                    )
                                ],
                            )
                        ],
                    )
                    [answer] = wire.call(1, 12, request).responses[0].partitions
                    assert answer.error_code in ((code,) if code else (0, OFFSET_OUT_OF_RANGE))


def _log_start(bootstrap: str, topic: str, partition: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        low, _ = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
    finally:
        consumer.close()
    return int(low)


def _is_text(records: list[Rec]) -> bool:
    try:
        for _, _, key, value, headers in records:
            for part in (key, value, *(v for _, v in headers)):
                if part is not None:
                    part.decode()
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.parametrize("source", _root_params())
def test_a_real_brokers_directory_reads_back_through_every_client(
    source: Path | None, serve_factory: ServeFactory, kcat: str, tmp_path: Path
) -> None:
    if source is None:
        pytest.skip("Kafka corpus not found (../shared/corpus or $SEGLOG_CORPUS)")
    data_dir = _writable_copy(source, tmp_path / "copy")
    server = serve_factory(data_dir=data_dir)
    present: dict[str, set[int]] = {}
    for topic, partition in _partitions(data_dir):
        present.setdefault(topic, set()).add(partition)
    with WireClient(server.bootstrap) as wire:
        answer = wire.call(3, 12, messages.MetadataRequest(topics=None))
    [broker] = answer.brokers  # the copy's own node id (meta.properties) or the default
    listed = answer.topics
    # Partitions 0..highest; those this broker's copy lacks are offline (LEADER_NOT_AVAILABLE).
    for entry in listed:
        assert [p.partition_index for p in entry.partitions] == list(
            range(max(present[entry.name]) + 1)
        )
        assert [(p.error_code, p.leader_id) for p in entry.partitions] == [
            (0, broker.node_id)
            if p.partition_index in present[entry.name]
            else (LEADER_NOT_AVAILABLE, -1)
            for p in entry.partitions
        ]
    _check_epochs(server.bootstrap, listed)
    checked = 0
    for topic, partition in _partitions(data_dir):
        if topic.startswith("__"):
            continue
        readings = {
            "confluent-kafka": confluent_read(server.bootstrap, topic, partition),
            "kafka-python": kafka_python_read(server.bootstrap, topic, partition),
            "aiokafka": aiokafka_read(server.bootstrap, topic, partition),
            "seglog consume": seglog_consume(data_dir, topic, partition),
        }
        start = _log_start(server.bootstrap, topic, partition)
        expected = [r for r in disk_records(data_dir, topic, partition) if r[0] >= start]
        if _is_text(expected):
            readings["kcat"] = kcat_read(kcat, server.bootstrap, topic, partition)
        for name, got in readings.items():
            assert got == expected, f"{topic}-{partition} through {name}"
        checked += 1
    assert checked > 0


def _first_at_or_after(records: list[tuple[int, int]], timestamp: int) -> int:
    return min((offset for offset, ts in records if ts >= timestamp), default=-1)


@pytest.mark.parametrize("source", _root_params())
def test_offsets_for_times_on_real_brokers_files(
    source: Path | None, serve_factory: ServeFactory, tmp_path: Path
) -> None:
    """The first offset whose record timestamp is at least T, found through the time index of
    files Kafka wrote, agrees with a scan of the decoded records (control records included:
    Kafka's lookup sees them too), for librdkafka and kafka-python."""
    if source is None:
        pytest.skip("Kafka corpus not found (../shared/corpus or $SEGLOG_CORPUS)")
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as ConfluentPartition
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaPartition

    data_dir = _writable_copy(source, tmp_path / "copy")
    server = serve_factory(data_dir=data_dir)
    confluent = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "unused"})
    kafka_python = KafkaConsumer(bootstrap_servers=server.bootstrap)
    asked = 0
    try:
        for topic, partition in _partitions(data_dir):
            if topic.startswith("__"):
                continue
            start = _log_start(server.bootstrap, topic, partition)
            stamped = [
                (r[0], r[1])
                for r in read_partition_dir_with_kafka_python(
                    data_dir / f"{topic}-{partition}", include_control=True
                )
                if r[0] >= start and r[1] >= 0
            ]
            stamps = sorted({ts for _, ts in stamped}) or [0]  # untimed records: never found
            for wanted in {stamps[0], stamps[len(stamps) // 2], stamps[-1], stamps[-1] + 1}:
                expected = _first_at_or_after(stamped, wanted)
                [found] = confluent.offsets_for_times(
                    [ConfluentPartition(topic, partition, wanted)], timeout=30
                )
                tp = KafkaPartition(topic, partition)
                answer = kafka_python.offsets_for_times({tp: wanted})[tp]
                where = f"{topic}-{partition} at {wanted}"
                assert found.offset == expected, where
                assert (-1 if answer is None else answer.offset) == expected, where
                asked += 1
    finally:
        confluent.close()
        kafka_python.close()
    assert asked > 0
