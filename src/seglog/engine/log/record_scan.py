"""Reading a partition's records batch by batch, never stopping silently at damage.

:class:`RecordScan` is the read loop behind :meth:`seglog.engine.log.Log.iter_records`. It
finds the batch holding the first offset wanted through the segment's offset index once,
then walks file positions: to the end of that segment, then from position 0 of each next
segment (a fresh snapshot of the segment list each time, so segments rolled meanwhile are
read), until the end offset.

Invariants:

* a reader whose next offset falls below the log start offset (retention, delete-records)
  gets ``OffsetOutOfRangeError`` at its next read, as a Kafka fetch would;
* every record yielded has an offset in ``[first_offset, end_offset)``, in increasing order;
* nothing is dropped silently: every way a batch can be damaged that the reader can see
  raises :class:`~seglog.errors.CorruptRecordError` (file, position, offset being read) after
  the records before it were yielded, or with ``skip_corrupt`` is reported as a
  :class:`SkippedRange` before the read resumes;
* what is seen (header fields outside Kafka's CRC included): a bad CRC or length, an unknown
  magic, a torn batch inside the readable bytes, offsets that go backwards or leave their
  segment, a ``partitionLeaderEpoch`` below -1 or below the previous batch's (a log's epochs
  never go down) and, with ``check_gaps``, offsets that do not follow on (a never-compacted
  log has no gaps). A damaged base offset that still fits between its neighbours of a
  compacted log, or a raised epoch on the last batch read, cannot be seen by any reader.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from seglog.core.isolation import AbortedRanges
from seglog.errors import CorruptRecordError, OffsetOutOfRangeError
from seglog.format.batch import MAGIC_V2
from seglog.format.reader import Batch, BatchReader, EndKind
from seglog.format.records import Header, TimestampType
from seglog.format.topic_names import TopicPartition
from seglog.storage.segment import LogSegment

NO_EPOCH = -1


@dataclass(frozen=True, slots=True)
class ConsumedRecord:
    """One record as a consumer sees it."""

    offset: int
    timestamp: int
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]


@dataclass(frozen=True, slots=True)
class SkippedRange:
    """What a ``skip_corrupt`` read passed over: bytes ``[start_position, end_position)`` of
    ``path`` and offsets ``first_offset..last_offset`` (``last_offset`` None when unknown: the
    end of the log), and why."""

    path: str
    start_position: int
    end_position: int
    first_offset: int
    last_offset: int | None
    reason: str

    def describe(self) -> str:
        """One line for stderr."""
        offsets = (
            f"offsets {self.first_offset}.."
            if self.last_offset is None
            else f"offsets {self.first_offset}..{self.last_offset}"
        )
        if self.last_offset is not None and self.last_offset < self.first_offset:
            offsets = "no offsets"
        return (
            f"skipped {self.path} positions {self.start_position}..{self.end_position} "
            f"({offsets}): {self.reason}"
        )


class ScannableLog(Protocol):
    """What a scan needs of a partition log."""

    @property
    def segments(self) -> tuple[LogSegment, ...]: ...

    @property
    def topic_partition(self) -> TopicPartition: ...

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...


class RecordScan:
    """One read of ``[first_offset, end_offset)`` of a log (module docstring)."""

    def __init__(
        self,
        log: ScannableLog,
        first_offset: int,
        end_offset: int,
        max_bytes: int,
        *,
        skip_corrupt: bool = False,
        on_skip: Callable[[SkippedRange], None] | None = None,
        check_gaps: bool = False,
        aborted: AbortedRanges | None = None,
    ) -> None:
        self._log = log
        self._aborted = aborted or None  # read_committed: the aborted transactions to leave out
        self._first = first_offset
        self._end = end_offset
        self._max_bytes = max(max_bytes, 1)
        self._skip = skip_corrupt
        self._on_skip = on_skip
        self._check_gaps = check_gaps
        self._cursor = first_offset  # the next offset wanted
        self._previous_last: int | None = None
        self._previous_epoch = NO_EPOCH
        self._previous_epoch_at = ("", 0)  # file and position of the batch that raised it
        self._reading_path = ""

    # --- the walk ------------------------------------------------------------------------------
    def records(self) -> Iterator[ConsumedRecord]:
        """The records, in offset order (module docstring)."""
        found = self._first_segment()
        if found is None:
            return
        segment, position = found
        while True:
            next_base = self._next_base(segment)
            if position >= segment.size:
                following = self._following(segment)
                if following is None or self._cursor >= self._end:
                    return
                segment, position = following, 0
                continue
            start = self._log.log_start_offset
            if self._cursor < start:
                # Retention or delete-records moved the log start past this reader (as a
                # Kafka fetch at that offset would be answered).
                raise OffsetOutOfRangeError(
                    f"offset {self._cursor} is outside [{start}, {self._log.log_end_offset}] "
                    f"of {self._log.topic_partition}"
                )
            at = position
            advanced_to = yield from self._read_chunk(segment, position, next_base)
            if self._cursor >= self._end:
                return
            if advanced_to is None:  # the file is shorter than the segment: cut under us
                raise self._error(
                    segment, at, f"the file ends before the segment's size {segment.size}"
                )
            position = advanced_to

    def _first_segment(self) -> tuple[LogSegment, int] | None:
        segments = self._log.segments
        bases = [s.base_offset for s in segments]
        index = max(0, bisect.bisect_right(bases, self._first) - 1)
        for segment in segments[index:]:
            try:
                location = segment.translate_offset(self._first)
            except CorruptRecordError as exc:
                if not self._skip:
                    raise
                damaged_at = exc.position or 0
                return segment, self._skip_damage(
                    segment, damaged_at, exc.reason, self._next_base(segment)
                )
            if location is not None:
                return segment, location.position
        return None

    def _segments_after(self, segment: LogSegment) -> Sequence[LogSegment]:
        segments = self._log.segments
        bases = [s.base_offset for s in segments]
        return segments[bisect.bisect_right(bases, segment.base_offset) :]

    def _following(self, segment: LogSegment) -> LogSegment | None:
        after = self._segments_after(segment)
        return after[0] if after else None

    def _next_base(self, segment: LogSegment) -> int | None:
        following = self._following(segment)
        return None if following is None else following.base_offset

    def _read_chunk(
        self, segment: LogSegment, position: int, next_base: int | None
    ) -> Generator[ConsumedRecord, None, int | None]:
        """Yield the records of the batches read from ``position``; return the next position
        (None when the file ends before the segment's size: cut by another program)."""
        size = segment.size
        self._reading_path = str(segment.log_path)
        wanted = min(self._max_bytes, size - position)
        data = segment.read_at(position, wanted)
        reader = BatchReader(data, base_position=position)
        advanced = False
        for batch in reader:
            advanced = True
            problem, is_gap = self._check(batch, segment, next_base)
            if problem is not None:
                if not self._skip:
                    if problem.startswith("partitionLeaderEpoch goes down"):
                        path, at = self._previous_epoch_at
                        raise self._error_at(path, at, problem)
                    raise self._error(segment, batch.position, problem)
                if is_gap:  # the batch itself is whole: report the gap, read the batch
                    self._report_gap(segment, batch, problem)
                else:
                    return self._skip_damage(segment, batch.position, problem, next_base)
            yield from self._batch_records(batch)
            if self._cursor >= self._end:
                return position
        ending = reader.end
        assert ending is not None
        read_to = position + len(data)
        if ending.kind is EndKind.CLEAN:
            return ending.position if data else None
        if ending.kind is EndKind.TORN_TAIL and read_to < size:
            if advanced:
                return ending.position  # a chunk cut by max_bytes: read on from here
            # one batch larger than the chunk: read it whole
            self._max_bytes = max(self._max_bytes, len(data) + (ending.bytes_needed or 1))
            return position
        if len(data) < wanted:
            return None
        # Damage: a corrupt entry, or a batch torn at the end of the segment's readable bytes
        # (appends only ever make whole batches readable).
        if not self._skip:
            raise self._error(segment, ending.position, ending.reason)
        return self._skip_damage(segment, ending.position, ending.reason, next_base)

    def _check(
        self, batch: Batch, segment: LogSegment, next_base: int | None
    ) -> tuple[str | None, bool]:
        """What is wrong with a whole, CRC-valid batch in its place (None when nothing), and
        whether it is only a gap before it."""
        problem = self._placement_problem(batch, segment, next_base)
        if problem is not None:
            return problem, False
        previous = self._previous_last
        if (
            self._check_gaps
            and previous is not None
            and batch.magic == MAGIC_V2
            and batch.base_offset != previous + 1
        ):
            return f"offsets {previous + 1}..{batch.base_offset - 1} are missing", True
        epoch = batch.partition_leader_epoch if batch.magic == MAGIC_V2 else NO_EPOCH
        if epoch != NO_EPOCH and epoch < self._previous_epoch:
            # Either epoch may be the damaged one (the field is outside the CRC); both
            # batches' records are CRC-valid, so only the report names the earlier batch.
            return (
                f"partitionLeaderEpoch goes down from {self._previous_epoch} (batch at "
                f"{self._previous_epoch_at[0]} position {self._previous_epoch_at[1]}) to "
                f"{epoch} (batch at {segment.log_path} position {batch.position}); "
                "epochs never go down",
                True,
            )
        return None, False

    def _placement_problem(
        self, batch: Batch, segment: LogSegment, next_base: int | None
    ) -> str | None:
        if batch.magic == MAGIC_V2 and batch.base_offset < segment.base_offset:
            return (
                f"batch base offset {batch.base_offset} is below the segment's base offset "
                f"{segment.base_offset}"
            )
        if next_base is not None and batch.last_offset >= next_base:
            return (
                f"batch holds offsets {batch.base_offset}-{batch.last_offset}, at or past the "
                f"next segment's base offset {next_base}"
            )
        previous = self._previous_last
        # The offset field: a v2 batch's base offset, a legacy entry's last offset.
        first = batch.base_offset if batch.magic == MAGIC_V2 else batch.last_offset
        if previous is not None and first <= previous:
            return (
                f"batch of offsets {first}-{batch.last_offset} does not follow the previous "
                f"batch's last offset {previous}"
            )
        if batch.magic == MAGIC_V2 and batch.partition_leader_epoch < NO_EPOCH:
            return f"partitionLeaderEpoch {batch.partition_leader_epoch} is below -1"
        return None

    def _batch_records(self, batch: Batch) -> Iterator[ConsumedRecord]:
        self._previous_last = batch.last_offset
        if batch.magic == MAGIC_V2 and batch.partition_leader_epoch > self._previous_epoch:
            self._previous_epoch = batch.partition_leader_epoch
            self._previous_epoch_at = (self._reading_path, batch.position)
        self._cursor = max(self._cursor, batch.last_offset + 1)
        if batch.is_control:
            return
        aborted = self._aborted
        if (
            aborted is not None
            and batch.is_transactional
            and aborted.holds(batch.producer_id, batch.base_offset)
        ):
            return
        first, end = self._first, self._end
        timestamp_type = batch.timestamp_type
        for record in batch.records():
            if record.offset >= end:
                self._cursor = end
                return
            if record.offset < first:
                continue
            yield ConsumedRecord(
                record.offset,
                batch.reported_timestamp(record),
                timestamp_type,
                record.key,
                record.value,
                record.headers,
            )

    # --- damage ----------------------------------------------------------------------------------
    def _error(self, segment: LogSegment, position: int, reason: str) -> CorruptRecordError:
        return self._error_at(str(segment.log_path), position, reason)

    def _error_at(self, path: str, position: int, reason: str) -> CorruptRecordError:
        return CorruptRecordError(
            f"{reason} (reading offset {self._cursor} of {self._log.topic_partition})",
            position=position,
            path=path,
        )

    def _skip_damage(
        self, segment: LogSegment, damaged_at: int, reason: str, next_base: int | None
    ) -> int:
        """Report the damage at ``damaged_at`` as a :class:`SkippedRange` and return the
        position to read on from: the next valid batch of the segment above the offsets
        read, or the segment's end."""
        found = segment.find_next_batch(damaged_at + 1, self._cursor, next_base)
        resume = segment.size if found is None else found.position
        if found is not None:
            last: int | None = found.base_offset - 1
        else:
            last = None if next_base is None else next_base - 1
        path = str(segment.log_path)
        self._emit(SkippedRange(path, damaged_at, resume, self._cursor, last, reason))
        if found is not None:
            # Offsets passed over are not a gap of the log: the damage was reported.
            self._previous_last = None
            self._previous_epoch = NO_EPOCH
            self._cursor = max(self._cursor, found.base_offset)
        elif next_base is not None:
            self._previous_last = None
            self._cursor = max(self._cursor, next_base)
        return resume

    def _report_gap(self, segment: LogSegment, batch: Batch, reason: str) -> None:
        """A whole batch read in spite of a problem before it (a gap, an epoch going down)."""
        previous = self._previous_last
        first = batch.base_offset if previous is None else previous + 1
        self._emit(
            SkippedRange(
                str(segment.log_path),
                batch.position,
                batch.position,
                first,
                batch.base_offset - 1,
                reason,
            )
        )
        self._previous_last = None  # the batch itself is read

    def _emit(self, skipped: SkippedRange) -> None:
        if self._on_skip is not None:
            self._on_skip(skipped)
