"""The topics of a node: their metadata, configs, partitions and directories.

Owns ``seglog-topics.json`` (one copy per root of ``log.dirs``, the newest generation wins at
startup), the resolution of topic configs (through :mod:`seglog.engine.topic_catalogue`:
seglog's overrides over the KRaft metadata image, read-only, over the broker config), and the
topic operations. The maps of open logs and of their roots are the manager's dicts, shared by
reference: this module adds a log when it creates a partition and removes it when it deletes one.

Topic operations, each crash-safe by its order of steps:

* **create**: 1. write the topic into every root's metadata; 2. create each partition's
  directory (``partition.metadata`` first) in the root holding the fewest partitions.
  *Crash after 1*: the next start creates the missing partitions (:meth:`Topics.reconcile`).
* **delete**: 1. mark the topic ``deleting`` in the metadata; 2. close its logs and rename each
  partition directory to ``{topic}-{p}.{uuid}-delete``; 3. drop the topic from the metadata;
  4. after ``file.delete.delay.ms`` remove the renamed directories. *Crash after 1 or 2*: the
  next start finishes 2 and 3; *after 3*: the ``-delete`` directories are removed at start
  (at once: no reader can hold them then; Kafka waits the delay there too).
* **alter**: validate, then write the new overrides; logs use the new config at once.
* **increase partitions** (Kafka's CreatePartitions; an increase only): 1. write the new
  count into the metadata; 2. create the new partitions as *create* does. *Crash after 1*:
  the next start creates them. A broker's topic (found on disk) keeps the count its cluster
  owns. Keys spread over the new count at once (``murmur2(key) % partitions``), as in Kafka.

Every metadata write raises the generation and rewrites every root's copy (atomically each),
and forgets which topics' configs are known. A topic whose configs cannot be known is opened
and readable but never retained, cleaned or compacted until its ``cleanup.policy`` is set with
``alter``; topics found on disk (a broker's) can be altered and deleted like those seglog
created, their overrides kept in ``seglog-topics.json`` only. ``__cluster_metadata`` is never
opened, altered or deleted.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from seglog.config import BrokerConfig, LogConfig
from seglog.engine.cleaning.cleaner_manager import CleanerManager
from seglog.engine.log import Log
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
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidTopicError,
    SeglogError,
    TopicExistsError,
    UnknownTopicError,
)
from seglog.format.checkpoint import new_topic_id
from seglog.format.topic_names import (
    INTERNAL_TOPICS,
    PartitionDirKind,
    TopicPartition,
    check_new_topic_name,
    delete_dir_name,
    partition_dir_name,
    validate_partition,
    validate_topic_name,
)
from seglog.storage.log_dir import TOPICS_FILE, LogDirectory, TopicMetadata, TopicsFile
from seglog.storage.partition_dirs import (
    create_partition_dir,
    list_partition_dirs,
    read_partition_topic_id,
    remove_partition_dir,
    rename_partition_dir,
)

MAX_PARTITIONS_PER_TOPIC = 100_000


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
    # Producer state: the last stable offset (the first offset of the earliest open
    # transaction, else the high watermark), the open transactions and where the first
    # began (None: none open), and the producers the partition remembers.
    last_stable_offset: int = 0
    ongoing_transactions: int = 0
    first_ongoing_offset: int | None = None
    producer_count: int = 0


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


class Topics:
    """The topic metadata, configs and operations of a node (see the module docstring).

    ``directories[i]`` is root ``i``; ``logs`` and ``log_root`` are the manager's live maps
    (``log_root[tp]``: the root index of ``logs[tp]``). ``open_new_log`` opens a freshly
    created partition directory; ``check_writable`` raises when the manager may not write;
    ``checkpoint_all`` writes the offset checkpoints (after a deletion). ``lock`` is the
    manager's, held by every operation that changes the metadata.
    """

    def __init__(
        self,
        broker: BrokerConfig,
        directories: Sequence[LogDirectory],
        logs: dict[TopicPartition, Log],
        log_root: dict[TopicPartition, int],
        *,
        lock: threading.RLock,
        scheduler: Scheduler,
        cleaner_manager: CleanerManager,
        history: RunHistory,
        open_new_log: Callable[[Path, TopicPartition], Log],
        check_writable: Callable[[], None],
        checkpoint_all: Callable[[], None],
    ) -> None:
        self.broker = broker
        self._directories = list(directories)
        self._logs = logs
        self._log_root = log_root
        self._lock = lock
        self._scheduler = scheduler
        self._cleaner_manager = cleaner_manager
        self._history = history
        self._open_new_log = open_new_log
        self._check_writable = check_writable
        self._checkpoint_all = checkpoint_all
        self.file = TopicsFile()  # seglog-topics.json, as read at startup and written since
        self.catalogue = TopicCatalogue(broker, None, broker.node_id)
        self._known: dict[str, bool] = {}  # topic -> configs known (cleared on every change)

    # --- configs --------------------------------------------------------------------------------
    def log_config(self, topic: str, overrides: Mapping[str, str] | None = None) -> LogConfig:
        """The effective config of a topic (see :mod:`seglog.engine.topic_catalogue`);
        ``overrides`` in place of seglog's stored ones (to validate a change)."""
        return self.resolve_topic(topic, overrides).config

    def resolve_topic(
        self, topic: str, overrides: Mapping[str, str] | None = None
    ) -> ResolvedTopic:
        """A topic's config, sources, id and whether its configs are known."""
        meta = self.file.topics.get(topic)
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

    def check_config_known(self, topic: str, action: str) -> None:
        """Raise ``InvalidConfigError`` when the topic's configs are unknown."""
        if not self.is_config_known(topic):
            raise InvalidConfigError(f"cannot {action} topic {topic!r}: {CONFIGS_UNKNOWN}")

    # --- the metadata file ----------------------------------------------------------------------
    def write(self) -> None:
        """Write the metadata, one generation newer, into every root."""
        self._known.clear()
        self.file.generation += 1
        for directory in self._directories:
            directory.write_topics(self.file)

    def reconcile(self) -> None:
        """At startup: finish the deletions a crash interrupted, create the partitions the
        metadata lists but no root holds and write a missing ``partition.metadata`` (a crash
        during creation or a partition increase)."""
        for name, meta in list(self.file.topics.items()):
            if meta.deleting:
                self.finish_delete(name, remove_now=True)  # no reader yet
                continue
            if meta.discovered:
                continue  # a broker's topic: its partitions are those on disk
            for partition in range(meta.partitions):
                tp = TopicPartition(name, partition)
                log = self._logs.get(tp)
                if log is None:
                    self.create_partition(tp, meta.topic_id)
                elif meta.topic_id and self._lacks_partition_metadata(log):
                    # a crash between the directory's mkdir and its partition.metadata
                    create_partition_dir(log.directory.parent, log.directory.name, meta.topic_id)

    @staticmethod
    def _lacks_partition_metadata(log: Log) -> bool:
        try:
            return read_partition_topic_id(log.directory) is None
        except SeglogError:
            return False  # damaged, not missing: verify reports it, nothing is overwritten

    # --- operations -----------------------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str] | None = None,
        *,
        internal: bool = False,
    ) -> TopicDescription:
        """Create a topic with ``partitions`` partitions and config overrides; ``internal``
        lets the broker create one of Kafka's internal topics (``__consumer_offsets``)."""
        with self._lock:
            self._check_writable()
            validate_topic_name(name)
            if not 1 <= partitions <= MAX_PARTITIONS_PER_TOPIC:
                raise InvalidTopicError(
                    f"topic {name!r}: partition count {partitions} is outside "
                    f"1..{MAX_PARTITIONS_PER_TOPIC}"
                )
            existing = self.topic_names()
            if name in existing:
                raise TopicExistsError(f"topic {name!r} already exists")
            if not (internal and name in INTERNAL_TOPICS):
                check_new_topic_name(name, existing)  # internal names, '.'/'_' collisions
            overrides = dict(configs or {})
            self.log_config(name, overrides)  # validates: raises InvalidConfigError
            meta = TopicMetadata(name, partitions, new_topic_id(), overrides)
            self.file.topics[name] = meta
            self.write()  # step 1
            for partition in range(partitions):  # step 2
                self.create_partition(TopicPartition(name, partition), meta.topic_id)
            return self.describe_topic(name)

    def increase_partitions(self, name: str, count: int) -> TopicDescription:
        """Raise a topic's partition count to ``count`` (see the module docstring)."""
        with self._lock:
            self._check_writable()
            check_not_metadata_topic(name, "add partitions to")
            meta = self.file.topics.get(name)
            if meta.discovered if meta is not None else bool(self.partitions_of(name)):
                raise InvalidPartitionsError(
                    f"topic {name!r} was written by a Kafka broker (found on disk): its "
                    "partition count belongs to the cluster's metadata, so seglog does not "
                    "change it; add partitions on the cluster (kafka-topics.sh --alter)"
                )
            if meta is None or meta.deleting:
                raise UnknownTopicError(f"topic {name!r} does not exist")
            current = meta.partitions
            if count <= current:
                raise InvalidPartitionsError(
                    "The number of partitions for a topic can only be increased. Topic "
                    f"{name} currently has {current} partition{'' if current == 1 else 's'}, "
                    f"{count} would not be an increase."
                )
            if count > MAX_PARTITIONS_PER_TOPIC:
                raise InvalidPartitionsError(
                    f"topic {name!r}: partition count {count} is outside "
                    f"1..{MAX_PARTITIONS_PER_TOPIC}"
                )
            meta.partitions = count
            self.write()  # step 1
            for partition in range(current, count):  # step 2
                tp = TopicPartition(name, partition)
                if tp not in self._logs:
                    self.create_partition(tp, meta.topic_id)
            return self.describe_topic(name)

    def _partition_counts(self) -> list[int]:
        counts = [0] * len(self._directories)
        for index in self._log_root.values():
            counts[index] += 1
        return counts

    def create_partition(self, tp: TopicPartition, topic_id: str) -> Log:
        """Create a partition's directory (``partition.metadata`` first) in the root with the
        fewest partitions (the first such root), open its log and register it."""
        counts = self._partition_counts()
        index = counts.index(min(counts))
        root = self._directories[index].path
        path = create_partition_dir(root, partition_dir_name(tp), topic_id)
        log = self._open_new_log(path, tp)
        self._logs[tp] = log
        self._log_root[tp] = index
        return log

    def delete_topic(self, name: str) -> list[Path]:
        """Delete a topic; returns the renamed ``-delete`` directories (removed later)."""
        with self._lock:
            self._check_writable()
            check_not_metadata_topic(name, "delete")
            meta = self.file.topics.get(name) or self._discovered_metadata(name)
            meta.deleting = True
            self.file.topics[name] = meta  # step 1: a crash from here on finishes the delete
            self.write()
            return self.finish_delete(name)

    def finish_delete(self, name: str, *, remove_now: bool = False) -> list[Path]:
        """Steps 2 to 4 of a deletion (see the module docstring); ``remove_now``: remove the
        renamed directories at once (at startup, where no reader can hold them)."""
        renamed = []
        for tp in [tp for tp in self._logs if tp.topic == name]:  # step 2
            self._cleaner_manager.abort_cleaning(tp)
            log = self._logs.pop(tp)
            self._log_root.pop(tp)
            log.close()
            renamed.append(
                rename_partition_dir(log.directory, delete_dir_name(tp, uuid.uuid4().hex))
            )
            self._history.forget(tp)  # a topic created again starts without this history
        for directory in self._directories:  # a crash may have left live dirs of the topic
            for path, parsed in list_partition_dirs(directory.path):
                if parsed.kind is PartitionDirKind.LIVE and parsed.topic == name:
                    new_name = delete_dir_name(parsed.topic_partition, uuid.uuid4().hex)
                    renamed.append(rename_partition_dir(path, new_name))
        self.file.topics.pop(name, None)  # step 3
        self.write()
        self._checkpoint_all()
        for tp in [tp for tp in list(self._cleaner_manager.checkpoints()) if tp.topic == name]:
            self._cleaner_manager.forget(tp)
        for path in renamed:  # step 4
            if remove_now:
                remove_partition_dir(path)
            else:
                self._schedule_dir_removal(path)
        return renamed

    def _schedule_dir_removal(self, path: Path) -> None:
        delay = self.broker.log_defaults.file_delete_delay_ms
        self._scheduler.schedule(
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
            meta = self.file.topics.get(name) or self._discovered_metadata(name)
            overrides = dict(meta.configs)
            overrides.update(configs)
            for key in remove:
                overrides.pop(key, None)
            config = self.log_config(name, overrides)
            meta.configs = overrides
            self.file.topics[name] = meta
            self.write()
            for tp, log in self._logs.items():
                if tp.topic == name:
                    if log.config.is_compacted and not config.is_compacted:
                        self._cleaner_manager.abort_cleaning(tp)
                    log.config = config
            return config

    def _discovered_metadata(self, name: str) -> TopicMetadata:
        """seglog's (not yet stored) record of a topic found on disk, e.g. a broker's."""
        partitions = self.partitions_of(name)
        if not partitions:
            raise UnknownTopicError(f"topic {name!r} does not exist")
        topic_id = self.resolve_topic(name).topic_id
        return TopicMetadata(name, max(partitions) + 1, topic_id, {}, discovered=True)

    # --- queries --------------------------------------------------------------------------------
    def topic_names(self) -> list[str]:
        """Every topic: those in the metadata and those found on disk (e.g. a broker's)."""
        names = {name for name, m in self.file.topics.items() if not m.deleting}
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

    def describe_topic(self, name: str) -> TopicDescription:
        """Partitions, segments, offsets and configs of a topic."""
        if name not in self.topic_names():
            raise UnknownTopicError(f"topic {name!r} does not exist")
        meta = self.file.topics.get(name)
        overrides = dict(meta.configs) if meta else {}
        resolved = self.resolve_topic(name)
        config = resolved.config
        partitions = []
        for partition in self.partitions_of(name):
            log = self._logs[TopicPartition(name, partition)]
            ongoing = log.ongoing_transactions()
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
                    log.last_stable_offset,
                    len(ongoing),
                    ongoing[0].first_offset if ongoing else None,
                    log.producer_state.producer_count,
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
        for index, directory in enumerate(self._directories):
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
                    "logDir": str(directory.path.resolve()),
                    "error": None,
                    "partitions": partitions,
                }
            )
        return {"version": 1, "brokers": [{"broker": self.broker.node_id, "logDirs": log_dirs}]}
