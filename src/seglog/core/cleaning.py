"""What the log cleaner cleans: Kafka's cleanable range, dirty ratio, lags and grouping, as pure
functions over segment facts.

Vocabulary: offsets below the checkpointed **first dirty offset** are the *clean*
section; from it to the log end is the *dirty* section, split at the **first uncleanable
offset** into the cleanable part and the rest (which always holds the active segment).

* :func:`cleanable_offsets`: the first dirty offset comes from ``cleaner-offset-
  checkpoint``, reset to the log start (``force_update``) when it is below the log start or
  past the log end; the first uncleanable offset is the least of the high watermark, the
  active segment's base and, when ``min.compaction.lag.ms`` > 0, the base of the first
  segment at/after the dirty offset holding a record younger than the lag.
* :func:`log_to_clean`: the uncleanable bound **rounded down to a segment base**;
  ``cleanable_ratio`` = cleanable bytes / (clean + cleanable bytes), where a segment holding
  the first dirty offset counts in both (Kafka's quirk, kept).
* :func:`max_compaction_delay_ms` (KIP-354): how long past ``max.compaction.lag.ms``
  the oldest dirty segment's first batch is; > 0 makes the log a *must-clean*.
* :func:`is_cleanable` and :func:`pick_filthiest`: eligible when must-clean with
  cleanable bytes, or when the ratio is **strictly greater** than
  ``min.cleanable.dirty.ratio``; the highest ratio wins, ties to the first.
* :func:`group_segments_by_size`: greedy, order-preserving groups whose log bytes fit
  ``segment.bytes``, whose offset-index and time-index bytes each fit ``segment.index.bytes``,
  and whose offsets stay within an int32 of the group's base (an empty segment skips that
  check, KAFKA-12889).
* :func:`delete_horizon_ms` / :func:`legacy_delete_horizon_ms`: KIP-534's wall-clock
  horizon stamped into v2 batches, and the pre-3.1 horizon from segment modification times
  that still applies to legacy (v0/v1) entries.

Every function is pure: facts in, numbers out. The engine gathers the facts and acts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

INT32_MAX = (1 << 31) - 1
LONG_MAX = (1 << 63) - 1
OFFSET_INDEX_ENTRY_BYTES = 8
TIME_INDEX_ENTRY_BYTES = 12


@dataclass(frozen=True, slots=True)
class CleanerSegmentFacts:
    """What the cleaner's planning needs to know about one segment."""

    base_offset: int
    size_bytes: int
    largest_timestamp_ms: int  # max record timestamp, else the .log mtime (KIP-58 uses it)
    first_batch_timestamp_ms: int  # the first batch's max timestamp; -1 if unknown (KIP-354)
    offset_index_entries: int = 0
    time_index_entries: int = 0
    is_active: bool = False

    @property
    def offset_index_bytes(self) -> int:
        """Bytes of the (trimmed) offset index."""
        return self.offset_index_entries * OFFSET_INDEX_ENTRY_BYTES

    @property
    def time_index_bytes(self) -> int:
        """Bytes of the (trimmed) time index."""
        return self.time_index_entries * TIME_INDEX_ENTRY_BYTES


@dataclass(frozen=True, slots=True)
class CleanableOffsets:
    """The dirty range of a log."""

    first_dirty_offset: int
    first_uncleanable_offset: int  # not yet segment-aligned
    force_update_checkpoint: bool  # the checkpoint was invalid and is rewritten (KAFKA-6266)
    reset_reason: str | None = None


@dataclass(frozen=True, slots=True)
class LogToClean:
    """One candidate log with its sizes and ratio."""

    first_dirty_offset: int
    first_uncleanable_offset: int  # segment-aligned: the base of the first uncleanable segment
    clean_bytes: int
    cleanable_bytes: int
    max_compaction_delay_ms: int
    min_cleanable_dirty_ratio: float

    @property
    def total_bytes(self) -> int:
        """Clean plus cleanable bytes."""
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        """Dirty (cleanable) bytes over clean plus cleanable bytes; 0 for an empty log."""
        total = self.total_bytes
        return self.cleanable_bytes / total if total > 0 else 0.0

    @property
    def needs_compaction_now(self) -> bool:
        """A must-clean: the oldest dirty record is older than ``max.compaction.lag.ms``."""
        return self.max_compaction_delay_ms > 0


def _segment_index_at(segments: Sequence[CleanerSegmentFacts], offset: int) -> int:
    """Index of the segment holding ``offset`` (the last base <= offset; 0 below the first)."""
    index = 0
    for i, segment in enumerate(segments):
        if segment.base_offset <= offset:
            index = i
        else:
            break
    return index


def cleanable_offsets(
    segments: Sequence[CleanerSegmentFacts],
    *,
    checkpoint: int | None,
    log_start_offset: int,
    log_end_offset: int,
    high_watermark: int,
    min_compaction_lag_ms: int,
    now_ms: int,
) -> CleanableOffsets:
    """Kafka's ``cleanableOffsets``; ``segments`` oldest first, the last is active."""
    force = False
    reason: str | None = None
    if checkpoint is None:
        first_dirty = log_start_offset
    elif checkpoint < log_start_offset:
        first_dirty, force = log_start_offset, True
        reason = f"checkpoint {checkpoint} is below the log start offset {log_start_offset}"
    elif checkpoint > log_end_offset:
        first_dirty, force = log_start_offset, True
        reason = f"checkpoint {checkpoint} is past the log end offset {log_end_offset}"
    else:
        first_dirty = checkpoint
    bounds = [high_watermark, segments[-1].base_offset]
    if min_compaction_lag_ms > 0:
        start = _segment_index_at(segments, first_dirty)
        for segment in segments[start:-1]:
            if segment.largest_timestamp_ms > now_ms - min_compaction_lag_ms:
                bounds.append(segment.base_offset)
                break
    first_uncleanable = max(first_dirty, min(bounds))
    return CleanableOffsets(first_dirty, first_uncleanable, force, reason)


