"""The Kafka-style cleaner as a job: a driver plan, partition tasks that run anywhere, a commit.

This is the in-process cleaner's round (:mod:`seglog.engine.cleaning.cleaner`) cut at its seams so a
distributed engine (:mod:`seglog.spark.compaction_job`) can run the expensive middle on
executors. **The decisions are the in-process cleaner's own**: the same cleaner manager picks
the logs and their cleanable range, the same :class:`~seglog.engine.cleaning.cleaner.Cleaner`
builds the map, groups the segments and rewrites them, and the same swap protocol and
checkpoint finish
the round; given the same input, ``now`` and map size, the job writes byte-identical segments,
indexes and checkpoints (the differential test in ``tests/spark`` checks it).

Phases:

1. **Plan** (driver, :func:`plan_cleaning_job`): with the log manager open read-write (it
   holds the directories' lock), every compacted log the cleaner would clean now is claimed
   (the cleaner manager's state machine marks it in progress, so nothing else cleans, truncates
   or applies retention to it meanwhile) and described by a picklable
   :class:`PartitionCleaningTask`: directory, config, cleanable range, ``now``, map size and
   the closed segments (base offset, size) the plan saw.
2. **Clean** (executors, :func:`run_partition_task`): open only that partition, read-only
   (no lock; only closed segments are read, and those never change while the log is claimed),
   check the segments are the planned ones, prepare the round and write each group's finished
   ``{base}.log.cleaned`` segment beside the log. Nothing live is renamed or deleted: a task
   that fails, or a job that dies, leaves only ``.cleaned`` files, which are not part of the
   log and which :meth:`CleaningJob.abort` (or the next startup's recovery) removes.
3. **Commit** (driver, :meth:`CleaningJob.commit`): per partition, check the groups' segments
   are still the ones cleaned, then swap each ``.cleaned`` segment in with
   :meth:`seglog.engine.log.Log.replace_segments` (crash-safe at every step), write the
   cleaner checkpoint and record the round, exactly as the in-process cleaner does.

**Key-sharded rounds** (a partition with more distinct keys than one task's map). The
in-process cleaner would clean such a log in several partial rounds. With ``shard_keys`` the
job instead (a) notices the map filled (the task returns ``map_full`` and writes nothing),
(b) runs ``S`` shard tasks over the same dirty range, shard ``i`` building a map only of the
keys whose SipHash (one key, chosen by the driver, shared by all shards) is ``i`` mod ``S``,
then scanning ``[log start, first uncleanable offset)`` once more to list every offset whose
key (in its shard) has a later record in the dirty range (a *loser*); a shard whose map fills
makes the driver retry with twice the shards; (c) hands the sorted union of the losers (8 bytes
per superseded record) to one rewrite task, which cleans the whole cleanable range in one
round. The result equals one in-process round with a map large enough for every key (also
tested). Strategies other than ``offset`` are not sharded (their rounds stay partial).

Why this module is longer than the house's ~500 lines: it is one job's three phases (driver
plan, executor tasks, commit) with the serializable messages between them; keeping them
together shows what crosses the process boundary.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from seglog.clock import SystemClock
from seglog.config import LogConfig
from seglog.core.cleaning import LogToClean
from seglog.core.offset_map import OffsetMap
from seglog.engine.cleaning.cleaner import Cleaner, CleanerStats, Producers, never_done
from seglog.engine.cleaning.log_cleaner import CleanResult, per_thread_map_bytes
from seglog.engine.cleaning.txn_columns import TxnState, aborted_in, map_key_lengths
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager
from seglog.errors import SeglogError
from seglog.format.topic_names import TopicPartition
from seglog.kernels.offset_map_py import HASH_KEY_BYTES

#: Shard counts double up to this many before the job gives up on a partition.
MAX_SHARDS = 4096


class CleaningJobError(SeglogError):
    """A partition of a cleaning job could not be cleaned or committed (it is left as it was)."""


@dataclass(frozen=True, slots=True)
class ShardSpec:
    """Shard ``index`` of ``count``: the keys whose SipHash under ``hash_key`` is ``index``
    modulo ``count`` (first 64-bit word of the 128-bit hash)."""

    index: int
    count: int
    hash_key: bytes


@dataclass(frozen=True, slots=True)
class PartitionCleaningTask:
    """Everything an executor needs to clean one partition (picklable, no open files)."""

    job_id: str
    topic: str
    partition: int
    directory: str
    config: LogConfig
    log_start_offset: int
    log_end_offset: int
    to_clean: LogToClean
    now_ms: int
    map_bytes: int
    load_factor: float
    producer_id_expiration_ms: int
    closed_segments: tuple[tuple[int, int], ...]  # (base offset, size) the plan saw
    losers: npt.NDArray[np.int64] | None = None  # set for the rewrite of a sharded round
    allow_sharding: bool = False  # a full map returns map_full instead of a partial round
    # The log's active producers as the driver saw them (last data offset or None, epoch): the
    # task keeps their last entries exactly as the in-process cleaner would.
    active_producers: dict[int, tuple[int | None, int]] = field(default_factory=dict)

    @property
    def topic_partition(self) -> TopicPartition:
        """The partition this task cleans."""
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class CleanedGroup:
    """One group's output: the segments it replaces and its ``.cleaned`` segment."""

    bases: tuple[int, ...]
    sizes: tuple[int, ...]
    cleaned_base: int
    cleaned_size: int


