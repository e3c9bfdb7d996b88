"""``seglog dump-log --index-sanity-check`` / ``--verify-index-only`` on segments seglog wrote."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from cli_support import Cli

from seglog.format.index import parse_offset_index, parse_time_index


@pytest.fixture
def partition_dir(cli: Cli, data_dir: Path) -> Path:
    """A partition of several segments, each with several index entries (closed cleanly)."""
    cli.ok(
        "topics",
        "create",
        "t",
        "--partitions",
        "1",
        "--config",
        "segment.bytes=4096",
        "--config",
        "index.interval.bytes=100",
        "--config",
        "max.message.bytes=300",
    )
    lines = b"".join(b"k%d:value-%05d\n" % (i % 10, i) for i in range(600))
    # small batches, as a record-at-a-time producer makes: many index entries per segment
    cli.ok("produce", "t", "--key-separator", ":", "--batch-size", "200", stdin=lines)
    cli.ok("produce", "t", "--key-separator", ":", stdin=b"last:one\n")  # a second append
    return data_dir / "t-0"


def index_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix in (".index", ".timeindex"))


def test_seglog_segments_pass_the_sanity_check(cli: Cli, partition_dir: Path) -> None:
    files = index_files(partition_dir)
    segments = sorted(partition_dir.glob("*.log"))
    assert len(segments) > 2 and len(files) == 2 * len(segments)
    first_index = partition_dir / "00000000000000000000.index"
    assert len(parse_offset_index(first_index.read_bytes(), 0)) > 3  # something to check

    result = cli.ok("dump-log", "--index-sanity-check", *files)
    expected = []
    for path in files:
        expected += [f"Dumping {path}", f"{path} passed sanity check."]
    assert result.lines == expected
    assert result.err == ""
    # Kafka's --files form gives the same.
    kafka_form = cli.ok("dump-log", "--index-sanity-check", "--files", ",".join(map(str, files)))
    assert kafka_form.lines == expected


def test_seglog_indexes_verify_clean(cli: Cli, partition_dir: Path) -> None:
    files = index_files(partition_dir)
    result = cli.ok("dump-log", "--verify-index-only", *files)
    # Only the headings: entries are not printed, and there is nothing to report.
    assert result.lines == [f"Dumping {path}" for path in files]
    assert result.err == ""
    # Without the option every entry is printed, in Kafka's words, and all check out.
    full = cli.ok("dump-log", *files)
    index = partition_dir / "00000000000000000000.index"
    entries = parse_offset_index(index.read_bytes(), 0)
    assert [f"offset: {e.offset} position: {e.position}" for e in entries] == full.lines[
        1 : 1 + len(entries)
    ]
    time_index = partition_dir / "00000000000000000000.timeindex"
    time_entries = parse_time_index(time_index.read_bytes(), 0)
    assert f"timestamp: {time_entries[-1].timestamp} offset: {time_entries[-1].offset}" in (
        full.lines
    )
    assert full.err == ""


def test_verify_index_only_reports_only_mismatches(cli: Cli, partition_dir: Path) -> None:
    index = partition_dir / "00000000000000000000.index"
    data = bytearray(index.read_bytes())
    entries = parse_offset_index(bytes(data), 0)
    # Point the second entry at the first entry's batch.
    data[8:16] = struct.pack(">ii", entries[1].offset, entries[0].position)
    index.write_bytes(bytes(data))
    result = cli.run("dump-log", "--verify-index-only", index)
    assert result.status == 0  # a mismatch is a finding, as in Kafka, not a failure
    assert result.lines == [f"Dumping {index}"]
    assert result.err.splitlines() == [
        f"Mismatches in :{os.path.abspath(index)}",
        f"  Index offset: {entries[1].offset}, log offset: {entries[0].offset}",
    ]


def test_sanity_check_failures(cli: Cli, partition_dir: Path) -> None:
    index = partition_dir / "00000000000000000000.index"
    with index.open("ab") as handle:
        handle.write(b"\x00\x00\x00")  # not a whole entry
    time_index = partition_dir / "00000000000000000000.timeindex"
    data = time_index.read_bytes()
    # A last timestamp below the first: Kafka's TimeIndex.sanityCheck fails.
    time_index.write_bytes(data + struct.pack(">qi", 0, 1))
    result = cli.run("dump-log", "--index-sanity-check", index, time_index)
    assert result.status == 1
    assert "passed sanity check" not in result.out
    errors = [line for line in result.err.splitlines() if line.startswith("seglog: error:")]
    assert len(errors) == 2
    assert str(index) in errors[0] and str(time_index) in errors[1]
