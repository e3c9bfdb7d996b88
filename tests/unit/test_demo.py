"""``seglog demo --no-spark`` (the main job, without its Spark step): its files are real Kafka
logs (kafka-python decodes them) and its summary says what the files hold."""

from __future__ import annotations

import itertools
import json
import struct
from pathlib import Path
from typing import Any

import pytest
from kafka.partitioner.default import murmur2
from kafka.record import MemoryRecords

from seglog.cli.demo import STATS_COLUMNS, readable_reason, spark_lines, stats_table_lines
from seglog.cli.main import main

SMALL = ["--updates", "4000", "--events", "3000", "--tickers", "40", "--no-spark", "--json"]


def run_demo(data: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert main(["demo", "--data-dir", str(data), *SMALL, *extra]) == 0
    summary: dict[str, Any] = json.loads(capsys.readouterr().out)
    return summary


def peer_records(partition_dir: Path) -> list[Any]:
    """Every record of a partition's segments, decoded by kafka-python (no seglog reader)."""
    records = []
    for log in sorted(partition_dir.glob("*.log")):
        batches = MemoryRecords(log.read_bytes())
        while batches.has_next():
            batch = batches.next_batch()
            records += list(batch)
    return records


def test_demo_without_spark_matches_its_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    data = tmp_path / "data"
    summary = run_demo(data, capsys)
    assert summary["ok"] is True
    assert summary["spark"] == {"skipped": "--no-spark was given"}
    assert summary["second_clean"]["runner"] == "in-process cleaner"
    delisted = set(summary["workload"]["delisted"])
    latest = summary["latest_prices"]
    assert len(latest) == summary["listed_tickers"] == 40 - len(delisted)

    # stock-prices: after two cleaning rounds, one record per listed ticker, each the feed's
    # last price, in the partition Kafka's partitioner picks; the tombstones are gone.
    seen: dict[str, float] = {}
    for partition in range(3):
        for record in peer_records(data / f"stock-prices-{partition}"):
            ticker = record.key.decode()
            assert (murmur2(record.key) & 0x7FFFFFFF) % 3 == partition
            assert record.value is not None, f"tombstone of {ticker} survived round 2"
            value = json.loads(record.value)
            assert value["ticker"] == ticker and ticker not in seen
            seen[ticker] = value["price"]
    assert seen == latest
    assert not delisted & set(seen)
    prices = summary["topics"]["stock-prices"]
    assert prices["after"]["records"] == prices["after"]["distinct_keys"] == len(latest)
    assert prices["before"]["tombstones"] == len(delisted)
    assert prices["after"]["size_bytes"] < prices["before"]["size_bytes"] / 10
    assert summary["clean"]["dirty_ratio_before"] == 1.0
    assert summary["clean"]["messages_read"] == prices["before"]["records"]
    assert summary["clean"]["size_after_bytes"] < summary["clean"]["size_before_bytes"]
    # The README tour dumps this file: cleaning keeps the first group's base offset.
    assert (data / "stock-prices-0" / "00000000000000000000.log").is_file()

    # page-events: retention deleted the backfill's oldest segments, as the summary says.
    retention = summary["retention"]
    assert retention["deleted_segments"] > 0
    events = summary["topics"]["page-events"]
    for deletion in retention["deletions"]:
        assert deletion["topic"] == "page-events"
        assert deletion["rule"] in ("retention.ms", "retention.bytes")
        name = f"{deletion['base_offset']:020d}.log"
        assert not (data / f"page-events-{deletion['partition']}" / name).exists()
    kept = sum(len(peer_records(data / f"page-events-{p}")) for p in range(2))
    assert kept == events["after"]["records"] < events["before"]["records"] == 3000

    # The compacted copy was published and read.
    copy = summary["compacted_copy"]
    assert all(h >= 0 for h in copy["horizons"].values())
    assert sum(r["records"] for r in copy["read_compacted"].values()) == copy["records_kept"]
    assert summary["verify"]["ok"] is True
    assert set(summary["verify"]["topics"]) == {"stock-prices", "page-events"}


def test_demo_runs_twice_and_leaves_other_topics_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    data = tmp_path / "data"
    first = run_demo(data, capsys)
    assert first["replaced_topics"] == []
    assert main(["--data-dir", str(data), "topics", "create", "mine", "--partitions", "1"]) == 0
    capsys.readouterr()
    second = run_demo(data, capsys, "--seed", "7")
    assert second["replaced_topics"] == ["stock-prices", "page-events"]
    assert second["ok"] is True
    assert (data / "mine-0").is_dir()
    assert not list(data.glob("*-delete"))  # the old topics' directories are gone
    assert second["topics"]["stock-prices"]["before"]["records"] == 3200 + len(
        second["workload"]["delisted"]
    )


def test_demo_text_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    args = ["demo", "--data-dir", str(tmp_path / "d"), "--updates", "2000", "--events", "900"]
    assert main([*args, "--tickers", "25", "--no-spark"]) == 0
    out = capsys.readouterr().out
    assert "spark     skipped: --no-spark was given" in out
    assert "retention deleted" in out and "verify    stock-prices OK" in out
    assert "Next:" in out
    # The table's rows are explained: "before" is the first 80% of the updates, rolled.
    assert "  before: produced (1,600 of the price updates) and rolled" in out
    assert "  after:  at the end (retention, both cleaning rounds done)" in out
    # Retention reasons read as ages and sizes, not bare milliseconds.
    deleted = [line for line in out.splitlines() if line.startswith("    page-events-")]
    assert deleted, out
    for line in deleted:
        assert line.endswith("days old, over retention.ms 2.0 days"), line
        assert " ms " not in line and "UTC is " in line
    # No line wider than a wide terminal (the paths of the temporary dir aside).
    widths = [len(line) for line in out.splitlines() if str(tmp_path) not in line]
    assert max(widths) <= 140, out


def test_demo_summary_helpers() -> None:
    """The readable half of retention reasons, and the narrow Spark statistics table."""
    assert readable_reason(
        "log of 516017 bytes (503.9 KiB) is over retention.bytes 393216 (384.0 KiB)"
    ) == ("log of 503.9 KiB is over retention.bytes 384.0 KiB")
    unchanged = "next segment starts at 5, at or below the log start offset 5"
    assert readable_reason(unchanged) == unchanged
    rows = [
        {"topic": "page-events", "partition": 0, "records": 19690, "keyed_records": 19690,
         "distinct_keys": 1479, "duplicates": 18211, "tombstones": 0, "dirty_ratio": None,
         "first_dirty_offset": None, "size_bytes": 342414, "segments": 7,
         "log_start_offset": 9819, "log_end_offset": 29509},
        {"topic": "stock-prices", "partition": 2, "records": 92, "keyed_records": 92,
         "distinct_keys": 92, "duplicates": 0, "tombstones": 0, "dirty_ratio": 0.0,
         "first_dirty_offset": 47775, "size_bytes": 3298, "segments": 4,
         "log_start_offset": 0, "log_end_offset": 47775},
    ]  # fmt: skip
    header, first, second = stats_table_lines(rows)
    assert header.split() == [title for _, title in STATS_COLUMNS]
    assert first.split() == ["page-events", "0", "19,690", "1,479", "18,211", "0", "-",
                             "334.4", "KiB", "7"]  # fmt: skip
    assert second.split() == ["stock-prices", "2", "92", "92", "0", "0", "0.00",
                              "3.2", "KiB", "4"]  # fmt: skip
    assert len({len(header), len(first), len(second)}) == 1 and len(header) < 100


def test_demo_indexes_point_at_batch_starts(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """Independent check (no seglog reader) of a closed segment the engine wrote: index
    entries increase and name the last offset of the batch at their position."""
    run_demo(tmp_path, capsys)
    part = tmp_path / "page-events-0"
    checked = 0
    for log_path in sorted(part.glob("*.log"))[:-1]:  # closed segments
        base = int(log_path.stem)
        log = log_path.read_bytes()
        index = log_path.with_suffix(".index").read_bytes()
        timeindex = log_path.with_suffix(".timeindex").read_bytes()
        starts = {}
        position = 0
        while position < len(log):
            base_offset, length = struct.unpack_from(">qi", log, position)
            (last_delta,) = struct.unpack_from(">i", log, position + 23)
            starts[position] = base_offset + last_delta
            position += 12 + length
        assert position == len(log)
        entries = list(struct.iter_unpack(">ii", index))
        assert all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(entries))
        for relative_offset, batch_position in entries:
            assert starts[batch_position] == base + relative_offset
        times = list(struct.iter_unpack(">qi", timeindex))
        assert times, "a closed segment has its roll entry"
        assert all(a[0] < b[0] for a, b in itertools.pairwise(times))
        last_offsets = set(starts.values())
        assert all(base + offset in last_offsets for _, offset in times)
        checked += len(entries)
    assert checked, "64 KiB segments span several 4 KiB index intervals"


def test_demo_refuses_too_many_tickers(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    args = ["demo", "--data-dir", str(tmp_path), "--tickers", "999999", "--no-spark"]
    assert main(args) == 1
    assert "--tickers 999999: at most" in capsys.readouterr().err
    assert not (tmp_path / "stock-prices-0").exists()


def test_demo_without_java_says_what_to_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    """Spark's prerequisites are checked before any work: no Java -> what to install, and
    ``--no-spark`` offered."""
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["demo", "--data-dir", str(tmp_path / "data")]) == 1
    err = capsys.readouterr().err
    assert "Java" in err and "install" in err and "seglog demo --no-spark" in err
    assert not (tmp_path / "data").exists()


def test_demo_spark_summary_lines_fit_a_terminal() -> None:
    """The Spark part of the text summary, from the figures the Spark step returns."""
    figures = {
        "master": "local[*]",
        "rows_read": 30300,
        "latest": {"tickers": 285, "delisted": 15},
        "ticker_summary": {"rows_written": 285},
        "steps_seconds": {"session": 9.3, "read": 12.5, "sink": 5.7, "compaction job": 2.4},
        "export": {"rows": 285, "path": "/data-exports/stock-prices"},
        "stats": [
            {
                "topic": "stock-prices",
                "partition": 0,
                "records": 99,
                "distinct_keys": 99,
                "duplicates": 0,
                "tombstones": 0,
                "dirty_ratio": 0.0,
                "size_bytes": 3515,
                "segments": 4,
            },
        ],
    }
    lines = spark_lines(figures)
    assert lines[0].startswith("  spark     local[*]: read 30,300 records of stock-prices")
    assert "285 listed tickers, 15 delisted; wrote 285 rows to ticker-summary" in lines[1]
    assert lines[-1].split() == ["stock-prices", "0", "99", "99", "0", "0", "0.00", "3.4",
                                 "KiB", "4"]  # fmt: skip
    assert max(len(line) for line in lines) <= 120


def test_demo_cleaned_log_dumps_with_a_real_first_batch_and_consistent_time_indexes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """The cleaner writes Kafka 4.x's batches: no emptied 61-byte header opens a cleaned
    segment (only the round's last batch or an active producer's would stay), so the dumped
    log's first batch holds records, and no ``.timeindex`` entry points at a batch without
    them (dump-log's "timestamp mismatch ... log timestamp: -1"). A group whose records were
    all superseded leaves an empty segment, as Kafka's cleaner does."""
    run_demo(tmp_path, capsys)
    for partition in range(3):
        part = tmp_path / f"stock-prices-{partition}"
        logs = sorted(str(p) for p in part.glob("*.log"))
        assert main(["dump-log", *logs]) == 0
        out, err = capsys.readouterr()
        batches = [line for line in out.splitlines() if line.startswith("baseOffset:")]
        assert batches, f"{part}: no batch at all"
        assert " count: 0 " not in batches[0], f"{part}: the log begins with {batches[0]}"
        assert not err
        time_indexes = sorted(str(p) for p in part.glob("*.timeindex"))
        assert main(["dump-log", *time_indexes]) == 0
        out, err = capsys.readouterr()
        assert "mismatch" not in out + err, out + err
        assert "timestamp: " in out  # the closed segments with data have entries
