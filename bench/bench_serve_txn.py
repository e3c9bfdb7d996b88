"""Transactional produce vs idempotent produce of the same records, through ``seglog serve``.

Two contenders, interleaved round-robin (a different one first each round) after one untimed
warm-up round of each, both confluent-kafka (librdkafka) producers with ``acks=all``,
``linger.ms`` (``--linger-ms``, librdkafka's default 5) and ``enable.idempotence=true``
sending the same N records (16-byte keys, JSON-looking values from
:func:`bench.common.generate_records`), each sample to its own pre-created one-partition topic
of one ``seglog serve`` subprocess on loopback:

* **idempotent**: ``produce()`` every record, then ``flush()`` (one record to another topic
  and its flush before the clock: the producer id is acquired, as ``init_transactions`` does
  for the other);
* **transactional**: ``transactional.id`` set; ``init_transactions()`` before the clock, then
  per transaction of ``--txn-records`` records (1 000): ``begin_transaction()``, the
  ``produce()`` calls, ``commit_transaction()`` (which flushes, then EndTxn: the
  PrepareCommit and CompleteCommit records in ``__transaction_state`` and the COMMIT marker).

Timed: from the first ``produce()`` to the end of the last ``flush()`` / ``commit_transaction()``.
After each sample the partition's end offset is checked through ListOffsets (idempotent: N;
transactional: N plus one marker per transaction) and, for the transactional one, the
``read_committed`` end (the last stable offset) equals it: every transaction committed.

Also per round: :data:`FIXED_TXNS` transactions of one record each, timed, with the server's CPU
seconds: the fixed cost of a transaction, and the ceiling it sets on the ratio (idempotent time
for a transaction's worth of records over that plus one fixed cost).

Reported: records/s by wall clock, median [min..max]; the server's CPU seconds per sample;
the **ratio transactional / idempotent** of median records/s. Goal: >= 0.7.

Run: ``.venv/bin/python -m bench.bench_serve_txn [--records N] [--txn-records N] [--repeat R]
[--linger-ms MS] [--quick] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python bench/bench_serve_txn.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import generate_records, machine_info, write_results
from bench.serve_common import ServeProcess, median, open_manager, quiet_client

GOAL = 0.7
FIXED_TXNS = 200  # one-record transactions per round, for the fixed cost per transaction
NO_RETENTION = {"retention.ms": "-1"}
IDEMPOTENT = "idempotent"
TRANSACTIONAL = "transactional"


def _producer(address: str, transactional_id: str | None, linger_ms: int) -> Any:
    from confluent_kafka import Producer

    config: dict[str, Any] = {
        "bootstrap.servers": address,
        "acks": "all",
        "linger.ms": linger_ms,
        "enable.idempotence": True,
    }
    if transactional_id is not None:
        config["transactional.id"] = transactional_id
    return Producer(quiet_client(config))


def _send(producer: Any, topic: str, keys: list[bytes], values: list[bytes]) -> None:
    produce = producer.produce
    poll = producer.poll
    for key, value in zip(keys, values, strict=True):
        while True:
            try:
                produce(topic, value, key, partition=0)
                break
            except BufferError:  # librdkafka's queue is full: wait for acks
                poll(0.001)


def idempotent(
    address: str, topic: str, keys: list[bytes], values: list[bytes], linger_ms: int
) -> float:
    producer = _producer(address, None, linger_ms)
    producer.list_topics(topic, timeout=10)  # connected, metadata known: outside the clock
    producer.produce("warm", b"w", b"w", partition=0)  # its producer id too, as init_transactions
    if producer.flush(30) != 0:
        raise RuntimeError("the idempotent producer got no producer id")
    start = time.perf_counter()
    _send(producer, topic, keys, values)
    if producer.flush(60) != 0:
        raise RuntimeError(f"{topic}: records left unacknowledged")
    return time.perf_counter() - start


def transactional(
    address: str, topic: str, keys: list[bytes], values: list[bytes], per_txn: int, linger_ms: int
) -> float:
    producer = _producer(address, f"bench-{topic}", linger_ms)
    producer.list_topics(topic, timeout=10)
    producer.init_transactions(30)
    start = time.perf_counter()
    for first in range(0, len(keys), per_txn):
        producer.begin_transaction()
        _send(producer, topic, keys[first : first + per_txn], values[first : first + per_txn])
        producer.commit_transaction(60)
    return time.perf_counter() - start


def one_record_transactions(address: str, topic: str, count: int, linger_ms: int) -> float:
    """Seconds per transaction of one record (the protocol's fixed cost per transaction:
    AddPartitionsToTxn, the produce, EndTxn, and the client's own steps between them)."""
    producer = _producer(address, f"bench-fixed-{topic}", linger_ms)
    producer.list_topics(topic, timeout=10)
    producer.init_transactions(30)
    start = time.perf_counter()
    for _ in range(count):
        producer.begin_transaction()
        producer.produce(topic, b"v", b"k", partition=0)
        producer.commit_transaction(60)
    return (time.perf_counter() - start) / count


def _ends(address: str, topic: str) -> tuple[int, int]:
    """(high watermark, last stable offset) of the topic's partition 0, through the wire."""
    from confluent_kafka import Consumer, TopicPartition

    ends = []
    for isolation in ("read_uncommitted", "read_committed"):
        consumer = Consumer(
            quiet_client(
                {"bootstrap.servers": address, "group.id": "bench", "isolation.level": isolation}
            )
        )
        try:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        finally:
            consumer.close()
        ends.append(int(high))
    return ends[0], ends[1]


def run(
    work: Path, count: int, per_txn: int, value_bytes: int, repeat: int, linger_ms: int
) -> dict[str, Any]:
    records = generate_records(count, value_bytes)
    keys = [key for _, key, _ in records]
    values = [value for _, _, value in records]
    del records
    transactions = -(-count // per_txn)
    server_dir = work / "serve"
    manager = open_manager(server_dir)
    manager.create_topic("warm", 1, NO_RETENTION)
    manager.create_topic("fixed", 1, NO_RETENTION)
    for name in (IDEMPOTENT, TRANSACTIONAL):
        for i in range(repeat + 1):
            manager.create_topic(f"{name}-{i}", 1, NO_RETENTION)
    manager.close()
    wall: dict[str, list[float]] = {IDEMPOTENT: [], TRANSACTIONAL: []}
    cpu: dict[str, list[float]] = {IDEMPOTENT: [], TRANSACTIONAL: []}
    with ServeProcess(server_dir, log_path=work / "serve.log") as server:

        def sample(name: str, index: int) -> float:
            topic = f"{name}-{index}"
            cpu0 = server.cpu_seconds()
            if name == IDEMPOTENT:
                elapsed = idempotent(server.address, topic, keys, values, linger_ms)
                expected = (count, count)
            else:
                elapsed = transactional(server.address, topic, keys, values, per_txn, linger_ms)
                expected = (count + transactions, count + transactions)
            used = server.cpu_seconds() - cpu0
            if _ends(server.address, topic) != expected:
                raise AssertionError(f"{topic}: ends {_ends(server.address, topic)} != {expected}")
            if index > 0:
                cpu[name].append(used)
            return elapsed

        sample(IDEMPOTENT, 0)  # warm-up
        sample(TRANSACTIONAL, 0)
        names = [IDEMPOTENT, TRANSACTIONAL]
        fixed: list[float] = []
        fixed_cpu: list[float] = []
        for round_index in range(1, repeat + 1):
            order = names if round_index % 2 else names[::-1]
            for name in order:
                wall[name].append(sample(name, round_index))
            cpu0 = server.cpu_seconds()
            fixed.append(one_record_transactions(server.address, "fixed", FIXED_TXNS, linger_ms))
            fixed_cpu.append((server.cpu_seconds() - cpu0) / FIXED_TXNS)
    medians = {name: median(seconds) for name, seconds in wall.items()}
    ratio = medians[IDEMPOTENT] / medians[TRANSACTIONAL]
    # The best ratio a transaction's fixed cost allows: idempotent time per transaction's worth
    # of records, over that plus one one-record transaction.
    per_batch_s = medians[IDEMPOTENT] / transactions
    ceiling = per_batch_s / (per_batch_s + median(fixed))
    return {
        "records": count,
        "txn_records": per_txn,
        "value_bytes": value_bytes,
        "linger_ms": linger_ms,
        "wall_s": wall,
        "server_cpu_s": cpu,
        "ratio": ratio,
        "one_record_txn_s": fixed,
        "one_record_txn_server_cpu_s": fixed_cpu,
        "ceiling": ceiling,
        "goal_met": ratio >= GOAL,
    }


def _rate(count: float, seconds: list[float]) -> str:
    rates = sorted(count / s for s in seconds)
    return f"{median(rates):,.0f} [{rates[0]:,.0f}..{rates[-1]:,.0f}]"


def print_table(result: dict[str, Any], repeat: int) -> None:
    print(
        f"## {result['records']:,} records of {result['value_bytes']} B, transactions of "
        f"{result['txn_records']:,}, linger.ms={result['linger_ms']}, {repeat} rounds, "
        "wall clock, median [min..max]\n"
    )
    print("| contender | records/s | server cpu s/sample (median) |")
    print("|---|---|---|")
    for name, seconds in result["wall_s"].items():
        print(
            f"| {name} | {_rate(result['records'], seconds)} "
            f"| {median(result['server_cpu_s'][name]):.2f} |"
        )
    verdict = "met" if result["goal_met"] else "missed"
    print(f"\ntransactional / idempotent: **{result['ratio']:.2f}x** (goal {GOAL}: {verdict})")
    fixed_ms = median(result["one_record_txn_s"]) * 1000
    fixed_cpu_ms = median(result["one_record_txn_server_cpu_s"]) * 1000
    print(
        f"one-record transaction: {fixed_ms:.2f} ms, {fixed_cpu_ms:.2f} ms of it server CPU "
        f"(median of {FIXED_TXNS} per round); "
        f"the ceiling it sets for transactions of {result['txn_records']:,}: "
        f"**{result['ceiling']:.2f}x**"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--txn-records", type=int, default=1000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--linger-ms", type=int, default=5, help="both producers (librdkafka: 5)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 5 000 records, 2 rounds")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(None if argv is None else list(argv))
    if args.quick:
        args.records, args.repeat = 5000, 2
    work = Path(tempfile.mkdtemp(prefix="bench-serve-txn-", dir=args.workdir))
    try:
        result = run(
            work, args.records, args.txn_records, args.value_bytes, args.repeat, args.linger_ms
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(result, args.repeat)
    write_results("serve_txn", {"machine": machine_info(), "result": result})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
