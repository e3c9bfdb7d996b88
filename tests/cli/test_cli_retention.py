"""``seglog retention --once`` and ``seglog delete-records``: real files in a temp data dir."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import Cli

from seglog.cli import delete_records

OLD_TS = 1_000_000_000_000  # 2001: far past any retention.ms used here
SEGMENT_BYTES = "300"  # a few records per segment


def records(cli: Cli, *args: str) -> list[dict[str, Any]]:
    """``consume --format json`` output, parsed."""
    return [json.loads(line) for line in cli.ok("consume", *args, "--format", "json").lines]


def produce_json(cli: Cli, topic: str, rows: list[dict[str, Any]]) -> None:
    """``produce --format json`` of ``rows``."""
    stdin = "".join(json.dumps(row) + "\n" for row in rows).encode()
    cli.ok("produce", topic, "--format", "json", "--batch-size", "40", stdin=stdin)


def describe(cli: Cli, topic: str) -> dict[str, Any]:
    """``topics describe --json``, parsed."""
    result: dict[str, Any] = json.loads(cli.ok("topics", "describe", topic, "--json").out)
    return result


def segments(cli: Cli, topic: str, partition: int = 0) -> list[tuple[int, int]]:
    """``(base_offset, size_bytes)`` of each segment of a partition."""
    part = describe(cli, topic)["partitions"][partition]
    return [(s["base_offset"], s["size_bytes"]) for s in part["segments"]]


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and mtime (ns): to see that nothing changed."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")
    }


def create(cli: Cli, topic: str, *configs: str, partitions: int = 1) -> None:
    """``topics create`` with small segments and ``configs``."""
    args = ["--config", f"segment.bytes={SEGMENT_BYTES}"]
    for config in configs:
        args += ["--config", config]
    cli.ok("topics", "create", topic, "--partitions", str(partitions), *args)


def write_offsets(tmp_path: Path, document: object, name: str = "offsets.json") -> Path:
    """An ``--offset-json-file`` holding ``document`` (a str is written as is)."""
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def offsets_file(tmp_path: Path, *entries: tuple[str, int, int]) -> Path:
    """An offsets file in Kafka's format for ``(topic, partition, offset)`` entries."""
    partitions = [{"topic": t, "partition": p, "offset": o} for t, p, o in entries]
    return write_offsets(tmp_path, {"partitions": partitions, "version": 1})


# --- retention --once -------------------------------------------------------------------------


def test_once_is_required(cli: Cli, data_dir: Path) -> None:
    create(cli, "t")
    result = cli.run("retention")
    assert result.status == 2
    assert "--once is required" in result.err and "seglog maintain" in result.err
    assert result.err.startswith("usage: seglog retention")


