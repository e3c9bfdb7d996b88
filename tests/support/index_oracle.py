"""An independent judge of Kafka ``.index`` / ``.timeindex`` files.

It uses no seglog code: the ``.log`` is walked with :mod:`struct` alone, and kafka-python is
asked only for the record timestamps inside a batch (they may be compressed). So it can judge
the index files seglog writes. Section numbers refer to ``shared/spec/kafka-storage.md``.

Every ``check_*`` function returns a list of problems (empty = the file is fine).

Log walk, :func:`scan_log` (§3.1, §3.9, §4.1)
    Each entry: int64 offset, int32 size, magic at byte 16. v2: lastOffset = baseOffset +
    lastOffsetDelta (byte 23), maxTimestamp at byte 35, attributes at byte 21. v0/v1: the
    offset field is the entry's *last* offset, attributes at byte 17, v1 timestamp at byte
    18 (v0: -1). The walk stops at a torn or corrupt tail, which is reported.

Offset index, :func:`check_offset_index` (§7)
    O1  file size is a multiple of 8 (§7.5 sanity check).
    O2  a trimmed file has no zero tail: no entry ``i > 0`` with relative offset 0 (§7.2).
        Untrimmed (active) files are read up to that entry, as kafka-dump-log does (§18.2);
        an all-zero first entry counts as tail too (§5.1: no entry ever has position 0).
    O3  offsets strictly increasing, positions non-decreasing (§7.1), offsets >= base (§7.5).
    O4  each position is the start of a batch (§7.1).
    O5  each offset is the last offset of the append chunk starting at that position (§5.1):
        the last offset of a batch at or after the position and before the next entry's
        position. kafka-dump-log (§18.2) demands more, that the batch *at* the position ends
        at the offset; that holds whenever each append was one batch and for indexes rebuilt
        by recovery (§5.2). ``dump_log_strict=True`` applies the tool's rule.

Sparsity, :func:`check_sparsity` (§5.1, §5.2)
    S1  an entry is written only once more than ``index.interval.bytes`` were appended since
        the previous entry (or since the segment began), so consecutive positions (starting
        from 0) differ by more than the interval. With the interval unknown, 0 is used
        (the config's lower bound): positions strictly increase and none is 0.
    S2  ``expect_exact_rebuild=True``: the entries are exactly those of a per-batch replay of
        the rule (:func:`rebuild_indexes`), as recovery writes them and as a writer that
        appends one batch at a time must within one session (the byte counter restarts at
        0 on reopen, and a close adds a time entry, so a reopened segment differs).

Time index, :func:`check_time_index` (§8)
    T1  file size is a multiple of 12 (§8.6); T2 zero tail as O2.
    T3  timestamps strictly increasing and > -1 (§8.2: only ``ts > lastEntry.ts`` is
        written, the empty index's last entry being (-1, base)).
    T4  offsets non-decreasing and >= base (§8.2, §8.6).
    T5  each offset is a batch's last offset, the "shallow offset" (§3.7, §8.1, §18.3).
    T6  the timestamp is that batch's maxTimestamp and the running max of the segment up to
        it, that batch being the *first* to reach it (Kafka updates the max only on ``>``;
        §5.1, §5.2, §8.1).
    T7  ``deep=True``: the largest record timestamp kafka-python decodes from that batch
        equals the entry's timestamp (kafka-dump-log's check, §18.3).
    T8  a closed segment (``is_active=False``) whose log holds a timestamp > -1 ends with the
        final max-timestamp entry (§8.2 (b)-(d), §8.5): the segment's largest maxTimestamp at
        the last offset of the first batch that holds it.

Partition directory, :func:`check_partition_dir` (§2.1, §7.5)
    D1  each non-empty ``.log`` has its ``.index`` and ``.timeindex`` (a missing ``.index``
        makes Kafka recover the segment on load, §7.5); both are checked as above, the
        segment with the highest base offset being the active one.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kafka.record import MemoryRecords

LOG_OVERHEAD = 12  # offset + size
HEADER_UP_TO_MAGIC = 17
RECORD_OVERHEAD_V0 = 14  # smallest legal size field (§3.9)
RECORD_BATCH_OVERHEAD = 61  # v2 header (§3.1)
NO_TIMESTAMP = -1
OFFSET_ENTRY = 8
TIME_ENTRY = 12


@dataclass(frozen=True)
class BatchInfo:
    """One batch (v2) or legacy entry (v0/v1) of a ``.log``, read with struct.

    ``base_offset`` of a compressed legacy wrapper is None: only decompression tells it, and
    no index rule needs it.
    """

    position: int
    base_offset: int | None
    last_offset: int
    max_timestamp: int
    size: int
    magic: int
    attributes: int


@dataclass(frozen=True)
class IndexEntry:
    """An offset-index entry with its absolute offset."""

    offset: int
    position: int


@dataclass(frozen=True)
class TimeEntry:
    """A time-index entry with its absolute offset."""

    timestamp: int
    offset: int


# --- the log --------------------------------------------------------------------------------


def scan_batches(data: bytes, problems: list[str] | None = None) -> list[BatchInfo]:
    """The batches of a ``.log`` image (see :func:`scan_log`)."""
    batches = []
    pos, end = 0, len(data)
    while pos < end:
        if end - pos < HEADER_UP_TO_MAGIC:
            _note(problems, f"torn tail: {end - pos} trailing bytes at position {pos}")
            break
        offset, size = struct.unpack_from(">qi", data, pos)
        magic = data[pos + 16]
        if size < RECORD_OVERHEAD_V0 or (magic >= 2 and size + 12 < RECORD_BATCH_OVERHEAD):
            _note(problems, f"corrupt tail: size field {size} at position {pos}")
            break
        if pos + LOG_OVERHEAD + size > end:
            _note(problems, f"torn tail: partial batch at position {pos}")
            break
        if magic == 2:
            (attributes,) = struct.unpack_from(">h", data, pos + 21)
            (delta,) = struct.unpack_from(">i", data, pos + 23)
            (max_ts,) = struct.unpack_from(">q", data, pos + 35)
            base, last = offset, offset + delta
        elif magic in (0, 1):
            attributes = data[pos + 17]
            max_ts = struct.unpack_from(">q", data, pos + 18)[0] if magic == 1 else NO_TIMESTAMP
            base, last = (None if attributes & 0x07 else offset), offset
        else:
            _note(problems, f"corrupt tail: unknown magic {magic} at position {pos}")
            break
        batches.append(BatchInfo(pos, base, last, max_ts, LOG_OVERHEAD + size, magic, attributes))
        pos += LOG_OVERHEAD + size
    return batches


def scan_log(path: str | Path, problems: list[str] | None = None) -> list[BatchInfo]:
    """Every batch of the ``.log`` at ``path``, in file order, read with struct only.

    Stops at a torn or corrupt tail (fewer bytes than a header, a size field below 14 or,
    for v2, a batch below 61 bytes, a batch running past the end, an unknown magic) and
    appends a description of it to ``problems`` when given.
    """
    return scan_batches(Path(path).read_bytes(), problems)


def _note(problems: list[str] | None, message: str) -> None:
    if problems is not None:
        problems.append(message)


def max_record_timestamp(log_data: bytes, batch: BatchInfo) -> int | None:
    """The largest record timestamp kafka-python reports for ``batch`` (None when the batch
    has no record, e.g. an emptied 61-byte header)."""
    raw = log_data[batch.position : batch.position + batch.size]
    decoded = MemoryRecords(raw).next_batch()
    stamps = [NO_TIMESTAMP if r.timestamp is None else r.timestamp for r in decoded]
    return max(stamps) if stamps else None


# --- reading index files ------------------------------------------------------------------


def _read_index(
    path: Path, entry_size: int, *, trimmed: bool
) -> tuple[list[tuple[int, int]], list[str]]:
    """The raw (field, field) pairs of an index file up to its zero tail, and O1/O2 problems.

    The tail starts at the first entry ``i > 0`` with relative offset 0 (§18.2). In an
    untrimmed file an all-zero entry 0 is tail too: a preallocated file with no entries
    (a genuine ``(0, base)`` first time entry cannot be told from it there).
    """
    offset_index = entry_size == OFFSET_ENTRY
    data = path.read_bytes()
    problems = []
    if len(data) % entry_size:
        problems.append(f"{path.name}: size {len(data)} is not a multiple of {entry_size}")
    pairs = []
    for i in range(len(data) // entry_size):
        first, second = struct.unpack_from(">ii" if offset_index else ">qi", data, i * entry_size)
        relative = first if offset_index else second
        if relative == 0 and (i > 0 or (not trimmed and first == second == 0)):
            if trimmed:
                problems.append(f"{path.name}: zero tail from entry {i} (file not trimmed)")
            break
        pairs.append((first, second))
    return pairs, problems


def read_offset_index(path: str | Path, base_offset: int, *, trimmed: bool) -> list[IndexEntry]:
    """The entries of a ``.index``, up to its zero tail (O2)."""
    pairs, _ = _read_index(Path(path), OFFSET_ENTRY, trimmed=trimmed)
    return [IndexEntry(base_offset + relative, position) for relative, position in pairs]


def read_time_index(path: str | Path, base_offset: int, *, trimmed: bool) -> list[TimeEntry]:
    """The entries of a ``.timeindex``, up to its zero tail (T2)."""
    pairs, _ = _read_index(Path(path), TIME_ENTRY, trimmed=trimmed)
    return [TimeEntry(timestamp, base_offset + relative) for timestamp, relative in pairs]


def rebuild_indexes(
    batches: Sequence[BatchInfo], index_interval_bytes: int
) -> tuple[list[IndexEntry], list[TimeEntry]]:
    """The indexes Kafka's recovery writes for these batches (§5.2), final time entry included."""
    offsets: list[IndexEntry] = []
    times: list[TimeEntry] = []
    max_ts, shallow, last_entry_position = NO_TIMESTAMP, -1, 0

    def time_maybe_append() -> None:  # §8.2: only a larger timestamp is written
        if max_ts > (times[-1].timestamp if times else NO_TIMESTAMP):
            times.append(TimeEntry(max_ts, shallow))

    for batch in batches:
        if batch.max_timestamp > max_ts:
            max_ts, shallow = batch.max_timestamp, batch.last_offset
        if batch.position - last_entry_position > index_interval_bytes:
            offsets.append(IndexEntry(batch.last_offset, batch.position))
            time_maybe_append()
            last_entry_position = batch.position
    time_maybe_append()
    return offsets, times


