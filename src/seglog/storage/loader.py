"""Opening a partition directory: Kafka's ``LogLoader``.

Steps, in order (each says what a crash in the middle leaves for the next start):

1. **File pass.** ``*.deleted`` files are removed (their segments already left the segment
   list). ``*.tmp`` files (interrupted atomic writes) are removed. ``*.cleaned`` files are an
   unfinished cleaner or split output: removed, and any ``*.swap`` at or above the lowest
   cleaned offset is removed with them (the replace had not reached its swap point).
   *Crash here*: the same files are found and removed again next time.
2. **Swap completion.** Each remaining ``{base}.log.swap`` is a finished replacement whose
   rename did not complete. Its offset range is read from the file; every non-swap file whose
   offset prefix lies in ``[lowest swap base, highest swap next offset)`` is an original it
   replaces and is removed; then every ``.swap`` is renamed to its live name. Swap *index*
   files are removed instead, so the index of a swapped-in segment is rebuilt. Two additions
   to Kafka's range, both only ever removing segments the swap replaces: the live segment
   files at each ``.swap``'s own base (an *empty* cleaned segment has next offset == base, so
   the range is empty, and the old ``.index`` must not outlive the rename that replaces its
   ``.log``), and those of every base the swap record names
   (:mod:`seglog.storage.swap_record`, written by seglog's own replace before its swap
   point: a replaced segment above the cleaned segment's next offset, which Kafka's range
   misses), used only while every ``.swap`` left is one of the record's new segments. The
   record is removed once the swaps are renamed, or at once when no ``.swap`` is left.
   *Crash here*: some originals are gone and some swaps renamed; the next start finds the
   rest of the swaps and finishes the same way (the range covers the renamed ones' originals;
   the record is removed last, and never names a renamed new segment's base for removal).
3. **Segments.** Index files without a ``.log`` are orphans and removed. Every ``{base}.log``
   opens as a segment; a segment without an ``.index``, or whose indexes contradict its log
   (a file length that is not a whole number of entries, offsets not increasing or reaching
   the next segment's base, positions not increasing or past the end, timestamps not
   increasing), is recovered and its indexes rebuilt (reported). These checks read only the
   index files, so a clean open stays as cheap as Kafka's (which trusts them); what needs
   the ``.log`` (an entry's position is the start of its batch, a time entry's timestamp is
   its batch's) the segment checks each time it uses an entry, falling back to a scan from
   the segment's start, so a damaged index never sends a lookup to a wrong position.
   If any later step fails (e.g. ENOSPC rebuilding an index), every segment opened here is
   closed before the error propagates.
4. **Recovery** (only when the directory was not shut down cleanly): every segment from the
   one holding the recovery point to the end is validated batch by batch (CRC, sizes,
   offsets), its indexes rebuilt, and its ``.log`` cut at the first bad byte. When a segment
   was cut, every later segment is removed: their offsets would no longer follow on.
   A recovered segment whose valid batches pass ``base + 2^31 - 1`` (offset overflow,
   KAFKA-6264: an old broker let its relative offsets overflow int32) is not cut: the load
   stops, closes every segment, splits that segment into segments that fit
   (:mod:`seglog.storage.overflow_split`, crash-safe through the ``.cleaned`` -> ``.swap``
   protocol of steps 1-2) and starts again; the pieces have no indexes, so they are
   recovered. A segment whose offsets cannot be split (not increasing, or reaching the next
   segment's base) is cut as before.
   A segment below that range is recovered only when step 3 distrusted its index (damage to
   a closed segment, after a clean shutdown too); a cut there keeps the later segments, as
   Kafka's loader does. **Records lost** to either are reported in
   :attr:`LoadReport.lost_ranges` with the missing offset range: a segment cut at its first
   bad batch loses the offsets up to the next segment's base (or, when later segments were
   removed, everything after the cut); a ``.log`` cut exactly at a batch boundary leaves no
   bad byte, so the loss shows only as an index naming offsets past the ``.log``'s last batch
   (step 3 saw that contradiction): the range from the segment's new end to the next
   segment's base (to the last indexed offset for the last segment) is reported. (A
   compacted segment may legitimately end below the next base; only this evidence, never a
   gap alone, makes the loader report a loss. ``seglog verify`` reports gaps of a
   delete-policy log whatever their cause.)
5. **Bounds.** With no segment left, an empty one is created at the log start offset; the
   log end offset is the last segment's next offset; when it is below the checkpointed log
   start offset the log restarts empty there. The recovery point becomes the log end offset
   after a clean shutdown, else ``min(checkpoint, log end)``.

A **read-only** load (``writable=False``) changes nothing on disk: leftovers are skipped,
recovery happens in memory (indexes rebuilt in memory, a bad tail ignored), and later segments
after a cut are only left out of the list. It is how seglog reads a directory that a broker,
or the corpus, owns. Its :class:`LoadReport` (``writable=False``) says what a writing open
*would* do ("would truncate N bytes; nothing written"), never that it truncated or removed.

Why this module is longer than the house's ~500 lines: it is Kafka's ``LogLoader``, one
crash-recovery procedure in numbered steps (file pass, swaps, segments, recovery, load report)
that reads best as one file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seglog.core.producer_state import ProducerStateManager
from seglog.errors import InvalidFileNameError, SeglogError
from seglog.format.names import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    offset_from_file_name,
    snapshot_file_name,
)
from seglog.storage import fileops
from seglog.storage.atomic import TMP_SUFFIX, fsync_directory
from seglog.storage.overflow_split import NoOffsetOverflowError, split_overflowed_segment
from seglog.storage.producer_snapshots import delete_snapshots_outside
from seglog.storage.producer_state_replay import rebuild_txn_indexes
from seglog.storage.segment import LogSegment, SegmentRecovery
from seglog.storage.swap_record import SWAP_RECORD_NAME, read_swap_record, remove_swap_record

INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class SegmentSettings:
    """Per-segment settings from the log's config."""

    index_interval_bytes: int
    segment_index_bytes: int

    def open_segment(
        self, directory: Path, base_offset: int, now_ms: int, **options: Any
    ) -> LogSegment:
        """A :class:`LogSegment` with these settings (``options`` go to its constructor)."""
        return LogSegment(
            directory,
            base_offset,
            index_interval_bytes=self.index_interval_bytes,
            segment_index_bytes=self.segment_index_bytes,
            created_ms=now_ms,
            **options,
        )


