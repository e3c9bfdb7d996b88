"""Splitting a segment whose offsets overflow its base (KAFKA-6264), as a pure plan.

A segment stores offsets relative to its base offset as int32, so it can hold offsets from
``base`` to ``base + 2^31 - 1`` only. Logs written by old brokers (before KAFKA-6264 made the
roll check the relative offset) can hold segments past that; Kafka's loader splits such a
segment into several (``LocalLog.splitOverflowedSegment``), each starting at the base offset
of its first batch, and seglog does the same (:mod:`seglog.storage.overflow_split` performs
the plan).

Rules of :func:`plan_overflow_split`, given every whole entry of the ``.log`` in file order:

* the first piece keeps the segment's own base offset (so the crash-safe replace, whose
  recovery covers the offsets from the lowest new base, always covers the original files);
  a batch whose last offset does not fit the current piece (``last - piece base > 2^31 - 1``)
  starts a new piece at its own first offset. The first piece is empty only when the first
  batch already does not fit the segment's base;
* a split is refused (None) when the entries are not a plausible log: an offset below the
  segment's base, entries whose offsets do not increase, an offset at or past the next
  segment's base, or nothing that overflows. The loader then recovers the segment as before
  (cut at the first batch it cannot keep), since such offsets are damage, not an old log;
* bytes after the last whole entry (a torn tail) go to the last piece, whose recovery cuts
  them as it would have cut them from the original: a split never loses or invents a byte,
  the pieces' sizes add up to the original's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class EntryHeader:
    """One whole entry (batch, or legacy message set entry) of a ``.log``: where it is and the
    offsets it holds (legacy: its offset field for both)."""

    position: int
    size_bytes: int
    first_offset: int
    last_offset: int


@dataclass(frozen=True, slots=True)
class SplitPiece:
    """One new segment of a split: ``base_offset`` and the byte range of the original ``.log``
    it takes, ``[start_position, end_position)``."""

    base_offset: int
    start_position: int
    end_position: int


def plan_overflow_split(
    base_offset: int,
    entries: Iterable[EntryHeader],
    file_size_bytes: int,
    next_segment_base: int | None,
) -> list[SplitPiece] | None:
    """The pieces to split a segment into (module rules), or None when it must not be split."""
    pieces: list[SplitPiece] = []
    piece_base, piece_start = base_offset, 0
    previous_last: int | None = None
    end = 0
    for entry in entries:
        if entry.first_offset < base_offset or entry.last_offset < entry.first_offset:
            return None
        if previous_last is not None and entry.first_offset <= previous_last:
            return None
        if next_segment_base is not None and entry.last_offset >= next_segment_base:
            return None
        if entry.last_offset - piece_base > INT32_MAX:
            pieces.append(SplitPiece(piece_base, piece_start, entry.position))
            piece_base, piece_start = entry.first_offset, entry.position
        previous_last = entry.last_offset
        end = entry.position + entry.size_bytes
    if not pieces:
        return None
    pieces.append(SplitPiece(piece_base, piece_start, max(end, file_size_bytes)))
    return pieces
