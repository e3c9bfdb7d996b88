"""The source's options, planning and reading without Spark (plain Python calls).

The planner and executor code of the source is plain Python (spec/spark.md §5): options are
parsed, ranges planned, filters pushed and ranges read here directly, on real log
directories; expected rows come from ``Log.iter_records``.
"""

from __future__ import annotations

import datetime as dt
import json
import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    StringStartsWith,
)
from source_support import (
    COMPACTED,
    EVENTS,
    EVENTS_PER_PARTITION,
    T0,
    build_data_dir,
    expected_rows,
    manager_of,
)

from seglog.errors import DataLossError, OffsetOutOfRangeError, SparkOptionError, UnknownTopicError
from seglog.spark.arrow_reader import RangeRequest, read_range
from seglog.spark.offset_ranges import OffsetRange, rate_limit, split_ranges
from seglog.spark.options import OffsetKind, StrategyKind, parse_duration_ms, parse_source_options
from seglog.spark.schema import arrow_read_schema
from seglog.spark.source import SeglogBatchReader


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_data_dir(tmp_path_factory.mktemp("planning"))


def options(data: Path, *, streaming: bool = False, **extra: str) -> Any:
    # Spark lower-cases keys; parse_source_options must not care.
    given = {"path": str(data), **{k.lower(): v for k, v in extra.items()}}
    return parse_source_options(given, is_streaming=streaming)


def table_rows(batches: list[pa.RecordBatch]) -> list[tuple[Any, ...]]:
    out = []
    for row in pa.Table.from_batches(batches, schema=batches[0].schema).to_pylist():
        values = list(row.values())
        if len(values) > 7:
            values[7] = None if values[7] is None else [tuple(h.values()) for h in values[7]]
        else:
            values.append(None)
        out.append(tuple(values))
    return out


# --- options ---------------------------------------------------------------------------------
def test_defaults_and_parsed_values(data: Path) -> None:
    batch = options(data, subscribe=f"{EVENTS}, ,{EVENTS}")
    assert batch.strategy.kind is StrategyKind.SUBSCRIBE and batch.strategy.topics == (EVENTS,)
    assert batch.starting.kind is OffsetKind.EARLIEST and batch.ending.kind is OffsetKind.LATEST
    assert batch.fail_on_data_loss and not batch.include_headers and not batch.read_compacted
    stream = options(data, streaming=True, subscribePattern="ev.*", maxOffsetsPerTrigger="10")
    assert stream.starting.kind is OffsetKind.LATEST
    assert stream.max_offsets_per_trigger == 10 and stream.max_trigger_delay_ms == 15 * 60_000
    parsed = options(
        data,
        assign='{"events":[1,0]}',
        startingTimestamp="5",
        startingOffsets="earliest",  # lower precedence than startingTimestamp
        endingOffsetsByTimestamp='{"events":{"0":7,"1":8}}',
        includeHeaders="TRUE",
        readCompacted="true",
        failOnDataLoss="False",
    )
    assert parsed.strategy.partitions == (("events", 1), ("events", 0))
    assert parsed.starting.kind is OffsetKind.TIMESTAMP and parsed.starting.timestamp_ms == 5
    assert parsed.ending.as_dict() == {("events", 0): 7, ("events", 1): 8}
    assert parsed.include_headers and parsed.read_compacted and not parsed.fail_on_data_loss
    assert pickle.loads(pickle.dumps(parsed)) == parsed
    assert [parse_duration_ms(t, "x") for t in ("15m", "30s", "500", "2h", "1d")] == [
        900_000,
        30_000,
        500,
        7_200_000,
        86_400_000,
    ]


