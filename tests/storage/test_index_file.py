"""The .index/.timeindex files: preallocation, sparse lookups, truncation, trimming, reload."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from seglog.errors import CorruptIndexError
from seglog.storage.index_file import OffsetIndexFile, TimeIndexFile, max_index_bytes


def test_max_index_bytes_rounds_down_to_whole_entries() -> None:
    assert max_index_bytes(75, 8) == 72  # seed 000's example
    assert max_index_bytes(10485760, 12) == 10485756
    with pytest.raises(CorruptIndexError):
        max_index_bytes(7, 8)


def test_offset_index_preallocates_writes_through_and_trims(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndexFile(path, 100, segment_index_bytes=80)
    index.create_preallocated()
    assert path.stat().st_size == 80
    index.append(105, 0)
    index.append(130, 4200)
    assert path.read_bytes() == bytes(80)  # entries reach the file at the next sync
    index.sync()
    assert path.read_bytes()[:16] == struct.pack(">iiii", 5, 0, 30, 4200)
    assert path.read_bytes()[16:] == bytes(64)  # zero tail while active
    index.trim()
    assert path.stat().st_size == 16
    index.close()
    reopened = OffsetIndexFile(path, 100, segment_index_bytes=80)
    assert reopened.entries == 2
    assert reopened.lookup(99) == (100, 0)
    assert reopened.lookup(104) == (100, 0)
    assert reopened.lookup(105) == (105, 0)
    assert reopened.lookup(129) == (105, 0)
    assert reopened.lookup(10**9) == (130, 4200)


def test_offset_index_full_and_ordering_rules(tmp_path: Path) -> None:
    index = OffsetIndexFile(tmp_path / "0.index", 0, segment_index_bytes=16)
    index.append(1, 0)
    with pytest.raises(CorruptIndexError):
        index.append(1, 10)  # not increasing
    index.append(2, 10)
    assert index.is_full
    with pytest.raises(CorruptIndexError, match="full"):
        index.append(3, 20)


def test_offset_index_truncate_to_follows_kafka(tmp_path: Path) -> None:
    index = OffsetIndexFile(tmp_path / "0.index", 0, segment_index_bytes=800)
    for offset, position in ((10, 100), (20, 200), (30, 300)):
        index.append(offset, position)
    index.sync()
    index.truncate_to(20)  # an entry equal to the target goes
    assert index.entries == 1
    index.append(25, 250)
    index.truncate_to(26)  # entries below stay
    assert index.entries == 2
    index.truncate_to(0)
    assert index.entries == 0
    raw = (tmp_path / "0.index").read_bytes()
    assert len(raw) == 800 and raw == bytes(800)  # dropped entries read as a zero tail


def test_zero_tail_of_a_crashed_writer_ends_the_entries(tmp_path: Path) -> None:
    path = tmp_path / "0.index"
    path.write_bytes(struct.pack(">iiii", 0, 0, 7, 4100) + bytes(800))
    index = OffsetIndexFile(path, 0, segment_index_bytes=1024, persist=False)
    assert index.entries == 2  # entry 0 has relative offset 0 legitimately


def test_time_index_appends_only_growing_timestamps_and_keeps_a_slot(tmp_path: Path) -> None:
    path = tmp_path / "0.timeindex"
    index = TimeIndexFile(path, 0, segment_index_bytes=36)  # 3 slots, full at 2
    assert not index.maybe_append(-1, 0)  # NO_TIMESTAMP never enters
    assert index.maybe_append(1000, 4)
    assert not index.maybe_append(1000, 9)  # not larger: skipped
    assert index.maybe_append(1005, 9)
    assert index.is_full
    with pytest.raises(CorruptIndexError):
        index.maybe_append(1010, 12)
    assert index.maybe_append(1010, 12, skip_full_check=True)  # the roll's reserved slot
    assert index.lookup(999) == (-1, 0)
    assert index.lookup(1007) == (1005, 9)
    assert index.last_entry() == (1010, 12)
    index.trim()
    assert path.read_bytes() == struct.pack(">qiqiqi", 1000, 4, 1005, 9, 1010, 12)


def test_time_index_truncate_and_reload(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000050.timeindex"
    index = TimeIndexFile(path, 50, segment_index_bytes=120)
    index.maybe_append(10, 55)
    index.maybe_append(20, 60)
    index.maybe_append(30, 70)
    index.truncate_to(60)
    assert index.entries == 1
    index.trim()
    index.close()
    again = TimeIndexFile(path, 50, segment_index_bytes=120)
    assert again.last_entry() == (10, 55)


def test_memory_only_index_never_touches_the_file(tmp_path: Path) -> None:
    path = tmp_path / "0.index"
    index = OffsetIndexFile(path, 0, segment_index_bytes=800, persist=False)
    index.append(3, 0)
    index.trim()
    index.resize_to_max()
    assert not path.exists()
    assert index.lookup(5) == (3, 0)


def test_bulk_and_single_entries_reach_the_file_in_order(tmp_path: Path) -> None:
    offsets = OffsetIndexFile(tmp_path / "0.index", 0, segment_index_bytes=800)
    offsets.extend([3, 7], [0, 100])
    offsets.append(9, 150)
    offsets.extend([12], [200])
    offsets.truncate_to(12)  # drops a pending entry only
    offsets.sync()
    assert (tmp_path / "0.index").read_bytes()[:24] == struct.pack(">6i", 3, 0, 7, 100, 9, 150)
    times = TimeIndexFile(tmp_path / "0.timeindex", 0, segment_index_bytes=120)
    times.extend([10, 20], [3, 7])
    times.maybe_append(30, 9)
    times.extend([40], [12])
    times.trim()
    assert (tmp_path / "0.timeindex").read_bytes() == struct.pack(
        ">qiqiqiqi", 10, 3, 20, 7, 30, 9, 40, 12
    )
    with pytest.raises(CorruptIndexError):
        times.extend([40], [13])  # not growing


@pytest.mark.parametrize("kind", [OffsetIndexFile, TimeIndexFile])
def test_a_preallocated_index_loads_without_reading_its_hole(
    tmp_path: Path, kind: type[OffsetIndexFile] | type[TimeIndexFile]
) -> None:
    """A 10 MiB preallocated index is its entries then a hole: the load reads only up to the
    hole (``fileops.read_leading_data``) and finds the same entries, length and checks as a
    copy whose zeros were written out (no hole: everything is read)."""
    from seglog.storage import fileops

    sparse = tmp_path / (
        "00000000000000000000" + (".index" if kind is OffsetIndexFile else ".timeindex")
    )
    index = kind(sparse, 0, segment_index_bytes=10 * 1024 * 1024)
    index.create_preallocated()
    for i in range(1, 2001):
        if isinstance(index, OffsetIndexFile):
            index.append(i * 10, i * 4096)
        else:
            index.maybe_append(1_700_000_000_000 + i, i * 10)
    index.sync()
    index.close()
    dense = tmp_path / "dense" / sparse.name
    dense.parent.mkdir()
    dense.write_bytes(sparse.read_bytes())  # zeros written: no hole
    data, length = fileops.read_leading_data(sparse)
    assert length == sparse.stat().st_size == dense.stat().st_size
    assert len(data) < length  # the hole was not read (ext4 and tmpfs report holes)
    assert data == sparse.read_bytes()[: len(data)]
    dense_data, dense_length = fileops.read_leading_data(dense)
    assert dense_length == length and len(dense_data) == length
    loaded = [kind(p, 0, segment_index_bytes=10 * 1024 * 1024) for p in (sparse, dense)]
    assert loaded[0].entries == loaded[1].entries == 2000
    assert loaded[0].last_entry() == loaded[1].last_entry()
    assert [loaded[0].lookup(k) for k in (0, 55, 10_000, 19_995)] == [
        loaded[1].lookup(k) for k in (0, 55, 10_000, 19_995)
    ]