@dataclass(frozen=True, slots=True)
class LostRange:
    """Offsets a load found lost: ``first_offset`` to ``last_offset`` (inclusive; None: to the
    end of the log before the load) of the segment file ``file``, and why."""

    file: str
    first_offset: int
    last_offset: int | None
    reason: str

    def __str__(self) -> str:
        upper = "the old log end" if self.last_offset is None else str(self.last_offset)
        return f"{self.file}: records at offsets {self.first_offset}-{upper} lost ({self.reason})"


@dataclass(slots=True)
class LoadReport:
    """What loading a partition directory did (for logs, ``seglog`` output and tests)."""

    directory: Path
    had_clean_shutdown: bool
    removed_files: list[str] = field(default_factory=list)
    completed_swaps: list[str] = field(default_factory=list)
    recovered: list[SegmentRecovery] = field(default_factory=list)
    dropped_segments: list[int] = field(default_factory=list)
    rebuilt_indexes: list[str] = field(default_factory=list)  # damaged indexes, and why
    lost_ranges: list[LostRange] = field(default_factory=list)  # records lost, see step 4
    split_segments: list[str] = field(default_factory=list)  # offset overflow splits, step 4
    bytes_read_for_recovery: int = 0
    #: damaged producer ``.snapshot`` files skipped (the state was rebuilt from the log)
    snapshot_problems: list[str] = field(default_factory=list)
    #: False for a read-only load: the figures are what a writing open would do, nothing of
    #: it happened on disk (truncations, removals and index rebuilds were in memory only).
    writable: bool = True

    @property
    def truncated_bytes(self) -> int:
        """Bytes cut from torn or corrupt tails."""
        return sum(r.truncated_bytes for r in self.recovered)

    def summary(self) -> str:
        """One line for humans. A read-only load says what a writing open *would* do and ends
        with "nothing written" (its recovery happened in memory only)."""
        parts = [f"{self.directory.name}: {'clean' if self.had_clean_shutdown else 'unclean'}"]
        if not self.writable:
            return self._read_only_summary(parts)
        if self.recovered:
            parts.append(
                f"recovered {len(self.recovered)} segment(s), read {self.bytes_read_for_recovery} "
                f"bytes, truncated {self.truncated_bytes}"
            )
        if self.removed_files:
            parts.append(f"removed {len(self.removed_files)} leftover file(s)")
        if self.completed_swaps:
            parts.append(f"completed {len(self.completed_swaps)} swap(s)")
        if self.rebuilt_indexes:
            parts.append(f"rebuilt {len(self.rebuilt_indexes)} damaged index(es)")
        if self.dropped_segments:
            parts.append(f"dropped {len(self.dropped_segments)} segment(s) after a cut")
        parts.extend(self.split_segments)
        parts.extend(f"producer snapshot {problem}" for problem in self.snapshot_problems)
        parts.extend(f"RECORDS LOST: {lost}" for lost in self.lost_ranges)
        return "; ".join(parts)

    def _read_only_summary(self, parts: list[str]) -> str:
        if self.recovered:
            parts.append(
                f"checked {len(self.recovered)} segment(s) in memory, read "
                f"{self.bytes_read_for_recovery} bytes"
            )
            if self.truncated_bytes:
                parts.append(f"would truncate {self.truncated_bytes} bytes")
        if self.rebuilt_indexes:
            parts.append(f"would rebuild {len(self.rebuilt_indexes)} damaged index(es)")
        if self.dropped_segments:
            parts.append(f"would drop {len(self.dropped_segments)} segment(s) after a cut")
        parts.extend(
            f"RECORDS A WRITING OPEN WOULD DROP (unreadable here): {lost}"
            for lost in self.lost_ranges
        )
        parts.append("nothing written")
        return "; ".join(parts)


