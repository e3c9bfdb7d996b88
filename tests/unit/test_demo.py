"""``seglog demo`` (the main job behind ``make run``) writes a real, Kafka-readable log."""

from __future__ import annotations

import itertools
import json
import struct
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

from seglog.cli.main import main


def test_demo_writes_a_log_kafka_python_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["demo", "--data-dir", str(tmp_path), "--updates", "3000", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    log = tmp_path / "stock-prices-0" / "00000000000000000000.log"
    assert summary["records"] == 3000
    assert summary["offsets_strictly_increasing"] is True
    assert set(summary["per_codec"]) == {"none", "gzip", "snappy", "lz4", "zstd"}

    # The peer decodes every record we wrote, with the key each value names.
    records = MemoryRecords(log.read_bytes())
    seen = 0
    latest: dict[str, float] = {}
    while records.has_next():
        batch = records.next_batch()
        for record in batch:
            value = json.loads(record.value)
            assert record.key.decode() == value["ticker"]
            assert record.offset == value["seq"] == seen
            latest[value["ticker"]] = value["price"]
            seen += 1
    assert seen == 3000
    assert summary["latest_prices"] == dict(sorted(latest.items()))
    assert summary["distinct_keys"] == len(latest)


def test_demo_indexes_point_at_batch_starts(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """Independent check (no seglog reader): entries increase and name a batch's last offset."""
    assert main(["demo", "--data-dir", str(tmp_path), "--updates", "4000"]) == 0
    assert "seglog demo: wrote 4000 price updates" in capsys.readouterr().out
    part = tmp_path / "stock-prices-0"
    log = (part / "00000000000000000000.log").read_bytes()
    index = (part / "00000000000000000000.index").read_bytes()
    timeindex = (part / "00000000000000000000.timeindex").read_bytes()
    starts = {}
    position = 0
    while position < len(log):
        base_offset, length = struct.unpack_from(">qi", log, position)
        (last_delta,) = struct.unpack_from(">i", log, position + 23)
        starts[position] = base_offset + last_delta
        position += 12 + length
    assert position == len(log)
    entries = list(struct.iter_unpack(">ii", index))
    assert entries, "a 4000-record segment spans many index intervals"
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(entries))
    for relative_offset, batch_position in entries:
        assert starts[batch_position] == relative_offset
    times = list(struct.iter_unpack(">qi", timeindex))
    assert all(a[0] < b[0] for a, b in itertools.pairwise(times))
    last_offsets = set(starts.values())
    assert all(offset in last_offsets for _, offset in times)
