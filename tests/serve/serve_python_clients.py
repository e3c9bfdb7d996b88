"""confluent-kafka (librdkafka), kafka-python and aiokafka, each driven the same way.

Writers take :class:`serve_records.Msg` values and return the offsets the client reported;
readers assign one partition (no consumer group), position it at the start asked for (the
client's own earliest / latest / offsets-for-times call, or ``"offset:N"``: a seek to N, which
the client's ``auto.offset.reset`` resolves when N is out of range), read up to the
partition's end as it is when they start, and return :data:`serve_records.Rec` tuples;
``config`` adds client settings (in the client's own spelling).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from serve_records import OFFSET, TIMEOUT_S, Msg, Rec, Start, headers_of

# --- confluent-kafka (librdkafka) -----------------------------------------------------------


def confluent_produce(
    bootstrap: str,
    topic: str,
    messages: Sequence[Msg],
    *,
    partition: int = 0,
    extra: dict[str, Any] | None = None,
) -> list[int]:
    """Produce and flush; returns the offsets the deliveries reported (raises on any error)."""
    from confluent_kafka import Producer

    config = {"bootstrap.servers": bootstrap, "linger.ms": 5} | (extra or {})
    producer = Producer(config)
    offsets: list[int] = []
    errors: list[str] = []

    def delivered(error: Any, message: Any) -> None:
        if error is not None:
            errors.append(str(error))
        else:
            offsets.append(message.offset())

    for m in messages:
        kwargs: dict[str, Any] = {"partition": partition, "on_delivery": delivered}
        if m.headers:
            kwargs["headers"] = list(m.headers)
        if m.timestamp is not None:
            kwargs["timestamp"] = m.timestamp
        producer.produce(topic, value=m.value, key=m.key, **kwargs)
        producer.poll(0)
    remaining = producer.flush(TIMEOUT_S)
    assert remaining == 0 and not errors, f"{remaining} undelivered, errors: {errors[:3]}"
    return offsets


def _confluent_consumer(bootstrap: str, config: dict[str, Any] | None = None) -> Any:
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "seglog-tests-unused",  # assign() only: nothing is committed
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
        | (config or {})
    )


def confluent_read(
    bootstrap: str,
    topic: str,
    partition: int = 0,
    start: Start = "earliest",
    config: dict[str, Any] | None = None,
) -> list[Rec]:
    """``Consumer.assign`` at OFFSET_BEGINNING / OFFSET_END / offsets_for_times, to EOF."""
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaError, TopicPartition

    consumer = _confluent_consumer(bootstrap, config)
    try:
        if isinstance(start, str) and start.startswith(OFFSET):
            position = TopicPartition(topic, partition, int(start[len(OFFSET) :]))
        elif isinstance(start, int):
            [position] = consumer.offsets_for_times(
                [TopicPartition(topic, partition, start)], timeout=TIMEOUT_S
            )
            assert position.error is None, position.error
        else:
            offset = OFFSET_BEGINNING if start == "earliest" else OFFSET_END
            position = TopicPartition(topic, partition, offset)
        consumer.assign([position])
        out: list[Rec] = []
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return out
                raise AssertionError(f"confluent-kafka consumer error: {error}")
            out.append(
                (
                    message.offset(),
                    message.timestamp()[1],
                    message.key(),
                    message.value(),
                    headers_of(message.headers()),
                )
            )
        raise AssertionError(f"no end of partition within {TIMEOUT_S} s; read {len(out)}")
    finally:
        consumer.close()


# --- kafka-python ---------------------------------------------------------------------------


def kafka_python_produce(
    bootstrap: str, topic: str, messages: Sequence[Msg], *, partition: int = 0, **config: Any
) -> list[int]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **config)
    try:
        futures = [
            producer.send(
                topic,
                value=m.value,
                key=m.key,
                headers=list(m.headers),
                partition=partition,
                timestamp_ms=m.timestamp,
            )
            for m in messages
        ]
        producer.flush(timeout=TIMEOUT_S)
        return [f.get(timeout=TIMEOUT_S).offset for f in futures]
    finally:
        producer.close(timeout=TIMEOUT_S)


def kafka_python_read(
    bootstrap: str,
    topic: str,
    partition: int = 0,
    start: Start = "earliest",
    config: dict[str, Any] | None = None,
) -> list[Rec]:
    """``KafkaConsumer.assign`` + seek_to_beginning / seek_to_end / offsets_for_times."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, **(config or {})
    )
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        if isinstance(start, str) and start.startswith(OFFSET):
            consumer.seek(tp, int(start[len(OFFSET) :]))
        elif start == "earliest":
            consumer.seek_to_beginning(tp)
        elif start == "latest":
            consumer.seek_to_end(tp)
        else:
            found = consumer.offsets_for_times({tp: int(start)})[tp]
            if found is None:
                return []
            consumer.seek(tp, found.offset)
        end = consumer.end_offsets([tp])[tp]
        out: list[Rec] = []
        deadline = time.monotonic() + TIMEOUT_S
        while consumer.position(tp) != end:
            assert time.monotonic() < deadline, f"stuck at {consumer.position(tp)} < {end}"
            for record in consumer.poll(timeout_ms=500).get(tp, []):
                out.append(
                    (
                        record.offset,
                        -1 if record.timestamp is None else record.timestamp,
                        record.key,
                        record.value,
                        headers_of(record.headers),
                    )
                )
        return out
    finally:
        consumer.close()