@dataclass(slots=True)
class PartitionCleaningOutcome:
    """What a partition task did (returned to the driver)."""

    topic: str
    partition: int
    end_offset: int = -1
    stats: CleanerStats | None = None
    groups: list[CleanedGroup] = field(default_factory=list)
    map_full: bool = False  # the map filled and sharding was allowed: nothing was written
    error: str | None = None


@dataclass(slots=True)
class ShardOutcome:
    """A shard task's result: its losers (sorted), or ``full`` when its map filled."""

    index: int
    losers: npt.NDArray[np.int64]
    keys: int
    full: bool = False
    error: str | None = None


def _open_read_only(task: PartitionCleaningTask) -> Log:
    """The task's partition, read-only: no lock, no recovery (the driver's open did it)."""
    return Log.open(
        Path(task.directory),
        task.topic_partition,
        task.config,
        clock=SystemClock(),
        recovery_point=task.log_end_offset,
        log_start_offset=task.log_start_offset,
        had_clean_shutdown=True,
        writable=False,
    )


def _check_planned_segments(log: Log, task: PartitionCleaningTask) -> None:
    seen = {s.base_offset: s.size for s in log.segments}
    for base, size in task.closed_segments:
        if seen.get(base) != size:
            raise CleaningJobError(
                f"{task.topic_partition}: segment {base} changed since the job was planned "
                f"(size {seen.get(base)}, planned {size}); plan the job again"
            )


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


# Idle cleaners of this process, by (map size, load factor, producer expiry): an executor's
# Python worker runs task after task, and reusing the map (as a cleaner thread does round
# after round) saves allocating and touching its memory every time. A task takes a cleaner out
# while it runs (concurrent callers never share one) and puts it back after.
_IDLE_CLEANERS: dict[tuple[int, float, int], Cleaner] = {}
_IDLE_LOCK = threading.Lock()


def _take_cleaner(task: PartitionCleaningTask) -> Cleaner:
    key = (task.map_bytes, task.load_factor, task.producer_id_expiration_ms)
    with _IDLE_LOCK:
        cleaner = _IDLE_CLEANERS.pop(key, None)
    if cleaner is None:
        cleaner = Cleaner(
            OffsetMap(task.map_bytes, task.load_factor),
            clock=SystemClock(),
            producer_id_expiration_ms=task.producer_id_expiration_ms,
        )
    return cleaner


def _give_back(task: PartitionCleaningTask, cleaner: Cleaner) -> None:
    key = (task.map_bytes, task.load_factor, task.producer_id_expiration_ms)
    with _IDLE_LOCK:
        _IDLE_CLEANERS.clear()  # at most one idle map per process
        _IDLE_CLEANERS[key] = cleaner