@dataclass(slots=True)
class LoadedLog:
    """The segments of a partition directory and its offsets after loading."""

    segments: list[LogSegment]
    log_start_offset: int
    log_end_offset: int
    recovery_point: int
    report: LoadReport
    #: producer state up to the log end offset, when recovery rebuilt it (the log adopts it
    #: instead of replaying the same batches again)
    producer_state: ProducerStateManager | None = None


def _offset_or_none(name: str) -> int | None:
    try:
        return offset_from_file_name(name)
    except InvalidFileNameError:
        return None


def _remove(path: Path, report: LoadReport) -> None:
    fileops.unlink(path, missing_ok=True)
    report.removed_files.append(path.name)


def _file_pass(directory: Path, report: LoadReport) -> list[Path]:
    """Step 1: drop ``.deleted``, ``.tmp`` and ``.cleaned`` leftovers; return live swap files."""
    swaps: list[Path] = []
    cleaned_offsets: list[int] = []
    for path in sorted(directory.iterdir()):
        if not path.is_file():
            continue
        name = path.name
        if name.endswith(DELETED_SUFFIX) or name.endswith(TMP_SUFFIX):
            _remove(path, report)
        elif name.endswith(CLEANED_SUFFIX):
            offset = _offset_or_none(name)
            if offset is not None:
                cleaned_offsets.append(offset)
            _remove(path, report)
        elif name.endswith(SWAP_SUFFIX):
            swaps.append(path)
    if cleaned_offsets:
        lowest_cleaned = min(cleaned_offsets)
        kept = []
        for path in swaps:
            offset = _offset_or_none(path.name)
            if offset is None or offset >= lowest_cleaned:
                _remove(path, report)
            else:
                kept.append(path)
        swaps = kept
    return swaps


def _complete_swaps(
    directory: Path, swaps: list[Path], settings: SegmentSettings, now_ms: int, report: LoadReport
) -> None:
    """Step 2: finish an interrupted replace from its ``.swap`` files."""
    log_swaps: list[tuple[int, Path]] = []
    for path in swaps:
        base = _offset_or_none(path.name)
        live_name = path.name[: -len(SWAP_SUFFIX)]
        if base is None or not live_name.endswith(LOG_SUFFIX):
            _remove(path, report)  # swap index files: the swapped-in segment is re-indexed
            continue
        log_swaps.append((base, path))
    if not log_swaps:
        # No swap left: a record is from a swap that never reached its swap point (its
        # .cleaned files were just removed) or that completed; either way it is done.
        if remove_swap_record(directory):
            report.removed_files.append(SWAP_RECORD_NAME)
        return
    swap_bases = {base for base, _ in log_swaps}
    replaced = set(swap_bases)  # a rename replaces the live segment at its own base
    record = read_swap_record(directory)
    if record is not None and swap_bases <= set(record.new_bases):
        # A new segment already renamed to its live name is never removed (its base may
        # also be a replaced base); a replaced base below a .swap is replaced by its rename.
        new_bases = set(record.new_bases)
        replaced.update(b for b in record.replaced_bases if b not in new_bases or b in swap_bases)
    low = min(base for base, _ in log_swaps)
    high = low
    for base, _ in log_swaps:
        segment = settings.open_segment(
            directory, base, now_ms, writable=False, persist_indexes=False, file_suffix=SWAP_SUFFIX
        )
        try:
            high = max(high, segment.recover().next_offset or base)
        finally:
            segment.close()
    for path in sorted(directory.iterdir()):
        name = path.name
        if not path.is_file() or name.endswith(SWAP_SUFFIX):
            continue
        offset = _offset_or_none(name)
        if offset is None:
            continue
        if low <= offset < high or (offset in replaced and _is_segment_file(name)):
            _remove(path, report)
    for _, path in sorted(log_swaps):
        fileops.replace(path, path.with_name(path.name[: -len(SWAP_SUFFIX)]))
        report.completed_swaps.append(path.name)
    fsync_directory(directory)
    if remove_swap_record(directory):  # after the renames are durable (module docstring)
        report.removed_files.append(SWAP_RECORD_NAME)


