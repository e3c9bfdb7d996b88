"""``verify_log``: real segment files written by the Log API (or built batch by batch), then
damaged on disk, opened read-only as ``seglog verify`` opens them, and checked."""

from __future__ import annotations

import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from log_support import T0, TP, config

from corpus_location import NO_CORPUS_REASON, corpus_root
from seglog.clock import ManualClock
from seglog.config import BrokerConfig, LogConfig
from seglog.engine.inspect.verify import (
    KIND_CORRUPT,
    KIND_CRC,
    KIND_DROPPED_SEGMENT,
    KIND_DUPLICATE_KEY,
    KIND_EXPIRED_TOMBSTONE,
    KIND_INDEX_ENTRY,
    KIND_OFFSET_ORDER,
    KIND_OFFSET_RANGE,
    KIND_RECORDS_LOST,
    KIND_TIME_INDEX_ENTRY,
    KIND_TOMBSTONE_WITHOUT_HORIZON,
    KIND_TORN_TAIL,
    VerifyReport,
    verify_log,
)
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager
from seglog.format.batch import DELETE_HORIZON_FLAG_MASK, encode_batch, set_base_offset
from seglog.format.control import ControlRecordType, encode_control_key, encode_end_txn_marker
from seglog.format.crc import crc32c
from seglog.format.reader import BatchReader
from seglog.format.records import Record
from seglog.format.topic_names import PartitionDirKind, TopicPartition, parse_partition_dir_name
from seglog.storage.log_dir import CLEANER_OFFSET_CHECKPOINT, LogDirectory

SEGMENT_BYTES = 2000
INDEX_INTERVAL_BYTES = 150
RECORDS = 120  # about six segments of about 20 one-record batches
COMPACT = ("compact",)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


def small_segments(**overrides: object) -> LogConfig:
    """Small segments and a dense index, so a few records give several segments and entries."""
    fields: dict[str, object] = {
        "segment_bytes": SEGMENT_BYTES,
        "index_interval_bytes": INDEX_INTERVAL_BYTES,
    }
    fields.update(overrides)
    return config(**fields)


def partition_dir(tmp_path: Path) -> Path:
    return tmp_path / "events-0"


def write_log(
    tmp_path: Path,
    clock: ManualClock,
    items: list[tuple[bytes | None, bytes | None]],
    cfg: LogConfig | None = None,
) -> Log:
    """Append each (key, value) as its own batch, a millisecond apart; close the log."""
    log = Log.open(partition_dir(tmp_path), TP, cfg or small_segments(), clock=clock)
    for key, value in items:
        log.append_records([(key, value)])
        clock.advance(1)
    log.close()
    return log


def distinct_records(count: int = RECORDS) -> list[tuple[bytes | None, bytes | None]]:
    return [(b"key-%04d" % i, b"value-%04d" % i) for i in range(count)]


def open_read_only(tmp_path: Path, cfg: LogConfig | None = None, *, clean: bool = True) -> Log:
    """Open the partition read-only, as ``seglog verify`` does (``clean``: after a clean
    shutdown; otherwise recovery runs, in memory only)."""
    return Log.open(
        partition_dir(tmp_path),
        TP,
        cfg or small_segments(),
        clock=ManualClock(T0),
        writable=False,
        had_clean_shutdown=clean,
    )


def segment_logs(tmp_path: Path) -> list[Path]:
    return sorted(partition_dir(tmp_path).glob("*.log"))


def batch_positions(path: Path) -> list[tuple[int, int, int]]:
    """(position, base offset, last offset) of every batch of a ``.log``."""
    return [(b.position, b.base_offset, b.last_offset) for b in BatchReader(path.read_bytes())]


def kinds(report: VerifyReport) -> list[str]:
    return [p.kind for p in report.problems]


def verify_read_only(tmp_path: Path, cfg: LogConfig | None = None, **kwargs: Any) -> VerifyReport:
    log = open_read_only(tmp_path, cfg)
    try:
        return verify_log(log, **kwargs)
    finally:
        log.close()


def write_batches(tmp_path: Path, batches: list[bytes]) -> None:
    """A partition directory holding one ``.log`` of these batches and no index (the open
    rebuilds the indexes)."""
    directory = partition_dir(tmp_path)
    directory.mkdir(parents=True)
    (directory / "00000000000000000000.log").write_bytes(b"".join(batches))