def run_partition_task(task: PartitionCleaningTask) -> PartitionCleaningOutcome:
    """Clean one partition into ``.cleaned`` segments (phase 2; runs on an executor).

    Errors are returned, not raised, so one bad partition does not fail the others (KIP-346);
    the ``.cleaned`` files written before an error are removed.
    """
    outcome = PartitionCleaningOutcome(task.topic, task.partition)
    written: list[Any] = []
    log: Log | None = None
    cleaner: Cleaner | None = None
    try:
        log = _open_read_only(task)
        _check_planned_segments(log, task)
        cleaner = _take_cleaner(task)
        round_ = cleaner.prepare_round(
            log,
            task.to_clean,
            now_ms=task.now_ms,
            losers=task.losers,
            producers=Producers(dict(task.active_producers)),
        )
        if (
            task.allow_sharding
            and round_.stats.is_partial
            and cleaner.full_at_batch_base >= 0
            and task.config.compaction_strategy == "offset"
        ):
            outcome.map_full = True
            outcome.stats = round_.stats
            return outcome
        for group in round_.groups:
            cleaned = cleaner.write_group(round_, group)
            written.append(cleaned)
            outcome.groups.append(
                CleanedGroup(
                    tuple(s.base_offset for s in group),
                    tuple(s.size for s in group),
                    cleaned.base_offset,
                    cleaned.size,
                )
            )
            cleaned.close()
        outcome.end_offset = round_.end_offset
        stats = round_.stats
        stats.groups = len(round_.groups)
        stats.buffer_utilization = cleaner.active_map.utilization
        stats.size_after_bytes = (
            stats.size_before_bytes
            - sum(sum(g.sizes) for g in outcome.groups)
            + sum(g.cleaned_size for g in outcome.groups)
        )
        stats.end_s = time.monotonic()
        outcome.stats = stats
    except Exception as exc:
        for cleaned in written:
            cleaned.delete_files()
        outcome.groups.clear()
        outcome.error = _error_text(exc)
    finally:
        if cleaner is not None:
            _give_back(task, cleaner)
        if log is not None:
            log.close()
    return outcome


def run_shard_task(task: PartitionCleaningTask, shard: ShardSpec) -> ShardOutcome:
    """Shard ``shard`` of a partition's keys: its losers over the cleanable range (module
    docstring, key-sharded rounds); runs on an executor, writes nothing."""
    log: Log | None = None
    try:
        log = _open_read_only(task)
        _check_planned_segments(log, task)
        offset_map = OffsetMap(task.map_bytes, task.load_factor, hash_key=shard.hash_key)
        reader = Cleaner(offset_map, clock=SystemClock())
        start, end = task.to_clean.first_dirty_offset, task.to_clean.first_uncleanable_offset
        segments = [s for s in log.segments[:-1] if s.base_offset < end]

        def rows_in_shard(columns: Any, txn: TxnState) -> npt.NDArray[np.int32]:
            # Control records and aborted transactions' records never enter a map.
            lengths = map_key_lengths(columns, txn)
            h0, _ = offset_map.hash_columns(columns.data, columns.key_position, lengths)
            mine = (h0 % np.uint64(shard.count)) == np.uint64(shard.index)
            masked: npt.NDArray[np.int32] = np.where(mine, lengths, -1).astype(np.int32)
            return masked

        aborted = aborted_in(log, start, end)
        txn = TxnState()
        txn.add_aborted(aborted)
        for segment in segments:
            for _, columns in reader.chunks(segment, 0, never_done):
                rows = int(np.searchsorted(columns.offset, end))
                key_length = rows_in_shard(columns, txn)
                stop = offset_map.put_columns(
                    columns.data,
                    columns.key_position,
                    key_length,
                    columns.offset,
                    stop_row=rows,
                    min_offset=start,
                )
                if stop < rows:
                    return ShardOutcome(shard.index, np.zeros(0, np.int64), offset_map.size, True)
        pieces: list[npt.NDArray[np.int64]] = []
        txn = TxnState()
        txn.add_aborted(aborted)
        for segment in segments:
            for _, columns in reader.chunks(segment, 0, never_done):
                rows = int(np.searchsorted(columns.offset, end))
                key_length = rows_in_shard(columns, txn)[:rows]
                offsets = columns.offset[:rows]
                latest = offset_map.get_columns(
                    columns.data, columns.key_position[:rows], key_length
                )
                pieces.append(offsets[latest > offsets])
        losers = np.concatenate(pieces) if pieces else np.zeros(0, np.int64)
        return ShardOutcome(shard.index, np.sort(losers), offset_map.size)
    except Exception as exc:
        return ShardOutcome(shard.index, np.zeros(0, np.int64), 0, error=_error_text(exc))
    finally:
        if log is not None:
            log.close()


def merge_losers(outcomes: Sequence[ShardOutcome]) -> npt.NDArray[np.int64]:
    """The sorted union of the shards' losers (each offset belongs to one key, so one shard)."""
    if not outcomes:
        return np.zeros(0, np.int64)
    merged: npt.NDArray[np.int64] = np.sort(np.concatenate([o.losers for o in outcomes]))
    return merged


