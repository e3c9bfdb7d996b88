"""Fetch and consume through ``seglog serve`` against a plain ``sendfile`` of the same bytes.

The log: one partition of ``--size-mb`` MiB (default 1024) of 1 KiB records in 16 KiB
uncompressed v2 batches (the cached segment of :func:`bench.common.load_segment`, appended
again and again with ``Log.append`` in 8 MiB chunks, offsets reassigned), written in process
before a ``seglog serve`` subprocess opens the directory; read once before timing, so every
contender reads from the page cache. Contenders, interleaved round-robin after one untimed
warm-up round, each reading the whole log over loopback:

* **Fetch, raw client** (one per ``--partition-mib``): :class:`bench.serve_wire.WireClient`,
  sessionless Fetch v12 requests (``max_bytes`` 50 MiB, ``partition_max_bytes`` 1 MiB, as
  librdkafka's defaults, or 8 MiB), one in flight, each response read with ``recv_into`` into
  one reused buffer; only the response's structure and the last batch header are parsed (the
  next offset), the record bytes are discarded. The server sends them with ``sendfile``.
* **limit: sendfile**: a thread of this process sends the same byte ranges of the same segment
  files (the warm-up fetch's response sizes) with ``os.sendfile`` to a client that discards
  them with the same ``recv_into`` loop: no requests, no framing.
* **consume, confluent-kafka**: a ``Consumer`` (librdkafka defaults: ``fetch.max.bytes`` 50 MiB,
  ``max.partition.fetch.bytes`` 1 MiB), ``assign`` at offset 0, ``consume(10000)`` until every
  record arrived; each message's value length is summed in Python. Created (and connected)
  before the clock.

Reported: MB/s of log bytes (10^6), records/s, server CPU seconds per sample, and the ratios
**Fetch / sendfile** (goal >= 0.5) and consume / Fetch, of median wall times.

Run: ``.venv/bin/python -m bench.bench_serve_fetch [--size-mb 1024] [--partition-mib 1,8]
[--repeat 5] [--quick] [--workdir DIR]``.
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

if __package__ in (None, ""):  # run as a script: python bench/bench_serve_fetch.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import load_segment, machine_info, write_results
from bench.serve_common import (
    ServeProcess,
    iter_batches,
    median,
    open_manager,
    quiet_client,
    segment_files,
)
from bench.serve_wire import SendfilePeer, WireClient, file_ranges
from seglog.format import CompressionType

GOAL = 0.5
TOPIC = "f"
CHUNK_BYTES = 8 * 1024 * 1024
MAX_BYTES = 50 * 1024 * 1024
SENDFILE = "limit: sendfile of the same ranges"
CONSUME = "consume: confluent-kafka"


def fetch_name(mib: int) -> str:
    """The contender name of the raw Fetch client at ``mib`` MiB per partition."""
    return f"Fetch: raw client, {mib} MiB/partition"


def build_log(data_dir: Path, size_mb: int, quick: bool) -> tuple[int, int]:
    """Write the log (module docstring); returns its record count and bytes."""
    segment = load_segment(4 if quick else 100, 1024, CompressionType.NONE)
    chunks: list[bytes] = []
    current: list[memoryview] = []
    size = 0
    for batch in iter_batches(segment.data):
        current.append(batch)
        size += len(batch)
        if size >= CHUNK_BYTES:
            chunks.append(b"".join(current))
            current, size = [], 0
    if current:
        chunks.append(b"".join(current))
    manager = open_manager(data_dir)
    try:
        manager.create_topic(TOPIC, 1, {"retention.ms": "-1"})
        log = manager.get_log(TOPIC, 0)
        target = size_mb * 1024 * 1024
        while log.size_bytes() < target:
            for chunk in chunks:
                log.append(chunk)
                if log.size_bytes() >= target:
                    break
        log.flush()
        return log.log_end_offset, log.size_bytes()
    finally:
        manager.close()


def _consume(address: str, records: int) -> Callable[[], tuple[float, int]]:
    from confluent_kafka import Consumer, TopicPartition

    def run() -> tuple[float, int]:
        consumer = Consumer(
            quiet_client(
                {
                    "bootstrap.servers": address,
                    "group.id": "bench",
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                }
            )
        )
        try:
            consumer.list_topics(TOPIC, timeout=10)
            count = 0
            value_bytes = 0
            start = time.perf_counter()
            consumer.assign([TopicPartition(TOPIC, 0, 0)])
            while count < records:
                messages = consumer.consume(min(10_000, records - count), 5.0)
                if not messages:
                    raise RuntimeError(f"consume stalled at {count} of {records} records")
                for message in messages:
                    if message.error() is not None:
                        raise RuntimeError(f"consume: {message.error()}")
                    value_bytes += len(message.value())
                count += len(messages)
            elapsed = time.perf_counter() - start
        finally:
            consumer.close()
        if count != records:
            raise AssertionError(f"consumed {count} records, the log holds {records}")
        return elapsed, value_bytes

    return run


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Build the log, start the server, time the contenders (module docstring)."""
    data_dir = work / "data"
    records, log_bytes = build_log(data_dir, args.size_mb, args.quick)
    for path in segment_files(data_dir, TOPIC):
        with path.open("rb") as handle:  # into the page cache
            while handle.read(CHUNK_BYTES):
                pass
    mibs = [int(m) for m in args.partition_mib.split(",")]
    wall: dict[str, list[float]] = {}
    server_cpu: dict[str, list[float]] = {}
    with ServeProcess(data_dir, log_path=work / "serve.log") as server:
        client = WireClient(server.host, server.port)
        total, sizes = client.fetch_all(
            TOPIC, 0, records, max_bytes=MAX_BYTES, partition_max_bytes=mibs[0] << 20
        )
        if total != log_bytes:
            raise AssertionError(f"fetched {total} bytes, the log holds {log_bytes}")
        peer = SendfilePeer(file_ranges(segment_files(data_dir, TOPIC), sizes))
        contenders: dict[str, Callable[[], object]] = {}
        for mib in mibs:

            def fetch(mib: int = mib) -> object:
                got, _ = client.fetch_all(
                    TOPIC, 0, records, max_bytes=MAX_BYTES, partition_max_bytes=mib << 20
                )
                return got

            contenders[fetch_name(mib)] = fetch
        contenders[SENDFILE] = lambda: peer.receive_all(client.view)
        consume = _consume(server.address, records)
        consumed: list[int] = []

        def consume_run() -> object:
            elapsed, value_bytes = consume()
            consumed.append(value_bytes)
            return elapsed

        contenders[CONSUME] = consume_run
        names = list(contenders)
        try:
            for round_index in range(1 + args.repeat):
                shift = round_index % len(names)
                for name in names[shift:] + names[:shift]:
                    cpu0 = server.cpu_seconds()
                    start = time.perf_counter()
                    result = contenders[name]()
                    elapsed = time.perf_counter() - start
                    if name == CONSUME:
                        assert isinstance(result, float)
                        elapsed = result  # from assign() to the last record
                    elif result != log_bytes:
                        raise AssertionError(f"{name}: {result} bytes, expected {log_bytes}")
                    if round_index:  # round 0 is the warm-up
                        wall.setdefault(name, []).append(elapsed)
                        server_cpu.setdefault(name, []).append(server.cpu_seconds() - cpu0)
        finally:
            peer.close()
            client.close()
    medians = {name: median(values) for name, values in wall.items()}
    ratios = {
        f"{fetch_name(mib)} / {SENDFILE}": medians[SENDFILE] / medians[fetch_name(mib)]
        for mib in mibs
    }
    ratios[f"{CONSUME} / {fetch_name(mibs[0])}"] = medians[fetch_name(mibs[0])] / medians[CONSUME]
    return {
        "records": records,
        "log_bytes": log_bytes,
        "value_bytes": consumed[0] if consumed else 0,
        "responses_at_first_size": len(sizes),
        "wall_s": wall,
        "server_cpu_s": server_cpu,
        "ratios": ratios,
        "goal": {name: ratio >= GOAL for name, ratio in ratios.items() if SENDFILE in name},
    }


