"""Produce through the wire (``seglog serve`` + confluent-kafka) against ``Log.append`` in process.

Per configuration (values of 100 B and 1 KiB, codecs ``none`` and ``lz4``), two contenders,
interleaved round-robin (a different one first each round), one untimed warm-up round:

* **wire**: a confluent-kafka (librdkafka) ``Producer`` with ``acks=1``, ``linger.ms=5``
  (librdkafka's default), default batch sizes (``batch.size`` 1 MB, ``batch.num.messages``
  10 000) and the configuration's ``compression.type``, sends N records (16-byte keys,
  JSON-looking values from :func:`bench.common.generate_records`) to a one-partition topic of a
  ``seglog serve`` subprocess on loopback. Timed: from the first ``produce()`` to the end of
  ``flush()`` (every record acknowledged). The producer is created and connected (metadata
  fetched) before the clock starts; each sample writes to its own pre-created topic.
* **client floor**: the same ``produce()`` loop into a confluent-kafka ``Producer`` whose
  bootstrap address refuses connections (queues large enough for every record, lz4 or not):
  what the client itself costs per record in this process, the most any broker could get
  from this client. Reported beside the wire (wire / floor); the records are purged after the
  clock.
* **raw wire**: the same batches as the in-process contender, sent as pre-encoded Produce v9
  requests (acks=1, one batch each, up to 5 in flight as librdkafka allows) by the minimal
  socket client of :mod:`bench.serve_wire`, every response checked: the server's own cost,
  without the client's per-record work.
* **in-process**: ``Log.append`` of **the same batches**, one ``append`` call per batch (one
  Produce request carries one batch per partition). The batches are captured from the warm-up
  round: what the client sent, as the server stored them (split from the topic's ``.log``
  file; a batch's bytes are the client's except the base offset the log assigns). When the
  client sent them uncompressed although the configuration asks for lz4 (librdkafka disables
  LZ4 for a broker without FindCoordinator, the first API of its "LZ4" feature), the same
  records are rebuilt with seglog's ``BatchBuilder`` into batches of the same record counts
  with the configuration's codec, and the table says so. Each sample appends to a fresh
  one-partition topic of a fresh data dir in the same temporary directory (same file system
  as the server's); the close runs after the clock.

Reported per configuration: records/s and MB/s (uncompressed record payload: key + value) by
wall clock, median [min..max]; the server's CPU seconds per sample (``/proc/<pid>/stat``) and
this process's (the client, librdkafka's threads included); and the **ratio wire / in-process**
of median records/s. Goal: >= 0.6.

Run: ``.venv/bin/python -m bench.bench_serve_produce [--records-100b N] [--records-1k N]
[--repeat R] [--quick] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python bench/bench_serve_produce.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import generate_records, machine_info, write_results
from bench.serve_common import (
    ServeProcess,
    median,
    open_manager,
    quiet_client,
    read_partition_batches,
)
from bench.serve_wire import WireClient
from seglog.format import BatchBuilder, CompressionType

GOAL = 0.6
# The records carry 2025 timestamps: time retention must not delete them mid-run.
NO_RETENTION = {"retention.ms": "-1"}
WIRE = "wire: confluent-kafka -> seglog serve"
FLOOR = "client floor: produce() calls, no broker"
RAW = "raw wire: Produce requests of the same batches -> seglog serve"
IN_PROCESS = "in-process: Log.append of the same batches"
CONFIGS = ((100, "none"), (100, "lz4"), (1024, "none"), (1024, "lz4"))


def _label(value_bytes: int, codec: str) -> str:
    return f"{value_bytes}B/{codec}" if value_bytes < 1024 else f"{value_bytes // 1024}KiB/{codec}"


def _produce(address: str, topic: str, codec: str, keys: list[bytes], values: list[bytes]) -> float:
    """Send every record with acks=1; wall seconds from the first produce to the last ack."""
    from confluent_kafka import KafkaException, Producer

    producer = Producer(
        quiet_client(
            {
                "bootstrap.servers": address,
                "acks": 1,
                "linger.ms": 5,
                "compression.type": codec,
                "enable.idempotence": False,
            }
        )
    )
    producer.list_topics(topic, timeout=10)  # connected, metadata known: outside the clock
    produce = producer.produce
    poll = producer.poll
    start = time.perf_counter()
    for key, value in zip(keys, values, strict=True):
        while True:
            try:
                produce(topic, value, key)
                break
            except BufferError:  # librdkafka's queue is full: wait for acks
                poll(0.001)
    if producer.flush(60) != 0:
        raise KafkaException(f"{topic}: records left unacknowledged")
    elapsed = time.perf_counter() - start
    return elapsed


def _client_floor(codec: str, keys: list[bytes], values: list[bytes]) -> float:
    """The produce() loop alone (no broker answers); wall seconds."""
    from confluent_kafka import Producer

    producer = Producer(
        quiet_client(
            {
                "bootstrap.servers": "127.0.0.1:1",
                "linger.ms": 5,
                "compression.type": codec,
                "queue.buffering.max.messages": len(keys) + 1,
                "queue.buffering.max.kbytes": 2**31 - 1,
                "message.timeout.ms": 600_000,
            }
        )
    )
    produce = producer.produce
    start = time.perf_counter()
    for key, value in zip(keys, values, strict=True):
        produce("t", value, key)
    elapsed = time.perf_counter() - start
    producer.purge()
    producer.flush(0)
    return elapsed


def _end_offset(address: str, topic: str) -> int:
    """The partition's high watermark, asked through the wire (ListOffsets)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(quiet_client({"bootstrap.servers": address, "group.id": "bench"}))
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()
    return int(high)


