"""The Spark batch sink: ``df.write.format("seglog").mode("append")``, exactly once.

Input columns (Spark's Kafka sink contract); other columns are ignored,
as Kafka's sink ignores them, so a DataFrame read with ``format("seglog")`` can be written
back as it is:

* ``value`` (required): ``string`` (written as UTF-8) or ``binary``; null is kept (a
  tombstone);
* ``key`` (optional): ``string`` or ``binary``; null or absent is a keyless record;
* ``topic`` (``string``): required unless option ``topic`` is set; **the option overrides
  the column**; a null topic with no option is an error naming the row;
* ``partition`` (optional, an integer type): null -> the default partitioner below; a
  partition the topic does not have is an error naming both;
* ``headers`` (optional): ``array<struct<key: string, value: binary>>`` (a ``string`` value
  is written as UTF-8); null means no headers;
* ``timestamp`` (optional): ``timestamp`` (written as its epoch milliseconds, rounded down)
  or ``double`` (epoch **seconds**, as Spark's ``cast(double as timestamp)`` reads it, which
  is what Kafka's sink does); null -> the time the task encodes the record. Integer columns
  are refused as ambiguous (seconds? milliseconds?): use ``timestamp_millis(col)``.

Partitioner (Kafka's default): a record with a key goes to
``partitions[toPositive(murmur2(key)) % len(partitions)]``, where Kafka's Java producer would
put it (:mod:`seglog.spark.partitioning`, checked against :mod:`seglog.core.partitioner`). A
keyless record goes **round-robin** over the topic's partitions, each task starting at its
Spark partition id: the same choice as ``seglog produce`` (:mod:`seglog.engine.producer`).
Kafka's sticky partitioner exists to fill network batches; here every task already builds a
separate batch per partition, so round-robin costs nothing and spreads records evenly.

Options (keys case-insensitive):

* ``path`` (required): the data directory, several ``log.dirs`` roots comma-separated;
* ``topic``: the topic of every row (overrides the ``topic`` column);
* ``stagingDir``: where tasks stage their batches; default ``<first log dir>.seglog-staging``
  beside the data directory (never inside it: Kafka refuses a log directory holding a
  sub-directory that is not ``topic-partition``). On a cluster it must be a filesystem that
  every executor and the driver see, like the data directory itself;
* ``commitLockWaitMs`` (default 10000): how long the commit waits for the data directory's
  ``.lock`` when another process holds it, before failing;
* ``kafka.*`` and ``includeHeaders`` are accepted and ignored (headers are written whenever
  the ``headers`` column is present); any other name raises with the closest known one
  (:mod:`seglog.spark.option_names`).

Semantics:

* Only ``mode("append")``: Spark refuses the default ``errorifexists`` and ``ignore`` for
  Python sources, and ``overwrite`` is refused here (a log is append-only). So unlike
  Kafka's sink, ``.mode("append")`` must be given.
* Topics are never created: a topic that does not exist is an error naming it (create it
  with ``seglog topics create``; the partition count decides where keys go, so it is not
  guessed).
* **Exactly once**: every task encodes Kafka v2 batches with the topic's
  ``compression.type`` and at most ``min(max.message.bytes, segment.bytes)`` bytes each, runs
  on each batch the validation ``Log.append`` runs (so a record too large, or a keyless
  record on a compacted topic, fails the *task* with the same ``RecordTooLargeError`` /
  ``InvalidRecordError``, before anything is appended), and stages them, one file per task
  per partition. The driver's ``commit`` appends them in task order under the data
  directory's lock; see :mod:`seglog.spark.staging` for the crash-safe journal. A failed job
  appends nothing and ``abort`` removes its staging directory. Each partition's records are
  visible (and fsynced) as soon as that partition's append is done.

Why this module is longer than the house's ~500 lines: the sink's input contract (columns,
types, partitioning), its task writer and its driver commit are one exactly-once protocol, kept
in one place; the staged files themselves are :mod:`seglog.spark.staging`.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from seglog.config import LogConfig
from seglog.core.append_validation import validate_append
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.errors import (
    InvalidRecordError,
    LogDirectoryLockedError,
    RecordTooLargeError,
    SparkOptionError,
    UnknownTopicError,
)
from seglog.format.builder import BatchBuilder
from seglog.format.compression import CompressionType
from seglog.format.records import Header
from seglog.format.topic_names import TopicPartition
from seglog.spark.logdirs import discover, parse_log_dirs
from seglog.spark.option_names import check_sink_option_names
from seglog.spark.partitioning import murmur2_positive
from seglog.spark.staging import (
    BATCHES_SUFFIX,
    CommitReport,
    PartitionHook,
    StagedFile,
    commit_job,
    create_job,
    default_staging_root,
    has_journal,
    recover_jobs,
    remove_job,
)
from seglog.storage.atomic import fsync_directory

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

COMMIT_LOCK_WAIT_MS_DEFAULT = 10_000
COMMIT_LOCK_POLL_MS = 100
TASK_BUFFER_BYTES_MAX = 64 * 1024 * 1024  # encoded bytes a task holds before writing out
ROWS_BETWEEN_BUFFER_CHECKS = 4096
INT32_MAX = (1 << 31) - 1

TIMESTAMP_KIND_TIMESTAMP = "timestamp"
TIMESTAMP_KIND_SECONDS = "seconds"


# --- options and schema -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SinkOptions:
    """The parsed sink options (see the module docstring)."""

    log_dirs: tuple[str, ...]
    topic: str | None
    staging_root: str
    commit_lock_wait_ms: int


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Parse and check the sink options (keys case-insensitive; an unknown one raises)."""
    check_sink_option_names(options)
    opts = {k.lower(): v for k, v in options.items()}
    log_dirs = tuple(str(Path(p).absolute()) for p in parse_log_dirs(opts.get("path")))
    topic = opts.get("topic")
    if topic is not None and not topic.strip():
        raise SparkOptionError("option 'topic' is empty: give a topic name or leave it out")
    staging = opts.get("stagingdir")
    if staging is not None and not staging.strip():
        raise SparkOptionError("option 'stagingDir' is empty: give a directory or leave it out")
    staging_root = Path(staging.strip()).absolute() if staging else default_staging_root(log_dirs)
    for root in log_dirs:
        if staging_root == Path(root) or Path(root) in staging_root.parents:
            raise SparkOptionError(
                f"option 'stagingDir' {str(staging_root)!r} is inside log directory {root!r}: "
                "Kafka refuses to load a log directory holding other directories; put it "
                "beside the data directory"
            )
    wait_text = opts.get("commitlockwaitms", str(COMMIT_LOCK_WAIT_MS_DEFAULT))
    try:
        wait_ms = int(wait_text)
    except ValueError:
        wait_ms = -1
    if wait_ms < 0:
        raise SparkOptionError(
            f"option 'commitLockWaitMs' is {wait_text!r}: give milliseconds, an integer >= 0"
        )
    return SinkOptions(log_dirs, topic.strip() if topic else None, str(staging_root), wait_ms)