def _is_segment_file(name: str) -> bool:
    """True for a live ``{offset}.log`` or one of its index files (not, e.g., a snapshot)."""
    prefix, _, suffix = name.partition(".")
    return suffix != "" and "." + suffix in (LOG_SUFFIX, *INDEX_SUFFIXES) and prefix.isdigit()


def _open_segments(
    directory: Path, settings: SegmentSettings, now_ms: int, writable: bool, report: LoadReport
) -> tuple[list[LogSegment], dict[int, int | None]]:
    """Step 3: every live ``.log`` as a segment; returns them and the bases whose indexes are
    missing (None) or distrusted (the highest offset they name)."""
    logs: dict[int, Path] = {}
    index_files: list[tuple[int, Path]] = []
    for path in directory.iterdir():
        if not path.is_file():
            continue
        suffix = os.path.splitext(path.name)[1]
        offset = _offset_or_none(path.name)
        if offset is None or path.name != path.name.split(".", 1)[0] + suffix:
            continue  # not a live segment file (other metadata, or a transient suffix)
        if suffix == LOG_SUFFIX:
            logs[offset] = path
        elif suffix in INDEX_SUFFIXES:
            index_files.append((offset, path))
    for offset, path in index_files:
        if offset not in logs and writable:
            _remove(path, report)
    segments: list[LogSegment] = []
    missing_index: dict[int, int | None] = {}
    bases = sorted(logs)
    try:
        for i, base in enumerate(bases):
            segment = settings.open_segment(directory, base, now_ms, writable=writable)
            segments.append(segment)
            next_base = bases[i + 1] if i + 1 < len(bases) else None
            if not segment.offset_index.exists:
                missing_index[base] = None
            elif (problem := _index_problem(segment, next_base)) is not None:
                report.rebuilt_indexes.append(problem)
                missing_index[base] = _highest_indexed_offset(segment)
    except BaseException:
        _release_all(segments)
        raise
    return segments, missing_index


def _index_problem(segment: LogSegment, next_base: int | None) -> str | None:
    """Why a segment's indexes cannot be trusted (they are then rebuilt), or None.

    Only the in-memory checks of the index files run here (O(entries), the ``.log`` is not
    read), so a clean open stays as cheap as Kafka's; the segment checks each entry against
    the ``.log`` when a lookup uses it (see :class:`LogSegment`). ``next_base`` (the next
    segment's base offset) bounds the offsets both indexes may name.
    """
    next_relative = INT32_MAX + 1 if next_base is None else next_base - segment.base_offset
    problem = segment.offset_index.consistency_problem(segment.size, next_relative)
    if problem is not None:
        return f"{segment.offset_index.path.name}: {problem}"
    problem = segment.time_index.consistency_problem(min(next_relative - 1, INT32_MAX))
    if problem is not None:
        return f"{segment.time_index.path.name}: {problem}"
    return segment.txn_index.sanity_problem()


def _highest_indexed_offset(segment: LogSegment) -> int | None:
    """The highest offset the segment's index files name (None when they name none)."""
    try:
        offset = segment.offset_index.last_entry()[0] if segment.offset_index.entries else None
        time_offset = segment.time_index.last_entry()[1] if segment.time_index.entries else None
    except (SeglogError, OSError):
        return None
    named = [o for o in (offset, time_offset) if o is not None]
    return max(named) if named else None


def _release_all(segments: list[LogSegment]) -> None:
    """Close every handle of ``segments`` without writing (a load that failed part way:
    nothing it opened may stay open; the files are left for the next load)."""
    for segment in segments:
        segment.release_files()


