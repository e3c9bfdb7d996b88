"""Checking a partition log against Kafka's on-disk invariants: :func:`verify_log`.

Verify only reads. It walks every segment of a :class:`~seglog.engine.log.Log` through its
:class:`~seglog.storage.segment.LogSegment` in bounded chunks (``chunk_bytes``, 8 MiB by
default; a chunk grows only to hold one batch larger than it), decodes each chunk with
:func:`~seglog.format.columnar.scan_columns` (CRCs checked), and carries on from the last
whole batch. It never raises for damage: each broken invariant becomes a
:class:`VerifyProblem` naming the file, the byte position (in that file) and the offset where
they are known. At most ``max_problems`` are kept; the rest are only counted.

Checks and the ``kind`` each reports:

1. **Framing and checksums.** ``crc``: a batch (or legacy message) whose stored checksum does
   not match its bytes. ``corrupt``: bytes that cannot be an entry (impossible size, unknown
   magic, zero fill, a malformed record inside a CRC-valid batch). ``torn-tail``: an entry
   running past the end of its segment (what a crash leaves on the active segment; in a
   closed segment it is damage too). The rest of that segment cannot be framed and is not
   checked (the message says which bytes); the next segment is checked as usual.
2. **Offsets.** ``offset-order``: a batch whose first offset is not above the previous
   batch's last offset (across segments too). ``offset-range``: a batch outside
   ``[segment base offset, next segment's base offset)``, or too far above its base for a
   4-byte relative offset. ``epoch-order``: a v2 batch's partitionLeaderEpoch (outside the
   CRC) below -1 or below an earlier batch's: a log's epochs never go down, so one of the two
   is damaged. ``log-end-offset``: the last batch's offset + 1 (the active
   segment's base offset when it is empty) differs from the log end offset.
3. **Indexes** (rules O3-O5 and T3-T6 of ``tests/support/index_oracle.py``).
   ``index-entry``: the ``.index`` entries are not increasing or point past the log
   (:meth:`~seglog.storage.index_file.OffsetIndexFile.consistency_problem`), or an entry's
   position is not the start of a batch, or its offset is not the last offset of a batch
   at or after that position and before the next entry's position (one append chunk).
   ``time-index-entry``: timestamps not strictly increasing, an offset in no batch of the
   segment, or a timestamp that is not the maxTimestamp of the batch holding the offset and
   the first time the segment's running max reached it (Kafka only moves the max on ``>``).
   Kafka 3.8+ and seglog write the batch's last offset; older brokers wrote the offset of
   the record holding the max timestamp, inside the batch, so any offset of the batch is
   accepted (Kafka's lookups accept both).
4. **Compaction** (only when ``log.config.is_compacted`` and ``cleaner_checkpoint`` is
   given; control batches are never judged by key).
   ``duplicate-key``: a key found twice among data records below the checkpoint (each later
   occurrence is reported, naming the earlier offset). ``tombstone-without-horizon``: a
   tombstone (null value, non-null key) below the checkpoint in a v2 batch without the
   delete-horizon attribute bit (0x40): the round that kept it stamps one (KIP-534, Kafka
   3.1+; logs cleaned by older Kafka have none). ``expired-tombstone``: with
   ``last_clean_ms``, a tombstone whose batch horizon (its base timestamp field) is
   ``<= last_clean_ms``: that round should have removed it. A horizon of exactly
   ``last_clean_ms + delete.retention.ms`` is the one that round stamped, so it is not
   expired even when ``delete.retention.ms`` is 0.

   Duplicate keys are found from the keys' 128-bit SipHash (the cleaner's own key hash,
   :meth:`seglog.core.offset_map.OffsetMap.hash_columns`, one numba call per chunk), kept in
   numpy arrays (two uint64 columns plus the int64 offset: 24 bytes per keyed record below the
   checkpoint, rather than about 100 for a Python set of ``bytes``) and sorted once at the
   end (``np.lexsort``). A collision of 128-bit hashes is not a practical concern.
5. **Gaps** (logs that are not compacted). ``offset-gap``: a closed segment whose last batch
   ends below the next segment's base offset. Segments of a delete-policy log follow on
   without a gap (a roll starts the new segment at the log end offset), so the offsets in
   between are records lost, e.g. a ``.log`` cut at a batch boundary; a compacted log has
   such gaps by design and is not checked (nor is a log that was compacted before its
   policy became ``delete``, which the message mentions).
6. **What opening the log found** (read-only logs only). A read-only open repairs in memory
   and leaves the files as they are, so what it repaired is still on disk and is reported:
   a segment recovery cut short is scanned up to its size on disk (the damage is then found
   by check 1, at its exact position); an index rebuilt because it contradicted its log is
   ``index-entry``; a segment left out after a cut is ``dropped-segment``; records the load
   found lost (:attr:`~seglog.storage.loader.LoadReport.lost_ranges`: a segment cut, or a
   ``.log`` that ends before the offsets its index names) are ``records-lost``, naming the
   offset range (a gap reported so is not reported again as ``offset-gap``). A writable open
   already repaired the files, so its load report is history and is not repeated.

Index entries are read through the index objects' public lookups: with strictly increasing
keys (which the consistency check establishes first), a descending walk of
``lookup(previous key - 1)`` visits every entry exactly once, so no accessor to the index's
private arrays is needed. Verify expects a quiescent log (the CLI opens the data dirs
read-only); appends during a verify can make the log end offset check disagree.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from seglog.core.offset_map import OffsetMap
from seglog.engine.log import Log
from seglog.errors import CorruptRecordError, SeglogError
from seglog.format.batch import DELETE_HORIZON_FLAG_MASK, LOG_OVERHEAD, MAGIC_V2
from seglog.format.columnar import BatchColumns, RecordColumns, scan_columns
from seglog.format.crc import crc32_ieee, crc32c
from seglog.format.names import LOG_SUFFIX, TIME_INDEX_SUFFIX
from seglog.format.reader import EndKind, ReadEnd
from seglog.format.topic_names import TopicPartition
from seglog.storage.index_file import OffsetIndexFile, TimeIndexFile
from seglog.storage.segment import LogSegment, segment_path

Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]

CHUNK_BYTES_DEFAULT = 8 * 1024 * 1024
MAX_PROBLEMS_DEFAULT = 1000
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
OFFSET_INDEX_ENTRY_BYTES = 8
TIME_INDEX_ENTRY_BYTES = 12
NO_TIMESTAMP = -1

KIND_CRC = "crc"
KIND_CORRUPT = "corrupt"
KIND_TORN_TAIL = "torn-tail"
KIND_OFFSET_ORDER = "offset-order"
KIND_EPOCH_ORDER = "epoch-order"
KIND_OFFSET_RANGE = "offset-range"
KIND_LOG_END_OFFSET = "log-end-offset"
KIND_INDEX_ENTRY = "index-entry"
KIND_TIME_INDEX_ENTRY = "time-index-entry"
KIND_DROPPED_SEGMENT = "dropped-segment"
KIND_OFFSET_GAP = "offset-gap"
KIND_RECORDS_LOST = "records-lost"
KIND_DUPLICATE_KEY = "duplicate-key"
KIND_TOMBSTONE_WITHOUT_HORIZON = "tombstone-without-horizon"
KIND_EXPIRED_TOMBSTONE = "expired-tombstone"

# Bytes of an entry read to tell a checksum failure from other damage.
_V2_CRC_AT = 17
_V2_CRC_START = 21
_LEGACY_CRC_AT = 12
_LEGACY_CRC_START = 16
_MAGIC_AT = 16


@dataclass(frozen=True, slots=True)
class VerifyProblem:
    """One broken invariant: a stable ``kind`` code, the file, and where in it."""

    kind: str
    path: str
    position: int | None  # byte position in ``path`` (a batch start, or an index entry)
    offset: int | None
    message: str


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What :func:`verify_log` checked in one partition and what it found."""

    topic_partition: TopicPartition
    segments_checked: int
    batches_checked: int
    records_checked: int
    bytes_checked: int
    problems: tuple[VerifyProblem, ...]
    problems_omitted: int = 0  # found beyond ``max_problems``: counted, not kept

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems and not self.problems_omitted


