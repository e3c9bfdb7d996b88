"""The cleaner's pure decisions (spec ``kafka-cleaner.md`` §2, §5.2)."""

from __future__ import annotations

from seglog.core.cleaning import (
    CleanableOffsets,
    CleanerSegmentFacts,
    cleanable_offsets,
    delete_horizon_ms,
    group_segments_by_size,
    is_cleanable,
    log_to_clean,
    max_compaction_delay_ms,
    pick_filthiest,
)

NOW = 1_700_000_000_000


def seg(
    base: int,
    size: int,
    *,
    ts: int = NOW - 10**9,
    first_ts: int = -1,
    idx: int = 0,
    active: bool = False,
) -> CleanerSegmentFacts:
    return CleanerSegmentFacts(base, size, ts, first_ts, idx, idx, active)


def test_seed_002_grouping() -> None:
    """Seed 002: after a first round, sizes [0.4, 0.4, 0.3, 0.7, 0.3, 1] GB group as
    [0.4, 0.4] [0.3, 0.7] [0.3] [1] under segment.bytes = 1 GB (units of 0.1 GB here)."""
    sizes = [4, 4, 3, 7, 3, 10]
    segments = [seg(i * 100, s) for i, s in enumerate(sizes)]
    groups = group_segments_by_size(
        segments, max_size_bytes=10, max_index_bytes=10**9, first_uncleanable_offset=600
    )
    assert [[s.size_bytes for s in g] for g in groups] == [[4, 4], [3, 7], [3], [10]]
    assert [g[0].base_offset for g in groups] == [0, 200, 400, 500]


def test_grouping_index_and_offset_span_limits() -> None:
    segments = [seg(0, 1, idx=6), seg(10, 1, idx=6), seg(20, 1, idx=1)]
    groups = group_segments_by_size(
        segments, max_size_bytes=100, max_index_bytes=12 * 12, first_uncleanable_offset=30
    )
    assert [[s.base_offset for s in g] for g in groups] == [[0, 10], [20]]
    span = [seg(0, 1), seg(2**31, 1), seg(2**31 + 5, 0)]
    groups = group_segments_by_size(
        span, max_size_bytes=100, max_index_bytes=10**6, first_uncleanable_offset=2**32
    )
    # the second segment would put offsets beyond int32 of base 0; an empty one always joins
    assert [[s.base_offset for s in g] for g in groups] == [[0], [2**31, 2**31 + 5]]


def test_cleanable_offsets_checkpoint_resets_and_bounds() -> None:
    segments = [seg(0, 100), seg(10, 100), seg(20, 100, active=True)]
    common = dict(
        log_start_offset=5,
        log_end_offset=25,
        high_watermark=25,
        min_compaction_lag_ms=0,
        now_ms=NOW,
    )
    assert cleanable_offsets(segments, checkpoint=None, **common) == CleanableOffsets(5, 20, False)
    low = cleanable_offsets(segments, checkpoint=2, **common)
    assert (low.first_dirty_offset, low.force_update_checkpoint) == (5, True)
    high = cleanable_offsets(segments, checkpoint=99, **common)
    assert (high.first_dirty_offset, high.force_update_checkpoint) == (5, True)
    ok = cleanable_offsets(segments, checkpoint=12, **common)
    assert (ok.first_dirty_offset, ok.first_uncleanable_offset) == (12, 20)
    hw = cleanable_offsets(segments, checkpoint=12, **{**common, "high_watermark": 15})
    assert hw.first_uncleanable_offset == 15


def test_min_lag_excludes_the_first_young_segment() -> None:
    segments = [seg(0, 10, ts=NOW - 10_000), seg(10, 10, ts=NOW - 10), seg(20, 10, active=True)]
    offsets = cleanable_offsets(
        segments,
        checkpoint=0,
        log_start_offset=0,
        log_end_offset=25,
        high_watermark=25,
        min_compaction_lag_ms=1000,
        now_ms=NOW,
    )
    assert offsets.first_uncleanable_offset == 10


def test_ratio_rounds_the_bound_down_and_counts_a_split_segment_twice() -> None:
    segments = [seg(0, 100), seg(10, 100), seg(20, 100), seg(30, 50, active=True)]
    offsets = CleanableOffsets(15, 25, False)
    to_clean = log_to_clean(
        segments, offsets, max_compaction_delay=0, min_cleanable_dirty_ratio=0.5
    )
    assert to_clean.first_uncleanable_offset == 20
    assert (to_clean.clean_bytes, to_clean.cleanable_bytes) == (200, 100)
    assert to_clean.cleanable_ratio == 100 / 300
    assert not is_cleanable(to_clean)


def test_eligibility_is_strictly_greater_and_must_clean_needs_bytes() -> None:
    segments = [seg(0, 100), seg(10, 100, active=True)]
    half = log_to_clean(
        [seg(0, 100), seg(10, 100), seg(20, 1, active=True)],
        CleanableOffsets(10, 20, False),
        max_compaction_delay=0,
        min_cleanable_dirty_ratio=0.5,
    )
    assert half.cleanable_ratio == 0.5 and not is_cleanable(half)
    overdue_empty = log_to_clean(
        segments,
        CleanableOffsets(10, 10, False),
        max_compaction_delay=5,
        min_cleanable_dirty_ratio=0.5,
    )
    assert overdue_empty.cleanable_bytes == 0 and not is_cleanable(overdue_empty)
    overdue = log_to_clean(
        segments,
        CleanableOffsets(0, 10, False),
        max_compaction_delay=5,
        min_cleanable_dirty_ratio=0.99,
    )
    assert is_cleanable(overdue)


def test_pick_filthiest_takes_the_highest_ratio_first_on_ties() -> None:
    segments = [seg(0, 100), seg(10, 100), seg(20, 1, active=True)]
    a = log_to_clean(
        segments,
        CleanableOffsets(10, 20, False),
        max_compaction_delay=0,
        min_cleanable_dirty_ratio=0.1,
    )
    b = log_to_clean(
        segments,
        CleanableOffsets(0, 20, False),
        max_compaction_delay=0,
        min_cleanable_dirty_ratio=0.1,
    )
    assert pick_filthiest([a, b, b]) == 1
    assert pick_filthiest([]) is None


def test_max_compaction_delay() -> None:
    segments = [
        seg(0, 1, first_ts=NOW - 5000),
        seg(10, 1, first_ts=NOW - 100),
        seg(20, 1, first_ts=NOW - 10, active=True),
    ]
    assert (
        max_compaction_delay_ms(
            segments, first_dirty_offset=0, max_compaction_lag_ms=1000, now_ms=NOW
        )
        == 4000
    )
    assert (
        max_compaction_delay_ms(
            segments, first_dirty_offset=10, max_compaction_lag_ms=1000, now_ms=NOW
        )
        == 0
    )


def test_delete_horizon_saturates() -> None:
    assert delete_horizon_ms(NOW, 1000) == NOW + 1000
    assert delete_horizon_ms(NOW, 2**63 - 1) == 2**63 - 1
