"""SIGKILL at random moments of a transactional producer's loop, restart, and check the log.

Each cycle a confluent-kafka transactional producer commits (and, every third time, aborts)
transactions of 40 records over both partitions of ``out`` while a timer SIGKILLs the server
at a random moment (seeded); the server restarts on the same directory and the next cycle's
producer (same ``transactional.id``) takes over, fencing whatever the killed one left open.
At the end a ``read_committed`` reader must see:

* every transaction whose ``commit_transaction`` returned, whole, once, in order;
* no record of a transaction the producer aborted;
* every other transaction (the one in flight at the kill) whole or not at all: committed
  only if its PrepareCommit reached ``__transaction_state`` before the kill;
* no transaction left open: the log ends at the last stable offset.
"""

from __future__ import annotations

import random
import re
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from serve_harness import ServeProcess
from serve_python_clients import confluent_read

RECORDS = 40  # per transaction, 20 per partition
CYCLES = 3
TAG = re.compile(rb"^(c\d+-t\d+)-\d+$")


def _cycle(
    bootstrap: str,
    cycle: int,
    committed: list[str],
    aborted: set[str],
    on_ready: Callable[[], None],
) -> bool:
    """Transactions until the server dies (or 500 of them), results recorded as they return;
    ``on_ready`` runs once the producer is initialised. True when the server died under it."""
    from confluent_kafka import KafkaException, Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": "loop",
            "transaction.timeout.ms": 3000,
            "message.timeout.ms": 3000,
            "socket.timeout.ms": 3000,
            "linger.ms": 2,
            "reconnect.backoff.max.ms": 200,
        }
    )
    try:
        producer.init_transactions(10)
        on_ready()
        for number in range(500):
            tag = f"c{cycle}-t{number}"
            producer.begin_transaction()
            for i in range(RECORDS):
                producer.produce("out", value=f"{tag}-{i}".encode(), partition=i % 2)
            if number % 3 == 2:
                aborted.add(tag)  # decided before the call: it may never commit
                producer.abort_transaction(5)
            else:
                producer.commit_transaction(5)
                committed.append(tag)
    except KafkaException:
        return True  # the server died under it
    finally:
        producer.purge()
    return False


def test_sigkill_at_random_moments_loses_no_commit_and_shows_no_abort(
    txn_server: ServeProcess,
) -> None:
    rng = random.Random(22)
    committed: list[str] = []
    aborted: set[str] = set()
    for cycle in range(CYCLES):
        killer = threading.Timer(rng.uniform(0.05, 0.6), txn_server.kill)
        assert _cycle(txn_server.bootstrap, cycle, committed, aborted, killer.start), (
            "the producer finished before the kill: more transactions needed"
        )
        killer.join()
        txn_server.start()
    # a last producer of the id fences and aborts whatever the last killed one left open
    _cycle_after = _final_init(txn_server.bootstrap)
    assert _cycle_after
    seen: Counter[str] = Counter()
    order: dict[int, list[bytes]] = {}
    for partition in (0, 1):
        values = [r[3] for r in confluent_read(txn_server.bootstrap, "out", partition)]
        order[partition] = [v for v in values if v is not None]
        for value in order[partition]:
            match = TAG.match(value)
            assert match is not None, value
            seen[match.group(1).decode()] += 1
    assert committed, "no transaction committed before the first kill: tune the timer"
    for tag in committed:
        assert seen[tag] == RECORDS, (tag, seen[tag])
    for tag, count in seen.items():
        assert tag not in aborted, f"aborted transaction {tag} is visible"
        assert count == RECORDS, f"transaction {tag} is visible in part ({count})"
    for partition, values in order.items():  # each committed transaction's records in order
        assert len(values) == len(set(values)), "a record is visible twice"
        for tag in committed:
            mine = [v for v in values if v.startswith(f"{tag}-".encode())]
            assert mine == [f"{tag}-{i}".encode() for i in range(partition, RECORDS, 2)]
    for partition in (0, 1):  # nothing left open: the last stable offset is the log end
        assert _ends(txn_server.bootstrap, partition, "read_committed") == _ends(
            txn_server.bootstrap, partition, "read_uncommitted"
        )


def _ends(bootstrap: str, partition: int, isolation: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "isolation.level": isolation}
    )
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition("out", partition), timeout=30)
    finally:
        consumer.close()
    return int(high)


def _final_init(bootstrap: str) -> Any:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "loop"})
    producer.init_transactions(30)
    return producer
