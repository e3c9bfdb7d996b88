"""Less travelled paths of Metadata, Produce, Fetch, ListOffsets and OffsetForLeaderEpoch,
through the real clients (and the raw wire where no client sends the request asked for).
"""

from __future__ import annotations

import time

from serve_clients import assert_all_read, every_reading
from serve_harness import ServeFactory, ServeProcess
from serve_python_clients import confluent_produce
from serve_records import TIMEOUT_S, Msg, Rec, expected_records, headers_of, sample_messages

from seglog.protocol import messages
from serve_wire import WireClient, build_batch, produce_request

BASE_TS = 1_700_000_000_000
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REQUEST = 42


def test_an_empty_topic_reads_as_empty_everywhere(serve: ServeProcess, kcat: str) -> None:
    with WireClient(serve.bootstrap) as wire:
        request = messages.MetadataRequest(
            topics=[messages.MetadataRequestMetadataRequestTopic(name="empty")]
        )
        [topic] = wire.call(3, 12, request).topics
        assert topic.error_code == 0 and len(topic.partitions) == 1
    assert_all_read(every_reading(kcat, serve.bootstrap, serve.data_dir, "empty"), [])


def test_a_consumer_does_not_create_topics(serve: ServeProcess) -> None:
    """librdkafka's consumer asks Metadata with ``allow_auto_topic_creation`` false."""
    from confluent_kafka import Consumer, KafkaError

    consumer = Consumer(
        {
            "bootstrap.servers": serve.bootstrap,
            "group.id": "unused",
            "allow.auto.create.topics": False,
        }
    )
    try:
        topic = consumer.list_topics("never-made", timeout=TIMEOUT_S).topics["never-made"]
    finally:
        consumer.close()
    assert topic.error is not None
    assert topic.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert not (serve.data_dir / "never-made-0").exists()


def test_produce_to_a_missing_partition_is_unknown_topic_or_partition(
    serve: ServeProcess,
) -> None:
    confluent_produce(serve.bootstrap, "one", [Msg(b"k", b"v")])
    with WireClient(serve.bootstrap) as wire:
        answer = wire.call(0, 7, produce_request("one", 5, build_batch([b"k"], [b"v"], BASE_TS)))
        missing = wire.call(0, 3, produce_request("nope", 0, build_batch([b"k"], [b"v"], BASE_TS)))
    assert answer.responses[0].partition_responses[0].error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert missing.responses[0].partition_responses[0].error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert not (serve.data_dir / "nope-0").exists()


def test_acks_zero_and_one_both_land(serve: ServeProcess, kcat: str) -> None:
    first = sample_messages(8, base_ts=BASE_TS, tag="acks0")
    second = sample_messages(8, base_ts=BASE_TS + 100, tag="acks1")
    confluent_produce(serve.bootstrap, "acks", first, extra={"acks": 0})
    confluent_produce(serve.bootstrap, "acks", second, extra={"acks": 1})
    expected = expected_records(first + second)
    assert_all_read(every_reading(kcat, serve.bootstrap, serve.data_dir, "acks"), expected)


def test_admin_list_offsets_earliest_latest_max_timestamp_and_by_time(
    serve: ServeProcess,
) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    stamps = [BASE_TS + d for d in (30, 10, 50, 20, 40)]  # the largest at offset 2
    confluent_produce(serve.bootstrap, "listed", [Msg(b"k", b"v", (), ts) for ts in stamps])
    admin = AdminClient({"bootstrap.servers": serve.bootstrap})
    tp = TopicPartition("listed", 0)

    def offset_of(spec: OffsetSpec) -> tuple[int, int]:
        [future] = admin.list_offsets({tp: spec}, request_timeout=TIMEOUT_S).values()
        info = future.result(TIMEOUT_S)
        return info.offset, info.timestamp

    assert offset_of(OffsetSpec.earliest())[0] == 0
    assert offset_of(OffsetSpec.latest())[0] == 5
    assert offset_of(OffsetSpec.max_timestamp()) == (2, BASE_TS + 50)
    assert offset_of(OffsetSpec.for_timestamp(BASE_TS + 35)) == (2, BASE_TS + 50)
    assert offset_of(OffsetSpec.for_timestamp(BASE_TS + 60))[0] == -1


def test_a_seek_with_a_leader_epoch_is_validated_and_reads_on(serve: ServeProcess) -> None:
    """librdkafka checks a position carrying a leader epoch with OffsetForLeaderEpoch first."""
    from confluent_kafka import Consumer, TopicPartition

    messages_in = sample_messages(10, base_ts=BASE_TS, tag="epoch")
    confluent_produce(serve.bootstrap, "epochs", messages_in)
    consumer = Consumer(
        {"bootstrap.servers": serve.bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    out: list[Rec] = []
    try:
        consumer.assign([TopicPartition("epochs", 0, 4, leader_epoch=0)])
        deadline = time.monotonic() + TIMEOUT_S
        while len(out) < 6 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            out.append(
                (
                    message.offset(),
                    message.timestamp()[1],
                    message.key(),
                    message.value(),
                    headers_of(message.headers()),
                )
            )
            assert message.leader_epoch() == 0
    finally:
        consumer.close()
    assert out == expected_records(messages_in)[4:]


def test_one_fetch_over_three_partitions_within_a_small_budget(
    serve_factory: ServeFactory,
) -> None:
    from kafka import KafkaConsumer, TopicPartition

    server = serve_factory({"num.partitions": "3"})
    expected: dict[int, list[Rec]] = {}
    for partition in range(3):
        batch = sample_messages(25, base_ts=BASE_TS, tag=f"p{partition}")
        confluent_produce(server.bootstrap, "wide", batch, partition=partition)
        expected[partition] = expected_records(batch)

    consumer = KafkaConsumer(
        bootstrap_servers=server.bootstrap,
        enable_auto_commit=False,
        fetch_max_bytes=2000,
        max_partition_fetch_bytes=1500,
    )
    got: dict[int, list[Rec]] = {p: [] for p in range(3)}
    try:
        tps = [TopicPartition("wide", p) for p in range(3)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + TIMEOUT_S
        while any(len(got[p]) < 25 for p in got) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                got[tp.partition] += [
                    (r.offset, r.timestamp, r.key, r.value, headers_of(r.headers)) for r in records
                ]
    finally:
        consumer.close()
    assert got == expected


def test_list_offsets_naming_a_partition_twice_is_invalid_request(
    serve_factory: ServeFactory,
) -> None:
    server = serve_factory({"num.partitions": "2"})
    confluent_produce(server.bootstrap, "twice", [Msg(b"k", b"v")] * 3)

    def entry(partition: int, timestamp: int) -> messages.ListOffsetsRequestListOffsetsPartition:
        return messages.ListOffsetsRequestListOffsetsPartition(
            partition_index=partition, timestamp=timestamp
        )

    request = messages.ListOffsetsRequest(
        replica_id=-1,
        topics=[
            messages.ListOffsetsRequestListOffsetsTopic(
                name="twice", partitions=[entry(0, -1), entry(1, -1), entry(0, -2)]
            )
        ],
    )
    with WireClient(server.bootstrap) as wire:
        [topic] = wire.call(2, 7, request).topics
    answers = [(p.partition_index, p.error_code, p.offset) for p in topic.partitions]
    assert answers == [(0, INVALID_REQUEST, -1), (1, 0, 0), (0, INVALID_REQUEST, -1)]