@dataclass(frozen=True, slots=True)
class InputColumns:
    """Which sink columns the DataFrame has (names as in the contract)."""

    has_key: bool
    has_topic: bool
    has_partition: bool
    has_headers: bool
    timestamp_kind: str | None  # TIMESTAMP_KIND_* or None


def check_input_schema(schema: StructType, *, topic_option: str | None) -> InputColumns:
    """Check the DataFrame's columns against the sink contract (errors name the column)."""
    from pyspark.sql import types as t

    fields = {f.name: f.dataType for f in schema.fields}

    def binary_or_string(name: str) -> None:
        kind = fields[name]
        if not isinstance(kind, t.StringType | t.BinaryType):
            raise SparkOptionError(
                f"column {name!r} must be string or binary, not {kind.simpleString()}"
            )

    if "value" not in fields:
        raise SparkOptionError("the DataFrame has no 'value' column (required: string or binary)")
    binary_or_string("value")
    if "key" in fields:
        binary_or_string("key")
    if "topic" in fields and not isinstance(fields["topic"], t.StringType):
        raise SparkOptionError(f"column 'topic' must be string, not {fields['topic']}")
    if "topic" not in fields and topic_option is None:
        raise SparkOptionError(
            "no topic: give option 'topic' or a 'topic' column (the option overrides it)"
        )
    if "partition" in fields and not isinstance(
        fields["partition"], t.IntegerType | t.LongType | t.ShortType | t.ByteType
    ):
        raise SparkOptionError(
            f"column 'partition' must be an integer, not {fields['partition'].simpleString()}"
        )
    if "headers" in fields:
        kind = fields["headers"]
        ok = (
            isinstance(kind, t.ArrayType)
            and isinstance(kind.elementType, t.StructType)
            and [f.name for f in kind.elementType.fields] == ["key", "value"]
            and isinstance(kind.elementType.fields[0].dataType, t.StringType)
            and isinstance(kind.elementType.fields[1].dataType, t.BinaryType | t.StringType)
        )
        if not ok:
            raise SparkOptionError(
                f"column 'headers' must be array<struct<key: string, value: binary>>, not "
                f"{kind.simpleString()}"
            )
    timestamp_kind = None
    if "timestamp" in fields:
        kind = fields["timestamp"]
        if isinstance(kind, t.TimestampType | t.TimestampNTZType):
            timestamp_kind = TIMESTAMP_KIND_TIMESTAMP
        elif isinstance(kind, t.DoubleType | t.FloatType | t.DecimalType):
            timestamp_kind = TIMESTAMP_KIND_SECONDS
        else:
            raise SparkOptionError(
                f"column 'timestamp' must be a timestamp (or double epoch seconds), not "
                f"{kind.simpleString()}; for epoch milliseconds use timestamp_millis(col)"
            )
    return InputColumns(
        has_key="key" in fields,
        has_topic="topic" in fields,
        has_partition="partition" in fields,
        has_headers="headers" in fields,
        timestamp_kind=timestamp_kind,
    )


