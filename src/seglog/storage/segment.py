"""One log segment: ``{base}.log`` plus its sparse ``.index`` and ``.timeindex``.

The ``.log`` file is record batches end to end (:mod:`seglog.format.reader` documents the
layout). A segment holds offsets from ``base_offset`` (named in its 20-digit file names) up to,
not including, the next segment's base offset.

Invariants a segment keeps:

* the ``.log`` is whole, valid batches from position 0 to :attr:`size`; appends write at
  :attr:`size` (``pwrite``), so a crash leaves at most a torn tail, which recovery cuts;
* ``size`` never exceeds ``segment.bytes`` (the roll check runs before each append) and every
  position fits an int32;
* index entries follow Kafka's rule: an append that starts more than
  ``index.interval.bytes`` after the previous entry's append gets an offset entry mapping the
  append's **last offset** to the position of its **first batch**, and a time entry with the
  segment's running (max timestamp, last offset of the batch that had it). The first append of
  a segment never gets one. Recovery rebuilds the same rule per batch;
* the time index gets the final max-timestamp entry when the segment stops being active
  (roll, close, after recovery), and both indexes are trimmed then;
* **preallocation** (``preallocate=true``, :meth:`LogSegment.preallocate`): a new active
  ``.log`` is extended to ``segment.bytes`` (``ftruncate``, as Kafka's ``setLength``: a
  sparse file on most file systems) while :attr:`size` stays the end of its batches; the
  zero tail past :attr:`size` is free space, never read. It is trimmed to :attr:`size` when
  the segment stops being active (roll) and at close. After a crash the file still has its
  zero tail: recovery reads batches until the first entry that does not parse (the zeros,
  "zero-filled tail") and cuts there, so every record before it is kept. Only new segments
  are preallocated, as in Kafka (a segment reopened with batches in it is not).

Index entries are checked against the ``.log`` when they are used, since a clean load checks
only what the index files say of themselves (``consistency_problem``: cheap, no read of the
``.log``). An offset entry ``(o, p)`` is used only when the entry at ``p`` is a batch whose
last offset is ``<= o`` (the first batch of the append that ended at ``o``): every batch
before ``p`` then ends below any offset the entry is used for, so the scan from ``p`` skips
nothing; otherwise the scan starts at position 0. A time entry ``(t, o)`` is used only when
the batch holding ``o`` has max timestamp ``t``; the segment's max timestamp (from the last
time entry) is confirmed by reading the batches after that entry, so a time index that lost
its last entries cannot hide the segment's later timestamps. The check costs the header the
lookup reads anyway (offset index), one more header (time index) and, once per segment, the
batches after its last time entry (normally the last one). ``refused_index_entries`` counts
the entries found wrong.

A segment never decides when to roll or what to append (the engine's ``Log`` does); it stores
and finds bytes.

Why this module is longer than the house's ~500 lines: :class:`LogSegment` is Kafka's
``LogSegment``: appends, lookups, recovery and truncation of one ``.log`` all keep the same
cross-file invariants with its ``.index`` and ``.timeindex`` (entries point at batch starts;
the time index follows the running max timestamp), so they stay in one class; the index files
themselves are :mod:`seglog.storage.index_file`.
"""

from __future__ import annotations

import contextlib
import functools
import mmap
import os
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from seglog.core.append_validation import BatchSpan
from seglog.core.producer_state import DataBatch, producer_fields
from seglog.errors import (
    CorruptRecordError,
    InvalidRecordError,
    StorageWriteError,
    UnreadableFileError,
)
from seglog.format.batch import LOG_OVERHEAD, MAGIC_V2, MIN_BATCH_LENGTH
from seglog.format.crc import crc32c
from seglog.format.names import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    filename_prefix_from_offset,
)
from seglog.format.reader import Batch, BatchReader, EndKind
from seglog.kernels import walk_batches
from seglog.kernels.codes import END_CLEAN, END_TORN, FRAME_FIELDS, FRAME_POSITION
from seglog.storage import fileops
from seglog.storage.index_file import NO_TIMESTAMP, OffsetIndexFile, TimeIndexFile
from seglog.storage.side_threads import SideJob, SideThreads
from seglog.storage.txn_index_file import TxnIndexFile

INT32_MAX = (1 << 31) - 1
SCAN_CHUNK_BYTES = 64 * 1024
LOOKUP_CHUNK_BYTES = 16 * 1024  # a lookup scans about index.interval.bytes past its entry

# bytes 0-11: offset, size; byte 16: magic; byte 23: v2 lastOffsetDelta
_OFFSET_SIZE = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_V2_LAST_OFFSET_DELTA_AT = 23
_HEADER_PEEK_BYTES = 27
RESYNC_CHUNK_BYTES = 1024 * 1024  # find_next_batch's read size
MAGIC_V2_BYTE = bytes([MAGIC_V2])
_V2_CRC_AT = 17  # the CRC field of a v2 batch
_V2_CRC_END = 21  # the CRC covers the batch from here to its end
_CRC = struct.Struct(">I")
_V2_MAX_TIMESTAMP_AT = 35
_INT64 = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class BatchLocation:
    """Where a batch is in a segment's ``.log``."""

    position: int
    size: int
    last_offset: int
    first_offset: int  # v2: the base offset; legacy: the entry's (last) offset


@dataclass(frozen=True, slots=True)
class FetchSlice:
    """Bytes of a ``.log`` starting at a batch boundary (the last batch may be partial)."""

    segment_base_offset: int
    position: int
    data: bytes