def print_tables(result: dict[str, Any], repeat: int) -> None:
    """Markdown tables of the run."""
    log_mb = result["log_bytes"] / 1e6
    print(
        f"## fetch and consume of a {log_mb:,.0f} MB log ({result['records']:,} records of "
        f"1 KiB), {repeat} rounds, wall clock, median [min..max]\n"
    )
    print("| contender | MB/s (log bytes) | records/s | wall s | server cpu s |")
    print("|---|---|---|---|---|")
    for name, seconds in result["wall_s"].items():
        mbs = sorted(log_mb / s for s in seconds)
        recs = sorted(result["records"] / s for s in seconds)
        print(
            f"| {name} | {median(mbs):,.0f} [{mbs[0]:,.0f}..{mbs[-1]:,.0f}] "
            f"| {median(recs):,.0f} [{recs[0]:,.0f}..{recs[-1]:,.0f}] "
            f"| {median(seconds):.3f} | {median(result['server_cpu_s'][name]):.3f} |"
        )
    print("\n## ratios (of median wall times); goal: Fetch >= 0.5x sendfile\n")
    print("| ratio | value | goal |")
    print("|---|---|---|")
    for name, ratio in result["ratios"].items():
        goal = result["goal"].get(name)
        shown = "-" if goal is None else ("met" if goal else "missed")
        print(f"| {name} | **{ratio:.2f}x** | {shown} |")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the tables, write the results JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--partition-mib", default="1,8")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workdir", type=Path, default=None)
    args, _ = parser.parse_known_args(argv)
    if args.quick:
        args.size_mb, args.repeat = 16, 1
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-serve-fetch-", dir=args.workdir))
    try:
        result = run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_tables(result, args.repeat)
    path = write_results("serve_fetch", {**result, "machine": machine_info()})
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
