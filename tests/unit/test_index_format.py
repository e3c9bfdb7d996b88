"""Index entries (.index, .timeindex, .txnindex) and segment file names (spec §2, §7-9)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seglog.errors import CorruptIndexError, InvalidFileNameError
from seglog.format.index import (
    OFFSET_INDEX_ENTRY_BYTES,
    TIME_INDEX_ENTRY_BYTES,
    AbortedTxn,
    OffsetIndexEntry,
    TimeIndexEntry,
    encode_offset_entry,
    encode_offset_index,
    encode_time_entry,
    encode_time_index,
    encode_txn_index,
    entry_count,
    lookup_offset,
    parse_offset_index,
    parse_time_index,
    parse_txn_index,
    sanity_check_offset_index,
    sanity_check_time_index,
    validate_offset_index,
    validate_time_index,
)
from seglog.format.names import (
    file_suffix,
    filename_prefix_from_offset,
    index_file_name,
    kraft_snapshot_id,
    log_file_name,
    offset_from_file_name,
    time_index_file_name,
)

BASE = 368_769


# --- offset index -------------------------------------------------------------------------------


def test_offset_entry_layout_is_big_endian_relative_offset_then_position() -> None:
    assert encode_offset_entry(5, 4096) == struct.pack(">ii", 5, 4096)
    assert encode_offset_entry(0, 0) == bytes(8)


def test_offset_index_round_trip_uses_absolute_offsets() -> None:
    entries = [OffsetIndexEntry(BASE + 10, 0), OffsetIndexEntry(BASE + 40, 4200)]
    data = encode_offset_index(entries, BASE)
    assert len(data) == 2 * OFFSET_INDEX_ENTRY_BYTES
    assert data[:4] == struct.pack(">i", 10)
    assert parse_offset_index(data, BASE) == entries


def test_offset_index_parse_stops_at_the_zero_tail_of_a_preallocated_file() -> None:
    entries = [OffsetIndexEntry(BASE + 3, 0), OffsetIndexEntry(BASE + 9, 500)]
    data = encode_offset_index(entries, BASE) + bytes(8 * 100)
    assert parse_offset_index(data, BASE) == entries
    whole = parse_offset_index(data, BASE, stop_at_zero_tail=False)
    assert len(whole) == 102 and whole[-1] == OffsetIndexEntry(BASE, 0)


def test_offset_index_first_entry_may_have_relative_offset_zero() -> None:
    data = encode_offset_entry(0, 0) + encode_offset_entry(7, 90) + bytes(16)
    assert parse_offset_index(data, BASE) == [
        OffsetIndexEntry(BASE, 0),
        OffsetIndexEntry(BASE + 7, 90),
    ]


def test_all_zero_file_yields_one_entry_like_kafka() -> None:
    assert parse_offset_index(bytes(80), 0) == [OffsetIndexEntry(0, 0)]
    assert parse_offset_index(b"", 0) == []


@pytest.mark.parametrize("size", [1, 7, 9, 15])
def test_offset_index_size_must_be_a_multiple_of_eight(size: int) -> None:
    with pytest.raises(CorruptIndexError) as info:
        parse_offset_index(bytes(size), 0, path="x.index")
    assert info.value.path == "x.index"
    assert info.value.position == size - size % 8
    assert "multiple of the 8-byte entry size" in str(info.value)


def test_encode_offset_index_rejects_broken_invariants() -> None:
    with pytest.raises(ValueError):
        encode_offset_index([OffsetIndexEntry(5, 0), OffsetIndexEntry(5, 10)], 0)
    with pytest.raises(ValueError):
        encode_offset_index([OffsetIndexEntry(5, 100), OffsetIndexEntry(6, 10)], 0)
    with pytest.raises(ValueError):
        encode_offset_index([OffsetIndexEntry(4, 0)], 5)
    with pytest.raises(ValueError):
        encode_offset_entry(1 << 31, 0)


def test_lookup_returns_largest_entry_at_or_below_target() -> None:
    entries = [OffsetIndexEntry(10, 0), OffsetIndexEntry(20, 100), OffsetIndexEntry(30, 200)]
    assert lookup_offset(entries, 5, 4) == OffsetIndexEntry(5, 0)
    assert lookup_offset(entries, 5, 10) == entries[0]
    assert lookup_offset(entries, 5, 29) == entries[1]
    assert lookup_offset(entries, 5, 1000) == entries[2]
    assert lookup_offset([], 5, 1000) == OffsetIndexEntry(5, 0)


def test_validate_offset_index() -> None:
    validate_offset_index([OffsetIndexEntry(1, 0), OffsetIndexEntry(2, 0)], 0)
    with pytest.raises(CorruptIndexError, match="not above"):
        validate_offset_index([OffsetIndexEntry(2, 0), OffsetIndexEntry(2, 5)], 0)
    with pytest.raises(CorruptIndexError, match="below the previous"):
        validate_offset_index([OffsetIndexEntry(2, 9), OffsetIndexEntry(3, 5)], 0)
    with pytest.raises(CorruptIndexError, match="base offset"):
        validate_offset_index([OffsetIndexEntry(2, 0)], 3)


def test_offset_index_sanity_check_mirrors_kafka() -> None:
    sanity_check_offset_index(encode_offset_entry(3, 0) + bytes(8), 100)  # zero tail passes
    sanity_check_offset_index(b"", 100)
    negative = struct.pack(">ii", -1, 0)
    with pytest.raises(CorruptIndexError, match="less than the base offset"):
        sanity_check_offset_index(negative, 100)
    with pytest.raises(CorruptIndexError, match="not a multiple of 8"):
        sanity_check_offset_index(bytes(12), 100)


@given(
    st.lists(st.tuples(st.integers(1, 1000), st.integers(0, 5000)), max_size=40),
    st.integers(0, 1 << 40),
)
def test_offset_index_round_trip_property(steps: list[tuple[int, int]], base: int) -> None:
    entries = []
    offset, position = base, 0
    for offset_step, position_step in steps:
        offset += offset_step
        position += position_step
        entries.append(OffsetIndexEntry(offset, position))
    data = encode_offset_index(entries, base)
    assert parse_offset_index(data, base) == entries
    if entries:  # an all-zero file reads as one entry (base, 0), as in Kafka
        assert parse_offset_index(data + bytes(64), base) == entries
    validate_offset_index(entries, base)


# --- time index ---------------------------------------------------------------------------------


def test_time_entry_layout_is_timestamp_then_relative_offset() -> None:
    assert encode_time_entry(1_700_000_000_000, 7) == struct.pack(">qi", 1_700_000_000_000, 7)
    assert len(encode_time_entry(-1, 0)) == TIME_INDEX_ENTRY_BYTES


def test_time_index_round_trip_and_zero_tail() -> None:
    entries = [TimeIndexEntry(1000, BASE + 4), TimeIndexEntry(2000, BASE + 9)]
    data = encode_time_index(entries, BASE)
    assert parse_time_index(data, BASE) == entries
    assert parse_time_index(data + bytes(12 * 50), BASE) == entries


def test_time_index_size_must_be_a_multiple_of_twelve() -> None:
    with pytest.raises(CorruptIndexError, match="12-byte entry size"):
        parse_time_index(bytes(16), 0)


def test_encode_time_index_requires_strictly_increasing_timestamps() -> None:
    with pytest.raises(ValueError):
        encode_time_index([TimeIndexEntry(5, 1), TimeIndexEntry(5, 2)], 0)
    with pytest.raises(ValueError):
        encode_time_index([TimeIndexEntry(5, 3), TimeIndexEntry(6, 2)], 0)


def test_validate_time_index() -> None:
    validate_time_index([TimeIndexEntry(1, 4), TimeIndexEntry(2, 4)], 0)
    with pytest.raises(CorruptIndexError, match="timestamp"):
        validate_time_index([TimeIndexEntry(2, 4), TimeIndexEntry(2, 5)], 0)
    with pytest.raises(CorruptIndexError, match="below the previous"):
        validate_time_index([TimeIndexEntry(1, 5), TimeIndexEntry(2, 4)], 0)


def test_time_index_sanity_check_mirrors_kafka() -> None:
    good = encode_time_index([TimeIndexEntry(10, 1), TimeIndexEntry(20, 2)], 0)
    sanity_check_time_index(good, 0)
    # A preallocated zero tail fails Kafka's time index check (last timestamp 0 < first).
    with pytest.raises(CorruptIndexError, match="less than the first timestamp"):
        sanity_check_time_index(good + bytes(12), 0)
    with pytest.raises(CorruptIndexError, match="not a multiple of 12"):
        sanity_check_time_index(good + bytes(1), 0)


# --- transaction index --------------------------------------------------------------------------


def test_txn_index_round_trip() -> None:
    entries = [AbortedTxn(0, 1000, 5, 9, 10), AbortedTxn(0, 1001, 11, 20, 21)]
    data = encode_txn_index(entries)
    assert len(data) == 68
    assert parse_txn_index(data) == entries


def test_txn_index_rejects_unknown_version_and_partial_entries() -> None:
    with pytest.raises(CorruptIndexError, match="version"):
        parse_txn_index(encode_txn_index([AbortedTxn(1 << 8, 1, 1, 1, 1)]))
    with pytest.raises(CorruptIndexError, match="multiple"):
        parse_txn_index(bytes(35))


def test_entry_count_is_floor() -> None:
    assert entry_count(17, 8) == 2
    assert entry_count(11, 12) == 0


# --- names --------------------------------------------------------------------------------------


def test_segment_names_are_twenty_digit_zero_padded() -> None:
    assert filename_prefix_from_offset(0) == "00000000000000000000"
    assert log_file_name(368769) == "00000000000000368769.log"
    assert index_file_name(368769) == "00000000000000368769.index"
    assert time_index_file_name(368769) == "00000000000000368769.timeindex"
    assert len(filename_prefix_from_offset((1 << 63) - 1)) == 20
    with pytest.raises(ValueError):
        filename_prefix_from_offset(-1)


def test_offset_from_file_name_reads_up_to_the_first_dot() -> None:
    assert offset_from_file_name("00000000000000368769.log") == 368769
    assert offset_from_file_name("00000000000000368769.log.deleted") == 368769
    assert offset_from_file_name("00000000000000000100.timeindex.swap") == 100
    for bad in ("leader-epoch-checkpoint", "abc.log", "1_000.log", " 12.log", ".log"):
        with pytest.raises(InvalidFileNameError):
            offset_from_file_name(bad)


def test_file_suffix_is_the_text_from_the_last_dot() -> None:
    assert file_suffix("00000000000000000000.log") == ".log"
    assert file_suffix("00000000000000000000.log.deleted") == ".deleted"
    assert file_suffix("quorum-state") == ""


def test_kraft_snapshot_names() -> None:
    assert kraft_snapshot_id("00000000000000924059-0000000001.checkpoint") == (924059, 1)
    assert kraft_snapshot_id("bootstrap.checkpoint") is None
    assert kraft_snapshot_id("00000000000000924059.checkpoint") is None