def test_retention_by_time_dry_run_then_for_real(cli: Cli, data_dir: Path) -> None:
    create(cli, "t", "retention.ms=60000")
    old = [{"key": f"k{i}", "value": f"old-{i}", "timestamp": OLD_TS + i} for i in range(30)]
    produce_json(cli, "t", old)
    produce_json(cli, "t", [{"key": f"n{i}", "value": f"new-{i}"} for i in range(3)])  # now
    before = segments(cli, "t")
    assert len(before) >= 4
    # The segments wholly made of old records go; the one holding offset 30 (a new record,
    # its largest timestamp is now) stays, and so does every later one.
    keep_from = max(base for base, _ in before if base <= 30)
    doomed = [(base, size) for base, size in before if base < keep_from]
    assert doomed

    files = snapshot(data_dir)
    dry = cli.ok("retention", "--once", "--dry-run")
    assert snapshot(data_dir) == files  # not a byte, name or mtime changed
    assert dry.lines[0].split() == ["PARTITION", "BASE_OFFSET", "SIZE_BYTES", "RULE"]
    assert [line.split() for line in dry.lines[1:-1]] == [
        ["t-0", str(base), str(size), "retention.ms"] for base, size in doomed
    ]
    total = sum(size for _, size in doomed)
    assert dry.lines[-1] == (
        f"Would delete {len(doomed)} segments ({total} bytes) from 1 partition; "
        "nothing was changed (--dry-run)."
    )
    verbose = cli.ok("retention", "--once", "--dry-run", "--verbose")
    assert verbose.lines[0].split()[-1] == "REASON"
    assert "over retention.ms 60000" in verbose.lines[1]
    assert snapshot(data_dir) == files

    report = json.loads(cli.ok("retention", "--once", "--json").out)
    assert report["dry_run"] is False
    assert report["log_start_offsets"] == {"t-0": keep_from}
    assert [(d["base_offset"], d["size_bytes"]) for d in report["deleted"]] == doomed
    for deleted in report["deleted"]:
        assert deleted["topic"] == "t" and deleted["partition"] == 0
        assert deleted["rule"] == "retention.ms"
        words = deleted["reason"].split()
        assert words[:2] == ["largest", "timestamp"] and OLD_TS <= int(words[2]) < OLD_TS + 30
    # Renamed *.deleted by this one-shot run; reads skip them and never write, so they stay
    # until the next read-write open (here a retention run with nothing to delete) removes them.
    partition_dir = data_dir / "t-0"
    assert f"{doomed[0][0]:020d}.log.deleted" in {p.name for p in partition_dir.iterdir()}
    assert segments(cli, "t") == [(b, s) for b, s in before if b >= keep_from]
    assert list(partition_dir.glob("*.deleted"))
    assert json.loads(cli.ok("retention", "--once", "--json").out)["deleted"] == []
    assert not list(partition_dir.glob("*.deleted"))
    assert describe(cli, "t")["partitions"][0]["log_start_offset"] == keep_from

    got = records(cli, "t", "--offset", "earliest")
    assert got[0]["offset"] == keep_from
    assert [r["value"] for r in got[-3:]] == ["new-0", "new-1", "new-2"]
    # A second pass finds nothing.
    assert cli.ok("retention", "--once").lines == [
        "Deleted 0 segments (0 bytes) from 0 partitions."
    ]


def test_retention_of_every_segment_rolls_first(cli: Cli) -> None:
    create(cli, "t", "retention.ms=60000", partitions=2)
    rows = [{"value": f"v{i}", "timestamp": OLD_TS + i, "partition": 0} for i in range(12)]
    produce_json(cli, "t", rows)
    count = len(segments(cli, "t"))
    result = cli.ok("retention", "--once")
    assert len(result.lines) == count + 2  # header, rows, summary; partition 1 has nothing
    assert result.lines[-1].startswith(f"Deleted {count} segment")
    assert "from 1 partition;" in result.lines[-1]
    assert "*.deleted" in result.lines[-1]
    part = describe(cli, "t")["partitions"][0]
    assert part["log_start_offset"] == part["log_end_offset"] == 12
    assert [s["base_offset"] for s in part["segments"]] == [12]  # the new active segment
    assert records(cli, "t", "--partition", "0") == []


def test_retention_by_size(cli: Cli) -> None:
    create(cli, "t", "retention.bytes=700")
    produce_json(cli, "t", [{"key": f"k{i}", "value": f"value-{i:04d}"} for i in range(60)])
    before = segments(cli, "t")
    result = cli.ok("retention", "--once", "--verbose")
    rows = [line.split(None, 4) for line in result.lines[1:-1]]
    assert rows and all(row[0] == "t-0" and row[3] == "retention.bytes" for row in rows)
    assert all("over retention.bytes 700" in row[4] for row in rows)
    after = segments(cli, "t")
    assert [(int(r[1]), int(r[2])) for r in rows] + after == before
    # Kafka's rule: delete from the oldest while the log stays at or above retention.bytes.
    kept = sum(size for _, size in after)
    assert kept >= 700 and kept - after[0][1] < 700
    assert records(cli, "t")[0]["offset"] == after[0][0]


