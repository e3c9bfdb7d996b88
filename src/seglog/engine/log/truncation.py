"""Truncation of a partition log: Kafka's ``truncateTo``."""

from __future__ import annotations

from seglog.engine.log.log_state import LogState
from seglog.errors import InvalidRecordError, OffsetOutOfRangeError
from seglog.storage.atomic import fsync_directory
from seglog.storage.partition_dirs import write_leader_epochs
from seglog.storage.producer_snapshots import delete_snapshots_outside


class LogTruncation(LogState):
    """``truncate_to``: remove every record at or above an offset, at a batch boundary."""

    def truncate_to(self, offset: int) -> int:
        """Remove every record at or above ``offset``; returns bytes removed (Kafka's truncateTo).

        Segments entirely at or above ``offset`` are removed; the one holding it is cut at a
        batch boundary. Like Kafka, truncation never splits a batch: an ``offset`` inside a
        batch (above its first offset) raises ``InvalidRecordError`` naming the batch's bounds,
        rather than silently dropping more records than asked. When ``offset`` is at or below
        the first segment's base the log restarts empty there.
        """
        with self._lock:
            self._check_writable()
            self._list.finish_swap()
            if offset < 0:
                raise OffsetOutOfRangeError(f"cannot truncate {self.topic_partition} to {offset}")
            if offset >= self.log_end_offset:
                return 0
            floor = self._list.floor(offset)
            if floor >= 0:
                location = self._list.segments[floor].translate_offset(offset)
                if location is not None and location.first_offset < offset:
                    raise InvalidRecordError(
                        f"cannot truncate {self.topic_partition} to {offset}: it is inside the "
                        f"batch of offsets {location.first_offset}-{location.last_offset}; "
                        f"truncate to {location.first_offset} or {location.last_offset + 1}"
                    )
            # Snapshots above the new end go first: one left behind by a crash would describe
            # offsets that new appends will reuse.
            delete_snapshots_outside(self.directory, 0, offset)
            removed = 0
            segments = self._list.segments
            keep = [s for s in segments if s.base_offset < offset]
            drop = [s for s in segments if s.base_offset >= offset]
            if keep:
                self._list.publish(tuple(keep))  # readers stop finding the dropped segments first
            for segment in drop:
                removed += segment.size
                self._list.delete_segment_files(segment)
            if not keep:
                keep = [self._new_segment(offset)]
                self.log_start_offset = offset
                self._list.publish(tuple(keep))
            tail = keep[-1]
            removed += tail.truncate_to(offset, self.clock.now_ms())
            tail.make_active()
            self.log_end_offset = offset
            self.log_start_offset = min(self.log_start_offset, offset)
            self.recovery_point = min(self.recovery_point, offset)
            self._truncations += 1
            self._epochs = [e for e in self._epochs if e.start_offset < offset]
            write_leader_epochs(self.directory, self._epochs)
            fsync_directory(self.directory)
            self._reload_producer_state()
            return removed
