"""What the Spark jobs need to know about a data directory, found without opening any log.

A data directory is one or more roots of ``log.dirs`` (the ``path`` option: comma-separated).
:func:`discover` lists the live ``<topic>-<partition>`` directories of every root and reads
the newest ``seglog-topics.json`` (for topic config overrides), the same files a
``LogManager`` reads at startup, but it loads no segment and takes no lock, so a driver can
plan a job over thousands of partitions cheaply and executors open only their own partition.

Invariants of a :class:`DataDirLayout`: every topic has at least one partition; each
topic's partitions are sorted and unique (a partition found in two roots is an error, as
``LogManager`` says); topics marked ``deleting`` and the KRaft metadata log are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from seglog.clock import SystemClock
from seglog.config import BrokerConfig, LogConfig
from seglog.engine.log import Log
from seglog.errors import InvalidConfigError, SparkOptionError, UnknownTopicError
from seglog.format.topic_names import PartitionDirKind, TopicPartition
from seglog.storage.log_dir import (
    CLEAN_SHUTDOWN_FILE,
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    LogDirectory,
    TopicsFile,
)
from seglog.storage.partition_dirs import list_partition_dirs

KRAFT_METADATA_TOPIC = "__cluster_metadata"


def parse_log_dirs(text: str | Sequence[str | Path] | None, *, option: str = "path") -> list[Path]:
    """The roots named by a ``path`` option (comma-separated) or a list; at least one."""
    if text is None:
        raise SparkOptionError(
            f"option {option!r} is required: the seglog data directory (log.dirs, "
            "comma-separated when there are several roots)"
        )
    items = text.split(",") if isinstance(text, str) else [str(t) for t in text]
    roots = [Path(item.strip()) for item in items if item.strip()]
    if not roots:
        raise SparkOptionError(f"option {option!r} names no directory: {text!r}")
    return roots


@dataclass(frozen=True, slots=True)
class PartitionLocation:
    """Where one partition lives and what the root's checkpoints say about it."""

    topic: str
    partition: int
    directory: str  # the partition directory
    root: str  # the log.dirs root holding it
    recovery_point: int
    log_start_offset: int
    cleaner_checkpoint: int | None  # cleaner-offset-checkpoint entry (None: never cleaned)
    had_clean_shutdown: bool


@dataclass(frozen=True, slots=True)
class DataDirLayout:
    """Topics, partitions and topic overrides of a data directory (module docstring)."""

    roots: tuple[str, ...]
    partitions: dict[str, tuple[PartitionLocation, ...]] = field(default_factory=dict)
    overrides: dict[str, dict[str, str]] = field(default_factory=dict)

    def topic_names(self) -> list[str]:
        """Every topic with at least one partition here, sorted."""
        return sorted(self.partitions)

    def partitions_of(self, topic: str) -> tuple[PartitionLocation, ...]:
        """The partitions of ``topic``; ``UnknownTopicError`` naming it when it is not here."""
        found = self.partitions.get(topic)
        if not found:
            raise UnknownTopicError(
                f"topic {topic!r} does not exist in {', '.join(self.roots)} (create it first, "
                "e.g. `seglog topics create`)"
            )
        return found

    def config(self, topic: str) -> LogConfig:
        """The topic's effective config: its overrides over the broker defaults."""
        return log_config(self.roots, self.overrides.get(topic, {}))


def log_config(roots: Sequence[str], overrides: dict[str, str]) -> LogConfig:
    """A topic's config as ``LogManager.log_config`` computes it for these roots."""
    broker = BrokerConfig.from_properties({"log.dirs": ",".join(roots)})
    return LogConfig.from_overrides(overrides, broker.log_defaults)


def discover(log_dirs: Sequence[str | Path]) -> DataDirLayout:
    """List the partitions and topic overrides of ``log_dirs`` (no log is opened)."""
    roots = [Path(d) for d in log_dirs]
    newest: TopicsFile | None = None
    found: dict[TopicPartition, PartitionLocation] = {}
    for root in roots:
        if not root.is_dir():
            raise SparkOptionError(f"log directory {str(root)!r} does not exist")
        directory = LogDirectory(root, writable=False)
        topics = directory.read_topics()
        if topics is not None and (newest is None or topics.generation > newest.generation):
            newest = topics
    deleting = {n for n, m in (newest.topics if newest else {}).items() if m.deleting}
    for root in roots:
        directory = LogDirectory(root, writable=False)
        recovery = directory.read_offsets(RECOVERY_POINT_CHECKPOINT)
        starts = directory.read_offsets(LOG_START_OFFSET_CHECKPOINT)
        cleaner = directory.read_offsets(CLEANER_OFFSET_CHECKPOINT)
        clean = (root / CLEAN_SHUTDOWN_FILE).exists()
        for path, parsed in list_partition_dirs(root):
            if parsed.kind is not PartitionDirKind.LIVE or parsed.topic == KRAFT_METADATA_TOPIC:
                continue
            if parsed.topic in deleting:
                continue
            tp = TopicPartition(parsed.topic, parsed.partition)
            if tp in found:
                raise InvalidConfigError(
                    f"partition {tp} is in two log directories: {found[tp].directory} and {path}"
                )
            found[tp] = PartitionLocation(
                tp.topic,
                tp.partition,
                str(path),
                str(root),
                recovery.get(tp, 0),
                starts.get(tp, 0),
                cleaner.get(tp),
                clean,
            )
    partitions: dict[str, list[PartitionLocation]] = {}
    for tp in sorted(found):
        partitions.setdefault(tp.topic, []).append(found[tp])
    overrides = {n: dict(m.configs) for n, m in (newest.topics if newest else {}).items()}
    return DataDirLayout(
        tuple(str(r) for r in roots),
        {topic: tuple(items) for topic, items in partitions.items()},
        overrides,
    )


def open_partition_read_only(location: PartitionLocation, config: LogConfig) -> Log:
    """Open one partition's log read-only (nothing is written, no lock is taken)."""
    return Log.open(
        Path(location.directory),
        TopicPartition(location.topic, location.partition),
        config,
        clock=SystemClock(),
        recovery_point=location.recovery_point,
        log_start_offset=location.log_start_offset,
        had_clean_shutdown=location.had_clean_shutdown,
        writable=False,
    )
