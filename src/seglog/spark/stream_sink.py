"""The Structured Streaming sink: ``df.writeStream.format("seglog")``, exactly once.

``df.writeStream.format("seglog").option("path", D).option("topic", "out")
.option("checkpointLocation", ck).start()`` appends every micro-batch to the topics of the
data directory ``D``. Columns, options, partitioner, validation and errors are the batch
sink's (:mod:`seglog.spark.sink`: Spark's Kafka sink contract; a misspelled option is
treated exactly as the batch sink treats it), and so is the staged, crash-safe commit
(:mod:`seglog.spark.staging`). Output modes ``append`` and ``update`` write the rows Spark
hands over, as Kafka's sink does; ``complete`` asks to overwrite and is refused (a log is
append-only).

**Exactly once across restarts.** Spark's own Kafka sink is at-least-once: a query that dies
after its producer sent a micro-batch but before Spark recorded the batch in the checkpoint's
``commits/`` log replays that batch on restart, and Kafka gets its records twice. Here the
sink's commit and the "this micro-batch is appended" record are one decision:

1. Each task stages its rows as the batch sink does, in its own job directory
   ``<staging root>/stream-<query>-b<batch id>-<uuid>/`` (created only when the task has a
   row, so empty micro-batches leave nothing behind), and reports the staged files, Spark's
   query id and the micro-batch id (Spark's task properties ``sql.streaming.queryId`` and
   ``streaming.sql.batchId``).
2. ``commit(messages, batchId)`` runs on the driver, holding the data directory's ``.lock``:
   it first completes any interrupted earlier commit (which records its micro-batch), then
   reads the query's last committed micro-batch from the ledger
   (:mod:`seglog.spark.stream_ledger`). A ``batchId`` at or below it is a replay of a
   micro-batch already in the logs: its staged data is removed and nothing is appended.
3. Otherwise the tasks' directories move (``rename``) into one job directory for the
   micro-batch, whose commit journal carries ``(query id, batch id)``; once the journal is
   written the commit is decided. Appending, fsyncing and recording the batch id in the
   ledger complete it, now or, after a crash, at the next commit on the data directory
   (or ``seglog.spark.sink.recover_commits``), before the replayed batch is looked at.

So a crash anywhere (in a task, before the journal, mid-append, after the ledger but before
Spark's ``commits/`` entry) leaves each input row in the log exactly once after the restart,
provided the query restarts from the same checkpoint (the query id lives in its
``metadata`` file) and its source replays the same rows for a batch id, which every Spark
source with offsets does. A new checkpoint is a new query: it starts from its own batch 0.
Staged directories of dead attempts of this query (a killed run, a failed task) are removed
by the next commit of the query; any other job directory without a journal goes after 7 days.
``abort`` removes the staged directories of the messages it gets.
"""

from __future__ import annotations

import hashlib
import os
import signal
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from seglog.errors import SparkOptionError
from seglog.format.topic_names import TopicPartition
from seglog.spark.sink import (
    InputColumns,
    SinkOptions,
    TaskEncoder,
    TopicPlan,
    open_for_commit,
    prepare_sink,
)
from seglog.spark.staging import (
    CommitReport,
    StagedFile,
    commit_job,
    create_job,
    has_journal,
    recover_jobs,
    remove_job,
)
from seglog.spark.stream_ledger import StreamMark, last_committed
from seglog.storage.atomic import fsync_directory

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from seglog.spark.sink import _PartitionStager

STREAM_JOB_PREFIX = "stream-"
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"
CHECKPOINT_OPTION = "checkpointlocation"
#: Test hook: ``<point>@<batch id>@<marker file>@<process group>``; at that point of that
#: micro-batch the process writes the marker and SIGKILLs the process group (a killed query).
TEST_KILL_ENV = "SEGLOG_SPARK_STREAM_TEST_KILL"


@dataclass(frozen=True)
class SeglogStreamCommitMessage(WriterCommitMessage):
    """One task's staged files in its own job directory (``job`` is its name, "" if none)."""

    task_partition: int
    task_attempt: str
    query_id: str | None
    batch_id: int | None
    job: str = ""
    files: tuple[StagedFile, ...] = field(default_factory=tuple)


