"""kcat, ``seglog consume`` and the segment files, plus every reader and producer by name.

:func:`every_reading` reads one partition through kcat, confluent-kafka, kafka-python,
aiokafka and ``seglog consume`` (and, from the earliest offset, the segment files decoded by
kafka-python); :func:`assert_all_read` requires each to equal the records produced;
:func:`produce_with` produces through any of the four clients by name.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from serve_python_clients import (
    aiokafka_produce,
    aiokafka_read,
    confluent_produce,
    confluent_read,
    kafka_python_produce,
    kafka_python_read,
)
from serve_records import TIMEOUT_S, Msg, Rec, Start

from support.kafka_oracle import read_partition_dir_with_kafka_python

SRC = Path(__file__).resolve().parents[2] / "src"

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
    properties: Sequence[str] = (),
) -> None:
    """``kcat -P`` of ``key<TAB>value`` lines; ``-Z``: an empty key or value is sent as null;
    ``-H`` headers (``name=value``, or ``name`` for a null value) go on every record."""
    command = [kcat, "-b", bootstrap, "-P", "-t", topic, "-p", str(partition), "-K", "\t", "-Z"]
    if codec is not None:
        command += ["-z", codec]
    for header in headers:
        command += ["-H", header]
    for setting in properties:  # librdkafka settings, name=value
        command += ["-X", setting]
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


# --- seglog itself ----------------------------------------------------------------------------


def seglog_cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    command = [sys.executable, "-m", "seglog.cli", "--data-dir", str(data_dir), *args]
    return subprocess.run(command, check=False, capture_output=True, env=env, timeout=120)


def create_topic(data_dir: Path, topic: str, *configs: str, partitions: int = 1) -> None:
    """``seglog topics create`` on a directory no server holds (before it starts)."""
    args = ["topics", "create", "--topic", topic, "--partitions", str(partitions)]
    for config in configs:
        args += ["--config", config]
    result = seglog_cli(data_dir, *args)
    assert result.returncode == 0, result.stderr.decode()


def seglog_consume(
    data_dir: Path,
    topic: str,
    partition: int = 0,
    start: Start = "earliest",
    isolation: str = "read_uncommitted",
) -> list[Rec]:
    """``seglog consume --format json`` (read-only: works beside a running server)."""
    position = ["--timestamp", str(start)] if isinstance(start, int) else ["--offset", start]
    result = seglog_cli(
        data_dir,
        "consume",
        topic,
        "--partition",
        str(partition),
        *position,
        "--isolation-level",
        isolation,
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    out: list[Rec] = []
    for line in result.stdout.decode().splitlines():
        entry = json.loads(line)
        if "headers_base64" in entry:
            headers = tuple(
                (base64.b64decode(k).decode(), None if v is None else base64.b64decode(v))
                for k, v in entry["headers_base64"]
            )
        else:
            headers = tuple(
                (k, None if v is None else v.encode()) for k, v in entry.get("headers", {}).items()
            )
        key, value = _json_bytes(entry, "key"), _json_bytes(entry, "value")
        out.append((entry["offset"], entry["timestamp"], key, value, headers))
    return out


def _json_bytes(entry: dict[str, object], name: str) -> bytes | None:
    """A key or value of ``seglog consume --format json``: text, or ``NAME_base64``."""
    encoded = entry.get(f"{name}_base64")
    if isinstance(encoded, str):
        return base64.b64decode(encoded)
    text = entry[name]
    return None if text is None else str(text).encode()


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
