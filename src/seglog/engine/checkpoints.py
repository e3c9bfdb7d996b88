"""The offset checkpoints of a node's log directories (Kafka's per-root checkpoint files).

Owns, per root of ``log.dirs``, three files (each in Kafka's offset-checkpoint text format,
see :mod:`seglog.format.checkpoint`):

* ``recovery-point-offset-checkpoint``: each log's recovery point (data below it is flushed;
  recovery at the next unclean start begins there);
* ``log-start-offset-checkpoint``: each log's log start offset, only for logs whose start is
  past their first segment's base (the others start at that base anyway);
* ``replication-offset-checkpoint``: each log's high watermark (= its log end offset here).

Invariants: a root's file lists exactly the partitions open in that root (a partition is
in one root only), so a deleted topic's entries vanish at the next write; every write
replaces the whole file atomically (``LogDirectory.write_offsets``), so a crash leaves the
old or the new file, never a mix; a read-only directory writes nothing. The cleaner writes
``cleaner-offset-checkpoint`` itself (:mod:`seglog.engine.cleaning.cleaner_manager`).

The live maps of open logs and of their roots are the manager's own dicts, passed in by
reference: this module reads them and never changes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from seglog.engine.log import Log
from seglog.format.topic_names import TopicPartition
from seglog.storage.log_dir import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    LogDirectory,
)


@dataclass(frozen=True, slots=True)
class StartupOffsets:
    """What a root's checkpoints say at startup: where to open each of its logs."""

    recovery_points: dict[TopicPartition, int]
    log_starts: dict[TopicPartition, int]


def read_startup_offsets(directory: LogDirectory) -> StartupOffsets:
    """The recovery points and log start offsets of one root (missing file -> empty)."""
    return StartupOffsets(
        directory.read_offsets(RECOVERY_POINT_CHECKPOINT),
        directory.read_offsets(LOG_START_OFFSET_CHECKPOINT),
    )


class OffsetCheckpoints:
    """Writes the offset checkpoints of every root from the open logs (see the module
    docstring). ``directories[i]`` is root ``i``; ``log_root[tp]`` the root of ``logs[tp]``."""

    def __init__(
        self,
        directories: Sequence[LogDirectory],
        logs: Mapping[TopicPartition, Log],
        log_root: Mapping[TopicPartition, int],
        *,
        read_only: bool,
    ) -> None:
        self._directories = list(directories)
        self._logs = logs
        self._log_root = log_root
        self._read_only = read_only

    def _offsets_by_root(
        self, value_of: Callable[[Log], int | None]
    ) -> list[dict[TopicPartition, int]]:
        out: list[dict[TopicPartition, int]] = [{} for _ in self._directories]
        for tp, log in list(self._logs.items()):
            value = value_of(log)
            if value is not None:
                out[self._log_root[tp]][tp] = value
        return out

    def _write(self, name: str, value_of: Callable[[Log], int | None]) -> None:
        for directory, offsets in zip(
            self._directories, self._offsets_by_root(value_of), strict=True
        ):
            directory.write_offsets(name, offsets)

    def checkpoint_recovery_points(self) -> None:
        """Write every root's ``recovery-point-offset-checkpoint``."""
        self._write(RECOVERY_POINT_CHECKPOINT, lambda log: log.recovery_point)

    def checkpoint_log_start_offsets(self) -> None:
        """Write ``log-start-offset-checkpoint`` (logs whose start is past their first segment)."""

        def value(log: Log) -> int | None:
            first = log.segments[0].base_offset
            return log.log_start_offset if log.log_start_offset > first else None

        self._write(LOG_START_OFFSET_CHECKPOINT, value)

    def checkpoint_high_watermarks(self) -> None:
        """Write ``replication-offset-checkpoint`` (high watermark = log end offset here)."""
        self._write(REPLICATION_OFFSET_CHECKPOINT, lambda log: log.high_watermark)

    def checkpoint_all(self) -> None:
        """Every checkpoint above (nothing when read-only)."""
        if self._read_only:
            return
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        self.checkpoint_high_watermarks()
