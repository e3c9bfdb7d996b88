"""Kafka's roll conditions (spec §5.3) as a pure decision: each one alone, and their order."""

from __future__ import annotations

import random
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from seglog.core.roll import (
    ActiveSegmentState,
    PendingAppend,
    RollReason,
    draw_roll_jitter_ms,
    roll_reason,
)

STATE = ActiveSegmentState(
    base_offset=1000,
    size_bytes=500,
    rolling_based_timestamp=10_000,
    created_ms=0,
    offset_index_entries=0,
    offset_index_max_entries=100,
    time_index_entries=0,
    time_index_max_entries=100,
    roll_jitter_ms=0,
)
APPEND = PendingAppend(size_bytes=100, max_timestamp=10_500, last_offset=1010)


def decide(
    state: ActiveSegmentState = STATE, append: PendingAppend = APPEND, **kw: int
) -> RollReason | None:
    options = {"segment_bytes": 1000, "max_segment_ms": 1000, "now_ms": 10**12} | kw
    return roll_reason(state, append, **options)


def test_no_condition_keeps_the_segment() -> None:
    assert decide() is None


def test_segment_bytes_rolls_when_the_append_would_pass_it() -> None:
    assert decide(segment_bytes=600) is None  # 500 + 100 == 600 fits exactly
    assert decide(segment_bytes=599) is RollReason.SEGMENT_BYTES


def test_segment_ms_uses_record_timestamps_when_known() -> None:
    assert decide(append=replace(APPEND, max_timestamp=11_000)) is None  # waited exactly 1000
    assert decide(append=replace(APPEND, max_timestamp=11_001)) is RollReason.SEGMENT_MS
    jittered = replace(STATE, roll_jitter_ms=200)
    assert decide(jittered, replace(APPEND, max_timestamp=10_801)) is RollReason.SEGMENT_MS


def test_segment_ms_falls_back_to_wall_clock_without_timestamps() -> None:
    no_ts = replace(STATE, rolling_based_timestamp=-1, created_ms=5_000)
    assert decide(no_ts, now_ms=6_000) is None
    assert decide(no_ts, now_ms=6_001) is RollReason.SEGMENT_MS


def test_an_empty_segment_never_rolls_by_time() -> None:
    empty = replace(STATE, size_bytes=0)
    assert decide(empty, replace(APPEND, max_timestamp=10**15)) is None


def test_full_indexes_roll() -> None:
    assert decide(replace(STATE, offset_index_entries=100)) is RollReason.INDEX_FULL
    assert decide(replace(STATE, time_index_entries=98)) is None
    assert (
        decide(replace(STATE, time_index_entries=99)) is RollReason.INDEX_FULL
    )  # last slot reserved


def test_relative_offset_overflow_rolls() -> None:
    assert decide(append=replace(APPEND, last_offset=1000 + 2**31 - 1)) is None
    assert decide(append=replace(APPEND, last_offset=1000 + 2**31)) is RollReason.OFFSET_OVERFLOW


def test_bytes_is_reported_first_when_several_hold() -> None:
    everything = replace(STATE, offset_index_entries=100)
    assert decide(everything, segment_bytes=10) is RollReason.SEGMENT_BYTES


@given(jitter=st.integers(0, 10**9), segment_ms=st.integers(1, 10**9), seed=st.integers())
def test_jitter_is_within_kafkas_bounds(jitter: int, segment_ms: int, seed: int) -> None:
    value = draw_roll_jitter_ms(jitter, segment_ms, random.Random(seed))
    assert value == 0 if jitter == 0 else 0 <= value < min(jitter, segment_ms)
