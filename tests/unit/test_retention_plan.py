"""The retention plan (spec §14): each rule alone, their order, the guards, and invariants."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from seglog.core.retention import (
    RetentionPlan,
    RetentionRule,
    RetentionSettings,
    SegmentFacts,
    human_bytes,
    human_duration,
    plan_retention,
    utc_time,
)

NOW = 1_700_000_000_000
DAY = 86_400_000
KEEP_ALL = RetentionSettings(retention_ms=-1, retention_bytes=-1, has_delete_policy=True)


def segs(*specs: tuple[int, int, int]) -> list[SegmentFacts]:
    """(base, size, largest timestamp) per segment; the last is active."""
    return [
        SegmentFacts(base, size, ts, is_active=i == len(specs) - 1)
        for i, (base, size, ts) in enumerate(specs)
    ]


def plan(
    segments: list[SegmentFacts],
    settings: RetentionSettings = KEEP_ALL,
    *,
    start: int = 0,
    end: int = 100,
    hw: int | None = None,
) -> RetentionPlan:
    return plan_retention(
        segments,
        settings,
        log_start_offset=start,
        log_end_offset=end,
        high_watermark=end if hw is None else hw,
        now_ms=NOW,
    )


LOG = segs(
    (0, 1000, NOW - 9 * DAY), (10, 1000, NOW - 8 * DAY), (20, 1000, NOW - DAY), (30, 500, NOW)
)


def bases(result: RetentionPlan) -> list[int]:
    return [d.base_offset for d in result.deletions]


def test_nothing_to_do() -> None:
    result = plan(LOG)
    assert result.is_empty and not result.needs_roll and result.new_log_start_offset is None


def test_log_start_offset_rule_deletes_segments_wholly_below_it() -> None:
    result = plan(LOG, start=25)  # seed 002's picture: next bases 10 and 20 are <= 25
    assert bases(result) == [0, 10]
    assert {d.rule for d in result.deletions} == {RetentionRule.LOG_START_OFFSET}
    assert result.new_log_start_offset == 25  # never below the requested start


def test_log_start_offset_rule_applies_without_the_delete_policy() -> None:
    compact_only = RetentionSettings(retention_ms=0, retention_bytes=0, has_delete_policy=False)
    assert bases(plan(LOG, compact_only, start=20)) == [0, 10]
    assert plan(LOG, compact_only).is_empty


def test_size_rule_follows_kafkas_excess_walk() -> None:
    # total 3500, limit 2000: excess 1500 covers the first 1000-byte segment only
    result = plan(LOG, RetentionSettings(-1, 2000, True))
    assert bases(result) == [0]
    assert result.deletions[0].rule is RetentionRule.SIZE
    assert bases(plan(LOG, RetentionSettings(-1, 1500, True))) == [0, 10]
    assert plan(LOG, RetentionSettings(-1, 3500, True)).is_empty  # at the limit: no excess
    assert plan(LOG, RetentionSettings(-1, 3501, True)).is_empty  # under the limit


def test_time_rule_uses_the_largest_timestamp() -> None:
    week = RetentionSettings(7 * DAY, -1, True)
    result = plan(LOG, week)
    assert bases(result) == [0, 10]
    assert all(d.rule is RetentionRule.TIME for d in result.deletions)
    assert result.new_log_start_offset == 20
    exactly = plan(segs((0, 1, NOW - 7 * DAY), (10, 1, NOW)), week)
    assert exactly.is_empty  # "more than" retention.ms


def test_reasons_give_exact_figures_and_readable_ones() -> None:
    """A reason keeps the exact numbers (scripts parse them) and adds what a person reads."""
    by_time = plan(LOG, RetentionSettings(7 * DAY, -1, True)).deletions[0].reason
    assert by_time == (
        f"largest timestamp {NOW - 9 * DAY} (2023-11-05 22:13:20 UTC) is {9 * DAY} ms "
        f"(9.0 days) old, over retention.ms {7 * DAY} (7.0 days)"
    )
    by_size = plan(LOG, RetentionSettings(-1, 2000, True)).deletions[0].reason
    assert by_size == "log of 3500 bytes (3.4 KiB) is over retention.bytes 2000 (2.0 KiB)"


def test_human_forms() -> None:
    assert human_duration(250) == "250 ms"
    assert human_duration(1_500) == "1.5 s"
    assert human_duration(90 * 60_000) == "1.5 h"
    assert human_duration(2 * DAY) == "2.0 days"
    assert human_bytes(0) == "0 B" and human_bytes(1023) == "1023 B"
    assert human_bytes(393_216) == "384.0 KiB"
    assert human_bytes(3 * 1024**3) == "3.0 GiB"
    assert human_bytes(2 * 1024**5) == "2048.0 TiB"
    assert utc_time(0) == "1970-01-01 00:00:00 UTC"
    assert utc_time(2**63 - 1) == f"{2**63 - 1} ms since the epoch"


def test_rules_run_in_kafkas_order_each_on_what_is_left() -> None:
    settings = RetentionSettings(DAY // 2, 2500, True)
    result = plan(LOG, settings, start=15)
    assert [(d.base_offset, d.rule) for d in result.deletions] == [
        (0, RetentionRule.LOG_START_OFFSET),
        (10, RetentionRule.TIME),  # size: 2500 left of 2500 -> 0 excess deletes nothing
        (20, RetentionRule.TIME),
    ]


def test_every_segment_expired_means_roll_first_then_delete_all() -> None:
    old = segs((0, 100, NOW - 9 * DAY), (10, 100, NOW - 9 * DAY))
    result = plan(old, RetentionSettings(DAY, -1, True), end=20)
    assert bases(result) == [0, 10]
    assert result.needs_roll and result.new_log_start_offset == 20


def test_an_empty_active_segment_is_never_deleted() -> None:
    log = segs((0, 100, NOW - 9 * DAY), (10, 0, -1))
    result = plan(log, RetentionSettings(DAY, 0, True), end=10)
    assert bases(result) == [0] and not result.needs_roll


def test_nothing_past_the_high_watermark_is_deleted() -> None:
    assert bases(plan(LOG, RetentionSettings(0, -1, True), hw=15)) == [0]


def test_future_timestamps_keep_a_segment_and_stop_the_prefix() -> None:
    clock_skew = segs((0, 10, NOW + DAY), (10, 10, NOW - 9 * DAY), (20, 10, NOW))
    assert plan(clock_skew, RetentionSettings(DAY, -1, True)).is_empty


def test_segments_without_timestamps_use_the_file_time_given() -> None:
    # the engine passes the .log mtime as largest_timestamp_ms when a segment has none
    log = segs((0, 10, NOW - 3 * DAY), (10, 10, NOW))
    assert bases(plan(log, RetentionSettings(2 * DAY, -1, True))) == [0]


@given(
    sizes=st.lists(st.integers(0, 5000), min_size=1, max_size=8),
    ages=st.lists(st.integers(-DAY, 20 * DAY), min_size=8, max_size=8),
    retention_ms=st.integers(-1, 10 * DAY),
    retention_bytes=st.integers(-1, 30_000),
    start=st.integers(0, 100),
    has_delete=st.booleans(),
)
def test_plan_invariants(
    sizes: list[int],
    ages: list[int],
    retention_ms: int,
    retention_bytes: int,
    start: int,
    has_delete: bool,
) -> None:
    log = segs(*[(i * 10, size, NOW - ages[i]) for i, size in enumerate(sizes)])
    end = len(sizes) * 10
    result = plan(
        log, RetentionSettings(retention_ms, retention_bytes, has_delete), start=start, end=end
    )
    deleted = bases(result)
    assert deleted == [s.base_offset for s in log[: len(deleted)]]  # always a prefix
    if result.deletions:
        assert result.needs_roll == (len(deleted) == len(log))
        assert result.new_log_start_offset is not None and result.new_log_start_offset >= start
    if not has_delete:
        assert {d.rule for d in result.deletions} <= {RetentionRule.LOG_START_OFFSET}
