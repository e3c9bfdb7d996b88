"""Clients that stay connected while ``seglog serve`` restarts on the same port.

A clean SIGTERM closes every connection; the clients reconnect to the new process on the same
address and carry on: producers' later records land after the earlier ones, consumers resume
at their position with no record lost or repeated, and an idempotent producer's sequence
numbers are still accepted (the producer state survived through the snapshot written at
shutdown).
"""

from __future__ import annotations

import time
from typing import Any

from serve_clients import assert_all_read, every_reading
from serve_harness import ServeProcess
from serve_records import TIMEOUT_S, Rec, expected_records, headers_of, sample_messages

BASE_TS = 1_700_000_000_000


def _produce(producer: Any, topic: str, messages: list[Any]) -> None:
    errors: list[str] = []
    for m in messages:
        producer.produce(
            topic,
            key=m.key,
            value=m.value,
            headers=list(m.headers),
            timestamp=m.timestamp,
            partition=0,
            on_delivery=lambda err, _msg: errors.append(str(err)) if err else None,
        )
    assert producer.flush(TIMEOUT_S) == 0 and not errors, errors


def _restart_with_producer(
    serve: ServeProcess, kcat: str, config: dict[str, Any], topic: str
) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": serve.bootstrap, "linger.ms": 5} | config)
    first = sample_messages(15, base_ts=BASE_TS, tag="first")
    second = sample_messages(15, base_ts=BASE_TS + 1000, tag="second")
    _produce(producer, topic, first)
    serve.restart(same_port=True)
    _produce(producer, topic, second)

    expected = expected_records(first + second)
    assert_all_read(every_reading(kcat, serve.bootstrap, serve.data_dir, topic), expected)


def test_a_producer_carries_on_after_a_restart(serve: ServeProcess, kcat: str) -> None:
    _restart_with_producer(serve, kcat, {"compression.type": "lz4"}, "carry-on")


def test_an_idempotent_producer_carries_on_after_a_restart(serve: ServeProcess, kcat: str) -> None:
    _restart_with_producer(
        serve, kcat, {"enable.idempotence": True, "compression.type": "zstd"}, "carry-on-idem"
    )


def _drain(consumer: Any, want: int) -> list[Rec]:
    out: list[Rec] = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(out) < want and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is None or message.error() is not None:
            continue
        out.append(
            (
                message.offset(),
                message.timestamp()[1],
                message.key(),
                message.value(),
                headers_of(message.headers()),
            )
        )
    return out


def test_a_consumer_resumes_at_its_position_after_a_restart(serve: ServeProcess) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    first = sample_messages(12, base_ts=BASE_TS, tag="first")
    second = sample_messages(12, base_ts=BASE_TS + 1000, tag="second")
    _produce(Producer({"bootstrap.servers": serve.bootstrap}), "resume", first)
    consumer = Consumer(
        {"bootstrap.servers": serve.bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition("resume", 0, OFFSET_BEGINNING)])
        before = _drain(consumer, len(first))
        serve.restart(same_port=True)
        _produce(Producer({"bootstrap.servers": serve.bootstrap}), "resume", second)
        after = _drain(consumer, len(second))
    finally:
        consumer.close()
    assert before + after == expected_records(first + second)