# --- checks ---------------------------------------------------------------------------------


def _offset_entry_problems(
    name: str,
    entries: Sequence[IndexEntry],
    batches: Sequence[BatchInfo],
    base_offset: int,
    dump_log_strict: bool,
) -> list[str]:
    """O3-O5."""
    problems = []
    at_position = {b.position: k for k, b in enumerate(batches)}
    ending_at = {b.last_offset: k for k, b in enumerate(batches)}
    for i, entry in enumerate(entries):
        where = f"{name}: entry {i} (offset {entry.offset}, position {entry.position})"
        if entry.offset < base_offset:
            problems.append(f"{where}: offset below the base offset {base_offset}")
        if i > 0 and entry.offset <= entries[i - 1].offset:
            problems.append(f"{where}: offset not above the previous entry's")
        if i > 0 and entry.position < entries[i - 1].position:
            problems.append(f"{where}: position below the previous entry's")
        first = at_position.get(entry.position)
        if first is None:
            problems.append(f"{where}: position is not the start of a batch")
            continue
        if dump_log_strict:
            if batches[first].last_offset != entry.offset:
                found = batches[first].last_offset
                problems.append(f"{where}: the batch at the position ends at offset {found}")
            continue
        last = ending_at.get(entry.offset)
        chunk_end = entries[i + 1].position if i + 1 < len(entries) else None
        if last is None or last < first:
            problems.append(f"{where}: no batch from the position on ends at the offset")
        elif chunk_end is not None and batches[last].position >= chunk_end:
            problems.append(f"{where}: the chunk would run past the next entry's position")
    return problems


