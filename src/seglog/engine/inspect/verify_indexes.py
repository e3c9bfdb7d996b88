"""Verify's index checks (rules O3-O5 and T3-T6 of ``tests/support/index_oracle.py``), fed the
batches of one segment as the scan reads them.

Index entries are read through the index objects' public lookups: with strictly increasing
keys (which the consistency check establishes first), a descending walk of
``lookup(previous key - 1)`` visits every entry exactly once, so no accessor to the index's
private arrays is needed.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from seglog.engine.inspect.verify_problems import (
    KIND_INDEX_ENTRY,
    KIND_TIME_INDEX_ENTRY,
    Problems,
)
from seglog.storage.index_file import OffsetIndexFile, TimeIndexFile
from seglog.storage.segment import LogSegment

Int64Array = npt.NDArray[np.int64]

INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)
OFFSET_INDEX_ENTRY_BYTES = 8
TIME_INDEX_ENTRY_BYTES = 12
NO_TIMESTAMP = -1


def _offset_index_entries(index: OffsetIndexFile) -> tuple[Int64Array, Int64Array]:
    """(offsets, positions) of every entry, by a descending walk of ``lookup``.

    Needs strictly increasing offsets (checked by ``consistency_problem`` before).
    """
    count = index.entries
    offsets = np.empty(count, dtype=np.int64)
    positions = np.empty(count, dtype=np.int64)
    probe = index.base_offset + INT32_MAX  # relative offsets are int32
    for slot in range(count - 1, -1, -1):
        offset, position = index.lookup(probe)
        offsets[slot] = offset
        positions[slot] = position
        probe = offset - 1
    return offsets, positions


def _time_index_entries(index: TimeIndexFile) -> tuple[Int64Array, Int64Array]:
    """(timestamps, offsets) of every entry, by a descending walk of ``lookup``.

    Needs strictly increasing timestamps (checked by ``consistency_problem`` before).
    """
    count = index.entries
    timestamps = np.empty(count, dtype=np.int64)
    offsets = np.empty(count, dtype=np.int64)
    probe = INT64_MAX
    for slot in range(count - 1, -1, -1):
        timestamp, offset = index.lookup(probe)
        timestamps[slot] = timestamp
        offsets[slot] = offset
        probe = timestamp - 1
    return timestamps, offsets


def _untrimmed_problem(index: OffsetIndexFile | TimeIndexFile, entry_bytes: int) -> str | None:
    """Why a closed segment's index file is not exactly its entries, or None.

    Kafka trims the indexes of every segment that stops being active, and reads
    ``file size / entry size`` entries from them; the entries end early only at a zero entry
    (a relative offset 0 at a slot above 0, the preallocated tail of a live segment).
    """
    size = index.file_size_bytes()
    expected = index.entries * entry_bytes
    if size == expected:
        return None
    return (
        f"the file is {size} bytes but {index.entries} entries of {entry_bytes} bytes were read "
        f"from it: a closed segment's index is trimmed to its entries, so the bytes from "
        f"{expected} on are damage (a zero relative offset there ends the entries early)"
    )


class OffsetIndexCheck:
    """Rules O3-O5 for one segment's ``.index``, fed the segment's batches chunk by chunk.

    Memory is a few arrays of the index's entry count, never one per batch.
    """

    def __init__(self, segment: LogSegment, problems: Problems, *, is_closed: bool) -> None:
        index = segment.offset_index
        self.path = index.path
        self.problems = problems
        trim = _untrimmed_problem(index, OFFSET_INDEX_ENTRY_BYTES) if is_closed else None
        if trim is not None:
            offset_bytes = index.entries * OFFSET_INDEX_ENTRY_BYTES
            problems.add(KIND_INDEX_ENTRY, self.path, offset_bytes, None, trim)
        problem = index.consistency_problem(segment.size)
        self.usable = problem is None
        if problem is not None:
            problems.add(KIND_INDEX_ENTRY, self.path, None, None, problem)
            self.offsets = self.positions = np.empty(0, dtype=np.int64)
        else:
            self.offsets, self.positions = _offset_index_entries(index)
        count = len(self.offsets)
        self.at_batch = np.zeros(count, dtype=np.bool_)
        self.batch_last = np.full(count, -1, dtype=np.int64)  # last offset of the batch there
        self.satisfied = np.zeros(count, dtype=np.bool_)

    def feed(self, positions: Int64Array, last_offsets: Int64Array) -> None:
        """Match a chunk's batches (in file order) with the entries."""
        count = len(self.offsets)
        if not count:
            return
        starts = np.searchsorted(self.positions, positions, side="left")
        clipped = np.minimum(starts, count - 1)
        hit = (starts < count) & (self.positions[clipped] == positions)
        self.at_batch[clipped[hit]] = True
        self.batch_last[clipped[hit]] = last_offsets[hit]
        # The entry owning a batch is the last one at or before it; the chunk an entry
        # starts runs to the next entry's position, and must end at the entry's offset.
        owner = np.searchsorted(self.positions, positions, side="right") - 1
        owned = owner >= 0
        owner_clipped = np.maximum(owner, 0)
        matched = owned & (self.offsets[owner_clipped] == last_offsets)
        self.satisfied[owner_clipped[matched]] = True

    def finish(self, checked_to: int, segment_end: int) -> None:
        """Report entries that proved wrong; entries at or past ``checked_to`` (where damage
        stopped the scan) cannot be judged and are skipped."""
        count = len(self.offsets)
        if not count:
            return
        chunk_end = np.append(self.positions[1:], segment_end)
        judged = self.positions < checked_to
        bad_start = judged & ~self.at_batch
        bad_offset = judged & self.at_batch & ~self.satisfied & (chunk_end <= checked_to)
        bad = np.flatnonzero(bad_start | bad_offset)
        for slot in bad[: self.problems.room(len(bad))].tolist():
            offset = int(self.offsets[slot])
            position = int(self.positions[slot])
            if not self.at_batch[slot]:
                why = f"position {position} is not the start of a batch"
            else:
                why = (
                    f"offset {offset} is not the last offset of a batch from position "
                    f"{position} up to the next entry's position {int(chunk_end[slot])} (the "
                    f"batch at {position} ends at offset {int(self.batch_last[slot])})"
                )
            self.problems.add(
                KIND_INDEX_ENTRY,
                self.path,
                slot * OFFSET_INDEX_ENTRY_BYTES,
                offset,
                f"entry {slot} (offset {offset}, position {position}): {why}",
            )


