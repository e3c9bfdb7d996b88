"""``seglog produce`` and ``seglog consume``: text and JSON lines, partitioning, start positions."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import Cli
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from seglog.config import BrokerConfig
from seglog.engine.log_manager import LogManager

TS = 1_700_000_000_000


def records(cli: Cli, *args: str) -> list[dict[str, Any]]:
    """``consume --format json`` output, parsed."""
    result = cli.ok("consume", *args, "--format", "json")
    return [json.loads(line) for line in result.lines]


def kafka_partition(key: bytes, partitions: int) -> int:
    """Where kafka-python's DefaultPartitioner (Kafka's murmur2 rule) puts ``key``."""
    return (kafka_python_murmur2(key) & 0x7FFFFFFF) % partitions


def test_text_with_key_separator_and_null_marker_then_json(cli: Cli) -> None:
    cli.ok("topics", "create", "prices", "--partitions", "1")
    result = cli.ok(
        "produce",
        "prices",
        "--key-separator",
        ":",
        "--null-value",
        "<null>",
        stdin=b"AAPL:189.5\nMSFT:402.1\n\nAAPL:<null>\r\nGOOG:a:b\nMSFT:\n",
    )
    assert result.err.splitlines() == [
        "Produced 5 record(s) to topic prices.",
        "  partition 0: offsets 0..4 (5)",
    ]
    got = records(cli, "prices")
    assert [(r["offset"], r["key"], r["value"]) for r in got] == [
        (0, "AAPL", "189.5"),
        (1, "MSFT", "402.1"),
        (2, "AAPL", None),  # the marker is a tombstone; "\r\n" ends a line too
        (3, "GOOG", "a:b"),  # split at the first separator only
        (4, "MSFT", ""),  # an empty value is not null
    ]
    assert all(r["topic"] == "prices" and r["partition"] == 0 and r["headers"] == {} for r in got)
    assert all(isinstance(r["timestamp"], int) and r["timestamp"] > 0 for r in got)
    assert set(got[0]) == {
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "key",
        "value",
        "headers",
    }


def test_text_without_separator_has_null_keys_and_round_robin(cli: Cli) -> None:
    cli.ok("topics", "create", "t", "--partitions", "3")
    cli.ok("produce", "t", stdin=b"".join(b"v%d\n" % i for i in range(6)))
    got = records(cli, "t")
    assert all(r["key"] is None for r in got)
    by_partition = {p: [r["value"] for r in got if r["partition"] == p] for p in range(3)}
    assert by_partition == {0: ["v0", "v3"], 1: ["v1", "v4"], 2: ["v2", "v5"]}
    # All partitions, in partition order, each in offset order.
    assert [(r["partition"], r["offset"]) for r in got] == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
        (2, 0),
        (2, 1),
    ]


def test_keyed_records_land_on_the_murmur2_partition(cli: Cli) -> None:
    partitions = 7
    cli.ok("topics", "create", "t", "--partitions", str(partitions))
    keys = [f"key-{i}".encode() for i in range(200)] + [b"", b"a", "ключ".encode(), b"\xff\xfe"]
    stdin = b"".join(key + b"\t" + b"value\n" for key in keys)
    cli.ok("produce", "t", "--key-separator", "\t", stdin=stdin)
    got = records(cli, "t")
    assert len(got) == len(keys)
    for record in got:
        key = (
            base64.b64decode(record["key_base64"])
            if "key_base64" in record
            else record["key"].encode()
        )
        assert record["partition"] == kafka_partition(key, partitions), key


def test_json_lines_with_headers_timestamp_partition(cli: Cli) -> None:
    cli.ok("topics", "create", "t", "--partitions", "2")
    lines = [
        {
            "key": "k",
            "value": "v",
            "timestamp": TS,
            "headers": {"h": "x", "n": None},
            "partition": 1,
        },
        {"value": "only-value", "partition": 0, "timestamp": TS + 1},
        {"key": None, "value": None, "partition": 0, "timestamp": TS + 2},
        {"key": "k2", "value": "é", "headers": {}, "timestamp": TS + 3, "partition": 1},
        {
            "key_base64": base64.b64encode(b"\x00\xff").decode(),
            "value_base64": "gA==",
            "headers_base64": [["aA==", "/w=="], ["aA==", None]],
            "timestamp": TS + 4,
            "partition": 1,
        },
    ]
    stdin = "\n".join(json.dumps(line, ensure_ascii=False) for line in lines).encode() + b"\n"
    result = cli.ok("produce", "t", "--format", "json", stdin=stdin)
    assert "Produced 5 record(s) to topic t." in result.err
    assert "  partition 0: offsets 0..1 (2)" in result.err
    assert "  partition 1: offsets 0..2 (3)" in result.err
    got = records(cli, "t")
    assert got == [
        {
            "topic": "t",
            "partition": 0,
            "offset": 0,
            "timestamp": TS + 1,
            "timestampType": "CreateTime",
            "key": None,
            "value": "only-value",
            "headers": {},
        },
        {
            "topic": "t",
            "partition": 0,
            "offset": 1,
            "timestamp": TS + 2,
            "timestampType": "CreateTime",
            "key": None,
            "value": None,
            "headers": {},
        },
        {
            "topic": "t",
            "partition": 1,
            "offset": 0,
            "timestamp": TS,
            "timestampType": "CreateTime",
            "key": "k",
            "value": "v",
            "headers": {"h": "x", "n": None},
        },
        {
            "topic": "t",
            "partition": 1,
            "offset": 1,
            "timestamp": TS + 3,
            "timestampType": "CreateTime",
            "key": "k2",
            "value": "é",
            "headers": {},
        },
        # Not UTF-8, and a repeated header key: the _base64 twins, exactly as produced.
        {
            "topic": "t",
            "partition": 1,
            "offset": 2,
            "timestamp": TS + 4,
            "timestampType": "CreateTime",
            "key_base64": "AP8=",
            "value_base64": "gA==",
            "headers_base64": [["aA==", "/w=="], ["aA==", None]],
        },
    ]


def test_consume_json_output_produces_the_same_records(cli: Cli) -> None:
    cli.ok("topics", "create", "a", "--partitions", "2")
    cli.ok("topics", "create", "b", "--partitions", "2")
    stdin = b"k1\tv1\nk2\t\xc3\x28\n\xff\t\n"
    cli.ok("produce", "a", "--key-separator", "\t", stdin=stdin)
    original = records(cli, "a")
    replay = [
        json.dumps({k: v for k, v in r.items() if k not in ("topic", "offset", "timestampType")})
        for r in original
    ]
    cli.ok("produce", "b", "--format", "json", stdin="\n".join(replay).encode())
    copied = records(cli, "b")
    assert [{**r, "topic": "a"} for r in copied] == original


def test_text_consume_writes_the_bytes(cli: Cli) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    cli.ok(
        "produce",
        "t",
        "--key-separator",
        "=",
        "--null-value",
        "NULL",
        stdin=b"k=v\nk2=\xff\xfe\n=NULL\n",
    )
    assert cli.ok("consume", "t").out_bytes == b"v\n\xff\xfe\nnull\n"
    assert cli.ok("consume", "t", "--print-key").out_bytes == b"k\tv\nk2\t\xff\xfe\n\tnull\n"
    out = cli.ok("consume", "t", "--print-key", "--key-separator", " -> ", "--null-value", "~")
    assert out.out_bytes == b"k -> v\nk2 -> \xff\xfe\n -> ~\n"
    assert out.err == "Processed a total of 3 messages\n"


def test_start_positions(cli: Cli) -> None:
    cli.ok("topics", "create", "t", "--partitions", "2")
    lines = [
        json.dumps({"value": f"v{i}", "timestamp": TS + 10 * i, "partition": i % 2})
        for i in range(10)
    ]
    cli.ok("produce", "t", "--format", "json", stdin="\n".join(lines).encode())

    latest = cli.ok("consume", "t", "--offset", "latest")
    assert latest.out == ""
    assert latest.err == "Processed a total of 0 messages\n"
    assert [r["value"] for r in records(cli, "t", "--offset", "earliest", "--partition", "1")] == [
        "v1",
        "v3",
        "v5",
        "v7",
        "v9",
    ]
    assert [r["value"] for r in records(cli, "t", "--partition", "0", "--offset", "3")] == [
        "v6",
        "v8",
    ]
    assert records(cli, "t", "--partition", "0", "--offset", "5") == []  # the log end
    # --timestamp: the first offset with timestamp >= MS, per partition.
    got = records(cli, "t", "--timestamp", str(TS + 55))
    assert [(r["partition"], r["value"]) for r in got] == [
        (0, "v6"),
        (0, "v8"),
        (1, "v7"),
        (1, "v9"),
    ]
    assert records(cli, "t", "--timestamp", str(TS + 90)) == [
        {
            "topic": "t",
            "partition": 1,
            "offset": 4,
            "timestamp": TS + 90,
            "timestampType": "CreateTime",
            "key": None,
            "value": "v9",
            "headers": {},
        },
    ]
    assert records(cli, "t", "--timestamp", str(TS + 91)) == []
    assert len(records(cli, "t", "--timestamp", "0")) == 10
    # --max-records counts over all partitions.
    got = records(cli, "t", "--max-records", "7")
    assert [(r["partition"], r["offset"]) for r in got] == [(0, i) for i in range(5)] + [
        (1, 0),
        (1, 1),
    ]
    assert len(records(cli, "t", "--max-records", "3", "--partition", "1", "--offset", "1")) == 3


def test_many_records_cross_fetches_and_segments(cli: Cli) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1", "--config", "segment.bytes=4096")
    count = 3000
    cli.ok("produce", "t", stdin=b"".join(b"value-%05d\n" % i for i in range(count)))
    described = json.loads(cli.ok("topics", "describe", "t", "--json").out)
    assert len(described["partitions"][0]["segments"]) > 1
    out = cli.ok("consume", "t").lines
    assert out == [f"value-{i:05d}" for i in range(count)]
    assert cli.ok("consume", "t", "--partition", "0", "--offset", "2990").lines == [
        f"value-{i:05d}" for i in range(2990, count)
    ]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"not json", "not JSON"),
        (b"[1, 2]", "expected a JSON object, got an array"),
        (b'"v"', "expected a JSON object, got a string"),
        (b"null", "expected a JSON object, got null"),
        (b'{"key": "k"}', "'value' is required"),
        (b'{"value": "v", "topics": "t"}', "unknown field(s) 'topics'"),
        (b'{"value": "v", "Value": "w"}', "unknown field(s) 'Value'"),
        (b'{"value": 1}', "'value' must be a string or null, not a number"),
        (b'{"value": "v", "key": ["k"]}', "'key' must be a string or null, not an array"),
        (b'{"value": "v", "timestamp": "1"}', "'timestamp' must be an integer, not a string"),
        (b'{"value": "v", "timestamp": 1.5}', "'timestamp' must be an integer, not a number"),
        (b'{"value": "v", "timestamp": true}', "'timestamp' must be an integer, not a boolean"),
        (b'{"value": "v", "timestamp": -1}', "'timestamp' -1 is outside"),
        (b'{"value": "v", "partition": 9}', "the topic has no partition 9"),
        (b'{"value": "v", "partition": -1}', "'partition' -1 is outside"),
        (b'{"value": "v", "headers": ["h"]}', "'headers' must be an object"),
        (b'{"value": "v", "headers": {"h": 1}}', "header 'h' must be a string or null"),
        (b'{"value": "v", "value": "w"}', "key 'value' is given twice"),
        (b'{"value": "v", "value_base64": "dg=="}', "give 'value' or 'value_base64'"),
        (b'{"value_base64": "not base64!"}', "'value_base64' is not valid base64"),
        (b'{"value": "v", "headers_base64": [["aA=="]]}', "'headers_base64' entries"),
        (b'{"value": "\\ud800"}', "'value' is not valid Unicode"),
        (b'{"value": "\xff"}', "not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_bad_json_line_is_an_error_naming_the_line(cli: Cli, line: bytes, reason: str) -> None:
    cli.ok("topics", "create", "t", "--partitions", "2")
    stdin = b'{"value": "first"}\n\n{"value": "second"}\n' + line + b'\n{"value": "after"}\n'
    result = cli.run("produce", "t", "--format", "json", stdin=stdin)
    assert result.status == 1
    error = [line for line in result.err.splitlines() if line.startswith("seglog: error:")]
    assert error == [error[0]] and error[0].startswith("seglog: error: line 4: "), result.err
    assert reason in error[0]
    assert "Traceback" not in result.err
    # The lines before the bad one were produced (and said so); the ones after were not.
    assert "Produced 2 record(s) to topic t." in result.err
    assert sorted(r["value"] for r in records(cli, "t")) == ["first", "second"]


def test_text_line_without_separator_names_the_line(cli: Cli) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    result = cli.run("produce", "t", "--key-separator", ":", stdin=b"a:1\nb:2\n\nno separator\n")
    assert result.status == 1
    assert "seglog: error: line 4: no key separator ':' in the line" in result.err
    assert [r["key"] for r in records(cli, "t")] == ["a", "b"]


def test_line_length_is_bounded(cli: Cli) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    ok = cli.run("produce", "t", "--max-line-bytes", "10", stdin=b"0123456789\r\nabc\n")
    assert ok.status == 0, ok.err
    too_long = cli.run("produce", "t", "--max-line-bytes", "10", stdin=b"abc\n01234567890\n")
    assert too_long.status == 1
    assert "line 2: longer than --max-line-bytes 10" in too_long.err
    unterminated = cli.run("produce", "t", "--max-line-bytes", "10", stdin=b"x" * 100)
    assert unterminated.status == 1 and "line 1: longer than" in unterminated.err
    assert [r["value"] for r in records(cli, "t")] == ["0123456789", "abc", "abc"]


def test_produce_and_consume_errors(cli: Cli) -> None:
    cli.ok("topics", "create", "t", "--partitions", "2")
    cases = [
        (("produce", "nope"), "topic 'nope' does not exist"),
        (("consume", "nope"), "topic 'nope' does not exist"),
        (("consume", "t", "--partition", "5"), "topic 't' has no partition 5"),
        (("consume", "t", "--offset", "3"), "--offset N needs --partition"),
        (("consume", "t", "--partition", "0", "--offset", "3"), "offset 3 is outside [0, 0]"),
        (("produce", "t", "--format", "json", "--key-separator", ":"), "for text input"),
        (("produce", "t", "--key-separator", ""), "--key-separator cannot be empty"),
    ]
    for args, message in cases:
        result = cli.run(*args, stdin=b"x\n")
        assert result.status == 1, args
        assert result.err.splitlines()[-1].startswith("seglog: error: "), result.err
        assert message in result.err, (args, result.err)
    for args in (
        ("consume", "t", "--offset", "first"),
        ("consume", "t", "--offset", "-1"),
        ("consume", "t", "--offset", "1", "--timestamp", "5"),
        ("consume", "t", "--max-records", "0"),
        ("produce", "t", "--format", "xml"),
    ):
        assert cli.run(*args).status == 2, args


def test_record_too_large_for_the_topic_is_an_error(cli: Cli) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1", "--config", "max.message.bytes=200")
    result = cli.run("produce", "t", stdin=b"small\n" + b"x" * 500 + b"\n")
    assert result.status == 1
    assert result.err.splitlines()[-1].startswith("seglog: error: ")
    assert "Traceback" not in result.err


def test_produce_is_durable_across_opens(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "t", "--partitions", "1")
    cli.ok("produce", "t", stdin=b"a\nb\n")
    cli.ok("produce", "t", stdin=b"c\n")
    assert cli.ok("consume", "t").lines == ["a", "b", "c"]
    # The engine sees what the command wrote, from a clean shutdown.
    broker = BrokerConfig.from_properties({"log.dirs": str(data_dir)})
    with LogManager.open(broker, read_only=True) as manager:
        log = manager.get_log("t", 0)
        assert (log.log_start_offset, log.log_end_offset) == (0, 3)
        assert [r.value for r in log.read_records(0, 10)] == [b"a", b"b", b"c"]