class _OffsetOverflow(Exception):
    """Internal: recovery met a segment whose offsets overflow (the load splits it, retries)."""

    def __init__(self, base_offset: int, next_base: int | None) -> None:
        super().__init__(base_offset)
        self.base_offset = base_offset
        self.next_base = next_base


def _recover_from(
    segments: list[LogSegment],
    first: int,
    always: dict[int, int | None],
    report: LoadReport,
    no_split: frozenset[int] | None = None,
) -> list[LogSegment]:
    """Step 4: recover ``segments[first:]`` (plus any base in ``always``, mapped to the highest
    offset its distrusted index named); cut after a bad one; report lost records. With
    ``no_split`` (the bases not to split; None: split none), an overflowed segment raises
    :class:`_OffsetOverflow` instead of being cut."""
    kept: list[LogSegment] = []
    for i, segment in enumerate(segments):
        base = segment.base_offset
        if i < first and base not in always:
            kept.append(segment)
            continue
        report.bytes_read_for_recovery += segment.size
        split = no_split is not None and segment.writable and base not in no_split
        result = segment.recover(stop_at_overflow=split)
        if result.overflow_position is not None:
            raise _OffsetOverflow(
                base, segments[i + 1].base_offset if i + 1 < len(segments) else None
            )
        report.recovered.append(result)
        kept.append(segment)
        later = segments[i + 1 :]
        end = base if result.next_offset is None else result.next_offset
        next_base = later[0].base_offset if later else None
        name = segment.log_path.name
        if result.truncated_bytes and later and i >= first:
            for dropped in later:
                report.dropped_segments.append(dropped.base_offset)
                if dropped.writable:
                    dropped.delete_files()
                else:
                    dropped.close()
            report.lost_ranges.append(
                LostRange(
                    name,
                    end,
                    None,
                    f"{result.truncated_bytes} bytes {'cut' if report.writable else 'bad'} at "
                    f"position {result.valid_bytes} ({result.end_reason}); the {len(later)} later "
                    f"segment(s) from offset {later[0].base_offset} "
                    f"{'were removed' if report.writable else 'would be removed'}",
                )
            )
            break
        claimed = always.get(base)
        if result.truncated_bytes and next_base is not None:
            report.lost_ranges.append(
                LostRange(
                    name,
                    end,
                    next_base - 1,
                    f"closed segment {'cut' if report.writable else 'would be cut'} at its "
                    f"last valid batch, position {result.valid_bytes} ({result.end_reason}; "
                    f"{result.truncated_bytes} bytes "
                    f"{'dropped' if report.writable else 'would be dropped'})",
                )
            )
        elif claimed is not None and end <= claimed < (
            INT64_MAX if next_base is None else next_base
        ):
            # (an index naming an offset of a later segment is damage of the index itself)
            upper = claimed if next_base is None else next_base - 1
            report.lost_ranges.append(
                LostRange(
                    name,
                    end,
                    upper,
                    f"its index names offset {claimed} but the .log ends with offset {end - 1} "
                    f"at position {result.valid_bytes}: the .log lost its tail",
                )
            )
    return kept


#: A read-only load retries this many times when a file it listed vanished before it opened
#: it (a writer holding the directory renamed or deleted it meanwhile).
READ_ONLY_LOAD_ATTEMPTS = 16