# --- healthy logs --------------------------------------------------------------------------------


def test_healthy_log_with_several_segments_is_ok(tmp_path: Path, clock: ManualClock) -> None:
    write_log(tmp_path, clock, distinct_records())
    log = open_read_only(tmp_path)
    report = verify_log(log)
    assert report.ok, report.problems
    assert report.problems == () and report.problems_omitted == 0
    assert len(log.segments) >= 4
    assert report.topic_partition == TP
    assert report.segments_checked == len(log.segments)
    assert report.batches_checked == RECORDS and report.records_checked == RECORDS
    assert report.bytes_checked == sum(p.stat().st_size for p in segment_logs(tmp_path))
    assert sum(s.offset_index.entries for s in log.segments) > 10  # the index checks had work
    assert sum(s.time_index.entries for s in log.segments) > 10
    log.close()


@pytest.mark.parametrize("chunk_bytes", [12, 100, 333, 4096])
def test_small_chunks_give_the_same_report(
    tmp_path: Path, clock: ManualClock, chunk_bytes: int
) -> None:
    """A chunk smaller than a batch grows to hold it; a batch cut by a chunk is read again."""
    write_log(tmp_path, clock, distinct_records())
    log = open_read_only(tmp_path)
    assert verify_log(log, chunk_bytes=chunk_bytes) == verify_log(log)
    log.close()


def test_an_open_writable_log_is_ok(tmp_path: Path, clock: ManualClock) -> None:
    """The live log: the active segment's indexes are preallocated and not yet trimmed."""
    log = Log.open(partition_dir(tmp_path), TP, small_segments(), clock=clock)
    for key, value in distinct_records(50):
        log.append_records([(key, value)])
        clock.advance(1)
    report = verify_log(log)
    assert report.ok, report.problems
    assert report.records_checked == 50
    log.close()


def test_an_empty_log_is_ok(tmp_path: Path, clock: ManualClock) -> None:
    Log.open(partition_dir(tmp_path), TP, small_segments(), clock=clock).close()
    report = verify_read_only(tmp_path)
    assert report.ok and report.segments_checked == 1 and report.batches_checked == 0


def test_multi_record_compressed_batches_are_ok(tmp_path: Path, clock: ManualClock) -> None:
    cfg = small_segments(compression_type="gzip", segment_bytes=4000)
    log = Log.open(partition_dir(tmp_path), TP, cfg, clock=clock)
    for start in range(0, 200, 10):
        log.append_records(distinct_records(200)[start : start + 10])
        clock.advance(5)
    log.close()
    report = verify_read_only(tmp_path, cfg)
    assert report.ok, report.problems
    assert report.records_checked == 200 and report.batches_checked == 20


# --- damaged .log files --------------------------------------------------------------------------


