"""The four peer clients (kcat, confluent-kafka, kafka-python, aiokafka) over SASL_PLAINTEXT,
or over SASL_SSL when given ``ca`` (the PEM file of the CA that signed the server's
certificate): produce values to a topic and read them back, each with its own settings'
spelling. The consumers read as a member of ``group`` when one is named (kcat's excepted).

A refused login or produce (e.g. TOPIC_AUTHORIZATION_FAILED) shows differently in each client:
each ``*_produce`` returns the client's own evidence of the refusal (an error text) or None when
the values were acknowledged.
"""

from __future__ import annotations

import asyncio
import functools
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

CLIENT_TIMEOUT_S = 30.0


def _kcat_flags(
    bootstrap: str, mechanism: str, user: str, password: str, ca: Path | None
) -> list[str]:
    flags = ["-b", bootstrap]
    for key, value in _confluent_config(bootstrap, mechanism, user, password, ca).items():
        if key != "bootstrap.servers":
            flags += ["-X", f"{key}={value}"]
    return flags


def kcat_produce(
    kcat: str,
    bootstrap: str,
    mechanism: str,
    user: str,
    password: str,
    topic: str,
    values: list[str],
    *,
    ca: Path | None = None,
) -> str | None:
    done = subprocess.run(
        [kcat, "-P", "-t", topic, *_kcat_flags(bootstrap, mechanism, user, password, ca)],
        input="".join(f"{v}\n" for v in values),
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
        check=False,
    )
    return None if done.returncode == 0 else done.stderr


def kcat_consume(
    kcat: str,
    bootstrap: str,
    mechanism: str,
    user: str,
    password: str,
    topic: str,
    count: int,
    *,
    ca: Path | None = None,
    group: str | None = None,
) -> list[str]:
    del group  # kcat -C reads without a group
    done = subprocess.run(
        [kcat, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-c", str(count),
         "-f", "%s\n", *_kcat_flags(bootstrap, mechanism, user, password, ca)],
        capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _confluent_config(
    bootstrap: str, mechanism: str, user: str, password: str, ca: Path | None
) -> dict[str, str]:
    config = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT" if ca is None else "SASL_SSL",
        "sasl.mechanisms": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }
    if ca is not None:
        config["ssl.ca.location"] = str(ca)
    return config


def confluent_produce(
    bootstrap: str,
    mechanism: str,
    user: str,
    password: str,
    topic: str,
    values: list[str],
    *,
    ca: Path | None = None,
) -> str | None:
    from confluent_kafka import KafkaError, Producer

    errors: list[KafkaError] = []
    config: dict[str, object] = dict(_confluent_config(bootstrap, mechanism, user, password, ca))
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
    bootstrap: str,
    mechanism: str,
    user: str,
    password: str,
    topic: str,
    count: int,
    *,
    ca: Path | None = None,
    group: str | None = None,
) -> list[str]:
    from confluent_kafka import Consumer

    config: dict[str, object] = dict(_confluent_config(bootstrap, mechanism, user, password, ca))
    config |= {"group.id": group or f"g-{uuid.uuid4().hex}", "auto.offset.reset": "earliest"}
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


def _kafka_python_config(
    mechanism: str, user: str, password: str, ca: Path | None
) -> dict[str, object]:
    config: dict[str, object] = {
        "security_protocol": "SASL_PLAINTEXT" if ca is None else "SASL_SSL",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": user,
        "sasl_plain_password": password,
    }
    if ca is not None:
        config["ssl_cafile"] = str(ca)
    return config


def _aiokafka_config(
    mechanism: str, user: str, password: str, ca: Path | None
) -> dict[str, object]:
    from aiokafka.helpers import create_ssl_context

    config = _kafka_python_config(mechanism, user, password, ca)
    if ca is not None:
        del config["ssl_cafile"]
        config["ssl_context"] = create_ssl_context(cafile=str(ca))
    return config


def kafka_python_produce(
    bootstrap: str,
    mechanism: str,
    user: str,
    password: str,
    topic: str,
    values: list[str],
    *,
    ca: Path | None = None,
) -> str | None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    try:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            bootstrap_timeout_ms=5000,
            max_block_ms=10000,
            **_kafka_python_config(mechanism, user, password, ca),
        )
    except KafkaError as error:
        return f"{type(error).__name__}: {error}"
    try:
        for value in values:
            producer.send(topic, value.encode()).get(timeout=CLIENT_TIMEOUT_S)
    except KafkaError as error:  # e.g. TopicAuthorizationFailedError
        return f"{type(error).__name__}: {error}"
    finally:
        producer.close()
    return None


def kafka_python_consume(
    bootstrap: str,
    mechanism: str,
    user: str,
    password: str,
    topic: str,
    count: int,
    *,
    ca: Path | None = None,
    group: str | None = None,
) -> list[str]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        group_id=group,
        consumer_timeout_ms=int(CLIENT_TIMEOUT_S * 1000),
        **_kafka_python_config(mechanism, user, password, ca),
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
    bootstrap: str,
    mechanism: str,
    user: str,
    password: str,
    topic: str,
    values: list[str],
    *,
    ca: Path | None = None,
) -> str | None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError

    async def run() -> str | None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, **_aiokafka_config(mechanism, user, password, ca)
        )
        try:
            await producer.start()
        except KafkaError as error:
            await producer.stop()
            return f"{type(error).__name__}: {error}"
        try:
            for value in values:
                await producer.send_and_wait(topic, value.encode())
        except KafkaError as error:  # e.g. TopicAuthorizationFailedError
            return f"{type(error).__name__}: {error}"
        finally:
            await producer.stop()
        return None

    return asyncio.run(run())


def aiokafka_consume(
    bootstrap: str,
    mechanism: str,
    user: str,
    password: str,
    topic: str,
    count: int,
    *,
    ca: Path | None = None,
    group: str | None = None,
) -> list[str]:
    from aiokafka import AIOKafkaConsumer

    async def run() -> list[str]:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            auto_offset_reset="earliest",
            group_id=group,
            **_aiokafka_config(mechanism, user, password, ca),
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


# (bootstrap, mechanism, user, password, topic, values, *, ca=None) -> refusal text or None
Produce = Callable[..., "str | None"]
# (bootstrap, mechanism, user, password, topic, count, *, ca=None, group=None) -> values
Consume = Callable[..., list[str]]
PYTHON_CLIENTS: dict[str, tuple[Produce, Consume]] = {
    "confluent-kafka": (confluent_produce, confluent_consume),
    "kafka-python": (kafka_python_produce, kafka_python_consume),
    "aiokafka": (aiokafka_produce, aiokafka_consume),
}
CLIENTS = ("kcat", *PYTHON_CLIENTS)


def clients_of(kcat: str, name: str) -> tuple[Produce, Consume]:
    """The produce and consume functions of client ``name`` (one of :data:`CLIENTS`)."""
    if name == "kcat":
        return functools.partial(kcat_produce, kcat), functools.partial(kcat_consume, kcat)
    return PYTHON_CLIENTS[name]
