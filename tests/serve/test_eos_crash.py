"""Transactions through ``seglog serve`` survive SIGKILL at random moments.

A confluent-kafka transactional producer runs transactions of 20 records over two partitions
while a killer thread SIGKILLs the server at seeded random moments and starts it again on the
same port (the producer reconnects, as to a restarted broker). The producer records what it
knows of each transaction: committed (``commit_transaction`` returned), aborted (it aborted,
and ``abort_transaction`` returned) or unknown (the producer failed fatally mid-commit, so the
coordinator may have decided either way; a new producer with the same id then fences it).
At the end one transaction is left open and the server is killed once more. After the last
restart:

* no transaction hangs: within the transaction timeout plus the abort interval, the last stable
  offset of every partition reaches its high watermark (the server aborted the open one);
* every committed transaction's records are read by every ``read_committed`` reader, each once;
  no aborted transaction's record is; an unknown one is all there or all absent.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from typing import Any

import pytest
from serve_eos import committed_values, create_topics
from serve_harness import ServeFactory, ServeProcess
from serve_records import TIMEOUT_S

TXN_TIMEOUT_MS = 6_000
RECORDS_PER_TXN = 20
SETTINGS = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}


class Killer(threading.Thread):
    """SIGKILLs the server ``kills`` times at random moments, restarting it on its port."""

    def __init__(self, server: ServeProcess, kills: int, seed: int) -> None:
        super().__init__(daemon=True)
        self.server, self.kills, self.random = server, kills, random.Random(seed)
        self.done = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for _ in range(self.kills):
                time.sleep(self.random.uniform(0.3, 2.0))
                port = self.server.port
                self.server.kill()
                time.sleep(self.random.uniform(0.0, 0.5))
                self.server.start(port)
        except BaseException as error:  # reported by the test
            self.error = error
        finally:
            self.done.set()


def _producer(bootstrap: str) -> Any:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": "crash-writer",
            "transaction.timeout.ms": TXN_TIMEOUT_MS,
            "linger.ms": 2,
            "socket.connection.setup.timeout.ms": 3_000,
            "reconnect.backoff.max.ms": 200,
        }
    )
    _retry(lambda: producer.init_transactions(TIMEOUT_S))
    return producer


def _retry(call: Any, attempts: int = 10) -> None:
    from confluent_kafka import KafkaException

    for attempt in range(attempts):
        try:
            call()
            return
        except KafkaException as failure:
            error = failure.args[0]
            if not error.retriable() or attempt == attempts - 1:
                raise
            time.sleep(0.3)


def _one_transaction(producer: Any, number: int) -> str:
    """Run transaction ``number``; returns "committed", "aborted" or "fatal"."""
    from confluent_kafka import KafkaException

    try:
        producer.begin_transaction()
        for i in range(RECORDS_PER_TXN):
            producer.produce("ledger", value=f"t{number}-{i}".encode(), partition=i % 2)
        while True:
            try:
                producer.commit_transaction(TIMEOUT_S)
                return "committed"
            except KafkaException as failure:
                if not failure.args[0].retriable():
                    raise
    except KafkaException as failure:
        error = failure.args[0]
        if error.fatal():
            return "fatal"
        if error.txn_requires_abort():
            try:
                _retry(lambda: producer.abort_transaction(TIMEOUT_S))
            except KafkaException:
                return "fatal"
            return "aborted"
        raise


def _stable(bootstrap: str, partitions: list[int]) -> bool:
    """Whether every partition's last stable offset is its high watermark."""
    from kafka import KafkaConsumer, TopicPartition

    tps = [TopicPartition("ledger", p) for p in partitions]
    ends = {}
    for isolation in ("read_committed", "read_uncommitted"):
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation)
        try:
            ends[isolation] = consumer.end_offsets(tps)
        finally:
            consumer.close()
    return ends["read_committed"] == ends["read_uncommitted"]


@pytest.mark.crash
@pytest.mark.parametrize("seed", [3, 11])
def test_transactions_survive_sigkill(serve_factory: ServeFactory, seed: int) -> None:
    server = serve_factory(SETTINGS)
    create_topics(server.bootstrap, {"ledger": 2})
    killer = Killer(server, kills=3, seed=seed)
    outcomes: dict[int, str] = {}
    producer = _producer(server.bootstrap)
    killer.start()
    number = 0
    deadline = time.monotonic() + 6 * TIMEOUT_S
    while not killer.done.is_set() or number < 5:
        assert time.monotonic() < deadline, f"outcomes so far: {Counter(outcomes.values())}"
        outcome = _one_transaction(producer, number)
        outcomes[number] = "unknown" if outcome == "fatal" else outcome
        if outcome == "fatal":
            producer = _producer(server.bootstrap)  # fences the failed one
        number += 1
    killer.join()
    assert killer.error is None, f"{killer.error}\n{server.log_tail()}"

    # One transaction left open, then a last crash: the restarted server must abort it.
    producer.begin_transaction()
    for i in range(RECORDS_PER_TXN):
        producer.produce("ledger", value=f"t{number}-{i}".encode(), partition=i % 2)
    producer.flush(TIMEOUT_S)
    outcomes[number] = "aborted"
    port = server.port
    server.kill()
    server.start(port)
    settle_by = time.monotonic() + TXN_TIMEOUT_MS / 1000 + 20
    while not _stable(server.bootstrap, [0, 1]):
        assert time.monotonic() < settle_by, f"a transaction hangs\n{server.log_tail()}"
        time.sleep(0.5)

    readings = committed_values(server.bootstrap, server.data_dir, "ledger", [0, 1])
    reference = readings["seglog consume"]
    for name, by_partition in readings.items():
        assert by_partition == reference, name
    seen = Counter(v for values in reference.values() for v in values)
    assert max(seen.values(), default=1) == 1, "a record was read twice"
    for txn, outcome in outcomes.items():
        present = sum(f"t{txn}-{i}".encode() in seen for i in range(RECORDS_PER_TXN))
        if outcome == "committed":
            assert present == RECORDS_PER_TXN, f"transaction {txn} committed, {present} read"
        elif outcome == "aborted":
            assert present == 0, f"transaction {txn} aborted, {present} read"
        else:
            assert present in (0, RECORDS_PER_TXN), f"transaction {txn} half visible"
    assert Counter(outcomes.values())["committed"] >= 3, Counter(outcomes.values())