def check_offset_index(
    index_path: str | Path,
    log_path: str | Path,
    base_offset: int,
    *,
    trimmed: bool,
    dump_log_strict: bool = False,
) -> list[str]:
    """Rules O1-O5 for ``index_path``, the ``.index`` of the segment ``log_path``."""
    index_path = Path(index_path)
    pairs, problems = _read_index(index_path, OFFSET_ENTRY, trimmed=trimmed)
    entries = [IndexEntry(base_offset + relative, position) for relative, position in pairs]
    batches = scan_log(log_path)
    return problems + _offset_entry_problems(
        index_path.name, entries, batches, base_offset, dump_log_strict
    )


def check_sparsity(
    entries: Sequence[IndexEntry],
    batches: Sequence[BatchInfo],
    index_interval_bytes: int,
    *,
    expect_exact_rebuild: bool = False,
) -> list[str]:
    """Rules S1 and, with ``expect_exact_rebuild``, S2 for offset-index entries."""
    problems = []
    previous = 0
    for i, entry in enumerate(entries):
        if entry.position - previous <= index_interval_bytes:
            problems.append(
                f"entry {i} (position {entry.position}) is not more than "
                f"index.interval.bytes={index_interval_bytes} after position {previous}"
            )
        previous = entry.position
    if expect_exact_rebuild:
        expected, _ = rebuild_indexes(batches, index_interval_bytes)
        if list(entries) != expected:
            problems.append(f"entries {list(entries)} are not the per-batch rebuild {expected}")
    return problems