@dataclass(frozen=True, slots=True)
class TimestampMatch:
    """A record found by timestamp: its offset and timestamp."""

    offset: int
    timestamp: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class SegmentRecovery:
    """What recovering one segment found."""

    base_offset: int
    valid_bytes: int
    truncated_bytes: int
    batches: int
    next_offset: int | None  # offset after the last valid batch, None when empty
    end_reason: str
    # recover(stop_at_overflow=True) stopped, changing nothing, at a valid batch here whose
    # offsets overflow the segment's int32 relative offsets (the loader splits the segment)
    overflow_position: int | None = None
    # the valid batches with a producer id, in order: a data batch's producer fields, a
    # control batch's bytes (recovery replays them into the producer state without a
    # second read of the segment)
    producer_batches: tuple[DataBatch | bytes, ...] = ()


class _IndexPlan(NamedTuple):
    """What an append adds to the indexes, and the segment's index state after it."""

    offsets: list[int]
    positions: list[int]
    timestamps: list[int]
    time_offsets: list[int]
    max_timestamp: int
    shallow_offset: int
    bytes_since_entry: int


class _EntryRefused(Exception):
    """Internal: an offset index entry contradicts the ``.log`` (the lookup scans instead)."""


def _write_all(
    fd: int,
    path: Path,
    buffers: Sequence[bytes | bytearray | memoryview],
    size: int,
    position: int,
) -> None:
    """Write every buffer at ``position`` (:func:`seglog.storage.fileops.write_all`: one
    ``write`` fault point; a short write is finished, so no gap is ever left)."""
    written = fileops.write_all(fd, path, buffers, position, size)
    if written != size:
        raise InvalidRecordError(f"wrote {written} bytes where {size} were expected")


def segment_path(directory: Path, base_offset: int, suffix: str) -> Path:
    """``{directory}/{20-digit base}{suffix}``."""
    return directory / (filename_prefix_from_offset(base_offset) + suffix)


