"""Consumer groups through the admin clients: confluent-kafka's AdminClient and kafka-python's
KafkaAdminClient list, describe, fetch the offsets of and delete groups served by ``seglog
serve`` (ListGroups, DescribeGroups, OffsetFetch, DeleteGroups); a deleted group stays
deleted after a restart (its tombstones are in ``__consumer_offsets``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
)
from confluent_kafka.admin import AdminClient
from group_server import PARTITIONS, GroupServer, wait_for
from kafka.admin import KafkaAdminClient

TIMEOUT_S = 30


@contextmanager
def active_member(bootstrap: str, group: str, topic: str) -> Iterator[ConfluentConsumer]:
    """One confluent-kafka member that read the topic's 100 records and committed them; closed
    (LeaveGroup) at the end of the block."""
    consumer = ConfluentConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": "admin-test-member",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 3000,
            "heartbeat.interval.ms": 200,
        }
    )
    consumer.subscribe([topic])
    read: list[object] = []

    def all_read() -> bool:
        read.extend(m for m in consumer.consume(100, 0.05) if m.error() is None)
        return len(read) >= 100

    try:
        wait_for("the member to read the topic", all_read)
        consumer.commit(asynchronous=False)
        yield consumer
    finally:
        consumer.close()


def test_confluent_admin_lists_describes_fetches_and_deletes_groups(
    server: GroupServer, topic: str, group: str
) -> None:
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    with active_member(server.bootstrap, group, topic):
        listed = admin.list_consumer_groups().result(TIMEOUT_S)
        assert listed.errors == []
        states = {g.group_id: g.state for g in listed.valid}
        assert states[group] == ConsumerGroupState.STABLE
        described = admin.describe_consumer_groups([group])[group].result(TIMEOUT_S)
        assert described.state == ConsumerGroupState.STABLE
        assert described.partition_assignor in ("range", "roundrobin")
        (member,) = described.members
        assert member.client_id == "admin-test-member"
        assert member.host == "/127.0.0.1"
        owned = {(tp.topic, tp.partition) for tp in member.assignment.topic_partitions}
        assert owned == {(topic, p) for p in range(PARTITIONS)}
        refused = admin.delete_consumer_groups([group])[group]
        try:
            refused.result(TIMEOUT_S)
            raise AssertionError("a group with a member was deleted")
        except KafkaException as failure:
            assert failure.args[0].code() == KafkaError.NON_EMPTY_GROUP

    fetched = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    offsets = fetched[group].result(TIMEOUT_S).topic_partitions
    assert {(tp.topic, tp.partition, tp.offset) for tp in offsets} == {
        (topic, p, 25) for p in range(PARTITIONS)
    }
    empty = admin.describe_consumer_groups([group])[group].result(TIMEOUT_S)
    assert (empty.state, empty.members) == (ConsumerGroupState.EMPTY, [])

    assert admin.delete_consumer_groups([group])[group].result(TIMEOUT_S) is None
    server.restart()
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    after = admin.list_consumer_groups().result(TIMEOUT_S)
    assert group not in {g.group_id for g in after.valid}
    fetched = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    assert fetched[group].result(TIMEOUT_S).topic_partitions == []


def test_kafka_python_admin_lists_describes_fetches_and_deletes_groups(
    server: GroupServer, topic: str, group: str
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    try:
        with active_member(server.bootstrap, group, topic):
            listed = {g["group_id"]: g for g in admin.list_groups()}
            assert listed[group]["group_state"] == "Stable"
            assert listed[group]["protocol_type"] == "consumer"
            described = admin.describe_groups([group])[group]
            assert described["error"] is None
            assert described["group_state"] == "Stable"
            assert described["protocol_data"] in ("range", "roundrobin")
            (member,) = described["members"]
            assert member["client_id"] == "admin-test-member"
            assert admin.delete_groups([group]) == {group: "NonEmptyGroupError"}

        offsets = admin.list_group_offsets({group: None})[group]
        assert {(tp.topic, tp.partition, om.offset) for tp, om in offsets.items()} == {
            (topic, p, 25) for p in range(PARTITIONS)
        }
        assert admin.describe_groups([group])[group]["group_state"] == "Empty"
        assert admin.delete_groups([group]) == {group: "OK"}
        assert admin.delete_groups([group]) == {group: "GroupIdNotFoundError"}
        assert group not in {g["group_id"] for g in admin.list_groups()}
    finally:
        admin.close()
    server.restart()
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    try:
        assert group not in {g["group_id"] for g in admin.list_groups()}
        assert admin.list_group_offsets({group: None})[group] == {}
    finally:
        admin.close()
