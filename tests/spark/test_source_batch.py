"""The seglog batch source through real Spark (local mode, the one shared session).

Expected rows always come from ``Log.iter_records`` (tests/spark/source_support.py); the
option and error cases mirror Spark's Kafka source (spec/spark.md §3).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from source_support import (
    APPEND_TIME,
    COMPACTED,
    EVENTS,
    EVENTS_PARTITIONS,
    OTHER,
    T0,
    build_data_dir,
    expected_rows,
    manager_of,
)

from seglog.spark.schema import arrow_read_schema, spark_read_schema


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_data_dir(tmp_path_factory.mktemp("source"))


def reader(spark: Any, data: Path, **options: str) -> Any:
    read = spark.read.format("seglog").option("path", str(data))
    for key, value in options.items():
        read = read.option(key, value)
    return read.load()


def rows_of(df: Any) -> list[tuple[Any, ...]]:
    """Rows as tuples, headers as lists of (key, value), sorted by topic/partition/offset."""
    out = []
    for row in df.collect():
        values = list(row)
        values[5] = values[5].astimezone(dt.UTC)  # collect() gives naive local time
        if len(values) > 7:
            values[7] = None if values[7] is None else [(h.key, h.value) for h in values[7]]
        else:
            values.append(None)
        out.append(tuple(values))
    return sorted(out, key=lambda r: (r[2], r[3], r[4]))


def without_headers(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [(*r[:7], None) for r in rows]


def events(data: Path, start: dict[int, int] | None = None, end: dict[int, int] | None = None):
    out = []
    for p in range(EVENTS_PARTITIONS):
        out += expected_rows(data, EVENTS, p, (start or {}).get(p), (end or {}).get(p))
    return out


def error_text(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    return str(excinfo.value)


# --- schema ----------------------------------------------------------------------------------
def test_schema_is_the_kafka_source_contract(spark: Any, data: Path) -> None:
    df = reader(spark, data, subscribe=EVENTS)
    assert df.schema == spark_read_schema(False)
    assert [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields] == [
        ("key", "binary", True),
        ("value", "binary", True),
        ("topic", "string", True),
        ("partition", "int", True),
        ("offset", "bigint", True),
        ("timestamp", "timestamp", True),
        ("timestampType", "int", True),
    ]
    with_headers = reader(spark, data, subscribe=EVENTS, includeHeaders="true")
    assert with_headers.schema == spark_read_schema(True)
    assert with_headers.schema["headers"].dataType.simpleString() == (
        "array<struct<key:string,value:binary>>"
    )
    # The Arrow batches the reader yields are exactly what Spark derives from that schema.
    from pyspark.sql.pandas.types import to_arrow_schema

    expected = to_arrow_schema(spark_read_schema(True), timezone="UTC")
    assert expected.equals(arrow_read_schema(True))


def test_custom_schema_is_refused(spark: Any, data: Path) -> None:
    with pytest.raises(Exception, match="fixed schema") as excinfo:
        spark.read.format("seglog").schema("value binary").option("path", str(data)).option(
            "subscribe", EVENTS
        ).load().collect()
    assert "SparkOptionError" in error_text(excinfo)


# --- whole topics --------------------------------------------------------------------------
def test_subscribe_reads_every_record_with_headers(spark: Any, data: Path) -> None:
    df = reader(spark, data, subscribe=EVENTS, includeHeaders="true")
    got = rows_of(df)
    assert got == events(data)
    assert any(r[7] is not None for r in got) and any(r[7] is None for r in got)
    assert any(r[0] is None for r in got) and any(r[1] is None for r in got)
    # one input partition per topic-partition
    assert df.rdd.getNumPartitions() == EVENTS_PARTITIONS


def test_subscribe_several_topics_and_log_append_time(spark: Any, data: Path) -> None:
    got = rows_of(reader(spark, data, subscribe=f" {APPEND_TIME}, {OTHER} ,"))
    expected = expected_rows(data, APPEND_TIME, 0) + expected_rows(data, OTHER, 0)
    assert got == without_headers(sorted(expected, key=lambda r: (r[2], r[3], r[4])))
    stamped = [r for r in got if r[2] == APPEND_TIME]
    # LogAppendTime batches report the batch's max timestamp (the append time) for each record
    assert {r[6] for r in stamped} == {1}
    assert len({r[5] for r in stamped}) == 1
    assert stamped[0][5] != dt.datetime.fromtimestamp(T0 / 1000, dt.UTC)


def test_subscribe_pattern_is_an_unanchored_search(spark: Any, data: Path) -> None:
    got = rows_of(reader(spark, data, subscribePattern="ther|stamp"))
    assert {r[2] for r in got} == {OTHER, APPEND_TIME}


def test_assign_reads_only_the_named_partitions(spark: Any, data: Path) -> None:
    got = rows_of(reader(spark, data, assign=json.dumps({EVENTS: [2, 0]})))
    expected = expected_rows(data, EVENTS, 0) + expected_rows(data, EVENTS, 2)
    assert got == without_headers(expected)


# --- offsets ---------------------------------------------------------------------------------
def test_starting_and_ending_offsets_json_with_sentinels(spark: Any, data: Path) -> None:
    starting = {EVENTS: {"0": 5, "1": -2, "2": 30}}
    ending = {EVENTS: {"0": 12, "1": 3, "2": -1}}
    got = rows_of(
        reader(
            spark,
            data,
            subscribe=EVENTS,
            startingOffsets=json.dumps(starting),
            endingOffsets=json.dumps(ending),
        )
    )
    assert got == without_headers(events(data, {0: 5, 2: 30}, {0: 12, 1: 3}))
    assert [r[4] for r in got if r[3] == 0] == list(range(5, 12))


def test_timestamps_resolve_through_the_time_index(spark: Any, data: Path) -> None:
    # Record i has timestamp T0 + 1000 i (minus 1500 when i % 9 == 4): the first offset whose
    # timestamp reaches T0 + 10_000 is 10; the first reaching T0 + 20_500 is 21.
    got = rows_of(
        reader(
            spark,
            data,
            assign=json.dumps({EVENTS: [1]}),
            startingTimestamp=str(T0 + 10_000),
            endingOffsetsByTimestamp=json.dumps({EVENTS: {"1": T0 + 20_500}}),
        )
    )
    assert [r[4] for r in got] == list(range(10, 21))
    by_partition = rows_of(
        reader(
            spark,
            data,
            subscribe=EVENTS,
            startingOffsetsByTimestamp=json.dumps(
                {EVENTS: {"0": T0 + 35_000, "1": T0, "2": T0 + 38_000}}
            ),
        )
    )
    assert [(r[3], r[4]) for r in by_partition if r[3] != 1] == [
        (0, 35),
        (0, 36),
        (0, 37),
        (0, 38),
        (0, 39),
        (2, 38),
        (2, 39),
    ]
    assert len([r for r in by_partition if r[3] == 1]) == 40


def test_starting_timestamp_beyond_every_record(spark: Any, data: Path) -> None:
    late = str(T0 + 10**9)
    with pytest.raises(Exception, match="no record of events-0 has a timestamp"):
        reader(spark, data, assign=json.dumps({EVENTS: [0]}), startingTimestamp=late).collect()
    empty = reader(
        spark,
        data,
        assign=json.dumps({EVENTS: [0]}),
        startingTimestamp=late,
        startingOffsetsByTimestampStrategy="latest",
    )
    assert empty.count() == 0


def test_min_partitions_and_max_records_per_partition_split_ranges(spark: Any, data: Path) -> None:
    df = reader(spark, data, subscribe=EVENTS, minPartitions="7")
    assert df.rdd.getNumPartitions() == 6  # 3 x 40 offsets, ideal 17: round(40/17.1) = 2 each
    assert rows_of(df) == without_headers(events(data))
    capped = reader(spark, data, subscribe=EVENTS, maxRecordsPerPartition="15")
    assert capped.rdd.getNumPartitions() == 9  # ceil(40 / 15) = 3 per partition
    assert rows_of(capped) == without_headers(events(data))


# --- compacted topics ----------------------------------------------------------------------
def test_offset_gaps_of_a_cleaned_topic(spark: Any, data: Path) -> None:
    got = rows_of(reader(spark, data, subscribe=COMPACTED, maxRecordsPerPartition="5"))
    expected = without_headers(expected_rows(data, COMPACTED, 0))
    assert got == expected
    offsets = [r[4] for r in got]
    assert offsets[-1] - offsets[0] + 1 > len(offsets)  # gaps: the cleaner removed records


def test_read_compacted_reads_the_copy_then_the_log(spark: Any, data: Path) -> None:
    got = rows_of(reader(spark, data, subscribe=COMPACTED, readCompacted="true"))
    expected = without_headers(expected_rows(data, COMPACTED, 0, 0, read_compacted=True))
    assert got == expected
    assert len(got) < len(expected_rows(data, COMPACTED, 0))
    assert got[-1][1] == b"after-horizon"


# --- data loss ------------------------------------------------------------------------------
def test_fail_on_data_loss(spark: Any, tmp_path: Path) -> None:
    data = build_data_dir(tmp_path)
    with manager_of(data) as manager:
        manager.delete_records({manager.get_log(EVENTS, 0).topic_partition: 10})
    options = {
        "assign": json.dumps({EVENTS: [0]}),
        "startingOffsets": json.dumps({EVENTS: {"0": 2}}),
    }
    with pytest.raises(Exception, match="events-0: offsets 2 to 9 are gone") as excinfo:
        reader(spark, data, **options).collect()
    assert "DataLossError" in error_text(excinfo)
    got = rows_of(reader(spark, data, failOnDataLoss="false", **options))
    assert [r[4] for r in got] == list(range(10, 40))
    assert rows_of(reader(spark, data, assign=json.dumps({EVENTS: [0]}))) == without_headers(
        expected_rows(data, EVENTS, 0)
    )


# --- pushdown -------------------------------------------------------------------------------
@pytest.mark.parametrize("push", ["true", "false"])
def test_filters_on_partition_offset_and_timestamp(spark: Any, data: Path, push: str) -> None:
    df = reader(spark, data, subscribe=EVENTS, pushFilters=push)
    since = dt.datetime.fromtimestamp((T0 + 20_000) / 1000, dt.UTC)
    query = df.where(
        "partition in (0, 2) and offset >= 5 and offset < 30 and topic = 'events'"
    ).where(df.timestamp >= since)
    got = rows_of(query)
    expected = [
        r
        for r in without_headers(events(data))
        if r[3] in (0, 2) and 5 <= r[4] < 30 and r[5] >= since
    ]
    assert got == expected and len(got) > 0
    df = reader(spark, data, subscribe=EVENTS, pushFilters=push)  # one query per DataFrame
    assert rows_of(df.where("offset = 7 and partition = 1")) == [
        r for r in without_headers(events(data)) if r[3] == 1 and r[4] == 7
    ]


# --- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": EVENTS, "assign": '{"events":[0]}'}, "only one of the following options"),
        ({"subscribe": EVENTS, "startingOffsets": '{"events":{"0":'}, "is not valid JSON"),
        ({"subscribe": EVENTS, "startingOffsets": "latest"}, "can't be latest for batch"),
        ({"subscribe": "nope"}, "'nope' do not exist"),
    ],
)
def test_bad_options_raise_typed_errors(
    spark: Any, data: Path, options: dict[str, str], message: str
) -> None:
    # (every other option error is checked without Spark in test_source_planning.py)
    with pytest.raises(Exception, match=message) as excinfo:
        reader(spark, data, **options).collect()
    text = error_text(excinfo)
    assert "SparkOptionError" in text or "UnknownTopicError" in text


def test_missing_path_is_refused(spark: Any) -> None:
    with pytest.raises(Exception, match="option 'path' is required"):
        spark.read.format("seglog").option("subscribe", EVENTS).load().collect()


def test_kafka_options_are_accepted_and_ignored(spark: Any, data: Path) -> None:
    df = reader(
        spark,
        data,
        subscribe=OTHER,
        **{"kafka.bootstrap.servers": "localhost:9092", "kafka.group.id": "g"},
    )
    assert df.count() == 1


def test_fixed_schema_equals_the_ddl(spark: Any) -> None:
    from seglog.spark.source import fixed_schema

    assert fixed_schema(False) == spark_read_schema(False)
    assert fixed_schema(True) == spark_read_schema(True)