def verify_log(
    log: Log,
    *,
    cleaner_checkpoint: int | None = None,
    last_clean_ms: int | None = None,
    chunk_bytes: int = CHUNK_BYTES_DEFAULT,
    max_problems: int = MAX_PROBLEMS_DEFAULT,
) -> VerifyReport:
    """Check every segment, index and (for a compacted log) key of ``log``; see the module."""
    if chunk_bytes < LOG_OVERHEAD:
        raise ValueError(f"chunk_bytes {chunk_bytes} cannot hold an entry header")
    if max_problems < 1:
        raise ValueError(f"max_problems must be >= 1, got {max_problems}")
    return _Verifier(log, cleaner_checkpoint, last_clean_ms, chunk_bytes, max_problems).run()


# --- problems ------------------------------------------------------------------------------------


class _Problems:
    """The problems found so far, at most ``limit`` kept (the rest counted)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept: list[VerifyProblem] = []
        self.omitted = 0

    def room(self, wanted: int) -> int:
        """How many of ``wanted`` new problems to build; the rest are counted as omitted."""
        free = max(0, self.limit - len(self.kept))
        taken = min(free, wanted)
        self.omitted += wanted - taken
        return taken

    def add(
        self, kind: str, path: Path | str, position: int | None, offset: int | None, message: str
    ) -> None:
        """Keep one problem (or count it when the limit is reached)."""
        if self.room(1):
            self.kept.append(VerifyProblem(kind, str(path), position, offset, message))


def _damage_kind(buf: bytes, at: int, end: ReadEnd) -> str:
    """``crc`` when the entry at ``buf[at:]`` is framed whole and its checksum is wrong."""
    if end.kind is EndKind.TORN_TAIL:
        return KIND_TORN_TAIL
    if len(buf) - at < LOG_OVERHEAD + 5:
        return KIND_CORRUPT
    size = int.from_bytes(buf[at + 8 : at + 12], "big", signed=True)
    stop = at + LOG_OVERHEAD + size
    if size <= 0 or stop > len(buf):
        return KIND_CORRUPT
    magic = buf[at + _MAGIC_AT]
    if magic == MAGIC_V2 and stop >= at + _V2_CRC_START:
        stored = int.from_bytes(buf[at + _V2_CRC_AT : at + _V2_CRC_AT + 4], "big")
        return KIND_CRC if crc32c(buf[at + _V2_CRC_START : stop]) != stored else KIND_CORRUPT
    if magic in (0, 1):
        stored = int.from_bytes(buf[at + _LEGACY_CRC_AT : at + _LEGACY_CRC_AT + 4], "big")
        return (
            KIND_CRC if crc32_ieee(buf[at + _LEGACY_CRC_START : stop]) != stored else KIND_CORRUPT
        )
    return KIND_CORRUPT


# --- per-segment index state ---------------------------------------------------------------------


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


class _OffsetIndexCheck:
    """Rules O3-O5 for one segment's ``.index``, fed the segment's batches chunk by chunk.

    Memory is a few arrays of the index's entry count, never one per batch.
    """

    def __init__(self, segment: LogSegment, problems: _Problems, *, is_closed: bool) -> None:
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


class _TimeIndexCheck:
    """Rules T3-T6 for one segment's ``.timeindex``, fed the segment's batches chunk by chunk.

    An entry's offset must lie in a batch: Kafka 3.8+ (and seglog) write the batch's last
    offset (T5); older brokers wrote the offset of the record holding the max timestamp,
    inside the batch (Kafka 2.x files in the corpus do). Kafka's lookups accept both, and
    its dump tool flags the second, so verify accepts any offset of the batch.
    """

    def __init__(self, segment: LogSegment, problems: _Problems, *, is_closed: bool) -> None:
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


@dataclass(slots=True)
class _Totals:
    segments: int = 0
    batches: int = 0
    records: int = 0
    bytes: int = 0


class _Verifier:
    """One run of :func:`verify_log`."""

    def __init__(
        self,
        log: Log,
        cleaner_checkpoint: int | None,
        last_clean_ms: int | None,
        chunk_bytes: int,
        max_problems: int,
    ) -> None:
        self.log = log
        self.chunk_bytes = chunk_bytes
        self.problems = _Problems(max_problems)
        self.totals = _Totals()
        self.key_checkpoint = cleaner_checkpoint if log.config.is_compacted else None
        self.last_clean_ms = last_clean_ms
        self.delete_retention_ms = log.config.delete_retention_ms
        self.previous_last_offset = INT64_MIN  # last offset of the previous batch read
        self.previous_epoch = -1  # the highest partitionLeaderEpoch read so far
        self.key_hashes: list[UInt64Array] = []  # (n, 2) hashes of keys below the checkpoint
        # The smallest offset map: only its key hash is used (one random key per verify run).
        self.hasher = OffsetMap(2 * 24, 1.0)
        self.key_offsets: list[Int64Array] = []
        self.rebuilt_in_memory: set[int] = set()  # segments a read-only open recovered
        self.reported_lost: set[tuple[str, int]] = set()  # (file name, first offset) reported

    def run(self) -> VerifyReport:
        """Every check, in segment order; the report."""
        log = self.log
        segments = log.segments
        log_end_offset = log.log_end_offset
        size_on_disk = self._check_load_report()
        active_last: int | None = None
        active_complete = False
        for i, segment in enumerate(segments):
            next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
            scan_end = max(segment.size, size_on_disk.get(segment.base_offset, 0))
            active_last, active_complete = self._check_segment(segment, next_base, scan_end)
            if next_base is not None and active_complete and not log.config.is_compacted:
                self._check_gap(segment, active_last, next_base)
        if segments and active_complete:
            active = segments[-1]
            expected = active.base_offset if active_last is None else active_last + 1
            if expected != log_end_offset:
                self.problems.add(
                    KIND_LOG_END_OFFSET,
                    active.log_path,
                    None,
                    log_end_offset,
                    f"the log end offset is {log_end_offset} but the active segment "
                    + (
                        f"ends at offset {active_last}"
                        if active_last is not None
                        else f"is empty at base offset {active.base_offset}"
                    ),
                )
        for base in self._dropped_after_a_cut():
            self.problems.add(
                KIND_DROPPED_SEGMENT,
                segment_path(log.directory, base, LOG_SUFFIX),
                None,
                base,
                "left out of the log when it was opened, after a damaged segment before it "
                "(its offsets would not follow on); not checked",
            )
        if not log.writable:
            for lost in log.load_report.lost_ranges:
                self.problems.add(
                    KIND_RECORDS_LOST,
                    log.directory / lost.file,
                    None,
                    lost.first_offset,
                    f"{lost} (found when the log was opened; the files are unchanged)",
                )
        if self.key_checkpoint is not None:
            self._check_duplicate_keys(segments)
        totals = self.totals
        return VerifyReport(
            log.topic_partition,
            totals.segments,
            totals.batches,
            totals.records,
            totals.bytes,
            tuple(self.problems.kept),
            self.problems.omitted,
        )

    def _check_gap(self, segment: LogSegment, last_offset: int | None, next_base: int) -> None:
        """Check 5: a closed segment of a log that is not compacted ends right below the next."""
        end = segment.base_offset if last_offset is None else last_offset + 1
        if end >= next_base or (segment.log_path.name, end) in self.reported_lost:
            return
        self.problems.add(
            KIND_OFFSET_GAP,
            segment.log_path,
            segment.size,
            end,
            f"offsets {end}-{next_base - 1} are in no segment: the segment ends there and the "
            f"next one starts at {next_base}; records were lost (a delete-policy log has no "
            "gaps, unless it was compacted before its cleanup.policy became delete)",
        )

    def _dropped_after_a_cut(self) -> list[int]:
        """Segments a read-only open left out because a segment before them was cut (not
        those below a checkpointed log start offset, which Kafka drops too)."""
        report = self.log.load_report
        if self.log.writable or not any(r.truncated_bytes for r in report.recovered):
            return []
        return report.dropped_segments

    def _check_load_report(self) -> dict[int, int]:
        """Problems a read-only open repaired in memory only; returns each segment cut in
        memory with its size on disk (check 5 of the module docstring)."""
        log = self.log
        if log.writable:
            return {}
        report = log.load_report
        self.rebuilt_in_memory = {r.base_offset for r in report.recovered}
        for text in report.rebuilt_indexes:
            name, _, reason = text.partition(": ")
            self.problems.add(
                KIND_TIME_INDEX_ENTRY if name.endswith(TIME_INDEX_SUFFIX) else KIND_INDEX_ENTRY,
                log.directory / name,
                None,
                None,
                f"{reason}: the index contradicts its log (rebuilt in memory when the log was "
                "opened; the file is unchanged)",
            )
        self.reported_lost = {(lost.file, lost.first_offset) for lost in report.lost_ranges}
        return {
            r.base_offset: r.valid_bytes + r.truncated_bytes
            for r in report.recovered
            if r.truncated_bytes
        }

    def _check_segment(
        self, segment: LogSegment, next_base: int | None, scan_end: int
    ) -> tuple[int | None, bool]:
        """Checks 1-4 over one segment; returns (its last offset read, read to the end?)."""
        self.totals.segments += 1
        # The indexes of a closed segment must be trimmed files; those a read-only open rebuilt
        # in memory are not the files' entries, so their files are not judged by size.
        is_closed = next_base is not None and segment.base_offset not in self.rebuilt_in_memory
        offset_index = _OffsetIndexCheck(segment, self.problems, is_closed=is_closed)
        time_index = _TimeIndexCheck(segment, self.problems, is_closed=is_closed)
        path = segment.log_path
        last_read: int | None = None
        position = 0
        chunk = self.chunk_bytes
        stopped_at: int | None = None
        while position < scan_end:
            wanted = min(chunk, scan_end - position)
            buf = segment.read_at(position, wanted)
            file_ends = len(buf) < wanted
            try:
                columns = self._scan(buf, position)
            except CorruptRecordError as exc:
                # A CRC-valid batch holding a malformed record: check the whole batches
                # before it, then stop (the writer was wrong; framing past it is unsure).
                bad = position if exc.position is None else exc.position
                if bad > position:
                    columns = self._scan(buf[: bad - position], position)
                    last_read = self._check_batches(
                        segment, next_base, columns, offset_index, time_index, last_read
                    )
                self.problems.add(
                    KIND_CORRUPT, path, bad, None, self._damage_message(exc.reason, bad, scan_end)
                )
                stopped_at = bad
                break
            last_read = self._check_batches(
                segment, next_base, columns, offset_index, time_index, last_read
            )
            end = columns.end
            if end.kind is EndKind.CLEAN and not file_ends:
                position = end.position
                chunk = self.chunk_bytes
                continue
            if end.kind is EndKind.TORN_TAIL and not file_ends and position + len(buf) < scan_end:
                if end.position == position:  # one batch is larger than the chunk: grow it
                    chunk = len(buf) + (end.bytes_needed or 0)
                else:
                    chunk = self.chunk_bytes
                position = end.position
                continue
            if end.kind is EndKind.CLEAN:  # whole batches, but the file ends before scan_end
                self.problems.add(
                    KIND_TORN_TAIL,
                    path,
                    end.position,
                    None,
                    f"the file ends at byte {end.position}, before the segment's size {scan_end}",
                )
                stopped_at = end.position
                break
            at = end.position - position
            kind = _damage_kind(buf, at, end)
            self.problems.add(
                kind,
                path,
                end.position,
                None,
                self._damage_message(end.reason, end.position, scan_end),
            )
            stopped_at = end.position
            break
        complete = stopped_at is None
        offset_index.finish(scan_end if stopped_at is None else stopped_at, scan_end)
        time_index.finish(None if complete else (-1 if last_read is None else last_read))
        return last_read, complete

    def _damage_message(self, reason: str, position: int, scan_end: int) -> str:
        after = (
            f"; the last good batch before it ends at offset {self.previous_last_offset}"
            if self.previous_last_offset != INT64_MIN
            else ""
        )
        return f"{reason}{after}; bytes {position}-{scan_end} of this segment are not checked"

    @staticmethod
    def _scan(buf: bytes, position: int) -> RecordColumns:
        return scan_columns(
            buf,
            verify_crc=True,
            include_control=True,
            check_offsets=False,  # checked here, so that order problems do not stop the scan
            base_position=position,
        )

    def _check_batches(
        self,
        segment: LogSegment,
        next_base: int | None,
        columns: RecordColumns,
        offset_index: _OffsetIndexCheck,
        time_index: _TimeIndexCheck,
        last_read: int | None,
    ) -> int | None:
        """Checks 2-4 on a chunk's batches; returns the segment's last offset read."""
        batches = columns.batches
        count = len(batches)
        if not count:
            return last_read
        totals = self.totals
        totals.batches += count
        totals.records += len(columns)
        sizes = batches.batch_length.astype(np.int64) + LOG_OVERHEAD
        totals.bytes += int(sizes.sum())
        positions = batches.position
        last = batches.last_offset
        # The offset field (bytes 0-7): a v2 batch's base offset, a legacy entry's last offset.
        first = np.where(batches.magic == MAGIC_V2, batches.base_offset, last)
        self._check_offsets(segment, next_base, positions, first, last)
        self._check_epochs(segment, batches.magic, batches.partition_leader_epoch, positions, first)
        offset_index.feed(positions, last)
        time_index.feed(batches.base_offset, last, batches.max_timestamp)
        if self.key_checkpoint is not None:
            self._check_keys(segment, columns, batches)
        return int(last[-1])

    def _check_epochs(
        self,
        segment: LogSegment,
        magic: npt.NDArray[np.int8],
        epochs: npt.NDArray[np.int32],
        positions: Int64Array,
        first: Int64Array,
    ) -> None:
        """``epoch-order``: a v2 batch's partitionLeaderEpoch (outside the CRC) below -1, or
        below an earlier batch's (a log's epochs never go down)."""
        is_v2 = magic == MAGIC_V2
        stamped = np.where(is_v2, epochs.astype(np.int64), -1)
        running = np.maximum.accumulate(np.concatenate(([self.previous_epoch], stamped)))
        earlier = running[:-1]
        self.previous_epoch = int(running[-1])
        bad = np.flatnonzero(is_v2 & ((stamped < -1) | ((stamped >= 0) & (stamped < earlier))))
        for i in bad[: self.problems.room(len(bad))].tolist():
            self.problems.add(
                KIND_EPOCH_ORDER,
                segment.log_path,
                int(positions[i]),
                int(first[i]),
                f"partitionLeaderEpoch {int(stamped[i])} is below -1 or below an earlier "
                f"batch's {int(earlier[i])} (this batch's or that one's epoch is damaged)",
            )

    def _check_offsets(
        self,
        segment: LogSegment,
        next_base: int | None,
        positions: Int64Array,
        first: Int64Array,
        last: Int64Array,
    ) -> None:
        previous = np.empty(len(last), dtype=np.int64)
        previous[0] = self.previous_last_offset
        previous[1:] = last[:-1]
        self.previous_last_offset = int(last[-1])
        path = segment.log_path
        disorder = np.flatnonzero(first <= previous)
        for i in disorder[: self.problems.room(len(disorder))].tolist():
            self.problems.add(
                KIND_OFFSET_ORDER,
                path,
                int(positions[i]),
                int(first[i]),
                f"batch of offsets {int(first[i])}-{int(last[i])} does not follow the previous "
                f"batch's last offset {int(previous[i])}",
            )
        base = segment.base_offset
        outside = (first < base) | (last - base > INT32_MAX)
        if next_base is not None:
            outside |= last >= next_base
        upper = f"{next_base}" if next_base is not None else "the log end"
        stray = np.flatnonzero(outside)
        for i in stray[: self.problems.room(len(stray))].tolist():
            self.problems.add(
                KIND_OFFSET_RANGE,
                path,
                int(positions[i]),
                int(first[i]),
                f"batch of offsets {int(first[i])}-{int(last[i])} is outside this segment's "
                f"range [{base}, {upper})"
                + (" (or past int32 of its base)" if next_base is None else ""),
            )

    # --- compaction checks ---------------------------------------------------------------------

    def _check_keys(
        self, segment: LogSegment, columns: RecordColumns, batches: BatchColumns
    ) -> None:
        """Collect hashes of keys below the checkpoint; judge tombstones there."""
        checkpoint = self.key_checkpoint
        assert checkpoint is not None
        batch_of = columns.batch_index
        data_row = ~batches.is_control[batch_of]
        keyed = data_row & (columns.offset < checkpoint) & (columns.key_length >= 0)
        rows = np.flatnonzero(keyed)
        if not len(rows):
            return
        h0, h1 = self.hasher.hash_columns(
            columns.data, columns.key_position[rows], columns.key_length[rows]
        )
        self.key_hashes.append(np.stack((h0, h1), axis=1))
        self.key_offsets.append(columns.offset[rows].astype(np.int64))
        tombstones = rows[
            (columns.value_length[rows] < 0) & (batches.magic[batch_of[rows]] == MAGIC_V2)
        ]
        if not len(tombstones):
            return
        batch = batch_of[tombstones]
        has_horizon = (batches.attributes[batch] & DELETE_HORIZON_FLAG_MASK) != 0
        path = segment.log_path
        missing = np.flatnonzero(~has_horizon)
        for i in missing[: self.problems.room(len(missing))].tolist():
            offset = int(columns.offset[tombstones[i]])
            self.problems.add(
                KIND_TOMBSTONE_WITHOUT_HORIZON,
                path,
                int(batches.position[batch[i]]),
                offset,
                f"tombstone at offset {offset} is below the cleaner checkpoint {checkpoint} but "
                "its batch has no delete horizon (attribute bit 0x40): the cleaning round that "
                "kept it stamps one (KIP-534)",
            )
        if self.last_clean_ms is None:
            return
        horizon = batches.base_timestamp[batch]
        stamped_last_round = self.last_clean_ms + self.delete_retention_ms
        expired = has_horizon & (horizon <= self.last_clean_ms) & (horizon != stamped_last_round)
        late = np.flatnonzero(expired)
        for i in late[: self.problems.room(len(late))].tolist():
            offset = int(columns.offset[tombstones[i]])
            self.problems.add(
                KIND_EXPIRED_TOMBSTONE,
                path,
                int(batches.position[batch[i]]),
                offset,
                f"tombstone at offset {offset} has delete horizon {int(horizon[i])} <= the last "
                f"cleaning at {self.last_clean_ms}: that round should have removed it",
            )

    def _check_duplicate_keys(self, segments: tuple[LogSegment, ...]) -> None:
        """Sort the key hashes once; report each later occurrence of a key."""
        if not self.key_hashes:
            return
        hashes = np.concatenate(self.key_hashes)
        offsets = np.concatenate(self.key_offsets)
        self.key_hashes.clear()
        self.key_offsets.clear()
        order = np.lexsort((offsets, hashes[:, 1], hashes[:, 0]))
        high, low = hashes[order, 0], hashes[order, 1]
        repeats = np.flatnonzero((high[1:] == high[:-1]) & (low[1:] == low[:-1])) + 1
        if not len(repeats):
            return
        later = offsets[order[repeats]]
        earlier = offsets[order[repeats - 1]]
        by_offset = np.argsort(later, kind="stable")
        bases = [s.base_offset for s in segments]
        checkpoint = self.key_checkpoint
        for i in by_offset[: self.problems.room(len(by_offset))].tolist():
            offset = int(later[i])
            segment = segments[max(0, bisect.bisect_right(bases, offset) - 1)]
            try:
                location = segment.translate_offset(offset)
            except SeglogError:
                location = None
            self.problems.add(
                KIND_DUPLICATE_KEY,
                segment.log_path,
                None if location is None else location.position,
                offset,
                f"the key of the record at offset {offset} is also at offset {int(earlier[i])}, "
                f"both below the cleaner checkpoint {checkpoint} (same 128-bit key hash)",
            )