def shard_count_for(task: PartitionCleaningTask, stats: CleanerStats | None) -> int:
    """A first shard count for a partition whose single map filled: the dirty offsets over
    the offsets the map covered, times the keys it held, over the map's limit, doubled for
    skew (at least 2)."""
    limit = OffsetMap(task.map_bytes, task.load_factor).limit
    if stats is None or stats.end_offset <= task.to_clean.first_dirty_offset:
        return 2
    covered = stats.end_offset - task.to_clean.first_dirty_offset
    dirty = task.to_clean.first_uncleanable_offset - task.to_clean.first_dirty_offset
    estimated_keys = max(stats.map_keys, 1) * dirty / covered
    return max(2, int(2 * estimated_keys / max(limit, 1)) + 1)


@dataclass
class CleaningJob:
    """A planned job: its tasks, and the manager whose claims it holds until commit/abort."""

    manager: LogManager
    job_id: str
    now_ms: int
    tasks: list[PartitionCleaningTask]
    shard_keys: bool = False
    _open: set[TopicPartition] = field(default_factory=set)

    def sharded_tasks(self, task: PartitionCleaningTask, shards: int) -> list[ShardSpec]:
        """The shard specs of a partition split ``shards`` ways (one random hash key)."""
        hash_key = os.urandom(HASH_KEY_BYTES)
        return [ShardSpec(i, shards, hash_key) for i in range(shards)]

    def commit(self, outcomes: Sequence[PartitionCleaningOutcome]) -> list[CleanResult]:
        """Phase 3: swap each successful partition's groups in and write its checkpoint;
        failed partitions are released with their ``.cleaned`` files removed. Every claimed
        partition is released, whatever happens."""
        by_tp = {TopicPartition(o.topic, o.partition): o for o in outcomes}
        results: list[CleanResult] = []
        manager = self.manager
        try:
            for task in self.tasks:
                tp = task.topic_partition
                outcome = by_tp.get(tp)
                if outcome is None or outcome.error is not None or outcome.map_full:
                    error = (
                        "no result from its task"
                        if outcome is None
                        else (outcome.error or "the map filled and sharding is off")
                    )
                    self._release(tp, None)
                    results.append(CleanResult(tp, None, error))
                    continue
                results.append(self._commit_one(task, outcome))
            manager.log_cleaner.retention_pass()
        finally:
            for tp in list(self._open):
                self._release(tp, None)
        return results

    def _commit_one(
        self, task: PartitionCleaningTask, outcome: PartitionCleaningOutcome
    ) -> CleanResult:
        tp = task.topic_partition
        log = self.manager.get_log(tp.topic, tp.partition)
        try:
            live = {s.base_offset: s for s in log.segments}
            for group in outcome.groups:
                for base, size in zip(group.bases, group.sizes, strict=True):
                    segment = live.get(base)
                    if segment is None or segment.size != size:
                        raise CleaningJobError(
                            f"{tp}: segment {base} changed while the job ran; nothing swapped"
                        )
            for group in outcome.groups:
                cleaned = log.adopt_cleaned_segment(group.cleaned_base)
                if cleaned.size != group.cleaned_size:
                    cleaned.close()
                    raise CleaningJobError(
                        f"{tp}: cleaned segment {group.cleaned_base} has {cleaned.size} bytes, "
                        f"its task wrote {group.cleaned_size}"
                    )
                Cleaner.swap_group(log, cleaned, [live[b] for b in group.bases])
        except Exception as exc:
            log.remove_cleaned_files()
            self._release(tp, None)
            return CleanResult(tp, None, _error_text(exc))
        stats = outcome.stats
        assert stats is not None
        self._release(tp, outcome.end_offset)
        # figures only: never fail a finished round
        with contextlib.suppress(SeglogError, OSError):
            self.manager.cleaner_manager.record_round(
                tp,
                log,
                {"round_ms": self.now_ms, "end_offset": stats.end_offset, **stats.to_json()},
            )
        return CleanResult(tp, stats)

    def abort(self) -> None:
        """Release every claimed partition and remove the ``.cleaned`` files of the job."""
        for task in self.tasks:
            tp = task.topic_partition
            if tp in self._open:
                self.manager.get_log(tp.topic, tp.partition).remove_cleaned_files()
                self._release(tp, None)

    def _release(self, tp: TopicPartition, end_offset: int | None) -> None:
        if tp not in self._open:
            return
        self._open.discard(tp)
        log = self.manager.get_log(tp.topic, tp.partition)
        if end_offset is None:
            log.remove_cleaned_files()
        self.manager.cleaner_manager.done_cleaning(tp, log, end_offset)


