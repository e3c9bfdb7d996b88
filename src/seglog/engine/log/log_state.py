"""The state every part of a partition log shares, and the views of it: :class:`LogState`.

:class:`~seglog.engine.log.partition_log.Log` is assembled from parts with one responsibility
each, all subclasses of this one state (as Kafka's ``UnifiedLog`` sits on ``LocalLog``):

* :mod:`.partition_log`: opening, appends, rolls, flushes, reads and close (the API's core);
* :mod:`.truncation`: ``truncate_to``;
* :mod:`.retention_ops`: time/size retention, DeleteRecords and the log start offset;
* :mod:`.cleaner_view`: what the log cleaner reads and its crash-safe segment swap;
* :mod:`.transactions`: producer state, producer snapshots, transaction markers, the last
  stable offset and the aborted transactions a ``read_committed`` read leaves out;
* :mod:`.segment_list` (composed, not inherited): the published segment list, its swaps and
  file deletions; :mod:`.reads`: lock-free reads on a snapshot.

Invariants (kept under ``_lock``, an ``RLock`` every change takes): segment base offsets
strictly increase; each segment's offsets are below the next one's base; the log end offset
is the active segment's next offset; ``log_start_offset <= high_watermark == log_end_offset``
and ``recovery_point <= log_end_offset``. Only ``Log.__init__`` sets these attributes.
"""

from __future__ import annotations

import random
import threading
from concurrent.futures import Executor
from pathlib import Path

from seglog.clock import Clock
from seglog.config import LogConfig
from seglog.core.roll import RollReason, draw_roll_jitter_ms
from seglog.engine.log.segment_list import SegmentList
from seglog.errors import UnreadableFileError
from seglog.format.checkpoint import EpochEntry
from seglog.format.topic_names import TopicPartition
from seglog.storage.loader import LoadReport
from seglog.storage.segment import LogSegment
from seglog.storage.side_threads import SideThreads


class LogState:
    """A partition log's fields and the views every part uses (see the module docstring)."""

    directory: Path
    topic_partition: TopicPartition
    config: LogConfig
    clock: Clock
    writable: bool
    load_report: LoadReport
    log_start_offset: int
    log_end_offset: int
    recovery_point: int
    _rng: random.Random
    _flush_executor: Executor | None
    _side_threads: SideThreads | None
    _owns_side_threads: bool
    _append_where: str
    _truncations: int  # a background flush planned before a truncation is void
    _lock: threading.RLock
    _list: SegmentList  # the published segments, their swaps and file deletions
    _last_flush_ms: int
    _needs_dir_fsync: bool
    _failed_write: bool  # a multi-file change failed half-way: recover at next open
    _closed: bool
    _epochs: list[EpochEntry]

    # --- views -------------------------------------------------------------------------------
    @property
    def segments(self) -> tuple[LogSegment, ...]:
        """The segments, oldest first (a snapshot; the last is the active one)."""
        return self._list.view[0]

    @property
    def active_segment(self) -> LogSegment:
        """The segment that takes appends."""
        return self._list.view[0][-1]

    @property
    def high_watermark(self) -> int:
        """Last committed offset + 1; on one node, the log end offset."""
        return self.log_end_offset

    def size_bytes(self) -> int:
        """Total ``.log`` bytes of every segment."""
        return sum(s.size for s in self._list.segments)

    def _draw_jitter(self) -> int:
        return draw_roll_jitter_ms(self.config.segment_jitter_ms, self.config.segment_ms, self._rng)

    def _check_writable(self) -> None:
        if not self.writable:
            raise UnreadableFileError("log is open read-only", path=str(self.directory))
        if self._closed:
            raise UnreadableFileError("log is closed", path=str(self.directory))

    def _new_segment(self, base_offset: int) -> LogSegment:
        segment = LogSegment(
            self.directory,
            base_offset,
            index_interval_bytes=self.config.index_interval_bytes,
            segment_index_bytes=self.config.segment_index_bytes,
            created_ms=self.clock.now_ms(),
            roll_jitter_ms=self._draw_jitter(),
        )
        segment.make_active()
        segment.preallocate(self.config.init_file_size)
        return segment

    def roll(self) -> LogSegment:
        """Start a new active segment at the log end offset (:class:`Log` implements it)."""
        raise NotImplementedError

    def _maybe_roll(
        self, size: int, max_timestamp: int, last_offset: int, now_ms: int
    ) -> RollReason | None:
        """Roll when a roll condition holds for an append (:class:`Log` implements it)."""
        raise NotImplementedError

    def _assign_epoch(self, start_offset: int) -> None:
        """Record the leader epoch's start offset (:class:`Log` implements it)."""
        raise NotImplementedError

    def flush(self, up_to_offset: int | None = None) -> None:
        """fsync up to ``up_to_offset`` (:class:`Log` implements it)."""
        raise NotImplementedError

    def _reload_producer_state(self) -> None:
        """Rebuild producer state after a truncation (:mod:`.transactions` implements it)."""
        raise NotImplementedError
