"""Re-authentication (KIP-368) with real clients: ``connections.max.reauth.ms=2000``.

confluent-kafka and kafka-python read ``session_lifetime_ms`` and re-authenticate on their open
connection before it expires; the server logs each re-authentication and the producer goes on
on the same connection. aiokafka does not re-authenticate: its expired connection is closed on
its next request (as Kafka closes it), and it reconnects and logs in again. The tests wait for
those events in the server's log (a deadline, no fixed sleep); the expiry rules themselves are
tested with a manual clock in ``tests/broker/test_sasl_dispatch.py``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from sasl_clients import kafka_python_consume
from sasl_server import ALICE_PASSWORD, SETTINGS, SaslServe

REAUTH_MS = 2000
WAIT_S = 60.0


@pytest.fixture(scope="module")
def server_settings() -> dict[str, str]:
    return dict(SETTINGS, **{"connections.max.reauth.ms": str(REAUTH_MS)})


def wait_for_log(server: SaslServe, text: str, after: int, poll: Callable[[], object]) -> None:
    """Call ``poll`` (the client's event loop) until ``text`` appears in the log past ``after``."""
    deadline = time.monotonic() + WAIT_S
    while text not in server.log()[after:]:
        assert time.monotonic() < deadline, f"no {text!r} in the log\n{server.log()[-3000:]}"
        poll()


def read_back(server: SaslServe, topic: str) -> list[str]:
    return kafka_python_consume(
        server.bootstrap, "SCRAM-SHA-512", "alice", ALICE_PASSWORD, topic, 2
    )


def test_confluent_kafka_reauthenticates(sasl_serve: SaslServe) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": sasl_serve.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": ALICE_PASSWORD,
        }
    )
    producer.produce("reauth-confluent", b"before")
    assert producer.flush(30) == 0
    mark = len(sasl_serve.log())
    wait_for_log(sasl_serve, "re-authenticated as User:alice", mark, lambda: producer.poll(0.2))
    producer.produce("reauth-confluent", b"after")
    assert producer.flush(30) == 0
    assert read_back(sasl_serve, "reauth-confluent") == ["before", "after"]


def test_kafka_python_reauthenticates(sasl_serve: SaslServe) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=sasl_serve.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="alice",
        sasl_plain_password=ALICE_PASSWORD,
    )
    try:
        producer.send("reauth-kafka-python", b"before").get(timeout=30)
        mark = len(sasl_serve.log())
        wait_for_log(sasl_serve, "re-authenticated as User:alice", mark, lambda: time.sleep(0.2))
        producer.send("reauth-kafka-python", b"after").get(timeout=30)
    finally:
        producer.close()
    assert read_back(sasl_serve, "reauth-kafka-python") == ["before", "after"]


def test_aiokafka_is_closed_on_expiry_and_logs_in_again(sasl_serve: SaslServe) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=sasl_serve.bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="alice",
            sasl_plain_password=ALICE_PASSWORD,
            metadata_max_age_ms=500,  # a request soon after the session expires
        )
        await producer.start()
        try:
            await producer.send_and_wait("reauth-aiokafka", b"before")
            mark = len(sasl_serve.log())
            deadline = time.monotonic() + WAIT_S
            while "expired (connections.max.reauth.ms)" not in sasl_serve.log()[mark:]:
                assert time.monotonic() < deadline, sasl_serve.log()[-3000:]
                await asyncio.sleep(0.2)
            await producer.send_and_wait("reauth-aiokafka", b"after")
        finally:
            await producer.stop()

    asyncio.run(run())
    assert read_back(sasl_serve, "reauth-aiokafka") == ["before", "after"]
