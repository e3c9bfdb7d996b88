"""Reads and lookups of one partition log (Kafka's ``UnifiedLog.read``/``fetchOffsetByTimestamp``).

What a read needs is passed in: a snapshot of the published segment list (segments and their
base offsets, taken together, see :mod:`seglog.engine.log.segment_list`) and the log start and
end offsets read once by the caller. Nothing here takes a lock or changes anything, so a read
never blocks an append; it never sees a partial batch because a segment's readable size only
grows after a whole append was written. A segment taken out of the list while a read holds it
keeps its open file until the file deleter runs.

* :func:`read`: bytes from the batch holding an offset (Fetch);
* :func:`iter_records`: data records, lazily, through :mod:`seglog.engine.log.record_scan`;
* :func:`fetch_offset_by_timestamp`: ListOffsets.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from seglog.core.append_validation import LEADER_EPOCH
from seglog.core.isolation import AbortedRanges
from seglog.engine.log.record_scan import ConsumedRecord, RecordScan, ScannableLog, SkippedRange
from seglog.errors import InvalidRecordError, OffsetOutOfRangeError
from seglog.format.topic_names import TopicPartition
from seglog.storage.segment import FetchSlice, LogSegment

DEFAULT_FETCH_MAX_BYTES = 1024 * 1024
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4


@dataclass(frozen=True, slots=True)
class FetchResult:
    """Bytes read from a log: whole batches from a batch boundary, maybe a partial last one."""

    fetch_offset: int
    data: bytes
    high_watermark: int
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class OffsetAndTimestamp:
    """A ListOffsets answer: an offset and its record's timestamp (-1 for LATEST/EARLIEST)."""

    offset: int
    timestamp: int
    leader_epoch: int = LEADER_EPOCH


def read(
    view: tuple[tuple[LogSegment, ...], tuple[int, ...]],
    start: int,
    end: int,
    topic_partition: TopicPartition,
    offset: int,
    max_bytes: int,
    min_one_message: bool,
) -> FetchResult:
    """:meth:`seglog.engine.log.Log.read` on a snapshot (``start``/``end``: the log start and
    end offsets, which are also the result's log start offset and high watermark)."""
    if offset < start or offset > end:
        raise OffsetOutOfRangeError(
            f"offset {offset} is outside [{start}, {end}] of {topic_partition}"
        )
    if offset == end:
        return FetchResult(offset, b"", end, start)
    segments, bases = view
    found = read_slice(segments, bases, offset, max_bytes, min_one_message)
    return FetchResult(offset, b"" if found is None else found[1].data, end, start)


def read_slice(
    segments: tuple[LogSegment, ...],
    bases: tuple[int, ...],
    offset: int,
    max_bytes: int,
    min_one_message: bool,
) -> tuple[LogSegment, FetchSlice] | None:
    """The segment and bytes holding ``offset`` (or the next offset after it), or None."""
    index = max(0, bisect.bisect_right(bases, offset) - 1)
    for segment in segments[index:]:
        fetched = segment.read(offset, max_bytes, min_one_message=min_one_message)
        if fetched is not None:
            return segment, fetched
    return None


def iter_records(
    log: ScannableLog,
    offset: int,
    end_offset: int | None,
    *,
    max_bytes: int,
    skip_corrupt: bool,
    on_skip: Callable[[SkippedRange], None] | None,
    check_gaps: bool,
    aborted: AbortedRanges | None = None,
) -> Iterator[ConsumedRecord]:
    """:meth:`seglog.engine.log.Log.iter_records` (which documents it): the range checks,
    then a :class:`~seglog.engine.log.record_scan.RecordScan` over ``log``."""
    end = log.log_end_offset if end_offset is None else min(end_offset, log.log_end_offset)
    if offset >= end:
        return
    start = log.log_start_offset
    if offset < start:
        raise OffsetOutOfRangeError(
            f"offset {offset} is outside [{start}, {log.log_end_offset}] of {log.topic_partition}"
        )
    scan = RecordScan(
        log,
        offset,
        end,
        max_bytes,
        skip_corrupt=skip_corrupt,
        on_skip=on_skip,
        check_gaps=check_gaps,
        aborted=aborted,
    )
    yield from scan.records()


def fetch_offset_by_timestamp(
    segments: tuple[LogSegment, ...], start: int, end: int, timestamp: int
) -> OffsetAndTimestamp | None:
    """:meth:`seglog.engine.log.Log.fetch_offset_by_timestamp` on a snapshot (``start``/``end``:
    the log start and end offsets)."""
    if timestamp == LATEST_TIMESTAMP:
        return OffsetAndTimestamp(end, -1)
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        return OffsetAndTimestamp(start, -1)
    if timestamp == MAX_TIMESTAMP:
        best: LogSegment | None = None
        for segment in segments:
            if best is None or segment.max_timestamp_so_far > best.max_timestamp_so_far:
                best = segment
        if best is None or best.max_timestamp_so_far < 0:
            return None
        match = best.find_max_timestamp_record()
        return (
            None
            if match is None
            else OffsetAndTimestamp(match.offset, match.timestamp, match.leader_epoch)
        )
    if timestamp < 0:
        raise InvalidRecordError(f"unknown ListOffsets timestamp {timestamp}")
    for segment in segments:
        if segment.largest_timestamp() < timestamp:
            continue
        match = segment.find_offset_by_timestamp(timestamp, start)
        if match is not None and match.offset < end:
            return OffsetAndTimestamp(match.offset, match.timestamp, match.leader_epoch)
        if match is not None:
            return None
    return None
