"""OffsetDelete over the wire (kafka-python's ``delete_group_offsets``, what
``kafka-consumer-groups.sh --delete-offsets`` sends), against a real ``seglog serve``.

Kafka's rules: the offsets of a topic a live member subscribes to stay (GROUP_SUBSCRIBED_TO_TOPIC),
the others become tombstones at once, and an unknown group is GROUP_ID_NOT_FOUND; what is
deleted stays deleted after a restart.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTopicPartition
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import GroupIdNotFoundError, GroupSubscribedToTopicError, NoError
from serve_process import serve

from seglog.broker.groups.offsets_store import OffsetsStore
from seglog.engine.log_manager import open_log_dirs


def _commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(
            offsets=[CTopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False
        )
    finally:
        consumer.close()


def test_offsets_are_deleted_unless_a_live_member_subscribes(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("group.initial.rebalance.delay.ms=0\n")
    data = tmp_path / "data"
    data.mkdir()
    with open_log_dirs([data]) as manager:
        manager.create_topic("orders", 2)
        manager.create_topic("audit", 1)
    with serve(data, config=config) as server:
        _commit(server.bootstrap, "g", {("orders", 0): 5, ("orders", 1): 6, ("audit", 0): 7})
        member = Consumer(
            {"bootstrap.servers": server.bootstrap, "group.id": "g", "session.timeout.ms": 6000}
        )
        member.subscribe(["audit"])
        deadline = time.monotonic() + 30
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.2)
        assert member.assignment(), "the member never got its partition"
        admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
        try:
            result = admin.delete_group_offsets(
                "g", [TopicPartition("orders", 0), TopicPartition("audit", 0)]
            )
            assert result[TopicPartition("orders", 0)] is NoError
            assert result[TopicPartition("audit", 0)] is GroupSubscribedToTopicError
            with pytest.raises(GroupIdNotFoundError):
                admin.delete_group_offsets("nobody", [TopicPartition("orders", 0)])
        finally:
            admin.close()
            member.close()
    with open_log_dirs([data], read_only=True) as manager:
        left = {
            (tp.topic, tp.partition): v.offset
            for tp, v in OffsetsStore.open(manager).committed("g").items()
        }
    assert left[("orders", 1)] == 6
    assert ("orders", 0) not in left
    assert ("audit", 0) in left