@pytest.mark.parametrize(
    ("extra", "streaming", "message"),
    [
        ({}, False, "one of the following options must be specified"),
        ({"subscribe": "a", "subscribePattern": "b"}, False, "only one of the following"),
        ({"assign": "events"}, False, "no topicpartitions to assign"),
        ({"assign": '{"events":["x"]}'}, False, "needs a list of partition numbers"),
        ({"subscribe": " , "}, False, "no topics to subscribe to"),
        ({"subscribePattern": "("}, False, "not a valid regular expression"),
        ({"subscribe": "t", "startingOffsets": "{bad"}, False, "is not valid JSON"),
        ({"subscribe": "t", "startingOffsets": "middle"}, False, "expected 'earliest', 'latest'"),
        ({"subscribe": "t", "startingOffsets": '{"t":{"0":-3}}'}, False, "offset -3"),
        ({"subscribe": "t", "startingOffsets": '{"t":{"x":1}}'}, False, "not a partition number"),
        ({"subscribe": "t", "startingOffsets": "latest"}, False, "can't be latest for batch"),
        ({"subscribe": "t", "startingOffsets": '{"t":{"0":-1}}'}, False, "can't be latest"),
        ({"subscribe": "t", "endingOffsets": "earliest"}, False, "can't be earliest for batch"),
        ({"subscribe": "t", "endingOffsets": '{"t":{"0":-2}}'}, False, "can't be earliest"),
        (
            {
                "subscribe": "t",
                "startingOffsets": '{"t":{"0":5}}',
                "endingOffsets": '{"t":{"0":4}}',
            },
            False,
            "above its ending offset",
        ),
        (
            {
                "subscribe": "t",
                "startingOffsets": '{"t":{"0":1}}',
                "endingOffsets": '{"u":{"0":4}}',
            },
            False,
            "must name the same topic-partitions",
        ),
        ({"subscribe": "t", "endingOffsets": "latest"}, True, "not valid in streaming queries"),
        ({"subscribe": "t", "endingTimestamp": "5"}, True, "not valid in streaming queries"),
        ({"subscribe": "t", "startingTimestamp": "-5"}, False, "milliseconds since the epoch"),
        ({"subscribe": "t", "startingOffsetsByTimestamp": '{"t":{"0":-1}}'}, False, "negative"),
        ({"subscribe": "t", "startingOffsetsByTimestampStrategy": "x"}, False, "'error' or"),
        ({"subscribe": "t", "minPartitions": "0"}, False, "must be a positive integer"),
        ({"subscribe": "t", "maxRecordsPerPartition": "x"}, False, "must be a positive integer"),
        ({"subscribe": "t", "maxOffsetsPerTrigger": "-1"}, True, "must be a positive integer"),
        (
            {"subscribe": "t", "maxOffsetsPerTrigger": "5", "minOffsetsPerTrigger": "6"},
            True,
            "can't be greater than",
        ),
        ({"subscribe": "t", "maxTriggerDelay": "soon"}, True, "expected a duration"),
        ({"subscribe": "t", "failOnDataLoss": "yes"}, False, "expected 'true' or 'false'"),
        ({"subscribe": "t", "kafka.auto.offset.reset": "x"}, False, "auto.offset.reset"),
        ({"subscribe": "t", "kafka.key.deserializer": "x"}, False, "key.deserializer"),
        ({"subscribe": "t", "kafka.value.deserializer": "x"}, False, "value.deserializer"),
        ({"subscribe": "t", "kafka.enable.auto.commit": "x"}, False, "enable.auto.commit"),
        ({"subscribe": "t", "kafka.interceptor.classes": "x"}, False, "interceptor.classes"),
    ],
)
def test_option_errors(data: Path, extra: dict[str, str], streaming: bool, message: str) -> None:
    with pytest.raises(SparkOptionError, match=message):
        options(data, streaming=streaming, **extra)


def test_location_errors(tmp_path: Path) -> None:
    with pytest.raises(SparkOptionError, match="option 'path' is required"):
        parse_source_options({"subscribe": "t"}, is_streaming=False)
    with pytest.raises(SparkOptionError, match="does not exist"):
        parse_source_options({"path": str(tmp_path / "nope"), "subscribe": "t"}, is_streaming=False)


