"""kcat, confluent-kafka, kafka-python and aiokafka over SSL, each configured as for Kafka.

:func:`produce_over_ssl` writes ``(key, value)`` pairs to partition 0 of a topic and
:func:`read_over_ssl` reads that partition from the beginning to its end, both through the
client named, with the CA (``ca.pem``) as trust store and, given ``identity`` (a client name of
:class:`tls_certs.Pki`), that client's certificate and key. Records come back as
``(offset, key, value)``. The settings are each client's own documented ones
(``security.protocol=SSL``, ``ssl.ca.location``, ... for librdkafka; ``security_protocol``,
``ssl_cafile``, ... for kafka-python; an ``ssl_context`` for aiokafka).

Below them, a raw client for the refusal tests: :func:`kafka_response_over_tls` makes the
handshake with Python's ``ssl`` and sends one ApiVersions v0 request (:data:`FRAME`).
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import struct
import subprocess
import time
from typing import Any

from tls_certs import Pki

TIMEOUT_S = 60.0
Record = tuple[int, bytes, bytes]
CLIENTS = ("kcat", "confluent", "kafka-python", "aiokafka")


def librdkafka_ssl(pki: Pki, identity: str | None) -> dict[str, str]:
    config = {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca)}
    if identity is not None:
        config["ssl.certificate.location"] = str(pki.cert(identity))
        config["ssl.key.location"] = str(pki.key(identity))
    return config


def kafka_python_ssl(pki: Pki, identity: str | None) -> dict[str, Any]:
    config: dict[str, Any] = {"security_protocol": "SSL", "ssl_cafile": str(pki.ca)}
    if identity is not None:
        config["ssl_certfile"] = str(pki.cert(identity))
        config["ssl_keyfile"] = str(pki.key(identity))
    return config


def aiokafka_ssl(pki: Pki, identity: str | None) -> dict[str, Any]:
    from aiokafka.helpers import create_ssl_context

    context = create_ssl_context(
        cafile=str(pki.ca),
        certfile=None if identity is None else str(pki.cert(identity)),
        keyfile=None if identity is None else str(pki.key(identity)),
    )
    return {"security_protocol": "SSL", "ssl_context": context}


def _kcat_args(kcat: str, bootstrap: str, pki: Pki, identity: str | None) -> list[str]:
    args = [kcat, "-b", bootstrap]
    for key, value in librdkafka_ssl(pki, identity).items():
        args += ["-X", f"{key}={value}"]
    return args


def produce_over_ssl(
    client: str,
    kcat: str,
    bootstrap: str,
    pki: Pki,
    identity: str | None,
    topic: str,
    pairs: list[tuple[bytes, bytes]],
) -> None:
    """Write ``pairs`` to partition 0 of ``topic``; raises (AssertionError or the client's
    error) unless every one was acknowledged."""
    if client == "kcat":
        text = b"".join(k + b"\t" + v + b"\n" for k, v in pairs)
        args = [*_kcat_args(kcat, bootstrap, pki, identity), "-P", "-t", topic, "-p", "0"]
        result = subprocess.run(
            [*args, "-K", "\t"], input=text, capture_output=True, timeout=TIMEOUT_S, check=False
        )
        assert result.returncode == 0, result.stderr.decode(errors="replace")
    elif client == "confluent":
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": bootstrap} | librdkafka_ssl(pki, identity))
        errors: list[str] = []
        for key, value in pairs:
            producer.produce(
                topic,
                value=value,
                key=key,
                partition=0,
                on_delivery=lambda error, _m: error is None or errors.append(str(error)),
            )
        assert producer.flush(TIMEOUT_S) == 0 and not errors, errors[:3]
    elif client == "kafka-python":
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=bootstrap, **kafka_python_ssl(pki, identity))
        try:
            futures = [producer.send(topic, value=v, key=k, partition=0) for k, v in pairs]
            producer.flush(timeout=TIMEOUT_S)
            for future in futures:
                future.get(timeout=TIMEOUT_S)
        finally:
            producer.close(timeout=TIMEOUT_S)
    elif client == "aiokafka":
        asyncio.run(_aiokafka_produce(bootstrap, pki, identity, topic, pairs))
    else:
        raise ValueError(client)


async def _aiokafka_produce(
    bootstrap: str, pki: Pki, identity: str | None, topic: str, pairs: list[tuple[bytes, bytes]]
) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **aiokafka_ssl(pki, identity))
    await asyncio.wait_for(producer.start(), TIMEOUT_S)
    try:
        for key, value in pairs:
            await asyncio.wait_for(
                producer.send_and_wait(topic, value=value, key=key, partition=0), TIMEOUT_S
            )
    finally:
        await producer.stop()


def read_over_ssl(
    client: str, kcat: str, bootstrap: str, pki: Pki, identity: str | None, topic: str
) -> list[Record]:
    """Partition 0 of ``topic`` from its start to its end, through ``client``."""
    if client == "kcat":
        args = _kcat_args(kcat, bootstrap, pki, identity)
        args += ["-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-J"]
        result = subprocess.run(args, capture_output=True, timeout=TIMEOUT_S, check=False)
        assert result.returncode == 0, result.stderr.decode(errors="replace")
        entries = [json.loads(line) for line in result.stdout.decode().splitlines() if line]
        return [(e["offset"], e["key"].encode(), e["payload"].encode()) for e in entries]
    if client == "confluent":
        return _confluent_read(bootstrap, pki, identity, topic)
    if client == "kafka-python":
        return _kafka_python_read(bootstrap, pki, identity, topic)
    if client == "aiokafka":
        return asyncio.run(_aiokafka_read(bootstrap, pki, identity, topic))
    raise ValueError(client)


def _confluent_read(bootstrap: str, pki: Pki, identity: str | None, topic: str) -> list[Record]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    config = {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.partition.eof": True}
    consumer = Consumer(config | {"enable.auto.commit": False} | librdkafka_ssl(pki, identity))
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out: list[Record] = []
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, str(error)
                return out
            out.append((message.offset(), message.key(), message.value()))
        raise AssertionError(f"no end of partition within {TIMEOUT_S} s")
    finally:
        consumer.close()


def _kafka_python_read(bootstrap: str, pki: Pki, identity: str | None, topic: str) -> list[Record]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, **kafka_python_ssl(pki, identity)
    )
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        out: list[Record] = []
        deadline = time.monotonic() + TIMEOUT_S
        while consumer.position(tp) != end:
            assert time.monotonic() < deadline, f"stuck at {consumer.position(tp)} < {end}"
            for record in consumer.poll(timeout_ms=500).get(tp, []):
                out.append((record.offset, record.key, record.value))
        return out
    finally:
        consumer.close()


async def _aiokafka_read(
    bootstrap: str, pki: Pki, identity: str | None, topic: str
) -> list[Record]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, **aiokafka_ssl(pki, identity)
    )
    await asyncio.wait_for(consumer.start(), TIMEOUT_S)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        end = (await consumer.end_offsets([tp]))[tp]
        out: list[Record] = []
        deadline = time.monotonic() + TIMEOUT_S
        while await consumer.position(tp) != end:
            assert time.monotonic() < deadline, "stuck"
            batch = await consumer.getmany(tp, timeout_ms=500)
            out.extend((r.offset, r.key, r.value) for r in batch.get(tp, []))
        return out
    finally:
        await consumer.stop()


# ApiVersions v0, correlation id 7, client id "raw": the first request of every Kafka client.
API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 7, 3) + b"raw"
FRAME = struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0


def host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


def kafka_response_over_tls(
    address: str, pki: Pki, identity: str | None, version: ssl.TLSVersion | None = None
) -> bytes:
    """Handshake (trusting the test CA, presenting ``identity``'s certificate if given, at most
    TLS ``version`` if given), send ApiVersions and return the response's bytes; raises
    ``ssl.SSLError`` or ``EOFError``."""
    context = ssl.create_default_context(cafile=str(pki.ca))
    if version is not None:
        context.maximum_version = version
    if identity is not None:
        context.load_cert_chain(str(pki.cert(identity)), str(pki.key(identity)))
    with (
        socket.create_connection(host_port(address), timeout=30) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        tls.sendall(FRAME)
        return read_frame(tls)


def read_frame(sock: socket.socket) -> bytes:
    def exactly(size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = sock.recv(size - len(data))
            if not chunk:
                raise EOFError(f"closed after {len(data)} of {size} bytes")
            data += chunk
        return data

    (size,) = struct.unpack(">i", exactly(4))
    return exactly(size)