def test_compact_topic_keeps_its_segments_by_time(cli: Cli) -> None:
    create(cli, "t", "retention.ms=60000", "cleanup.policy=compact")
    produce_json(cli, "t", [{"key": "k", "value": f"v{i}", "timestamp": OLD_TS} for i in range(20)])
    files_before = segments(cli, "t")
    assert cli.ok("retention", "--once").lines == [
        "Deleted 0 segments (0 bytes) from 0 partitions."
    ]
    assert segments(cli, "t") == files_before


def test_read_only_allows_only_dry_run(cli: Cli, data_dir: Path) -> None:
    create(cli, "t", "retention.ms=60000")
    produce_json(cli, "t", [{"value": f"v{i}", "timestamp": OLD_TS} for i in range(20)])
    files = snapshot(data_dir)
    result = cli.run("--read-only", "retention", "--once")
    assert result.status == 2 and "--read-only" in result.err and "--dry-run" in result.err
    dry = cli.ok("--read-only", "retention", "--once", "--dry-run", "--json")
    report = json.loads(dry.out)
    assert report["dry_run"] is True and report["deleted"]
    assert snapshot(data_dir) == files


# --- delete-records ---------------------------------------------------------------------------


def test_delete_records_then_retention(cli: Cli, tmp_path: Path) -> None:
    create(cli, "t", partitions=2)
    produce_json(cli, "t", [{"value": f"v{i}", "partition": 0} for i in range(40)])
    produce_json(cli, "t", [{"value": f"w{i}", "partition": 1} for i in range(5)])
    before = segments(cli, "t")
    assert len(before) >= 4
    target = 17
    path = offsets_file(tmp_path, ("t", 0, target), ("t", 1, -1))
    result = cli.ok("delete-records", "--offset-json-file", str(path))
    assert result.lines == [
        "Executing records delete operation",
        "Records delete operation completed:",
        f"partition: t-0\tlow_watermark: {target}",
        "partition: t-1\tlow_watermark: 5",  # -1: the high watermark
    ]
    # Reads start at the new log start offset at once; the segments are still there.
    assert records(cli, "t", "--partition", "0")[0]["offset"] == target
    assert records(cli, "t", "--partition", "1") == []
    assert segments(cli, "t") == before
    assert describe(cli, "t")["partitions"][0]["log_start_offset"] == target

    # Retention removes the segments wholly below it ("log start offset" rule).
    doomed = [
        (base, size)
        for (base, size), (next_base, _) in itertools.pairwise(before)
        if next_base <= target
    ]
    report = json.loads(cli.ok("retention", "--once", "--json").out)
    assert [
        (d["base_offset"], d["size_bytes"]) for d in report["deleted"] if d["partition"] == 0
    ] == doomed
    assert {d["rule"] for d in report["deleted"]} == {"log start offset"}
    assert report["log_start_offsets"]["t-0"] == target
    after = segments(cli, "t")
    assert after == [(b, s) for b, s in before if (b, s) not in doomed]
    assert after[0][0] <= target
    got = records(cli, "t", "--partition", "0", "--offset", "earliest")
    assert [r["value"] for r in got] == [f"v{i}" for i in range(target, 40)]
    assert describe(cli, "t")["partitions"][0]["log_start_offset"] == target