def plan_cleaning_job(
    manager: LogManager,
    *,
    topic: str | None = None,
    now_ms: int | None = None,
    shard_keys: bool = False,
) -> CleaningJob:
    """Phase 1: claim every log the cleaner would clean now (filthiest first) and describe
    each as a task. The map of each task is the in-process cleaner's per-thread share of
    ``log.cleaner.dedupe.buffer.size``, so a task decides what a cleaner thread would."""
    if manager.read_only:
        raise CleaningJobError("cleaning needs the log directories open read-write")
    now = manager.clock.now_ms() if now_ms is None else now_ms
    broker = manager.broker
    job = CleaningJob(manager, uuid.uuid4().hex, now, [], shard_keys)
    claimed: set[TopicPartition] = set()
    while True:
        candidate = manager.cleaner_manager.grab_filthiest(
            now, topic=topic, skip=frozenset(claimed)
        )
        if candidate is None:
            break
        tp, log = candidate.topic_partition, candidate.log
        claimed.add(tp)
        job._open.add(tp)
        job.tasks.append(
            PartitionCleaningTask(
                job_id=job.job_id,
                topic=tp.topic,
                partition=tp.partition,
                directory=str(log.directory),
                config=log.config,
                log_start_offset=log.log_start_offset,
                log_end_offset=log.log_end_offset,
                to_clean=candidate.to_clean,
                now_ms=now,
                map_bytes=per_thread_map_bytes(broker),
                load_factor=broker.log_cleaner_io_buffer_load_factor,
                producer_id_expiration_ms=broker.producer_id_expiration_ms,
                closed_segments=tuple((s.base_offset, s.size) for s in log.segments[:-1]),
                allow_sharding=shard_keys,
                active_producers=Producers.of(log).last_records,
            )
        )
    return job


Runner = Callable[[Sequence[PartitionCleaningTask]], list[PartitionCleaningOutcome]]
ShardRunner = Callable[[Sequence[tuple[PartitionCleaningTask, ShardSpec]]], list[ShardOutcome]]


def run_job(job: CleaningJob, run_tasks: Runner, run_shards: ShardRunner) -> list[CleanResult]:
    """Run ``job`` with the given task runners (in-process lists, or Spark), then commit.

    ``run_tasks`` runs partition tasks; ``run_shards`` runs shard tasks. A partition whose
    map filled (sharding on) is sharded, its losers merged and cleaned by one more partition
    task. Any exception aborts the whole job (every claimed log released as it was).
    """
    try:
        outcomes = run_tasks(job.tasks)
        full = [
            (task, o)
            for task, o in zip(job.tasks, outcomes, strict=True)
            if o.map_full and o.error is None
        ]
        if full:
            rewrites = [_shard(job, task, o.stats, run_shards) for task, o in full]
            ready = [t for t in rewrites if isinstance(t, PartitionCleaningTask)]
            redone = iter(run_tasks(ready))
            replaced = {
                (task.topic, task.partition): (
                    next(redone) if isinstance(t, PartitionCleaningTask) else t
                )
                for (task, _), t in zip(full, rewrites, strict=True)
            }
            outcomes = [replaced.get((o.topic, o.partition), o) for o in outcomes]
        return job.commit(outcomes)
    except BaseException:
        job.abort()
        raise


def _shard(
    job: CleaningJob,
    task: PartitionCleaningTask,
    stats: CleanerStats | None,
    run_shards: ShardRunner,
) -> PartitionCleaningTask | PartitionCleaningOutcome:
    shards = shard_count_for(task, stats)
    while shards <= MAX_SHARDS:
        specs = job.sharded_tasks(task, shards)
        results = run_shards([(task, spec) for spec in specs])
        errors = [r.error for r in results if r.error is not None]
        if errors:
            return PartitionCleaningOutcome(task.topic, task.partition, error=errors[0])
        if not any(r.full for r in results):
            return replace(task, losers=merge_losers(results), allow_sharding=False)
        shards *= 2
    return PartitionCleaningOutcome(
        task.topic,
        task.partition,
        error=f"more than {MAX_SHARDS} map shards would be needed; raise the map size",
    )


def run_in_process(job: CleaningJob) -> list[CleanResult]:
    """Run ``job`` with every task in this process, one after another (tests, no Spark)."""
    return run_job(
        job,
        lambda tasks: [run_partition_task(t) for t in tasks],
        lambda shards: [run_shard_task(t, s) for t, s in shards],
    )
