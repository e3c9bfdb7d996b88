"""Exactly-once through ``seglog serve``: each client's transactional producer, end to end.

* confluent-kafka's consume-transform-produce loop, with every third transaction aborted (and
  the input re-read from the committed offsets, as an application does): each input record's
  transform is in the output exactly once for every ``read_committed`` reader, the aborted
  copies are in the log (``read_uncommitted`` sees them) but in no committed reading, and the
  group's committed offsets are the input's ends;
* a zombie: a second producer with the same ``transactional.id`` fences the first; the first
  one's open transaction is aborted and its later commit fails fatally;
* kafka-python's and aiokafka's transactional producers: commit, abort, and a transaction that
  carries a group's offsets (``send_offsets_to_transaction``): the offsets appear only once it
  commits.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from serve_eos import (
    TransformLoop,
    assert_exactly,
    committed_values,
    create_topics,
    group_offsets,
    produce_input,
    transform,
    uncommitted_values,
    values_by_partition,
)
from serve_harness import ServeProcess
from serve_records import TIMEOUT_S


def test_consume_transform_produce_commits_each_record_once(serve: ServeProcess) -> None:
    create_topics(serve.bootstrap, {"orders": 2, "enriched": 2})
    values = produce_input(serve.bootstrap, "orders", partitions=2, per_partition=150)
    group = f"enricher-{uuid.uuid4().hex[:6]}"
    loop = TransformLoop(serve.bootstrap, group=group, transactional_id="enricher-1")
    try:
        loop.run("orders", "enriched", {0: 150, 1: 150}, batch=40, abort_every=3)
    finally:
        loop.close()
    assert loop.aborted_transactions >= 1 and loop.committed_transactions >= 2

    expected = {p: [transform(v) for v in vs] for p, vs in values_by_partition(values, 2).items()}
    assert_exactly(committed_values(serve.bootstrap, serve.data_dir, "enriched", [0, 1]), expected)
    everything = uncommitted_values(serve.bootstrap, "enriched", [0, 1])
    assert len(everything) > 300  # the aborted transactions' records are in the log
    assert group_offsets(serve.bootstrap, group) == {("orders", 0): 150, ("orders", 1): 150}


def test_a_second_producer_fences_the_zombie(serve: ServeProcess) -> None:
    from confluent_kafka import KafkaException, Producer

    create_topics(serve.bootstrap, {"payments": 1})
    config = {"bootstrap.servers": serve.bootstrap, "transactional.id": "payments-writer"}
    zombie = Producer(config)
    zombie.init_transactions(TIMEOUT_S)
    zombie.begin_transaction()
    zombie.produce("payments", value=b"zombie-1", partition=0)
    assert zombie.flush(TIMEOUT_S) == 0  # written, in an open transaction

    successor = Producer(config)
    successor.init_transactions(TIMEOUT_S)  # bumps the epoch; aborts the zombie's transaction
    successor.begin_transaction()
    successor.produce("payments", value=b"live-1", partition=0)
    successor.commit_transaction(TIMEOUT_S)

    with pytest.raises(KafkaException) as failure:
        zombie.produce("payments", value=b"zombie-2", partition=0)
        zombie.commit_transaction(TIMEOUT_S)
    assert failure.value.args[0].fatal(), failure.value.args[0]

    readings = committed_values(serve.bootstrap, serve.data_dir, "payments", [0])
    assert_exactly(readings, {0: [b"live-1"]})
    assert b"zombie-1" in uncommitted_values(serve.bootstrap, "payments", [0])


def test_kafka_python_transactional_producer(serve: ServeProcess) -> None:
    from kafka import KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    create_topics(serve.bootstrap, {"kp-out": 1, "kp-in": 1})
    producer = KafkaProducer(
        bootstrap_servers=serve.bootstrap, transactional_id="kp-writer", linger_ms=5
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(30):
            producer.send("kp-out", value=f"commit-a-{i}".encode(), partition=0)
        producer.commit_transaction()

        producer.begin_transaction()
        for i in range(20):
            producer.send("kp-out", value=f"abort-{i}".encode(), partition=0)
        producer.abort_transaction()

        producer.begin_transaction()
        for i in range(10):
            producer.send("kp-out", value=f"commit-b-{i}".encode(), partition=0)
        producer.send_offsets_to_transaction(
            {TopicPartition("kp-in", 0): OffsetAndMetadata(7, "", -1)}, "kp-group"
        )
        assert group_offsets(serve.bootstrap, "kp-group") == {}  # not before the commit
        producer.commit_transaction()
    finally:
        producer.close()

    expected = [f"commit-a-{i}".encode() for i in range(30)]
    expected += [f"commit-b-{i}".encode() for i in range(10)]
    assert_exactly(committed_values(serve.bootstrap, serve.data_dir, "kp-out", [0]), {0: expected})
    assert group_offsets(serve.bootstrap, "kp-group") == {("kp-in", 0): 7}


def test_aiokafka_transactional_producer(serve: ServeProcess) -> None:
    create_topics(serve.bootstrap, {"aio-out": 1, "aio-in": 1})

    async def produce() -> None:
        from aiokafka import AIOKafkaProducer
        from aiokafka.structs import TopicPartition

        producer = AIOKafkaProducer(
            bootstrap_servers=serve.bootstrap, transactional_id="aio-writer"
        )
        await producer.start()
        try:
            async with producer.transaction():
                for i in range(25):
                    await producer.send("aio-out", value=f"commit-a-{i}".encode(), partition=0)
            await producer.begin_transaction()
            for i in range(15):
                await producer.send("aio-out", value=f"abort-{i}".encode(), partition=0)
            await producer.abort_transaction()
            async with producer.transaction():
                for i in range(5):
                    await producer.send("aio-out", value=f"commit-b-{i}".encode(), partition=0)
                await producer.send_offsets_to_transaction(
                    {TopicPartition("aio-in", 0): 11}, "aio-group"
                )
        finally:
            await producer.stop()

    asyncio.run(asyncio.wait_for(produce(), TIMEOUT_S))
    expected = [f"commit-a-{i}".encode() for i in range(25)]
    expected += [f"commit-b-{i}".encode() for i in range(5)]
    assert_exactly(committed_values(serve.bootstrap, serve.data_dir, "aio-out", [0]), {0: expected})
    assert len(uncommitted_values(serve.bootstrap, "aio-out", [0])) == 45
    assert group_offsets(serve.bootstrap, "aio-group") == {("aio-in", 0): 11}
