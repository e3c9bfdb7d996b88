"""Retention of a partition log: time and size retention, DeleteRecords, the log start offset.

The decisions are :func:`seglog.core.retention.plan_retention`'s; this part carries them out
crash-safely under the log's lock (:meth:`LogRetention.apply_retention` lists the steps).
"""

from __future__ import annotations

from seglog.core.retention import RetentionPlan, RetentionSettings, SegmentFacts, plan_retention
from seglog.engine.log.log_state import LogState
from seglog.errors import InvalidConfigError, OffsetOutOfRangeError
from seglog.format.checkpoint import EpochEntry
from seglog.format.names import DELETED_SUFFIX
from seglog.storage.atomic import fsync_directory
from seglog.storage.partition_dirs import write_leader_epochs
from seglog.storage.producer_snapshots import delete_snapshots_outside
from seglog.storage.segment import LogSegment

INT64_MAX = (1 << 63) - 1


class LogRetention(LogState):
    """What retention deletes, deleting it, and moving the log start offset."""

    def retention_settings(self) -> RetentionSettings:
        """The retention configs of this log."""
        return RetentionSettings(
            retention_ms=self.config.retention_ms,
            retention_bytes=self.config.retention_bytes,
            has_delete_policy=self.config.has_delete,
        )

    def plan_retention(self, now_ms: int | None = None) -> RetentionPlan:
        """What retention would delete now (nothing is changed)."""
        now = self.clock.now_ms() if now_ms is None else now_ms
        segments = self._list.segments
        facts = [
            SegmentFacts(
                s.base_offset, s.size, s.largest_timestamp(), is_active=i == len(segments) - 1
            )
            for i, s in enumerate(segments)
        ]
        return plan_retention(
            facts,
            self.retention_settings(),
            log_start_offset=self.log_start_offset,
            log_end_offset=self.log_end_offset,
            high_watermark=self.high_watermark,
            now_ms=now,
        )

    def apply_retention(self, now_ms: int | None = None) -> RetentionPlan:
        """Delete what :meth:`plan_retention` says, Kafka's way; returns the plan carried out.

        Steps (a crash at any step leaves a log that opens with nothing half-deleted
        readable): 1. roll when every segment goes (a log keeps an active segment);
        2. raise the log start offset to the first surviving segment, so no new read asks
        for the victims' offsets; 3. oldest first, rename each victim's files ``.deleted``
        (startup removes ``.deleted`` files, and an index left without its ``.log``) and
        take every victim whose ``.log`` was renamed out of the segment list;
        4. fsync the directory; 5. the file deleter unlinks them later (after
        ``file.delete.delay.ms`` under a LogManager), so a read that already holds a
        segment finishes.

        A rename that fails (a full disk, EIO) raises after step 3 took out exactly the
        segments already renamed: the others stay listed under their live names, below the
        raised log start offset, so reads refuse their offsets, their descriptors stay owned
        by the log (closed by ``close``/``abort``) and the next retention pass deletes them
        (they lie below the log start offset), in this process once the disk works again or
        after a restart (the log start offset checkpoint keeps them unreadable then).
        """
        with self._lock:
            self._check_writable()
            self._list.finish_swap()
            plan = self.plan_retention(now_ms)
            if plan.is_empty:
                return plan
            if plan.needs_roll:
                self.roll()
            doomed = {d.base_offset for d in plan.deletions}
            segments = self._list.segments
            victims = [s for s in segments if s.base_offset in doomed]
            assert victims and victims[-1] is not segments[-1]
            assert plan.new_log_start_offset is not None
            self._raise_log_start_offset(plan.new_log_start_offset)
            renamed: list[LogSegment] = []
            try:
                for segment in victims:
                    try:
                        segment.change_file_suffix(DELETED_SUFFIX)
                    finally:
                        if segment.file_suffix == DELETED_SUFFIX:  # its .log was renamed
                            renamed.append(segment)
            finally:
                if renamed:
                    gone = {id(s) for s in renamed}
                    self._list.publish(tuple(s for s in self._list.segments if id(s) not in gone))
                    self._needs_dir_fsync = True
                    for segment in renamed:
                        # Its .log is already .deleted: it is gone after a restart; the
                        # deleter removes whatever files of it are left (live-named indexes
                        # of a half-renamed segment too).
                        self._list.file_deleter(segment)
            # The producer snapshots of the deleted segments go with them (Kafka renames and
            # deletes them later; nothing reads a snapshot concurrently, so now).
            first_base = self._list.segments[0].base_offset
            delete_snapshots_outside(self.directory, first_base, INT64_MAX)
            fsync_directory(self.directory)
            self._needs_dir_fsync = False
            return plan

    def delete_records(self, offset: int) -> int:
        """Kafka's DeleteRecords: move the log start offset up to ``offset`` (-1 = the high
        watermark); records below it can no longer be read, and retention removes the whole
        segments below it. Returns the new log start offset."""
        with self._lock:
            self._check_writable()
            if not self.config.has_delete:
                raise InvalidConfigError(
                    f"delete-records on {self.topic_partition} needs cleanup.policy with "
                    f"delete (it is {','.join(self.config.cleanup_policy)})"
                )
            target = self.high_watermark if offset == -1 else offset
            if not 0 <= target <= self.high_watermark:
                raise OffsetOutOfRangeError(
                    f"delete-records offset {offset} on {self.topic_partition} is outside "
                    f"[0, {self.high_watermark}] (the high watermark)"
                )
            self._raise_log_start_offset(target)
            return self.log_start_offset

    def _raise_log_start_offset(self, offset: int) -> None:
        """Move the log start offset forward (never back); the epoch cache follows."""
        if offset <= self.log_start_offset:
            return
        self.log_start_offset = offset
        if self._epochs and self._epochs[0].start_offset < offset:
            kept = [e for e in self._epochs if e.start_offset > offset]
            last_dropped = [e for e in self._epochs if e.start_offset <= offset][-1]
            self._epochs = [EpochEntry(last_dropped.epoch, offset), *kept]
            write_leader_epochs(self.directory, self._epochs)
