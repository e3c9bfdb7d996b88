"""Transactional against idempotent produce through ``seglog serve``, with confluent-kafka.

Two contenders send the same N records (16-byte keys, values from
:func:`bench.common.generate_records`) to a one-partition topic of one ``seglog serve``
subprocess on loopback, interleaved round-robin (a different one first each round), after an
untimed warm-up round of each:

* **idempotent**: ``enable.idempotence=true`` (so ``acks=all``), ``linger.ms=5``: every record
  produced, then ``flush()``;
* **transactional**: the same settings plus a ``transactional.id``; the records go in
  transactions of ``--txn-records`` (1 000) records: ``begin_transaction()``, the records,
  ``commit_transaction()`` (which flushes, then EndTxn: the coordinator writes PrepareCommit to
  ``__transaction_state``, the COMMIT marker to the partition, then CompleteCommit).

Timed: from the first ``produce()`` to the end of the last ``flush()`` / ``commit_transaction()``.
Each producer is created, connected and (transactional) initialised before the clock starts;
each sample writes to its own pre-created topic. Every sample checks its topic's end offset
afterwards (all records stored, plus one marker per transaction).

Reported: records/s and MB/s (key + value) median [min..max], and the **ratio transactional /
idempotent** of median records/s. Goal: >= 0.7.

Run: ``.venv/bin/python -m bench.bench_serve_txn [--records N] [--txn-records K] [--repeat R]
[--quick] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import median
from typing import Any

from bench.common import generate_records, machine_info, write_results
from bench.serve_common import ServeProcess, quiet_client

GOAL = 0.7


def _producer(address: str, transactional_id: str | None) -> Any:
    from confluent_kafka import Producer

    config: dict[str, Any] = {
        "bootstrap.servers": address,
        "enable.idempotence": True,
        "linger.ms": 5,
    }
    if transactional_id is not None:
        config["transactional.id"] = transactional_id
    producer = Producer(quiet_client(config))
    if transactional_id is not None:
        producer.init_transactions(30)
    return producer


def _create_topic(address: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": address})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)


def _end_offset(address: str, topic: str) -> int:
    from confluent_kafka import Consumer

    consumer = Consumer(
        quiet_client({"bootstrap.servers": address, "group.id": "bench-txn-unused"})
    )
    try:
        _, high = consumer.get_watermark_offsets(_tp(topic), timeout=30)
        return int(high)
    finally:
        consumer.close()


def _tp(topic: str) -> Any:
    from confluent_kafka import TopicPartition

    return TopicPartition(topic, 0)


def _send(producer: Any, topic: str, keys: list[bytes], values: list[bytes]) -> None:
    produce, poll = producer.produce, producer.poll
    for key, value in zip(keys, values, strict=True):
        while True:
            try:
                produce(topic, value, key, partition=0)
                break
            except BufferError:  # librdkafka's queue is full: wait for acks
                poll(0.001)


def run_idempotent(address: str, topic: str, keys: list[bytes], values: list[bytes]) -> float:
    producer = _producer(address, None)
    producer.list_topics(topic, timeout=10)
    start = time.perf_counter()
    _send(producer, topic, keys, values)
    if producer.flush(60) != 0:
        raise RuntimeError(f"{topic}: records left unacknowledged")
    elapsed = time.perf_counter() - start
    if _end_offset(address, topic) != len(keys):
        raise RuntimeError(f"{topic}: not every record was stored")
    return elapsed


def run_transactional(
    address: str, topic: str, keys: list[bytes], values: list[bytes], per_txn: int
) -> float:
    producer = _producer(address, f"bench-{topic}")
    producer.list_topics(topic, timeout=10)
    transactions = 0
    start = time.perf_counter()
    for first in range(0, len(keys), per_txn):
        producer.begin_transaction()
        _send(producer, topic, keys[first : first + per_txn], values[first : first + per_txn])
        producer.commit_transaction(60)
        transactions += 1
    elapsed = time.perf_counter() - start
    if _end_offset(address, topic) != len(keys) + transactions:
        raise RuntimeError(f"{topic}: not every record and marker was stored")
    return elapsed


def run(work: Path, count: int, per_txn: int, repeat: int) -> dict[str, Any]:
    records = generate_records(count, 100)
    keys = [key for _, key, _ in records]
    values = [value for _, _, value in records]
    payload = sum(len(k) + len(v) for k, v in zip(keys, values, strict=True))
    wall: dict[str, list[float]] = {"idempotent": [], "transactional": []}
    with ServeProcess(work / "data", log_path=work / "serve.log") as server:
        address = server.address
        topic_number = 0

        def sample(name: str) -> float:
            nonlocal topic_number
            topic_number += 1
            topic = f"{name}-{topic_number}"
            _create_topic(address, topic)
            if name == "idempotent":
                return run_idempotent(address, topic, keys, values)
            return run_transactional(address, topic, keys, values, per_txn)

        sample("idempotent")  # warm-up rounds, untimed
        sample("transactional")
        for round_index in range(repeat):
            order = ["idempotent", "transactional"]
            if round_index % 2:
                order.reverse()
            for name in order:
                wall[name].append(sample(name))
    rates = {name: count / median(seconds) for name, seconds in wall.items()}
    ratio = rates["transactional"] / rates["idempotent"]
    return {
        "records": count,
        "txn_records": per_txn,
        "payload_bytes": payload,
        "wall_s": wall,
        "ratio": ratio,
        "goal": GOAL,
        "goal_met": ratio >= GOAL,
    }


def _rate(count: float, seconds: list[float]) -> str:
    rates = sorted(count / s for s in seconds)
    return f"{median(rates):,.0f} [{rates[0]:,.0f}..{rates[-1]:,.0f}]"


def print_tables(result: dict[str, Any], repeat: int) -> None:
    print(
        f"## produce {result['records']:,} records of 100 B, transactions of "
        f"{result['txn_records']:,}; {repeat} rounds, wall clock, median [min..max]\n"
    )
    print("| contender | records/s | MB/s (key+value) |")
    print("|---|---|---|")
    for name, seconds in result["wall_s"].items():
        print(
            f"| {name} | {_rate(result['records'], seconds)} "
            f"| {_rate(result['payload_bytes'] / 1e6, seconds)} |"
        )
    verdict = "met" if result["goal_met"] else "missed"
    print(f"\n## goal: transactional >= {GOAL}x idempotent: **{result['ratio']:.2f}x** ({verdict})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--txn-records", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workdir", type=Path, default=None)
    args, _ = parser.parse_known_args(argv)
    repeat = 1 if args.quick else max(1, args.repeat)
    count = 5_000 if args.quick else args.records
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-serve-txn-", dir=args.workdir))
    try:
        result = run(work, count, args.txn_records, repeat)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_tables(result, repeat)
    path = write_results("serve_txn", {"result": result, "machine": machine_info()})
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