def _append(root: Path, name: str, batches: list[bytes]) -> float:
    """``Log.append`` of every batch into a fresh topic; wall seconds of the appends."""
    data_dir = root / name
    manager = open_manager(data_dir)
    try:
        manager.create_topic("t", 1, NO_RETENTION)
        log = manager.get_log("t", 0)
        append = log.append
        start = time.perf_counter()
        for batch in batches:
            append(batch)
        elapsed = time.perf_counter() - start
    finally:
        manager.close()
    shutil.rmtree(data_dir, ignore_errors=True)
    return elapsed


def _codec_of(batch: bytes) -> CompressionType:
    return CompressionType(int.from_bytes(batch[21:23], "big") & 0x7)


def _rebuild(
    keys: list[bytes], values: list[bytes], counts: list[int], codec: CompressionType
) -> list[bytes]:
    """The records again, in batches of ``counts`` records each, compressed with ``codec``."""
    batches: list[bytes] = []
    index = 0
    timestamp = int(time.time() * 1000)
    for count in counts:
        builder = BatchBuilder(max_batch_bytes=1 << 30, compression=codec)
        for key, value in zip(
            keys[index : index + count], values[index : index + count], strict=True
        ):
            builder.append(timestamp, key, value)
        batches.append(builder.build())
        index += count
    return batches


