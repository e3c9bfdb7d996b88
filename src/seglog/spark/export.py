"""Export a topic as a Parquet table: the latest value per key, or every record.

``export_topic(spark, log_dirs, topic, to, mode="table")`` reads the topic with seglog's own
Spark source (``format("seglog")``, ``includeHeaders=true``) and writes Parquet to ``to``:

* ``mode="table"``: one row per key, the key's **latest** record, unless that record is a
  tombstone (null value), which deletes the key. Keyless records are not table rows. Read
  with ``readCompacted=true`` (the Pulsar-style compacted copy up to its horizon, then the
  log): the same result as folding the whole log, with less to read when a copy exists,
  except that the copy also applies the topic's time retention (``retention.ms``) to keys,
  so a key whose latest record is past retention is not a row even if retention has not
  yet deleted its segment from the log.
  "Latest" is decided as Kafka decides it:

  * within a partition, by **offset** (the last write wins, whatever the timestamps say;
    CreateTime timestamps may go backwards), as the log cleaner keeps it;
  * across partitions (a key is partition-local in Kafka, so this only happens when records
    were written with an explicit partition or the partition count changed): the partition
    winners are compared by **timestamp**, ties to the **higher partition**. A table has one
    row per key because that is what a consumer of the table (a join, a lookup) expects;
    the lineage columns say which partition and offset the row came from.

* ``mode="changelog"``: every record of the topic (tombstones and keyless records included).

Columns: ``key binary, value binary, headers array<struct<key string, value binary>>``
(null for none), and the lineage ``topic string, partition int, offset bigint, timestamp
timestamp, timestampType int``. The table is computed by Spark (``max_by`` per
(partition, key), then per key), never in the driver.

Writing: the table is written into a new sibling directory ``<to>.seglog-tmp-<uuid>`` and
then swapped in by renames (an existing ``to`` is renamed aside, the new one renamed to
``to``, the old one deleted; after a failure or Ctrl-C the new directory is deleted once the
job's tasks have stopped), so a reader sees the old table or the new one, never a half
written one (the moment between the two renames shows no table). ``to`` must be a local
path. An existing ``to`` is replaced only if it looks like a Parquet table (files
``part-*``, ``_SUCCESS`` and dot-files only): anything else raises, so a typo cannot delete
a user's directory.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from seglog.errors import SparkOptionError
from seglog.spark.failures import unwrapping_seglog_errors
from seglog.spark.logdirs import discover
from seglog.spark.object_store_export import write_parquet_to_object_store
from seglog.spark.options import local_log_dirs
from seglog.storage.object_store import ObjectLocation, is_remote
from seglog.storage.remote_copy_store import S3Settings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

MODES = ("table", "changelog")
TASKS_STOP_WAIT_S = 30.0
EXPORT_COLUMNS = (
    "key",
    "value",
    "headers",
    "topic",
    "partition",
    "offset",
    "timestamp",
    "timestampType",
)


def _path_option(log_dirs: Sequence[str | Path]) -> str:
    return ",".join(str(d) if is_remote(str(d)) else str(Path(d).absolute()) for d in log_dirs)


def topic_frame(
    spark: SparkSession,
    log_dirs: Sequence[str | Path],
    topic: str,
    *,
    read_compacted: bool,
    s3: S3Settings | None = None,
) -> DataFrame:
    """The topic as the seglog source reads it, with headers (``log_dirs`` may be in object
    storage, reached with ``s3``)."""
    reader = (
        spark.read.format("seglog")
        .option("path", _path_option(log_dirs))
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .option("readCompacted", "true" if read_compacted else "false")
    )
    for key, value in (s3 or S3Settings()).as_options().items():
        reader = reader.option(key, value)
    return reader.load()


def latest_per_key(records: DataFrame) -> DataFrame:
    """The table view of a changelog DataFrame (module docstring): latest record per key by
    offset within a partition, then by (timestamp, partition) across partitions; keys whose
    latest record is a tombstone and keyless records are dropped."""
    from pyspark.sql import functions as sf

    columns = [sf.col(c) for c in EXPORT_COLUMNS]
    keyed = records.where(sf.col("key").isNotNull())
    per_partition = keyed.groupBy("partition", "key").agg(
        sf.max_by(sf.struct(*columns), sf.col("offset")).alias("r")
    )
    per_key = per_partition.groupBy("key").agg(
        sf.max_by(sf.col("r"), sf.struct(sf.col("r.timestamp"), sf.col("r.partition"))).alias("r")
    )
    return per_key.select("r.*").where(sf.col("value").isNotNull())


def _is_parquet_table(path: Path) -> bool:
    for entry in path.iterdir():
        name = entry.name
        if name.startswith((".", "_SUCCESS")) or (name.startswith("part-") and entry.is_file()):
            continue
        return False
    return True


def _swap_in(new: Path, target: Path) -> None:
    """Replace ``target`` by ``new`` with renames (module docstring)."""
    old: Path | None = None
    if target.exists():
        old = target.with_name(f"{target.name}.seglog-old-{uuid.uuid4().hex}")
        target.rename(old)
    new.rename(target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


@unwrapping_seglog_errors
def export_topic(
    spark: SparkSession,
    log_dirs: Sequence[str | Path],
    topic: str,
    to: str | Path,
    mode: str = "table",
    *,
    s3: S3Settings | None = None,
) -> int:
    """Write ``topic`` of ``log_dirs`` as Parquet at ``to`` (replacing it atomically);
    ``mode`` is ``"table"`` (latest value per key) or ``"changelog"`` (every record).
    ``log_dirs`` and ``to`` may be in object storage (``s3://...``, reached with ``s3``).
    Returns the number of rows written."""
    if mode not in MODES:
        raise SparkOptionError(f"export mode {mode!r}: choose 'table' or 'changelog'")
    remote_out = is_remote(str(to))
    if "://" in str(to) and not str(to).startswith("file://") and not remote_out:
        raise SparkOptionError(f"export target {to!r}: give a local directory or s3://...")
    given = [str(d) for d in log_dirs]
    settings = (s3 or S3Settings()).resolved() if remote_out or any(map(is_remote, given)) else s3
    local = local_log_dirs(
        [d if is_remote(d) else str(Path(d).absolute()) for d in given],
        settings,
        lambda t, _p: t == topic,
    )
    discover(list(local)).partitions_of(topic)  # names a typo
    records = topic_frame(spark, log_dirs, topic, read_compacted=mode == "table", s3=settings)
    frame = (latest_per_key(records) if mode == "table" else records).select(*EXPORT_COLUMNS)
    if remote_out:
        return write_parquet_to_object_store(
            frame, ObjectLocation(str(to), settings or S3Settings())
        )
    target = Path(str(to).removeprefix("file://")).absolute()
    if target.exists() and not (target.is_dir() and _is_parquet_table(target)):
        raise SparkOptionError(
            f"export target {str(target)!r} exists and is not a Parquet table: refusing to "
            "replace it (remove it or choose another path)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f"{target.name}.seglog-tmp-{uuid.uuid4().hex}")
    try:
        frame.write.mode("errorifexists").parquet(str(staging))
        rows = spark.read.parquet(str(staging)).count()
        _swap_in(staging, target)
    finally:
        if staging.exists():
            _wait_for_tasks(spark)
            shutil.rmtree(staging, ignore_errors=True)
    return int(rows)


def _wait_for_tasks(spark: SparkSession) -> None:
    """Wait (at most :data:`TASKS_STOP_WAIT_S`) until no task runs: a cancelled job (Ctrl-C)
    fails in the driver while its tasks are still being killed, and a task still starting
    would create its attempt directory again inside a staging directory already removed."""
    deadline = time.monotonic() + TASKS_STOP_WAIT_S
    tracker = spark.sparkContext._jsc.sc().statusTracker()  # executors: JVM API only
    while time.monotonic() < deadline:
        if sum(info.numRunningTasks() for info in tracker.getExecutorInfos()) == 0:
            return
        time.sleep(0.05)