def test_server_properties_give_log_dirs(data: Path, tmp_path: Path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text(f"log.dirs={data}\nlog.retention.hours=1\n", encoding="ascii")
    parsed = parse_source_options(
        {"config": str(properties), "subscribe": EVENTS}, is_streaming=False
    )
    broker = parsed.broker_config()
    assert broker.log_dirs == (str(data),)
    assert broker.log_defaults.retention_ms == 3_600_000
    assert SeglogBatchReader(parsed).plan()


# --- range arithmetic ------------------------------------------------------------------------
def test_split_ranges_like_spark() -> None:
    ranges = [OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 5, 5), OffsetRange("t", 2, 0, 10)]
    assert split_ranges(ranges, min_partitions=None, max_records_per_partition=None) == [
        ranges[0],
        ranges[2],
    ]
    # minPartitions=4: total 110, ideal 27.5: 100 -> round(3.64) = 4 parts, 10 -> 1 part
    assert split_ranges(ranges, min_partitions=4, max_records_per_partition=None) == [
        OffsetRange("t", 0, 0, 25),
        OffsetRange("t", 0, 25, 50),
        OffsetRange("t", 0, 50, 75),
        OffsetRange("t", 0, 75, 100),
        ranges[2],
    ]
    assert split_ranges(ranges, min_partitions=2, max_records_per_partition=None) == [
        ranges[0],
        ranges[2],
    ]
    assert split_ranges(ranges, min_partitions=None, max_records_per_partition=30) == [
        OffsetRange("t", 0, 0, 25),
        OffsetRange("t", 0, 25, 50),
        OffsetRange("t", 0, 50, 75),
        OffsetRange("t", 0, 75, 100),
        ranges[2],
    ]
    assert split_ranges(
        [OffsetRange("t", 0, 0, 10)], min_partitions=None, max_records_per_partition=3
    ) == [
        OffsetRange("t", 0, 0, 2),
        OffsetRange("t", 0, 2, 5),
        OffsetRange("t", 0, 5, 7),
        OffsetRange("t", 0, 7, 10),
    ]


def test_rate_limit_shares_in_proportion_without_starving() -> None:
    start = {("t", 0): 0, ("t", 1): 10, ("t", 2): 7}
    until = {("t", 0): 100, ("t", 1): 11, ("t", 2): 7}
    assert rate_limit(10, start, until) == {("t", 0): 9, ("t", 1): 11, ("t", 2): 7}
    assert rate_limit(1000, start, until) == until
    assert rate_limit(5, {("t", 0): 3}, {("t", 0): 3}) == {("t", 0): 3}


# --- planning --------------------------------------------------------------------------------
def test_pushdown_narrows_ranges_safely(data: Path) -> None:
    reader = SeglogBatchReader(options(data, subscribe=EVENTS, pushFilters="true"))
    since = dt.datetime.fromtimestamp((T0 + 20_000) / 1000, dt.UTC)
    filters = [
        IsNotNull(("partition",)),
        IsNotNull(("key",)),
        In(("partition",), (0, 2)),
        GreaterThanOrEqual(("offset",), 3),
        LessThan(("offset",), 30),
        GreaterThanOrEqual(("timestamp",), since),
        StringStartsWith(("value",), "v"),
        EqualTo(("topic",), EVENTS),
    ]
    rest = list(reader.pushFilters(filters))
    # timestamp is narrowed but still checked by Spark; key/value filters are Spark's
    assert rest == [filters[1], filters[5], filters[6]]
    # timestamps reach T0 + 20 s at offset 20 (record i: T0 + 1000 i, minus 1.5 s if i%9 == 4)
    assert reader.plan() == [OffsetRange(EVENTS, 0, 20, 30), OffsetRange(EVENTS, 2, 20, 30)]
    naive = SeglogBatchReader(options(data, subscribe=EVENTS, pushFilters="true"))
    naive_since = dt.datetime.fromtimestamp((T0 + 20_001) / 1000)  # naive: local time
    list(naive.pushFilters([GreaterThan(("timestamp",), naive_since), EqualTo(("partition",), 1)]))
    assert naive.plan() == [OffsetRange(EVENTS, 1, 21, EVENTS_PER_PARTITION)]
    nothing = SeglogBatchReader(options(data, subscribe=EVENTS, pushFilters="true"))
    list(nothing.pushFilters([EqualTo(("offset",), 5), EqualTo(("offset",), 6)]))
    assert nothing.plan() == []
    # without the option (the default) every filter goes back to Spark and the plan is whole
    default = SeglogBatchReader(options(data, subscribe=EVENTS))
    assert list(default.pushFilters(filters)) == filters
    assert default.plan() == SeglogBatchReader(options(data, subscribe=EVENTS)).plan()
    assert len(default.plan()) == 3


def test_unknown_topic_and_partition(data: Path) -> None:
    with pytest.raises(UnknownTopicError, match="'missing' do not exist"):
        SeglogBatchReader(options(data, subscribe=f"{EVENTS},missing")).plan()
    with pytest.raises(UnknownTopicError, match="has no partition 9"):
        SeglogBatchReader(options(data, assign='{"events":[9]}')).plan()
    assert SeglogBatchReader(options(data, subscribePattern="^zzz")).plan() == []


