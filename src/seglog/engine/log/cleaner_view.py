"""The log cleaner's view of a partition log and its crash-safe segment swap.

The swap's steps and what recovery does after each are in
:meth:`LogCleanerView.replace_segments`; the segment list carries them out
(:mod:`.segment_list`).
"""

from __future__ import annotations

from collections.abc import Sequence

from seglog.core.cleaning import CleanerSegmentFacts
from seglog.engine.log.log_state import LogState
from seglog.storage.segment import LogSegment


class LogCleanerView(LogState):
    """Segment facts for planning, ``.cleaned`` segments, the swap, and recovery state."""

    def cleaner_segment_facts(self) -> list[CleanerSegmentFacts]:
        """Per segment, what the cleaner's planning reads (sizes, timestamps, index entries)."""
        segments = self._list.segments
        last = len(segments) - 1
        return [
            CleanerSegmentFacts(
                base_offset=s.base_offset,
                size_bytes=s.size,
                largest_timestamp_ms=s.largest_timestamp(),
                first_batch_timestamp_ms=s.rolling_based_timestamp,
                offset_index_entries=s.offset_index_entries,
                time_index_entries=s.time_index_entries,
                is_active=i == last,
            )
            for i, s in enumerate(segments)
        ]

    def new_cleaned_segment(self, base_offset: int) -> LogSegment:
        """An empty ``{base}.log.cleaned`` segment (stale ``.cleaned`` files removed first)."""
        return self._list.new_cleaned_segment(
            base_offset,
            index_interval_bytes=self.config.index_interval_bytes,
            segment_index_bytes=self.config.segment_index_bytes,
            now_ms=self.clock.now_ms(),
        )

    def adopt_cleaned_segment(self, base_offset: int) -> LogSegment:
        """Open a finished ``{base}.log.cleaned`` segment written by another process (a
        cleaning job's task), ready for :meth:`replace_segments`."""
        self._check_writable()
        return self._list.adopt_cleaned_segment(
            base_offset,
            index_interval_bytes=self.config.index_interval_bytes,
            segment_index_bytes=self.config.segment_index_bytes,
            now_ms=self.clock.now_ms(),
        )

    def remove_cleaned_files(self) -> list[str]:
        """Remove every ``.cleaned`` file of this log (an abandoned round's output; never part
        of the log). Returns the names removed."""
        self._check_writable()
        return self._list.remove_cleaned_files()

    def replace_segments(
        self, new_segments: Sequence[LogSegment], old_segments: Sequence[LogSegment]
    ) -> list[LogSegment]:
        """Put finished ``.cleaned`` segments in place of ``old_segments``, crash-safely.

        Kafka's ``replaceSegments``; what startup recovery (the loader)
        does if the process dies after each step:

        1. Old segments no longer in the list (retention removed them meanwhile) are ignored.
           The swap record (:mod:`seglog.storage.swap_record`: the new and the replaced base
           offsets) is written atomically. Crash: no ``.swap`` exists, so recovery drops the
           ``.cleaned`` files and the record -> the log before the round.
        2. Each new segment's files are renamed ``.cleaned`` -> ``.swap``, highest base offset
           first. Crash: a ``.swap`` at or above the lowest ``.cleaned`` offset is an unfinished
           round, so every ``.swap`` and ``.cleaned`` is deleted -> the log before the round.
        3. The new segments replace the old ones in the list (readers switch; a reader holding
           an old segment keeps its open file).
        4. Each old segment's files are renamed ``.deleted``. Crash (before or during): all new
           segments are ``.swap``, so recovery deletes the live files their offset ranges cover
           (Kafka's rule) and those of every base the swap record names (a replaced segment
           above the new segment's next offset, which Kafka's rule misses), and renames the
           ``.swap`` files -> the cleaned log.
        5. Each new segment's ``.swap`` suffix is removed, then the directory is fsynced; then
           the swap record is removed (and the directory fsynced again, so a power loss never
           keeps the removal without the renames). Crash: the remaining ``.swap`` files are
           renamed by recovery -> the cleaned log; a record without ``.swap`` is removed.
        6. The old segments' files are unlinked later by the file deleter; ``.deleted``
           leftovers are removed at startup.

        When a step fails (a full disk, EIO): before step 3 the new segments' files are
        removed (the log is as before the call; a ``.swap`` left behind is a whole cleaned
        copy, which startup would swap in, equally valid); from step 3 on the swap is kept
        pending and finished (steps 4-6, each rename done at most once) before the next
        change of the segment list (replace, retention, roll, truncation) and at close, so
        the log is whole again in this process once the disk works; until then
        :attr:`needs_recovery` is true, and a restart finishes it from the files.

        Returns the old segments taken out of the list.
        """
        with self._lock:
            self._check_writable()
            self._list.finish_swap()
            return self._list.replace(new_segments, old_segments)

    def finish_pending_swap(self) -> bool:
        """Finish a swap that failed after its swap point, if any (see
        :meth:`replace_segments`); True when none is left pending. Raises what the disk says."""
        with self._lock:
            if self.writable and not self._closed:
                self._list.finish_swap()
            return self._list.pending_swap is None

    def release_retired_files(self) -> None:
        """Close, without writing, the handles of segments a pending swap replaced (they are
        out of the segment list, so closing the listed segments does not reach them)."""
        self._list.release_retired_files()

    @property
    def needs_recovery(self) -> bool:
        """True when a failed write could not be undone: the next open must recover this log
        (the LogManager then writes no clean-shutdown marker)."""
        return (
            self._failed_write
            or self._list.pending_swap is not None
            or any(s.needs_recovery for s in self._list.segments)
        )

    def mark_needs_recovery(self) -> None:
        """Record that a change failed half-way (see :attr:`needs_recovery`)."""
        self._failed_write = True