def test_delete_records_json_and_missing_version(cli: Cli, tmp_path: Path) -> None:
    create(cli, "t")
    produce_json(cli, "t", [{"value": f"v{i}"} for i in range(10)])
    # A file without "version" is version 1, as in Kafka.
    path = write_offsets(tmp_path, {"partitions": [{"topic": "t", "partition": 0, "offset": 4}]})
    result = json.loads(cli.ok("delete-records", "--offset-json-file", str(path), "--json").out)
    assert result == {"partitions": [{"topic": "t", "partition": 0, "low_watermark": 4}]}
    # Moving to the same offset again, or to an offset below the start, changes nothing.
    for offset in (4, 2):
        path = offsets_file(tmp_path, ("t", 0, offset))
        result = json.loads(cli.ok("delete-records", "--offset-json-file", str(path), "--json").out)
        assert result["partitions"][0]["low_watermark"] == 4


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([("t", 0, 11)], "offset 11 on t-0 is outside [0, 10] (the high watermark)"),
        ([("t", 0, 3), ("t", 0, 11)], "Offset json file contains duplicate topic partitions: t-0"),
        ([("t", 0, 3), ("nope", 0, 1)], "topic 'nope' does not exist"),
        ([("t", 0, 3), ("t", 2, 1)], "topic 't' has no partition 2"),
        ([("t", 0, 3), ("c", 0, 1)], "needs cleanup.policy with delete"),
    ],
)
def test_delete_records_errors_change_nothing(
    cli: Cli, data_dir: Path, tmp_path: Path, entries: list[tuple[str, int, int]], message: str
) -> None:
    create(cli, "t")
    create(cli, "c", "cleanup.policy=compact")
    produce_json(cli, "t", [{"value": f"v{i}"} for i in range(10)])
    produce_json(cli, "c", [{"key": "k", "value": f"v{i}"} for i in range(10)])
    path = offsets_file(tmp_path, *entries)
    result = cli.run("delete-records", "--offset-json-file", str(path))
    assert result.status == 1
    assert result.err.startswith("seglog: error: ") and message in result.err, result.err
    assert result.out == ""
    # Every partition is checked before any moves: t-0 (listed first, valid) is untouched.
    assert describe(cli, "t")["partitions"][0]["log_start_offset"] == 0
    assert records(cli, "t")[0]["offset"] == 0


def test_delete_records_read_only(cli: Cli, data_dir: Path, tmp_path: Path) -> None:
    create(cli, "t")
    produce_json(cli, "t", [{"value": "v"}])
    files = snapshot(data_dir)
    path = offsets_file(tmp_path, ("t", 0, 1))
    result = cli.run("--read-only", "delete-records", "--offset-json-file", str(path))
    assert result.status == 1 and "read-only" in result.err
    assert snapshot(data_dir) == files


def _entry(**fields: object) -> dict[str, object]:
    return {"topic": "t", "partition": 0, "offset": 1, **fields}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("", "not JSON: Expecting value at line 1 column 1"),
        ("{", "not JSON"),
        ("[]", "expected a JSON object, got an array"),
        ({"partitions": [_entry()], "version": 2}, "unsupported version 2"),
        ({"partitions": [_entry()], "version": "1"}, "'version' must be an integer, not a string"),
        (
            {"partitions": [_entry()], "version": True},
            "'version' must be an integer, not a boolean",
        ),
        ({"partitions": [_entry()], "extra": 1}, "unknown key(s) 'extra'"),
        ({"version": 1}, "missing 'partitions'"),
        ({"partitions": {"t": 1}}, "'partitions' must be an array, not an object"),
        ({"partitions": []}, "'partitions' is empty"),
        ({"partitions": [5]}, "partitions[0] must be an object, not a number"),
        ({"partitions": [_entry(leader=1)]}, "partitions[0]: unknown key(s) 'leader'"),
        ({"partitions": [{"topic": "t", "partition": 0}]}, "partitions[0]: missing 'offset'"),
        ({"partitions": [{"offset": 1}]}, "partitions[0]: missing 'topic', 'partition'"),
        ({"partitions": [_entry(topic=1)]}, "partitions[0].topic must be a string, not a number"),
        ({"partitions": [_entry(topic="a/b")]}, "partitions[0].topic:"),
        ({"partitions": [_entry(topic="")]}, "partitions[0].topic:"),
        ({"partitions": [_entry(partition=-1)]}, "partitions[0].partition -1 is outside"),
        (
            {"partitions": [_entry(partition=2**31)]},
            "partitions[0].partition 2147483648 is outside",
        ),
        ({"partitions": [_entry(partition=0.0)]}, "partitions[0].partition must be an integer"),
        ({"partitions": [_entry(offset=-2)]}, "partitions[0].offset -2 is outside -1.."),
        ({"partitions": [_entry(offset=2**63)]}, "partitions[0].offset 9223372036854775808 is"),
        ({"partitions": [_entry(offset=-1.0)]}, "partitions[0].offset must be an integer"),
        ({"partitions": [_entry(offset="5")]}, "partitions[0].offset must be an integer, not a"),
        ({"partitions": [_entry(offset=True)]}, "offset must be an integer, not a boolean"),
        ({"partitions": [_entry(offset=None)]}, "offset must be an integer, not null"),
        ({"partitions": [_entry(), _entry(offset=3)]}, "duplicate topic partitions: t-0"),
        ('{"partitions": [{"topic": "t", "partition": 0, "offset": NaN}]}', "NaN is not a JSON"),
        ('{"version": 1, "version": 1, "partitions": []}', "key 'version' is given twice"),
        ('{"partitions": [{"topic": "t", "partition": 0, "offset": 1, "offset": 2}]}', "twice"),
        ('{"partitions": [' * 100_000, "nested too deeply"),
    ],
)
def test_bad_offset_json_files(
    cli: Cli, data_dir: Path, tmp_path: Path, document: object, message: str
) -> None:
    create(cli, "t")
    produce_json(cli, "t", [{"value": f"v{i}"} for i in range(10)])
    files = snapshot(data_dir)
    path = write_offsets(tmp_path, document)
    result = cli.run("delete-records", "--offset-json-file", str(path))
    assert result.status == 1, result.out
    assert result.err.startswith(f"seglog: error: {path}: "), result.err
    assert message in result.err, result.err
    assert snapshot(data_dir) == files  # refused before the data dir is even opened


