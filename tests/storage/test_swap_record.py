"""The swap record (``seglog.storage.swap_record``) and the loader's use of it, on real files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from seglog.clock import ManualClock
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.errors import CorruptCheckpointError
from seglog.format.builder import BatchBuilder
from seglog.storage.swap_record import (
    SWAP_RECORD_NAME,
    SwapRecord,
    parse_swap_record,
    read_swap_record,
    write_swap_record,
)


def test_round_trip_and_exact_bytes(tmp_path: Path) -> None:
    record = SwapRecord((0,), (0, 4200, 8400))
    assert record.encode() == b"0\nnew 0\nreplaced 0 4200 8400\n"
    assert parse_swap_record(record.encode(), "f") == record
    empty = SwapRecord((5, 9), ())
    assert empty.encode() == b"0\nnew 5 9\nreplaced\n"
    assert parse_swap_record(empty.encode(), "f") == empty
    write_swap_record(tmp_path, record)
    assert read_swap_record(tmp_path) == record
    assert [p.name for p in tmp_path.iterdir()] == [SWAP_RECORD_NAME]  # no .tmp left


@pytest.mark.parametrize(
    ("data", "line", "words"),
    [
        (b"1\nnew 0\nreplaced 0\n", 1, "unknown version"),
        (b"0\nold 0\nreplaced 0\n", 2, "expected 'new ...'"),
        (b"0\nnew\nreplaced 0\n", 2, "no new segment"),
        (b"0\nnew 0\nreplaced 5 5\n", 3, "strictly increasing"),
        (b"0\nnew 0\nreplaced -1\n", 3, "not a non-negative integer"),
        (b"0\nnew 0\nreplaced 0", None, "3 lines"),
        (b"\xff\n", None, "UTF-8"),
    ],
)
def test_a_bad_record_names_file_and_line(data: bytes, line: int | None, words: str) -> None:
    with pytest.raises(CorruptCheckpointError) as caught:
        parse_swap_record(data, "/d/swap-replaced-segments")
    assert caught.value.line == line and words in str(caught.value)
    assert str(caught.value).startswith("/d/swap-replaced-segments: ")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def _manager(data: Path) -> LogManager:
    return open_log_dirs([data], clock=ManualClock())


@pytest.fixture
def two_segments(data: Path) -> Iterator[Path]:
    """Topic t: segment 0 with offsets 0-9 (index entries), then the active segment at 10."""
    manager = _manager(data)
    manager.create_topic("t", 1, configs={"index.interval.bytes": "1"})
    log = manager.get_log("t", 0)
    for i in range(10):
        builder = BatchBuilder()
        builder.append(0, b"k%d" % i, b"v")
        log.append(builder.build())
    log.roll()
    manager.close()
    yield data / "t-0"


def test_a_record_without_swap_is_removed_at_open(data: Path, two_segments: Path) -> None:
    write_swap_record(two_segments, SwapRecord((0,), (0,)))
    manager = _manager(data)
    try:
        log = manager.get_log("t", 0)
        assert not (two_segments / SWAP_RECORD_NAME).exists()
        assert SWAP_RECORD_NAME in log.load_report.removed_files
        assert [r.offset for r in log.iter_records(0)] == list(range(10))
    finally:
        manager.close()


def test_an_empty_swap_replaces_its_base_and_the_old_index_goes_too(
    data: Path, two_segments: Path
) -> None:
    """A cleaned segment with no batch (next offset == base: an empty Kafka range) still
    replaces the live segment at its base; the old ``.index`` (naming offsets 0-9) must not
    survive beside the empty ``.log`` (it would read as records lost)."""
    (two_segments / "00000000000000000000.log.swap").write_bytes(b"")
    manager = _manager(data)
    try:
        log = manager.get_log("t", 0)
        report = log.load_report
        assert report.completed_swaps == ["00000000000000000000.log.swap"]
        assert not report.lost_ranges, report.summary()
        assert [s.base_offset for s in log.segments] == [0, 10]
        assert log.segments[0].size == 0 and log.log_end_offset == 10
        assert list(log.iter_records(0)) == []
    finally:
        manager.close()


def test_the_record_removes_a_replaced_segment_above_the_swap_range(data: Path) -> None:
    """Segments 0, 5, 10 (active 15): a swap of [0, 5] whose cleaned segment ends at offset 2
    leaves 5 outside Kafka's range [0, 3); the record names it, so it goes; 10 stays."""
    manager = _manager(data)
    manager.create_topic("t", 1)
    log = manager.get_log("t", 0)
    for i in range(15):
        builder = BatchBuilder()
        builder.append(0, b"k%d" % i, b"v")
        log.append(builder.build())
        if i % 5 == 4:
            log.roll()
    manager.close()
    directory = data / "t-0"
    head = (directory / "00000000000000000000.log").read_bytes()
    three = _batch_end(head, 3)  # the cleaned segment: offsets 0-2 of segment 0
    (directory / "00000000000000000000.log.swap").write_bytes(head[:three])
    write_swap_record(directory, SwapRecord((0,), (0, 5)))
    manager = _manager(data)
    try:
        log = manager.get_log("t", 0)
        assert [s.base_offset for s in log.segments] == [0, 10, 15]
        assert [r.offset for r in log.iter_records(0)] == [0, 1, 2, *range(10, 15)]
        assert not (directory / SWAP_RECORD_NAME).exists()
    finally:
        manager.close()


def _batch_end(data: bytes, count: int) -> int:
    """The position after the first ``count`` batches of a segment's bytes."""
    position = 0
    for _ in range(count):
        position += 12 + int.from_bytes(data[position + 8 : position + 12], "big")
    return position
