"""Fetch and ListOffsets corners as the three Python-facing clients meet them.

* A consumer positioned at the latest offset waits in a long poll and gets exactly the records
  appended after it (the append wakes the poll).
* A position beyond the log end is OFFSET_OUT_OF_RANGE; each client's ``auto.offset.reset``
  (earliest) then reads everything.
* After DeleteRecords the earliest offset is the new log start offset for every reader, and a
  position below it is out of range.
* Records far larger than the consumer's fetch limits still come, one batch per fetch (KIP-74).
* A ``LogAppendTime`` topic: the server stamps each batch, the producer's delivery report and
  every reader show the same broker time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from serve_clients import assert_all_read, create_topic, disk_records, every_reading, produce_with
from serve_harness import ServeFactory, ServeProcess
from serve_python_clients import (
    aiokafka_read,
    confluent_produce,
    confluent_read,
    kafka_python_read,
)
from serve_records import TIMEOUT_S, Msg, Rec, expected_records, headers_of, sample_messages

BASE_TS = 1_700_000_000_000
EARLIEST_RESET = {
    "confluent-kafka": {"auto.offset.reset": "earliest"},
    "kafka-python": {"auto_offset_reset": "earliest"},
    "aiokafka": {"auto_offset_reset": "earliest"},
}
READERS = {
    "confluent-kafka": confluent_read,
    "kafka-python": kafka_python_read,
    "aiokafka": aiokafka_read,
}


def _rec(offset: int, timestamp: int, key: Any, value: Any, headers: Any) -> Rec:
    return (offset, timestamp, key, value, headers_of(headers))


def _confluent_tail(bootstrap: str, topic: str, want: int, ready: threading.Event) -> list[Rec]:
    """librdkafka reports no position before the first record reaches the application, so
    ``ready`` is set at once; the caller then keeps producing until ``want`` records came."""
    from confluent_kafka import OFFSET_END, Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_END)])
        ready.set()
        out: list[Rec] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(out) < want and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None or message.error() is not None:
                continue
            ts = message.timestamp()[1]
            out.append(
                _rec(message.offset(), ts, message.key(), message.value(), message.headers())
            )
        return out
    finally:
        consumer.close()


def _kafka_python_tail(bootstrap: str, topic: str, want: int, ready: threading.Event) -> list[Rec]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_end(tp)
        consumer.position(tp)  # resolves the end now
        ready.set()
        out: list[Rec] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(out) < want and time.monotonic() < deadline:
            for r in consumer.poll(timeout_ms=500).get(tp, []):
                out.append(_rec(r.offset, r.timestamp, r.key, r.value, r.headers))
        return out
    finally:
        consumer.close()


def _aiokafka_tail(bootstrap: str, topic: str, want: int, ready: threading.Event) -> list[Rec]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> list[Rec]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_end(tp)
            await consumer.position(tp)
            ready.set()
            out: list[Rec] = []
            while len(out) < want:
                batch = await consumer.getmany(tp, timeout_ms=500)
                for r in batch.get(tp, []):
                    out.append(_rec(r.offset, r.timestamp, r.key, r.value, r.headers))
            return out
        finally:
            await consumer.stop()

    return asyncio.run(asyncio.wait_for(run(), TIMEOUT_S))


TAILS = {
    "confluent-kafka": _confluent_tail,
    "kafka-python": _kafka_python_tail,
    "aiokafka": _aiokafka_tail,
}


@pytest.mark.parametrize("client", sorted(TAILS))
def test_a_consumer_at_the_latest_offset_gets_only_what_comes_after(
    serve: ServeProcess, client: str
) -> None:
    old = sample_messages(10, base_ts=BASE_TS, tag="old")
    confluent_produce(serve.bootstrap, "tail", old)
    new = sample_messages(40, base_ts=BASE_TS + 500, tag="new")
    want = 3
    ready = threading.Event()
    got: list[list[Rec]] = []
    reader = threading.Thread(
        target=lambda: got.append(TAILS[client](serve.bootstrap, "tail", want, ready))
    )
    reader.start()
    assert ready.wait(TIMEOUT_S), f"{client} never resolved the latest offset"
    # One record per produce request until the reader has its records: a reader that resolves
    # "latest" late (librdkafka) starts after some of them, never before offset 10.
    sent = 0
    while reader.is_alive() and sent < len(new):
        confluent_produce(serve.bootstrap, "tail", new[sent : sent + 1])
        sent += 1
        reader.join(0.1)
    reader.join(TIMEOUT_S)

    [records] = got
    assert len(records) == want, records
    first = records[0][0]
    assert first >= 10
    assert records == expected_records(new, first_offset=10)[first - 10 : first - 10 + want]
    if client != "confluent-kafka":  # positioned before anything new was produced
        assert first == 10


def test_a_position_beyond_the_end_resets_to_earliest(serve: ServeProcess) -> None:
    messages = sample_messages(12, base_ts=BASE_TS, tag="reset")
    confluent_produce(serve.bootstrap, "reset", messages)
    expected = expected_records(messages)

    for client, read in READERS.items():
        assert read(serve.bootstrap, "reset", 0, "offset:1000", EARLIEST_RESET[client]) == expected


def test_delete_records_moves_the_earliest_offset_for_every_reader(
    serve: ServeProcess, kcat: str
) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    messages = sample_messages(20, base_ts=BASE_TS, tag="deleted")
    for half in (messages[:10], messages[10:]):  # two produce requests: two batches
        confluent_produce(serve.bootstrap, "trimmed", half)
    admin = AdminClient({"bootstrap.servers": serve.bootstrap})
    [future] = admin.delete_records([TopicPartition("trimmed", 0, 10)]).values()
    assert future.result(TIMEOUT_S).low_watermark == 10

    expected = expected_records(messages)[10:]
    readings = every_reading(kcat, serve.bootstrap, serve.data_dir, "trimmed")
    readings.pop("segment files (kafka-python)")  # files keep the bytes below the start
    assert_all_read(readings, expected)
    for client, read in READERS.items():
        assert read(serve.bootstrap, "trimmed", 0, "offset:3", EARLIEST_RESET[client]) == expected


def test_records_larger_than_the_fetch_limits_still_come(serve: ServeProcess, kcat: str) -> None:
    messages = [Msg(f"k{i}".encode(), f"{i}:".encode() + b"v" * 60_000) for i in range(6)]
    confluent_produce(serve.bootstrap, "big", messages, extra={"linger.ms": 0, "batch.size": 1})
    expected = [(o, r[1], *r[2:]) for o, r in enumerate(disk_records(serve.data_dir, "big"))]
    assert [(r[2], r[3]) for r in expected] == [(m.key, m.value) for m in messages]

    small = {
        "confluent-kafka": {
            "fetch.max.bytes": 1024,
            "max.partition.fetch.bytes": 1024,
            "message.max.bytes": 1000,  # librdkafka wants fetch.max.bytes >= it
        },
        "kafka-python": {"fetch_max_bytes": 1024, "max_partition_fetch_bytes": 1024},
        "aiokafka": {"fetch_max_bytes": 1024, "max_partition_fetch_bytes": 1024},
    }
    for client, read in READERS.items():
        assert read(serve.bootstrap, "big", 0, "earliest", small[client]) == expected, client


def test_log_append_time_topic_reports_the_broker_time(
    serve_factory: ServeFactory, kcat: str
) -> None:
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Producer

    server = serve_factory(start=False)
    create_topic(server.data_dir, "stamped", "message.timestamp.type=LogAppendTime")
    server.start()
    producer = Producer({"bootstrap.servers": server.bootstrap})
    reports: list[tuple[int, int]] = []
    before = int(time.time() * 1000)
    for i in range(5):
        producer.produce(
            "stamped",
            key=b"k",
            value=f"{i}".encode(),
            timestamp=BASE_TS,  # replaced by the broker's time
            on_delivery=lambda err, msg: reports.append(msg.timestamp()),
        )
    assert producer.flush(TIMEOUT_S) == 0
    after = int(time.time() * 1000)

    assert {kind for kind, _ in reports} == {TIMESTAMP_LOG_APPEND_TIME}
    [stamp] = {ts for _, ts in reports}
    assert before <= stamp <= after
    expected = [(i, stamp, b"k", f"{i}".encode(), ()) for i in range(5)]
    assert_all_read(every_reading(kcat, server.bootstrap, server.data_dir, "stamped"), expected)
    produce_with("kafka-python", kcat, server.bootstrap, "stamped", [Msg(b"k", b"5", (), BASE_TS)])
    last = disk_records(server.data_dir, "stamped")[-1]
    assert last[0] == 5 and last[1] >= stamp
