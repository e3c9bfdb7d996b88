"""The four real Kafka clients, each driven the same way, for the ``seglog serve`` tests.

Every reader returns the records of one partition as :data:`Rec` tuples ``(offset, timestamp,
key, value, headers)`` with ``headers`` a tuple of ``(key, value-or-None)`` pairs, so the readings
of kcat, confluent-kafka (librdkafka), kafka-python, aiokafka, ``seglog consume`` and the segment
files decoded by kafka-python compare with ``==``. Every writer takes :class:`Msg` values.

Start positions (:data:`Start`): ``"earliest"``, ``"latest"`` or an ``int`` timestamp (the first
record at or after it, Kafka's ListOffsets). Readers read to the partition's end as it is when
they start (each client's "end of partition" signal) and stop.

Values are UTF-8 text so that kcat's JSON envelope (``-J``) carries them unchanged.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.kafka_oracle import read_partition_dir_with_kafka_python

Headers = tuple[tuple[str, bytes | None], ...]
Rec = tuple[int, int, bytes | None, bytes | None, Headers]
Start = str | int
TIMEOUT_S = 30.0
SRC = Path(__file__).resolve().parents[2] / "src"


@dataclass(frozen=True)
class Msg:
    """One record to produce; ``timestamp`` None lets the client stamp it."""

    key: bytes | None
    value: bytes | None
    headers: Headers = ()
    timestamp: int | None = None


def sample_messages(count: int, *, base_ts: int, tag: str, null_headers: bool = True) -> list[Msg]:
    """Keys, null keys, null values (never both: kafka-python and aiokafka refuse that),
    repeated, empty and (with ``null_headers``) null header values, increasing timestamps.
    kafka-python's producer refuses a null header value, so its runs leave that header out."""
    out = []
    for i in range(count):
        key = None if i % 5 == 3 else f"{tag}-key-{i % 7}".encode()
        null_value = i % 6 == 4 and key is not None
        value = None if null_value else f"{tag} value {i} {'x' * (i % 50)}".encode()
        headers: Headers = ()
        if i % 3 == 0:
            headers = (("h", f"{i}".encode()), ("empty", b""), ("h", b"again"))
            if null_headers:
                headers += (("null", None),)
        out.append(Msg(key, value, headers, base_ts + i * 10))
    return out


def expected_records(messages: Sequence[Msg], first_offset: int = 0) -> list[Rec]:
    return [
        (
            first_offset + i,
            m.timestamp if m.timestamp is not None else -1,
            m.key,
            m.value,
            m.headers,
        )
        for i, m in enumerate(messages)
    ]


def _headers(pairs: Any) -> Headers:
    return tuple((k, None if v is None else bytes(v)) for k, v in (pairs or ()))


# --- kcat -----------------------------------------------------------------------------------