class TimeIndexCheck:
    """Rules T3-T6 for one segment's ``.timeindex``, fed the segment's batches chunk by chunk.

    An entry's offset must lie in a batch: Kafka 3.8+ (and seglog) write the batch's last
    offset (T5); older brokers wrote the offset of the record holding the max timestamp,
    inside the batch (Kafka 2.x files in the corpus do). Kafka's lookups accept both, and
    its dump tool flags the second, so verify accepts any offset of the batch.
    """

    def __init__(self, segment: LogSegment, problems: Problems, *, is_closed: bool) -> None:
        index = segment.time_index
        self.path = index.path
        self.problems = problems
        trim = _untrimmed_problem(index, TIME_INDEX_ENTRY_BYTES) if is_closed else None
        if trim is not None:
            time_bytes = index.entries * TIME_INDEX_ENTRY_BYTES
            problems.add(KIND_TIME_INDEX_ENTRY, self.path, time_bytes, None, trim)
        self.running_max = NO_TIMESTAMP  # Kafka's maxTimestampSoFar of an empty segment
        self.matched_to = INT64_MIN  # entries at or below this offset were matched already
        problem = index.consistency_problem(INT32_MAX)
        if problem is not None:
            problems.add(KIND_TIME_INDEX_ENTRY, self.path, None, None, problem)
            self.timestamps = self.offsets = np.empty(0, dtype=np.int64)
        else:
            self.timestamps, self.offsets = _time_index_entries(index)
        count = len(self.offsets)
        self.found = np.zeros(count, dtype=np.bool_)
        self.batch_last = np.full(count, -1, dtype=np.int64)
        self.batch_max = np.full(count, NO_TIMESTAMP, dtype=np.int64)
        self.max_before = np.full(count, NO_TIMESTAMP, dtype=np.int64)
        # Kafka never writes one offset twice (each entry's timestamp is a new max, reached
        # by one batch); a repeat would hide behind the first in the matching below.
        repeats = np.flatnonzero(np.diff(self.offsets) == 0) + 1
        self.repeated = np.zeros(count, dtype=np.bool_)
        self.repeated[repeats] = True

    def feed(
        self, first_offsets: Int64Array, last_offsets: Int64Array, max_timestamps: Int64Array
    ) -> None:
        """Match a chunk's batches (in file order) with the entries whose offset they hold."""
        running = np.maximum.accumulate(np.concatenate(([self.running_max], max_timestamps)))
        before = running[:-1]  # the segment's max over the batches before each batch
        self.running_max = int(running[-1])
        count = len(self.offsets)
        if not count:
            return
        chunk_last = int(last_offsets.max())
        low = int(np.searchsorted(self.offsets, self.matched_to, side="right"))
        high = int(np.searchsorted(self.offsets, chunk_last, side="right"))
        self.matched_to = max(self.matched_to, chunk_last)
        if low >= high:
            return
        slots = np.arange(low, high)
        wanted = self.offsets[low:high]
        batches = len(last_offsets)
        # The first batch ending at or after the entry's offset holds it if it starts at or
        # before it (batches are in offset order; disorder is reported by the offset checks).
        holder = np.minimum(np.searchsorted(last_offsets, wanted, side="left"), batches - 1)
        inside = (first_offsets[holder] <= wanted) & (wanted <= last_offsets[holder])
        matched, holder = slots[inside], holder[inside]
        self.found[matched] = True
        self.batch_last[matched] = last_offsets[holder]
        self.batch_max[matched] = max_timestamps[holder]
        self.max_before[matched] = before[holder]

    def finish(self, checked_to_offset: int | None) -> None:
        """Report entries that proved wrong; with damage in the segment, entries above the
        last offset read (``checked_to_offset``) cannot be judged and are skipped."""
        count = len(self.offsets)
        if not count:
            return
        judged = np.ones(count, dtype=np.bool_)
        if checked_to_offset is not None:
            judged = self.offsets <= checked_to_offset
        right = (
            self.found
            & ~self.repeated
            & (self.batch_max == self.timestamps)
            & (self.max_before < self.timestamps)
        )
        bad = np.flatnonzero(judged & ~right)
        for slot in bad[: self.problems.room(len(bad))].tolist():
            timestamp = int(self.timestamps[slot])
            offset = int(self.offsets[slot])
            if self.repeated[slot]:
                why = "the offset repeats the previous entry's"
            elif not self.found[slot]:
                why = f"offset {offset} is not in any batch of this segment"
            elif int(self.batch_max[slot]) != timestamp:
                why = (
                    f"the batch holding offset {offset} (ending at {int(self.batch_last[slot])}) "
                    f"has maxTimestamp {int(self.batch_max[slot])}"
                )
            else:
                why = (
                    f"the segment's running max timestamp was already {int(self.max_before[slot])}"
                    " before that batch (an entry names the first batch reaching a new max)"
                )
            self.problems.add(
                KIND_TIME_INDEX_ENTRY,
                self.path,
                slot * TIME_INDEX_ENTRY_BYTES,
                offset,
                f"entry {slot} (timestamp {timestamp}, offset {offset}): {why}",
            )


# --- the walk ----------------------------------------------------------------------------------