def test_offsets_beyond_the_log(data: Path) -> None:
    end = json.dumps({EVENTS: {"0": 99}})
    with pytest.raises(OffsetOutOfRangeError, match="above the latest offset 40"):
        SeglogBatchReader(options(data, assign='{"events":[0]}', endingOffsets=end)).plan()
    late = json.dumps({EVENTS: {"0": 45}})
    with pytest.raises(DataLossError, match="starting offset 45 is above the ending offset"):
        SeglogBatchReader(options(data, assign='{"events":[0]}', startingOffsets=late)).plan()
    skipped = options(data, assign='{"events":[0]}', startingOffsets=late, failOnDataLoss="false")
    assert SeglogBatchReader(skipped).plan() == []


def test_reader_and_partitions_pickle(data: Path) -> None:
    reader = SeglogBatchReader(
        options(data, subscribe=EVENTS, minPartitions="4", pushFilters="true")
    )
    list(reader.pushFilters([EqualTo(("partition",), 1)]))
    partitions = reader.partitions()
    assert len(partitions) == 4
    copy = pickle.loads(pickle.dumps(reader))
    batches = [b for p in pickle.loads(pickle.dumps(partitions)) for b in copy.read(p)]
    assert table_rows(batches) == [(*r[:7], None) for r in expected_rows(data, EVENTS, 1)]


# --- reading ---------------------------------------------------------------------------------
def test_read_range_matches_iter_records_in_small_batches(data: Path) -> None:
    request = RangeRequest((str(data),), None, EVENTS, 2, 3, 37, include_headers=True)
    batches = list(read_range(request, read_bytes=300, batch_rows=4))
    assert all(b.schema.equals(arrow_read_schema(True)) for b in batches)
    assert max(b.num_rows for b in batches) <= 4
    assert table_rows(batches) == expected_rows(data, EVENTS, 2, 3, 37)


def test_read_compacted_range_starts_in_the_copy(data: Path) -> None:
    request = RangeRequest((str(data),), None, COMPACTED, 0, 0, 100, read_compacted=True)
    with pytest.raises(DataLossError, match="the log now ends at"):
        list(read_range(request))
    request = RangeRequest((str(data),), None, COMPACTED, 0, 0, 37, read_compacted=True)
    got = table_rows(list(read_range(request)))
    assert got == [
        (*r[:7], None) for r in expected_rows(data, COMPACTED, 0, 0, read_compacted=True)
    ]


def test_retention_after_planning_is_data_loss_at_read_time(tmp_path: Path) -> None:
    data = build_data_dir(tmp_path)
    planned = SeglogBatchReader(options(data, assign='{"events":[1]}')).partitions()
    lenient = SeglogBatchReader(options(data, assign='{"events":[1]}', failOnDataLoss="false"))
    lenient_partitions = lenient.partitions()
    with manager_of(data) as manager:
        manager.delete_records({manager.get_log(EVENTS, 1).topic_partition: 12})
    strict = SeglogBatchReader(options(data, assign='{"events":[1]}'))
    with pytest.raises(DataLossError, match="events-1: offsets 0 to 11 are gone"):
        list(strict.read(planned[0]))
    rows = table_rows([b for p in lenient_partitions for b in lenient.read(p)])
    assert [r[4] for r in rows] == list(range(12, EVENTS_PER_PARTITION))
    with manager_of(data) as manager:
        manager.delete_topic(EVENTS)
    with pytest.raises(DataLossError, match="events-1"):
        list(strict.read(planned[0]))
    assert list(lenient.read(lenient_partitions[0])) == []


def test_subscribe_pattern_leaves_out_only_kafkas_internal_topics() -> None:
    """An admin listing hides Kafka's internal topics, not every name starting with ``__``
    (a corpus broker has ``__confluent.support.metrics``, an ordinary topic)."""
    from seglog.spark.options import Strategy

    everything = Strategy(StrategyKind.SUBSCRIBE_PATTERN, pattern=".*")
    assert everything.matches("__confluent.support.metrics")
    assert everything.matches("events")
    for internal in ("__consumer_offsets", "__transaction_state", "__share_group_state"):
        assert not everything.matches(internal)
    assert Strategy(StrategyKind.SUBSCRIBE_PATTERN, pattern="support").matches(
        "__confluent.support.metrics"
    )
    # subscribe and assign name topics outright, internal ones included
    assert Strategy(StrategyKind.SUBSCRIBE, topics=("__consumer_offsets",)).matches(
        "__consumer_offsets"
    )
