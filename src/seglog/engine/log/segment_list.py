"""One partition's segment list and its swaps (Kafka's ``LogSegments`` + ``LocalLog``'s swaps).

A :class:`SegmentList` owns:

* the published list: one tuple ``(segments, bases)`` (segments oldest first, the last one the
  active segment; ``bases[i] == segments[i].base_offset``), replaced as a whole by
  :meth:`SegmentList.publish`, so a reader that takes :attr:`SegmentList.view` without a lock
  always sees a segment tuple and its base offsets from the same moment;
* the cleaner's swap: :meth:`SegmentList.replace` and the pending swap
  :meth:`SegmentList.finish_swap` finishes; the ``.cleaned`` segments a round writes
  (:meth:`SegmentList.new_cleaned_segment`, :meth:`SegmentList.adopt_cleaned_segment`,
  :meth:`SegmentList.remove_cleaned_files`);
* the two-step delete of segment files (rename ``.deleted``, then the file deleter unlinks).

Invariants: base offsets strictly increase along the list; a segment out of the list is never
read by a new reader (one that holds it keeps its open file until the file deleter runs); a
swap past its swap point (the new segments published) is pending until every rename of its
steps 4-6 succeeded, and nothing else changes the list while one is pending (every changer
calls :meth:`SegmentList.finish_swap` first).

Locking: this class takes no lock. Every method that changes the list, the files or the
pending swap runs under the owning :class:`~seglog.engine.log.Log`'s lock; :attr:`view`,
:attr:`segments` and :meth:`floor` are lock-free reads of the published tuple.
"""

from __future__ import annotations

import bisect
import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path

from seglog.format.names import CLEANED_SUFFIX, DELETED_SUFFIX, SWAP_SUFFIX
from seglog.storage.atomic import fsync_directory
from seglog.storage.segment import LogSegment
from seglog.storage.swap_record import SwapRecord, remove_swap_record, write_swap_record

SegmentView = tuple[tuple[LogSegment, ...], tuple[int, ...]]


def delete_now(segment: LogSegment) -> None:
    """The default file deleter: unlink at once (a Log without a LogManager)."""
    segment.delete_files()