def max_compaction_delay_ms(
    segments: Sequence[CleanerSegmentFacts],
    *,
    first_dirty_offset: int,
    max_compaction_lag_ms: int,
    now_ms: int,
) -> int:
    """KIP-354's delay: how far past ``max.compaction.lag.ms`` the earliest first-batch
    timestamp among the non-active segments from the dirty offset is (0 if not past)."""
    start = _segment_index_at(segments, first_dirty_offset)
    stamps = [
        s.first_batch_timestamp_ms for s in segments[start:-1] if s.first_batch_timestamp_ms > 0
    ]
    if not stamps:
        return 0
    clean_until = now_ms - max(max_compaction_lag_ms, 0)
    earliest = min(stamps)
    return clean_until - earliest if earliest < clean_until else 0


def log_to_clean(
    segments: Sequence[CleanerSegmentFacts],
    offsets: CleanableOffsets,
    *,
    max_compaction_delay: int,
    min_cleanable_dirty_ratio: float,
) -> LogToClean:
    """Sizes and ratio of a candidate, its uncleanable bound aligned to a segment base."""
    first_dirty = offsets.first_dirty_offset
    uncleanable_index = _segment_index_at(segments, offsets.first_uncleanable_offset)
    first_uncleanable = segments[uncleanable_index].base_offset
    clean_bytes = sum(s.size_bytes for s in segments if s.base_offset < first_dirty)
    from_index = _segment_index_at(segments, min(first_dirty, first_uncleanable))
    cleanable_bytes = sum(s.size_bytes for s in segments[from_index:uncleanable_index])
    return LogToClean(
        first_dirty_offset=first_dirty,
        first_uncleanable_offset=first_uncleanable,
        clean_bytes=clean_bytes,
        cleanable_bytes=cleanable_bytes,
        max_compaction_delay_ms=max_compaction_delay,
        min_cleanable_dirty_ratio=min_cleanable_dirty_ratio,
    )


def is_cleanable(candidate: LogToClean) -> bool:
    """Eligible now: a must-clean with cleanable bytes, or ratio > the topic minimum."""
    if candidate.total_bytes <= 0:
        return False
    if candidate.needs_compaction_now and candidate.cleanable_bytes > 0:
        return True
    return candidate.cleanable_ratio > candidate.min_cleanable_dirty_ratio


def pick_filthiest(candidates: Sequence[LogToClean]) -> int | None:
    """Index of the eligible candidate with the highest ratio (the first on ties), or None."""
    best: int | None = None
    for i, candidate in enumerate(candidates):
        if not is_cleanable(candidate):
            continue
        if best is None or candidate.cleanable_ratio > candidates[best].cleanable_ratio:
            best = i
    return best


def group_segments_by_size(
    segments: Sequence[CleanerSegmentFacts],
    *,
    max_size_bytes: int,
    max_index_bytes: int,
    first_uncleanable_offset: int,
) -> list[list[CleanerSegmentFacts]]:
    """Kafka's ``groupSegmentsBySize``: consecutive segments per group, each group
    rewritten into one segment named after its first base offset."""
    groups: list[list[CleanerSegmentFacts]] = []
    rest = list(segments)
    i = 0
    while i < len(rest):
        first = rest[i]
        group = [first]
        log_bytes = first.size_bytes
        index_bytes = first.offset_index_bytes
        time_index_bytes = first.time_index_bytes
        i += 1
        while i < len(rest):
            candidate = rest[i]
            estimated_last_offset = (
                rest[i + 1].base_offset - 1 if i + 1 < len(rest) else first_uncleanable_offset - 1
            )
            if not (
                log_bytes + candidate.size_bytes <= max_size_bytes
                and index_bytes + candidate.offset_index_bytes <= max_index_bytes
                and time_index_bytes + candidate.time_index_bytes <= max_index_bytes
                and (
                    candidate.size_bytes == 0
                    or estimated_last_offset - first.base_offset <= INT32_MAX
                )
            ):
                break
            group.append(candidate)
            log_bytes += candidate.size_bytes
            index_bytes += candidate.offset_index_bytes
            time_index_bytes += candidate.time_index_bytes
            i += 1
        groups.append(group)
    return groups


def delete_horizon_ms(now_ms: int, delete_retention_ms: int) -> int:
    """KIP-534: the horizon stamped into a v2 batch whose tombstones are first retained."""
    return min(now_ms + delete_retention_ms, LONG_MAX)


def legacy_delete_horizon_ms(
    clean_section_last_modified_ms: int | None, delete_retention_ms: int
) -> int:
    """The pre-KIP-534 horizon for legacy entries: the last clean-section
    segment's modification time minus ``delete.retention.ms`` (0 with no clean section)."""
    if clean_section_last_modified_ms is None:
        return 0
    return clean_section_last_modified_ms - delete_retention_ms


def retains_legacy_tombstone(segment_last_modified_ms: int, legacy_horizon_ms: int) -> bool:
    """The legacy rule: a tombstone in a source segment modified after the horizon stays."""
    return segment_last_modified_ms > legacy_horizon_ms
