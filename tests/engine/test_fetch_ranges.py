"""Fetch as file ranges (``Log.fetch_file_ranges``) on real logs: the ranges' bytes against an
independent walk of the segment files, their records against ``Log.iter_records`` and
``Log.read``, KIP-74, limits, the high watermark, read_committed at the LSO with the aborted
transactions, a compacted log's offset gaps, and a segment deleted between planning and
reading."""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from log_support import T0, config, open_log

from seglog.clock import ManualClock
from seglog.core.isolation import IsolationLevel
from seglog.engine.log import FetchRanges, Log, fetch_ranges
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.errors import OffsetOutOfRangeError, UnreadableFileError
from seglog.format.builder import BatchBuilder
from seglog.format.compression import CompressionType
from seglog.format.control import ControlRecordType, decode_control_key
from seglog.format.reader import BatchReader
from seglog.storage.segment import LogSegment
from seglog.testing.transactions import append_transactional
from support.index_oracle import scan_log

COMMITTED = IsolationLevel.READ_COMMITTED
CODECS = [
    CompressionType.NONE,
    CompressionType.GZIP,
    CompressionType.SNAPPY,
    CompressionType.LZ4,
    CompressionType.ZSTD,
]


_ORACLE: dict[object, list[OracleBatch]] = {}


@dataclass(frozen=True)
class OracleBatch:
    path: Path
    position: int
    size: int
    last_offset: int


def oracle_batches(log: Log) -> list[OracleBatch]:
    """Every batch of the log's segments, by an independent struct walk of the files (kept
    while the log's end and segments stay the same)."""
    key = (id(log), log.log_end_offset, tuple(s.log_path for s in log.segments))
    cached = _ORACLE.get(key)
    if cached is not None:
        return cached
    out = _ORACLE[key] = []
    for segment in log.segments:
        for info in scan_log(segment.log_path):
            out.append(OracleBatch(segment.log_path, info.position, info.size, info.last_offset))
    return out


def expected_bytes(
    log: Log, fetch_offset: int, max_bytes: int, bound: int, *, min_one: bool = True
) -> bytes:
    """Kafka's rule, batch by batch: from the batch holding the offset, whole batches."""
    chosen: list[OracleBatch] = []
    total = 0
    for batch in oracle_batches(log):
        if batch.last_offset < fetch_offset:
            continue
        if batch.last_offset >= bound:
            break
        if (chosen or not min_one) and total + batch.size > max_bytes:
            break
        chosen.append(batch)
        total += batch.size
    out = b""
    for batch in chosen:
        with open(batch.path, "rb") as handle:
            handle.seek(batch.position)
            out += handle.read(batch.size)
    return out


def fetched_records(data: bytes, fetch_offset: int) -> list[tuple[int, bytes | None]]:
    """What a consumer keeps of fetched bytes (read_uncommitted): data records >= offset."""
    out = []
    for batch in BatchReader(data, verify_crc=True):
        if batch.is_control:
            continue
        out.extend((r.offset, r.value) for r in batch.records() if r.offset >= fetch_offset)
    return out


def committed_records(result: FetchRanges, data: bytes) -> list[tuple[int, bytes | None]]:
    """A read_committed consumer's filter (Kafka's ``Fetcher``): the aborted list, in order of
    first offset, marks producers aborted from that offset until their ABORT marker."""
    assert result.aborted_transactions is not None
    pending = [(t.first_offset, t.producer_id) for t in result.aborted_transactions]
    heapq.heapify(pending)
    aborting: set[int] = set()
    out = []
    for batch in BatchReader(data, verify_crc=True):
        while pending and pending[0][0] <= batch.last_offset:
            aborting.add(heapq.heappop(pending)[1])
        if batch.is_control:
            [marker] = list(batch.records())
            if decode_control_key(marker.key).type is ControlRecordType.ABORT:
                aborting.discard(batch.producer_id)
            continue
        if batch.is_transactional and batch.producer_id in aborting:
            continue
        out.extend((r.offset, r.value) for r in batch.records() if r.offset >= result.fetch_offset)
    return out


