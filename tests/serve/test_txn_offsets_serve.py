"""TxnOffsetCommit against a real ``seglog serve`` process.

A raw TxnOffsetCommit (the request confluent-kafka's ``send_offsets_to_transaction`` sends,
after InitProducerId and AddOffsetsToTxn, also raw) leaves the offsets pending: OffsetFetch
with ``require_stable`` answers UNSTABLE_OFFSET_COMMIT, a ``read_uncommitted`` confluent-kafka
consumer sees the offsets committed before. EndTxn then has the transaction coordinator write
the marker to the group's ``__consumer_offsets`` partition, and the restarted server (the
offsets reloaded from the files) gives the offsets of the committed transaction and not those
of the aborted one, to confluent-kafka's ``read_committed`` consumer and to kafka-python.
"""

from __future__ import annotations

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from kafka import KafkaConsumer
from kafka.structs import TopicPartition as KafkaTopicPartition
from serve_harness import ServeFactory

from seglog.engine.log_manager import open_log_dirs
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    AddOffsetsToTxnRequest,
    ApiVersionsRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    OffsetFetchRequest,
    OffsetFetchRequestOffsetFetchRequestGroup,
    OffsetFetchRequestOffsetFetchRequestTopics,
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestTxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTxnOffsetCommitRequestTopic,
)
from serve_wire import WireClient

GROUP, TXN_ID = "eos-app", "eos-app-tx"
PROPERTIES = {"offsets.topic.num.partitions": "3"}


def init_producer(bootstrap: str) -> tuple[int, int]:
    """InitProducerId for the transactional id: (producer id, epoch)."""
    with WireClient(bootstrap) as wire:
        wire.call(10, 3, FindCoordinatorRequest(key=TXN_ID, key_type=1))
        answer = wire.call(
            22, 4, InitProducerIdRequest(transactional_id=TXN_ID, transaction_timeout_ms=60_000)
        )
    assert answer.error_code == 0
    return answer.producer_id, answer.producer_epoch


def add_offsets(bootstrap: str, producer: tuple[int, int]) -> int:
    request = AddOffsetsToTxnRequest(
        transactional_id=TXN_ID, producer_id=producer[0], producer_epoch=producer[1], group_id=GROUP
    )
    with WireClient(bootstrap) as wire:
        code: int = wire.call(25, 3, request).error_code
    return code


def end_txn(bootstrap: str, producer: tuple[int, int], *, commit: bool) -> int:
    request = EndTxnRequest(
        transactional_id=TXN_ID,
        producer_id=producer[0],
        producer_epoch=producer[1],
        committed=commit,
    )
    with WireClient(bootstrap) as wire:
        code: int = wire.call(26, 3, request).error_code
    return code


def send_offsets(bootstrap: str, producer: tuple[int, int], offsets: dict[int, int]) -> list[int]:
    request = TxnOffsetCommitRequest(
        transactional_id=TXN_ID,
        group_id=GROUP,
        producer_id=producer[0],
        producer_epoch=producer[1],
        topics=[
            TxnOffsetCommitRequestTxnOffsetCommitRequestTopic(
                name="in",
                partitions=[
                    TxnOffsetCommitRequestTxnOffsetCommitRequestPartition(
                        partition_index=p, committed_offset=o, committed_metadata=None
                    )
                    for p, o in offsets.items()
                ],
            )
        ],
    )
    with WireClient(bootstrap) as wire:
        response = wire.call(28, 3, request)
    return [p.error_code for t in response.topics for p in t.partitions]


def fetch_stable(bootstrap: str) -> list[tuple[int, int, int]]:
    request = OffsetFetchRequest(
        groups=[
            OffsetFetchRequestOffsetFetchRequestGroup(
                group_id=GROUP,
                topics=[
                    OffsetFetchRequestOffsetFetchRequestTopics(name="in", partition_indexes=[0, 1])
                ],
            )
        ],
        require_stable=True,
    )
    with WireClient(bootstrap) as wire:
        response = wire.call(9, 8, request)
    [group] = response.groups
    return [
        (p.partition_index, p.committed_offset, p.error_code)
        for t in group.topics
        for p in t.partitions
    ]


def confluent_committed(bootstrap: str, isolation: str) -> list[int]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": GROUP, "isolation.level": isolation}
    )
    try:
        wanted = [ConfluentTopicPartition("in", 0), ConfluentTopicPartition("in", 1)]
        return [tp.offset for tp in consumer.committed(wanted, timeout=30)]
    finally:
        consumer.close()


def kafka_python_committed(bootstrap: str) -> list[int | None]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP)
    try:
        return [consumer.committed(KafkaTopicPartition("in", p)) for p in (0, 1)]
    finally:
        consumer.close()


def test_transactional_offsets_are_pending_then_committed_or_aborted(
    serve_factory: ServeFactory,
) -> None:
    server = serve_factory(properties=PROPERTIES, start=False)
    with open_log_dirs([server.data_dir], overrides=PROPERTIES) as manager:
        manager.create_topic("in", 2)
    server.start()
    with WireClient(server.bootstrap) as wire:
        versions = wire.call(18, 3, ApiVersionsRequest(client_software_name="t"))
    assert [(k.min_version, k.max_version) for k in versions.api_keys if k.api_key == 28] == [
        (0, 3)
    ]

    producer = init_producer(server.bootstrap)
    assert send_offsets(server.bootstrap, producer, {0: 10}) == [
        int(ErrorCode.INVALID_TXN_STATE)  # the group's partition is not in the transaction yet
    ]
    assert add_offsets(server.bootstrap, producer) == 0
    assert send_offsets(server.bootstrap, producer, {0: 10, 1: 20}) == [0, 0]
    unstable = int(ErrorCode.UNSTABLE_OFFSET_COMMIT)
    assert fetch_stable(server.bootstrap) == [(0, -1, unstable), (1, -1, unstable)]
    assert confluent_committed(server.bootstrap, "read_uncommitted") == [-1001, -1001]
    assert end_txn(server.bootstrap, producer, commit=True) == 0
    server.stop()

    server.start()
    assert fetch_stable(server.bootstrap) == [(0, 10, 0), (1, 20, 0)]
    assert confluent_committed(server.bootstrap, "read_committed") == [10, 20]
    assert add_offsets(server.bootstrap, producer) == 0  # the next transaction
    assert send_offsets(server.bootstrap, producer, {0: 15}) == [0]
    assert fetch_stable(server.bootstrap) == [(0, -1, unstable), (1, 20, 0)]
    assert confluent_committed(server.bootstrap, "read_uncommitted") == [10, 20]
    assert end_txn(server.bootstrap, producer, commit=False) == 0
    server.stop()

    server.start()
    assert fetch_stable(server.bootstrap) == [(0, 10, 0), (1, 20, 0)]
    assert confluent_committed(server.bootstrap, "read_committed") == [10, 20]
    assert kafka_python_committed(server.bootstrap) == [10, 20]
