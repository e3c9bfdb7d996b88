"""The four peer clients (kcat, confluent-kafka, kafka-python, aiokafka) over SASL_PLAINTEXT:
produce values to a topic and read them back, each with its own settings' spelling.

A refused login shows differently in each client: :func:`produce` returns the client's own
evidence of the refusal (an error text) or None when the values were acknowledged.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from collections.abc import Callable

CLIENT_TIMEOUT_S = 30.0


def _kcat_flags(bootstrap: str, mechanism: str, user: str, password: str) -> list[str]:
    return [
        "-b", bootstrap,
        "-X", "security.protocol=SASL_PLAINTEXT",
        "-X", f"sasl.mechanisms={mechanism}",
        "-X", f"sasl.username={user}",
        "-X", f"sasl.password={password}",
    ]  # fmt: skip


def kcat_produce(
    kcat: str,
    bootstrap: str,
    mechanism: str,
    user: str,
    password: str,
    topic: str,
    values: list[str],
) -> str | None:
    done = subprocess.run(
        [kcat, "-P", "-t", topic, *_kcat_flags(bootstrap, mechanism, user, password)],
        input="".join(f"{v}\n" for v in values),
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
        check=False,
    )
    return None if done.returncode == 0 else done.stderr


def kcat_consume(
    kcat: str, bootstrap: str, mechanism: str, user: str, password: str, topic: str, count: int
) -> list[str]:
    done = subprocess.run(
        [kcat, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-c", str(count),
         "-f", "%s\n", *_kcat_flags(bootstrap, mechanism, user, password)],
        capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _confluent_config(bootstrap: str, mechanism: str, user: str, password: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def confluent_produce(
    bootstrap: str, mechanism: str, user: str, password: str, topic: str, values: list[str]
) -> str | None:
    from confluent_kafka import KafkaError, Producer

    errors: list[KafkaError] = []
    config: dict[str, object] = dict(_confluent_config(bootstrap, mechanism, user, password))
    config["error_cb"] = errors.append
    config["message.timeout.ms"] = 8000
    producer = Producer(config)
    delivered: list[object] = []
    for value in values:
        producer.produce(topic, value.encode(), on_delivery=lambda err, msg: delivered.append(err))
    deadline = time.monotonic() + CLIENT_TIMEOUT_S
    while producer.flush(0.2) and time.monotonic() < deadline:
        if any(e.code() == KafkaError._AUTHENTICATION for e in errors):
            producer.purge()
            producer.flush(0)
            return str(errors[0])
    if len(delivered) == len(values) and not any(delivered):
        return None
    return f"not delivered: {delivered} {errors}"


def confluent_consume(
    bootstrap: str, mechanism: str, user: str, password: str, topic: str, count: int
) -> list[str]:
    from confluent_kafka import Consumer

    config: dict[str, object] = dict(_confluent_config(bootstrap, mechanism, user, password))
    config |= {"group.id": f"g-{uuid.uuid4().hex}", "auto.offset.reset": "earliest"}
    consumer = Consumer(config)
    consumer.subscribe([topic])
    out: list[str] = []
    deadline = time.monotonic() + CLIENT_TIMEOUT_S
    try:
        while len(out) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                out.append(message.value().decode())
    finally:
        consumer.close()
    return out


def _kafka_python_config(mechanism: str, user: str, password: str) -> dict[str, object]:
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": user,
        "sasl_plain_password": password,
    }


def kafka_python_produce(
    bootstrap: str, mechanism: str, user: str, password: str, topic: str, values: list[str]
) -> str | None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    try:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            bootstrap_timeout_ms=5000,
            max_block_ms=10000,
            **_kafka_python_config(mechanism, user, password),
        )
    except KafkaError as error:
        return f"{type(error).__name__}: {error}"
    try:
        for value in values:
            producer.send(topic, value.encode()).get(timeout=CLIENT_TIMEOUT_S)
    finally:
        producer.close()
    return None


def kafka_python_consume(
    bootstrap: str, mechanism: str, user: str, password: str, topic: str, count: int
) -> list[str]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=int(CLIENT_TIMEOUT_S * 1000),
        **_kafka_python_config(mechanism, user, password),
    )
    out: list[str] = []
    try:
        for message in consumer:
            out.append(message.value.decode())
            if len(out) == count:
                break
    finally:
        consumer.close()
    return out


def aiokafka_produce(
    bootstrap: str, mechanism: str, user: str, password: str, topic: str, values: list[str]
) -> str | None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError

    async def run() -> str | None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, **_kafka_python_config(mechanism, user, password)
        )
        try:
            await producer.start()
        except KafkaError as error:
            await producer.stop()
            return f"{type(error).__name__}: {error}"
        try:
            for value in values:
                await producer.send_and_wait(topic, value.encode())
        finally:
            await producer.stop()
        return None

    return asyncio.run(run())


def aiokafka_consume(
    bootstrap: str, mechanism: str, user: str, password: str, topic: str, count: int
) -> list[str]:
    from aiokafka import AIOKafkaConsumer

    async def run() -> list[str]:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            auto_offset_reset="earliest",
            **_kafka_python_config(mechanism, user, password),
        )
        await consumer.start()
        out: list[str] = []
        try:
            deadline = time.monotonic() + CLIENT_TIMEOUT_S
            while len(out) < count and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                out += [m.value.decode() for ms in batches.values() for m in ms if m.value]
        finally:
            await consumer.stop()
        return out

    return asyncio.run(run())


Produce = Callable[[str, str, str, str, str, list[str]], "str | None"]
Consume = Callable[[str, str, str, str, str, int], list[str]]
PYTHON_CLIENTS: dict[str, tuple[Produce, Consume]] = {
    "confluent-kafka": (confluent_produce, confluent_consume),
    "kafka-python": (kafka_python_produce, kafka_python_consume),
    "aiokafka": (aiokafka_produce, aiokafka_consume),
}
