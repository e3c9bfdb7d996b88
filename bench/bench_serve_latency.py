"""Produce-to-consume latency through ``seglog serve`` at a steady rate, beside a loopback hop.

Contenders, interleaved round-robin after one untimed warm-up round, each sending ``--rate``
messages/s (default 10 000) for ``--seconds`` (default 10) from this process, paced by the
clock (every 0.5 ms, the messages due by then are sent), each message's first 8 bytes the
send instant (``CLOCK_MONOTONIC`` in ns, comparable across processes), padded to 100 B:

* **serve, linger.ms=0** (and one per other ``--linger-ms`` value, default also 5, librdkafka's
  default): a confluent-kafka ``Producer`` (``acks=1``; ``linger.ms=0``: batches of the
  messages ready, no waiting, so the most requests) to a fresh one-partition topic of a
  ``seglog serve`` subprocess; a confluent-kafka ``Consumer`` in a child process, assigned
  to the partition before the first message (librdkafka's defaults: ``fetch.wait.max.ms`` 500,
  ``fetch.min.bytes`` 1, so it long-polls and the server wakes it on append), records
  receive instant - send instant for every message (``poll()``, one message per call).
* **limit: one TCP hop**: the same paced messages written to a loopback TCP connection
  (``TCP_NODELAY``) read by a child process, the same latency per message: the floor of any
  path from one process to another on this machine.

Reported: p50, p99, p99.9 and max of each round (medians over rounds), the rate reached, and
the ratios serve (the first ``--linger-ms``) / hop of the medians of p50 and p99.

Run: ``.venv/bin/python -m bench.bench_serve_latency [--rate 10000] [--seconds 10]
[--linger-ms 0,5] [--repeat 3] [--quick] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import socket
import sys
import tempfile
import time
from array import array
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python bench/bench_serve_latency.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine_info, write_results
from bench.serve_common import ServeProcess, median, open_manager, quiet_client

MESSAGE_BYTES = 100


def serve_name(linger_ms: float) -> str:
    """The contender name of the path through the server at one ``linger.ms``."""
    return f"serve: confluent-kafka producer (linger.ms={linger_ms:g}) -> seglog serve -> consumer"


HOP = "limit: one TCP hop"
PERCENTILES = (("p50", 0.50), ("p99", 0.99), ("p99.9", 0.999), ("max", 1.0))


def now_ns() -> int:
    """CLOCK_MONOTONIC in ns (one clock for every process of this machine)."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def _message() -> bytes:
    return now_ns().to_bytes(8, "big") + bytes(MESSAGE_BYTES - 8)


def paced(rate: int, count: int, send: Callable[[bytes], None], tick: Callable[[], None]) -> float:
    """Call ``send`` ``count`` times at ``rate`` per second; returns the rate reached."""
    start = time.perf_counter()
    sent = 0
    while sent < count:
        due = min(count, int((time.perf_counter() - start) * rate) + 1)
        while sent < due:
            send(_message())
            sent += 1
        tick()
        time.sleep(0.0005)
    return count / (time.perf_counter() - start)


def _consume_child(address: str, topic: str, count: int, conn: Connection) -> None:
    """Child process: consume ``count`` messages, send back their latencies (ns)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        quiet_client(
            {"bootstrap.servers": address, "group.id": "bench", "enable.auto.commit": False}
        )
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    consumer.consume(1, 1.0)  # the assignment is active, the first long poll is out
    conn.send("ready")
    latencies = array("q")
    poll = consumer.poll  # one message per call: consume(n) would wait for n messages
    while len(latencies) < count:
        message = poll(1.0)
        if message is None:
            continue
        if message.error() is not None:
            raise RuntimeError(str(message.error()))
        arrived = now_ns()
        latencies.append(arrived - int.from_bytes(message.value()[:8], "big"))
    consumer.close()
    conn.send_bytes(latencies.tobytes())


def _hop_child(port: int, count: int, conn: Connection) -> None:
    """Child process: read ``count`` messages from a TCP connection, send back latencies."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.send("ready")
        buffer = bytearray(MESSAGE_BYTES)
        view = memoryview(buffer)
        latencies = array("q")
        while len(latencies) < count:
            got = 0
            while got < MESSAGE_BYTES:
                read = sock.recv_into(view[got:], MESSAGE_BYTES - got)
                if read == 0:
                    raise ConnectionError("the sender closed early")
                got += read
            arrived = now_ns()
            latencies.append(arrived - int.from_bytes(buffer[:8], "big"))
    conn.send_bytes(latencies.tobytes())


