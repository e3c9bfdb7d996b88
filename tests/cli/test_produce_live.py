"""``seglog produce`` as lines arrive: a real subprocess fed through a pipe, one line at a
time, and the log read (read-only, by seglog's own batch reader) in the test process; Kafka's
console producer options.

No test asserts how long anything takes: "visible before the next line is sent" is checked
by waiting (up to a generous deadline that only a broken producer reaches) for the record
to appear, and only then sending the next line.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_support import Cli

from seglog.format.compression import CompressionType
from seglog.format.reader import iter_batches_strict
from seglog.format.records import Record

DEADLINE_S = 60  # only a producer that never appends gets here


def log_batches(data_dir: Path, topic: str = "t", partition: int = 0) -> list[object]:
    """Every whole batch of the partition's segments, read from the files as they are now."""
    batches = []
    for path in sorted((data_dir / f"{topic}-{partition}").glob("*.log")):
        data = path.read_bytes()
        batches.extend(iter_batches_strict(data, path=str(path)))
    return batches


def log_records(data_dir: Path, topic: str = "t", partition: int = 0) -> list[Record]:
    """Every record of the partition, in offset order."""
    return [r for batch in log_batches(data_dir, topic, partition) for r in batch.records()]  # type: ignore[attr-defined]


def wait_for_values(data_dir: Path, expected: list[bytes]) -> None:
    """Wait until the partition holds exactly ``expected`` (fail at the deadline)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        values = [r.value for r in log_records(data_dir)]
        if values == expected:
            return
        assert len(values) <= len(expected) and values == expected[: len(values)], values
        assert time.monotonic() < deadline, f"still {values} after {DEADLINE_S} s"
        time.sleep(0.01)


def start_producer(data_dir: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "seglog.cli", "--data-dir", str(data_dir), "produce", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def send(process: subprocess.Popen[bytes], line: bytes) -> None:
    assert process.stdin is not None
    process.stdin.write(line)
    process.stdin.flush()


@pytest.fixture
def topic(cli: Cli, data_dir: Path) -> Path:
    cli.ok("topics", "create", "t", "--partitions", "1")
    return data_dir


def test_each_line_is_readable_within_the_linger_time_before_the_next_is_sent(
    topic: Path,
) -> None:
    producer = start_producer(topic, "t", "--linger-ms", "20")
    try:
        sent: list[bytes] = []
        for n in range(5):
            line = f"event {n}".encode()
            send(producer, line + b"\n")
            sent.append(line)
            wait_for_values(topic, sent)  # appended while the producer waits for more input
        _, err = producer.communicate(timeout=DEADLINE_S)  # closes stdin: EOF, a clean stop
    finally:
        producer.kill()
    assert producer.returncode == 0, err
    assert err.decode().splitlines() == [
        "Produced 5 record(s) to topic t.",
        "  partition 0: offsets 0..4 (5)",
    ]
    # Each line came alone, so each is its own batch, as a lingering Kafka producer sends it.
    assert len(log_batches(topic)) == 5


def test_a_full_batch_is_appended_without_waiting_for_the_linger_time(topic: Path) -> None:
    # linger.ms of ten minutes: only batch.size can send the first record before the end.
    producer = start_producer(topic, "--topic", "t", "--timeout", "600000", "--batch-size", "1")
    try:
        send(producer, b"first\nsecond\n")  # "second" does not fit: "first" is sent
        wait_for_values(topic, [b"first"])
        send(producer, b"third\n")
        wait_for_values(topic, [b"first", b"second"])
        producer.send_signal(signal.SIGINT)  # Ctrl-C: what was read is written, status 130
        _, err = producer.communicate(timeout=DEADLINE_S)
    finally:
        producer.kill()
    assert producer.returncode == 130, err
    assert "Produced 3 record(s) to topic t." in err.decode()
    assert "Traceback" not in err.decode()
    assert [r.value for r in log_records(topic)] == [b"first", b"second", b"third"]


def test_sigterm_stops_cleanly_too(topic: Path) -> None:
    producer = start_producer(topic, "t", "--linger-ms", "600000", "--batch-size", "1")
    try:
        send(producer, b"a\nb\n")
        wait_for_values(topic, [b"a"])
        producer.send_signal(signal.SIGTERM)
        _, err = producer.communicate(timeout=DEADLINE_S)
    finally:
        producer.kill()
    assert producer.returncode == 128 + signal.SIGTERM, err
    assert [r.value for r in log_records(topic)] == [b"a", b"b"]


# --- Kafka's console producer options -----------------------------------------------------------


def test_kafka_property_spellings(cli: Cli, topic: Path) -> None:
    # parse.key with Kafka's default separator (a tab), then an explicit one, null.marker.
    cli.ok("produce", "--topic", "t", "--property", "parse.key=true", stdin=b"k1\tv1\n")
    cli.ok(
        "produce", "--topic", "t", "--property", "parse.key=true",
        "--property", "key.separator=:", "--property", "null.marker=NULL",
        stdin=b"k2:v:2\nk3:NULL\nNULL:v4\n",
    )  # fmt: skip
    # key.separator without parse.key=true is not used, as in Kafka.
    cli.ok("produce", "t", "--property", "key.separator=:", stdin=b"a:b\n")
    records = log_records(topic)
    assert [(r.key, r.value) for r in records] == [
        (b"k1", b"v1"),
        (b"k2", b"v:2"),
        (b"k3", None),
        (None, b"v4"),
        (None, b"a:b"),
    ]


def test_compression_codec_defaults_to_gzip_without_a_value(cli: Cli, topic: Path) -> None:
    cli.ok("produce", "t", "--compression-codec", stdin=b"x\n")
    cli.ok("produce", "t", "--compression-codec", "zstd", stdin=b"y\n")
    cli.ok("produce", "t", "--producer-property", "compression.type=lz4", stdin=b"z\n")
    cli.ok("produce", "t", stdin=b"w\n")
    codecs = [b.compression for b in log_batches(topic)]  # type: ignore[attr-defined]
    assert codecs == [
        CompressionType.GZIP,
        CompressionType.ZSTD,
        CompressionType.LZ4,
        CompressionType.NONE,
    ]
    assert [r.value for r in log_records(topic)] == [b"x", b"y", b"z", b"w"]


def test_topic_compression_type_wins_over_the_producer_codec(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1", "--config", "compression.type=snappy")
    cli.ok("produce", "t", "--compression-codec", "gzip", stdin=b"x\n")
    assert [b.compression for b in log_batches(data_dir)] == [CompressionType.SNAPPY]  # type: ignore[attr-defined]


def test_producer_config_file_and_precedence(cli: Cli, topic: Path, tmp_path: Path) -> None:
    config = tmp_path / "producer.properties"
    config.write_text("batch.size=1\nlinger.ms=600000\n")
    cli.ok("produce", "t", "--producer.config", str(config), stdin=b"a\nb\nc\n")
    assert len(log_batches(topic)) == 3  # batch.size=1: one record per batch
    # --producer-property wins over the file, and an explicit option over both.
    cli.ok(
        "produce", "t", "--producer.config", str(config),
        "--producer-property", "batch.size=100000", stdin=b"d\ne\n",
    )  # fmt: skip
    assert len(log_batches(topic)) == 4
    cli.ok(
        "produce", "t", "--producer-property", "batch.size=100000", "--batch-size", "1",
        stdin=b"f\ng\n",
    )  # fmt: skip
    assert len(log_batches(topic)) == 6


def test_unsupported_properties_are_named(cli: Cli, topic: Path) -> None:
    result = cli.run("produce", "t", "--producer-property", "acks=all", stdin=b"x\n")
    assert result.status == 1
    assert "producer property 'acks' is not supported" in result.err, result.err
    assert "batch.size, linger.ms, compression.type" in result.err
    result = cli.run("produce", "t", "--property", "parse.headers=true", stdin=b"x\n")
    assert result.status == 1 and "--property 'parse.headers' is not supported" in result.err
    result = cli.run("produce", "t", "--producer-property", "linger.ms=soon", stdin=b"x\n")
    assert result.status == 1 and "linger.ms='soon' is not an integer" in result.err
    result = cli.run("produce", "t", "--topic", "u", stdin=b"x\n")
    assert result.status == 1 and "two topics given" in result.err
    result = cli.run("produce", stdin=b"x\n")
    assert result.status == 1 and "no topic given" in result.err
    assert log_records(topic) == []