def query_key(query_id: str) -> str:
    """The query's short, file-name-safe key used in staging directory names."""
    return hashlib.sha256(query_id.encode()).hexdigest()[:16]


def _kill_for_test(point: str, batch_id: int | None) -> None:
    """The crash-injection hook of :data:`TEST_KILL_ENV` (does nothing when it is unset)."""
    spec = os.environ.get(TEST_KILL_ENV)
    if not spec:
        return
    want_point, want_batch, marker, group = spec.split("@")
    if want_point != point or str(batch_id) != want_batch:
        return
    Path(marker).write_text(f"{point} {batch_id}\n")
    os.killpg(int(group), signal.SIGKILL)
    os._exit(137)  # in case this process is not in that group


class _StreamTaskEncoder(TaskEncoder):
    """The batch sink's encoder, creating the task's job directory at its first row."""

    job_name = ""
    staging_root = Path()
    log_dirs: Sequence[str] = ()

    def _stager(self, topic: str, partition: int, plan: TopicPlan) -> _PartitionStager:
        if not self.job_dir.exists():
            create_job(self.staging_root, self.job_name, self.log_dirs, self.now_ms)
        return super()._stager(topic, partition, plan)


class SeglogStreamWriter(DataSourceStreamArrowWriter):
    """The streaming sink's writer (module docstring). Spark makes one per micro-batch at
    planning (pickled to the tasks) and another for each commit, so creating one changes
    nothing on disk."""

    def __init__(
        self,
        options: SinkOptions,
        columns: InputColumns,
        plans: dict[str, TopicPlan],
        checkpoint: str | None,
    ) -> None:
        self.options = options
        self.columns = columns
        self.plans = plans
        self.checkpoint = checkpoint
        self.last_report: CommitReport | None = None
        self.replayed = False  # the last commit found its batch already committed

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SeglogStreamCommitMessage:
        """Encode and stage this task's rows (on an executor)."""
        task_partition, attempt, query_id, batch_id = _task_identity()
        root = Path(self.options.staging_root)
        key = query_key(query_id or self.checkpoint or "")
        batch = "x" if batch_id is None else f"{batch_id:010d}"
        name = f"{STREAM_JOB_PREFIX}{key}-b{batch}-{uuid.uuid4().hex[:12]}"
        job_dir = root / name
        encoder = _StreamTaskEncoder(
            self.plans,
            self.columns,
            self.options.topic,
            job_dir / f"task-{task_partition:05d}-{attempt}",
            job_dir,
            task_partition,
            int(time.time() * 1000),
        )
        encoder.job_name, encoder.staging_root = name, root
        encoder.log_dirs = self.options.log_dirs
        try:
            for record_batch in iterator:
                encoder.add(record_batch)
            files = encoder.finish()
        except BaseException:
            remove_job(job_dir)  # a failed task leaves nothing staged
            raise
        _kill_for_test("write", batch_id)
        return SeglogStreamCommitMessage(
            task_partition, attempt, query_id, batch_id, name if job_dir.exists() else "", files
        )

    def _query_id(self, messages: Sequence[SeglogStreamCommitMessage]) -> str:
        ids = {m.query_id for m in messages if m.query_id is not None}
        if len(ids) > 1:
            raise SparkOptionError(f"one micro-batch reported several query ids: {sorted(ids)}")
        if ids:
            return ids.pop()
        if self.checkpoint:
            return f"checkpoint:{self.checkpoint}"
        raise SparkOptionError(
            "cannot tell which streaming query wrote this micro-batch: give "
            "option 'checkpointLocation'"
        )

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 (Spark's name)
        """Append the micro-batch exactly once (module docstring, steps 2-3)."""
        mine = sorted(
            (m for m in messages if isinstance(m, SeglogStreamCommitMessage)),
            key=lambda m: m.task_partition,
        )
        self.last_report, self.replayed = None, False
        root = Path(self.options.staging_root)
        staged = [m for m in mine if m.files]
        if not staged:
            for m in mine:
                if m.job:
                    remove_job(root / m.job)
            return
        query = self._query_id(mine)
        manager = open_for_commit(self.options.log_dirs, self.options.commit_lock_wait_ms)
        try:
            recover_jobs(manager, root)
            last = last_committed(manager.broker.log_dirs, query)
            if last is not None and batchId <= last:
                self.replayed = True
                for m in staged:
                    remove_job(root / m.job)
                _remove_dead_jobs(root, query, batchId, keep=set())
                return
            _remove_dead_jobs(root, query, batchId, keep={m.job for m in staged})
            now_ms = int(time.time() * 1000)
            batch_dir = create_job(
                root,
                f"{STREAM_JOB_PREFIX}{query_key(query)}-b{batchId:010d}-{uuid.uuid4().hex[:12]}",
                self.options.log_dirs,
                now_ms,
            )
            for m in staged:
                task_job = root / m.job
                for task_dir in sorted({Path(f.path).parts[0] for f in m.files}):
                    os.rename(task_job / task_dir, batch_dir / task_dir)
            fsync_directory(batch_dir)
            for m in staged:
                remove_job(root / m.job)
            _kill_for_test("staged", batchId)

            def after_partition(_tp: TopicPartition) -> None:
                _kill_for_test("appending", batchId)

            self.last_report = commit_job(
                manager,
                batch_dir,
                [f for m in staged for f in m.files],
                now_ms=now_ms,
                after_partition=after_partition,
                stream=StreamMark(query, batchId, self.checkpoint),
            )
            _kill_for_test("committed", batchId)
        finally:
            manager.close()

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Remove the staged directories of the tasks that reported (failed tasks report
        nothing: the query's next commit removes theirs)."""
        root = Path(self.options.staging_root)
        for m in messages:
            if isinstance(m, SeglogStreamCommitMessage) and m.job:
                remove_job(root / m.job)


def _remove_dead_jobs(root: Path, query: str, batch_id: int, keep: set[str]) -> None:
    """Remove this query's staged directories of micro-batches up to ``batch_id`` that no
    running commit uses: attempts of a killed run or failed tasks (never a journaled job)."""
    prefix = f"{STREAM_JOB_PREFIX}{query_key(query)}-b"
    if not root.is_dir():
        return
    for job_dir in sorted(root.iterdir()):
        name = job_dir.name
        if not name.startswith(prefix) or name in keep or has_journal(job_dir):
            continue
        batch_text = name[len(prefix) :].split("-", 1)[0]
        if batch_text.isdigit() and int(batch_text) <= batch_id:
            remove_job(job_dir)


def _task_identity() -> tuple[int, str, str | None, int | None]:
    """(partition id, attempt id, query id, micro-batch id) of the running task."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:  # called outside Spark (tests)
        return 0, uuid.uuid4().hex[:12], None, None
    query_id = context.getLocalProperty(QUERY_ID_PROPERTY)
    batch_text = context.getLocalProperty(BATCH_ID_PROPERTY)
    batch_id = int(batch_text) if batch_text is not None and batch_text.isdigit() else None
    return context.partitionId(), str(context.taskAttemptId()), query_id, batch_id


def make_stream_writer(
    options: Mapping[str, str], schema: StructType, overwrite: bool
) -> SeglogStreamWriter:
    """The writer ``SeglogDataSource.streamWriter(schema, overwrite)`` returns."""
    if overwrite:
        raise SparkOptionError(
            "seglog logs are append-only: use outputMode('append') or 'update' (complete "
            "mode would have to delete records, which a Kafka log cannot do)"
        )
    # Spark hands the query's checkpointLocation to the sink among its options; the rest are
    # the batch sink's options, checked by the same code
    sink_options = {k: v for k, v in options.items() if k.lower() != CHECKPOINT_OPTION}
    parsed, columns, plans = prepare_sink(sink_options, schema)
    checkpoint = next((v for k, v in options.items() if k.lower() == CHECKPOINT_OPTION), None)
    if checkpoint:
        checkpoint = os.path.realpath(checkpoint) if "://" not in checkpoint else checkpoint
    return SeglogStreamWriter(parsed, columns, plans, checkpoint or None)


__all__ = ["SeglogStreamCommitMessage", "SeglogStreamWriter", "make_stream_writer"]