def kcat_produce(
    kcat: str,
    bootstrap: str,
    topic: str,
    lines: Sequence[tuple[str, str]],
    *,
    partition: int = 0,
    codec: str | None = None,
    headers: Sequence[str] = (),
) -> None:
    """``kcat -P`` of ``key<TAB>value`` lines; ``-Z``: an empty key or value is sent as null;
    ``-H`` headers (``name=value``, or ``name`` for a null value) go on every record."""
    command = [kcat, "-b", bootstrap, "-P", "-t", topic, "-p", str(partition), "-K", "\t", "-Z"]
    if codec is not None:
        command += ["-z", codec]
    for header in headers:
        command += ["-H", header]
    text = "".join(f"{k}\t{v}\n" for k, v in lines)
    result = subprocess.run(
        command, check=False, input=text.encode(), capture_output=True, timeout=TIMEOUT_S
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")


def kcat_read(
    kcat: str, bootstrap: str, topic: str, partition: int = 0, start: Start = "earliest"
) -> list[Rec]:
    """``kcat -C -o beginning|end|s@TS -e -J``: the records up to the end of the partition."""
    offset = {"earliest": "beginning", "latest": "end"}.get(str(start), f"s@{start}")
    command = [kcat, "-b", bootstrap, "-C", "-t", topic, "-p", str(partition)]
    command += ["-o", offset, "-e", "-J"]
    result = subprocess.run(command, check=False, capture_output=True, timeout=TIMEOUT_S)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    out: list[Rec] = []
    for line in result.stdout.decode().splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        flat = entry.get("headers") or []
        headers = tuple(
            (flat[i], None if flat[i + 1] is None else flat[i + 1].encode())
            for i in range(0, len(flat), 2)
        )
        key = None if entry["key"] is None else entry["key"].encode()
        value = None if entry["payload"] is None else entry["payload"].encode()
        out.append((entry["offset"], entry["ts"], key, value, headers))
    return out


# --- confluent-kafka (librdkafka) -----------------------------------------------------------


def confluent_produce(
    bootstrap: str,
    topic: str,
    messages: Sequence[Msg],
    *,
    partition: int = 0,
    extra: dict[str, Any] | None = None,
) -> list[int]:
    """Produce and flush; returns the offsets the deliveries reported (raises on any error)."""
    from confluent_kafka import Producer

    config = {"bootstrap.servers": bootstrap, "linger.ms": 5} | (extra or {})
    producer = Producer(config)
    offsets: list[int] = []
    errors: list[str] = []

    def delivered(error: Any, message: Any) -> None:
        if error is not None:
            errors.append(str(error))
        else:
            offsets.append(message.offset())

    for m in messages:
        kwargs: dict[str, Any] = {"partition": partition, "on_delivery": delivered}
        if m.headers:
            kwargs["headers"] = list(m.headers)
        if m.timestamp is not None:
            kwargs["timestamp"] = m.timestamp
        producer.produce(topic, value=m.value, key=m.key, **kwargs)
        producer.poll(0)
    remaining = producer.flush(TIMEOUT_S)
    assert remaining == 0 and not errors, f"{remaining} undelivered, errors: {errors[:3]}"
    return offsets


def _confluent_consumer(bootstrap: str) -> Any:
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "seglog-tests-unused",  # assign() only: nothing is committed
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )


def confluent_offset_for(bootstrap: str, topic: str, partition: int, start: Start) -> int:
    """The offset ``start`` names (offsets_for_times for a timestamp, watermarks otherwise)."""
    from confluent_kafka import TopicPartition

    consumer = _confluent_consumer(bootstrap)
    try:
        if isinstance(start, int):
            [found] = consumer.offsets_for_times(
                [TopicPartition(topic, partition, start)], timeout=TIMEOUT_S
            )
            assert found.error is None, found.error
            return int(found.offset)
        low, high = consumer.get_watermark_offsets(
            TopicPartition(topic, partition), timeout=TIMEOUT_S
        )
        return int(low if start == "earliest" else high)
    finally:
        consumer.close()


def confluent_read(
    bootstrap: str, topic: str, partition: int = 0, start: Start = "earliest"
) -> list[Rec]:
    """``Consumer.assign`` at OFFSET_BEGINNING / OFFSET_END / offsets_for_times, to EOF."""
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaError, TopicPartition

    consumer = _confluent_consumer(bootstrap)
    try:
        if isinstance(start, int):
            [position] = consumer.offsets_for_times(
                [TopicPartition(topic, partition, start)], timeout=TIMEOUT_S
            )
            assert position.error is None, position.error
        else:
            offset = OFFSET_BEGINNING if start == "earliest" else OFFSET_END
            position = TopicPartition(topic, partition, offset)
        consumer.assign([position])
        out: list[Rec] = []
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return out
                raise AssertionError(f"confluent-kafka consumer error: {error}")
            out.append(
                (
                    message.offset(),
                    message.timestamp()[1],
                    message.key(),
                    message.value(),
                    _headers(message.headers()),
                )
            )
        raise AssertionError(f"no end of partition within {TIMEOUT_S} s; read {len(out)}")
    finally:
        consumer.close()


# --- kafka-python ---------------------------------------------------------------------------


def kafka_python_produce(
    bootstrap: str, topic: str, messages: Sequence[Msg], *, partition: int = 0, **config: Any
) -> list[int]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **config)
    try:
        futures = [
            producer.send(
                topic,
                value=m.value,
                key=m.key,
                headers=list(m.headers),
                partition=partition,
                timestamp_ms=m.timestamp,
            )
            for m in messages
        ]
        producer.flush(timeout=TIMEOUT_S)
        return [f.get(timeout=TIMEOUT_S).offset for f in futures]
    finally:
        producer.close(timeout=TIMEOUT_S)