def run_config(work: Path, value_bytes: int, codec: str, count: int, repeat: int) -> dict[str, Any]:
    """Time both contenders of one configuration (see the module docstring)."""
    label = _label(value_bytes, codec)
    records = generate_records(count, value_bytes)
    keys = [key for _, key, _ in records]
    values = [value for _, _, value in records]
    payload = sum(len(k) + len(v) for k, v in zip(keys, values, strict=True))
    del records
    server_dir = work / f"serve-{value_bytes}-{codec}"
    topics = [f"p{i}" for i in range(repeat + 1)]
    raw_topics = [f"r{i}" for i in range(repeat + 1)]
    manager = open_manager(server_dir)
    for topic in topics + raw_topics:
        manager.create_topic(topic, 1, NO_RETENTION)
    manager.close()
    wall: dict[str, list[float]] = {WIRE: [], FLOOR: [], RAW: [], IN_PROCESS: []}
    server_cpu: list[float] = []
    client_cpu: list[float] = []
    with ServeProcess(server_dir, log_path=work / "serve.log") as server:
        _produce(server.address, topics[0], codec, keys, values)  # warm-up, and the capture
        batches = read_partition_batches(server_dir, topics[0])
        stored_records = sum(int.from_bytes(b[57:61], "big") for b in batches)
        if stored_records != count:
            raise AssertionError(f"{label}: the server stored {stored_records} of {count}")
        sent_codec = _codec_of(batches[0]).name_in_kafka
        if sent_codec != codec:
            counts = [int.from_bytes(b[57:61], "big") for b in batches]
            batches = _rebuild(keys, values, counts, CompressionType[codec.upper()])
        client = WireClient(server.host, server.port, buffer_bytes=1 << 20)
        frames = [client.produce_requests(topic, batches) for topic in raw_topics]
        client.produce_all(frames[0])
        _append(work, "warm", batches)

        def raw(round_index: int) -> float:
            start = time.perf_counter()
            client.produce_all(frames[round_index + 1])
            return time.perf_counter() - start

        def wire(round_index: int) -> float:
            cpu0, own0 = server.cpu_seconds(), time.process_time()
            elapsed = _produce(server.address, topics[round_index + 1], codec, keys, values)
            server_cpu.append(server.cpu_seconds() - cpu0)
            client_cpu.append(time.process_time() - own0)
            end = _end_offset(server.address, topics[round_index + 1])
            if end != count:  # every record acknowledged and stored, none twice
                raise AssertionError(f"{label}: log end offset {end}, expected {count}")
            return elapsed

        contenders: dict[str, Callable[[int], float]] = {
            WIRE: wire,
            FLOOR: lambda r: _client_floor(codec, keys, values),
            RAW: raw,
            IN_PROCESS: lambda r: _append(work, f"append-{r}", batches),
        }
        names = list(contenders)
        for round_index in range(repeat):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                wall[name].append(contenders[name](round_index))
        client.close()
    medians = {name: median(values) for name, values in wall.items()}
    ratio = medians[IN_PROCESS] / medians[WIRE]
    raw_ratio = medians[IN_PROCESS] / medians[RAW]
    floor_ratio = medians[FLOOR] / medians[WIRE]
    return {
        "config": label,
        "client_sent": sent_codec,
        "raw_ratio": raw_ratio,
        "floor_ratio": floor_ratio,
        "records": count,
        "payload_bytes": payload,
        "batches": len(batches),
        "stored_bytes": sum(len(b) for b in batches),
        "wall_s": wall,
        "server_cpu_s": server_cpu,
        "client_cpu_s": client_cpu,
        "ratio": ratio,
        "goal_met": ratio >= GOAL,
    }


def _rate(count: float, seconds: list[float]) -> str:
    rates = sorted(count / s for s in seconds)
    return f"{median(rates):,.0f} [{rates[0]:,.0f}..{rates[-1]:,.0f}]"


def print_tables(results: list[dict[str, Any]], repeat: int) -> None:
    """Markdown: one row per contender and configuration, then the ratios against the goal."""
    print(f"## produce, {repeat} rounds, wall clock, median [min..max]\n")
    print("| config | contender | records/s | MB/s (key+value) | batches (avg KB stored) |")
    print("|---|---|---|---|---|")
    for result in results:
        avg_kb = result["stored_bytes"] / max(result["batches"], 1) / 1000
        for name, seconds in result["wall_s"].items():
            print(
                f"| {result['config']} | {name} | {_rate(result['records'], seconds)} "
                f"| {_rate(result['payload_bytes'] / 1e6, seconds)} "
                f"| {result['batches']} ({avg_kb:.0f}) |"
            )
    print("\n## goal: wire >= 0.6x in-process (ratio of median records/s)\n")
    print(
        "| config | client sent | confluent-kafka / in-process | confluent-kafka / client floor "
        "| raw wire / in-process | server cpu s/sample | client cpu s/sample "
        "| goal (confluent-kafka) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for result in results:
        print(
            f"| {result['config']} | {result['client_sent']} | **{result['ratio']:.2f}x** "
            f"| {result['floor_ratio']:.2f}x | **{result['raw_ratio']:.2f}x** "
            f"| {median(result['server_cpu_s']):.2f} | {median(result['client_cpu_s']):.2f} "
            f"| {'met' if result['goal_met'] else 'missed'} |"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Run every configuration, print the tables, write the results JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records-100b", type=int, default=1_000_000)
    parser.add_argument("--records-1k", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workdir", type=Path, default=None)
    args, _ = parser.parse_known_args(argv)
    repeat = 1 if args.quick else max(1, args.repeat)
    counts = (
        {100: 5_000, 1024: 2_000} if args.quick else {100: args.records_100b, 1024: args.records_1k}
    )
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-serve-produce-", dir=args.workdir))
    try:
        results = [
            run_config(work, value_bytes, codec, counts[value_bytes], repeat)
            for value_bytes, codec in CONFIGS
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_tables(results, repeat)
    path = write_results("serve_produce", {"results": results, "machine": machine_info()})
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
