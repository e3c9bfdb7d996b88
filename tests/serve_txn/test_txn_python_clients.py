"""kafka-python's and aiokafka's transactional producers against a real ``seglog serve``.

Each client commits a transaction, aborts one, and commits another on both partitions of
``out``; then a ``read_committed`` consumer of every client (confluent-kafka, kafka-python,
aiokafka) sees exactly the committed records, each once, in order.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from serve_harness import ServeProcess
from serve_python_clients import aiokafka_read, confluent_read, kafka_python_read

TIMEOUT_S = 30.0
ROUNDS = [("one", True), ("two", False), ("three", True)]


def _values(prefix: str, partition: int) -> list[bytes]:
    return [f"{prefix}-p{partition}-{i}".encode() for i in range(5)]


def _expected(client: str, partition: int) -> list[bytes]:
    return [v for name, commit in ROUNDS if commit for v in _values(f"{client}-{name}", partition)]


def _kafka_python_transactions(bootstrap: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap, transactional_id="kafka-python-txn", linger_ms=5
    )
    try:
        producer.init_transactions()
        for name, commit in ROUNDS:
            producer.begin_transaction()
            for partition in (0, 1):
                for value in _values(f"kafka-python-{name}", partition):
                    producer.send("out", key=b"k", value=value, partition=partition)
            producer.flush(timeout=TIMEOUT_S)
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close(timeout=TIMEOUT_S)


async def _aiokafka_transactions(bootstrap: str) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aiokafka-txn")
    await producer.start()
    try:
        for name, commit in ROUNDS:
            await producer.begin_transaction()
            for partition in (0, 1):
                for value in _values(f"aiokafka-{name}", partition):
                    await producer.send("out", key=b"k", value=value, partition=partition)
            await producer.flush()
            if commit:
                await producer.commit_transaction()
            else:
                await producer.abort_transaction()
    finally:
        await producer.stop()


def _read_committed(bootstrap: str, partition: int) -> dict[str, list[Any]]:
    committed = {"isolation_level": "read_committed"}
    return {
        "confluent-kafka": [r[3] for r in confluent_read(bootstrap, "out", partition)],
        "kafka-python": [
            r[3] for r in kafka_python_read(bootstrap, "out", partition, config=committed)
        ],
        "aiokafka": [r[3] for r in aiokafka_read(bootstrap, "out", partition, config=committed)],
    }


@pytest.mark.parametrize("client", ["kafka-python", "aiokafka"])
def test_transactional_producer_commit_and_abort(txn_server: ServeProcess, client: str) -> None:
    bootstrap = txn_server.bootstrap
    if client == "kafka-python":
        _kafka_python_transactions(bootstrap)
    else:
        asyncio.run(asyncio.wait_for(_aiokafka_transactions(bootstrap), TIMEOUT_S * 2))
    for partition in (0, 1):
        expected = _expected(client, partition)
        assert _read_committed(bootstrap, partition) == dict.fromkeys(
            ["confluent-kafka", "kafka-python", "aiokafka"], expected
        )
