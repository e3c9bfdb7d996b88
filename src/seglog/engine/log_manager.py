"""The LogManager: every log directory, topic and partition of one node (Kafka's ``LogManager``).

Startup, per root of ``log.dirs``: take ``.lock``; read or create ``meta.properties`` (all roots
must name the same cluster); remove stray ``*.tmp``; take the ``.kafka_cleanshutdown`` marker;
read the recovery-point and log-start checkpoints; open every partition directory (recovering
it unless the shutdown was clean); queue ``-delete`` directories for removal. Then topics are
reconciled with ``seglog-topics.json`` (the newest generation over all roots): a topic marked
``deleting`` finishes its deletion; a partition the metadata lists but no root holds is created
(a crash during topic creation).

Topic operations, each crash-safe by its order of steps:

* **create**: 1. write the topic into every root's metadata; 2. create each partition's
  directory (``partition.metadata`` first) in the root holding the fewest partitions.
  *Crash after 1*: the next start creates the missing partitions.
* **delete**: 1. mark the topic ``deleting`` in the metadata; 2. close its logs and rename each
  partition directory to ``{topic}-{p}.{uuid}-delete``; 3. drop the topic from the metadata;
  4. after ``file.delete.delay.ms`` remove the renamed directories. *Crash after 1 or 2*: the
  next start finishes 2 and 3; *after 3*: the ``-delete`` directories are removed at start
  (at once: no reader can hold them then; Kafka waits the delay there too).
* **alter**: validate, then write the new overrides; logs use the new config at once.

Shutdown: flush and close every log, write the checkpoints, then ``.kafka_cleanshutdown`` in
each root, then release the locks.

Topic configs are resolved by :mod:`seglog.engine.topic_catalogue` (seglog's overrides over
the KRaft metadata image of the log directories, read-only, over the broker config). A topic
whose configs cannot be known is opened and readable but never retained, cleaned or compacted
until its ``cleanup.policy`` is set with ``alter``; topics found on disk (a broker's) can be
altered and deleted like those seglog created, their overrides kept in ``seglog-topics.json``
only. ``__cluster_metadata`` is never opened.

A ``read_only`` manager never writes, renames or deletes anything (no lock either): it is how
seglog opens a directory a broker owns, or the corpus.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from seglog.clock import Clock, SystemClock
from seglog.config import BrokerConfig, LogConfig
from seglog.core.offset_map import OffsetMap
from seglog.core.retention import RetentionPlan
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
from seglog.engine.progress import ProgressCallback
from seglog.engine.retention_counters import RetentionCounters
from seglog.engine.run_history import RunHistory
from seglog.engine.scheduler import Scheduler
from seglog.engine.topic_catalogue import (
    CONFIGS_UNKNOWN,
    ResolvedTopic,
    TopicCatalogue,
    check_not_metadata_topic,
    describe_sources,
)
from seglog.errors import (
    CorruptCheckpointError,
    InvalidConfigError,
    InvalidTopicError,
    OffsetOutOfRangeError,
    SeglogError,
    TopicExistsError,
    UnknownTopicError,
)
from seglog.format.checkpoint import (
    MetaProperties,
    new_cluster_id,
    new_directory_id,
    new_topic_id,
)
from seglog.format.topic_names import (
    PartitionDirKind,
    TopicPartition,
    delete_dir_name,
    parse_partition_dir_name,
    partition_dir_name,
    validate_partition,
    validate_topic_name,
)
from seglog.storage.compacted_copy import CompactionStatus
from seglog.storage.kraft_image import read_metadata_image
from seglog.storage.loader import LoadReport
from seglog.storage.log_dir import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    TOPICS_FILE,
    LogDirectory,
    TopicMetadata,
    TopicsFile,
)
from seglog.storage.partition_dirs import (
    create_partition_dir,
    list_partition_dirs,
    read_partition_topic_id,
    remove_partition_dir,
    rename_partition_dir,
)
from seglog.storage.segment import LogSegment
from seglog.storage.side_threads import SideThreads


def _topic_partition_of(directory: Path) -> tuple[str, int]:
    """(topic, partition) of a live partition directory name."""
    parsed = parse_partition_dir_name(directory.name)
    return (parsed.topic, parsed.partition) if parsed else ("", -1)


KRAFT_METADATA_TOPIC = "__cluster_metadata"
MAX_PARTITIONS_PER_TOPIC = 100_000
LONG_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """A segment as ``topics describe`` shows it."""

    base_offset: int
    size_bytes: int
    offset_index_entries: int
    time_index_entries: int
    max_timestamp: int


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition as ``topics describe`` shows it."""

    partition: int
    directory: str
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    recovery_point: int
    size_bytes: int
    segments: tuple[SegmentInfo, ...]


