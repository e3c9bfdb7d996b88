"""Source edges through real Spark: timestamps under ``readCompacted``, pushed filters that
really prune the scan, filters on a LogAppendTime topic, ``endingTimestamp``.

Expected rows come from ``Log.iter_records`` (plainly or ``read_compacted``) filtered in
plain Python, never from the code under test.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as sf
from source_support import APPEND_TIME, EVENTS, EVENTS_PARTITIONS, build_data_dir, expected_rows

from seglog.engine.compaction.compactor import iter_compacted_records
from seglog.engine.log_manager import open_log_dirs

T0 = 1_700_000_000_000
TOPIC = "rc"


def reader(spark: Any, data: Path, **options: str) -> Any:
    read = spark.read.format("seglog").option("path", str(data))
    for key, value in options.items():
        read = read.option(key, value)
    return read.load()


def offsets_of(df: Any) -> list[int]:
    return sorted(r.offset for r in df.select("offset").collect())


def utc(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_data_dir(tmp_path_factory.mktemp("edges"))


@pytest.fixture(scope="module")
def copy_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A topic whose read-compacted view differs from the log where timestamps matter.

    Offset 0 (key k0, the *latest* timestamp of the first round) is superseded by offset 30
    (k0 again, an old timestamp), so the published copy drops it while the log keeps it.
    Then delete-records moves the log start to 20: the copy still holds offsets 1..19, which
    the log no longer has. Offsets 31 and 32 come after the copy's horizon.
    """
    data = tmp_path_factory.mktemp("copy") / "data"
    with open_log_dirs([data]) as manager:
        manager.create_topic(
            TOPIC,
            1,
            {"cleanup.policy": "compact,delete", "retention.ms": "-1", "segment.bytes": "1024"},
        )
        log = manager.get_log(TOPIC, 0)
        log.append_records([(b"k0", b"first", (), T0 + 500_000)])
        log.append_records([(b"k%d" % i, b"v%d" % i, (), T0 + 1000 * i) for i in range(1, 30)])
        log.append_records([(b"k0", b"again", (), T0)])
        manager.compact(TOPIC)
        log.append_records([(b"t1", b"tail", (), T0 + 600_000), (b"t2", b"x", (), T0 + 2)])
        manager.delete_records({log.topic_partition: 20})
    return data


def compacted_view(data: Path) -> list[tuple[int, int]]:
    """(offset, timestamp ms) of every record a read-compacted reader sees."""
    with open_log_dirs([data], read_only=True) as manager:
        log = manager.get_log(TOPIC, 0)
        return [(r.offset, r.timestamp) for r in iter_compacted_records(log, 0)]


def test_copy_fixture_has_the_shape_the_tests_need(copy_data: Path) -> None:
    view = compacted_view(copy_data)
    offsets = [o for o, _ in view]
    assert 0 not in offsets and offsets[:3] == [1, 2, 3]  # offset 0 superseded in the copy
    assert {30, 31, 32} <= set(offsets)
    with open_log_dirs([copy_data], read_only=True) as manager:
        assert manager.get_log(TOPIC, 0).log_start_offset == 20  # copy holds 1..19 alone


def test_timestamp_filter_under_read_compacted_keeps_copy_records(
    spark: Any, copy_data: Path
) -> None:
    # Copy records 5..19 (below the log start) reach the bound: a plan narrowed through the
    # log's time index alone would start at 20 and lose them.
    view = compacted_view(copy_data)

    def scan() -> Any:  # one DataFrame per filtered query (see the pushFilters option)
        return reader(spark, copy_data, subscribe=TOPIC, readCompacted="true", pushFilters="true")

    for bound in (T0 + 5000, T0 + 400_000, T0 + 10**9):
        df = scan()
        got = offsets_of(df.where(df.timestamp >= utc(bound)))
        assert got == [o for o, ts in view if ts >= bound], bound
    df = scan()
    got = offsets_of(df.where(df.timestamp > utc(T0 + 5000)).where("offset < 25"))
    assert got == [o for o, ts in view if ts > T0 + 5000 and o < 25]