def _vanished(exc: BaseException) -> bool:
    """True when ``exc`` (or what it wraps) is a file found missing."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, FileNotFoundError):
            return True
        seen = seen.__cause__
    return False


def load_partition_dir(
    directory: Path,
    settings: SegmentSettings,
    *,
    recovery_point: int,
    log_start_offset: int,
    had_clean_shutdown: bool,
    now_ms: int,
    writable: bool = True,
    _no_split: frozenset[int] = frozenset(),
) -> LoadedLog:
    """Open a partition directory following the module's steps; never loses a valid batch.

    A read-only load may run while a writer (a broker, ``seglog maintain``) holds the
    directory: a segment file it listed can be renamed (``.deleted``, a swap) or removed by
    retention or the cleaner before it is opened. The load then starts again from the
    listing (up to :data:`READ_ONLY_LOAD_ATTEMPTS` times): once a segment is open its
    descriptors keep it readable whatever the writer does to its name.

    (``_no_split``: internal, the bases an earlier attempt found could not be split.)
    """
    for attempt in range(1, READ_ONLY_LOAD_ATTEMPTS + 1):
        try:
            return _load_partition_dir(
                directory,
                settings,
                recovery_point=recovery_point,
                log_start_offset=log_start_offset,
                had_clean_shutdown=had_clean_shutdown,
                now_ms=now_ms,
                writable=writable,
                no_split=_no_split,
            )
        except (OSError, SeglogError) as exc:
            if writable or attempt == READ_ONLY_LOAD_ATTEMPTS or not _vanished(exc):
                raise
    raise AssertionError("unreachable")  # the last attempt returned or raised


def _load_partition_dir(
    directory: Path,
    settings: SegmentSettings,
    *,
    recovery_point: int,
    log_start_offset: int,
    had_clean_shutdown: bool,
    now_ms: int,
    writable: bool,
    no_split: frozenset[int],
) -> LoadedLog:
    """One attempt of :func:`load_partition_dir`."""
    _no_split = no_split
    report = LoadReport(directory, had_clean_shutdown, writable=writable)
    if writable:
        swaps = _file_pass(directory, report)
        _complete_swaps(directory, swaps, settings, now_ms, report)
    segments, missing_index = _open_segments(directory, settings, now_ms, writable, report)
    opened = list(segments)
    try:
        return _finish_load(
            directory,
            settings,
            segments,
            missing_index,
            report,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=had_clean_shutdown,
            now_ms=now_ms,
            writable=writable,
            opened=opened,
            no_split=_no_split,
        )
    except _OffsetOverflow as overflow:
        _release_all(opened)
        no_split = _no_split
        try:
            note = str(
                split_overflowed_segment(directory, overflow.base_offset, overflow.next_base)
            )
        except NoOffsetOverflowError:
            note = None
            no_split = _no_split | {overflow.base_offset}
        loaded = load_partition_dir(
            directory,
            settings,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=had_clean_shutdown,
            now_ms=now_ms,
            writable=writable,
            _no_split=no_split,
        )
        # the first attempt's file pass is part of this load; its recovery was redone
        loaded.report.removed_files[:0] = report.removed_files
        loaded.report.completed_swaps[:0] = report.completed_swaps
        loaded.report.split_segments[:0] = [note] if note else []
        return loaded
    except BaseException:
        # e.g. ENOSPC rebuilding an index on a full disk: close every segment opened here, so
        # a caller retrying the open until space returns leaks no descriptor.
        _release_all(opened)
        raise


def _finish_load(
    directory: Path,
    settings: SegmentSettings,
    segments: list[LogSegment],
    missing_index: dict[int, int | None],
    report: LoadReport,
    *,
    recovery_point: int,
    log_start_offset: int,
    had_clean_shutdown: bool,
    now_ms: int,
    writable: bool,
    opened: list[LogSegment],
    no_split: frozenset[int] | None = None,
) -> LoadedLog:
    """Steps 4 and 5 of :func:`load_partition_dir` (``opened`` collects every segment opened,
    for the caller to release when a step fails)."""
    if had_clean_shutdown:
        first = len(segments)
    else:
        first = 0
        for i, segment in enumerate(segments):
            if segment.base_offset <= recovery_point:
                first = i
    segments = _recover_from(segments, first, missing_index, report, no_split)
    if segments and segments[-1].next_offset() < log_start_offset:
        for segment in segments:
            report.dropped_segments.append(segment.base_offset)
            if writable:
                segment.delete_files()
            else:
                segment.close()
        segments = []
    if not segments:
        segments = [settings.open_segment(directory, log_start_offset, now_ms, writable=writable)]
        opened.extend(segments)
    log_end_offset = segments[-1].next_offset()
    recovery_point = log_end_offset if had_clean_shutdown else min(recovery_point, log_end_offset)
    log_start_offset = max(log_start_offset, segments[0].base_offset)
    segments[-1].make_active()
    if writable:
        live = {segment.base_offset for segment in segments}
        recovered = {r.base_offset: r.producer_batches for r in report.recovered}
        rebuilt = rebuild_txn_indexes(
            directory,
            segments,
            {base: seen for base, seen in recovered.items() if base in live},
            log_start_offset,
            now_ms,
            report.snapshot_problems,
        )
        # Snapshots go with their segments (one below the first segment is a leftover of an
        # interrupted deletion) and never lie above the log end (a cut tail took their data).
        removed = delete_snapshots_outside(directory, segments[0].base_offset, log_end_offset)
        report.removed_files.extend(snapshot_file_name(offset) for offset in removed)
    if writable and (report.removed_files or report.dropped_segments):
        fsync_directory(directory)
    return LoadedLog(
        segments,
        log_start_offset,
        log_end_offset,
        recovery_point,
        report,
        rebuilt if writable else None,
    )