@dataclass(frozen=True, slots=True)
class TopicDescription:
    """A topic: id, overrides, effective config and partitions; ``sources`` names where each
    config came from (see :mod:`seglog.engine.topic_catalogue`); ``configs_known`` False: seglog
    leaves the topic alone until its cleanup.policy is set."""

    name: str
    topic_id: str
    overrides: dict[str, str]
    config: dict[str, str]
    partitions: tuple[PartitionInfo, ...]
    sources: dict[str, str] = field(default_factory=dict)
    configs_known: bool = True


@dataclass(slots=True)
class _Root:
    directory: LogDirectory
    had_clean_shutdown: bool = False
    pending_deletes: list[Path] = field(default_factory=list)


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
            _Root(LogDirectory(Path(d), writable=not read_only)) for d in broker.log_dirs
        ]
        self._logs: dict[TopicPartition, Log] = {}
        self._log_root: dict[TopicPartition, int] = {}
        self._topics = TopicsFile()
        self.catalogue = TopicCatalogue(broker, None, broker.node_id)
        self._known: dict[str, bool] = {}  # topic -> configs known (cleared on every change)
        self.load_reports: list[LoadReport] = []
        self.metadata_problems: list[str] = []  # damaged topic-metadata copies that were skipped
        self.meta: MetaProperties | None = None
        self._closed = False
        self._start_scheduler = start_scheduler
        self._progress = progress  # startup: (partitions opened, partitions found)
        self._progress_total = 0
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

    # --- startup --------------------------------------------------------------------------------
    def _startup(self) -> None:
        for root in self._roots:
            if self.read_only and not root.directory.path.is_dir():
                raise InvalidConfigError(f"log directory {root.directory.path} does not exist")
            root.directory.lock()
        self._load_meta_properties()
        newest: TopicsFile | None = None
        damaged: list[CorruptCheckpointError] = []
        for root in self._roots:
            directory = root.directory
            directory.remove_stray_temp_files()
            root.had_clean_shutdown = directory.take_clean_shutdown_marker()
            directory.ensure_checkpoint_files()
            try:
                topics = directory.read_topics()
            except CorruptCheckpointError as exc:
                damaged.append(exc)  # another root may hold a good copy
                continue
            if topics is not None and (newest is None or topics.generation > newest.generation):
                newest = topics
        if damaged and newest is None:
            # Opening without the topic configs would apply broker defaults (e.g. delete
            # retention to a compacted topic): refuse, naming the file to repair or remove.
            raise damaged[0]
        self.metadata_problems = [str(exc) for exc in damaged]
        self._topics = newest or TopicsFile()
        self._load_metadata_image()
        if self._progress is not None:
            self._progress_total = sum(
                1
                for root in self._roots
                for _, parsed in list_partition_dirs(root.directory.path)
                if parsed.kind is PartitionDirKind.LIVE
            )
        for index, root in enumerate(self._roots):
            self._load_root(index, root)
        if self._progress is not None:  # directories skipped (-delete, future) are done too
            self._progress(len(self._logs), len(self._logs))
        if not self.read_only:
            self._reconcile_topics()
            self._schedule_tasks()
            if self._start_scheduler:
                self.scheduler.start()
                self.log_cleaner.start()

    def _load_meta_properties(self) -> None:
        metas = [(root, root.directory.read_meta_properties()) for root in self._roots]
        cluster_ids = {m.cluster_id for _, m in metas if m is not None and m.cluster_id}
        if len(cluster_ids) > 1:
            raise InvalidConfigError(
                f"log directories belong to different clusters: {sorted(cluster_ids)}"
            )
        cluster_id = next(iter(cluster_ids)) if cluster_ids else new_cluster_id()
        for root, found in metas:
            meta = found
            if meta is None:
                meta = MetaProperties(
                    version=1,
                    node_id=self.broker.node_id,
                    cluster_id=cluster_id,
                    directory_id=new_directory_id(),
                )
                root.directory.write_meta_properties(meta, self.clock.now_ms())
            self.meta = self.meta or meta

    def _load_metadata_image(self) -> None:
        """Read the KRaft metadata image (the first root holding one), read-only. A damaged
        image is reported and ignored: its topics then count as configs unknown (left alone),
        never as seglog's defaults."""
        node_id = self.broker.node_id
        if self.meta is not None and self.meta.node_id is not None:
            node_id = self.meta.node_id
        for root in self._roots:
            try:
                image = read_metadata_image(root.directory.path)
            except SeglogError as exc:
                self.metadata_problems.append(f"KRaft metadata not used: {exc}")
                continue
            if image is not None:
                self.catalogue = TopicCatalogue(self.broker, image, node_id)
                return
        self.catalogue = TopicCatalogue(self.broker, None, node_id)

    def _load_root(self, index: int, root: _Root) -> None:
        directory = root.directory
        recovery_points = directory.read_offsets(RECOVERY_POINT_CHECKPOINT)
        log_starts = directory.read_offsets(LOG_START_OFFSET_CHECKPOINT)
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
            meta = self._topics.topics.get(tp.topic)
            if meta is not None and meta.deleting:
                continue  # finished by _reconcile_topics
            log = Log.open(
                path,
                tp,
                self.log_config(tp.topic),
                clock=self.clock,
                recovery_point=recovery_points.get(tp, 0),
                log_start_offset=log_starts.get(tp, 0),
                had_clean_shutdown=root.had_clean_shutdown,
                writable=not self.read_only,
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

    def _reconcile_topics(self) -> None:
        for name, meta in list(self._topics.topics.items()):
            if meta.deleting:
                self._finish_delete(name, remove_now=True)  # no reader yet: see below
                continue
            if meta.discovered:
                continue  # a broker's topic: its partitions are those on disk
            for partition in range(meta.partitions):
                if TopicPartition(name, partition) not in self._logs:
                    self._create_partition(TopicPartition(name, partition), meta.topic_id)
        for root in self._roots:
            # Kafka waits file.delete.delay.ms after queueing these at startup too, so that
            # readers of the old broker process finish. A directory found at startup has no
            # reader here (we hold the lock), and a one-shot `seglog` command would otherwise
            # never get to remove it: removed now (a deliberate difference).
            for path in root.pending_deletes:
                remove_partition_dir(path)
            root.pending_deletes.clear()

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
        tasks = (
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
        )
        for name, action, period in tasks:
            if 0 < period < LONG_MAX:
                self.scheduler.schedule(
                    name, action, delay_ms=broker.log_initial_task_delay_ms, period_ms=period
                )

    # --- configs --------------------------------------------------------------------------------
    def log_config(self, topic: str, overrides: Mapping[str, str] | None = None) -> LogConfig:
        """The effective config of a topic (see :mod:`seglog.engine.topic_catalogue`);
        ``overrides`` in place of seglog's stored ones (to validate a change)."""
        return self.resolve_topic(topic, overrides).config

    def resolve_topic(
        self, topic: str, overrides: Mapping[str, str] | None = None
    ) -> ResolvedTopic:
        """A topic's config, sources, id and whether its configs are known."""
        meta = self._topics.topics.get(topic)
        disk_id = None
        if meta is None or not meta.topic_id:
            disk_id = self._disk_topic_id(topic)  # used when the metadata image has no id
        if overrides is not None:
            return self.catalogue.resolve(topic, meta, disk_topic_id=disk_id, overrides=overrides)
        try:
            return self.catalogue.resolve(topic, meta, disk_topic_id=disk_id)
        except InvalidConfigError as exc:
            if meta is None or not meta.configs:
                raise
            # Stored overrides were valid when written: the metadata file is damaged.
            raise InvalidConfigError(
                f"the topic metadata ({TOPICS_FILE} in the log directories) holds a config "
                f"of topic {topic!r} that is not valid, so the file is damaged: {exc}"
            ) from exc

    def _disk_topic_id(self, topic: str) -> str | None:
        """The id in the ``partition.metadata`` of the topic's first partition on disk."""
        for tp in sorted(self._logs):
            if tp.topic == topic:
                try:
                    return read_partition_topic_id(self._logs[tp].directory)
                except SeglogError:
                    return None  # describe still works; verify reports the damaged file
        return None

    def is_config_known(self, topic: str) -> bool:
        """Whether seglog may act on the topic's cleanup policy (see the module docstring)."""
        known = self._known.get(topic)
        if known is None:
            known = self.resolve_topic(topic).is_known
            self._known[topic] = known
        return known

    def managed_logs(self) -> dict[TopicPartition, Log]:
        """Every open log whose configs are known: those retention, the cleaner and the
        compaction triggers act on."""
        return {tp: log for tp, log in list(self._logs.items()) if self.is_config_known(tp.topic)}

    def unknown_config_partitions(self) -> list[TopicPartition]:
        """Partitions left alone because their topic's configs are unknown."""
        return sorted(tp for tp in list(self._logs) if not self.is_config_known(tp.topic))

    def _check_config_known(self, topic: str, action: str) -> None:
        if not self.is_config_known(topic):
            raise InvalidConfigError(f"cannot {action} topic {topic!r}: {CONFIGS_UNKNOWN}")

    # --- topics ---------------------------------------------------------------------------------
    def _check_writable(self) -> None:
        if self.read_only:
            raise InvalidConfigError("the log directories are open read-only")
        if self._closed:
            raise InvalidConfigError("the log manager is closed")

    def _write_topics(self) -> None:
        self._known.clear()
        self._topics.generation += 1
        for root in self._roots:
            root.directory.write_topics(self._topics)

    def create_topic(
        self, name: str, partitions: int, configs: Mapping[str, str] | None = None
    ) -> TopicDescription:
        """Create a topic with ``partitions`` partitions and config overrides."""
        with self._lock:
            self._check_writable()
            validate_topic_name(name)
            if not 1 <= partitions <= MAX_PARTITIONS_PER_TOPIC:
                raise InvalidTopicError(
                    f"topic {name!r}: partition count {partitions} is outside "
                    f"1..{MAX_PARTITIONS_PER_TOPIC}"
                )
            if name in self.topic_names():
                raise TopicExistsError(f"topic {name!r} already exists")
            overrides = dict(configs or {})
            self.log_config(name, overrides)  # validates: raises InvalidConfigError
            meta = TopicMetadata(name, partitions, new_topic_id(), overrides)
            self._topics.topics[name] = meta
            self._write_topics()
            for partition in range(partitions):
                self._create_partition(TopicPartition(name, partition), meta.topic_id)
            return self.describe_topic(name)

    def _partition_counts(self) -> list[int]:
        counts = [0] * len(self._roots)
        for index in self._log_root.values():
            counts[index] += 1
        return counts

    def _create_partition(self, tp: TopicPartition, topic_id: str) -> Log:
        counts = self._partition_counts()
        index = counts.index(min(counts))  # the root with the fewest partitions (seed 000)
        root = self._roots[index].directory.path
        path = create_partition_dir(root, partition_dir_name(tp), topic_id)
        log = Log.open(
            path,
            tp,
            self.log_config(tp.topic),
            clock=self.clock,
            had_clean_shutdown=False,
            flush_executor=self._flush_executor,
            file_deleter=self._schedule_file_deletion,
            side_threads=self._side_threads,
        )
        self._logs[tp] = log
        self._log_root[tp] = index
        return log

    def delete_topic(self, name: str) -> list[Path]:
        """Delete a topic; returns the renamed ``-delete`` directories (removed later)."""
        with self._lock:
            self._check_writable()
            check_not_metadata_topic(name, "delete")
            meta = self._topics.topics.get(name) or self._discovered_metadata(name)
            meta.deleting = True
            self._topics.topics[name] = meta  # a crash from here on finishes the delete
            self._write_topics()
            return self._finish_delete(name)

    def _finish_delete(self, name: str, *, remove_now: bool = False) -> list[Path]:
        renamed = []
        for tp in [tp for tp in self._logs if tp.topic == name]:
            self.cleaner_manager.abort_cleaning(tp)
            log = self._logs.pop(tp)
            self._log_root.pop(tp)
            log.close()
            renamed.append(
                rename_partition_dir(log.directory, delete_dir_name(tp, uuid.uuid4().hex))
            )
            self.history.forget(tp)  # a topic created again starts without this history
        for root in self._roots:  # a crash may have left live dirs of a topic being deleted
            for path, parsed in list_partition_dirs(root.directory.path):
                if parsed.kind is PartitionDirKind.LIVE and parsed.topic == name:
                    new_name = delete_dir_name(parsed.topic_partition, uuid.uuid4().hex)
                    renamed.append(rename_partition_dir(path, new_name))
        self._topics.topics.pop(name, None)
        self._write_topics()
        self.checkpoint_all()
        for tp in [tp for tp in list(self.cleaner_manager.checkpoints()) if tp.topic == name]:
            self.cleaner_manager.forget(tp)
        for path in renamed:
            if remove_now:
                remove_partition_dir(path)
            else:
                self._schedule_dir_removal(path)
        return renamed

    def _schedule_dir_removal(self, path: Path) -> None:
        delay = self.broker.log_defaults.file_delete_delay_ms
        self.scheduler.schedule(
            f"delete-dir {path.name}",
            lambda: remove_partition_dir(path),
            delay_ms=delay,
        )

    def alter_topic(
        self, name: str, configs: Mapping[str, str], *, remove: Iterable[str] = ()
    ) -> LogConfig:
        """Set (and remove) config overrides of a topic; its logs use them at once."""
        with self._lock:
            self._check_writable()
            check_not_metadata_topic(name, "alter")
            meta = self._topics.topics.get(name) or self._discovered_metadata(name)
            overrides = dict(meta.configs)
            overrides.update(configs)
            for key in remove:
                overrides.pop(key, None)
            config = self.log_config(name, overrides)
            meta.configs = overrides
            self._topics.topics[name] = meta
            self._write_topics()
            for tp, log in self._logs.items():
                if tp.topic == name:
                    if log.config.is_compacted and not config.is_compacted:
                        self.cleaner_manager.abort_cleaning(tp)
                    log.config = config
            return config

    def _discovered_metadata(self, name: str) -> TopicMetadata:
        """seglog's (not yet stored) record of a topic found on disk, e.g. a broker's."""
        partitions = self.partitions_of(name)
        if not partitions:
            raise UnknownTopicError(f"topic {name!r} does not exist")
        topic_id = self.resolve_topic(name).topic_id
        return TopicMetadata(name, max(partitions) + 1, topic_id, {}, discovered=True)

    def topic_names(self) -> list[str]:
        """Every topic: those in the metadata and those found on disk (e.g. a broker's)."""
        names = {name for name, m in self._topics.topics.items() if not m.deleting}
        names.update(tp.topic for tp in self._logs)
        return sorted(names)

    def partitions_of(self, topic: str) -> list[int]:
        """Partition numbers of a topic that are open here."""
        return sorted(tp.partition for tp in self._logs if tp.topic == topic)

    def get_log(self, topic: str, partition: int) -> Log:
        """The log of one partition; ``UnknownTopicError`` when it is not here."""
        validate_partition(partition)
        log = self._logs.get(TopicPartition(topic, partition))
        if log is None:
            if topic not in self.topic_names():
                raise UnknownTopicError(f"topic {topic!r} does not exist")
            raise UnknownTopicError(f"topic {topic!r} has no partition {partition}")
        return log

    def logs(self) -> dict[TopicPartition, Log]:
        """Every open log."""
        return dict(self._logs)

    def describe_topic(self, name: str) -> TopicDescription:
        """Partitions, segments, offsets and configs of a topic."""
        if name not in self.topic_names():
            raise UnknownTopicError(f"topic {name!r} does not exist")
        meta = self._topics.topics.get(name)
        overrides = dict(meta.configs) if meta else {}
        resolved = self.resolve_topic(name)
        config = resolved.config
        partitions = []
        for partition in self.partitions_of(name):
            log = self._logs[TopicPartition(name, partition)]
            segments = tuple(
                SegmentInfo(
                    s.base_offset,
                    s.size,
                    s.offset_index.entries,
                    s.time_index.entries,
                    s.max_timestamp_so_far,
                )
                for s in log.segments
            )
            partitions.append(
                PartitionInfo(
                    partition,
                    str(log.directory),
                    log.log_start_offset,
                    log.log_end_offset,
                    log.high_watermark,
                    log.recovery_point,
                    log.size_bytes(),
                    segments,
                )
            )
        properties = config.to_properties()
        properties.update({key: value for key, (value, _) in resolved.extra.items()})
        return TopicDescription(
            name,
            resolved.topic_id,
            overrides,
            properties,
            tuple(partitions),
            describe_sources(resolved),
            resolved.is_known,
        )

    def describe_log_dirs(self) -> dict[str, object]:
        """What ``kafka-log-dirs.sh --describe`` prints, as a JSON-ready dict."""
        log_dirs = []
        for index, root in enumerate(self._roots):
            partitions = [
                {
                    "partition": str(tp),
                    "size": log.size_bytes(),
                    "offsetLag": 0,
                    "isFuture": False,
                }
                for tp, log in sorted(self._logs.items())
                if self._log_root[tp] == index
            ]
            log_dirs.append(
                {
                    "logDir": str(root.directory.path.resolve()),
                    "error": None,
                    "partitions": partitions,
                }
            )
        return {"version": 1, "brokers": [{"broker": self.broker.node_id, "logDirs": log_dirs}]}

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
        what was deleted per partition (``dry_run``: what would be, changing nothing).

        Kafka runs this task only for logs without ``compact`` and leaves compacted logs to
        the cleaner; seglog runs it for every log, so a ``compact`` log still loses segments
        below its log start offset and a ``compact,delete`` log gets its size and time rules.
        """
        results: list[tuple[TopicPartition, RetentionPlan]] = []
        for tp, log in sorted(self.managed_logs().items()):
            if dry_run or self.read_only:
                plan = log.plan_retention()
            else:
                # Claim the log from the cleaner first, so the two never work on one log at
                # once (KAFKA-7322); a log being cleaned gets its retention from the cleaner
                # right after the round.
                with self.cleaner_manager.deleting(tp) as claimed:
                    if not claimed:
                        continue
                    plan = self._apply_retention(log)
            if not plan.is_empty:
                results.append((tp, plan))
        if results and not dry_run and not self.read_only:
            self.checkpoint_log_start_offsets()
        return results

    def _retain(self, tp: TopicPartition, log: Log) -> RetentionPlan | None:
        """Retention on one log the cleaner holds (after cleaning it); checkpoints follow."""
        if self.read_only:
            return None
        plan = self._apply_retention(log)
        if not plan.is_empty:
            self.checkpoint_log_start_offsets()
        return plan

    def _apply_retention(self, log: Log) -> RetentionPlan:
        """``log.apply_retention()``; when it fails half-way (a rename on a full disk), the
        segments not yet renamed stay listed below the raised log start offset (the next
        pass deletes them) and that offset is checkpointed anyway, so they never come back
        as readable data after a restart. What it deleted is recorded in the retention
        history."""
        try:
            now_ms = self.clock.now_ms()
            plan = log.apply_retention(now_ms)
            self.history.record_retention(log, plan, now_ms)
            self.retention_counters.record(log.topic_partition, plan)
            return plan
        except OSError:
            log.mark_needs_recovery()
            # If the disk still fails, the error below is the one to report.
            with contextlib.suppress(OSError):
                self.checkpoint_log_start_offsets()
            raise

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
        self._check_writable()
        logs = {tp: self.get_log(tp.topic, tp.partition) for tp in offsets}
        for tp in logs:
            self._check_config_known(tp.topic, "delete records of")
        for tp, log in logs.items():
            if not log.config.has_delete:
                raise InvalidConfigError(f"delete-records on {tp} needs cleanup.policy with delete")
            offset = offsets[tp]
            if offset != -1 and not 0 <= offset <= log.high_watermark:
                raise OffsetOutOfRangeError(
                    f"delete-records offset {offset} on {tp} is outside [0, "
                    f"{log.high_watermark}] (the high watermark)"
                )
        result = {tp: log.delete_records(offsets[tp]) for tp, log in logs.items()}
        self.checkpoint_log_start_offsets()
        return result

    # --- flush and checkpoints --------------------------------------------------------------------
    def flush_due_logs(self) -> None:
        """Flush every log whose ``flush.ms`` has passed (the scheduler's flusher)."""
        for log in list(self._logs.values()):
            log.flush_if_due()

    def _offsets_by_root(self, value_of: object) -> list[dict[TopicPartition, int]]:
        out: list[dict[TopicPartition, int]] = [{} for _ in self._roots]
        for tp, log in list(self._logs.items()):
            value = value_of(log)  # type: ignore[operator]
            if value is not None:
                out[self._log_root[tp]][tp] = value
        return out

    def checkpoint_recovery_points(self) -> None:
        """Write every root's ``recovery-point-offset-checkpoint``."""
        for root, offsets in zip(
            self._roots, self._offsets_by_root(lambda log: log.recovery_point), strict=True
        ):
            root.directory.write_offsets(RECOVERY_POINT_CHECKPOINT, offsets)

    def checkpoint_log_start_offsets(self) -> None:
        """Write ``log-start-offset-checkpoint`` (logs whose start is past their first segment)."""

        def value(log: Log) -> int | None:
            first = log.segments[0].base_offset
            return log.log_start_offset if log.log_start_offset > first else None

        for root, offsets in zip(self._roots, self._offsets_by_root(value), strict=True):
            root.directory.write_offsets(LOG_START_OFFSET_CHECKPOINT, offsets)

    def checkpoint_high_watermarks(self) -> None:
        """Write ``replication-offset-checkpoint`` (high watermark = log end offset here)."""
        for root, offsets in zip(
            self._roots, self._offsets_by_root(lambda log: log.high_watermark), strict=True
        ):
            root.directory.write_offsets(REPLICATION_OFFSET_CHECKPOINT, offsets)

    def checkpoint_all(self) -> None:
        """Every checkpoint this manager owns (the cleaner writes ``cleaner-offset-checkpoint``)."""
        if self.read_only:
            return
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        self.checkpoint_high_watermarks()

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
