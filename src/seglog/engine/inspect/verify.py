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
   end (``np.lexsort``): :mod:`.verify_keys`.
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

7. **Transactions** (:mod:`.verify_txns`). ``txn-marker-missing``: transactional data below
   the last stable offset that no COMMIT or ABORT marker closes; ``aborted-data-retained``:
   a batch of an aborted transaction below the cleaner checkpoint; ``txn-index-entry``: a
   ``.txnindex`` entry without its ABORT marker or not matching its transaction's data;
   ``txn-index-missing``: an ABORT marker whose transaction's data remains, with no entry.

The checks live beside this module: :mod:`.verify_problems` (the kinds and the report),
:mod:`.verify_indexes` (check 3), :mod:`.verify_keys` (check 4), :mod:`.verify_txns`
(check 7); this module walks the
segments and checks 1, 2, 5 and 6. Verify expects a quiescent log (the CLI opens the data dirs
read-only); appends during a verify can make the log end offset check disagree.

Why this module is at the house's ~500 lines: its docstring is the full list of verify's
checks, the reference for ``seglog verify``'s problem kinds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from seglog.engine.inspect.verify_indexes import (
    INT32_MAX,
    OffsetIndexCheck,
    TimeIndexCheck,
)
from seglog.engine.inspect.verify_keys import KeyCheck
from seglog.engine.inspect.verify_problems import (
    KIND_ABORTED_DATA_RETAINED,
    KIND_CORRUPT,
    KIND_CRC,
    KIND_DROPPED_SEGMENT,
    KIND_DUPLICATE_KEY,
    KIND_EPOCH_ORDER,
    KIND_EXPIRED_TOMBSTONE,
    KIND_INDEX_ENTRY,
    KIND_LOG_END_OFFSET,
    KIND_OFFSET_GAP,
    KIND_OFFSET_ORDER,
    KIND_OFFSET_RANGE,
    KIND_RECORDS_LOST,
    KIND_TIME_INDEX_ENTRY,
    KIND_TOMBSTONE_WITHOUT_HORIZON,
    KIND_TORN_TAIL,
    KIND_TXN_INDEX_ENTRY,
    KIND_TXN_INDEX_MISSING,
    KIND_TXN_MARKER_MISSING,
    Problems,
    VerifyProblem,
    VerifyReport,
    damage_kind,
)
from seglog.engine.inspect.verify_txns import TxnCheck
from seglog.engine.log import Log
from seglog.errors import CorruptRecordError
from seglog.format.batch import LOG_OVERHEAD, MAGIC_V2
from seglog.format.columnar import RecordColumns, scan_columns
from seglog.format.names import LOG_SUFFIX, TIME_INDEX_SUFFIX
from seglog.format.reader import EndKind
from seglog.storage.segment import LogSegment, segment_path

__all__ = [
    "CHUNK_BYTES_DEFAULT",
    "KIND_ABORTED_DATA_RETAINED",
    "KIND_CORRUPT",
    "KIND_CRC",
    "KIND_DROPPED_SEGMENT",
    "KIND_DUPLICATE_KEY",
    "KIND_EPOCH_ORDER",
    "KIND_EXPIRED_TOMBSTONE",
    "KIND_INDEX_ENTRY",
    "KIND_LOG_END_OFFSET",
    "KIND_OFFSET_GAP",
    "KIND_OFFSET_ORDER",
    "KIND_OFFSET_RANGE",
    "KIND_RECORDS_LOST",
    "KIND_TIME_INDEX_ENTRY",
    "KIND_TOMBSTONE_WITHOUT_HORIZON",
    "KIND_TORN_TAIL",
    "KIND_TXN_INDEX_ENTRY",
    "KIND_TXN_INDEX_MISSING",
    "KIND_TXN_MARKER_MISSING",
    "MAX_PROBLEMS_DEFAULT",
    "VerifyProblem",
    "VerifyReport",
    "verify_log",
]

Int64Array = npt.NDArray[np.int64]

CHUNK_BYTES_DEFAULT = 8 * 1024 * 1024
MAX_PROBLEMS_DEFAULT = 1000
INT64_MIN = -(1 << 63)


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
        self.problems = Problems(max_problems)
        self.totals = _Totals()
        self.keys = (
            KeyCheck(
                self.problems,
                cleaner_checkpoint=cleaner_checkpoint,
                last_clean_ms=last_clean_ms,
                delete_retention_ms=log.config.delete_retention_ms,
            )
            if log.config.is_compacted and cleaner_checkpoint is not None
            else None
        )
        self.txns = TxnCheck(self.problems, cleaner_checkpoint=cleaner_checkpoint)
        self.previous_last_offset = INT64_MIN  # last offset of the previous batch read
        self.previous_epoch = -1  # the highest partitionLeaderEpoch read so far
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
        if self.keys is not None:
            self.keys.finish(segments)
        self.txns.finish(segments, log.last_stable_offset)
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
        offset_index = OffsetIndexCheck(segment, self.problems, is_closed=is_closed)
        time_index = TimeIndexCheck(segment, self.problems, is_closed=is_closed)
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
            kind = damage_kind(buf, at, end)
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
        offset_index: OffsetIndexCheck,
        time_index: TimeIndexCheck,
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
        if self.keys is not None:
            self.keys.feed(segment, columns, batches)
        self.txns.feed(segment, columns)
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
