"""Distributed Kafka-style compaction on Spark: ``seglog spark compact`` and :func:`compact`.

The plan (the Kafka-style cleaner as a Spark job): keys are
partition-local, so no shuffle is needed.

* **Driver**: opens the log directories read-write (holding their lock for the whole job),
  and :func:`seglog.engine.cleaning_job.plan_cleaning_job` claims every log the in-process
  cleaner would clean now, with the same ``core`` decisions (dirty ratio, compaction lags,
  cleanable range) and the same map size per task as one cleaner thread's.
* **Executors**: the partitions are packed into one plain RDD task per core
  (``sc.defaultParallelism``; :func:`balance` puts the largest first, each into the least
  loaded task), so each core starts one Spark task and cleans its partitions one after
  another, reusing its offset map, instead of paying Spark's task launch (~50 ms measured
  between two tasks of a worker here) for each. For each partition the task opens only that
  partition read-only, builds the key map and rewrites its segment groups into ``.cleaned``
  files beside the log, returning a small outcome (groups, sizes, end offset, figures); a
  partition's error is its own outcome and does not stop the others of its task.
* **Key-sharded rounds**: a partition whose distinct keys overflow one task's map gets ``S``
  shard tasks (keys split by SipHash modulo ``S``) whose losers the driver merges, then one
  rewrite task; see :mod:`seglog.engine.cleaning_job`. Off with ``shard_keys=False``, when a
  full map means a partial round exactly like the in-process cleaner's.
* **Driver commit**: the same ``.cleaned`` -> ``.swap`` -> live swap and checkpoint as the
  in-process cleaner, after checking the segments did not change. A failed task releases its
  partition with its ``.cleaned`` files removed; a failed job (an exception, a lost driver)
  leaves every log as it was (``.cleaned`` files are not part of a log and are removed by the
  abort or by the next open's recovery).

On a cluster the log directories must be on a file system every executor can read and write
(the ``.cleaned`` files are written next to the segments). Speculative execution must stay
off (Spark's default): two attempts of one task would write the same ``.cleaned`` files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from seglog.clock import Clock
from seglog.config import BrokerConfig
from seglog.engine.cleaning.log_cleaner import CleanResult
from seglog.engine.cleaning_job import (
    PartitionCleaningOutcome,
    PartitionCleaningTask,
    ShardOutcome,
    ShardSpec,
    plan_cleaning_job,
    run_job,
    run_partition_task,
    run_shard_task,
)
from seglog.engine.log_manager import LogManager
from seglog.spark.failures import unwrapping_seglog_errors

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _run_shard(pair: tuple[PartitionCleaningTask, ShardSpec]) -> ShardOutcome:
    return run_shard_task(*pair)


def _run_bin(tasks: list[PartitionCleaningTask]) -> list[PartitionCleaningOutcome]:
    """One Spark task: clean its partitions one after another (each outcome on its own)."""
    return [run_partition_task(task) for task in tasks]


def balance(sizes: Sequence[int], slots: int) -> list[list[int]]:
    """Partition indexes in at most ``slots`` bins of near-equal total size: largest first,
    each into the bin with the least so far (LPT; within 4/3 of the best split). Each bin
    lists its partitions largest first; empty bins are left out."""
    if slots < 1:
        raise ValueError(f"slots must be at least 1, got {slots}")
    bins: list[list[int]] = [[] for _ in range(min(slots, len(sizes)))]
    loads = [0] * len(bins)
    for i in sorted(range(len(sizes)), key=lambda i: sizes[i], reverse=True):
        least = loads.index(min(loads))
        bins[least].append(i)
        loads[least] += sizes[i]
    return [b for b in bins if b]


@unwrapping_seglog_errors
def compact(
    spark: SparkSession,
    broker: BrokerConfig,
    *,
    topic: str | None = None,
    shard_keys: bool = True,
    now_ms: int | None = None,
    clock: Clock | None = None,
) -> list[CleanResult]:
    """Clean every log of ``broker.log_dirs`` the cleaner would clean now, on ``spark``.

    Returns one :class:`~seglog.engine.cleaning.log_cleaner.CleanResult` per claimed partition (its
    figures, or the error that left it as it was). Raises
    :class:`~seglog.errors.LogDirectoryLockedError` when another process has the directories
    open. ``clock`` is the driver's (the log manager's, which ages producer state; tests pass
    a manual one), ``now_ms`` the round's time (default: the clock's).
    """
    context = spark.sparkContext

    def run_tasks(tasks: Sequence[PartitionCleaningTask]) -> list[PartitionCleaningOutcome]:
        if not tasks:
            return []
        bins = balance([t.to_clean.total_bytes for t in tasks], context.defaultParallelism)
        context.setJobDescription(
            f"seglog compact: {len(tasks)} partition(s) in {len(bins)} task(s)"
        )
        outcomes = (
            context.parallelize([[tasks[i] for i in b] for b in bins], len(bins))
            .flatMap(_run_bin)
            .collect()
        )
        by_position: list[PartitionCleaningOutcome | None] = [None] * len(tasks)
        for i, outcome in zip([i for b in bins for i in b], outcomes, strict=True):
            by_position[i] = outcome
        return [o for o in by_position if o is not None]

    def run_shards(
        pairs: Sequence[tuple[PartitionCleaningTask, ShardSpec]],
    ) -> list[ShardOutcome]:
        if not pairs:
            return []
        context.setJobDescription(f"seglog compact: {len(pairs)} key shard(s)")
        result: list[ShardOutcome] = (
            context.parallelize(list(pairs), len(pairs)).map(_run_shard).collect()
        )
        return result

    with LogManager.open(broker, clock=clock) as manager:
        job = plan_cleaning_job(manager, topic=topic, now_ms=now_ms, shard_keys=shard_keys)
        if not job.tasks:
            return []
        return run_job(job, run_tasks, run_shards)