def check_fetch(log: Log, fetch_offset: int, max_bytes: int) -> FetchRanges:
    """Fetch and compare with the oracle, ``Log.read`` and ``Log.iter_records``."""
    with log.fetch_file_ranges(fetch_offset, max_bytes) as result:
        data = result.read_bytes()
        assert data == expected_bytes(log, fetch_offset, max_bytes, log.high_watermark)
        assert result.size_bytes == len(data)
        assert result.high_watermark == log.high_watermark == log.log_end_offset
        assert result.log_start_offset == log.log_start_offset
        assert result.aborted_transactions is None
        if result.ranges:
            # Log.read gives the same batches from the first segment (maybe a partial tail)
            first = result.ranges[0].read()
            assert log.read(fetch_offset, max(max_bytes, len(first))).data[: len(first)] == first
            got = fetched_records(data, fetch_offset)
            want = [(r.offset, r.value) for r in log.iter_records(fetch_offset)][: len(got)]
            assert got == want and got
            assert result.next_offset == result.ranges[-1].last_offset + 1
            positions = [(r.path, r.position) for r in result.ranges]
            assert len(set(p for p, _ in positions)) == len(positions)  # one range a segment
    return result


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


def fill(log: Log, clock: ManualClock, batches: int, *, per_batch: int = 7) -> None:
    """Batches of every codec, of growing sizes, a few timestamps apart."""
    for i in range(batches):
        builder = BatchBuilder(compression=CODECS[i % len(CODECS)])
        for j in range(per_batch + i % 5):
            builder.append(clock.now_ms(), b"k%d" % j, b"v%d-%d-" % (i, j) * (1 + i % 9))
        log.append(builder.build())
        clock.advance(3)


@pytest.fixture
def multi(tmp_path: Path, clock: ManualClock) -> Iterator[Log]:
    log = open_log(tmp_path, clock, config=config(segment_bytes=4096, index_interval_bytes=256))
    fill(log, clock, 120)
    assert len(log.segments) > 5
    yield log
    log.close()


def test_ranges_equal_the_batches_for_every_offset_and_limit(multi: Log) -> None:
    end = multi.log_end_offset
    for fetch_offset in range(0, end, 7):
        for max_bytes in (1, 200, 1000, 5000, 20_000, 1 << 20):
            check_fetch(multi, fetch_offset, max_bytes)


def test_a_fetch_spans_segments_and_stops_at_the_high_watermark(multi: Log) -> None:
    with multi.fetch_file_ranges(0, 1 << 30) as result:
        assert len(result.ranges) == len(multi.segments)
        assert result.next_offset == multi.log_end_offset
        assert result.size_bytes == multi.size_bytes()
        assert [r.position for r in result.ranges] == [0] * len(multi.segments)


def test_kip74_first_batch_whole_even_above_max_bytes(multi: Log) -> None:
    batches = oracle_batches(multi)
    big = max(batches, key=lambda b: b.size)
    with multi.fetch_file_ranges(big.last_offset, 10) as result:
        assert [(r.position, r.size) for r in result.ranges] == [(big.position, big.size)]
    with multi.fetch_file_ranges(big.last_offset, 10, min_one_batch=False) as result:
        assert result.ranges == () and result.next_offset == big.last_offset


def test_empty_at_the_high_watermark_and_out_of_range_outside(multi: Log) -> None:
    end = multi.log_end_offset
    with multi.fetch_file_ranges(end) as result:
        assert result.ranges == () and result.size_bytes == 0 and result.next_offset == end
        assert result.high_watermark == end
    with pytest.raises(OffsetOutOfRangeError, match=r"fetch offset 9999 is outside \[0, \d+\]"):
        multi.fetch_file_ranges(9999)
    assert multi.delete_records(40) == 40  # DeleteRecords mid-batch: the batch comes whole
    with pytest.raises(OffsetOutOfRangeError):
        multi.fetch_file_ranges(39)
    result = check_fetch(multi, 40, 3000)
    assert result.ranges[0].first_offset < 40 <= result.ranges[0].last_offset


