"""A segment's ``.index`` and ``.timeindex`` files: sparse, preallocated, trimmed.

Entry layouts are in :mod:`seglog.format.index`. This module owns the files:

* **Entries live in memory** as two typed arrays (no Python object per entry). New entries
  reach the file in one ``pwrite`` at the next :meth:`_IndexFile.sync` (called by flush,
  trim, close and rename), not one syscall per entry: the append path stays cheap, and an
  index is always complete on disk before the recovery point passes its segment (a segment
  whose entries were lost in a crash is at or after the recovery point, so recovery
  rebuilds its index anyway).
  Searches are binary searches on the in-memory column (``bisect``), the same answer as
  Kafka's warm/cold binary search over its mmap.
* **Preallocation**: while the segment is active the file is ``max_index_bytes`` long,
  ``floor(segment.index.bytes / entry_bytes) * entry_bytes``; the unused tail is zeros (a
  sparse file, so it costs no disk). **Trimming** (roll, close, after recovery) truncates the
  file to exactly ``entries * entry_bytes``, which is what Kafka expects of every non-active
  segment: Kafka reads ``floor(file size / entry size)`` entries from an existing file.
* **Full**: the offset index when ``entries >= max_entries``; the time index when
  ``entries >= max_entries - 1`` (its last slot is kept for the roll's final entry).
* **Loading** reads the file once, lazily, on first use. A zero tail (a preallocated file of a
  crashed writer) ends the entries at the first entry ``i > 0`` whose relative offset is 0, as
  Kafka's dump tool does; recovery rebuilds such indexes anyway.
* ``persist=False`` keeps everything in memory and never touches the file: the read-only mode
  used to open a directory another process owns (a broker's, or the corpus).

Invariants (kept by :meth:`append` / :meth:`maybe_append`, violations are our bugs and raise
``CorruptIndexError`` naming the file): offset-index relative offsets strictly increase and
positions never decrease; time-index timestamps strictly increase and offsets never decrease.

Why this module is longer than the house's ~500 lines: the offset and time indexes share one
file life (preallocate, sync, trim, resize, rename, recovery checks) in a base class; each
subclass is short, and splitting them apart would separate a rule from the base it specializes.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import operator
import os
import struct
from array import array
from pathlib import Path

import numpy as np

from seglog.errors import CorruptIndexError, UnreadableFileError
from seglog.format.index import (
    OFFSET_INDEX_ENTRY_BYTES,
    TIME_INDEX_ENTRY_BYTES,
    sanity_check_offset_index,
    sanity_check_time_index,
)
from seglog.storage import fileops

INT32_MAX = (1 << 31) - 1
NO_TIMESTAMP = -1

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_OFFSET_DTYPE = np.dtype([("relative_offset", ">i4"), ("position", ">i4")])
_TIME_DTYPE = np.dtype([("timestamp", ">i8"), ("relative_offset", ">i4")])


@functools.lru_cache(maxsize=256)
def _packer(order: str, entry: str, count: int) -> struct.Struct:
    """A compiled struct for ``count`` entries of layout ``entry``."""
    return struct.Struct(order + entry * count)


def _interleave(first: list[int], second: list[int]) -> list[int]:
    """``[first[0], second[0], first[1], second[1], ...]`` (slice assignment, no loop)."""
    out = [0] * (2 * len(first))
    out[0::2] = first
    out[1::2] = second
    return out


def max_index_bytes(segment_index_bytes: int, entry_bytes: int) -> int:
    """``segment.index.bytes`` rounded down to a whole number of entries."""
    rounded = segment_index_bytes // entry_bytes * entry_bytes
    if rounded < entry_bytes:
        raise CorruptIndexError(
            f"segment.index.bytes {segment_index_bytes} cannot hold one {entry_bytes}-byte entry"
        )
    return rounded


def _zero_tail_end(relative_offsets: np.ndarray) -> int:
    """Entries before the first entry i > 0 whose relative offset is 0 (a zero tail)."""
    if len(relative_offsets) <= 1:
        return len(relative_offsets)
    zeros = np.flatnonzero(relative_offsets[1:] == 0)
    return int(zeros[0]) + 1 if len(zeros) else len(relative_offsets)


class _IndexFile:
    """The file half of an index: lazily loaded, written through, preallocated, trimmed."""

    entry_bytes: int = 0
    kind: str = ""

    def __init__(
        self, path: Path, base_offset: int, *, segment_index_bytes: int, persist: bool = True
    ) -> None:
        self.path = path
        self.base_offset = base_offset
        self.persist = persist
        self.max_index_bytes = max_index_bytes(segment_index_bytes, self.entry_bytes)
        self._fd: int | None = None
        self._loaded = False
        self._keys: array[int] = array("q")
        self._values: array[int] = array("q")
        self._written = 0  # entries already in the file
        self._pending = bytearray()  # packed entries from slot ``_written`` on
        self._loaded_file_bytes = 0  # length of the file when it was loaded

    # --- loading --------------------------------------------------------------------------
    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        try:
            # The entries: a preallocated file's zero tail is a hole, not read (it could only
            # hold zero entries, which end the entries anyway).
            data, self._loaded_file_bytes = fileops.read_leading_data(self.path)
        except FileNotFoundError:
            return  # Kafka creates index files lazily: missing reads as empty
        except OSError as exc:
            raise UnreadableFileError(exc.strerror or str(exc), path=str(self.path)) from exc
        self._load_entries(data)
        self._written = len(self._keys)

    def _load_entries(self, data: bytes) -> None:
        raise NotImplementedError

    @property
    def max_entries(self) -> int:
        """Entries the preallocated file can hold."""
        return self.max_index_bytes // self.entry_bytes

    @property
    def entries(self) -> int:
        """Number of entries."""
        if not self._loaded:
            self._ensure_loaded()
        return len(self._keys)

    @property
    def exists(self) -> bool:
        """True when the file is on disk (or, in memory-only mode, has been loaded)."""
        return self.path.exists()

    # --- file writes ----------------------------------------------------------------------
    def _open_for_write(self) -> int:
        if self._fd is None:
            self._fd = fileops.open_fd(self.path, os.O_RDWR | os.O_CREAT)
            if os.fstat(self._fd).st_size < self.max_index_bytes:
                fileops.truncate(self._fd, self.path, self.max_index_bytes)
        return self._fd

    def sync(self) -> None:
        """Write entries appended since the last sync to the file (one ``pwrite``)."""
        if self._pending:
            data = bytes(self._pending)
            position = self._written * self.entry_bytes
            fileops.pwrite(self._open_for_write(), self.path, data, position)
            self._written += len(self._pending) // self.entry_bytes
            self._pending.clear()

    def _cut_entries(self, keep: int) -> None:
        del self._keys[keep:]
        del self._values[keep:]
        if keep >= self._written:
            del self._pending[(keep - self._written) * self.entry_bytes :]
            return
        self._pending.clear()
        self._written = keep
        if self.persist and self.path.exists():
            fd = self._open_for_write()
            # Down then up again: the dropped entries become zeros, the file keeps its length.
            fileops.truncate(fd, self.path, keep * self.entry_bytes)
            fileops.truncate(fd, self.path, self.max_index_bytes)

    def create_preallocated(self) -> None:
        """Create (or extend) the file to its preallocated length; the active segment's state."""
        self._ensure_loaded()
        if self.persist:
            self._open_for_write()

    def reset(self) -> None:
        """Drop every entry (recovery rebuilds the index from the log)."""
        self._loaded = True
        del self._keys[:]
        del self._values[:]
        self._pending.clear()
        self._written = 0
        if self.persist:
            fd = self._open_for_write()
            fileops.truncate(fd, self.path, 0)
            fileops.truncate(fd, self.path, self.max_index_bytes)

    def trim(self) -> None:
        """Cut the file to exactly its entries (roll, close, after recovery)."""
        self._ensure_loaded()
        if not self.persist:
            return
        self.sync()
        fd = self._open_for_write()
        fileops.truncate(fd, self.path, len(self._keys) * self.entry_bytes)

    def resize_to_max(self) -> None:
        """Extend the file back to its preallocated length (the segment is active again)."""
        self._ensure_loaded()
        if self.persist:
            fd = self._open_for_write()
            fileops.truncate(fd, self.path, self.max_index_bytes)

    def flush(self) -> None:
        """Write pending entries and fsync the file, if it was written."""
        self.sync()
        if self._fd is not None:
            fileops.fsync(self._fd, self.path)

    def close(self) -> None:
        """Write pending entries and close the handle (entries stay in memory for reads)."""
        self.sync()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def release(self) -> None:
        """Close the handle without writing pending entries (after a failed write: the file
        is left to recovery); errors are ignored."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def rename_to(self, path: Path) -> None:
        """Rename the file (when present) and keep using it under the new name."""
        self.sync()
        if self.persist and self.path.exists():
            fileops.replace(self.path, path)
        self.path = path

    def delete_file(self) -> None:
        """Close and unlink the file (missing is fine)."""
        self._pending.clear()
        self.close()
        if self.persist:
            fileops.unlink(self.path, missing_ok=True)

    def file_size_bytes(self) -> int:
        """Size of the file on disk (0 when missing)."""
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def _floor_slot(self, key: int) -> int:
        """Slot of the largest entry whose key is <= ``key``, or -1."""
        self._ensure_loaded()
        return bisect.bisect_right(self._keys, key) - 1

    def _length_problem(self) -> str | None:
        """Why the file as loaded cannot be an index: a length that is not a whole number of
        entries (Kafka's sanity check refuses it; a cut file also lost entries)."""
        self._ensure_loaded()
        if self._loaded_file_bytes % self.entry_bytes:
            return (
                f"file length {self._loaded_file_bytes} is not a multiple of the "
                f"{self.entry_bytes}-byte entry"
            )
        return None

    def _checked_bytes(self) -> bytes | None:
        """The bytes Kafka's ``sanityCheck`` reads, or None when there is no file.

        A **live** index (held open for writes by this object: the active segment's,
        preallocated to ``max_index_bytes``) is checked like Kafka's mmapped index, whose
        entry count is tracked in memory: its entries (the file's first ``entries`` slots,
        whatever they hold on disk now) and the file's length; the zero slots after them are
        free space, not entries (checking them would call every live time index corrupt: a
        zero timestamp is below the first). Any other file is checked whole, as Kafka checks
        a file it opens: every slot of it counts as an entry.
        """
        self.sync()
        if not self.persist or not self.path.exists():
            return None
        data = fileops.read_bytes(self.path)
        if self._fd is None:
            return data
        if len(data) % self.entry_bytes:
            raise CorruptIndexError(
                f"corrupt {self.kind}: found {len(data)} bytes which is not a multiple of "
                f"{self.entry_bytes}",
                path=str(self.path),
            )
        return data[: len(self._keys) * self.entry_bytes]

    def _corrupt(self, reason: str) -> CorruptIndexError:
        return CorruptIndexError(
            reason, position=len(self._keys) * self.entry_bytes, path=str(self.path)
        )


class OffsetIndexFile(_IndexFile):
    """``.index``: absolute offset (a batch's last offset) -> byte position of a batch start."""

    entry_bytes = OFFSET_INDEX_ENTRY_BYTES
    kind = "offset index"

    def _load_entries(self, data: bytes) -> None:
        count = len(data) // self.entry_bytes
        entries = np.frombuffer(data, dtype=_OFFSET_DTYPE, count=count)
        count = _zero_tail_end(entries["relative_offset"])
        self._keys = array("q", entries["relative_offset"][:count].astype(np.int64).tobytes())
        self._values = array("q", entries["position"][:count].astype(np.int64).tobytes())

    @property
    def is_full(self) -> bool:
        """True when no entry fits any more."""
        return self.entries >= self.max_entries

    def last_entry(self) -> tuple[int, int]:
        """(offset, position) of the last entry, or (base offset, 0) when empty."""
        self._ensure_loaded()
        if not self._keys:
            return self.base_offset, 0
        return self.base_offset + self._keys[-1], self._values[-1]

    def append(self, offset: int, position: int) -> None:
        """Add an entry; the offset must be above the last entry's (Kafka's rule)."""
        if not self._loaded:
            self._ensure_loaded()
        keys, values = self._keys, self._values
        count = len(keys)
        if count >= self.max_index_bytes // OFFSET_INDEX_ENTRY_BYTES:
            raise self._corrupt(f"cannot append offset {offset}: the index is full")
        relative = offset - self.base_offset
        if not 0 <= relative <= INT32_MAX:
            raise self._corrupt(f"offset {offset} is not within int32 of base {self.base_offset}")
        if count and relative <= keys[-1]:
            raise self._corrupt(
                f"offset {offset} is not above the last entry's {self.base_offset + keys[-1]}"
            )
        if count and position < values[-1]:
            raise self._corrupt(f"position {position} is below the last entry's {values[-1]}")
        if self.persist:
            self._pending += _OFFSET_ENTRY.pack(relative, position)
        keys.append(relative)
        values.append(position)

    def extend(self, offsets: list[int], positions: list[int]) -> None:
        """Append many entries at once (one pack); the same rules as :meth:`append`, checked
        on the whole run: offsets strictly increasing, positions non-decreasing, room left."""
        if len(offsets) == 1:
            self.append(offsets[0], positions[0])  # the common case, one entry: no lists
            return
        if not self._loaded:
            self._ensure_loaded()
        keys, values = self._keys, self._values
        relative = [offset - self.base_offset for offset in offsets]
        previous_key = keys[-1] if keys else -1
        previous_position = values[-1] if values else 0
        if len(keys) + len(relative) > self.max_entries:
            raise self._corrupt(f"cannot append {len(relative)} entries: the index would overflow")
        if len(relative) != len(positions):
            raise ValueError("offsets and positions differ in length")
        # The run's order checked in C (map over adjacent pairs); only a run that fails is
        # walked again in Python, to name the entry.
        in_order = (
            previous_key < relative[0]
            and relative[-1] <= INT32_MAX
            and previous_position <= positions[0]
            and all(map(operator.lt, relative, relative[1:]))
            and all(map(operator.le, positions, positions[1:]))
        )
        for key, position in () if in_order else zip(relative, positions, strict=True):
            if key <= previous_key or position < previous_position or key > INT32_MAX:
                raise self._corrupt(
                    f"entry (offset {key + self.base_offset}, position {position}) does not "
                    f"follow (offset {previous_key + self.base_offset}, position "
                    f"{previous_position})"
                )
            previous_key, previous_position = key, position
        if self.persist:
            self._pending += _packer(">", "ii", len(relative)).pack(
                *_interleave(relative, positions)
            )
        keys.extend(relative)
        values.extend(positions)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry <= ``offset``; (base, 0) if none."""
        slot = self._floor_slot(offset - self.base_offset)
        if slot < 0:
            return self.base_offset, 0
        return self.base_offset + self._keys[slot], self._values[slot]

    def floor_entry(self, max_offset: int, max_position: int) -> tuple[int, int]:
        """(offset, position) of the last entry whose offset is <= ``max_offset`` and whose
        position is <= ``max_position`` (both columns only grow, so that is the entry before
        the earlier of the two limits); (base, 0) if none. Safe beside a concurrent append."""
        self._ensure_loaded()
        keys, values = self._keys, self._values
        slot = min(
            bisect.bisect_right(keys, max_offset - self.base_offset),
            bisect.bisect_right(values, max_position),
            len(keys),
            len(values),
        )
        if slot <= 0:
            return self.base_offset, 0
        return self.base_offset + keys[slot - 1], values[slot - 1]

    def truncate_to(self, offset: int) -> None:
        """Drop entries at or above ``offset`` (an entry equal to it goes too)."""
        slot = self._floor_slot(offset - self.base_offset)
        if slot < 0:
            keep = 0
        elif self._keys[slot] == offset - self.base_offset:
            keep = slot
        else:
            keep = slot + 1
        self._cut_entries(keep)

    def consistency_problem(
        self, log_size: int, next_relative_offset: int = INT32_MAX + 1
    ) -> str | None:
        """Why these entries cannot belong to a ``.log`` of ``log_size`` bytes whose offsets
        end before ``next_relative_offset`` (the next segment's base, relative), or None.

        Checked in memory, O(entries), no read of the ``.log``: the file is a whole number of
        entries; relative offsets are >= 0, strictly increase and stay below
        ``next_relative_offset``; positions strictly increase (two entries name two batches,
        which start at two positions) and lie inside the log. A damaged or foreign index is
        rebuilt at load instead of sending lookups to wrong positions (Kafka trusts
        unrecovered indexes; seglog does not). That an entry's position is the start of the
        batch ending at its offset needs the ``.log``: :class:`~seglog.storage.segment.
        LogSegment` checks it on every use of an entry (one header it reads anyway)."""
        if (problem := self._length_problem()) is not None:
            return problem
        if not self._keys:
            return None
        keys = np.frombuffer(self._keys, dtype=np.int64)
        values = np.frombuffer(self._values, dtype=np.int64)
        if keys[0] < 0 or (len(keys) > 1 and np.any(keys[1:] <= keys[:-1])):
            return "offsets are not strictly increasing from the base offset"
        if keys[-1] >= next_relative_offset:
            return (
                f"offset {int(keys[-1]) + self.base_offset} is at or past the next segment's "
                f"base offset {next_relative_offset + self.base_offset}"
            )
        if values[0] < 0 or (len(values) > 1 and np.any(values[1:] <= values[:-1])):
            return "positions are not strictly increasing"
        if values[-1] >= max(log_size, 1):
            return f"position {int(values[-1])} is past the end of the {log_size}-byte log"
        return None

    def sanity_check(self) -> None:
        """Kafka's check of the file on disk; raises ``CorruptIndexError``.

        See :meth:`_IndexFile._checked_bytes` for which slots a live index checks."""
        data = self._checked_bytes()
        if data is not None:
            sanity_check_offset_index(data, self.base_offset, path=str(self.path))


class TimeIndexFile(_IndexFile):
    """``.timeindex``: largest timestamp so far -> the last offset of the batch that had it."""

    entry_bytes = TIME_INDEX_ENTRY_BYTES
    kind = "time index"

    def _load_entries(self, data: bytes) -> None:
        count = len(data) // self.entry_bytes
        entries = np.frombuffer(data, dtype=_TIME_DTYPE, count=count)
        count = _zero_tail_end(entries["relative_offset"])
        self._keys = array("q", entries["timestamp"][:count].astype(np.int64).tobytes())
        self._values = array("q", entries["relative_offset"][:count].astype(np.int64).tobytes())

    @property
    def is_full(self) -> bool:
        """True when only the reserved last slot is left."""
        return self.entries >= self.max_entries - 1

    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry, or (-1, base offset) when empty."""
        self._ensure_loaded()
        if not self._keys:
            return NO_TIMESTAMP, self.base_offset
        return self._keys[-1], self.base_offset + self._values[-1]

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> bool:
        """Add (timestamp, offset) if the timestamp is above the last entry's.

        Returns whether an entry was written. ``skip_full_check`` lets the roll's final
        entry use the reserved last slot.
        """
        if not self._loaded:
            self._ensure_loaded()
        keys, values = self._keys, self._values
        count = len(keys)
        max_entries = self.max_index_bytes // TIME_INDEX_ENTRY_BYTES
        if not skip_full_check and count >= max_entries - 1:
            raise self._corrupt(f"cannot append timestamp {timestamp}: the time index is full")
        relative = offset - self.base_offset
        if count:
            last_ts = keys[-1]
            if relative < values[-1]:
                raise self._corrupt(
                    f"offset {offset} is below the last entry's {self.base_offset + values[-1]}"
                )
            if timestamp < last_ts:
                raise self._corrupt(f"timestamp {timestamp} is below the last entry's {last_ts}")
            if timestamp == last_ts:
                return False
        elif timestamp <= NO_TIMESTAMP:
            return False
        if count >= max_entries:
            raise self._corrupt("the time index has no slot left, not even the reserved one")
        if not 0 <= relative <= INT32_MAX:
            raise self._corrupt(f"offset {offset} is not within int32 of base {self.base_offset}")
        if self.persist:
            self._pending += _TIME_ENTRY.pack(timestamp, relative)
        keys.append(timestamp)
        values.append(relative)
        return True

    def extend(self, timestamps: list[int], offsets: list[int]) -> None:
        """Append many entries at once (one pack). Every timestamp must be above the previous
        entry's (callers pass only growing ones) and offsets must not decrease; the reserved
        last slot stays free."""
        if not self._loaded:
            self._ensure_loaded()
        if len(timestamps) == 1 and (not self._keys or timestamps[0] > self._keys[-1]):
            self.maybe_append(timestamps[0], offsets[0])  # the common case, one entry
            return
        keys, values = self._keys, self._values
        relative = [offset - self.base_offset for offset in offsets]
        previous_ts = keys[-1] if keys else NO_TIMESTAMP
        previous_key = values[-1] if values else 0
        if len(keys) + len(relative) > self.max_entries - 1:
            raise self._corrupt(f"cannot append {len(relative)} entries: the index would overflow")
        if len(relative) != len(timestamps):
            raise ValueError("timestamps and offsets differ in length")
        in_order = (  # as in OffsetIndexFile.extend: C first, Python only to name a bad entry
            previous_ts < timestamps[0]
            and previous_key <= relative[0]
            and relative[-1] <= INT32_MAX
            and all(map(operator.lt, timestamps, timestamps[1:]))
            and all(map(operator.le, relative, relative[1:]))
        )
        for timestamp, key in () if in_order else zip(timestamps, relative, strict=True):
            if timestamp <= previous_ts or key < previous_key or not 0 <= key <= INT32_MAX:
                raise self._corrupt(
                    f"entry (timestamp {timestamp}, offset {key + self.base_offset}) does not "
                    f"follow (timestamp {previous_ts}, offset {previous_key + self.base_offset})"
                )
            previous_ts, previous_key = timestamp, key
        if self.persist:
            self._pending += _packer(">", "qi", len(relative)).pack(
                *_interleave(timestamps, relative)
            )
        keys.extend(timestamps)
        values.extend(relative)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the largest entry <= ``timestamp``; (-1, base) if none."""
        slot = self._floor_slot(timestamp)
        if slot < 0:
            return NO_TIMESTAMP, self.base_offset
        return self._keys[slot], self.base_offset + self._values[slot]

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose offset is at or above ``offset`` (Kafka's ``truncateTo``)."""
        self._ensure_loaded()
        relative = offset - self.base_offset
        slot = bisect.bisect_right(self._values, relative) - 1
        if slot < 0:
            keep = 0
        elif self._values[slot] == relative:
            keep = bisect.bisect_left(self._values, relative)
        else:
            keep = slot + 1
        self._cut_entries(keep)

    def consistency_problem(self, last_relative_offset: int) -> str | None:
        """Why these entries are impossible for a segment whose last offset is at most
        ``last_relative_offset`` past its base, or None: the file is a whole number of
        entries (a cut time index lost its last entries, so the segment's max timestamp, read
        from the last entry, would be too small), timestamps strictly increase, offsets do not
        decrease and stay within the segment (see the offset index's check). Whether an entry
        holds for the ``.log`` is checked by the segment when it uses one."""
        if (problem := self._length_problem()) is not None:
            return problem
        if not self._keys:
            return None
        stamps = np.frombuffer(self._keys, dtype=np.int64)
        offsets = np.frombuffer(self._values, dtype=np.int64)
        if len(stamps) > 1 and np.any(stamps[1:] <= stamps[:-1]):
            return "timestamps are not strictly increasing"
        if offsets[0] < 0 or (len(offsets) > 1 and np.any(offsets[1:] < offsets[:-1])):
            return "offsets go backwards"
        if offsets[-1] > last_relative_offset:
            return f"offset {int(offsets[-1]) + self.base_offset} is past the segment's last"
        return None

    def sanity_check(self) -> None:
        """Kafka's check of the file on disk (``TimeIndexTest.testSanityCheck``):
        the last entry's timestamp is not below the first's, its offset not below the base,
        and the file is a whole number of entries; raises ``CorruptIndexError``.

        See :meth:`_IndexFile._checked_bytes` for which slots a live index checks."""
        data = self._checked_bytes()
        if data is not None:
            sanity_check_time_index(data, self.base_offset, path=str(self.path))
