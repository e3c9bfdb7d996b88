"""Exactly-once helpers for the ``seglog serve`` transaction tests: topics, readers, a processor.

* :func:`create_topics` makes topics through the wire (confluent-kafka's AdminClient);
* :func:`committed_values` reads partitions with ``read_committed`` through confluent-kafka,
  kafka-python and aiokafka, and the data directory through ``seglog consume``, and returns the
  values of each reading, so one assertion says every reader saw the same committed records;
* :func:`uncommitted_values` reads the same partitions with ``read_uncommitted`` (aborted
  records included: a test shows the aborts it made did happen);
* :func:`group_offsets` is what a consumer group committed, through kafka-python's admin client;
* :class:`TransformLoop` is confluent-kafka's consume-transform-produce loop: a consumer of a
  group reads the input with ``read_committed``, a transactional producer writes each record's
  transform to the output with the consumed offsets (``send_offsets_to_transaction``), and
  commits, or aborts the transactions a test asks it to (rewinding to the committed offsets, as
  an application does after an abort).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from serve_clients import seglog_consume
from serve_python_clients import aiokafka_read, confluent_read, kafka_python_read
from serve_records import TIMEOUT_S

READERS = ("confluent-kafka", "kafka-python", "aiokafka", "seglog consume")


def create_topics(
    bootstrap: str, topics: dict[str, int], configs: dict[str, str] | None = None
) -> None:
    """Create topics (name -> partition count) through the server; waits for each."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, count, 1, config=dict(configs or {})) for name, count in topics.items()]
    )
    for future in futures.values():
        future.result(TIMEOUT_S)


def committed_values(
    bootstrap: str, data_dir: Path, topic: str, partitions: Iterable[int]
) -> dict[str, dict[int, list[bytes | None]]]:
    """Per reader, per partition: the values a ``read_committed`` reading returns, in order."""
    readings: dict[str, dict[int, list[bytes | None]]] = {name: {} for name in READERS}
    committed = {"isolation_level": "read_committed"}
    for partition in partitions:
        by_reader = {
            "confluent-kafka": confluent_read(
                bootstrap, topic, partition, config={"isolation.level": "read_committed"}
            ),
            "kafka-python": kafka_python_read(bootstrap, topic, partition, config=committed),
            "aiokafka": aiokafka_read(bootstrap, topic, partition, config=committed),
            "seglog consume": seglog_consume(
                data_dir, topic, partition, isolation="read_committed"
            ),
        }
        for name, records in by_reader.items():
            readings[name][partition] = [record[3] for record in records]
    return readings


def uncommitted_values(bootstrap: str, topic: str, partitions: Iterable[int]) -> list[bytes | None]:
    """Every value of the partitions, aborted ones included (confluent-kafka,
    ``read_uncommitted``)."""
    return [
        record[3]
        for partition in partitions
        for record in confluent_read(
            bootstrap, topic, partition, config={"isolation.level": "read_uncommitted"}
        )
    ]


def group_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """The offsets ``group`` committed: (topic, partition) -> offset (kafka-python's admin)."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        answer = admin.list_group_offsets(group).get(group, {})  # kafka-python 3's name
        return {(tp.topic, tp.partition): meta.offset for tp, meta in answer.items()}
    finally:
        admin.close()


def transform(value: bytes) -> bytes:
    return b"T:" + value


class TransformLoop:
    """confluent-kafka's consume-transform-produce loop (see the module docstring)."""

    def __init__(self, bootstrap: str, *, group: str, transactional_id: str) -> None:
        from confluent_kafka import Consumer, Producer

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": transactional_id,
                "transaction.timeout.ms": 30_000,
                "linger.ms": 5,
            }
        )
        self.producer.init_transactions(TIMEOUT_S)
        self.committed_transactions = 0
        self.aborted_transactions = 0

    def run(
        self,
        source: str,
        sink: str,
        ends: dict[int, int],
        *,
        batch: int = 40,
        abort_every: int = 0,
    ) -> None:
        """Process ``source`` until the group's committed offsets reach ``ends`` (partition ->
        end offset); every ``abort_every``-th transaction (1-based) is aborted instead."""
        from confluent_kafka import TopicPartition

        self.consumer.subscribe([source])
        committed = dict.fromkeys(ends, 0)
        deadline = time.monotonic() + 4 * TIMEOUT_S
        number = 0
        while any(committed[p] < end for p, end in ends.items()):
            assert time.monotonic() < deadline, f"committed {committed}, wanted {ends}"
            messages = [m for m in self.consumer.consume(batch, 1.0) if m.error() is None]
            if not messages:
                continue
            number += 1
            self.producer.begin_transaction()
            for message in messages:
                self.producer.produce(
                    sink,
                    key=message.key(),
                    value=transform(message.value()),
                    partition=message.partition(),
                )
            positions = self.consumer.position(self.consumer.assignment())
            self.producer.send_offsets_to_transaction(
                positions, self.consumer.consumer_group_metadata(), TIMEOUT_S
            )
            if abort_every and number % abort_every == 0:
                self.producer.flush(TIMEOUT_S)  # sent: abort_transaction purges unsent records
                self.producer.abort_transaction(TIMEOUT_S)
                self.aborted_transactions += 1
                self._rewind()
                continue
            self.producer.commit_transaction(TIMEOUT_S)
            self.committed_transactions += 1
            for position in positions:
                if position.offset >= 0:
                    committed[position.partition] = position.offset
        self.consumer.unsubscribe()
        _ = TopicPartition  # the positions are confluent-kafka TopicPartitions

    def _rewind(self) -> None:
        """After an abort: back to the group's committed offsets (or the start)."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        for tp in self.consumer.committed(self.consumer.assignment(), TIMEOUT_S):
            offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
            self.consumer.seek(TopicPartition(tp.topic, tp.partition, offset))

    def close(self) -> None:
        self.consumer.close()
        self.producer.flush(TIMEOUT_S)


def produce_input(bootstrap: str, topic: str, partitions: int, per_partition: int) -> list[bytes]:
    """Numbered keyed records, ``per_partition`` into each partition (plain, non-transactional
    producer); returns every value in partition order."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    values: list[bytes] = []
    for partition in range(partitions):
        for i in range(per_partition):
            value = f"p{partition}-r{i:05d}".encode()
            values.append(value)
            producer.produce(topic, key=f"k{i % 17}".encode(), value=value, partition=partition)
            producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0
    return values


def values_by_partition(values: list[bytes], partitions: int) -> dict[int, list[bytes]]:
    """``produce_input``'s values split back by partition (their ``p{N}-`` prefix)."""
    out: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    for value in values:
        out[int(value.split(b"-")[0][1:])].append(value)
    return out


def assert_exactly(
    readings: dict[str, dict[int, list[bytes | None]]], expected: dict[int, list[Any]]
) -> None:
    """Every reader saw exactly ``expected`` per partition (each record once, in order)."""
    for name, by_partition in readings.items():
        for partition, values in expected.items():
            got = by_partition.get(partition)
            pairs = zip(got or [], values, strict=False)
            first = next((i for i, (a, b) in enumerate(pairs) if a != b), None)
            assert got == values, (
                f"{name}, partition {partition}: {len(got or [])} values, wanted "
                f"{len(values)}; first difference at {first}"
            )