def kafka_python_read(
    bootstrap: str, topic: str, partition: int = 0, start: Start = "earliest"
) -> list[Rec]:
    """``KafkaConsumer.assign`` + seek_to_beginning / seek_to_end / offsets_for_times."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        if start == "earliest":
            consumer.seek_to_beginning(tp)
        elif start == "latest":
            consumer.seek_to_end(tp)
        else:
            found = consumer.offsets_for_times({tp: int(start)})[tp]
            if found is None:
                return []
            consumer.seek(tp, found.offset)
        end = consumer.end_offsets([tp])[tp]
        out: list[Rec] = []
        deadline = time.monotonic() + TIMEOUT_S
        while consumer.position(tp) < end:
            assert time.monotonic() < deadline, f"stuck at {consumer.position(tp)} < {end}"
            for record in consumer.poll(timeout_ms=500).get(tp, []):
                out.append(
                    (
                        record.offset,
                        record.timestamp,
                        record.key,
                        record.value,
                        _headers(record.headers),
                    )
                )
        return out
    finally:
        consumer.close()


# --- aiokafka -------------------------------------------------------------------------------


async def _aiokafka_produce(
    bootstrap: str, topic: str, messages: Sequence[Msg], partition: int, config: dict[str, Any]
) -> list[int]:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **config)
    await producer.start()
    try:
        futures = [
            await producer.send(
                topic,
                value=m.value,
                key=m.key,
                headers=list(m.headers),
                partition=partition,
                timestamp_ms=m.timestamp,
            )
            for m in messages
        ]
        await producer.flush()
        return [(await f).offset for f in futures]
    finally:
        await producer.stop()


def aiokafka_produce(
    bootstrap: str, topic: str, messages: Sequence[Msg], *, partition: int = 0, **config: Any
) -> list[int]:
    return asyncio.run(
        asyncio.wait_for(
            _aiokafka_produce(bootstrap, topic, messages, partition, config), TIMEOUT_S
        )
    )


async def _aiokafka_read(bootstrap: str, topic: str, partition: int, start: Start) -> list[Rec]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        if start == "earliest":
            await consumer.seek_to_beginning(tp)
        elif start == "latest":
            await consumer.seek_to_end(tp)
        else:
            found = (await consumer.offsets_for_times({tp: int(start)}))[tp]
            if found is None:
                return []
            consumer.seek(tp, found.offset)
        end = (await consumer.end_offsets([tp]))[tp]
        out: list[Rec] = []
        while await consumer.position(tp) < end:
            batch = await consumer.getmany(tp, timeout_ms=500)
            for record in batch.get(tp, []):
                out.append(
                    (
                        record.offset,
                        record.timestamp,
                        record.key,
                        record.value,
                        _headers(record.headers),
                    )
                )
        return out
    finally:
        await consumer.stop()


def aiokafka_read(
    bootstrap: str, topic: str, partition: int = 0, start: Start = "earliest"
) -> list[Rec]:
    return asyncio.run(
        asyncio.wait_for(_aiokafka_read(bootstrap, topic, partition, start), TIMEOUT_S)
    )


# --- seglog itself ----------------------------------------------------------------------------


def seglog_cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    command = [sys.executable, "-m", "seglog.cli", "--data-dir", str(data_dir), *args]
    return subprocess.run(command, check=False, capture_output=True, env=env, timeout=120)


def seglog_consume(
    data_dir: Path, topic: str, partition: int = 0, start: Start = "earliest"
) -> list[Rec]:
    """``seglog consume --format json`` (read-only: works beside a running server)."""
    position = ["--timestamp", str(start)] if isinstance(start, int) else ["--offset", start]
    result = seglog_cli(
        data_dir, "consume", topic, "--partition", str(partition), *position, "--format", "json"
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    out: list[Rec] = []
    for line in result.stdout.decode().splitlines():
        entry = json.loads(line)
        assert "key_base64" not in entry and "value_base64" not in entry, entry
        if "headers_base64" in entry:
            import base64

            headers = tuple(
                (base64.b64decode(k).decode(), None if v is None else base64.b64decode(v))
                for k, v in entry["headers_base64"]
            )
        else:
            headers = tuple(
                (k, None if v is None else v.encode()) for k, v in entry.get("headers", {}).items()
            )
        key = None if entry["key"] is None else entry["key"].encode()
        value = None if entry["value"] is None else entry["value"].encode()
        out.append((entry["offset"], entry["timestamp"], key, value, headers))
    return out


def disk_records(data_dir: Path, topic: str, partition: int = 0) -> list[Rec]:
    """The partition's segment files as kafka-python's record decoder reads them."""
    return [
        (offset, ts, key, value, tuple(headers))
        for offset, ts, key, value, headers in read_partition_dir_with_kafka_python(
            data_dir / f"{topic}-{partition}"
        )
    ]


def every_reading(
    kcat: str,
    bootstrap: str,
    data_dir: Path,
    topic: str,
    partition: int = 0,
    start: Start = "earliest",
) -> dict[str, list[Rec]]:
    """The same partition read by every client and by seglog (and, from earliest, the disk)."""
    readings = {
        "kcat": kcat_read(kcat, bootstrap, topic, partition, start),
        "confluent-kafka": confluent_read(bootstrap, topic, partition, start),
        "kafka-python": kafka_python_read(bootstrap, topic, partition, start),
        "aiokafka": aiokafka_read(bootstrap, topic, partition, start),
        "seglog consume": seglog_consume(data_dir, topic, partition, start),
    }
    if start == "earliest":
        readings["segment files (kafka-python)"] = disk_records(data_dir, topic, partition)
    return readings


def assert_all_read(readings: dict[str, list[Rec]], expected: list[Rec]) -> None:
    """Every reader saw exactly ``expected`` (named in the failure)."""
    wrong = {name: got for name, got in readings.items() if got != expected}
    if wrong:
        name, got = next(iter(wrong.items()))
        first = next(
            (i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b),
            min(len(got), len(expected)),
        )
        raise AssertionError(
            f"{sorted(wrong)} differ from the records produced; {name}: {len(got)} records vs "
            f"{len(expected)}, first difference at #{first}: "
            f"{got[first] if first < len(got) else None!r} != "
            f"{expected[first] if first < len(expected) else None!r}"
        )


# --- one entry point for every producer --------------------------------------------------------

PRODUCERS = ("kcat", "confluent-kafka", "kafka-python", "aiokafka")
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def _kcat_header(name: str, value: bytes | None) -> str:
    return name if value is None else f"{name}={value.decode()}"


def produce_with(
    client: str,
    kcat: str,
    bootstrap: str,
    topic: str,
    messages: Sequence[Msg],
    *,
    codec: str = "none",
    idempotent: bool = False,
    partition: int = 0,
) -> None:
    """Produce ``messages`` in order through ``client`` with ``codec``.

    kcat takes its headers per run and stamps the timestamps itself: each run of messages
    sharing headers is one ``kcat -P`` (null key / value as an empty field with ``-Z``, so the
    messages must have no empty key or value), and the caller takes the timestamps from a
    reading. kcat has no idempotence switch (librdkafka's default: off).
    """
    if client == "kcat":
        assert not idempotent, "kcat runs librdkafka's default producer"
        start = 0
        while start < len(messages):
            end = start
            while end < len(messages) and messages[end].headers == messages[start].headers:
                end += 1
            lines = [
                ((m.key or b"").decode(), (m.value or b"").decode()) for m in messages[start:end]
            ]
            headers = [_kcat_header(k, v) for k, v in messages[start].headers]
            compression = None if codec == "none" else codec
            kcat_produce(
                kcat,
                bootstrap,
                topic,
                lines,
                partition=partition,
                codec=compression,
                headers=headers,
            )
            start = end
    elif client == "confluent-kafka":
        extra = {"compression.type": codec, "enable.idempotence": idempotent}
        confluent_produce(bootstrap, topic, messages, partition=partition, extra=extra)
    elif client == "kafka-python":
        compression = None if codec == "none" else codec
        kafka_python_produce(
            bootstrap,
            topic,
            messages,
            partition=partition,
            compression_type=compression,
            enable_idempotence=idempotent,
        )
    elif client == "aiokafka":
        compression = None if codec == "none" else codec
        aiokafka_produce(
            bootstrap,
            topic,
            messages,
            partition=partition,
            compression_type=compression,
            enable_idempotence=idempotent,
        )
    else:
        raise ValueError(f"unknown client {client!r}")
