"""The batch sink through Spark: ``df.write.format("seglog").mode("append")``.

Every test writes with a real Spark job into real log directories and checks the logs with
``Log.iter_records`` of a read-only manager (never with the code under test).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as sf
from pyspark.sql import types as st

from seglog.core.partitioner import partition_for_key
from seglog.engine.log_manager import open_log_dirs
from seglog.format.records import Header
from seglog.spark.staging import default_staging_root

T0 = 1_700_000_000_000


def make_data_dir(tmp_path: Path, topics: dict[str, tuple[int, dict[str, str]]]) -> Path:
    data = tmp_path / "data"
    with open_log_dirs([data]) as manager:
        for name, (partitions, configs) in topics.items():
            manager.create_topic(name, partitions, configs=configs)
    return data


def records_of(data: Path, topic: str) -> dict[int, list[Any]]:
    with open_log_dirs([data], read_only=True) as manager:
        return {
            p: list(manager.get_log(topic, p).iter_records(0)) for p in manager.partitions_of(topic)
        }


def staging_is_empty(data: Path) -> bool:
    """Nothing staged is left, not even an empty ``*.seglog-staging`` directory."""
    return not default_staging_root([data]).exists()


def writer(df: Any, data: Path, **options: str) -> Any:
    w = df.write.format("seglog").mode("append").option("path", str(data))
    for key, value in options.items():
        w = w.option(key, value)
    return w


def test_keyed_records_go_where_kafka_puts_them(spark: Any, tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, {"t": (5, {})})
    rows = [(f"key-{i}", f"value-{i}") for i in range(300)]
    df = spark.createDataFrame(rows, "key string, value string").repartition(3)
    writer(df, data, topic="t").save()
    logs = records_of(data, "t")
    assert sum(len(v) for v in logs.values()) == 300
    seen = {}
    for partition, records in logs.items():
        for record in records:
            assert partition == partition_for_key(record.key, 5)
            seen[record.key] = record.value
    assert seen == {k.encode(): v.encode() for k, v in rows}
    assert staging_is_empty(data)


def test_keyless_records_round_robin_and_tasks_keep_their_order(spark: Any, tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, {"t": (3, {})})
    rows = [(None, f"v{i:03d}") for i in range(90)]
    rdd = spark.sparkContext.parallelize(rows, 3)  # tasks: rows 0-29, 30-59, 60-89
    df = spark.createDataFrame(rdd, "key binary, value string")
    writer(df, data, topic="t").save()
    logs = records_of(data, "t")
    assert [len(logs[p]) for p in range(3)] == [30, 30, 30]
    for partition, records in logs.items():
        values = [int(r.value[1:]) for r in records]
        assert values == sorted(values)  # task order, then row order within a task
        assert all(r.key is None for r in records)
        # task t (values 30t..30t+29) starts its round-robin at partition t
        for v in values:
            task, index = divmod(v, 30)
            assert partition == (task + index) % 3


def test_topic_column_partition_column_headers_timestamps_and_tombstones(
    spark: Any, tmp_path: Path
) -> None:
    data = make_data_dir(tmp_path, {"a": (2, {}), "b": (1, {})})
    when = dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=dt.UTC)
    schema = (
        "topic string, partition int, key binary, value binary, "
        "headers array<struct<key: string, value: binary>>, timestamp timestamp"
    )
    rows = [
        ("a", 1, b"k1", b"v1", [("h", b"x"), ("n", None)], when),
        ("a", None, b"k2", None, None, when),  # a tombstone, partitioned by its key
        ("b", None, None, b"v3", [], None),  # no timestamp: the task's clock
        ("a", 0, None, b"v4", None, when + dt.timedelta(milliseconds=5)),
    ]
    before = int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    writer(spark.createDataFrame(rows, schema), data).save()
    after = int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    a = records_of(data, "a")
    when_ms = 1_700_000_000_123
    p_k2 = partition_for_key(b"k2", 2)
    assert [(r.key, r.value, r.headers, r.timestamp) for r in a[1] if r.key == b"k1"] == [
        (b"k1", b"v1", (Header("h", b"x"), Header("n", None)), when_ms)
    ]
    assert [(r.value, r.timestamp) for r in a[p_k2] if r.key == b"k2"] == [(None, when_ms)]
    assert [(r.key, r.value, r.timestamp) for r in a[0] if r.value == b"v4"] == [
        (None, b"v4", when_ms + 5)
    ]
    (b,) = records_of(data, "b")[0]
    assert (b.key, b.value, b.headers) == (None, b"v3", ())
    assert before <= b.timestamp <= after


def test_topic_option_overrides_the_column_and_double_seconds(spark: Any, tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, {"t": (1, {}), "other": (1, {})})
    df = spark.createDataFrame(
        [("other", "k", "v", 1_700_000_000.25)],
        "topic string, key string, value string, timestamp double",
    )
    writer(df, data, topic="t").save()
    assert records_of(data, "other") == {0: []}
    (record,) = records_of(data, "t")[0]
    assert (record.key, record.value, record.timestamp) == (b"k", b"v", 1_700_000_000_250)


def test_round_trip_through_the_source(spark: Any, tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, {"src": (2, {}), "dst": (2, {})})
    with open_log_dirs([data]) as manager:
        for p in range(2):
            manager.get_log("src", p).append_records(
                [
                    (b"k%d" % i, b"v%d" % i, (Header("h", b"%d" % i),), T0 + i)
                    for i in range(p, 40, 2)
                ]
            )
    df = (
        spark.read.format("seglog")
        .option("path", str(data))
        .option("subscribe", "src")
        .option("includeHeaders", "true")
        .load()
    )
    # topic option overrides the read topic; partition column keeps each record's partition
    writer(df, data, topic="dst").save()
    src, dst = records_of(data, "src"), records_of(data, "dst")
    for p in range(2):

        def facts(records: list[Any]) -> list[Any]:
            return sorted((r.key, r.value, r.headers, r.timestamp) for r in records)

        assert facts(dst[p]) == facts(src[p])


def test_failed_task_appends_nothing_and_removes_staging(spark: Any, tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, {"t": (2, {})})

    @sf.udf("string")
    def explode_on_13(value: str) -> str:
        if value == "v13":
            raise ValueError("boom on v13")
        return value

    df = spark.createDataFrame(
        spark.sparkContext.parallelize([(f"k{i}", f"v{i}") for i in range(40)], 4),
        "key string, value string",
    ).withColumn("value", explode_on_13("value"))
    with pytest.raises(Exception, match="boom on v13"):
        writer(df, data, topic="t").save()
    assert records_of(data, "t") == {0: [], 1: []}
    assert staging_is_empty(data)


def test_keyless_on_compacted_topic_and_too_large_fail_with_typed_errors(
    spark: Any, tmp_path: Path
) -> None:
    data = make_data_dir(
        tmp_path,
        {"c": (1, {"cleanup.policy": "compact"}), "small": (1, {"max.message.bytes": "300"})},
    )
    keyless = spark.createDataFrame([("k", "v"), (None, "v")], "key string, value string")
    with pytest.raises(Exception, match=r"KeylessRecordError.*compacted topic requires a key"):
        writer(keyless, data, topic="c").save()
    big = spark.createDataFrame([("k", "x" * 1000)], "key string, value string")
    with pytest.raises(Exception, match="RecordTooLargeError"):
        writer(big, data, topic="small").save()
    assert records_of(data, "c") == {0: []} and records_of(data, "small") == {0: []}
    assert staging_is_empty(data)


def test_refusals_name_the_problem(spark: Any, tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, {"t": (2, {})})
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    with pytest.raises(Exception, match="append-only"):
        df.write.format("seglog").mode("overwrite").option("path", str(data)).option(
            "topic", "t"
        ).save()
    with pytest.raises(Exception, match="topic 'missing' does not exist"):
        writer(df, data, topic="missing").save()
    with pytest.raises(Exception, match="no partition 7"):
        writer(df.withColumn("partition", sf.lit(7)), data, topic="t").save()
    with pytest.raises(Exception, match="must be string or binary"):
        writer(df.withColumn("value", sf.lit(3)), data, topic="t").save()
    assert records_of(data, "t") == {0: [], 1: []}
    assert staging_is_empty(data)


def test_locked_data_dir_fails_the_commit_clearly(spark: Any, tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, {"t": (1, {})})
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    # this process holds the .lock; the commit runs in another (a Spark Python worker)
    with (
        open_log_dirs([data]),
        pytest.raises(Exception, match=r"LogDirectoryLockedError.*Stop the other process"),
    ):
        writer(df, data, topic="t", commitLockWaitMs="0").save()
    assert records_of(data, "t") == {0: []}
    assert staging_is_empty(data)


def test_empty_dataframe_appends_nothing(spark: Any, tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, {"t": (1, {})})
    df = spark.createDataFrame([], st.StructType([st.StructField("value", st.StringType())]))
    writer(df, data, topic="t").save()
    assert records_of(data, "t") == {0: []}
    assert staging_is_empty(data)
