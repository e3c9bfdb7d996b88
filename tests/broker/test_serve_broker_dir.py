"""``seglog serve`` on a copy of a real Kafka broker's directory.

The broker's identity (``node.id`` and ``cluster.id`` from ``meta.properties``), its topics with
their partition counts and topic ids (``partition.metadata``), its records, and the consumer
groups committed in its ``__consumer_offsets`` partitions are what Kafka clients see: record
for record what seglog's own reader gives from the same files.
"""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient
from serve_process import serve

from corpus_location import NO_CORPUS_REASON, corpus_root
from seglog.broker.groups.offsets_store import OffsetsStore
from seglog.engine.log_manager import open_log_dirs
from seglog.storage.partition_dirs import read_partition_topic_id

BROKER = "itumelengmogase-cp-kraft"


@pytest.fixture
def broker_copy(tmp_path: Path) -> Path:
    root = corpus_root()
    if root is None:
        pytest.skip(NO_CORPUS_REASON)
    source = root / "broker" / BROKER
    if not source.is_dir():
        pytest.skip(f"{source} is not in this corpus")
    target = tmp_path / "broker"
    shutil.copytree(source, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return target


def _read_all(
    bootstrap: str, topic: str, partition: int
) -> list[tuple[int, bytes | None, bytes | None]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "unused",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, partition, 0)])
    records = []
    try:
        while True:
            message = consumer.poll(20)
            assert message is not None, "no answer from the server within 20 s"
            if message.error():
                assert message.error().code() == -191, message.error()  # _PARTITION_EOF
                return records
            records.append((message.offset(), message.key(), message.value()))
    finally:
        consumer.close()


def test_clients_see_the_brokers_identity_topics_records_and_groups(broker_copy: Path) -> None:
    meta = dict(
        line.split("=", 1)
        for line in (broker_copy / "meta.properties").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    with serve(broker_copy) as server:
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        metadata = admin.list_topics(timeout=20)
        assert metadata.cluster_id == meta["cluster.id"]
        assert list(metadata.brokers) == [int(meta["node.id"])]
        schemas = metadata.topics["_schemas"]
        assert list(schemas.partitions) == [0]
        assert schemas.partitions[0].leader == int(meta["node.id"])
        served = _read_all(server.bootstrap, "_schemas", 0)
        # Every group, of any protocol type (these are Connect's and the schema registry's:
        # confluent's list_consumer_groups shows only "consumer" groups, as Java's does).
        groups = {
            g["group_id"]
            for g in KafkaAdminClient(bootstrap_servers=server.bootstrap).list_groups()
        }
        described = admin.describe_topics(TopicCollection(["_schemas"]))["_schemas"].result(20)
    with open_log_dirs([broker_copy], read_only=True) as manager:
        log = manager.get_log("_schemas", 0)
        expected = [(r.offset, r.key, r.value) for r in log.iter_records(log.log_start_offset)]
        stored_groups = set(OffsetsStore.open(manager).groups())
    assert served == expected and expected
    assert groups == stored_groups
    assert str(described.topic_id) == read_partition_topic_id(broker_copy / "_schemas-0")