# --- aiokafka -------------------------------------------------------------------------------


async def _aiokafka_produce(
    bootstrap: str, topic: str, messages: Sequence[Msg], partition: int, config: dict[str, Any]
) -> list[int]:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **config)
    await producer.start()
    try:
        futures = [
            await producer.send(
                topic,
                value=m.value,
                key=m.key,
                headers=list(m.headers),
                partition=partition,
                timestamp_ms=m.timestamp,
            )
            for m in messages
        ]
        await producer.flush()
        return [(await f).offset for f in futures]
    finally:
        await producer.stop()


def aiokafka_produce(
    bootstrap: str, topic: str, messages: Sequence[Msg], *, partition: int = 0, **config: Any
) -> list[int]:
    return asyncio.run(
        asyncio.wait_for(
            _aiokafka_produce(bootstrap, topic, messages, partition, config), TIMEOUT_S
        )
    )


async def _aiokafka_read(
    bootstrap: str, topic: str, partition: int, start: Start, config: dict[str, Any]
) -> list[Rec]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **config)
    await consumer.start()
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        if isinstance(start, str) and start.startswith(OFFSET):
            consumer.seek(tp, int(start[len(OFFSET) :]))
        elif start == "earliest":
            await consumer.seek_to_beginning(tp)
        elif start == "latest":
            await consumer.seek_to_end(tp)
        else:
            found = (await consumer.offsets_for_times({tp: int(start)}))[tp]
            if found is None:
                return []
            consumer.seek(tp, found.offset)
        end = (await consumer.end_offsets([tp]))[tp]
        out: list[Rec] = []
        while await consumer.position(tp) != end:
            batch = await consumer.getmany(tp, timeout_ms=500)
            for record in batch.get(tp, []):
                out.append(
                    (
                        record.offset,
                        -1 if record.timestamp is None else record.timestamp,
                        record.key,
                        record.value,
                        headers_of(record.headers),
                    )
                )
        return out
    finally:
        await consumer.stop()


def aiokafka_read(
    bootstrap: str,
    topic: str,
    partition: int = 0,
    start: Start = "earliest",
    config: dict[str, Any] | None = None,
) -> list[Rec]:
    return asyncio.run(
        asyncio.wait_for(
            _aiokafka_read(bootstrap, topic, partition, start, config or {}), TIMEOUT_S
        )
    )
