"""``seglog consume`` with kafka-console-consumer.sh's and kcat's options."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_support import Cli

from corpus_location import NO_CORPUS_REASON, corpus_root
from seglog.engine.log_manager import open_log_dirs
from seglog.format.batch import encode_batch
from seglog.format.records import Header, Record, TimestampType


@pytest.fixture
def log(cli: Cli) -> Cli:
    """Topic ``t``: a CreateTime batch (headers, a null key) and a LogAppendTime batch."""
    with open_log_dirs([cli.data_dir]) as manager:
        manager.create_topic("t", 1)
        log = manager.get_log("t", 0)
        log.append(
            encode_batch(
                [
                    Record(0, 1000, b"k0", b"v0", (Header("h", b"x"), Header("n", None))),
                    Record(1, 1001, None, b"v1"),
                ],
                base_offset=0,
            )
        )
        log.append(
            encode_batch(
                [Record(0, 1002, b"k2", None)],
                base_offset=0,
                timestamp_type=TimestampType.LOG_APPEND_TIME,
            )
        )
    return cli


def test_kafka_aliases(log: Cli) -> None:
    out = log.ok("consume", "--topic", "t", "--from-beginning", "--max-messages", "2")
    assert out.out_bytes == b"v0\nv1\n"
    assert out.err == "Processed a total of 2 messages\n"
    assert log.ok("consume", "--topic", "t", "--timeout-ms", "100").out_bytes == b"v0\nv1\nnull\n"
    bad = log.run("consume", "t", "--topic", "u")
    assert bad.status == 1 and "two topics given" in bad.err
    assert log.run("consume").status == 1


def test_property_layout_is_kafkas(log: Cli) -> None:
    got = log.ok(
        "consume",
        "t",
        "--property",
        "print.timestamp=true",
        "--property",
        "print.partition=true",
        "--property",
        "print.offset=true",
        "--property",
        "print.headers=true",
        "--property",
        "print.key=TRUE",
    ).out_bytes.split(b"\n")
    assert got[0] == b"CreateTime:1000\tPartition:0\tOffset:0\th:x,n:null\tk0\tv0"
    assert got[1] == b"CreateTime:1001\tPartition:0\tOffset:1\tNO_HEADERS\tnull\tv1"
    assert got[2].startswith(b"LogAppendTime:")  # the broker's append time, not 1002
    assert got[2].endswith(b"\tPartition:0\tOffset:2\tNO_HEADERS\tk2\tnull")
    custom = log.ok(
        "consume",
        "t",
        "--property",
        "print.key=true",
        "--property",
        "print.value=false",
        "--property",
        "key.separator=|",
        "--property",
        "line.separator=;",
        "--property",
        "null.literal=<none>",
    )
    assert custom.out_bytes == b"k0;<none>;k2;"


def test_property_mistakes_are_errors(log: Cli) -> None:
    typo = log.run("consume", "t", "--property", "print.kye=true")
    assert typo.status == 1 and "did you mean 'print.key'" in typo.err
    assert log.run("consume", "t", "--property", "print.key").status == 1
    mixed = log.run("consume", "t", "--format", "json", "--property", "print.key=true")
    assert mixed.status == 1 and "text output only" in mixed.err


def test_formatters(log: Cli) -> None:
    none = log.ok(
        "consume", "t", "--formatter", "org.apache.kafka.tools.consumer.NoOpMessageFormatter"
    )
    assert none.out_bytes == b"" and none.err == "Processed a total of 3 messages\n"
    default = log.ok("consume", "t", "--formatter", "kafka.tools.DefaultMessageFormatter")
    assert default.out_bytes == b"v0\nv1\nnull\n"
    other = log.run("consume", "t", "--formatter", "kafka.tools.LoggingMessageFormatter")
    assert other.status == 1 and "NoOpMessageFormatter" in other.err


def test_kcat_format(log: Cli) -> None:
    fmt = r"%t[%p]@%o %T k=%k(%K) v=%s(%S) h=%h 100%%\n"
    out = log.ok("consume", "t", "-f", fmt).out_bytes.split(b"\n")
    assert out[0] == b"t[0]@0 1000 k=k0(2) v=v0(2) h=h=x,n=NULL 100%"
    assert out[1] == b"t[0]@1 1001 k=(-1) v=v1(2) h= 100%"
    assert out[2].endswith(b" k=k2(2) v=(-1) h= 100%")
    with_z = log.ok("consume", "t", "-f", r"%k:%s\t", "-Z").out_bytes
    assert with_z == b"k0:v0\tNULL:v1\tk2:NULL\t"
    framed = log.ok("consume", "t", "-f", "%R%s", "--max-records", "1").out_bytes
    assert framed == b"\x00\x00\x00\x02v0"
    assert log.ok("consume", "t", "-f", r"\x41\101\0101\\%o\n", "--max-records", "1").out_bytes == (
        b"AeA\\0\n"
    )
    bad = log.run("consume", "t", "-f", "%x")
    assert bad.status == 1 and "unsupported formatter %x" in bad.err
    assert log.run("consume", "t", "-f", "%o", "--format", "json").status == 1


def test_json_has_timestamp_type(log: Cli) -> None:
    rows = [json.loads(line) for line in log.ok("consume", "t", "--format", "json").lines]
    assert [r["timestampType"] for r in rows] == ["CreateTime", "CreateTime", "LogAppendTime"]
    assert list(rows[0]) == [
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "key",
        "value",
        "headers",
    ]


def test_read_committed_without_transactions_reads_everything(log: Cli) -> None:
    out = log.ok("consume", "t", "--isolation-level", "read_committed")
    assert out.out_bytes == b"v0\nv1\nnull\n"


@pytest.mark.skipif(corpus_root() is None, reason=NO_CORPUS_REASON)
def test_read_committed_reads_a_brokers_committed_transactions(cli: Cli, tmp_path: Path) -> None:
    """ksqlDB's command topic: four transactions, each one record and a COMMIT marker."""
    root = corpus_root()
    assert root is not None
    source = root / "no-licence" / "danielowo-ksql-txn"
    if not source.is_dir():
        pytest.skip(f"{source} is absent from the corpus")
    copy = tmp_path / "txn"
    shutil.copytree(source, copy)
    topic = "_confluent-ksql-default__command_topic"
    args = ("--data-dir", str(copy), "consume", topic, "--format", "json")
    committed = cli.run(*args, "--isolation-level", "read_committed", data_dir=False)
    assert committed.status == 0 and committed.err == "Processed a total of 4 messages\n"
    assert [json.loads(line)["offset"] for line in committed.lines] == [0, 2, 4, 6]
    read = cli.run(*args, "--isolation-level", "read_uncommitted", data_dir=False)
    assert read.status == 0 and read.out_bytes == committed.out_bytes


def test_consume_json_piped_into_produce_json_copies_the_topic(log: Cli) -> None:
    """`consume --format json | produce --format json` copies a topic: consume's own fields
    (topic, offset, timestampType) are accepted and ignored by produce."""
    out = log.ok("consume", "t", "--format", "json").out_bytes
    log.ok("topics", "create", "copy", "--partitions", "1")
    log.ok("produce", "copy", "--format", "json", stdin=out)
    original = [json.loads(line) for line in out.splitlines()]
    copied = [json.loads(line) for line in log.ok("consume", "copy", "--format", "json").lines]
    keep = ("key", "value", "headers", "timestamp")
    assert [{k: r[k] for k in keep} for r in copied] == [{k: r[k] for k in keep} for r in original]