def test_starting_timestamps_under_read_compacted_search_the_copy(
    spark: Any, copy_data: Path
) -> None:
    view = compacted_view(copy_data)

    def from_first_reaching(bound: int) -> list[int]:
        first = next(o for o, ts in view if ts >= bound)
        return [o for o, _ in view if o >= first]

    got = offsets_of(
        reader(
            spark,
            copy_data,
            subscribe=TOPIC,
            readCompacted="true",
            startingTimestamp=str(T0 + 5000),
        )
    )
    assert got == from_first_reaching(T0 + 5000) and got[0] == 5
    # the log's first match (offset 0) is a record the copy dropped: the answer is the first
    # record after the horizon that reaches the bound
    by_partition = json.dumps({TOPIC: {"0": T0 + 400_000}})
    got = offsets_of(
        reader(
            spark,
            copy_data,
            subscribe=TOPIC,
            readCompacted="true",
            startingOffsetsByTimestamp=by_partition,
        )
    )
    assert got == from_first_reaching(T0 + 400_000) == [31, 32]
    ending = json.dumps({TOPIC: {"0": T0 + 10_000}})
    got = offsets_of(
        reader(
            spark, copy_data, subscribe=TOPIC, readCompacted="true", endingOffsetsByTimestamp=ending
        )
    )
    assert got == [o for o, _ in view if o < 10]


def test_reusing_a_dataframe_after_a_filtered_query_reads_everything(
    spark: Any, data: Path
) -> None:
    # Spark 4.3 keeps the plan made at pushdown on the loaded DataFrame and reuses it for a
    # later scan of it that pushes nothing: by default the source pushes no filter, so the
    # plan never depends on one.
    df = reader(spark, data, subscribe=EVENTS)
    assert df.where("partition = 1").count() == 40
    assert df.where("offset >= 1000").count() == 0
    assert df.count() == 3 * 40
    assert df.where("partition = 1").union(df).count() == 40 + 3 * 40
    assert df.where("partition = 1").rdd.getNumPartitions() == EVENTS_PARTITIONS


def test_push_filters_option_prunes_input_partitions(spark: Any, data: Path) -> None:
    def scan(**extra: str) -> Any:  # a DataFrame per query, as the option asks
        return reader(spark, data, subscribe=EVENTS, pushFilters="true", **extra)

    one = scan().where("partition = 1")
    assert one.rdd.getNumPartitions() == 1  # the scan planned one range: the filter reached it
    assert offsets_of(scan().where("partition = 1")) == list(range(40))
    none = scan().where("offset >= 1000")
    assert none.rdd.getNumPartitions() == 1  # Spark's one empty split
    assert scan().where("offset >= 1000").count() == 0
    narrowed = scan(maxRecordsPerPartition="10").where("partition = 2 and offset >= 25")
    assert narrowed.rdd.getNumPartitions() == 2  # 25..39 in parts of at most 10
    assert offsets_of(
        scan(maxRecordsPerPartition="10").where("partition = 2 and offset >= 25")
    ) == list(range(25, 40))
    # filters Spark does not push (OR, NOT, arithmetic) still give the right rows
    tricky = scan().where("(partition = 0 or offset = 3) and not (offset between 10 and 35)")
    expected = sorted(
        r[4]
        for p in range(EVENTS_PARTITIONS)
        for r in expected_rows(data, EVENTS, p)
        if (r[3] == 0 or r[4] == 3) and not 10 <= r[4] <= 35
    )
    assert offsets_of(tricky) == expected
    assert offsets_of(scan().where("partition = 1 and offset % 10 = 0")) == [0, 10, 20, 30]


def test_timestamp_filter_on_a_log_append_time_topic(spark: Any, data: Path) -> None:
    (first, second) = expected_rows(data, APPEND_TIME, 0)
    stamped = first[5]  # LogAppendTime: each record reports the batch's append time
    for push in ("true", "false"):

        def scan(push: str = push) -> Any:
            return reader(spark, data, subscribe=APPEND_TIME, pushFilters=push)

        assert offsets_of(scan().where(sf.col("timestamp") >= stamped)) == [0, 1]
        assert offsets_of(scan().where(sf.col("timestamp") == stamped)) == [0, 1]
        assert offsets_of(scan().where(sf.col("timestamp") > stamped)) == []
    assert second[5] == stamped


def test_ending_timestamp(spark: Any, data: Path) -> None:
    # record i of events-p: T0 + 1000 i, minus 1500 when i % 9 == 4 (source_support.py)
    got = reader(
        spark,
        data,
        assign=json.dumps({EVENTS: [0, 2]}),
        startingTimestamp=str(T0 + 3000),
        endingTimestamp=str(T0 + 8000),
    )
    rows = sorted((r.partition, r.offset) for r in got.select("partition", "offset").collect())
    assert rows == [(p, o) for p in (0, 2) for o in range(3, 8)]