class LogSegment:
    """A ``.log`` with its offset and time indexes; see the module docstring for invariants."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        segment_index_bytes: int,
        created_ms: int,
        roll_jitter_ms: int = 0,
        writable: bool = True,
        persist_indexes: bool | None = None,
        file_suffix: str = "",
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.created_ms = created_ms
        self.roll_jitter_ms = roll_jitter_ms
        self.writable = writable
        self.file_suffix = file_suffix
        persist = writable if persist_indexes is None else persist_indexes
        self.offset_index = OffsetIndexFile(
            self._path(INDEX_SUFFIX),
            base_offset,
            segment_index_bytes=segment_index_bytes,
            persist=persist,
        )
        self.time_index = TimeIndexFile(
            self._path(TIME_INDEX_SUFFIX),
            base_offset,
            segment_index_bytes=segment_index_bytes,
            persist=persist,
        )
        self.txn_index = TxnIndexFile(self._path(TXN_INDEX_SUFFIX), base_offset, writable=writable)
        self.log_path = self._path(LOG_SUFFIX)
        flags = (os.O_RDWR | os.O_CREAT) if writable else os.O_RDONLY
        # Guards ``_fd`` against being closed while :meth:`dup_read_fd` duplicates it (a
        # closed descriptor number may be reused at once by another open file).
        self._fd_lock = threading.Lock()
        try:
            self._fd: int | None = fileops.open_fd(self.log_path, flags)
            self.size = os.fstat(self._fd).st_size
        except OSError as exc:
            if writable:  # creating or opening for writes (disk full, I/O error, ...)
                raise StorageWriteError(
                    exc.strerror or str(exc), path=str(self.log_path), errno_code=exc.errno
                ) from exc
            raise UnreadableFileError(exc.strerror or str(exc), path=str(self.log_path)) from exc
        self._bytes_since_last_index_entry = 0
        self.needs_recovery = False  # a failed write could not be rolled back
        self._rolling_based_timestamp: int | None = None if self.size else NO_TIMESTAMP
        self._max_timestamp: int | None = None  # loaded lazily from the time index
        self._shallow_offset_of_max_timestamp = base_offset
        self.refused_index_entries = 0  # index entries that contradicted the .log when used

    @staticmethod
    def remove_files_for(directory: Path, base_offset: int, suffix: str = "") -> None:
        """Remove stale files of a segment base: its live files (Kafka deletes them before a
        roll) or, with ``suffix``, e.g. ``.cleaned`` leftovers of an earlier round."""
        for name in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            path = segment_path(directory, base_offset, name + suffix)
            if path.exists():
                fileops.unlink(path, missing_ok=True)

    def _path(self, suffix: str) -> Path:
        return segment_path(self.directory, self.base_offset, suffix + self.file_suffix)

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, path={self.log_path})"

    # --- what the roll decision reads (seglog.core.roll.SegmentRollState) ------------------
    @property
    def size_bytes(self) -> int:
        """Bytes in the ``.log``."""
        return self.size

    @property
    def offset_index_entries(self) -> int:
        """Entries in the offset index."""
        return self.offset_index.entries

    @property
    def offset_index_max_entries(self) -> int:
        """Entries the offset index can hold."""
        return self.offset_index.max_entries

    @property
    def time_index_entries(self) -> int:
        """Entries in the time index."""
        return self.time_index.entries

    @property
    def time_index_max_entries(self) -> int:
        """Entries the time index can hold."""
        return self.time_index.max_entries

    # --- timestamps ------------------------------------------------------------------------
    def _ensure_max_timestamp(self) -> None:
        if self._max_timestamp is None:
            # The last time entry, confirmed against the batches from it to the end.
            self._reload_max_timestamp()

    @property
    def max_timestamp_so_far(self) -> int:
        """Largest batch max timestamp known in this segment (-1 when none)."""
        self._ensure_max_timestamp()
        assert self._max_timestamp is not None
        return self._max_timestamp

    @property
    def shallow_offset_of_max_timestamp(self) -> int:
        """Last offset of the (first) batch holding :attr:`max_timestamp_so_far`."""
        self._ensure_max_timestamp()
        return self._shallow_offset_of_max_timestamp

    @property
    def rolling_based_timestamp(self) -> int:
        """The first batch's max timestamp (what ``segment.ms`` is measured from), -1 if none."""
        if self._rolling_based_timestamp is None:
            first = next(self.iter_batches(0, self.size), None)
            self._rolling_based_timestamp = first.max_timestamp if first else NO_TIMESTAMP
        return self._rolling_based_timestamp

    def last_modified_ms(self) -> int:
        """The ``.log`` file's modification time in ms."""
        return os.stat(self.log_path).st_mtime_ns // 1_000_000

    def largest_timestamp(self) -> int:
        """Max record timestamp, or the ``.log`` mtime when the segment has none."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        return self.last_modified_ms()

    # --- append ----------------------------------------------------------------------------
    def append(
        self,
        buffers: Sequence[bytes | bytearray | memoryview],
        size: int,
        batches: Sequence[BatchSpan],
        *,
        check: Callable[[], None] | None = None,
        checker: SideThreads | None = None,
    ) -> None:
        """Write whole batches at the end, then index them.

        ``buffers`` (``size`` bytes in all) are written in order with ``pwritev``; ``batches``
        describes each batch of them, positions relative to the first byte.

        ``check`` is a last test of the bytes (the engine's deferred CRC check). With a
        ``checker`` (:class:`seglog.storage.side_threads.SideThreads` with a free thread) it
        runs on that thread, followed by the index planning, while this thread writes the
        bytes past :attr:`size` (``pwritev`` releases the GIL, so the two overlap: the thread
        that waits in the system call hands the GIL over at once, which a thread woken to
        write while this one checks would not get until the checks were done). When the
        check raises, the file is cut back to :attr:`size` and the error propagates, so the
        segment never keeps the append. Until this method returns :attr:`size` (what readers
        and flushes see) is unchanged; a crash in between leaves bytes past the valid end,
        which recovery checks and cuts like any torn tail (a batch that failed ``check``
        fails recovery's CRC check too). Without a free side thread the check runs before
        the write.

        Kafka's index rule is
        applied as if each batch were its own append: a batch that starts more than
        ``index.interval.bytes`` after the last entry's gets an offset entry (its last
        offset -> its position) and a time entry (the running max). Kafka applies the rule
        per produce request instead, which maps a multi-batch request's last offset to its
        first batch; its own dump tool then reports a mismatch, and recovery rebuilds the
        per-batch entries anyway, so seglog writes per batch (what Java producers, one batch
        per partition per request, get from Kafka too). A full index stays sparser for the
        rest of the chunk; the next append's roll check then rolls.
        """
        if not self.writable or self._fd is None:
            raise UnreadableFileError("segment is open read-only", path=str(self.log_path))
        if not batches:
            return
        position = self.size
        last_offset = batches[-1][2]
        if not 0 <= last_offset - self.base_offset <= INT32_MAX:
            raise InvalidRecordError(
                f"offset {last_offset} cannot be stored relative to base offset "
                f"{self.base_offset} in {self.log_path}"
            )
        if position + size > INT32_MAX:
            raise InvalidRecordError(f"segment {self.log_path} would pass 2 GiB")
        if position == 0:
            self._rolling_based_timestamp = max(b[3] for b in batches)
        self._ensure_max_timestamp()  # may read the .log: never on the side thread
        side: SideJob[_IndexPlan] | None = None
        if check is not None:
            if checker is not None:
                side = checker.submit(
                    functools.partial(self._check_and_plan, check, position, batches)
                )
            if side is None:
                check()  # no side thread (or none free): check before writing
        try:
            _write_all(self._fd, self.log_path, buffers, size, position)
        except BaseException as exc:
            if side is not None:
                with contextlib.suppress(BaseException):
                    side.result()  # never leave the side job running on a failed append
            if not isinstance(exc, OSError):
                raise
            self._cut_back(position)
            # A short write (disk full mid-batch) must not leave a torn tail behind: the file
            # was cut back to where the append started, so the segment stays whole batches.
            raise StorageWriteError(
                exc.strerror or str(exc), path=str(self.log_path), errno_code=exc.errno
            ) from exc
        if side is None:
            plan = self._plan_index(position, batches)
        else:
            try:
                plan = side.result()
            except BaseException:
                self._cut_back(position)
                raise
        self.size = position + size
        self._apply_index_plan(plan)

    def _cut_back(self, position: int) -> None:
        """Cut the ``.log`` back to ``position`` after a failed append (when even that
        fails, the next open must recover this segment)."""
        assert self._fd is not None
        try:
            fileops.truncate(self._fd, self.log_path, position)
        except OSError:
            self.needs_recovery = True

    def _check_and_plan(
        self, check: Callable[[], None], position: int, batches: Sequence[BatchSpan]
    ) -> _IndexPlan:
        """The side thread's half of a pipelined append: the check, then the index plan
        (both read only what the appending thread does not change meanwhile)."""
        check()
        return self._plan_index(position, batches)

    def _plan_index(self, position: int, batches: Sequence[BatchSpan]) -> _IndexPlan:
        """The index entries Kafka's rule gives ``batches`` appended at ``position``, and the
        segment's index state after them; changes nothing."""
        max_timestamp = self._max_timestamp
        assert max_timestamp is not None
        shallow = self._shallow_offset_of_max_timestamp
        since_entry = self._bytes_since_last_index_entry
        interval = self.index_interval_bytes
        offset_index, time_index = self.offset_index, self.time_index
        offset_room = offset_index.max_entries - offset_index.entries
        time_room = time_index.max_entries - 1 - time_index.entries  # last slot reserved
        last_indexed_timestamp = time_index.last_entry()[0]
        entry_offsets: list[int] = []
        entry_positions: list[int] = []
        entry_timestamps: list[int] = []
        entry_time_offsets: list[int] = []
        # Entries past an index's room are dropped after the loop (the loop keeps none of
        # its decisions on them, so cutting the lists is the same as never adding them).
        for batch_position, batch_size, batch_last_offset, batch_max in batches:
            if batch_max > max_timestamp:
                max_timestamp, shallow = batch_max, batch_last_offset
            if since_entry > interval:
                entry_offsets.append(batch_last_offset)
                entry_positions.append(position + batch_position)
                if max_timestamp > last_indexed_timestamp:
                    entry_timestamps.append(max_timestamp)
                    entry_time_offsets.append(shallow)
                    last_indexed_timestamp = max_timestamp
                since_entry = batch_size
            else:
                since_entry += batch_size
        offset_room, time_room = max(offset_room, 0), max(time_room, 0)
        del entry_offsets[offset_room:], entry_positions[offset_room:]
        del entry_timestamps[time_room:], entry_time_offsets[time_room:]
        return _IndexPlan(
            entry_offsets,
            entry_positions,
            entry_timestamps,
            entry_time_offsets,
            max_timestamp,
            shallow,
            since_entry,
        )

    def _apply_index_plan(self, plan: _IndexPlan) -> None:
        if plan.offsets:
            self.offset_index.extend(plan.offsets, plan.positions)
        if plan.timestamps:
            self.time_index.extend(plan.timestamps, plan.time_offsets)
        self._max_timestamp = plan.max_timestamp
        self._shallow_offset_of_max_timestamp = plan.shallow_offset
        self._bytes_since_last_index_entry = plan.bytes_since_entry

    # --- reading ---------------------------------------------------------------------------
    def dup_read_fd(self) -> int:
        """A new descriptor of this segment's ``.log`` (``os.dup``; the caller closes it).

        It reads the same file whatever happens to the segment afterwards: a rename
        (``.deleted``, a swap), an unlink (the data stays until the last descriptor closes)
        or :meth:`close`. Raises ``UnreadableFileError`` when the segment is already closed
        (deleted, or its log closed): the caller plans again from the current segment list.
        """
        with self._fd_lock:
            if self._fd is None:
                raise UnreadableFileError("segment is closed", path=str(self.log_path))
            return os.dup(self._fd)

    def read_at(self, position: int, length: int) -> bytes:
        """``length`` bytes of the ``.log`` from ``position`` (fewer at the end of the file)."""
        if self._fd is None:
            raise UnreadableFileError("segment is closed", path=str(self.log_path))
        return os.pread(self._fd, length, position)

    def iter_batches(
        self, start_position: int, end_position: int, *, verify_crc: bool = False
    ) -> Iterator[Batch]:
        """Whole batches between two positions, read in chunks; corruption raises.

        A torn or corrupt entry before ``end_position`` raises ``CorruptRecordError`` naming
        the file and position: data in the middle of a segment is never skipped silently.
        """
        position = start_position
        chunk = SCAN_CHUNK_BYTES
        while position < end_position:
            wanted = min(chunk, end_position - position)
            buf = self.read_at(position, wanted)
            # A file shorter than the segment's size (cut by another program): raise, never
            # read the same short tail again and again.
            is_short = len(buf) < wanted
            reader = BatchReader(buf, base_position=position, verify_crc=verify_crc)
            advanced = False
            for batch in reader:
                advanced = True
                yield batch
            assert reader.end is not None
            end = reader.end
            if end.kind is EndKind.CORRUPT or (
                end.kind is EndKind.TORN_TAIL and (is_short or position + len(buf) >= end_position)
            ):
                raise end.to_error(str(self.log_path))
            if is_short and end.position >= position + len(buf):
                raise CorruptRecordError(
                    f"the file ends before the segment's size {end_position}",
                    position=end.position,
                    path=str(self.log_path),
                )
            position = end.position
            if not advanced and end.bytes_needed:
                chunk = max(chunk, len(buf) + end.bytes_needed)

    def find_next_batch(
        self, start_position: int, min_offset: int, below_offset: int | None
    ) -> Batch | None:
        """The first whole, CRC-valid v2 batch starting at or after ``start_position`` whose
        base offset lies in ``[min_offset, below_offset)``, or None (reading past damage).

        A resynchronisation scan for readers told to skip corrupt bytes: every position whose
        magic byte is 2 is a candidate; its size must fit the segment, its offsets the range,
        and its CRC-32C must match, so a match inside a damaged region's payload is as
        unlikely as a CRC collision. Reads ``RESYNC_CHUNK_BYTES`` at a time.
        """
        size = self.size
        position = start_position
        while position + _HEADER_PEEK_BYTES <= size:
            buf = self.read_at(position, min(RESYNC_CHUNK_BYTES, size - position))
            at = buf.find(MAGIC_V2_BYTE, 16)
            while at != -1 and at - 16 + _HEADER_PEEK_BYTES <= len(buf):
                candidate = position + at - 16
                entry_offset, entry_size = _OFFSET_SIZE.unpack_from(buf, at - 16)
                if (
                    entry_size >= MIN_BATCH_LENGTH
                    and candidate + LOG_OVERHEAD + entry_size <= size
                    and entry_offset >= min_offset
                    and (below_offset is None or entry_offset < below_offset)
                ):
                    raw = self.read_at(candidate, LOG_OVERHEAD + entry_size)
                    reader = BatchReader(raw, base_position=candidate)
                    batches = list(reader)
                    if batches and reader.end is not None and reader.end.is_clean:
                        return batches[0]
                at = buf.find(MAGIC_V2_BYTE, at + 1)
            if len(buf) < _HEADER_PEEK_BYTES:
                break
            position += len(buf) - _HEADER_PEEK_BYTES + 1
        return None

    def _last_offset_at(self, position: int) -> int | None:
        """Last offset of the entry whose header starts at ``position`` (None: no header)."""
        peek = self.read_at(position, _HEADER_PEEK_BYTES)
        if len(peek) < _HEADER_PEEK_BYTES:
            return None
        entry_offset, _ = _OFFSET_SIZE.unpack_from(peek, 0)
        if peek[16] == MAGIC_V2:
            (delta,) = _LAST_OFFSET_DELTA.unpack_from(peek, _V2_LAST_OFFSET_DELTA_AT)
            return int(entry_offset + delta)
        return int(entry_offset)

    def _entry_holds(self, entry_offset: int, last_offset: int | None) -> bool:
        """Whether an offset entry ``(entry_offset, p)`` may be used, the batch at ``p``
        ending at ``last_offset``; counts a refused entry."""
        if last_offset is not None and self.base_offset <= last_offset <= entry_offset:
            return True
        self.refused_index_entries += 1
        return False

    def _is_whole_batch(
        self, peek: bytes, at: int, position: int, entry_size: int, is_v2: bool
    ) -> bool:
        """Whether a batch really starts at ``position`` (an index entry's): it fits in the
        segment and, for v2, its CRC holds. A damaged position that lands inside a batch
        would otherwise be walked as if it were a header (and could skip records)."""
        total = LOG_OVERHEAD + entry_size
        if entry_size <= 0 or position + total > self.size:
            return False
        if not is_v2:
            return True
        data = peek[at : at + total] if at + total <= len(peek) else self.read_at(position, total)
        if len(data) < total or total < _V2_CRC_END:
            return False
        (stored,) = _CRC.unpack_from(data, _V2_CRC_AT)
        return bool(crc32c(memoryview(data)[_V2_CRC_END:]) == stored)

    def index_position(self, offset: int) -> int:
        """Where a scan for ``offset`` may start: the offset index entry's position once the
        batch there is checked (see the module docstring), else 0."""
        entry_offset, position = self.offset_index.lookup(offset)
        if position <= 0 or position >= self.size:
            return 0
        return position if self._entry_holds(entry_offset, self._last_offset_at(position)) else 0

    def translate_offset(self, offset: int, start_position: int = 0) -> BatchLocation | None:
        """The first batch whose last offset is >= ``offset``, or None."""
        indexed_offset, position = self.offset_index.lookup(offset)
        if position > start_position:
            try:
                return self._scan_for(offset, position, check=indexed_offset)
            except _EntryRefused:
                pass  # the entry contradicts the .log (counted): scan from the start instead
        return self._scan_for(offset, start_position, check=None)

    def _scan_for(self, offset: int, position: int, *, check: int | None) -> BatchLocation | None:
        """Walk headers from ``position`` to the first batch ending at or after ``offset``.

        With ``check`` (the index entry's offset), the first header read also checks the
        entry (module docstring), at no extra read; ``_EntryRefused`` when it does not hold.
        """
        size = self.size
        while position < size:
            peek = self.read_at(position, min(LOOKUP_CHUNK_BYTES, size - position))
            at = 0
            while at + _HEADER_PEEK_BYTES <= len(peek):
                entry_offset, entry_size = _OFFSET_SIZE.unpack_from(peek, at)
                is_v2 = peek[at + 16] == MAGIC_V2
                last_offset = entry_offset
                if is_v2:
                    (delta,) = _LAST_OFFSET_DELTA.unpack_from(peek, at + _V2_LAST_OFFSET_DELTA_AT)
                    last_offset = entry_offset + delta
                if check is not None:
                    real = self._is_whole_batch(peek, at, position + at, entry_size, is_v2)
                    if not self._entry_holds(check, last_offset if real else None):
                        raise _EntryRefused
                    check = None
                if entry_size <= 0:
                    raise CorruptRecordError(
                        f"entry size {entry_size}", position=position + at, path=str(self.log_path)
                    )
                if is_v2 and entry_offset < self.base_offset:
                    # A damaged base offset (outside the CRC) must not make the lookup
                    # skip the batch silently.
                    raise CorruptRecordError(
                        f"batch base offset {entry_offset} is below the segment's base "
                        f"offset {self.base_offset}",
                        position=position + at,
                        path=str(self.log_path),
                    )
                total = LOG_OVERHEAD + entry_size
                if last_offset >= offset:
                    return BatchLocation(position + at, total, last_offset, entry_offset)
                at += total
            if check is not None:  # no whole header at the entry's position
                self._entry_holds(check, None)
                raise _EntryRefused
            if at == 0:
                return None  # a torn tail shorter than a batch header holds no offset
            position += at
        return None

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        *,
        max_position: int | None = None,
        min_one_message: bool = False,
    ) -> FetchSlice | None:
        """Bytes from the batch holding ``start_offset`` on, or None."""
        location = self.translate_offset(start_offset)
        if location is None:
            return None
        limit = self.size if max_position is None else max_position
        adjusted_max = max(max_bytes, location.size) if min_one_message else max_bytes
        length = min(limit - location.position, adjusted_max)
        if length <= 0:
            return FetchSlice(self.base_offset, location.position, b"")
        return FetchSlice(
            self.base_offset, location.position, self.read_at(location.position, length)
        )

    def next_offset(self) -> int:
        """Offset after the last batch (the base offset when empty)."""
        entry_offset, _ = self.offset_index.last_entry()
        position = self.index_position(entry_offset)
        last = None
        for batch in self.iter_batches(position, self.size):
            last = batch
        if last is None:
            return self.base_offset
        return last.last_offset + 1

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int) -> TimestampMatch | None:
        """First record with timestamp >= ``timestamp`` and offset >= ``start_offset``."""
        indexed_timestamp, indexed_offset = self.time_index.lookup(timestamp)
        if not self._time_entry_holds(indexed_timestamp, indexed_offset):
            indexed_offset = self.base_offset  # a damaged entry: scan the whole segment
        position = self.index_position(max(indexed_offset, start_offset))
        for batch in self.iter_batches(position, self.size):
            if batch.max_timestamp < timestamp or batch.last_offset < start_offset:
                continue
            for record in batch.records():
                reported = batch.reported_timestamp(record)
                if reported >= timestamp and record.offset >= start_offset:
                    return TimestampMatch(record.offset, reported, batch.partition_leader_epoch)
        return None

    def find_max_timestamp_record(self) -> TimestampMatch | None:
        """The first record holding the segment's max timestamp (ListOffsets -3)."""
        max_timestamp = self.max_timestamp_so_far
        if max_timestamp < 0:
            return None
        position = self.index_position(self.shallow_offset_of_max_timestamp)
        for batch in self.iter_batches(position, self.size):
            if batch.max_timestamp != max_timestamp:
                continue
            for record in batch.records():
                if batch.reported_timestamp(record) == max_timestamp:
                    return TimestampMatch(
                        record.offset, max_timestamp, batch.partition_leader_epoch
                    )
        return None

    # --- recovery --------------------------------------------------------------------------
    def recover(self, *, stop_at_overflow: bool = False) -> SegmentRecovery:
        """Validate every batch, rebuild both indexes and cut a bad tail.

        Stops at the first torn, corrupt or out-of-order entry; bytes from there on are
        truncated (in memory only for a read-only segment). Returns what was found.

        With ``stop_at_overflow``, a valid batch whose offsets follow on but pass
        ``base_offset + 2^31 - 1`` (a segment an old broker let overflow, KAFKA-6264) ends the
        scan without cutting anything: the result names it in ``overflow_position``, the
        ``.log`` is unchanged, and the caller splits the segment and recovers the pieces (the
        indexes are left reset, to be rebuilt).
        """
        self.offset_index.reset()
        self.time_index.reset()
        max_timestamp = NO_TIMESTAMP
        shallow_offset = self.base_offset
        last_index_position = 0
        valid_bytes = 0
        batches = 0
        next_offset: int | None = None
        end_reason = "end of data"
        position = 0
        chunk = 4 * SCAN_CHUNK_BYTES * 16
        producer_batches: list[DataBatch | bytes] = []
        while position < self.size:
            buf = self.read_at(position, min(chunk, self.size - position))
            # Positions come relative to ``buf`` (no per-batch copy to rebase them); the file
            # position of a batch is ``position + batch.position``.
            reader = BatchReader(buf, verify_crc=True)
            advanced = False
            for batch in reader:
                advanced = True
                at = position + batch.position
                if (
                    stop_at_overflow
                    and batch.last_offset - self.base_offset > INT32_MAX
                    and batch.base_offset
                    >= (self.base_offset if next_offset is None else next_offset)
                ):
                    return SegmentRecovery(
                        self.base_offset,
                        valid_bytes,
                        0,
                        batches,
                        next_offset,
                        f"batch at position {at} holds offsets {batch.base_offset}-"
                        f"{batch.last_offset}, past base offset + 2^31 - 1 (offset overflow)",
                        overflow_position=at,
                    )
                if not 0 <= batch.last_offset - self.base_offset <= INT32_MAX or (
                    batch.base_offset < self.base_offset and batch.magic == MAGIC_V2
                ):
                    end_reason = (
                        f"batch at position {at} holds offsets "
                        f"{batch.base_offset}-{batch.last_offset}, outside this segment"
                    )
                    break
                if batch.max_timestamp > max_timestamp:
                    max_timestamp = batch.max_timestamp
                    shallow_offset = batch.last_offset
                if at - last_index_position > self.index_interval_bytes:
                    # Rebuilding per batch can need more entries than the appends (one entry
                    # per multi-batch chunk) wrote; a full index just stays sparser here, so
                    # a small segment.index.bytes never makes a log unopenable.
                    if not self.offset_index.is_full:
                        self.offset_index.append(batch.last_offset, at)
                    if not self.time_index.is_full:
                        self.time_index.maybe_append(max_timestamp, shallow_offset)
                    last_index_position = at
                valid_bytes = at + batch.size_in_bytes
                next_offset = batch.last_offset + 1
                batches += 1
                if batch.magic == MAGIC_V2 and batch.producer_id >= 0:
                    # kept for the producer state: a marker whole (78 bytes), data as fields
                    producer_batches.append(
                        bytes(batch.raw) if batch.is_control else producer_fields(batch)
                    )
            else:
                assert reader.end is not None
                end = reader.end
                end_position = position + end.position
                if end.kind is EndKind.CLEAN:
                    position = end_position
                    continue
                if end.kind is EndKind.TORN_TAIL and position + len(buf) < self.size:
                    assert end.bytes_needed is not None
                    if not advanced:
                        chunk = len(buf) + end.bytes_needed
                    position = end_position
                    continue
                end_reason = f"{end.reason} at position {end_position}"
            break
        truncated = self.size - valid_bytes
        if truncated:
            self._truncate_log(valid_bytes)
        self._max_timestamp = max_timestamp
        self._shallow_offset_of_max_timestamp = shallow_offset
        self._rolling_based_timestamp = None if valid_bytes else NO_TIMESTAMP
        self.time_index.maybe_append(max_timestamp, shallow_offset, skip_full_check=True)
        self.offset_index.trim()
        self.time_index.trim()
        return SegmentRecovery(
            self.base_offset,
            valid_bytes,
            truncated,
            batches,
            next_offset,
            end_reason,
            producer_batches=tuple(producer_batches),
        )

    def _truncate_log(self, size: int) -> None:
        if self.writable and self._fd is not None:
            fileops.truncate(self._fd, self.log_path, size)
        self.size = size

    # --- truncation, roll, close --------------------------------------------------------------
    def truncate_to(self, offset: int, now_ms: int | None = None) -> int:
        """Drop every batch whose last offset is >= ``offset``; returns bytes removed.

        A segment left empty (whether this call removed bytes or it was empty already)
        restarts its roll clock, as Kafka's ``LogSegment.truncateTo`` does: its creation time
        becomes ``now_ms`` (when given) and its rolling-based timestamp is forgotten, so
        ``segment.ms`` is measured from the next append's timestamp, never from records
        that no longer exist.
        """
        location = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        if self.writable:
            self.txn_index.truncate_to(offset)
        self.offset_index.resize_to_max()
        self.time_index.resize_to_max()
        removed = 0
        if location is not None:
            removed = self.size - location.position
            self._truncate_log(location.position)
            self._bytes_since_last_index_entry = 0
        if self.size == 0:
            self._rolling_based_timestamp = NO_TIMESTAMP
            if now_ms is not None:
                self.created_ms = now_ms
        if location is not None:
            self._reload_max_timestamp()
        return removed

    def _time_entry_holds(self, timestamp: int, offset: int) -> bool:
        """Whether the time entry ``(timestamp, offset)`` may be used: the v2 batch holding
        ``offset`` has max timestamp ``timestamp`` (no entry, ``(-1, base offset)``, always
        holds; legacy entries are not checked). Counts a refused entry.

        An entry on disk never holds timestamp -1 (Kafka appends only timestamps above the
        last entry's, which starts at -1), so ``-1`` with any other offset is a damaged entry:
        trusting it would start a lookup past the records before that offset."""
        if timestamp == NO_TIMESTAMP and offset == self.base_offset:
            return True
        location = self.translate_offset(offset)
        if location is not None:
            want = _V2_MAX_TIMESTAMP_AT + 8
            header = self.read_at(location.position, want).ljust(want)
            if header[16] != MAGIC_V2:
                return True
            (max_timestamp,) = _INT64.unpack_from(header, _V2_MAX_TIMESTAMP_AT)
            if location.first_offset <= offset and max_timestamp == timestamp:
                return True
        self.refused_index_entries += 1
        return False

    def _reload_max_timestamp(self) -> None:
        """Recompute the running max from the time index's last entry (once it holds, else
        from the start) and the batches after it."""
        timestamp, offset = self.time_index.last_entry()
        if not self._time_entry_holds(timestamp, offset):
            timestamp, offset = NO_TIMESTAMP, self.base_offset
        position = self.index_position(offset)
        for batch in self.iter_batches(position, self.size):
            if batch.max_timestamp > timestamp:
                timestamp = batch.max_timestamp
                offset = batch.last_offset
        self._max_timestamp = timestamp
        self._shallow_offset_of_max_timestamp = offset

    def on_become_inactive(self) -> None:
        """Roll or close: final max-timestamp time entry, then trim both indexes
        and a preallocated ``.log``."""
        self._trim_log()
        self.time_index.maybe_append(
            self.max_timestamp_so_far, self.shallow_offset_of_max_timestamp, skip_full_check=True
        )
        self.offset_index.trim()
        self.time_index.trim()

    def preallocate(self, size_bytes: int) -> None:
        """Extend an empty writable ``.log`` to ``size_bytes`` (module docstring); :attr:`size`
        stays 0. Does nothing for a segment holding batches or a size of 0."""
        if size_bytes <= 0 or self.size or not self.writable or self._fd is None:
            return
        if os.fstat(self._fd).st_size < size_bytes:
            fileops.truncate(self._fd, self.log_path, size_bytes)

    def _trim_log(self) -> None:
        """Cut a preallocated ``.log``'s zero tail: the file ends at :attr:`size` again."""
        if self.writable and self._fd is not None and os.fstat(self._fd).st_size > self.size:
            fileops.truncate(self._fd, self.log_path, self.size)

    def make_active(self) -> None:
        """Preallocate the indexes again: this segment takes appends (after load or truncation)."""
        if self.writable:
            self.offset_index.create_preallocated()
            self.time_index.create_preallocated()

    def flush(self) -> None:
        """fsync the ``.log`` and both indexes."""
        if self._fd is not None and self.writable:
            try:
                fileops.fsync(self._fd, self.log_path)
            except OSError as exc:
                raise StorageWriteError(
                    exc.strerror or str(exc), path=str(self.log_path), errno_code=exc.errno
                ) from exc
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        """Close every file handle (call :meth:`on_become_inactive` first to trim the
        indexes; a preallocated ``.log`` is trimmed here too, as Kafka's ``FileRecords.close``)."""
        if self._fd is not None:
            try:
                self._trim_log()
            finally:
                with self._fd_lock:
                    os.close(self._fd)
                    self._fd = None
        self.offset_index.close()
        self.time_index.close()

    def release_files(self) -> None:
        """Close every handle without writing anything (after a failed write or close: the
        files are left as they are for recovery); errors are ignored."""
        with self._fd_lock:
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    os.close(self._fd)
                self._fd = None
        self.offset_index.release()
        self.time_index.release()

    # --- file names ----------------------------------------------------------------------------
    def files(self) -> list[Path]:
        """Every file of the segment that exists (``.log``, indexes, ``.txnindex``)."""
        candidates = [
            self.log_path,
            self.offset_index.path,
            self.time_index.path,
            self.txn_index.path,
        ]
        return [path for path in candidates if path.exists()]

    def change_file_suffix(self, new_suffix: str) -> None:
        """Rename every file from its old suffix to ``{name}{new_suffix}`` (no dir fsync)."""
        if not self.writable:
            raise UnreadableFileError("segment is open read-only", path=str(self.log_path))
        old_txn = self.txn_index.path
        new_log = segment_path(self.directory, self.base_offset, LOG_SUFFIX + new_suffix)
        if new_log != self.log_path:
            fileops.replace(self.log_path, new_log)
        # From here the segment is under its new name (``file_suffix`` says so once the .log
        # is renamed; a later failure leaves index files behind, each with the name it has).
        self.log_path = new_log
        self.file_suffix = new_suffix
        for index in (self.offset_index, self.time_index):
            target = self._path(INDEX_SUFFIX if index is self.offset_index else TIME_INDEX_SUFFIX)
            if index.path != target:
                index.rename_to(target)
        new_txn = self._path(TXN_INDEX_SUFFIX)
        if old_txn != new_txn and old_txn.exists():
            fileops.replace(old_txn, new_txn)
        self.txn_index.rename_to(new_txn)

    def delete_files(self) -> None:
        """Close and unlink every file of the segment."""
        paths = self.files()
        self.close()
        for path in paths:
            fileops.unlink(path, missing_ok=True)

    # --- what the log cleaner needs ------------------------------------------------------------
    def read_into(self, position: int, buffer: memoryview) -> int:
        """Read up to ``len(buffer)`` bytes of the ``.log`` at ``position`` into ``buffer``."""
        if self._fd is None:
            raise UnreadableFileError("segment is closed", path=str(self.log_path))
        return os.preadv(self._fd, [buffer], position)

    def batch_headers(self, window_bytes: int = 8 * 1024 * 1024) -> npt.NDArray[np.int64]:
        """Every entry's header fields (the frame walk's matrix, ``seglog.kernels.codes``
        rows; positions in the file); records are not decoded.

        The file is mapped read-only one window of about ``window_bytes`` at a time, so only
        the pages holding batch headers are read and memory stays bounded whatever the
        segment size; a batch larger than the window gets a window of its own size.
        """
        size = self.size
        parts: list[npt.NDArray[np.int64]] = []
        if size == 0:
            return np.empty((FRAME_FIELDS, 0), dtype=np.int64)
        granularity = mmap.ALLOCATIONGRANULARITY
        position = 0
        want = window_bytes
        try:
            with fileops.open_read(self.log_path) as handle:
                # A file cut under the segment (shorter than the bytes it holds) is walked to
                # its real end: the batch there is torn, reported as corrupt below (Kafka's
                # CorruptRecordException), never a mapping past the end of the file.
                size = min(size, os.fstat(handle.fileno()).st_size)
                while position < size:
                    start = position - position % granularity
                    stop = min(size, position + want)
                    with mmap.mmap(
                        handle.fileno(), stop - start, access=mmap.ACCESS_READ, offset=start
                    ) as window:
                        data = np.frombuffer(window, dtype=np.uint8)
                        walk = walk_batches(data, start=position - start, check_offsets=False)
                        del data
                    frames = walk.frames
                    if frames.shape[1]:
                        frames[FRAME_POSITION] += start
                        parts.append(frames)
                    end = start + walk.end_position
                    if walk.end_code == END_TORN and stop < size:
                        if end == position:  # one batch larger than the window
                            need = int(walk.detail_a)
                            if need <= 0 or position + need > size:
                                raise CorruptRecordError(
                                    f"batch of {need} bytes runs past the end of the segment",
                                    position=position,
                                    path=str(self.log_path),
                                )
                            want = need
                            continue
                    elif walk.end_code == END_TORN:
                        raise CorruptRecordError(
                            f"batch of {int(walk.detail_a)} bytes is larger than the "
                            f"{size - end} bytes left in the {size}-byte file (the segment "
                            f"holds {self.size})",
                            position=end,
                            path=str(self.log_path),
                        )
                    elif walk.end_code != END_CLEAN:
                        raise CorruptRecordError(
                            f"batch framing broken (frame walk end code {walk.end_code})",
                            position=end,
                            path=str(self.log_path),
                        )
                    position = end
                    want = window_bytes
        except OSError as exc:
            raise UnreadableFileError(exc.strerror or str(exc), path=str(self.log_path)) from exc
        if not parts:
            return np.empty((FRAME_FIELDS, 0), dtype=np.int64)
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)

    def set_last_modified(self, mtime_ms: int) -> None:
        """Set the modification time of every file of the segment (the cleaner keeps the
        replaced group's last modification time on its output)."""
        for path in self.files():
            fileops.set_mtime_ms(path, mtime_ms)