def test_a_fetch_never_returns_bytes_appended_after_its_snapshot(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    fill(log, clock, 5)
    planned: list[FetchRanges] = []
    real_view = log._list

    class AppendingView:
        """The segment list, with an append between the snapshot and the header reads."""

        @property
        def view(self) -> object:
            view = real_view.view
            log._list = real_view
            fill(log, clock, 3)
            return view

    end = log.log_end_offset
    log._list = AppendingView()  # type: ignore[assignment]
    planned.append(log.fetch_file_ranges(0, 1 << 20))
    with planned[0] as result:
        # the high watermark was read after the appends: they are in, the ranges agree
        assert result.next_offset == result.high_watermark == log.log_end_offset > end
        assert result.read_bytes() == expected_bytes(log, 0, 1 << 20, log.log_end_offset)
    log.close()


def test_compacted_log_with_offset_gaps(tmp_path: Path, clock: ManualClock) -> None:
    manager: LogManager = open_log_dirs([tmp_path / "data"], clock=clock)
    try:
        manager.create_topic(
            "c",
            1,
            configs={
                "cleanup.policy": "compact",
                "min.cleanable.dirty.ratio": "0.01",
                "segment.bytes": "2048",
                "index.interval.bytes": "128",
            },
        )
        log = manager.get_log("c", 0)
        for i in range(300):
            builder = BatchBuilder(compression=CODECS[i % 3])
            builder.append(clock.now_ms(), b"key%d" % (i % 11), b"value-%d" % i)
            builder.append(clock.now_ms(), b"other%d" % (i % 5), b"x" * (i % 40))
            log.append(builder.build())
        log.roll()
        results = manager.clean_once()
        assert results and results[0].error is None
        offsets = [r.offset for r in log.iter_records(0)]
        gaps = sorted(set(range(offsets[-1])) - set(offsets))
        assert len(gaps) > 100
        for fetch_offset in gaps[::9] + offsets[::13]:
            for max_bytes in (1, 500, 4000):
                check_fetch(log, fetch_offset, max_bytes)
    finally:
        manager.close()


def transactional_log(tmp_path: Path, clock: ManualClock) -> Log:
    """Producers 1 (committed), 2 (aborted), 3 (open at the end), interleaved, over segments."""
    log = open_log(tmp_path, clock, config=config(segment_bytes=2048, index_interval_bytes=128))
    seq = {1: 0, 2: 0, 3: 0}
    for round_ in range(12):
        for pid in (1, 2):
            records = [(b"p%d" % pid, b"r%d-%d" % (round_, j)) for j in range(3)]
            append_transactional(log, pid, 0, seq[pid], records)
            seq[pid] += 3
        log.append_records([(b"plain", b"n%d" % round_)])
        if round_ % 3 == 2:
            log.append_marker(1, 0, commit=True, coordinator_epoch=0)
            log.append_marker(2, 0, commit=False, coordinator_epoch=0)
    append_transactional(log, 3, 0, 0, [(b"p3", b"open")])
    log.append_records([(b"plain", b"after-open")])
    return log


def test_read_committed_stops_at_the_lso_with_the_aborted_transactions(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = transactional_log(tmp_path, clock)
    lso = log.last_stable_offset
    assert lso < log.log_end_offset
    want_all = [(r.offset, r.value) for r in log.iter_records(0, isolation_level=COMMITTED)]
    assert want_all and all(v != b"after-open" for _, v in want_all)
    for fetch_offset in range(0, lso + 1, 5):
        for max_bytes in (1, 700, 1 << 20):
            with log.fetch_file_ranges(fetch_offset, max_bytes, isolation_level=COMMITTED) as res:
                data = res.read_bytes()
                assert data == expected_bytes(log, fetch_offset, max_bytes, lso)
                assert res.last_stable_offset == lso and res.next_offset <= lso
                assert res.aborted_transactions is not None
                assert (
                    list(res.aborted_transactions)
                    == log.aborted_transactions(fetch_offset, res.next_offset)
                    or not res.ranges
                )
                got = committed_records(res, data)
                want = [(o, v) for o, v in want_all if fetch_offset <= o < res.next_offset]
                assert got == want
    with log.fetch_file_ranges(0, 1 << 20, isolation_level=COMMITTED) as res:
        assert res.aborted_transactions and {t.producer_id for t in res.aborted_transactions} == {2}
    with log.fetch_file_ranges(0, 1 << 20) as res:  # read_uncommitted: past the LSO
        assert res.next_offset == res.high_watermark > res.last_stable_offset == lso
        assert res.aborted_transactions is None
    with log.fetch_file_ranges(lso, isolation_level=COMMITTED) as res:  # between LSO and HW
        assert res.ranges == () and res.aborted_transactions == ()
    log.close()


def test_a_segment_deleted_by_retention_after_planning_still_serves_its_bytes(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock, config=config(segment_bytes=4096, retention_bytes=4096))
    fill(log, clock, 60)
    first_path = log.segments[0].log_path
    result = log.fetch_file_ranges(0, 1 << 30)
    planned = expected_bytes(log, 0, 1 << 30, log.high_watermark)
    plan = log.apply_retention()
    assert not plan.is_empty and log.log_start_offset > 0
    assert not first_path.exists()
    with result:
        assert result.read_bytes() == planned
        assert result.ranges[0].path == first_path
        fds = [r.fileno() for r in result.ranges]
    for fd in fds:  # closed with the result
        with pytest.raises(OSError):
            os.fstat(fd)
    with pytest.raises(OffsetOutOfRangeError):
        log.fetch_file_ranges(0)
    check_fetch(log, log.log_start_offset, 1 << 20)
    log.close()


def test_a_plan_that_meets_a_closed_segment_starts_again(
    tmp_path: Path, clock: ManualClock
) -> None:
    """A segment of the plan's snapshot closes before its descriptor is taken (as the
    cleaner's swap or a delete does): the plan starts again from the current list."""
    log = open_log(tmp_path, clock, config=config(segment_bytes=4096))
    fill(log, clock, 60)
    real = log._list
    first = log.segments[0]
    closed = LogSegment(
        first.directory,
        first.base_offset,
        index_interval_bytes=4096,
        segment_index_bytes=1 << 20,
        created_ms=T0,
        writable=False,
    )
    closed.close()
    calls = []

    class StaleOnce:
        @property
        def view(self) -> object:
            calls.append(1)
            segments, bases = real.view
            return ((closed, *segments[1:]), bases) if len(calls) == 1 else real.view

    log._list = StaleOnce()  # type: ignore[assignment]
    with log.fetch_file_ranges(0, 1 << 20) as result:
        assert len(calls) == 2
        log._list = real
        assert result.read_bytes() == expected_bytes(log, 0, 1 << 20, log.high_watermark)
    log.close()


def test_the_end_of_a_range_jumps_through_the_offset_index(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fetch of thousands of small batches reads a handful of headers, not each one."""
    log = open_log(tmp_path, clock, config=config(index_interval_bytes=4096))
    for i in range(3000):
        log.append_records([(b"k", b"v%d" % i)])
    reads: list[int] = []
    real_at = fetch_ranges._Headers.at

    def counting_at(self: fetch_ranges._Headers, position: int) -> fetch_ranges._Header | None:
        reads.append(position)
        return real_at(self, position)

    monkeypatch.setattr(fetch_ranges._Headers, "at", counting_at)
    for fetch_offset, max_bytes in ((0, 1 << 20), (17, 100_000), (2500, 1 << 20)):
        reads.clear()
        check_fetch(log, fetch_offset, max_bytes)
        assert len(reads) < 200, len(reads)
    log.close()


def test_a_closed_log_is_an_error_naming_a_segment(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    fill(log, clock, 3)
    log.close()
    with pytest.raises(UnreadableFileError, match=r"00000000000000000000\.log: segments of "):
        log.fetch_file_ranges(0)