class SegmentList:
    """A partition directory's published segment list; see the module docstring."""

    __slots__ = ("directory", "file_deleter", "pending_swap", "view")

    def __init__(
        self,
        directory: Path,
        segments: Sequence[LogSegment],
        file_deleter: Callable[[LogSegment], None] | None = None,
    ) -> None:
        self.directory = directory
        # Physically removes a segment whose files were renamed ``.deleted``; the LogManager
        # schedules it after file.delete.delay.ms. Without one it happens at once.
        self.file_deleter = file_deleter or delete_now
        self.view: SegmentView = ((), ())
        self.publish(tuple(segments))
        # A swap that failed after its swap point (step 3 of replace): (new segments,
        # replaced segments); finished by finish_swap before the next change of the list.
        self.pending_swap: tuple[list[LogSegment], list[LogSegment]] | None = None

    # --- the published list --------------------------------------------------------------------
    @property
    def segments(self) -> tuple[LogSegment, ...]:
        """The segments, oldest first (a snapshot; the last is the active one)."""
        return self.view[0]

    def publish(self, segments: tuple[LogSegment, ...]) -> None:
        """Make ``segments`` the list readers see (one assignment: segments and bases agree)."""
        self.view = (segments, tuple(s.base_offset for s in segments))

    def floor(self, offset: int) -> int:
        """Index of the segment with the largest base offset <= ``offset`` (-1 if none)."""
        return bisect.bisect_right(self.view[1], offset) - 1

    # --- deleting files ------------------------------------------------------------------------
    def delete_segment_files(self, segment: LogSegment) -> None:
        """Two-step delete: rename to ``.deleted`` now, unlink through the file
        deleter (after ``file.delete.delay.ms`` under a LogManager), so a read that already
        holds the segment finishes."""
        segment.change_file_suffix(DELETED_SUFFIX)
        self.file_deleter(segment)

    # --- the cleaner's segments ----------------------------------------------------------------
    def new_cleaned_segment(
        self, base_offset: int, *, index_interval_bytes: int, segment_index_bytes: int, now_ms: int
    ) -> LogSegment:
        """An empty ``{base}.log.cleaned`` segment (stale ``.cleaned`` files removed first)."""
        LogSegment.remove_files_for(self.directory, base_offset, CLEANED_SUFFIX)
        return self.adopt_cleaned_segment(
            base_offset,
            index_interval_bytes=index_interval_bytes,
            segment_index_bytes=segment_index_bytes,
            now_ms=now_ms,
        )

    def adopt_cleaned_segment(
        self, base_offset: int, *, index_interval_bytes: int, segment_index_bytes: int, now_ms: int
    ) -> LogSegment:
        """Open (creating when absent) the ``{base}.log.cleaned`` segment."""
        return LogSegment(
            self.directory,
            base_offset,
            index_interval_bytes=index_interval_bytes,
            segment_index_bytes=segment_index_bytes,
            created_ms=now_ms,
            file_suffix=CLEANED_SUFFIX,
        )

    def remove_cleaned_files(self) -> list[str]:
        """Remove every ``.cleaned`` file of the directory; returns the names removed."""
        removed = []
        for path in sorted(self.directory.iterdir()):
            if path.name.endswith(CLEANED_SUFFIX) and path.is_file():
                base = path.name.split(".", 1)[0]
                if base.isdigit():
                    LogSegment.remove_files_for(self.directory, int(base), CLEANED_SUFFIX)
                    removed.append(path.name)
        return removed

    # --- the swap ------------------------------------------------------------------------------
    def replace(
        self, new_segments: Sequence[LogSegment], old_segments: Sequence[LogSegment]
    ) -> list[LogSegment]:
        """Steps 1-6 of :meth:`seglog.engine.log.Log.replace_segments` (which documents them
        and what a crash after each leaves); the caller holds the log's lock and finished any
        pending swap. Returns the old segments taken out of the list."""
        segments = self.view[0]
        current = {id(s) for s in segments}
        old = sorted((s for s in old_segments if id(s) in current), key=lambda s: s.base_offset)
        new = sorted(new_segments, key=lambda s: s.base_offset)
        if not new:
            raise ValueError("replace_segments needs at least one new segment")
        try:
            write_swap_record(
                self.directory,
                SwapRecord(tuple(s.base_offset for s in new), tuple(s.base_offset for s in old)),
            )
            for segment in reversed(new):
                segment.change_file_suffix(SWAP_SUFFIX)
        except BaseException:
            for segment in new:  # not listed yet: nothing reads them
                with contextlib.suppress(OSError):
                    segment.delete_files()
            raise
        doomed = {id(s) for s in old}
        kept = [s for s in segments if id(s) not in doomed]
        new_bases = {s.base_offset for s in new}
        kept = [s for s in kept if s.base_offset not in new_bases]
        merged = sorted([*kept, *new], key=lambda s: s.base_offset)
        assert merged[-1] is segments[-1], "the active segment is never replaced"
        self.publish(tuple(merged))
        self.pending_swap = (new, old)
        self.finish_swap()
        return old

    def finish_swap(self) -> None:
        """Steps 4-6 of the swap for a pending one (none: nothing to do). Each rename is
        skipped when already done, so a retry after a failure goes on where it stopped; the
        swap stays pending until every step succeeded."""
        pending = self.pending_swap
        if pending is None:
            return
        new, old = pending
        for segment in old:
            segment.change_file_suffix(DELETED_SUFFIX)
        for segment in new:
            segment.change_file_suffix("")
        fsync_directory(self.directory)
        remove_swap_record(self.directory)
        self.pending_swap = None
        for segment in old:
            self.file_deleter(segment)

    def release_retired_files(self) -> None:
        """Close, without writing, the handles of segments a pending swap replaced (they are
        out of the list, so closing the listed segments does not reach them)."""
        if self.pending_swap is not None:
            for segment in self.pending_swap[1]:
                segment.release_files()
