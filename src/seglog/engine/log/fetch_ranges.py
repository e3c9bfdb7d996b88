"""Fetch as file ranges: which bytes of which segment files answer a Fetch, never decoded.

:func:`plan_fetch` is :meth:`seglog.engine.log.Log.fetch_file_ranges`. It answers a Fetch of
one partition with :class:`FetchRanges`: the partition's offsets for the response, the
aborted transactions of a ``read_committed`` fetch, and :class:`FileRange` s (an open file,
a position, a size) that a server sends with ``sendfile`` as they are.

What the ranges hold (Kafka's ``UnifiedLog.read`` rules):

* **whole batches only**, from the batch holding ``fetch_offset`` (its base offset may be
  below ``fetch_offset``: the client skips the records before it; in a compacted log with
  no record at ``fetch_offset``, the first batch after it);
* the first batch is returned whole even when it is larger than ``max_bytes`` (KIP-74),
  unless ``min_one_batch`` is false, when the result is empty instead; after it, further
  batches while the total stays ``<= max_bytes``;
* **never a batch at or above the bound**: the high watermark (``read_uncommitted``; it is
  the log end offset on one node) or the last stable offset (``read_committed``);
* ranges are contiguous within a segment (one range per segment) and follow each other in
  offset order across segments; ``next_offset`` is the offset after the last batch.

How positions are found: the offset index gives a position at or before the first batch, the
batch headers from there are read (27 bytes each: offset, length, magic, last offset delta;
records are never decompressed or decoded). The end of a range jumps through the offset
index too (the last entry below both the byte limit and the bound), so a 1 MiB fetch of small
batches reads a few KiB of headers, not every header. An index entry is used only when the
header at its position is a plausible batch start (magic, a length that fits the segment, a
last offset between the segment's base and the entry's offset); otherwise the walk goes on
header by header. A header that breaks the framing raises ``CorruptRecordError`` naming the
file and position: a fetch never returns a partial or made-up batch.

Concurrency: planning takes no log lock. Each segment used gets its own descriptor
(:meth:`~seglog.storage.segment.LogSegment.dup_read_fd`) before any of its headers is read,
and every header is read through it: the ranges keep reading the planned bytes even when
retention deletes the segment, the cleaner swaps it out or the log closes (an unlinked file's
data stays until its last descriptor closes). A segment already closed when planning reaches
it means the list changed under the plan: the plan starts again from the current list (and
its log start offset, so a fetch below a new log start raises ``OffsetOutOfRangeError``).
The caller closes the ranges (:meth:`FetchRanges.close`, or ``with``); a forgotten result
closes its descriptors when garbage-collected.
"""

from __future__ import annotations

import bisect
import io
import os
import struct
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from seglog.errors import CorruptRecordError, OffsetOutOfRangeError, UnreadableFileError
from seglog.format.batch import LOG_OVERHEAD, MAGIC_V2
from seglog.format.topic_names import TopicPartition
from seglog.format.txn_index import AbortedTxn
from seglog.storage.segment import LogSegment

HEADER_CHUNK_BYTES = 16 * 1024  # one pread serves every header inside it
PLAN_ATTEMPTS = 8  # plans restarted because a segment closed under them, at most
_HEADER_BYTES = 27  # base offset (8), length (4), epoch/crc (4), magic (1) ... delta at 23
_OFFSET_LENGTH = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_MIN_ENTRY_LENGTH = 14  # the smallest legacy message (v0) after its 12-byte log overhead

