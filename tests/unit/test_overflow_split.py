"""The KAFKA-6264 split plan (``seglog.core.overflow_split``): pure rules."""

from __future__ import annotations

from seglog.core.overflow_split import EntryHeader, SplitPiece, plan_overflow_split

BIG = (1 << 31) - 1
ENTRIES = [
    EntryHeader(0, 100, 10, 10),
    EntryHeader(100, 100, 11, 12),
    EntryHeader(200, 100, 10 + BIG, 10 + BIG),
    EntryHeader(300, 100, 11 + BIG, 12 + BIG),
]


def test_plan_overflow_split_rules() -> None:
    """Pieces start where a batch no longer fits int32 relative offsets, the first keeps the
    segment's base, a torn tail stays in the last piece; a log whose offsets go backwards,
    fall below the base or reach the next segment is not split."""
    assert plan_overflow_split(10, ENTRIES, 450, None) == [
        SplitPiece(10, 0, 300),
        SplitPiece(11 + BIG, 300, 450),
    ]
    assert plan_overflow_split(10, ENTRIES[:3], 300, None) is None  # nothing overflows
    assert plan_overflow_split(10, ENTRIES, 400, 12 + BIG) is None  # reaches the next base
    backwards = [*ENTRIES[:3], EntryHeader(300, 100, 5, 5)]
    assert plan_overflow_split(10, backwards, 400, None) is None
    below = [EntryHeader(0, 100, 3, 3), *ENTRIES[1:]]
    assert plan_overflow_split(10, below, 400, None) is None


def test_first_batch_past_the_base_leaves_an_empty_first_piece() -> None:
    """A first batch that already does not fit the segment's base: the first piece (at the
    base, so the swap recovery covers the original) is empty."""
    entries = [EntryHeader(0, 100, 5 + BIG, 5 + BIG)]
    assert plan_overflow_split(0, entries, 100, None) == [
        SplitPiece(0, 0, 0),
        SplitPiece(5 + BIG, 0, 100),
    ]
