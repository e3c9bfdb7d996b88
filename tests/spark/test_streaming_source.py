"""The seglog Structured Streaming source through real Spark (the one shared session).

Records are appended between triggers with a writable LogManager in this process while
Spark's workers read the same directories read-only; expected rows come from
``Log.iter_records``.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from source_support import EVENTS, EVENTS_PARTITIONS, build_data_dir, expected_rows, manager_of

from seglog.spark.options import parse_source_options
from seglog.spark.streaming import SeglogStreamReader, from_offset_dict, to_offset_dict


def stream(spark: Any, data: Path, **options: str) -> Any:
    read = spark.readStream.format("seglog").option("path", str(data))
    for key, value in options.items():
        read = read.option(key, value)
    return read.load()


def collected(spark: Any, table: str) -> list[tuple[Any, ...]]:
    rows = []
    for row in spark.sql(f"select * from {table}").collect():
        values = list(row)
        values[5] = values[5].astimezone(dt.UTC)
        rows.append((*values[:7], None))
    return sorted(rows, key=lambda r: (r[2], r[3], r[4]))


def all_events(data: Path) -> list[tuple[Any, ...]]:
    rows = []
    for p in range(EVENTS_PARTITIONS):
        rows += [(*r[:7], None) for r in expected_rows(data, EVENTS, p)]
    return rows


def append(data: Path, partition: int, count: int, tag: bytes) -> None:
    with manager_of(data) as manager:
        manager.get_log(EVENTS, partition).append_records(
            [(b"new%d" % i, tag + b"%d" % i) for i in range(count)]
        )


def test_appends_between_triggers_are_picked_up(spark: Any, tmp_path: Path) -> None:
    data = build_data_dir(tmp_path)
    query = (
        stream(spark, data, subscribe=EVENTS, startingOffsets="earliest")
        .writeStream.format("memory")
        .queryName("seglog_appends")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        query.processAllAvailable()
        assert collected(spark, "seglog_appends") == all_events(data)
        append(data, 1, 5, b"more-")
        append(data, 2, 3, b"more-")
        query.processAllAvailable()
        got = collected(spark, "seglog_appends")
        assert got == all_events(data)
        assert len([r for r in got if r[1] and r[1].startswith(b"more-")]) == 8
        end = query.lastProgress["sources"][0]["endOffset"]
        end = json.loads(end) if isinstance(end, str) else end
        assert end == {EVENTS: {"0": 40, "1": 45, "2": 43}}
    finally:
        query.stop()


def test_max_offsets_per_trigger_with_available_now(spark: Any, tmp_path: Path) -> None:
    data = build_data_dir(tmp_path)
    sizes: list[int] = []
    out = tmp_path / "out"

    def each_batch(df: Any, batch_id: int) -> None:
        sizes.append(df.count())
        df.write.mode("append").parquet(str(out))

    query = (
        stream(spark, data, subscribe=EVENTS, startingOffsets="earliest", maxOffsetsPerTrigger="50")
        .writeStream.foreachBatch(each_batch)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert sum(sizes) == 3 * 40
    assert max(sizes) <= 50 and len([s for s in sizes if s]) == 3  # 50, 50, 20
    got = spark.read.parquet(str(out)).orderBy("partition", "offset").collect()
    assert [(r.partition, r.offset, r.value) for r in got] == [
        (r[3], r[4], r[1]) for r in all_events(data)
    ]


def test_retention_below_the_position_is_data_loss(spark: Any, tmp_path: Path) -> None:
    data = build_data_dir(tmp_path)
    for fail in (True, False):
        checkpoint = tmp_path / f"checkpoint-{fail}"
        name = f"seglog_loss_{str(fail).lower()}"
        options = {"assign": json.dumps({EVENTS: [0]}), "startingOffsets": "earliest"}
        query = (
            stream(spark, data, failOnDataLoss=str(fail).lower(), **options)
            .writeStream.format("memory")
            .queryName(name)
            .option("checkpointLocation", str(checkpoint))
            .start()
        )
        try:
            query.processAllAvailable()  # position: 40 (or 50 in the second round)
            append(data, 0, 10, b"late-")
            with manager_of(data) as manager:
                tp = manager.get_log(EVENTS, 0).topic_partition
                end = manager.get_log(EVENTS, 0).log_end_offset
                manager.delete_records({tp: end - 3})  # retention passes the query's position
            if fail:
                with pytest.raises(Exception, match=r"events-0: offsets .* are gone"):
                    query.processAllAvailable()
            else:
                query.processAllAvailable()
                offsets = [r[4] for r in collected(spark, name)]
                assert offsets[-3:] == [end - 3, end - 2, end - 1]
                assert end - 4 not in offsets  # skipped, not read
        finally:
            query.stop()


def test_stream_reader_offsets_and_limits_without_spark(tmp_path: Path) -> None:
    data = build_data_dir(tmp_path)
    options = parse_source_options(
        {"path": str(data), "subscribepattern": "^ev", "minoffsetspertrigger": "30"},
        is_streaming=True,
    )
    clock = [0.0]
    reader = SeglogStreamReader(options, clock=lambda: clock[0])
    latest = {EVENTS: {"0": 40, "1": 40, "2": 40}}
    assert reader.initialOffset() == latest  # startingOffsets defaults to latest
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMinRows

    assert reader.getDefaultReadLimit() == ReadMinRows(30)
    assert reader.latestOffset(latest, ReadMinRows(30)) == latest
    append(data, 0, 20, b"x")
    assert reader.latestOffset(latest, ReadMinRows(30)) == latest  # 20 < 30 waiting
    clock[0] = 16 * 60.0  # maxTriggerDelay (15m) passed
    grown = {EVENTS: {"0": 60, "1": 40, "2": 40}}
    assert reader.latestOffset(latest, ReadMinRows(30)) == grown
    assert reader.latestOffset(latest, ReadAllAvailable()) == grown
    assert reader.reportLatestOffset() == grown
    partitions = reader.partitions(latest, grown)
    assert [(p.value.partition, p.value.start, p.value.end) for p in partitions] == [(0, 40, 60)]
    rows = [b for p in partitions for b in reader.read(p)]
    assert sum(b.num_rows for b in rows) == 20
    assert from_offset_dict(to_offset_dict({("a", 1): 5})) == {("a", 1): 5}
    # availableNow: nothing appended after prepareForTriggerAvailableNow is read
    reader.prepareForTriggerAvailableNow()
    append(data, 1, 5, b"y")
    assert reader.latestOffset(grown, ReadAllAvailable()) == grown
