"""The Pulsar-style compacted copy built on Spark into object storage: ``seglog spark
compact-copy`` and :func:`compact_to_object_store`.

* **Driver**: opens the log directories read-only (no lock: the source log is never
  written) and lists the partitions of compacted topics (or of ``topic``), with their
  ``cleaner-offset-checkpoint`` entries (a Kafka-style cleaner past the published horizon
  makes the run start over, as a local run does).
* **Executors**: one task per partition opens it read-only, downloads the published copy
  from the bucket, runs the same compactor as ``seglog compact`` into a scratch directory and
  uploads the new copy under a fresh name (:func:`seglog.engine.compaction.remote_copy.
  build_remote_copy`). A partition's error is its own outcome.
* **Driver commit**: per partition, one conditional PUT of the manifest against the ETag the
  task started from. Two jobs racing on one partition: exactly one wins; the other's outcome
  is ``conflict`` and its copy is removed. Then copies no manifest names are swept once older
  than ``grace_ms``.

The target must be a location seglog owns (``s3://bucket/prefix``); a Kafka tiered-storage
bucket is never written. Readers: ``spark.read.format("seglog").option("readCompacted",
"true").option("compactedCopy", "s3://bucket/prefix")``, or the Python API
(:func:`seglog.engine.compaction.remote_copy.open_remote_copy`).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seglog.clock import SystemClock
from seglog.config import BrokerConfig
from seglog.core.offset_map import OffsetMap
from seglog.engine.cleaning.cleaner import Cleaner
from seglog.engine.cleaning.log_cleaner import per_thread_map_bytes
from seglog.engine.compaction.compactor import Compactor
from seglog.engine.compaction.partition_reader import open_partition_log
from seglog.engine.compaction.remote_copy import (
    RemoteCopyBuild,
    build_remote_copy,
    publish_remote_copy,
)
from seglog.engine.log_manager import LogManager
from seglog.errors import SeglogError
from seglog.format.topic_names import TopicPartition, partition_dir_name
from seglog.storage.remote_copy_store import (
    SWEEP_GRACE_MS_DEFAULT,
    PublicationConflictError,
    RemoteCopyStore,
    S3Settings,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True, slots=True)
class CopyTask:
    """One partition's build, as shipped to an executor (picklable)."""

    broker: BrokerConfig
    topic_partition: TopicPartition
    target_uri: str
    settings: S3Settings
    cleaner_checkpoint: int | None
    now_ms: int | None


@dataclass(frozen=True, slots=True)
class CopyOutcome:
    """What happened to one partition: ``published``, ``unchanged`` (nothing new since the
    published copy), ``conflict`` (another writer published first) or ``error``."""

    topic_partition: TopicPartition
    state: str
    horizon: int = -1
    copy: str = ""
    message: str = ""
    figures: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict."""
        return {
            "topic": self.topic_partition.topic,
            "partition": self.topic_partition.partition,
            "state": self.state,
            "horizon": self.horizon,
            "copy": self.copy,
            "message": self.message,
            "figures": self.figures or {},
        }


def _store(task: CopyTask) -> RemoteCopyStore:
    return RemoteCopyStore.for_partition(
        task.settings, task.target_uri, partition_dir_name(task.topic_partition)
    )


def _build(task: CopyTask) -> tuple[CopyTask, RemoteCopyBuild | None, str]:
    """Executor side: the build, or the error text."""
    tp = task.topic_partition
    broker = task.broker
    try:
        log = open_partition_log(broker, tp.topic, tp.partition)
    except SeglogError as exc:
        return task, None, str(exc)
    try:
        cleaner = Cleaner(
            OffsetMap(per_thread_map_bytes(broker), broker.log_cleaner_io_buffer_load_factor),
            clock=SystemClock(),
            producer_id_expiration_ms=broker.producer_id_expiration_ms,
        )
        with tempfile.TemporaryDirectory(prefix="seglog-copy-") as scratch:
            build = build_remote_copy(
                log,
                _store(task),
                Compactor(cleaner),
                Path(scratch),
                now_ms=task.now_ms,
                cleaner_checkpoint=task.cleaner_checkpoint,
            )
        return task, build, ""
    except SeglogError as exc:
        return task, None, str(exc)
    finally:
        log.close()


def _commit(task: CopyTask, build: RemoteCopyBuild | None, error: str) -> CopyOutcome:
    """Driver side: publish one build."""
    tp = task.topic_partition
    if build is None:
        return CopyOutcome(tp, "error", message=error)
    if build.publication is None:
        current = build.started_from
        return CopyOutcome(
            tp,
            "unchanged",
            horizon=current.publication.horizon if current else -1,
            copy=current.publication.copy if current else "",
            figures=build.figures,
        )
    store = _store(task)
    try:
        publish_remote_copy(store, build)
    except PublicationConflictError as exc:
        return CopyOutcome(tp, "conflict", message=str(exc), figures=build.figures)
    except SeglogError as exc:
        return CopyOutcome(tp, "error", message=str(exc), figures=build.figures)
    return CopyOutcome(
        tp,
        "published",
        horizon=build.publication.horizon,
        copy=build.publication.copy,
        figures=build.figures,
    )


def plan_copy_tasks(
    broker: BrokerConfig,
    target_uri: str,
    settings: S3Settings,
    *,
    topic: str | None = None,
    now_ms: int | None = None,
) -> list[CopyTask]:
    """The partitions to build: every partition of ``topic``, or of every compacted topic."""
    with LogManager.open(broker, read_only=True) as manager:
        checkpoints = manager.cleaner_checkpoints()
        tasks = []
        for log in manager.logs().values():
            tp = log.topic_partition
            if topic is not None and tp.topic != topic:
                continue
            if topic is None and not log.config.is_compacted:
                continue
            tasks.append(CopyTask(broker, tp, target_uri, settings, checkpoints.get(tp), now_ms))
    return sorted(tasks, key=lambda t: (t.topic_partition.topic, t.topic_partition.partition))


def compact_to_object_store(
    spark: SparkSession,
    broker: BrokerConfig,
    target_uri: str,
    *,
    settings: S3Settings | None = None,
    topic: str | None = None,
    now_ms: int | None = None,
    grace_ms: int = SWEEP_GRACE_MS_DEFAULT,
) -> list[CopyOutcome]:
    """Build and publish the compacted copy of each partition under ``target_uri`` (module
    docstring); one outcome per partition."""
    resolved = (settings or S3Settings()).resolved()  # executors may lack the driver's env
    tasks = plan_copy_tasks(broker, target_uri, resolved, topic=topic, now_ms=now_ms)
    if not tasks:
        return []
    context = spark.sparkContext
    context.setJobDescription(f"seglog compact-copy: {len(tasks)} partition(s) to {target_uri}")
    built = context.parallelize(tasks, len(tasks)).map(_build).collect()
    outcomes = [_commit(task, build, error) for task, build, error in built]
    for task in tasks:
        _store(task).sweep(grace_ms=grace_ms)
    return outcomes