def _time_entry_problems(
    name: str,
    entries: Sequence[TimeEntry],
    log_data: bytes,
    batches: Sequence[BatchInfo],
    base_offset: int,
    is_active: bool,
    deep: bool,
) -> list[str]:
    """T3-T8."""
    problems = []
    ending_at = {b.last_offset: k for k, b in enumerate(batches)}
    running = [NO_TIMESTAMP]  # running[k] = largest maxTimestamp of batches[:k]
    for batch in batches:
        running.append(max(running[-1], batch.max_timestamp))

    previous = TimeEntry(NO_TIMESTAMP, base_offset)  # the empty index's last entry (§8.2)
    for i, entry in enumerate(entries):
        where = f"{name}: entry {i} (timestamp {entry.timestamp}, offset {entry.offset})"
        if entry.timestamp <= previous.timestamp:
            problems.append(f"{where}: timestamp not above {previous.timestamp}")
        if entry.offset < previous.offset:
            problems.append(f"{where}: offset below {previous.offset}")
        previous = entry
        k = ending_at.get(entry.offset)
        if k is None:
            problems.append(f"{where}: offset is not the last offset of a batch")
            continue
        if batches[k].max_timestamp != entry.timestamp:
            problems.append(f"{where}: that batch's maxTimestamp is {batches[k].max_timestamp}")
        elif running[k] >= entry.timestamp:
            problems.append(f"{where}: an earlier batch already reached {running[k]}")
        if deep:
            records_max = max_record_timestamp(log_data, batches[k])
            # An emptied batch (no records; Kafka's 61-byte header left by compaction) keeps
            # its original maxTimestamp, which the entry rightly holds: nothing to compare.
            if records_max is not None and records_max != entry.timestamp:
                problems.append(f"{where}: that batch's records reach {records_max}")

    if not is_active and running[-1] > NO_TIMESTAMP:
        holder = next(b for b in batches if b.max_timestamp == running[-1])
        final = TimeEntry(running[-1], holder.last_offset)
        last = entries[-1] if entries else None
        if last != final:
            problems.append(f"{name}: last entry {last} is not the final max entry {final}")
    return problems