SegmentView = tuple[tuple[LogSegment, ...], tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class FileRange:
    """``size`` bytes of a segment's ``.log`` from ``position``: whole batches.

    ``file`` is an open, unbuffered, read-only handle of its own (``file.fileno()`` for
    ``os.sendfile``); it reads the planned bytes even after the segment's file was renamed or
    unlinked. ``path`` names the file as it was when planned (for messages only).
    """

    path: Path
    file: io.FileIO
    position: int
    size: int
    first_offset: int  # the first batch's base offset (may be below the fetch offset)
    last_offset: int  # the last batch's last offset

    def fileno(self) -> int:
        """The open descriptor (``os.sendfile(sock, range.fileno(), position, size)``)."""
        return self.file.fileno()

    def read(self) -> bytes:
        """The range's bytes (``pread``; for tests and a copying fallback)."""
        data = os.pread(self.file.fileno(), self.size, self.position)
        if len(data) != self.size:
            raise UnreadableFileError(
                f"read {len(data)} of {self.size} bytes at position {self.position}: the file "
                "was cut after the fetch was planned",
                path=str(self.path),
            )
        return data


class FetchRanges:
    """A Fetch answer for one partition: offsets, aborted transactions, file ranges.

    Fields: ``fetch_offset``; ``high_watermark`` (the log end offset on one node);
    ``last_stable_offset`` (whatever the isolation level, as Fetch v4+ reports it);
    ``log_start_offset``; ``aborted_transactions``: ``None`` for
    ``read_uncommitted``, else every aborted transaction overlapping
    ``[fetch_offset, next_offset)`` (``last_offset >= fetch_offset`` and ``first_offset <
    next_offset``), earliest first; ``ranges``; ``size_bytes`` (their total);
    ``next_offset`` (after the last batch; ``fetch_offset`` when empty).

    Owns the ranges' files: :meth:`close` (idempotent) or ``with`` closes them.
    """

    __slots__ = (
        "__weakref__",
        "_finalizer",
        "aborted_transactions",
        "fetch_offset",
        "high_watermark",
        "last_stable_offset",
        "log_start_offset",
        "next_offset",
        "ranges",
        "size_bytes",
    )

    def __init__(
        self,
        *,
        fetch_offset: int,
        high_watermark: int,
        last_stable_offset: int,
        log_start_offset: int,
        aborted_transactions: tuple[AbortedTxn, ...] | None,
        ranges: tuple[FileRange, ...],
    ) -> None:
        self.fetch_offset = fetch_offset
        self.high_watermark = high_watermark
        self.last_stable_offset = last_stable_offset
        self.log_start_offset = log_start_offset
        self.aborted_transactions = aborted_transactions
        self.ranges = ranges
        self.size_bytes = sum(r.size for r in ranges)
        self.next_offset = ranges[-1].last_offset + 1 if ranges else fetch_offset
        self._finalizer = weakref.finalize(self, _close_files, [r.file for r in ranges])

    def close(self) -> None:
        """Close every range's file (again: nothing happens)."""
        self._finalizer()

    def __enter__(self) -> FetchRanges:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def read_bytes(self) -> bytes:
        """Every range's bytes, in order (what ``sendfile`` would send)."""
        return b"".join(r.read() for r in self.ranges)

    def __repr__(self) -> str:
        return (
            f"FetchRanges(fetch_offset={self.fetch_offset}, next_offset={self.next_offset}, "
            f"size_bytes={self.size_bytes}, ranges={len(self.ranges)}, "
            f"high_watermark={self.high_watermark}, "
            f"last_stable_offset={self.last_stable_offset})"
        )


def _close_files(files: list[io.FileIO]) -> None:
    for file in files:
        file.close()


@dataclass(frozen=True, slots=True)
class _Header:
    position: int
    size: int  # the whole entry, log overhead included
    first_offset: int
    last_offset: int

    @property
    def end(self) -> int:
        """The position after the entry."""
        return self.position + self.size


class _Headers:
    """Batch headers of one ``.log`` read through one descriptor, a chunk at a time."""

    __slots__ = ("_buffer", "_buffer_at", "fd", "path", "size")

    def __init__(self, fd: int, path: Path, size: int) -> None:
        self.fd = fd
        self.path = path
        self.size = size  # the segment's size when planned: bytes past it are not read
        self._buffer = b""
        self._buffer_at = 0

    def at(self, position: int) -> _Header | None:
        """The header at ``position``; None at the end. A broken entry raises."""
        if position >= self.size:
            return None
        at = position - self._buffer_at
        if at < 0 or at + _HEADER_BYTES > len(self._buffer):
            self._buffer = os.pread(
                self.fd, min(HEADER_CHUNK_BYTES, self.size - position), position
            )
            self._buffer_at, at = position, 0
            if len(self._buffer) < _HEADER_BYTES:
                raise CorruptRecordError(
                    f"{self.size - position} bytes at the end of the segment are no batch",
                    position=position,
                    path=str(self.path),
                )
        base, length = _OFFSET_LENGTH.unpack_from(self._buffer, at)
        total = LOG_OVERHEAD + length
        if length < _MIN_ENTRY_LENGTH or position + total > self.size:
            raise CorruptRecordError(
                f"entry length {length} does not fit the segment's {self.size} bytes",
                position=position,
                path=str(self.path),
            )
        last = base
        if self._buffer[at + 16] == MAGIC_V2:
            (delta,) = _LAST_OFFSET_DELTA.unpack_from(self._buffer, at + 23)
            last = base + delta
        return _Header(position, total, base, last)

    def plausible(self, position: int, base_offset: int, entry_offset: int) -> bool:
        """Whether an index entry ``(entry_offset, position)`` points at a batch start
        (position 0, where a segment's first batch starts, needs no check)."""
        if position <= 0 or position >= self.size:
            return False
        try:
            header = self.at(position)
        except CorruptRecordError:
            return False
        return header is not None and base_offset <= header.last_offset <= entry_offset


def plan_fetch(
    snapshot: Callable[[], tuple[SegmentView, int, int, int]],
    topic_partition: TopicPartition,
    fetch_offset: int,
    max_bytes: int,
    *,
    read_committed: bool,
    min_one_batch: bool,
    aborted: Callable[[int, int], list[AbortedTxn]],
) -> FetchRanges:
    """:meth:`seglog.engine.log.Log.fetch_file_ranges` (see the module docstring).

    ``snapshot()`` returns ``(segment view, log start, high watermark, last stable offset)``
    read in that order; ``aborted(start, end)`` lists the aborted transactions overlapping
    ``[start, end)``.
    """
    closed = ""
    for _ in range(PLAN_ATTEMPTS):
        view, start, high_watermark, lso = snapshot()
        lso = min(lso, high_watermark)
        if fetch_offset < start or fetch_offset > high_watermark:
            raise OffsetOutOfRangeError(
                f"fetch offset {fetch_offset} is outside [{start}, {high_watermark}] of "
                f"{topic_partition}"
            )
        bound = lso if read_committed else high_watermark
        try:
            ranges = _plan_ranges(view, fetch_offset, max_bytes, bound, min_one_batch)
        except _SegmentClosed as exc:
            closed = str(exc)
            continue
        next_offset = ranges[-1].last_offset + 1 if ranges else fetch_offset
        txns = tuple(aborted(fetch_offset, next_offset)) if read_committed and ranges else None
        return FetchRanges(
            fetch_offset=fetch_offset,
            high_watermark=high_watermark,
            last_stable_offset=lso,
            log_start_offset=start,
            aborted_transactions=() if read_committed and txns is None else txns,
            ranges=ranges,
        )
    raise UnreadableFileError(
        f"segments of {topic_partition} kept closing while a fetch was planned (is the log "
        "closed?)",
        path=closed,
    )


class _SegmentClosed(Exception):
    """Internal: a segment of the plan's view closed before its descriptor was taken (the
    argument: its ``.log`` path)."""


def _plan_ranges(
    view: SegmentView, offset: int, max_bytes: int, bound: int, min_one_batch: bool
) -> tuple[FileRange, ...]:
    """The ranges (see the module docstring); their files are closed if planning fails."""
    segments, bases = view
    ranges: list[FileRange] = []
    total = 0
    try:
        for segment in segments[max(0, bisect.bisect_right(bases, offset) - 1) :]:
            room = max_bytes - total
            if segment.base_offset >= bound or offset >= bound or (ranges and room <= 0):
                break
            planned = _plan_segment(segment, offset, room, bound, not ranges and min_one_batch)
            if planned is None:
                continue  # nothing at or after ``offset`` in this segment (compacted away)
            found, whole = planned
            if found is not None:
                ranges.append(found)
                total += found.size
                offset = found.last_offset + 1
            if not whole:
                break  # stopped inside the segment: at the byte limit or the bound
    except BaseException:
        _close_files([r.file for r in ranges])
        raise
    return tuple(ranges)


def _plan_segment(
    segment: LogSegment, offset: int, room: int, bound: int, must_take_first: bool
) -> tuple[FileRange | None, bool] | None:
    """The range of ``segment`` from the batch holding ``offset`` on, at most ``room``
    bytes (the first batch whole when ``must_take_first``), below ``bound``; and whether it
    reached the segment's end. None when the segment has nothing at or after ``offset``."""
    size = segment.size
    try:
        fd = segment.dup_read_fd()
    except UnreadableFileError:
        raise _SegmentClosed(str(segment.log_path)) from None
    file = io.FileIO(fd, "rb", closefd=True)
    try:
        headers = _Headers(fd, segment.log_path, size)
        base = segment.base_offset
        entry_offset, entry_position = segment.offset_index.lookup(offset)
        position = entry_position if headers.plausible(entry_position, base, entry_offset) else 0
        first = headers.at(position)
        while first is not None and first.last_offset < offset:
            position += first.size
            first = headers.at(position)
        if (
            first is None
            or first.last_offset >= bound
            or (first.size > room and not must_take_first)
        ):
            file.close()
            return None if first is None else (None, False)
        end, last_offset = first.position + first.size, first.last_offset
        limit = first.position + max(room, first.size)
        end, last_offset = _jump(segment, headers, end, last_offset, limit, bound)
        header = headers.at(end)
        while header is not None and header.last_offset < bound and header.end <= limit:
            end, last_offset = header.end, header.last_offset
            header = headers.at(end)
        found = FileRange(
            segment.log_path,
            file,
            first.position,
            end - first.position,
            first.first_offset,
            last_offset,
        )
        return found, header is None
    except BaseException:
        file.close()
        raise


def _jump(
    segment: LogSegment, headers: _Headers, end: int, last_offset: int, limit: int, bound: int
) -> tuple[int, int]:
    """Move ``end`` (a batch boundary, ``last_offset`` the batch before it) forward through
    the offset index: to the end of the batch at the last entry below both ``bound`` and
    ``limit`` when that batch fits (the entry before it otherwise). Every batch skipped lies
    before that batch, so below the bound and inside the limit."""
    base = segment.base_offset
    position_limit = limit
    for _ in range(2):
        entry_offset, position = segment.offset_index.floor_entry(bound - 1, position_limit)
        if position <= end or not headers.plausible(position, base, entry_offset):
            break
        header = headers.at(position)
        assert header is not None  # plausible
        if header.end <= limit and header.last_offset < bound:
            return header.end, header.last_offset
        position_limit = position - 1
    return end, last_offset