def flip_byte_in_a_middle_batch(path: Path) -> tuple[int, int]:
    """Flip a byte in the records of a batch in the middle of ``path``; (batch position,
    batch base offset)."""
    batches = batch_positions(path)
    position, base_offset, _ = batches[len(batches) // 2]
    data = bytearray(path.read_bytes())
    data[position + 70] ^= 0xFF  # past the 61-byte header: inside the records, under the CRC
    path.write_bytes(bytes(data))
    return position, base_offset


def test_crc_damage_in_a_closed_segment_names_file_and_position(
    tmp_path: Path, clock: ManualClock
) -> None:
    write_log(tmp_path, clock, distinct_records())
    logs = segment_logs(tmp_path)
    damaged = logs[1]
    position, _ = flip_byte_in_a_middle_batch(damaged)
    report = verify_read_only(tmp_path)
    assert not report.ok
    assert kinds(report) == [KIND_CRC]
    problem = report.problems[0]
    assert problem.path == str(damaged)
    assert problem.position == position
    assert (
        "CRC" in problem.message and f"{damaged.stat().st_size} of this segment" in problem.message
    )
    # The other segments are still read in full.
    assert report.segments_checked == len(logs)
    assert report.batches_checked < RECORDS


def test_crc_damage_found_after_an_unclean_open_cut_it_in_memory(
    tmp_path: Path, clock: ManualClock
) -> None:
    """Recovery of a read-only open cuts the segment and leaves out the later ones in memory;
    the files still hold the damage, so verify reports it and the segments left out."""
    write_log(tmp_path, clock, distinct_records())
    logs = segment_logs(tmp_path)
    position, _ = flip_byte_in_a_middle_batch(logs[1])
    log = open_read_only(tmp_path, clean=False)
    assert log.load_report.truncated_bytes > 0 and len(log.segments) == 2
    report = verify_log(log)
    log.close()
    # the damage, the segments left out, and the load's report of the records lost
    assert kinds(report) == [KIND_CRC] + [KIND_DROPPED_SEGMENT] * (len(logs) - 2) + [
        KIND_RECORDS_LOST
    ]
    assert (report.problems[0].path, report.problems[0].position) == (str(logs[1]), position)
    assert [p.path for p in report.problems[1:-1]] == [str(p) for p in logs[2:]]
    lost = report.problems[-1]
    assert lost.path == str(logs[1]) and "lost" in lost.message and "removed" in lost.message


def test_torn_tail_on_the_active_segment(tmp_path: Path, clock: ManualClock) -> None:
    """A crash in the middle of an append: no clean-shutdown marker, so the open recovers the
    active segment, cutting the tail in memory only; the file still has it."""
    write_log(tmp_path, clock, distinct_records())
    active = segment_logs(tmp_path)[-1]
    size = active.stat().st_size
    with open(active, "ab") as handle:
        handle.write(encode_batch([Record(0, T0, b"k", b"half written")])[:40])
    log = open_read_only(tmp_path, clean=False)
    assert log.load_report.truncated_bytes == 40
    report = verify_log(log)
    log.close()
    assert kinds(report) == [KIND_TORN_TAIL]  # and no log-end-offset complaint
    problem = report.problems[0]
    assert (problem.path, problem.position) == (str(active), size)
    assert "torn tail: 40 bytes" in problem.message
    assert active.stat().st_size == size + 40


def test_offsets_going_backwards(tmp_path: Path, clock: ManualClock) -> None:
    """baseOffset is outside the CRC: only the offset checks can see it."""
    write_log(tmp_path, clock, distinct_records())
    path = segment_logs(tmp_path)[2]
    batches = batch_positions(path)
    position, _, _ = batches[3]
    data = bytearray(path.read_bytes())
    previous_last = batches[2][2]
    set_base_offset(memoryview(data)[position:], previous_last)
    path.write_bytes(bytes(data))
    report = verify_read_only(tmp_path)
    order = [p for p in report.problems if p.kind == KIND_OFFSET_ORDER]
    assert [(p.path, p.position, p.offset) for p in order] == [(str(path), position, previous_last)]


def test_malformed_record_inside_a_crc_valid_batch(tmp_path: Path) -> None:
    """The checksum matches, so a writer wrote it: the batch claims one record more than it
    holds. Reported as corrupt at the batch; the batches before it are still checked."""
    batches = [encode_batch([Record(i, T0, b"k%d" % i, b"v")]) for i in range(3)]
    middle = bytearray(batches[1])
    (count,) = struct.unpack_from(">i", middle, 57)
    struct.pack_into(">i", middle, 57, count + 1)
    struct.pack_into(">I", middle, 17, crc32c(middle[21:]))
    write_batches(tmp_path, [batches[0], bytes(middle), batches[2]])
    log = open_read_only(tmp_path)  # no index: the open recovers, which reads headers only
    report = verify_log(log)
    log.close()
    assert [(p.kind, p.position) for p in report.problems] == [(KIND_CORRUPT, len(batches[0]))]
    assert report.batches_checked == 1 and report.records_checked == 1


def test_batch_past_the_next_segments_base_offset(tmp_path: Path) -> None:
    write_batches(tmp_path, [encode_batch([Record(i, T0, b"k%d" % i, b"v")]) for i in range(3)])
    later = partition_dir(tmp_path) / "00000000000000000002.log"
    later.write_bytes(encode_batch([Record(5, T0, b"k5", b"v")]))
    report = verify_read_only(tmp_path)
    first = segment_logs(tmp_path)[0]
    assert [(p.kind, p.path, p.position, p.offset) for p in report.problems] == [
        (KIND_OFFSET_RANGE, str(first), 2 * len(encode_batch([Record(0, T0, b"k0", b"v")])), 2)
    ]
    assert "outside this segment's range [0, 2)" in report.problems[0].message


# --- damaged index files -------------------------------------------------------------------------


def test_index_entry_pointing_inside_a_batch(tmp_path: Path, clock: ManualClock) -> None:
    write_log(tmp_path, clock, distinct_records())
    index = sorted(partition_dir(tmp_path).glob("*.index"))[1]
    data = bytearray(index.read_bytes())
    assert len(data) >= 3 * 8
    relative, position = struct.unpack_from(">ii", data, 8)
    struct.pack_into(">ii", data, 8, relative, position + 1)  # still increasing: loads as is
    index.write_bytes(bytes(data))
    report = verify_read_only(tmp_path)
    assert kinds(report) == [KIND_INDEX_ENTRY]
    problem = report.problems[0]
    assert (problem.path, problem.position) == (str(index), 8)
    assert f"position {position + 1} is not the start of a batch" in problem.message


def test_index_entry_with_a_wrong_offset(tmp_path: Path, clock: ManualClock) -> None:
    write_log(tmp_path, clock, distinct_records())
    index = sorted(partition_dir(tmp_path).glob("*.index"))[1]
    data = bytearray(index.read_bytes())
    relative, position = struct.unpack_from(">ii", data, 8)
    struct.pack_into(">ii", data, 8, relative - 1, position)  # the previous batch's offset
    index.write_bytes(bytes(data))
    report = verify_read_only(tmp_path)
    assert kinds(report) == [KIND_INDEX_ENTRY]
    assert report.problems[0].position == 8
    assert "is not the last offset of a batch" in report.problems[0].message


def test_index_that_contradicts_its_log_is_reported_though_rebuilt_at_open(
    tmp_path: Path, clock: ManualClock
) -> None:
    """Offsets going backwards: the open rebuilds that index in memory (the file is left
    alone), so verify reports what the open found."""
    write_log(tmp_path, clock, distinct_records())
    index = sorted(partition_dir(tmp_path).glob("*.index"))[1]
    data = bytearray(index.read_bytes())
    assert len(data) >= 3 * 8
    struct.pack_into(">i", data, 16, struct.unpack_from(">i", data, 8)[0])  # entry 2 = entry 1
    index.write_bytes(bytes(data))
    log = open_read_only(tmp_path)
    assert log.load_report.rebuilt_indexes
    report = verify_log(log)
    log.close()
    assert kinds(report) == [KIND_INDEX_ENTRY]
    assert report.problems[0].path == str(index)
    assert "not strictly increasing" in report.problems[0].message
    assert "rebuilt in memory" in report.problems[0].message


def test_zero_entry_inside_a_closed_segments_index(tmp_path: Path, clock: ManualClock) -> None:
    """A relative offset 0 above slot 0 reads as the end of the entries (a preallocated
    tail); in a closed segment's trimmed file it is damage."""
    write_log(tmp_path, clock, distinct_records())
    index = sorted(partition_dir(tmp_path).glob("*.index"))[1]
    data = bytearray(index.read_bytes())
    struct.pack_into(">i", data, 16, 0)
    index.write_bytes(bytes(data))
    report = verify_read_only(tmp_path)
    assert kinds(report) == [KIND_INDEX_ENTRY]
    problem = report.problems[0]
    assert (problem.path, problem.position) == (str(index), 16)
    assert f"the file is {len(data)} bytes but 2 entries" in problem.message


def test_time_index_entry_with_a_wrong_timestamp(tmp_path: Path, clock: ManualClock) -> None:
    write_log(tmp_path, clock, distinct_records())
    timeindex = sorted(partition_dir(tmp_path).glob("*.timeindex"))[1]
    data = bytearray(timeindex.read_bytes())
    assert len(data) >= 3 * 12
    timestamp, relative = struct.unpack_from(">qi", data, 12)
    next_timestamp = struct.unpack_from(">q", data, 24)[0]
    assert next_timestamp > timestamp + 1
    struct.pack_into(">qi", data, 12, timestamp + 1, relative)  # still increasing
    timeindex.write_bytes(bytes(data))
    report = verify_read_only(tmp_path)
    assert kinds(report) == [KIND_TIME_INDEX_ENTRY]
    problem = report.problems[0]
    assert (problem.path, problem.position) == (str(timeindex), 12)
    assert f"has maxTimestamp {timestamp}" in problem.message


def test_time_index_entry_with_an_offset_in_no_batch(tmp_path: Path, clock: ManualClock) -> None:
    write_log(tmp_path, clock, distinct_records())
    timeindex = sorted(partition_dir(tmp_path).glob("*.timeindex"))[1]
    data = bytearray(timeindex.read_bytes())
    count = len(data) // 12
    timestamp, relative = struct.unpack_from(">qi", data, (count - 1) * 12)
    struct.pack_into(">qi", data, (count - 1) * 12, timestamp, relative + 1000)
    timeindex.write_bytes(bytes(data))
    report = verify_read_only(tmp_path)
    # The loader's own check catches an entry naming an offset past the segment (the index
    # is rebuilt in memory by the read-only open), and verify reports the file it distrusts.
    assert kinds(report) == [KIND_TIME_INDEX_ENTRY]
    assert report.problems[0].path == str(timeindex)
    assert "the index contradicts its log" in report.problems[0].message


# --- compaction ----------------------------------------------------------------------------------


def write_compacted(
    tmp_path: Path, clock: ManualClock, items: list[tuple[bytes | None, bytes | None]]
) -> LogConfig:
    cfg = small_segments(cleanup_policy=COMPACT)
    write_log(tmp_path, clock, items, cfg)
    return cfg


def test_duplicate_key_below_the_checkpoint(tmp_path: Path, clock: ManualClock) -> None:
    items = distinct_records(60)
    items[40] = (b"key-0007", b"again")  # offset 40 repeats the key of offset 7
    items[55] = (b"key-0050", b"above")  # offset 55 repeats offset 50, but above the checkpoint
    cfg = write_compacted(tmp_path, clock, items)
    report = verify_read_only(tmp_path, cfg, cleaner_checkpoint=52)
    assert kinds(report) == [KIND_DUPLICATE_KEY]
    problem = report.problems[0]
    assert problem.offset == 40 and "also at offset 7" in problem.message
    log = open_read_only(tmp_path, cfg)
    holder = next(s for s in reversed(log.segments) if s.base_offset <= 40)
    location = holder.translate_offset(40)
    log.close()
    assert location is not None
    assert (problem.path, problem.position) == (str(holder.log_path), location.position)
    # Above the checkpoint nothing is judged; without one, or on a non-compacted topic, no
    # key check runs.
    assert verify_read_only(tmp_path, cfg, cleaner_checkpoint=40).ok
    assert verify_read_only(tmp_path, cfg).ok
    assert verify_read_only(tmp_path, small_segments(), cleaner_checkpoint=60).ok


def test_tombstone_without_horizon_below_the_checkpoint(tmp_path: Path, clock: ManualClock) -> None:
    items = distinct_records(30)
    items[10] = (b"key-0010", None)
    items[25] = (b"key-0025", None)
    cfg = write_compacted(tmp_path, clock, items)
    report = verify_read_only(tmp_path, cfg, cleaner_checkpoint=20)
    assert kinds(report) == [KIND_TOMBSTONE_WITHOUT_HORIZON]
    assert report.problems[0].offset == 10
    assert verify_read_only(tmp_path, cfg, cleaner_checkpoint=10).ok


HORIZON = T0 + 5_000


def horizon_batches() -> list[bytes]:
    """Offsets 0-1 plain, 2-3 a tombstone batch stamped with a delete horizon, 4 a value."""
    return [
        encode_batch([Record(0, T0, b"a", b"1"), Record(1, T0, b"b", b"2")]),
        encode_batch(
            [Record(2, T0 + 1, b"c", None), Record(3, T0 + 1, b"d", b"4")],
            delete_horizon_ms=HORIZON,
        ),
        encode_batch([Record(4, T0 + 2, b"e", b"5")]),
    ]


def test_expired_tombstone(tmp_path: Path) -> None:
    write_batches(tmp_path, horizon_batches())
    cfg = small_segments(cleanup_policy=COMPACT)
    assert verify_read_only(tmp_path, cfg, cleaner_checkpoint=5).ok  # horizon set: fine
    assert verify_read_only(tmp_path, cfg, cleaner_checkpoint=5, last_clean_ms=HORIZON - 1).ok
    report = verify_read_only(tmp_path, cfg, cleaner_checkpoint=5, last_clean_ms=HORIZON)
    assert kinds(report) == [KIND_EXPIRED_TOMBSTONE]
    problem = report.problems[0]
    assert problem.offset == 2 and problem.position == len(horizon_batches()[0])
    assert f"delete horizon {HORIZON}" in problem.message
    assert verify_read_only(tmp_path, cfg, cleaner_checkpoint=2, last_clean_ms=HORIZON).ok


def test_patched_horizon_batch_is_judged_like_a_built_one(
    tmp_path: Path, clock: ManualClock
) -> None:
    """A tombstone written by the Log API, then stamped in place as a cleaner would: the
    attributes and base timestamp change, and the CRC is computed again."""
    items = distinct_records(30)
    items[5] = (b"key-0005", None)
    cfg = write_compacted(tmp_path, clock, items)
    path = segment_logs(tmp_path)[0]
    position = next(p for p, base, _ in batch_positions(path) if base == 5)
    data = bytearray(path.read_bytes())
    (attributes,) = struct.unpack_from(">h", data, position + 21)
    struct.pack_into(">h", data, position + 21, attributes | DELETE_HORIZON_FLAG_MASK)
    struct.pack_into(">q", data, position + 27, HORIZON)
    (length,) = struct.unpack_from(">i", data, position + 8)
    struct.pack_into(
        ">I", data, position + 17, crc32c(data[position + 21 : position + 12 + length])
    )
    path.write_bytes(bytes(data))
    assert verify_read_only(tmp_path, cfg, cleaner_checkpoint=20, last_clean_ms=HORIZON - 1).ok
    report = verify_read_only(tmp_path, cfg, cleaner_checkpoint=20, last_clean_ms=HORIZON + 1)
    assert [(p.kind, p.offset, p.position) for p in report.problems] == [
        (KIND_EXPIRED_TOMBSTONE, 5, position)
    ]


def test_horizon_stamped_by_the_last_round_with_zero_retention_is_not_expired(
    tmp_path: Path,
) -> None:
    """delete.retention.ms=0: the round at HORIZON stamps horizon HORIZON and keeps it."""
    write_batches(tmp_path, horizon_batches())
    cfg = small_segments(cleanup_policy=COMPACT, delete_retention_ms=0)
    assert verify_read_only(tmp_path, cfg, cleaner_checkpoint=5, last_clean_ms=HORIZON).ok
    report = verify_read_only(tmp_path, cfg, cleaner_checkpoint=5, last_clean_ms=HORIZON + 1)
    assert kinds(report) == [KIND_EXPIRED_TOMBSTONE]


def test_control_batches_are_not_judged_by_key(tmp_path: Path) -> None:
    """Two COMMIT markers share their key and have no horizon: neither is a problem."""
    marker_key = encode_control_key(ControlRecordType.COMMIT)
    marker_value = encode_end_txn_marker(0)
    pid: dict[str, Any] = {"producer_id": 7, "producer_epoch": 0, "is_transactional": True}
    write_batches(
        tmp_path,
        [
            encode_batch([Record(0, T0, b"a", b"1")], base_sequence=0, **pid),
            encode_batch([Record(1, T0, marker_key, marker_value)], is_control=True, **pid),
            encode_batch([Record(2, T0, b"b", b"2")], base_sequence=1, **pid),
            encode_batch([Record(3, T0, marker_key, marker_value)], is_control=True, **pid),
        ],
    )
    cfg = small_segments(cleanup_policy=COMPACT)
    report = verify_read_only(tmp_path, cfg, cleaner_checkpoint=4, last_clean_ms=T0 * 2)
    assert report.ok, report.problems
    assert report.records_checked == 4


def test_problems_beyond_the_limit_are_counted(tmp_path: Path, clock: ManualClock) -> None:
    items: list[tuple[bytes | None, bytes | None]] = [(b"key-%04d" % i, None) for i in range(20)]
    cfg = write_compacted(tmp_path, clock, items)
    report = verify_read_only(tmp_path, cfg, cleaner_checkpoint=20, max_problems=3)
    assert kinds(report) == [KIND_TOMBSTONE_WITHOUT_HORIZON] * 3
    assert report.problems_omitted == 17 and not report.ok


def test_bad_arguments(tmp_path: Path, clock: ManualClock) -> None:
    write_log(tmp_path, clock, distinct_records(3))
    log = open_read_only(tmp_path)
    with pytest.raises(ValueError, match="chunk_bytes"):
        verify_log(log, chunk_bytes=4)
    with pytest.raises(ValueError, match="max_problems"):
        verify_log(log, max_problems=0)
    log.close()


# --- the corpus: real broker-written files (read-only, never written) ----------------------------


def _corpus_partition_dirs() -> list[object]:
    root = corpus_root()
    found: list[object] = []
    if root is not None:
        for directory in sorted({p.parent for p in root.rglob("*.log")}):
            parsed = parse_partition_dir_name(directory.name)
            if parsed is not None and parsed.kind is PartitionDirKind.LIVE:
                found.append(pytest.param(directory, id=str(directory.relative_to(root))))
    if not found:
        return [pytest.param(None, id="no-corpus", marks=pytest.mark.skip(reason=NO_CORPUS_REASON))]
    return found


def _has_delete_horizon(log: Log) -> bool:
    """Whether any batch carries a KIP-534 delete horizon (a Kafka 3.1+ cleaner ran)."""
    for segment in log.segments:
        for batch in segment.iter_batches(0, segment.size):
            if batch.magic == 2 and batch.attributes & DELETE_HORIZON_FLAG_MASK:
                return True
    return False


@pytest.mark.compat
@pytest.mark.parametrize("directory", _corpus_partition_dirs())
def test_corpus_partitions_verify_ok(directory: Path) -> None:
    """Each partition as the broker left it (its own index files judged: opened as after a
    clean shutdown, so nothing is rebuilt but missing indexes), read-only."""
    parsed = parse_partition_dir_name(directory.name)
    assert parsed is not None
    tp = TopicPartition(parsed.topic, parsed.partition)
    log = Log.open(
        directory, tp, LogConfig(), clock=ManualClock(), writable=False, had_clean_shutdown=True
    )
    try:
        report = verify_log(log)
        assert report.ok, report.problems
        assert report.batches_checked > 0
        checkpoint = LogDirectory(directory.parent, writable=False).read_offsets(
            CLEANER_OFFSET_CHECKPOINT
        )
        if tp not in checkpoint:
            return
        # A partition the broker's cleaner cleaned: judged as a compacted log. No key is
        # left twice below the checkpoint. Brokers before Kafka 3.1 (KIP-534) stamp no
        # delete horizon, so only a log cleaned by one lacks horizons on its tombstones.
        log.config = replace(log.config, cleanup_policy=COMPACT)
        compacted = verify_log(log, cleaner_checkpoint=checkpoint[tp])
        if _has_delete_horizon(log):
            assert compacted.ok, compacted.problems
        else:
            assert set(kinds(compacted)) <= {KIND_TOMBSTONE_WITHOUT_HORIZON}
    finally:
        log.close()


def _corpus_data_dirs() -> list[object]:
    root = corpus_root()
    dirs = sorted({p.parent.parent for p in root.rglob("*.log")} if root is not None else set())
    if root is None or not dirs:
        return [pytest.param(None, id="no-corpus", marks=pytest.mark.skip(reason=NO_CORPUS_REASON))]
    return [pytest.param(d, id=str(d.relative_to(root))) for d in dirs]


@pytest.mark.compat
@pytest.mark.parametrize("data_dir", _corpus_data_dirs())
def test_corpus_data_dirs_verify_ok_as_the_manager_opens_them(data_dir: Path) -> None:
    """Through a read-only LogManager, as ``seglog verify`` opens them (recovering in memory
    what an unclean shutdown left, which then must have found nothing to cut)."""
    broker = BrokerConfig.from_properties({"log.dirs": str(data_dir)})
    manager = LogManager.open(broker, clock=ManualClock(), read_only=True)
    try:
        for log in manager.logs().values():
            report = verify_log(log)
            assert report.ok, (log.topic_partition, report.problems)
    finally:
        manager.close()