def check_time_index(
    timeindex_path: str | Path,
    log_path: str | Path,
    base_offset: int,
    *,
    trimmed: bool,
    is_active: bool = False,
    deep: bool = True,
) -> list[str]:
    """Rules T1-T8 for ``timeindex_path``, the ``.timeindex`` of the segment ``log_path``."""
    timeindex_path = Path(timeindex_path)
    pairs, problems = _read_index(timeindex_path, TIME_ENTRY, trimmed=trimmed)
    entries = [TimeEntry(timestamp, base_offset + relative) for timestamp, relative in pairs]
    log_data = Path(log_path).read_bytes()
    return problems + _time_entry_problems(
        timeindex_path.name, entries, log_data, scan_batches(log_data), base_offset, is_active, deep
    )


def check_partition_dir(
    partition_dir: str | Path,
    *,
    index_interval_bytes: int | None = None,
    active_trimmed: bool = True,
    deep: bool = True,
    dump_log_strict: bool = False,
    expect_exact_rebuild: bool = False,
    missing_as_empty: bool = False,
) -> list[str]:
    """Every rule above for every ``NNN.log`` segment of ``partition_dir`` (D1).

    ``active_trimmed``: the log was closed cleanly, so the active (highest base offset)
    segment is judged as a closed one: trimmed files, final time entry (Kafka's close writes
    it, §8.2). When False its files may have a zero tail and need no final time entry.
    ``index_interval_bytes`` None: unknown, S1 is checked with 0. ``expect_exact_rebuild``
    (S2) also compares the time index with the rebuild. ``missing_as_empty`` reads a missing
    index file as an empty one instead of reporting it (for copies of log dirs that dropped
    empty files).
    """
    segments = sorted(
        (int(p.stem), p) for p in Path(partition_dir).glob("*.log") if p.stem.isdigit()
    )
    problems: list[str] = []
    for k, (base, log_path) in enumerate(segments):
        closed = active_trimmed or k < len(segments) - 1
        log_data = log_path.read_bytes()
        scanned: list[str] = []
        batches = scan_batches(log_data, scanned)
        problems += [f"{log_path.name}: {p}" for p in scanned]
        index_path = log_path.with_suffix(".index")
        time_path = log_path.with_suffix(".timeindex")
        for path in (index_path, time_path):
            if not path.exists() and log_data and not missing_as_empty:
                problems.append(f"{path.name}: missing for a non-empty segment")

        if index_path.exists() or not log_data or missing_as_empty:
            pairs, found = _read_index_if_present(index_path, OFFSET_ENTRY, trimmed=closed)
            entries = [IndexEntry(base + relative, position) for relative, position in pairs]
            problems += found
            problems += _offset_entry_problems(
                index_path.name, entries, batches, base, dump_log_strict
            )
            sparsity = check_sparsity(
                entries,
                batches,
                index_interval_bytes or 0,
                expect_exact_rebuild=expect_exact_rebuild,
            )
            problems += [f"{index_path.name}: {p}" for p in sparsity]

        if time_path.exists() or not log_data or missing_as_empty:
            pairs, found = _read_index_if_present(time_path, TIME_ENTRY, trimmed=closed)
            times = [TimeEntry(timestamp, base + relative) for timestamp, relative in pairs]
            problems += found
            problems += _time_entry_problems(
                time_path.name, times, log_data, batches, base, not closed, deep
            )
            if expect_exact_rebuild:
                _, expected = rebuild_indexes(batches, index_interval_bytes or 0)
                # a live segment may still lack the final entry its close would add
                if times != expected and (closed or times != expected[:-1]):
                    problems.append(
                        f"{time_path.name}: entries {times} are not the rebuild {expected}"
                    )
    return problems


def _read_index_if_present(
    path: Path, entry_size: int, *, trimmed: bool
) -> tuple[list[tuple[int, int]], list[str]]:
    return _read_index(path, entry_size, trimmed=trimmed) if path.exists() else ([], [])