def _collect(process: Any, parent: Connection) -> array[int]:
    latencies = array("q")
    latencies.frombytes(parent.recv_bytes())
    process.join(30)
    if process.exitcode != 0:
        raise RuntimeError(f"latency child exited with {process.exitcode}")
    return latencies


def run_serve(
    server: ServeProcess, topic: str, rate: int, count: int, linger_ms: float
) -> tuple[array[int], float]:
    """One paced round through the server (module docstring)."""
    from confluent_kafka import Producer

    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_consume_child, args=(server.address, topic, count, child))
    process.start()
    producer = Producer(
        quiet_client({"bootstrap.servers": server.address, "acks": 1, "linger.ms": linger_ms})
    )
    producer.list_topics(topic, timeout=10)
    if parent.recv() != "ready":
        raise RuntimeError("consumer child did not start")
    reached = paced(rate, count, lambda m: producer.produce(topic, m), lambda: producer.poll(0))
    producer.flush(30)
    return _collect(process, parent), reached


def run_hop(rate: int, count: int) -> tuple[array[int], float]:
    """One paced round over one loopback TCP connection (module docstring)."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        process = context.Process(target=_hop_child, args=(port, count, child))
        process.start()
        sock, _ = listener.accept()
    with sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if parent.recv() != "ready":
            raise RuntimeError("hop child did not start")
        reached = paced(rate, count, sock.sendall, lambda: None)
        latencies = _collect(process, parent)
    return latencies, reached


def summarize(latencies: array[int]) -> dict[str, float]:
    """Percentiles in microseconds."""
    ordered = sorted(latencies)
    last = len(ordered) - 1
    return {name: ordered[min(last, int(q * len(ordered)))] / 1000 for name, q in PERCENTILES}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the rounds, print the table, write the results JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--linger-ms", default="0,5")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workdir", type=Path, default=None)
    args, _ = parser.parse_known_args(argv)
    seconds, repeat = (0.5, 1) if args.quick else (args.seconds, max(1, args.repeat))
    count = int(args.rate * seconds)
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-serve-latency-", dir=args.workdir))
    lingers = [float(v) for v in args.linger_ms.split(",")]
    first = serve_name(lingers[0])
    rounds: dict[str, list[dict[str, float]]] = {serve_name(v): [] for v in lingers}
    rounds[HOP] = []
    try:
        manager = open_manager(work / "data")
        for index in range(repeat + 1):
            for linger in lingers:
                manager.create_topic(f"lat{index}-{linger:g}", 1)
        manager.close()
        with ServeProcess(work / "data", log_path=work / "serve.log") as server:
            contenders: dict[str, Callable[[int], tuple[array[int], float]]] = {
                serve_name(v): lambda r, v=v: run_serve(
                    server, f"lat{r}-{v:g}", args.rate, count, v
                )
                for v in lingers
            }
            contenders[HOP] = lambda r: run_hop(args.rate, count)
            names = list(contenders)
            for round_index in range(repeat + 1):
                shift = round_index % len(names)
                for name in names[shift:] + names[:shift]:
                    latencies, reached = contenders[name](round_index)
                    if len(latencies) != count:
                        raise AssertionError(f"{name}: {len(latencies)} of {count} arrived")
                    if round_index:  # round 0 is the warm-up
                        rounds[name].append({**summarize(latencies), "rate": reached})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"## produce-to-consume latency, {args.rate:,} msgs/s of {MESSAGE_BYTES} B for "
        f"{seconds:g} s ({count:,} messages), {repeat} rounds, median of rounds [min..max]\n"
    )
    print("| contender | rate reached | p50 µs | p99 µs | p99.9 µs | max µs |")
    print("|---|---|---|---|---|---|")
    for name, summaries in rounds.items():
        cells = []
        for key in ("rate", "p50", "p99", "p99.9", "max"):
            values = sorted(s[key] for s in summaries)
            cells.append(f"{median(values):,.0f} [{values[0]:,.0f}..{values[-1]:,.0f}]")
        print(f"| {name} | " + " | ".join(cells) + " |")
    ratios = {
        key: median([s[key] for s in rounds[first]]) / median([s[key] for s in rounds[HOP]])
        for key in ("p50", "p99")
    }
    print(
        f"\nserve (linger.ms={lingers[0]:g}) / one TCP hop: p50 **{ratios['p50']:.1f}x**, "
        f"p99 **{ratios['p99']:.1f}x** "
        "(the path has two hops, a log append and a long-poll wake-up)"
    )
    path = write_results(
        "serve_latency",
        {"rate": args.rate, "count": count, "rounds": rounds, "ratios": ratios,
         "machine": machine_info()},
    )  # fmt: skip
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
