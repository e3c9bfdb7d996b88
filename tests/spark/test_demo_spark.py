"""The whole ``seglog demo``, Spark step included, in process on the shared test session:
its summary agrees with the files it leaves (log segments, the Parquet export)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kafka.record import MemoryRecords

from seglog.cli.main import main


def peer_records(partition_dir: Path) -> list[Any]:
    """Every record of a partition, decoded by kafka-python (no seglog reader)."""
    records = []
    for log in sorted(partition_dir.glob("*.log")):
        batches = MemoryRecords(log.read_bytes())
        while batches.has_next():
            records += list(batches.next_batch())
    return records


def test_full_demo_in_process(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    data = tmp_path / "data"
    args = ["demo", "--data-dir", str(data), "--updates", "5000", "--events", "3000"]
    assert main([*args, "--tickers", "40", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ok"] is True
    assert summary["verify"]["ok"] is True
    assert set(summary["verify"]["topics"]) == {"stock-prices", "page-events", "ticker-summary"}
    assert summary["retention"]["deleted_segments"] > 0

    s = summary["spark"]
    latest = summary["latest_prices"]  # what the feed last sent, per listed ticker
    delisted = set(summary["workload"]["delisted"])
    assert s["master"] == spark.sparkContext.master  # the shared session was reused ...
    assert spark.range(3).count() == 3  # ... and left running

    # Read: the cleaned log plus the new updates, tombstones included.
    before_round_2 = summary["clean"]["messages_written"] + summary["more_updates"]["price_updates"]
    assert s["rows_read"] == before_round_2
    assert s["latest"]["tickers"] == len(latest)
    assert s["latest"]["delisted"] == len(delisted)

    # The compaction job was the second round: smaller, and the tombstones expired.
    round_2 = summary["second_clean"]
    assert round_2["runner"] == "Spark compaction job" and not round_2["errors"]
    assert round_2["size_after_bytes"] < round_2["size_before_bytes"]
    prices = summary["topics"]["stock-prices"]
    assert prices["after"]["size_bytes"] < prices["before"]["size_bytes"]
    assert prices["after"]["records"] == prices["after"]["distinct_keys"] == len(latest)
    assert prices["after"]["tombstones"] == 0

    # Export: one row per listed ticker, each with the feed's last price.
    export = s["export"]
    assert export["path"] == str(tmp_path / "data-exports" / "stock-prices")
    table = spark.read.parquet(export["path"]).collect()
    assert export["rows"] == len(table) == len(latest)
    exported = {bytes(r.key).decode(): json.loads(bytes(r.value))["price"] for r in table}
    assert exported == latest
    assert not delisted & set(exported)

    # The sink's topic, read back by kafka-python: one summary row per listed ticker.
    rows = peer_records(data / "ticker-summary-0")
    assert s["ticker_summary"]["rows_written"] == len(rows) == len(latest)
    assert {r.key.decode(): json.loads(r.value)["price"] for r in rows} == latest

    # Stats after the job agree with the files.
    by_topic: dict[str, dict[str, int]] = {}
    for row in s["stats"]:
        totals = by_topic.setdefault(row["topic"], {"records": 0, "distinct_keys": 0})
        totals["records"] += row["records"]
        totals["distinct_keys"] += row["distinct_keys"]
    for topic, figures in summary["topics"].items():
        assert by_topic[topic]["records"] == figures["after"]["records"], topic
        assert by_topic[topic]["distinct_keys"] == figures["after"]["distinct_keys"], topic
    assert "STOCK" not in s["stats_table"] and "stock-prices" in s["stats_table"]
