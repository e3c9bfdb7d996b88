"""The LogManager: every log directory, topic and partition of one node (Kafka's ``LogManager``).

This module owns the life of the node: startup (its steps apart from the manager's state are
in :mod:`seglog.engine.node_startup`), the scheduled tasks, the retention, cleaner and
compaction entry points, and shutdown. It composes two helpers and keeps delegating methods, so
its public API is that of one class:

* :mod:`seglog.engine.topics`: the topic metadata (``seglog-topics.json``), config resolution
  and the crash-safe topic operations (create, delete, alter, describe);
* :mod:`seglog.engine.checkpoints`: the per-root offset checkpoints (recovery points, log start
  offsets, high watermarks);
* :mod:`seglog.engine.log_retention`: retention and DeleteRecords (what moves log start
  offsets, each move checkpointed).

The maps of open logs (``_logs``) and of their roots (``_log_root``) are created here and
shared by reference with both helpers; only startup and :class:`~seglog.engine.topics.Topics`
(creating or deleting partitions) change them.

Startup, per root of ``log.dirs``: take ``.lock``; read or create ``meta.properties`` (all roots
must name the same cluster); remove stray ``*.tmp``; take the ``.kafka_cleanshutdown`` marker;
read the recovery-point and log-start checkpoints; open every partition directory (recovering
it unless the shutdown was clean); queue ``-delete`` directories for removal. Then topics are
reconciled with ``seglog-topics.json`` (the newest generation over all roots): a topic marked
``deleting`` finishes its deletion; a partition the metadata lists but no root holds is created
(a crash during topic creation); the queued ``-delete`` directories are removed.

Shutdown: flush and close every log, write the checkpoints, then ``.kafka_cleanshutdown`` in
each root (not in a root holding a log whose failed write could not be undone), then release
the locks.

Why this module is longer than the house's ~500 lines: :class:`LogManager` is the node's
public API (what the CLI, the Spark jobs and the tests call), and most of its methods are
two-line delegations to the parts above; splitting it further would split the API, not a
responsibility.

A ``read_only`` manager never writes, renames or deletes anything (no lock either): it is how
seglog opens a directory a broker owns, or the corpus.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from seglog.clock import Clock, SystemClock
from seglog.config import BrokerConfig, LogConfig
from seglog.core.offset_map import OffsetMap
from seglog.core.retention import RetentionPlan
from seglog.engine.checkpoints import OffsetCheckpoints, read_startup_offsets
from seglog.engine.cleaning.cleaner import Cleaner
from seglog.engine.cleaning.cleaner_manager import CleanerManager
from seglog.engine.cleaning.log_cleaner import (
    CleanPlan,
    CleanResult,
    LogCleaner,
    per_thread_map_bytes,
)
from seglog.engine.compaction.compactor import (
    CompactionRun,
    CompactionService,
    copy_store,
    read_compacted_records,
)
from seglog.engine.log import Log
from seglog.engine.log.record_scan import ConsumedRecord
from seglog.engine.log_retention import LogRetention
from seglog.engine.node_startup import (
    LogRoot,
    count_live_partitions,
    load_catalogue,
    load_meta_properties,
    lock_roots,
    prepare_roots,
    remove_pending_deletes,
    schedule_node_tasks,
)
from seglog.engine.producer_ids import ProducerIdManager
from seglog.engine.progress import ProgressCallback
from seglog.engine.retention_counters import RetentionCounters
from seglog.engine.run_history import RunHistory
from seglog.engine.scheduler import Scheduler
from seglog.engine.topic_catalogue import ResolvedTopic, TopicCatalogue
from seglog.engine.topics import (
    MAX_PARTITIONS_PER_TOPIC,
    PartitionInfo,
    SegmentInfo,
    TopicDescription,
    Topics,
)
from seglog.errors import (
    InvalidConfigError,
    SeglogError,
    UnknownTopicError,
)
from seglog.format.checkpoint import MetaProperties
from seglog.format.topic_names import PartitionDirKind, TopicPartition, parse_partition_dir_name
from seglog.storage.compacted_copy import CompactionStatus
from seglog.storage.loader import LoadReport
from seglog.storage.log_dir import LogDirectory, TopicsFile
from seglog.storage.partition_dirs import list_partition_dirs
from seglog.storage.producer_id_block import read_next_block_start
from seglog.storage.segment import LogSegment
from seglog.storage.side_threads import SideThreads

__all__ = [
    "MAX_PARTITIONS_PER_TOPIC",
    "LogManager",
    "PartitionInfo",
    "SegmentInfo",
    "TopicDescription",
    "open_log_dirs",
]


def _topic_partition_of(directory: Path) -> tuple[str, int]:
    """(topic, partition) of a live partition directory name."""
    parsed = parse_partition_dir_name(directory.name)
    return (parsed.topic, parsed.partition) if parsed else ("", -1)


KRAFT_METADATA_TOPIC = "__cluster_metadata"


class LogManager:
    """Every log of a node; see the module docstring. Use :meth:`open` and :meth:`close`."""

    def __init__(
        self,
        broker: BrokerConfig,
        *,
        clock: Clock | None = None,
        read_only: bool = False,
        start_scheduler: bool = False,
        progress: ProgressCallback | None = None,
    ) -> None:
        if not broker.log_dirs:
            raise InvalidConfigError("log.dirs is empty: give at least one data directory")
        self.broker = broker
        self.clock: Clock = clock or SystemClock()
        self.read_only = read_only
        self.scheduler = Scheduler(self.clock)
        # One thread runs the fsyncs that follow rolls (Kafka's "flush-log" task).
        self._flush_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seglog-flush")
        # Side threads check the CRCs of large appends while they are written (Log.append),
        # shared by every log; a log finding them all busy checks before it writes.
        self._side_threads = SideThreads(max_threads=os.cpu_count() or 2)
        self._lock = threading.RLock()
        self._roots = [
            LogRoot(LogDirectory(Path(d), writable=not read_only)) for d in broker.log_dirs
        ]
        self._logs: dict[TopicPartition, Log] = {}
        self._log_root: dict[TopicPartition, int] = {}
        self.load_reports: list[LoadReport] = []
        self.metadata_problems: list[str] = []  # damaged topic-metadata copies that were skipped
        self.meta: MetaProperties | None = None
        self._closed = False
        self._start_scheduler = start_scheduler
        self._progress = progress  # startup: (partitions opened, partitions found)
        self._progress_total = 0
        self._producer_ids: ProducerIdManager | None = None  # made by producer_ids
        self.retention_counters = RetentionCounters()  # for the metrics
        # Segments renamed .deleted and waiting for file.delete.delay.ms: their files are
        # closed at shutdown (the .deleted files themselves are removed at the next startup).
        self._pending_file_deletes: set[LogSegment] = set()
        self.cleaner_manager = CleanerManager(
            {root.directory.path: root.directory for root in self._roots},
            self.managed_logs,
            clock=self.clock,
            writable=not read_only,
            backoff_ms=broker.log_cleaner_backoff_ms,
        )
        self.log_cleaner = LogCleaner(
            broker, self.cleaner_manager, clock=self.clock, run_retention=self._retain
        )
        # Retention deletions and compactor runs, per root (figures for `seglog report`).
        self.history = RunHistory(
            [root.directory.path for root in self._roots],
            lambda: dict(self._logs),
            writable=not read_only,
        )
        self.compaction = CompactionService(
            self._new_compaction_cleaner,
            self.clock,
            lambda log: self.cleaner_manager.checkpoints().get(log.topic_partition),
            record_run=self.history.record_compaction,
        )
        directories = [root.directory for root in self._roots]
        self._checkpoints = OffsetCheckpoints(
            directories, self._logs, self._log_root, read_only=read_only
        )
        self._topic_ops = Topics(
            broker,
            directories,
            self._logs,
            self._log_root,
            lock=self._lock,
            scheduler=self.scheduler,
            cleaner_manager=self.cleaner_manager,
            history=self.history,
            open_new_log=self._open_new_log,
            check_writable=self._check_writable,
            checkpoint_all=self.checkpoint_all,
        )
        self._retention = LogRetention(
            self._topic_ops,
            clock=self.clock,
            read_only=read_only,
            cleaner_manager=self.cleaner_manager,
            history=self.history,
            counters=self.retention_counters,
            checkpoint_log_start_offsets=self.checkpoint_log_start_offsets,
            check_writable=self._check_writable,
        )

    @classmethod
    def open(
        cls,
        broker: BrokerConfig,
        *,
        clock: Clock | None = None,
        read_only: bool = False,
        start_scheduler: bool = False,
        progress: ProgressCallback | None = None,
    ) -> LogManager:
        """Open every root of ``broker.log_dirs`` (see the module docstring); ``progress``
        is called after each partition is opened (and recovered), with the count of
        partition directories found."""
        manager = cls(
            broker,
            clock=clock,
            read_only=read_only,
            start_scheduler=start_scheduler,
            progress=progress,
        )
        try:
            manager._startup()
        except BaseException:
            manager._release()
            raise
        return manager

    def __enter__(self) -> LogManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- startup (the steps apart from this class's state: seglog.engine.node_startup) ------------
    def _startup(self) -> None:
        roots = self._roots
        lock_roots(roots, read_only=self.read_only)
        self.meta = load_meta_properties(roots, self.broker, self.clock)
        self._topic_ops.file, self.metadata_problems = prepare_roots(roots)
        self._topic_ops.catalogue = load_catalogue(
            roots, self.broker, self.meta, self.metadata_problems
        )
        if self._progress is not None:
            self._progress_total = count_live_partitions(roots)
        for index, root in enumerate(roots):
            self._load_root(index, root)
        if self._progress is not None:  # directories skipped (-delete, future) are done too
            self._progress(len(self._logs), len(self._logs))
        if not self.read_only:
            self._topic_ops.reconcile()
            remove_pending_deletes(roots)
            self._schedule_tasks()
            if self._start_scheduler:
                self.scheduler.start()
                self.log_cleaner.start()

    def _load_root(self, index: int, root: LogRoot) -> None:
        directory = root.directory
        offsets = read_startup_offsets(directory)
        for path, parsed in list_partition_dirs(directory.path):
            if parsed.kind is PartitionDirKind.DELETE:
                root.pending_deletes.append(path)
                continue
            if parsed.kind is not PartitionDirKind.LIVE or parsed.topic == KRAFT_METADATA_TOPIC:
                continue  # future/stray replicas and the KRaft metadata log are not ours to open
            tp = TopicPartition(parsed.topic, parsed.partition)
            if tp in self._logs:
                raise InvalidConfigError(
                    f"partition {tp} is in two log directories: "
                    f"{self._logs[tp].directory} and {path}"
                )
            meta = self._topic_ops.file.topics.get(tp.topic)
            if meta is not None and meta.deleting:
                continue  # finished by _reconcile_topics
            log = Log.open(
                path,
                tp,
                self.log_config(tp.topic),
                clock=self.clock,
                recovery_point=offsets.recovery_points.get(tp, 0),
                log_start_offset=offsets.log_starts.get(tp, 0),
                had_clean_shutdown=root.had_clean_shutdown,
                writable=not self.read_only,
                producer_id_expiration_ms=self.broker.producer_id_expiration_ms,
                flush_executor=self._flush_executor,
                file_deleter=self._schedule_file_deletion,
                side_threads=self._side_threads,
            )
            self._logs[tp] = log
            self._log_root[tp] = index
            self.load_reports.append(log.load_report)
            copy_store(log).recover(log.log_end_offset)  # unpublished/superseded copies go
            if self._progress is not None:
                total = max(self._progress_total, len(self._logs))
                self._progress(len(self._logs), total)

    def _new_compaction_cleaner(self) -> Cleaner:
        """The compacted-copy compactor's own map and buffers (the cleaner threads keep
        theirs), sized like one cleaner thread's."""
        return Cleaner(
            OffsetMap(
                per_thread_map_bytes(self.broker), self.broker.log_cleaner_io_buffer_load_factor
            ),
            clock=self.clock,
            throttler=self.log_cleaner.throttler,
            producer_id_expiration_ms=self.broker.producer_id_expiration_ms,
        )

    def _schedule_tasks(self) -> None:
        broker = self.broker
        tasks: tuple[tuple[str, Callable[[], object], int], ...] = (
            (
                "seglog-compaction-monitor",
                self.run_compaction_triggers,
                broker.log_compaction_check_interval_ms,
            ),
            ("kafka-log-retention", self.run_retention, broker.log_retention_check_interval_ms),
            ("kafka-log-flusher", self.flush_due_logs, broker.log_flush_scheduler_interval_ms),
            (
                "kafka-recovery-point-checkpoint",
                self.checkpoint_recovery_points,
                broker.log_flush_offset_checkpoint_interval_ms,
            ),
            (
                "kafka-log-start-offset-checkpoint",
                self.checkpoint_log_start_offsets,
                broker.log_flush_start_offset_checkpoint_interval_ms,
            ),
            (
                "highwatermark-checkpoint",
                self.checkpoint_high_watermarks,
                broker.replica_high_watermark_checkpoint_interval_ms,
            ),
            (
                "PeriodicProducerExpirationCheck",
                self.remove_expired_producers,
                broker.producer_id_expiration_check_interval_ms,
            ),
        )
        schedule_node_tasks(self.scheduler, broker, tasks)

    def remove_expired_producers(self) -> int:
        """Forget, in every log, producers idle for ``producer.id.expiration.ms`` with no
        open transaction (Kafka's periodic producer expiration check); returns how many."""
        return sum(log.remove_expired_producers() for log in list(self._logs.values()))

    @property
    def first_directory(self) -> Path:
        """The first data directory: where broker-wide files live (the producer-id mark, the
        server's security files), as plain files a Kafka broker ignores."""
        return self._roots[0].directory.path

    @property
    def producer_ids(self) -> ProducerIdManager:
        """InitProducerId's producer ids, never repeated (:mod:`seglog.engine.producer_ids`):
        the mark lives in the first root; the first block starts above every root's mark (a
        reordered ``log.dirs`` cannot repeat ids) and every producer id in the logs'
        producer state. Made on first use; a read-only manager has none."""
        self._check_writable()
        with self._lock:
            if self._producer_ids is None:
                roots = [root.directory.path for root in self._roots]

                def floor() -> int:
                    marks = [read_next_block_start(path) for path in roots]
                    known = [
                        pid
                        for log in list(self._logs.values())
                        for pid in log.producer_state.producers()
                    ]
                    return max([*marks, max(known, default=-1) + 1])

                self._producer_ids = ProducerIdManager(roots[0], floor=floor)
            return self._producer_ids

    # --- topics and configs (seglog.engine.topics) ------------------------------------------
    @property
    def catalogue(self) -> TopicCatalogue:
        """How topic configs are resolved (set at startup from the KRaft metadata image)."""
        return self._topic_ops.catalogue

    @property
    def _topics(self) -> TopicsFile:
        return self._topic_ops.file

    def _write_topics(self) -> None:
        self._topic_ops.write()

    def log_config(self, topic: str, overrides: Mapping[str, str] | None = None) -> LogConfig:
        """The effective config of a topic (see :mod:`seglog.engine.topic_catalogue`);
        ``overrides`` in place of seglog's stored ones (to validate a change)."""
        return self._topic_ops.log_config(topic, overrides)

    def resolve_topic(
        self, topic: str, overrides: Mapping[str, str] | None = None
    ) -> ResolvedTopic:
        """A topic's config, sources, id and whether its configs are known."""
        return self._topic_ops.resolve_topic(topic, overrides)

    def is_config_known(self, topic: str) -> bool:
        """Whether seglog may act on the topic's cleanup policy (see ``engine.topics``)."""
        return self._topic_ops.is_config_known(topic)

    def managed_logs(self) -> dict[TopicPartition, Log]:
        """Every open log whose configs are known: those retention, the cleaner and the
        compaction triggers act on."""
        return self._topic_ops.managed_logs()

    def unknown_config_partitions(self) -> list[TopicPartition]:
        """Partitions left alone because their topic's configs are unknown."""
        return self._topic_ops.unknown_config_partitions()

    def _check_config_known(self, topic: str, action: str) -> None:
        self._topic_ops.check_config_known(topic, action)

    def _check_writable(self) -> None:
        if self.read_only:
            raise InvalidConfigError("the log directories are open read-only")
        if self._closed:
            raise InvalidConfigError("the log manager is closed")

    def _open_new_log(self, path: Path, tp: TopicPartition) -> Log:
        """Open the log of a partition directory just created (nothing to recover)."""
        return Log.open(
            path,
            tp,
            self.log_config(tp.topic),
            clock=self.clock,
            had_clean_shutdown=False,
            producer_id_expiration_ms=self.broker.producer_id_expiration_ms,
            flush_executor=self._flush_executor,
            file_deleter=self._schedule_file_deletion,
            side_threads=self._side_threads,
        )

    def create_topic(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str] | None = None,
        *,
        internal: bool = False,
    ) -> TopicDescription:
        """Create a topic with ``partitions`` partitions and config overrides (crash-safe:
        see :mod:`seglog.engine.topics`); ``internal``: Kafka's internal topics are allowed
        (the broker's own ``__consumer_offsets``)."""
        return self._topic_ops.create_topic(name, partitions, configs, internal=internal)

    def increase_partitions(self, name: str, count: int) -> TopicDescription:
        """Raise a topic's partition count to ``count``, creating the new partitions (an
        increase only, as Kafka; crash-safe: see :mod:`seglog.engine.topics`)."""
        return self._topic_ops.increase_partitions(name, count)

    def delete_topic(self, name: str) -> list[Path]:
        """Delete a topic; returns the renamed ``-delete`` directories (removed later;
        crash-safe: see :mod:`seglog.engine.topics`)."""
        return self._topic_ops.delete_topic(name)

    def alter_topic(
        self, name: str, configs: Mapping[str, str], *, remove: Iterable[str] = ()
    ) -> LogConfig:
        """Set (and remove) config overrides of a topic; its logs use them at once."""
        return self._topic_ops.alter_topic(name, configs, remove=remove)

    def topic_names(self) -> list[str]:
        """Every topic: those in the metadata and those found on disk (e.g. a broker's)."""
        return self._topic_ops.topic_names()

    def partitions_of(self, topic: str) -> list[int]:
        """Partition numbers of a topic that are open here."""
        return self._topic_ops.partitions_of(topic)

    def get_log(self, topic: str, partition: int) -> Log:
        """The log of one partition; ``UnknownTopicError`` when it is not here."""
        return self._topic_ops.get_log(topic, partition)

    def logs(self) -> dict[TopicPartition, Log]:
        """Every open log."""
        return dict(self._logs)

    def describe_topic(self, name: str) -> TopicDescription:
        """Partitions, segments, offsets and configs of a topic."""
        return self._topic_ops.describe_topic(name)

    def describe_log_dirs(self) -> dict[str, object]:
        """What ``kafka-log-dirs.sh --describe`` prints, as a JSON-ready dict."""
        return self._topic_ops.describe_log_dirs()

    # --- retention --------------------------------------------------------------------------
    def _schedule_file_deletion(self, segment: LogSegment) -> None:
        """Unlink a ``.deleted`` segment after its topic's ``file.delete.delay.ms``.

        With a delay of 0 the files are unlinked here, before the call returns (Kafka's
        scheduler runs a 0-delay task at once): a one-shot ``seglog retention --once`` or
        :meth:`run_retention` then leaves no ``.deleted`` file behind.
        """
        log = self._logs.get(TopicPartition(*_topic_partition_of(segment.directory)))
        delay = (log.config if log else self.broker.log_defaults).file_delete_delay_ms
        if delay <= 0:
            segment.delete_files()
            return
        self._pending_file_deletes.add(segment)

        def delete() -> None:
            self._pending_file_deletes.discard(segment)
            segment.delete_files()

        self.scheduler.schedule(f"delete-file {segment.log_path.name}", delete, delay_ms=delay)

    def run_retention(self, *, dry_run: bool = False) -> list[tuple[TopicPartition, RetentionPlan]]:
        """Retention over every log (the scheduler's ``kafka-log-retention`` task); returns
        what was deleted per partition (``dry_run``: what would be, changing nothing); see
        :mod:`seglog.engine.log_retention`."""
        return self._retention.run_retention(dry_run=dry_run)

    def _retain(self, tp: TopicPartition, log: Log) -> RetentionPlan | None:
        """Retention on one log the cleaner holds (after cleaning it); checkpoints follow."""
        return self._retention.retain(tp, log)

    # --- the log cleaner ------------------------------------------------------------------------
    def clean_once(
        self, *, topic: str | None = None, progress: ProgressCallback | None = None
    ) -> list[CleanResult]:
        """One cleaner pass now (``seglog clean --once``): every cleanable log once
        (``progress``: partitions done of those cleanable)."""
        self._check_writable()
        if topic is not None and topic not in self.topic_names():
            raise UnknownTopicError(f"topic {topic!r} does not exist")
        if topic is not None:
            self._check_config_known(topic, "clean")
        return self.log_cleaner.clean_once(topic=topic, progress=progress)

    def plan_cleaning(self, *, topic: str | None = None) -> list[CleanPlan]:
        """What a cleaner pass would do, per compacted partition (changes nothing)."""
        if topic is not None and topic not in self.topic_names():
            raise UnknownTopicError(f"topic {topic!r} does not exist")
        return self.log_cleaner.plan(topic=topic)

    def truncate(self, tp: TopicPartition, offset: int) -> int:
        """Truncate a partition to ``offset`` with the cleaner kept off it (Kafka's
        ``truncateTo``): any round on it is aborted and waited for, the log is truncated, its
        cleaner checkpoint is lowered to the new active segment's base if it was above, and
        cleaning resumes. Returns the bytes removed."""
        self._check_writable()
        log = self.get_log(tp.topic, tp.partition)
        manager = self.cleaner_manager
        with manager.paused(tp):
            removed = log.truncate_to(offset)
            # A compacted copy made from records at or above ``offset`` no longer folds this
            # log: withdraw it (read-compacted readers read the log until the next run).
            store = copy_store(log)
            publication = store.published()
            if publication is not None and publication.horizon >= offset:
                store.unpublish()
            checkpoint = manager.checkpoints().get(tp)
            active_base = log.active_segment.base_offset
            if log.config.is_compacted and checkpoint is not None and checkpoint > active_base:
                manager.update_checkpoint(tp, log, active_base)
        self.checkpoint_all()
        return removed

    # --- the Pulsar-style compacted copy ----------------------------------------------------
    def _partitions_of(self, topic: str, partition: int | None) -> list[Log]:
        if topic not in self.topic_names():
            raise UnknownTopicError(f"topic {topic!r} does not exist")
        if partition is not None:
            return [self.get_log(topic, partition)]
        return [self._logs[tp] for tp in sorted(self._logs) if tp.topic == topic]

    def compact(
        self, topic: str, partition: int | None = None
    ) -> dict[TopicPartition, CompactionRun]:
        """Run the compacted-copy compactor now on a topic (or one partition); a partition
        whose run is already under way raises ``CompactionRunningError``."""
        self._check_writable()
        logs = self._partitions_of(topic, partition)
        self._check_config_known(topic, "compact")
        return {log.topic_partition: self.compaction.compact(log) for log in logs}

    def compaction_status(self, topic: str) -> dict[TopicPartition, CompactionStatus]:
        """Per partition: NOT_RUN, RUNNING, SUCCESS or ERROR, with the last run's figures."""
        return {
            log.topic_partition: self.compaction.status(log)
            for log in self._partitions_of(topic, None)
        }

    def run_compaction_triggers(self) -> list[TopicPartition]:
        """The scheduler's check: compact every partition whose backlog exceeds its
        ``compaction.threshold.bytes`` (0 = off); returns the partitions compacted."""
        done = []
        for tp, log in sorted(self.managed_logs().items()):
            try:
                if self.compaction.maybe_compact(log) is not None:
                    done.append(tp)
            except SeglogError:
                continue  # the status says ERROR; the next check tries again
        return done

    def read_compacted(
        self, topic: str, partition: int, offset: int, max_records: int = 500
    ) -> list[ConsumedRecord]:
        """Up to ``max_records`` records from ``offset`` as a read-compacted reader sees them."""
        return read_compacted_records(self.get_log(topic, partition), offset, max_records)

    def cleaner_checkpoints(self) -> dict[TopicPartition, int]:
        """Every partition's ``cleaner-offset-checkpoint`` entry."""
        return self.cleaner_manager.checkpoints()

    def delete_records(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """DeleteRecords for several partitions (offset -1 = high watermark); returns each new
        log start offset. Every partition is checked before any is changed."""
        return self._retention.delete_records(offsets)

    # --- flush and checkpoints --------------------------------------------------------------------
    def flush_due_logs(self) -> None:
        """Flush every log whose ``flush.ms`` has passed (the scheduler's flusher)."""
        for log in list(self._logs.values()):
            log.flush_if_due()

    def checkpoint_recovery_points(self) -> None:
        """Write every root's ``recovery-point-offset-checkpoint``."""
        self._checkpoints.checkpoint_recovery_points()

    def checkpoint_log_start_offsets(self) -> None:
        """Write ``log-start-offset-checkpoint`` (logs whose start is past their first segment)."""
        self._checkpoints.checkpoint_log_start_offsets()

    def checkpoint_high_watermarks(self) -> None:
        """Write ``replication-offset-checkpoint`` (high watermark = log end offset here)."""
        self._checkpoints.checkpoint_high_watermarks()

    def checkpoint_all(self) -> None:
        """Every checkpoint this manager owns (the cleaner writes ``cleaner-offset-checkpoint``)."""
        self._checkpoints.checkpoint_all()

    # --- shutdown ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Clean shutdown: flush and close logs, write checkpoints and the clean-shutdown marker."""
        with self._lock:
            if self._closed:
                return
            self.log_cleaner.stop()
            self.scheduler.shutdown()
            self._flush_executor.shutdown(wait=True)
            first_error: BaseException | None = None
            try:
                for log in self._logs.values():
                    try:
                        log.close()
                    except OSError as exc:  # close the others; no clean-shutdown marker
                        first_error = first_error or exc
                        log.mark_needs_recovery()
                        for segment in log.segments:
                            segment.release_files()
                if not self.read_only:
                    self.checkpoint_all()
                    for index, root in enumerate(self._roots):
                        # A log whose failed write could not be undone must be recovered at
                        # the next open: its root gets no clean-shutdown marker.
                        damaged = any(
                            log.needs_recovery
                            for tp, log in self._logs.items()
                            if self._log_root.get(tp) == index
                        )
                        if not damaged:
                            root.directory.write_clean_shutdown_marker()
            finally:
                self._closed = True
                self._release()
            if first_error is not None:
                raise first_error

    def abort(self) -> None:
        """Give up without a clean shutdown: close files and release locks, writing nothing
        at all (no checkpoint, no clean-shutdown marker, not even pending index entries), as a
        process that died would, so the next open recovers (after an I/O error, or a
        simulated crash)."""
        with self._lock:
            if self._closed:
                return
            self.log_cleaner.stop()
            self.scheduler.shutdown()
            self._flush_executor.shutdown(wait=True)
            self._closed = True
            self._release()  # every descriptor closed without a write

    def _release(self) -> None:
        self._flush_executor.shutdown(wait=True)
        self._side_threads.close()
        # After a failed open or close no descriptor may stay open (a supervisor retrying on
        # a full disk would leak them); nothing is written here (a clean close has already
        # closed everything, so this does nothing then).
        for log in self._logs.values():
            for segment in log.segments:
                segment.release_files()
            log.release_retired_files()
        for segment in list(self._pending_file_deletes):
            segment.release_files()
        self._pending_file_deletes.clear()
        for root in self._roots:
            root.directory.unlock()


def open_log_dirs(
    log_dirs: Sequence[str | Path],
    *,
    overrides: Mapping[str, str] | None = None,
    clock: Clock | None = None,
    read_only: bool = False,
) -> LogManager:
    """Open data directories with broker defaults (plus ``overrides``, server.properties keys)."""
    properties = dict(overrides or {})
    properties["log.dirs"] = ",".join(str(d) for d in log_dirs)
    return LogManager.open(
        BrokerConfig.from_properties(properties), clock=clock, read_only=read_only
    )