# --- per topic ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TopicPlan:
    """What a task needs to encode for a topic: partitions and the batch rules."""

    topic: str
    partitions: tuple[int, ...]
    config: LogConfig
    max_batch_bytes: int
    compression: CompressionType

    @classmethod
    def of(cls, topic: str, partitions: Sequence[int], config: LogConfig) -> TopicPlan:
        """As ``Log.append_records`` builds: the topic codec, min(max.message, segment)."""
        name = config.compression_type
        codec = (
            CompressionType.NONE
            if name in ("producer", "uncompressed")
            else CompressionType[name.upper()]
        )
        limit = min(config.max_message_bytes, config.segment_bytes)
        return cls(topic, tuple(partitions), config, limit, codec)


def topic_plans(log_dirs: Sequence[str]) -> dict[str, TopicPlan]:
    """Every topic of the data directory with its partitions and batch rules."""
    layout = discover(log_dirs)
    return {
        topic: TopicPlan.of(
            topic, [p.partition for p in layout.partitions_of(topic)], layout.config(topic)
        )
        for topic in layout.topic_names()
    }


# --- encoding (executors) -----------------------------------------------------------------------
class _PartitionStager:
    """Builds one partition's batches and appends them to its staged file."""

    def __init__(self, tp: TopicPartition, plan: TopicPlan, path: Path, now_ms: int) -> None:
        self.tp = tp
        self.plan = plan
        self.path = path
        self.now_ms = now_ms
        self.where = f"append to {tp}"
        self.builder: BatchBuilder | None = None
        self.pending: list[bytes] = []
        self.pending_bytes = 0
        self.batches = 0
        self.records = 0
        self.size_bytes = 0

    def _new_builder(self) -> BatchBuilder:
        # Offsets continue from batch to batch, so a staged file reads like a log (tools and
        # BatchReader accept it); the append assigns the real offsets.
        return BatchBuilder(
            base_offset=self.records,  # called only when no batch is open
            max_batch_bytes=self.plan.max_batch_bytes,
            compression=self.plan.compression,
        )

    def append(
        self, timestamp: int, key: bytes | None, value: bytes | None, headers: Sequence[Header]
    ) -> None:
        """Add a record; a full batch is sealed and a new one started."""
        builder = self.builder
        if builder is None:
            builder = self.builder = self._new_builder()
        try:
            if builder.try_append(timestamp, key, value, headers):
                return
            self.seal()
            builder = self.builder = self._new_builder()
            builder.append(timestamp, key, value, headers)
        except RecordTooLargeError as exc:
            raise RecordTooLargeError(
                f"{self.where}: {exc} (max.message.bytes {self.plan.config.max_message_bytes}, "
                f"segment.bytes {self.plan.config.segment_bytes})"
            ) from exc

    def seal(self) -> None:
        """Build the open batch, validate it as ``Log.append`` would, keep it pending."""
        builder, self.builder = self.builder, None
        if builder is None or not len(builder):
            return
        batch = builder.build()
        validate_append(
            batch,
            config=self.plan.config,
            log_end_offset=0,
            now_ms=self.now_ms,
            where=self.where,
        )
        self.pending.append(batch)
        self.pending_bytes += len(batch)
        self.batches += 1
        self.records += len(builder)

    def buffered_bytes(self) -> int:
        """Encoded bytes held in memory (pending batches and the open batch)."""
        return self.pending_bytes + (self.builder.size_in_bytes if self.builder else 0)

    def write_out(self) -> None:
        """Append the pending batches to the staged file."""
        if not self.pending:
            return
        with open(self.path, "ab") as handle:
            for batch in self.pending:
                handle.write(batch)
        self.size_bytes += self.pending_bytes
        self.pending.clear()
        self.pending_bytes = 0

    def finish(self) -> None:
        """Seal, write out and fsync the staged file."""
        self.seal()
        self.write_out()
        if self.size_bytes:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _as_binary(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A string/binary column as a binary array (UTF-8 for strings; no copy)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    kind = column.type
    if pa.types.is_string(kind):
        return column.cast(pa.binary())
    if pa.types.is_large_string(kind):
        return column.cast(pa.large_binary())
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return column
    raise InvalidRecordError(f"expected a string or binary column, got {kind}")


def _timestamps_ms(column: pa.Array, kind: str, now_ms: int) -> npt.NDArray[np.int64]:
    """Epoch milliseconds per row (rounded down); nulls become ``now_ms``."""
    rows = len(column)
    if kind == TIMESTAMP_KIND_TIMESTAMP:
        unit = column.type.unit
        raw = pc.fill_null(column.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
        per_ms = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[unit]
        values = raw * 1000 if per_ms is None else np.floor_divide(raw, per_ms)
    else:
        seconds = pc.fill_null(column.cast(pa.float64()), 0.0).to_numpy(zero_copy_only=False)
        if not np.isfinite(seconds).all():
            bad = int(np.flatnonzero(~np.isfinite(seconds))[0])
            raise InvalidRecordError(f"row {bad}: timestamp {seconds[bad]} is not finite")
        micros = np.trunc(seconds * 1_000_000).astype(np.int64)  # Spark's double -> timestamp
        values = np.floor_divide(micros, 1000)
    out = np.asarray(values, dtype=np.int64)
    if column.null_count:
        nulls = np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        out = np.where(nulls, now_ms, out)
    negative = np.flatnonzero(out < 0)
    if len(negative):
        raise InvalidRecordError(
            f"row {int(negative[0])}: timestamp {int(out[negative[0]])} ms is before the epoch; "
            "Kafka timestamps are >= 0 (or null for the current time)"
        )
    assert len(out) == rows
    return out


def _headers_of(value: list[dict[str, Any]] | None, row: int) -> tuple[Header, ...]:
    if not value:
        return ()
    out = []
    for item in value:
        key = item["key"]
        if key is None:
            raise InvalidRecordError(f"row {row}: a header key is null")
        header_value = item["value"]
        if isinstance(header_value, str):
            header_value = header_value.encode("utf-8")
        out.append(Header(key, header_value))
    return tuple(out)


class TaskEncoder:
    """One task's encoder: partition each row, build batches, stage them (module docstring)."""

    def __init__(
        self,
        plans: Mapping[str, TopicPlan],
        columns: InputColumns,
        topic_option: str | None,
        task_dir: Path,
        job_dir: Path,
        task_partition: int,
        now_ms: int,
    ) -> None:
        self.plans = plans
        self.columns = columns
        self.topic_option = topic_option
        self.task_dir = task_dir
        self.job_dir = job_dir
        self.task_partition = task_partition
        self.now_ms = now_ms
        self.stagers: dict[TopicPartition, _PartitionStager] = {}
        self.round_robin: dict[str, int] = {}
        self.rows = 0

    def _plan(self, topic: str) -> TopicPlan:
        plan = self.plans.get(topic)
        if plan is None:
            raise UnknownTopicError(
                f"topic {topic!r} does not exist in the data directory (the sink creates no "
                "topics: create it first, e.g. `seglog topics create`)"
            )
        return plan

    def _stager(self, topic: str, partition: int, plan: TopicPlan) -> _PartitionStager:
        tp = TopicPartition(topic, partition)
        stager = self.stagers.get(tp)
        if stager is None:
            if not self.task_dir.exists():
                self.task_dir.mkdir()
            path = self.task_dir / f"{tp}{BATCHES_SUFFIX}"
            stager = self.stagers[tp] = _PartitionStager(tp, plan, path, self.now_ms)
        return stager

    def add(self, batch: pa.RecordBatch) -> None:
        """Encode every row of an Arrow batch."""
        rows = batch.num_rows
        if rows == 0:
            return
        names = batch.schema.names
        values = _as_binary(batch.column(names.index("value"))).to_pylist()
        if self.columns.has_key:
            key_array = _as_binary(batch.column(names.index("key")))
            keys: list[bytes | None] = key_array.to_pylist()
            hashes = murmur2_positive(key_array).tolist()
        else:
            keys = [None] * rows
            hashes = [-1] * rows
        topics: list[str | None] = (
            [self.topic_option] * rows
            if self.topic_option is not None
            else batch.column(names.index("topic")).to_pylist()
        )
        partitions: list[int | None] = (
            batch.column(names.index("partition")).to_pylist()
            if self.columns.has_partition
            else [None] * rows
        )
        headers: list[Any] = (
            batch.column(names.index("headers")).to_pylist()
            if self.columns.has_headers
            else [None] * rows
        )
        if self.columns.timestamp_kind is not None:
            stamps = _timestamps_ms(
                batch.column(names.index("timestamp")), self.columns.timestamp_kind, self.now_ms
            ).tolist()
        else:
            stamps = [self.now_ms] * rows
        for row in range(rows):
            topic = topics[row]
            if topic is None:
                raise InvalidRecordError(
                    f"row {self.rows + row} has a null topic and no option 'topic' is set"
                )
            plan = self._plan(topic)
            partition = partitions[row]
            if partition is not None:
                if partition not in plan.partitions:
                    raise UnknownTopicError(
                        f"row {self.rows + row}: topic {topic!r} has no partition {partition} "
                        f"(it has {len(plan.partitions)})"
                    )
            elif hashes[row] >= 0:
                partition = plan.partitions[hashes[row] % len(plan.partitions)]
            else:
                turn = self.round_robin.get(topic, self.task_partition)
                self.round_robin[topic] = turn + 1
                partition = plan.partitions[turn % len(plan.partitions)]
            self._stager(topic, partition, plan).append(
                stamps[row], keys[row], values[row], _headers_of(headers[row], self.rows + row)
            )
            if row % ROWS_BETWEEN_BUFFER_CHECKS == ROWS_BETWEEN_BUFFER_CHECKS - 1:
                self._bound_memory()
        self.rows += rows
        self._bound_memory()

    def _bound_memory(self) -> None:
        """Keep at most TASK_BUFFER_BYTES_MAX encoded bytes in memory."""
        stagers = self.stagers.values()
        if sum(s.buffered_bytes() for s in stagers) <= TASK_BUFFER_BYTES_MAX:
            return
        for stager in stagers:
            stager.write_out()
        if sum(s.buffered_bytes() for s in stagers) > TASK_BUFFER_BYTES_MAX:
            for stager in stagers:  # many partitions: their open batches alone are too much
                stager.seal()
                stager.write_out()

    def finish(self) -> tuple[StagedFile, ...]:
        """Seal, write and fsync every staged file; what the commit message reports."""
        files = []
        for tp, stager in sorted(self.stagers.items()):
            stager.finish()
            if stager.records:
                files.append(
                    StagedFile(
                        tp.topic,
                        tp.partition,
                        str(stager.path.relative_to(self.job_dir)),
                        stager.size_bytes,
                        stager.batches,
                        stager.records,
                    )
                )
        if self.stagers:
            fsync_directory(self.task_dir)
            fsync_directory(self.job_dir)
        return tuple(files)


# --- the writer ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class SeglogCommitMessage(WriterCommitMessage):
    """One task's staged files (never None: Spark 4.3 refuses None messages)."""

    task_partition: int
    task_attempt: str
    files: tuple[StagedFile, ...] = field(default_factory=tuple)


def open_for_commit(log_dirs: Sequence[str], wait_ms: int) -> LogManager:
    """Open the data directory read-write, waiting up to ``wait_ms`` for its ``.lock``."""
    deadline = time.monotonic() + wait_ms / 1000
    while True:
        try:
            return open_log_dirs(list(log_dirs))
        except LogDirectoryLockedError as exc:
            if time.monotonic() >= deadline:
                raise LogDirectoryLockedError(
                    f"cannot commit the Spark write: {exc}. Stop the other process (a running "
                    "`seglog` command or service, a Kafka broker, or another Spark write "
                    "committing) and run the write again; nothing was appended",
                    path=exc.path,
                ) from exc
            time.sleep(COMMIT_LOCK_POLL_MS / 1000)


class SeglogArrowWriter(DataSourceArrowWriter):
    """The sink's writer: tasks stage, the driver commits (module docstring)."""

    def __init__(
        self,
        options: SinkOptions,
        columns: InputColumns,
        plans: dict[str, TopicPlan],
        job_dir: str,
    ) -> None:
        self.options = options
        self.columns = columns
        self.plans = plans
        self.job_dir = job_dir
        self.after_partition: PartitionHook | None = None  # tests: crash injection
        self.last_report: CommitReport | None = None

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SeglogCommitMessage:
        """Encode and stage this task's rows; return the staged files."""
        task_partition, attempt = _task_identity()
        job_dir = Path(self.job_dir)
        if not job_dir.is_dir():
            raise SparkOptionError(
                f"the job's staging directory {job_dir} is not visible here: put "
                "'stagingDir' on a filesystem every executor and the driver share"
            )
        encoder = TaskEncoder(
            self.plans,
            self.columns,
            self.options.topic,
            job_dir / f"task-{task_partition:05d}-{attempt}",
            job_dir,
            task_partition,
            int(time.time() * 1000),
        )
        for batch in iterator:
            encoder.add(batch)
        return SeglogCommitMessage(task_partition, attempt, encoder.finish())

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Append every staged file in task order, exactly once (seglog.spark.staging)."""
        ordered = sorted(
            (m for m in messages if isinstance(m, SeglogCommitMessage)),
            key=lambda m: m.task_partition,
        )
        staged = [f for m in ordered for f in m.files]
        job_dir = Path(self.job_dir)
        if not staged:
            remove_job(job_dir)
            return
        manager = open_for_commit(self.options.log_dirs, self.options.commit_lock_wait_ms)
        try:
            recover_jobs(manager, Path(self.options.staging_root), exclude=job_dir.name)
            self.last_report = commit_job(
                manager,
                job_dir,
                staged,
                now_ms=int(time.time() * 1000),
                after_partition=self.after_partition,
            )
        finally:
            manager.close()

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Remove the job's staging directory, unless its commit had begun (then the next
        commit on the data directory completes it; see seglog.spark.staging)."""
        job_dir = Path(self.job_dir)
        if not has_journal(job_dir):
            remove_job(job_dir)


def _task_identity() -> tuple[int, str]:
    """(Spark partition id, unique attempt id) of the running task."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:  # called outside Spark (tests)
        return 0, uuid.uuid4().hex[:12]
    return context.partitionId(), str(context.taskAttemptId())


def prepare_sink(
    options: Mapping[str, str], schema: StructType
) -> tuple[SinkOptions, InputColumns, dict[str, TopicPlan]]:
    """Options, columns and topics checked (shared with the streaming sink)."""
    parsed = parse_sink_options(options)
    columns = check_input_schema(schema, topic_option=parsed.topic)
    plans = topic_plans(parsed.log_dirs)
    if parsed.topic is not None and parsed.topic not in plans:
        raise UnknownTopicError(
            f"topic {parsed.topic!r} does not exist in {', '.join(parsed.log_dirs)} (the sink "
            "creates no topics: create it first, e.g. `seglog topics create`)"
        )
    return parsed, columns, plans


def make_writer(
    options: Mapping[str, str], schema: StructType, overwrite: bool
) -> DataSourceArrowWriter:
    """The writer ``SeglogDataSource.writer(schema, overwrite)`` returns (runs on the driver).

    Checks the options and columns, lists the data directory's topics, and creates the job's
    staging directory. ``overwrite`` is refused: a log is append-only.
    """
    if overwrite:
        raise SparkOptionError(
            "seglog logs are append-only: use .mode('append') (overwrite would have to delete "
            "records, which a Kafka log cannot do)"
        )
    parsed, columns, plans = prepare_sink(options, schema)
    job_dir = create_job(
        Path(parsed.staging_root), uuid.uuid4().hex, parsed.log_dirs, int(time.time() * 1000)
    )
    return SeglogArrowWriter(parsed, columns, plans, str(job_dir))


def recover_commits(
    log_dirs: Sequence[str | Path], staging_dir: str | Path | None = None
) -> list[CommitReport]:
    """Finish every interrupted sink commit of a data directory (takes its lock)."""
    dirs = [str(Path(d).absolute()) for d in log_dirs]
    root = Path(staging_dir).absolute() if staging_dir else default_staging_root(dirs)
    with open_for_commit(dirs, 0) as manager:
        return recover_jobs(manager, root)


__all__ = [
    "SeglogArrowWriter",
    "SeglogCommitMessage",
    "check_input_schema",
    "make_writer",
    "parse_sink_options",
    "recover_commits",
]
