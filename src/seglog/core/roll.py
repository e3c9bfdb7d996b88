"""When the active segment rolls: Kafka's ``LogSegment.shouldRoll`` as a pure decision.

Checked before every append. The segment rolls when **any** of these holds, tested in this
order so the reported reason is the first that applies:

1. ``SEGMENT_BYTES``: ``size > segment.bytes - append_bytes`` (the append would take the
   ``.log`` over ``segment.bytes``);
2. ``SEGMENT_MS``: the segment is not empty and the time it has waited exceeds
   ``max_segment_ms - roll_jitter_ms``. The wait is measured with **record timestamps**: the
   append's largest timestamp minus the timestamp of the segment's first append, when that
   first timestamp is known (>= 0); otherwise with the wall clock since the segment was
   created (in memory, so a restart resets it);
3. ``INDEX_FULL``: the offset index is full (``entries >= max entries``) or the time index is
   (``entries >= max entries - 1``: its last slot is reserved for the roll's final entry);
4. ``OFFSET_OVERFLOW``: the append's last offset minus the segment's base offset is not an
   int32 in [0, 2^31 - 1], so it could not be stored as a relative offset.

``roll_jitter_ms`` is drawn once per segment by :func:`draw_roll_jitter_ms`.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass
from typing import Protocol

INT32_MAX = (1 << 31) - 1


class RollReason(enum.Enum):
    """Why the active segment rolled."""

    SEGMENT_BYTES = "segment.bytes"
    SEGMENT_MS = "segment.ms"
    INDEX_FULL = "index full"
    OFFSET_OVERFLOW = "relative offset overflow"


class SegmentRollState(Protocol):
    """What the roll decision reads of the active segment (a ``LogSegment`` provides it)."""

    @property
    def base_offset(self) -> int: ...
    @property
    def size_bytes(self) -> int: ...
    @property
    def rolling_based_timestamp(self) -> int: ...
    @property
    def created_ms(self) -> int: ...
    @property
    def offset_index_entries(self) -> int: ...
    @property
    def offset_index_max_entries(self) -> int: ...
    @property
    def time_index_entries(self) -> int: ...
    @property
    def time_index_max_entries(self) -> int: ...
    @property
    def roll_jitter_ms(self) -> int: ...


@dataclass(frozen=True, slots=True)
class ActiveSegmentState:
    """A plain :class:`SegmentRollState` (tests, tools)."""

    base_offset: int
    size_bytes: int
    rolling_based_timestamp: int  # first append's largest timestamp, -1 when unknown
    created_ms: int  # wall clock at creation (in memory)
    offset_index_entries: int
    offset_index_max_entries: int
    time_index_entries: int
    time_index_max_entries: int
    roll_jitter_ms: int


@dataclass(frozen=True, slots=True)
class PendingAppend:
    """What the roll decision needs to know about the append that comes next."""

    size_bytes: int
    max_timestamp: int
    last_offset: int


def time_waited_for_roll_ms(segment: SegmentRollState, append: PendingAppend, now_ms: int) -> int:
    """How long the segment has been open, by record time when known, else by wall clock."""
    if segment.rolling_based_timestamp >= 0:
        return append.max_timestamp - segment.rolling_based_timestamp
    return now_ms - segment.created_ms


def roll_reason(
    segment: SegmentRollState,
    append: PendingAppend,
    *,
    segment_bytes: int,
    max_segment_ms: int,
    now_ms: int,
) -> RollReason | None:
    """The first roll condition that holds for this append, or None to keep the segment."""
    if segment.size_bytes > segment_bytes - append.size_bytes:
        return RollReason.SEGMENT_BYTES
    if (
        segment.size_bytes > 0
        and time_waited_for_roll_ms(segment, append, now_ms)
        > max_segment_ms - segment.roll_jitter_ms
    ):
        return RollReason.SEGMENT_MS
    if (
        segment.offset_index_entries >= segment.offset_index_max_entries
        or segment.time_index_entries >= segment.time_index_max_entries - 1
    ):
        return RollReason.INDEX_FULL
    if not 0 <= append.last_offset - segment.base_offset <= INT32_MAX:
        return RollReason.OFFSET_OVERFLOW
    return None


def draw_roll_jitter_ms(segment_jitter_ms: int, segment_ms: int, rng: random.Random) -> int:
    """Kafka's per-segment jitter: 0 when disabled, else uniform in [0, min(jitter, segment.ms))."""
    if segment_jitter_ms <= 0:
        return 0
    return rng.randrange(min(segment_jitter_ms, segment_ms))