def test_offset_json_file_bytes(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    create(cli, "t")
    produce_json(cli, "t", [{"value": f"v{i}"} for i in range(10)])
    path = tmp_path / "offsets.json"
    path.write_bytes(b'{"partitions": [{"topic": "t\xff", "partition": 0, "offset": 1}]}')
    result = cli.run("delete-records", "--offset-json-file", str(path))
    assert result.status == 1 and "not UTF-8 (byte 28)" in result.err
    # A UTF-8 byte order mark is fine (editors write one).
    path.write_bytes(b'\xef\xbb\xbf{"partitions": [{"topic": "t", "partition": 0, "offset": 1}]}')
    assert cli.ok("delete-records", "--offset-json-file", str(path)).lines[-1].endswith(": 1")
    # A number too long for int() is refused, not a traceback.
    path.write_text(
        '{"partitions": [{"topic": "t", "partition": 0, "offset": ' + "9" * 5000 + "}]}"
    )
    result = cli.run("delete-records", "--offset-json-file", str(path))
    assert result.status == 1 and result.err.startswith(f"seglog: error: {path}: ")
    # The size limit.
    monkeypatch.setattr(delete_records, "MAX_OFFSET_JSON_FILE_BYTES", 64)
    path.write_text(json.dumps({"partitions": [_entry(topic="t" * 80)]}))
    result = cli.run("delete-records", "--offset-json-file", str(path))
    assert result.status == 1 and "above the limit of 64" in result.err
    # A missing file.
    result = cli.run("delete-records", "--offset-json-file", str(tmp_path / "missing.json"))
    assert result.status == 1 and "No such file or directory" in result.err
    # The option is required.
    result = cli.run("delete-records")
    assert result.status == 2 and "--offset-json-file" in result.err


def test_retention_once_with_file_delete_delay_0_leaves_no_deleted_files(
    cli: Cli, data_dir: Path
) -> None:
    """Issue 16: with ``file.delete.delay.ms=0`` a one-shot retention unlinks the deleted
    segments' files before it returns: no ``*.deleted`` file is left, and the summary does
    not claim one is."""
    create(cli, "t", "retention.ms=60000", "file.delete.delay.ms=0")
    produce_json(cli, "t", [{"value": f"v{i}", "timestamp": OLD_TS + i} for i in range(12)])
    count = len(segments(cli, "t"))
    assert count > 1
    result = cli.ok("retention", "--once")
    assert result.lines[-1].startswith(f"Deleted {count} segment")
    assert "*.deleted" not in result.lines[-1]
    assert not list(data_dir.rglob("*.deleted"))
    assert [s[0] for s in segments(cli, "t")] == [12]
