"""The Spark half of ``seglog demo``: :func:`run_spark_pipeline`.

``seglog.cli`` may not import ``seglog.spark`` (independent layers, docs/architecture.md), so
:mod:`seglog.cli.demo` loads this module by name (``importlib.import_module``), the same
plugin pattern as ``seglog spark`` (:data:`seglog.cli.main.PLUGINS`). Importing it imports no
pyspark: the session is built when :func:`run_spark_pipeline` runs.

The pipeline, on the embedded session (``local[*]``, :func:`seglog.spark.session.embedded_session`;
an already running session is reused and left running, one built here is stopped at the end):

1. **read** ``stock-prices`` with the ``seglog`` source (Spark's Kafka source schema): count
   the records, and per ticker the number of updates, low, high and latest price (the record
   with the highest offset of the key's partition; a tombstone there means the ticker was
   delisted and it is left out);
2. **sink**: write those rows as JSON to a compacted topic ``ticker-summary`` (created here,
   one partition) with ``df.write.format("seglog")...mode("append")``, and read it back;
3. **compaction job**: :func:`seglog.spark.compaction_job.compact` cleans every compacted
   partition whose dirty ratio is above ``min.cleanable.dirty.ratio``, with the in-process
   cleaner's decisions (the demo's second cleaning round; tombstones past their delete horizon
   go);
4. **export** ``stock-prices`` as a Parquet table (latest value per key) to
   ``<export_dir>/stock-prices`` (:func:`seglog.spark.export.export_topic`);
5. **stats**: :func:`seglog.spark.stats.partition_stats` of every topic.

The caller must not hold the data directory open: the sink's commit and the compaction job
take its lock.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seglog.config import BrokerConfig
from seglog.engine.log_manager import open_log_dirs
from seglog.engine.progress import ProgressCallback

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PRICES = "stock-prices"
SUMMARY = "ticker-summary"
SUMMARY_CONFIGS = {"cleanup.policy": "compact"}
PRICE_SCHEMA = "ticker string, price double, volume bigint, seq bigint"
STEP_COUNT = 6  # session, read, sink, compaction job, export, stats
SAMPLE_ROWS = 5


def check_available() -> None:
    """Raise :class:`~seglog.errors.SparkUnavailableError` naming the fix when pyspark,
    pyarrow or Java is missing (before any work is done)."""
    from seglog.spark.session import check_spark_available

    check_spark_available()


def per_ticker(prices: DataFrame) -> DataFrame:
    """Per ticker: records (tombstones included), updates, low, high and the latest price
    (null when the latest record is a tombstone: a delisted ticker); see the module docstring."""
    from pyspark.sql import functions as sf

    parsed = prices.select(
        "partition",
        "offset",
        sf.col("key").cast("string").alias("ticker"),
        sf.from_json(sf.col("value").cast("string"), PRICE_SCHEMA).alias("v"),
    )
    per_key = parsed.groupBy("partition", "ticker").agg(
        sf.count(sf.lit(1)).alias("records"),
        sf.count("v").alias("updates"),
        sf.min("v.price").alias("low"),
        sf.max("v.price").alias("high"),
        sf.max_by("v", "offset").alias("latest"),
    )
    return per_key.select(
        "ticker",
        "records",
        "updates",
        "low",
        "high",
        sf.col("latest.price").alias("price"),
    )


def _create_summary_topic(data_dir: Path) -> None:
    with open_log_dirs([data_dir]) as manager:
        if SUMMARY not in manager.topic_names():
            manager.create_topic(SUMMARY, 1, SUMMARY_CONFIGS)


def run_spark_pipeline(
    data_dir: str | Path,
    export_dir: str | Path,
    *,
    master: str | None = None,
    progress: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Run the pipeline of the module docstring on ``data_dir``; returns its figures (JSON-able):
    ``master``, ``rows_read``, ``latest``, ``ticker_summary``, ``compaction``, ``export``,
    ``stats``, ``stats_table`` and ``steps_seconds``. ``progress(done, STEP_COUNT)`` is called
    after each step."""
    from pyspark.sql import SparkSession

    from seglog.spark.compaction_job import compact
    from seglog.spark.export import export_topic
    from seglog.spark.session import embedded_session
    from seglog.spark.stats import format_stats, partition_stats

    root = Path(data_dir).absolute()
    path = str(root)
    seconds: dict[str, float] = {}
    done = 0
    clock = time.perf_counter()

    def finished(step: str) -> None:
        nonlocal done, clock
        now = time.perf_counter()
        seconds[step] = round(now - clock, 3)
        clock = now
        done += 1
        if progress is not None:
            progress(done, STEP_COUNT)

    is_ours = SparkSession.getActiveSession() is None
    spark: SparkSession = embedded_session(master, app_name="seglog-demo")
    master_used = spark.sparkContext.master
    finished("session")
    try:
        frame = spark.read.format("seglog").option("path", path).option("subscribe", PRICES).load()
        tickers = [row.asDict() for row in per_ticker(frame).collect()]  # one row per key
        rows_read = sum(int(t["records"]) for t in tickers)
        listed = sorted((t for t in tickers if t["price"] is not None), key=lambda t: t["ticker"])
        finished("read")

        _create_summary_topic(root)
        summary = [
            (
                t["ticker"],
                json.dumps({k: t[k] for k in ("ticker", "price", "low", "high", "updates")}),
            )
            for t in listed
        ]
        (
            spark.createDataFrame(summary, "key string, value string")
            .write.format("seglog")
            .option("path", path)
            .option("topic", SUMMARY)
            .mode("append")
            .save()
        )
        finished("sink")

        broker = BrokerConfig.from_properties({"log.dirs": path})
        results = compact(spark, broker)
        stats = [r.stats for r in results if r.stats is not None]
        compaction = {
            "partitions": [r.to_json() for r in results],
            "errors": [f"{r.topic_partition}: {r.error}" for r in results if r.error],
            "messages_read": sum(s.messages_read for s in stats),
            "messages_written": sum(s.messages_written for s in stats),
            "size_before_bytes": sum(s.size_before_bytes for s in stats),
            "size_after_bytes": sum(s.size_after_bytes for s in stats),
        }
        finished("compaction job")

        target = Path(export_dir).absolute() / PRICES
        exported = export_topic(spark, [root], PRICES, target, mode="table")
        finished("export")

        stats_rows = partition_stats(spark, [root]).collect()
        finished("stats")
    finally:
        if is_ours:
            spark.stop()
    return {
        "master": master_used,
        "rows_read": rows_read,
        "latest": {
            "tickers": len(listed),
            "delisted": len(tickers) - len(listed),
            "top_by_price": sorted(listed, key=lambda t: -float(t["price"]))[:SAMPLE_ROWS],
        },
        "ticker_summary": {"topic": SUMMARY, "rows_written": len(summary)},
        "compaction": compaction,
        "export": {"path": str(target), "rows": exported, "mode": "table"},
        "stats": [{k: v for k, v in row.asDict().items()} for row in stats_rows],
        "stats_table": format_stats(stats_rows),
        "steps_seconds": seconds,
    }
