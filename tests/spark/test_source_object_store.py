"""The Spark source over log directories in object storage (a real S3 API: moto's server on
loopback): the same rows as over the local directory, for a seglog-written directory and a
broker-written one from the corpus; the bucket is only read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest

from corpus_location import corpus_root
from seglog.clock import ManualClock
from seglog.engine.log_manager import open_log_dirs
from support.cleaning_data import fill
from support.s3_server import upload_tree

S3 = {
    "s3.region": "us-east-1",
    "s3.access.key": "testing",
    "s3.secret.key": "testing",
}


def rows(
    spark: Any, path: str, endpoint: str | None = None, **options: str
) -> list[tuple[Any, ...]]:
    reader = spark.read.format("seglog").option("path", path)
    if "assign" not in options:
        reader = reader.option("subscribePattern", ".*")
    if endpoint is not None:
        reader = reader.option("s3.endpoint", endpoint)
        for key, value in S3.items():
            reader = reader.option(key, value)
    for key, value in options.items():
        reader = reader.option(key, value)
    frame = reader.load().select("topic", "partition", "offset", "key", "value", "timestamp")
    return sorted(tuple(r) for r in frame.collect())


def bucket_listing(endpoint: str, bucket: str) -> list[tuple[str, str]]:
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    return [
        (o["Key"], o["ETag"]) for o in client.list_objects_v2(Bucket=bucket).get("Contents", [])
    ]


def test_source_over_s3_equals_the_local_directory(
    spark: Any, s3_endpoint: str, s3_bucket: str, tmp_path: Path
) -> None:
    clock = ManualClock(1_700_000_000_000)
    data = tmp_path / "data"
    with open_log_dirs([data], clock=clock) as manager:
        fill(manager, clock, keys=120, records=1200, seed=3)
    uri = upload_tree(s3_endpoint, s3_bucket, "kafka/data", data)
    before = bucket_listing(s3_endpoint, s3_bucket)
    local = rows(spark, str(data))
    assert local and rows(spark, uri, s3_endpoint) == local
    # assign and offsets work the same; the mirror fetches only what the query reads
    assign = '{"prices": [1]}'
    assert rows(spark, uri, s3_endpoint, assign=assign, startingOffsets='{"prices": {"1": 5}}') == [
        r for r in local if r[0] == "prices" and r[1] == 1 and r[2] >= 5
    ]
    assert bucket_listing(s3_endpoint, s3_bucket) == before, "the bucket is only read"


def test_source_over_s3_reads_a_broker_written_directory(
    spark: Any, s3_endpoint: str, s3_bucket: str
) -> None:
    root = corpus_root()
    name = "no-licence/smartassets-connect-compacted"
    if root is None or not (root / name).is_dir():
        pytest.skip(f"the corpus directory {name} is absent")
    uri = upload_tree(s3_endpoint, s3_bucket, "broker", root / name)
    assert rows(spark, uri, s3_endpoint) == rows(spark, str(root / name))


def test_a_missing_location_is_a_clear_error(spark: Any, s3_endpoint: str, s3_bucket: str) -> None:
    with pytest.raises(Exception, match="does not exist"):
        rows(spark, f"s3://{s3_bucket}/nothing-here", s3_endpoint)


def test_stats_and_export_over_s3_equal_the_local_ones(
    spark: Any, s3_endpoint: str, s3_bucket: str, tmp_path: Path
) -> None:
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    from seglog.spark.export import export_topic
    from seglog.spark.stats import partition_stats
    from seglog.storage.remote_copy_store import S3Settings

    clock = ManualClock(1_700_000_000_000)
    data = tmp_path / "data"
    with open_log_dirs([data], clock=clock) as manager:
        fill(manager, clock, keys=80, records=600, seed=8)
    uri = upload_tree(s3_endpoint, s3_bucket, "kafka/data", data)
    s3 = S3Settings(
        endpoint_url=s3_endpoint, region="us-east-1", access_key="testing", secret_key="testing"
    )
    local_stats = sorted(tuple(r) for r in partition_stats(spark, [data]).collect())
    remote_stats = sorted(tuple(r) for r in partition_stats(spark, [uri], s3=s3).collect())
    # every figure but the partition's directory (a mirror's path) is the same
    assert [r[:2] + r[3:] for r in remote_stats] == [r[:2] + r[3:] for r in local_stats] or (
        remote_stats == local_stats
    )

    def table(rows: Any) -> list[tuple[Any, ...]]:
        return sorted(
            ((r["key"], r["value"], r["partition"], r["offset"]) for r in rows.to_pylist()),
            key=lambda r: (r[2], r[3]),
        )

    for mode in ("table", "changelog"):
        local_out = tmp_path / f"export-{mode}"
        n_local = export_topic(spark, [data], "prices", local_out, mode=mode)
        target = f"s3://{s3_bucket}/exports/{mode}"
        n_remote = export_topic(spark, [uri], "prices", target, mode=mode, s3=s3)
        assert n_remote == n_local > 0
        filesystem = pafs.S3FileSystem(
            endpoint_override=s3_endpoint.partition("://")[2],
            scheme="http",
            region="us-east-1",
            access_key="testing",
            secret_key="testing",
        )
        remote_table = pq.read_table(f"{s3_bucket}/exports/{mode}", filesystem=filesystem)
        assert table(remote_table) == table(pq.read_table(local_out))
    # a second export replaces the first: same rows, one run's parts
    export_topic(spark, [uri], "prices", f"s3://{s3_bucket}/exports/table", s3=s3)
    again = pq.read_table(f"{s3_bucket}/exports/table", filesystem=filesystem)
    assert table(again) == table(pq.read_table(tmp_path / "export-table"))


def test_streaming_source_over_s3(
    spark: Any, s3_endpoint: str, s3_bucket: str, tmp_path: Path
) -> None:
    clock = ManualClock(1_700_000_000_000)
    data = tmp_path / "data"
    with open_log_dirs([data], clock=clock) as manager:
        fill(manager, clock, keys=40, records=300, seed=6)
    uri = upload_tree(s3_endpoint, s3_bucket, "kafka/data", data)
    reader = spark.readStream.format("seglog").option("path", uri).option("subscribe", "prices")
    reader = reader.option("startingOffsets", "earliest").option("s3.endpoint", s3_endpoint)
    for key, value in S3.items():
        reader = reader.option(key, value)
    query = (
        reader.load()
        .select("topic", "partition", "offset", "key", "value", "timestamp")
        .writeStream.format("memory")
        .queryName("seglog_s3_stream")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    got = sorted(tuple(r) for r in spark.sql("select * from seglog_s3_stream").collect())
    assert got == [r for r in rows(spark, str(data)) if r[0] == "prices"]
