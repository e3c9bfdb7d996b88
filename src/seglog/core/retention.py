"""Which segments retention deletes: Kafka's ``deleteOldSegments`` as a pure plan.

Three rules run in this order, each removing a **prefix** of what the previous left (a rule
stops at the first segment it would keep):

1. **log start offset** (always): a segment whose *next* segment starts at or below the log
   start offset holds nothing a reader may fetch;
2. **size** (``retention.bytes`` >= 0, policy with ``delete``): while the log is bigger than
   ``retention.bytes``, delete from the oldest while ``excess - segment size >= 0``;
3. **time** (``retention.ms`` >= 0, policy with ``delete``): a segment whose largest timestamp
   is more than ``retention.ms`` before now. The largest timestamp is the segment's max record
   timestamp (the time index's last entry); only a segment with no timestamp at all uses its
   file's modification time (a file time is easily changed by copying or ``touch``).

A segment is deletable only when the high watermark is at or past its end (the next
segment's base, or the log end offset for the active segment), and an **empty active segment
never is**. When every segment, the active one included, is deletable, the log must **roll
first** (a new empty active segment at the log end offset) and then delete them all: a log
always keeps an active segment. The new log start offset is the first surviving
segment's base (the log end offset after such a roll); it never moves backwards.

Timestamps in the future (a producer with a fast clock) make a segment look young:
it is kept until now passes its largest timestamp by ``retention.ms``, exactly as in Kafka.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_DURATION_UNITS_MS = (("days", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1_000))
_BYTE_UNITS = ("KiB", "MiB", "GiB", "TiB")


class RetentionRule(enum.StrEnum):
    """Why a segment was deleted."""

    LOG_START_OFFSET = "log start offset"
    SIZE = "retention.bytes"
    TIME = "retention.ms"


@dataclass(frozen=True, slots=True)
class SegmentFacts:
    """What the plan needs to know about one segment."""

    base_offset: int
    size_bytes: int
    largest_timestamp_ms: int  # max record timestamp, or the file mtime when it has none
    is_active: bool = False


@dataclass(frozen=True, slots=True)
class SegmentDeletion:
    """One segment the plan deletes, and why."""

    base_offset: int
    size_bytes: int
    rule: RetentionRule
    reason: str


@dataclass(frozen=True, slots=True)
class RetentionPlan:
    """Segments to delete (oldest first), whether to roll first, and the new log start."""

    deletions: tuple[SegmentDeletion, ...]
    needs_roll: bool
    new_log_start_offset: int | None

    @property
    def size_bytes(self) -> int:
        """Bytes the plan frees."""
        return sum(d.size_bytes for d in self.deletions)

    @property
    def is_empty(self) -> bool:
        """True when nothing is deleted."""
        return not self.deletions


@dataclass(frozen=True, slots=True)
class RetentionSettings:
    """The configs retention reads (Kafka's names)."""

    retention_ms: int
    retention_bytes: int
    has_delete_policy: bool


def plan_retention(
    segments: Sequence[SegmentFacts],
    settings: RetentionSettings,
    *,
    log_start_offset: int,
    log_end_offset: int,
    high_watermark: int,
    now_ms: int,
) -> RetentionPlan:
    """The segments retention deletes now (see the module docstring)."""
    remaining = list(segments)
    deletions: list[SegmentDeletion] = []

    def take_prefix(
        predicate: Callable[[int, SegmentFacts], str | None], rule: RetentionRule
    ) -> None:
        count = 0
        for i, segment in enumerate(remaining):
            upper = remaining[i + 1].base_offset if i + 1 < len(remaining) else log_end_offset
            is_empty_active = segment.is_active and segment.size_bytes == 0
            if high_watermark < upper or is_empty_active:
                break
            reason = predicate(i, segment)
            if reason is None:
                break
            deletions.append(SegmentDeletion(segment.base_offset, segment.size_bytes, rule, reason))
            count += 1
        del remaining[:count]

    def breaches_log_start(i: int, segment: SegmentFacts) -> str | None:
        if i + 1 < len(remaining) and remaining[i + 1].base_offset <= log_start_offset:
            return (
                f"next segment starts at {remaining[i + 1].base_offset}, at or below the log "
                f"start offset {log_start_offset}"
            )
        return None

    take_prefix(breaches_log_start, RetentionRule.LOG_START_OFFSET)

    if settings.has_delete_policy and settings.retention_bytes >= 0:
        total = sum(s.size_bytes for s in remaining)
        excess = total - settings.retention_bytes
        if excess >= 0:

            def breaches_size(_i: int, segment: SegmentFacts) -> str | None:
                nonlocal excess
                if excess - segment.size_bytes < 0:
                    return None
                excess -= segment.size_bytes
                return (
                    f"log of {total} bytes ({human_bytes(total)}) is over retention.bytes "
                    f"{settings.retention_bytes} ({human_bytes(settings.retention_bytes)})"
                )

            take_prefix(breaches_size, RetentionRule.SIZE)

    if settings.has_delete_policy and settings.retention_ms >= 0:

        def breaches_time(_i: int, segment: SegmentFacts) -> str | None:
            age = now_ms - segment.largest_timestamp_ms
            if age <= settings.retention_ms:
                return None
            return (
                f"largest timestamp {segment.largest_timestamp_ms} "
                f"({utc_time(segment.largest_timestamp_ms)}) is {age} ms "
                f"({human_duration(age)}) old, over retention.ms {settings.retention_ms} "
                f"({human_duration(settings.retention_ms)})"
            )

        take_prefix(breaches_time, RetentionRule.TIME)

    if not deletions:
        return RetentionPlan((), False, None)
    needs_roll = not remaining
    new_start = log_end_offset if needs_roll else remaining[0].base_offset
    return RetentionPlan(tuple(deletions), needs_roll, max(log_start_offset, new_start))


# --- the human forms in reasons (the exact figures stay beside them) ---------------------------


def human_duration(duration_ms: int) -> str:
    """``duration_ms`` in its largest unit with one decimal: ``2.8 days``, ``1.5 h``, ``250 ms``."""
    for unit, unit_ms in _DURATION_UNITS_MS:
        if abs(duration_ms) >= unit_ms:
            return f"{duration_ms / unit_ms:.1f} {unit}"
    return f"{duration_ms} ms"


def human_bytes(size_bytes: int) -> str:
    """``size_bytes`` in binary units with one decimal: ``384.0 KiB``; below 1 KiB ``N B``."""
    if abs(size_bytes) < 1024:
        return f"{size_bytes} B"
    value = float(size_bytes)
    for unit in _BYTE_UNITS:
        value /= 1024
        if abs(value) < 1024 or unit == _BYTE_UNITS[-1]:
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable: the last unit always returns")


def utc_time(timestamp_ms: int) -> str:
    """``timestamp_ms`` (epoch milliseconds) as ``2026-11-23 03:22:03 UTC``; a timestamp
    outside the calendar's range is shown as the number."""
    try:
        moment = datetime.datetime.fromtimestamp(timestamp_ms / 1000, tz=datetime.UTC)
    except (OverflowError, OSError, ValueError):
        return f"{timestamp_ms} ms since the epoch"
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
