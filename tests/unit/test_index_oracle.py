"""The independent index checker (``tests/support/index_oracle.py``) and the kafka-python
partition reader (``tests/support/kafka_oracle.py``) are right, so they can judge seglog.

* On real broker-written partition directories (the corpus) the checker finds nothing,
  except where the corpus provably deviates from the Kafka the spec describes
  (:data:`KNOWN_DEVIATIONS`, each with its reason).
* Hand-made broken index files are caught, rule by rule: on segments built with kafka-python
  (no corpus needed) and on a copied corpus segment.
* Its struct-only walk of a ``.log`` agrees with kafka-python's reading of every corpus log.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from kafka.record import MemoryRecordsBuilder
from kafka.record.util import calc_crc32c

from corpus_location import corpus_files, corpus_params, corpus_root
from support.index_oracle import (
    BatchInfo,
    IndexEntry,
    TimeEntry,
    check_offset_index,
    check_partition_dir,
    check_sparsity,
    check_time_index,
    read_offset_index,
    read_time_index,
    rebuild_indexes,
    scan_log,
)
from support.kafka_oracle import kafka_python_view, read_partition_dir_with_kafka_python

# --- building segments with kafka-python ---------------------------------------------------

BASE = 100
INTERVAL = 150  # index.interval.bytes of the synthetic segments: a few entries each
GZIP = 1


def kp_batch(
    base_offset: int, timestamps: list[int], *, codec: int = 0, magic: int = 2, value: int = 40
) -> bytes:
    """One batch (v2) or one message set (v0/v1) built by kafka-python at ``base_offset``."""
    builder = MemoryRecordsBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for ts in timestamps:
        builder.append(ts, None, b"v" * value)
    builder.close()
    data = bytearray(builder.buffer())
    pos = 0
    while pos < len(data):  # v2: the base offset; legacy: each entry's offset (not in the CRC)
        (offset, size) = struct.unpack_from(">qi", data, pos)
        struct.pack_into(">q", data, pos, base_offset + offset)
        pos += 12 + size
    return bytes(data)


def control_batch(offset: int) -> bytes:
    """A COMMIT marker: kafka-python cannot build control batches, so flip the flag (bit 5)."""
    data = bytearray(kp_batch(offset, [1], value=0))
    data[61:] = bytearray(kp_record_with_key(struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 0)))
    struct.pack_into(">i", data, 8, len(data) - 12)
    struct.pack_into(">h", data, 21, struct.unpack_from(">h", data, 21)[0] | 0x20 | 0x10)
    struct.pack_into(">I", data, 17, calc_crc32c(bytes(data[21:])))
    return bytes(data)


def kp_record_with_key(key: bytes, value: bytes) -> bytes:
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    builder.append(1, key, value)
    builder.close()
    return bytes(builder.buffer())[61:]


# Timestamps go up and down, so the running max (T6) differs from the batch's own max; one
# batch repeats the running max (T6: the *first* batch reaching it is the shallow offset).
TIMESTAMPS = [[10, 12], [11], [30, 20], [25], [30], [40, 41, 39], [35], [41], [50], [45]]


def build_segment(directory: Path, base: int = BASE) -> tuple[Path, list[BatchInfo]]:
    """A segment of ten batches (some gzip), with the indexes recovery would write (§5.2)."""
    directory.mkdir(parents=True, exist_ok=True)
    chunks, offset = [], base
    for i, stamps in enumerate(TIMESTAMPS):
        chunks.append(kp_batch(offset, stamps, codec=GZIP if i % 3 == 2 else 0))
        offset += len(stamps)
    log = directory / f"{base:020d}.log"
    log.write_bytes(b"".join(chunks))
    batches = scan_log(log)
    offsets, times = rebuild_indexes(batches, INTERVAL)
    write_offset_index(log.with_suffix(".index"), base, offsets)
    write_time_index(log.with_suffix(".timeindex"), base, times)
    return log, batches


def write_offset_index(path: Path, base: int, entries: list[IndexEntry]) -> None:
    path.write_bytes(b"".join(struct.pack(">ii", e.offset - base, e.position) for e in entries))


def write_time_index(path: Path, base: int, entries: list[TimeEntry]) -> None:
    path.write_bytes(b"".join(struct.pack(">qi", e.timestamp, e.offset - base) for e in entries))


def offset_problems(log: Path, **kwargs: bool) -> list[str]:
    return check_offset_index(log.with_suffix(".index"), log, BASE, **{"trimmed": True, **kwargs})


def time_problems(log: Path, **kwargs: bool) -> list[str]:
    return check_time_index(log.with_suffix(".timeindex"), log, BASE, **{"trimmed": True, **kwargs})


@pytest.fixture
def segment(tmp_path: Path) -> tuple[Path, list[BatchInfo]]:
    return build_segment(tmp_path / "t-0")


# --- a well-formed segment passes every rule -------------------------------------------------


def test_synthetic_segment_passes_every_rule(segment: tuple[Path, list[BatchInfo]]) -> None:
    log, batches = segment
    offsets = read_offset_index(log.with_suffix(".index"), BASE, trimmed=True)
    times = read_time_index(log.with_suffix(".timeindex"), BASE, trimmed=True)
    assert len(offsets) >= 3 and len(times) >= 3  # the rules below are exercised
    assert offset_problems(log) == offset_problems(log, dump_log_strict=True) == []
    assert time_problems(log) == []
    assert check_sparsity(offsets, batches, INTERVAL, expect_exact_rebuild=True) == []
    assert (
        check_partition_dir(log.parent, index_interval_bytes=INTERVAL, expect_exact_rebuild=True)
        == []
    )
    # The rebuild, worked out by hand for index.interval.bytes = 0: an entry at every batch
    # but the first (§5.2); time entries at each rise of the running max, at the first batch
    # reaching it (batch 4 repeats 30 and batch 7 repeats 41: no entry for them).
    rebuilt_offsets, rebuilt_times = rebuild_indexes(batches, 0)
    assert rebuilt_offsets == [IndexEntry(b.last_offset, b.position) for b in batches[1:]]
    assert rebuilt_times == [
        TimeEntry(ts, batches[k].last_offset) for ts, k in ((12, 0), (30, 2), (41, 5), (50, 8))
    ]


def test_multi_batch_append_chunk_is_accepted_but_not_by_the_dump_tool_rule(
    segment: tuple[Path, list[BatchInfo]],
) -> None:
    # §5.1: one append of batches 3..4 maps the chunk's last offset to its first position.
    log, batches = segment
    entries = [IndexEntry(batches[4].last_offset, batches[3].position)]
    write_offset_index(log.with_suffix(".index"), BASE, entries)
    assert offset_problems(log) == []
    assert offset_problems(log, dump_log_strict=True) == [
        f"{log.stem}.index: entry 0 (offset {batches[4].last_offset}, position "
        f"{batches[3].position}): the batch at the position ends at offset "
        f"{batches[3].last_offset}"
    ]
    # ... but a chunk may not reach past the next entry's position
    entries.append(IndexEntry(batches[5].last_offset, batches[4].position))
    write_offset_index(log.with_suffix(".index"), BASE, entries)
    assert any("past the next entry" in p for p in offset_problems(log))


# --- broken files are caught -----------------------------------------------------------------


def test_size_not_a_multiple_of_the_entry_size(segment: tuple[Path, list[BatchInfo]]) -> None:
    log, _ = segment
    for suffix, check in ((".index", offset_problems), (".timeindex", time_problems)):
        path = log.with_suffix(suffix)
        path.write_bytes(path.read_bytes() + b"\0\0\0")
        assert any("is not a multiple of" in p for p in check(log)), suffix


def test_zero_tail_in_a_trimmed_file(segment: tuple[Path, list[BatchInfo]]) -> None:
    log, _ = segment
    for suffix, size, check in ((".index", 8, offset_problems), (".timeindex", 12, time_problems)):
        path = log.with_suffix(suffix)
        count = path.stat().st_size // size
        path.write_bytes(path.read_bytes() + bytes(size * 5))
        assert check(log) == [f"{path.name}: zero tail from entry {count} (file not trimmed)"]
        assert check(log, trimmed=False) == []  # an active segment's preallocated tail


def test_untrimmed_empty_preallocated_files_read_as_empty(
    segment: tuple[Path, list[BatchInfo]],
) -> None:
    log, _ = segment
    log.with_suffix(".index").write_bytes(bytes(8 * 100))
    log.with_suffix(".timeindex").write_bytes(bytes(12 * 100))
    assert read_offset_index(log.with_suffix(".index"), BASE, trimmed=False) == []
    assert offset_problems(log, trimmed=False) == []
    assert time_problems(log, trimmed=False, is_active=True) == []
    assert check_partition_dir(log.parent, active_trimmed=False) == []
    assert any("not the final max entry" in p for p in check_partition_dir(log.parent))


def test_wrong_position(segment: tuple[Path, list[BatchInfo]]) -> None:
    log, batches = segment
    path = log.with_suffix(".index")
    entries = read_offset_index(path, BASE, trimmed=True)
    moved = [IndexEntry(entries[0].offset, entries[0].position + 1), *entries[1:]]
    write_offset_index(path, BASE, moved)
    assert offset_problems(log) == [
        f"{path.name}: entry 0 (offset {moved[0].offset}, position {moved[0].position}): "
        "position is not the start of a batch"
    ]
    # the start of another batch: that batch (and the ones after it) do not end at the offset
    k = next(k for k, b in enumerate(batches) if b.last_offset == entries[0].offset)
    write_offset_index(path, BASE, [IndexEntry(entries[0].offset, batches[k + 1].position)])
    assert [p.split(": ")[-1] for p in offset_problems(log)] == [
        "no batch from the position on ends at the offset"
    ]


def test_offsets_not_increasing_and_below_base(segment: tuple[Path, list[BatchInfo]]) -> None:
    log, batches = segment
    path = log.with_suffix(".index")
    entries = read_offset_index(path, BASE, trimmed=True)
    write_offset_index(path, BASE, [entries[1], entries[0], *entries[2:]])
    problems = offset_problems(log)
    assert any("offset not above the previous entry's" in p for p in problems)
    assert any("position below the previous entry's" in p for p in problems)
    write_offset_index(path, BASE, [entries[0], entries[0]])
    assert any("offset not above the previous entry's" in p for p in offset_problems(log))
    write_offset_index(path, BASE, [IndexEntry(BASE - 1, batches[1].position)])
    assert any("below the base offset" in p for p in offset_problems(log))


def test_sparsity(segment: tuple[Path, list[BatchInfo]]) -> None:
    log, batches = segment
    entries = read_offset_index(log.with_suffix(".index"), BASE, trimmed=True)
    assert check_sparsity(entries, batches, INTERVAL) == []
    # entries closer than the interval (S1), and a missing entry (S2)
    assert check_sparsity(entries, batches, 10 * INTERVAL)
    assert check_sparsity(entries[:-1], batches, INTERVAL) == []  # S1 alone cannot tell
    assert check_sparsity(entries[:-1], batches, INTERVAL, expect_exact_rebuild=True)
    # no entry ever sits at position 0: the first append gets none (§5.1)
    assert check_sparsity([IndexEntry(batches[0].last_offset, 0)], batches, 0)


def test_timestamps_not_increasing(segment: tuple[Path, list[BatchInfo]]) -> None:
    log, _ = segment
    path = log.with_suffix(".timeindex")
    times = read_time_index(path, BASE, trimmed=True)
    write_time_index(path, BASE, [times[1], times[0], *times[2:]])
    problems = time_problems(log)
    assert any("timestamp not above" in p for p in problems)
    assert any("offset below" in p for p in problems)
    write_time_index(path, BASE, [times[0], times[0], *times[1:]])
    assert any("timestamp not above" in p for p in time_problems(log))


def test_time_entry_rules(segment: tuple[Path, list[BatchInfo]]) -> None:
    log, batches = segment
    path = log.with_suffix(".timeindex")
    times = read_time_index(path, BASE, trimmed=True)
    final = times[-1]

    def problems_with(first: TimeEntry) -> list[str]:
        write_time_index(path, BASE, [first, final])
        return time_problems(log)

    # T5: an inner record offset (what Kafka <= 3.7's leader path wrote for uncompressed v2)
    assert "offset is not the last offset of a batch" in problems_with(TimeEntry(12, BASE))[0]
    # T6: not the batch's maxTimestamp; a later batch repeating an earlier max
    assert "maxTimestamp is 12" in problems_with(TimeEntry(11, batches[0].last_offset))[0]
    assert (
        "earlier batch already reached 30"
        in problems_with(TimeEntry(30, batches[4].last_offset))[0]
    )
    # T3: the first timestamp must exceed -1 (the empty index's last entry)
    assert "not above -1" in problems_with(TimeEntry(-1, batches[0].last_offset))[0]


def test_missing_final_time_entry(segment: tuple[Path, list[BatchInfo]]) -> None:
    log, batches = segment
    path = log.with_suffix(".timeindex")
    times = read_time_index(path, BASE, trimmed=True)
    write_time_index(path, BASE, times[:-1])
    expected = TimeEntry(50, batches[8].last_offset)
    assert times[-1] == expected
    assert time_problems(log) == [
        f"{path.name}: last entry {times[-2]} is not the final max entry {expected}"
    ]
    assert time_problems(log, is_active=True) == []
    write_time_index(path, BASE, [])
    assert time_problems(log) == [
        f"{path.name}: last entry None is not the final max entry {expected}"
    ]


def test_deep_check_compares_record_timestamps(segment: tuple[Path, list[BatchInfo]]) -> None:
    # A batch header whose maxTimestamp lies about its (compressed) records: only kafka-python
    # decoding the records sees it (kafka-dump-log's check, §18.3).
    log, batches = segment
    data = bytearray(log.read_bytes())
    batch = batches[2]  # gzip, records 30 and 20
    assert batch.attributes & 0x07 == GZIP
    struct.pack_into(">q", data, batch.position + 35, 33)
    log.write_bytes(bytes(data))
    write_time_index(log.with_suffix(".timeindex"), BASE, [TimeEntry(33, batch.last_offset)])
    problems = time_problems(log, is_active=True)
    assert problems == [
        f"{log.stem}.timeindex: entry 0 (timestamp 33, offset {batch.last_offset}): "
        "that batch's records reach 30"
    ]
    assert time_problems(log, is_active=True, deep=False) == []


def test_partition_dir_missing_files_and_torn_tail(tmp_path: Path) -> None:
    log, _ = build_segment(tmp_path / "t-0", base=0)
    second, _ = build_segment(tmp_path / "t-0", base=20)
    assert check_partition_dir(tmp_path / "t-0") == []
    log.with_suffix(".index").unlink()
    assert check_partition_dir(tmp_path / "t-0") == [
        f"{log.stem}.index: missing for a non-empty segment"
    ]
    assert check_partition_dir(tmp_path / "t-0", missing_as_empty=True) == []
    # an empty active segment legitimately has no index files (§7.5)
    log.with_suffix(".index").write_bytes(b"")
    empty = tmp_path / "t-0" / f"{40:020d}.log"
    empty.write_bytes(b"")
    assert check_partition_dir(tmp_path / "t-0") == []
    # a torn tail is reported (and the batches before it still judged)
    empty.unlink()
    second.write_bytes(second.read_bytes() + kp_batch(40, [60])[:30])
    problems: list[str] = []
    assert len(scan_log(second, problems)) == len(TIMESTAMPS)
    assert problems == [f"torn tail: partial batch at position {second.stat().st_size - 30}"]
    assert check_partition_dir(tmp_path / "t-0") == [f"{second.name}: {problems[0]}"]


def test_legacy_entries_are_walked_with_their_last_offset_and_timestamp(tmp_path: Path) -> None:
    log = tmp_path / f"{0:020d}.log"
    log.write_bytes(
        kp_batch(0, [5], magic=1)
        + kp_batch(1, [7, 6], magic=1)  # uncompressed: one entry per message
        + kp_batch(3, [9, 8], magic=1, codec=GZIP)  # a wrapper: offset = its last offset
        + kp_batch(5, [4], magic=0)
        + kp_batch(6, [11, 12])
    )
    got = [(b.base_offset, b.last_offset, b.max_timestamp, b.magic) for b in scan_log(log)]
    assert got[:3] == [(0, 0, 5, 1), (1, 1, 7, 1), (2, 2, 6, 1)]
    assert got[3][0] is None and got[3][2:] == (_wrapper_timestamp(log, 3), 1)
    assert got[4:] == [(5, 5, -1, 0), (6, 7, 12, 2)]
    assert_walk_matches_kafka_python(log)


def _wrapper_timestamp(log: Path, k: int) -> int:
    return kafka_python_view(log.read_bytes()).batches[k].header["wrapper_timestamp"]


def assert_walk_matches_kafka_python(log: Path) -> None:
    """scan_log (struct) and kafka-python agree on positions, sizes, offsets, timestamps."""
    ours = scan_log(log)
    theirs = kafka_python_view(log.read_bytes()).batches
    assert [(b.position, b.size, b.magic) for b in ours] == [
        (b.position, b.size, b.header["magic"]) for b in theirs
    ]
    for mine, peer in zip(ours, theirs, strict=True):
        assert mine.last_offset == peer.header["last_offset"], mine
        ts = peer.header["max_timestamp" if mine.magic == 2 else "wrapper_timestamp"]
        assert mine.max_timestamp == ts, mine


# --- the kafka-python partition reader -------------------------------------------------------


def test_read_partition_dir_with_kafka_python(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    d.mkdir()
    (d / f"{3:020d}.log").write_bytes(kp_batch(3, [30]) + control_batch(4) + kp_batch(5, [50]))
    (d / f"{0:020d}.log").write_bytes(kp_batch(0, [1, 2], codec=GZIP) + kp_batch(2, [20]))
    records = read_partition_dir_with_kafka_python(d)
    assert [(r[0], r[1]) for r in records] == [(0, 1), (1, 2), (2, 20), (3, 30), (5, 50)]
    assert records[0][2:] == (None, b"v" * 40, [])
    with_control = read_partition_dir_with_kafka_python(d, include_control=True)
    assert [r[0] for r in with_control] == [0, 1, 2, 3, 4, 5]
    # a damaged CRC and (when strict) a torn tail are errors, not silently skipped data
    log = d / f"{3:020d}.log"
    log.write_bytes(log.read_bytes() + kp_batch(6, [60])[:20])
    with pytest.raises(ValueError, match="trailing bytes"):
        read_partition_dir_with_kafka_python(d)
    assert len(read_partition_dir_with_kafka_python(d, strict=False)) == len(records)
    data = bytearray(log.read_bytes())
    data[70] ^= 0xFF
    log.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="CRC"):
        read_partition_dir_with_kafka_python(d, strict=False)


# --- the corpus ------------------------------------------------------------------------------

# Corpus files that break a rule because the broker that wrote them differs from the Kafka
# the spec describes; the test asserts the checker reports exactly these problems.
KNOWN_DEVIATIONS = {
    # cp-kafka 5.3.0 = Kafka 2.3. Its leader path (LogValidator.assignOffsetsNonCompressed)
    # passed the offset of the *record* holding the max timestamp to the time index, not the
    # batch's last offset: batch 105..106 (uncompressed, both records at 1572337614488) got
    # the entry at 105 (the first record reaching the max). Later Kafka writes the shallow
    # offset (§3.7, §8.1); kafka-dump-log flags the entry as "shallow offset not found".
    "no-licence/smartassets-connect-compacted/docker-connect-configs-0": [
        "00000000000000000069.timeindex: entry 2 (timestamp 1572337614488, offset 105): "
        "offset is not the last offset of a batch"
    ],
}


def _partition_dirs() -> list[object]:
    root = corpus_root()
    dirs = sorted({p.parent for p in corpus_files((".log",))})
    if root is None or not dirs:
        return [pytest.param(None, id="no-corpus")]
    return [pytest.param(d, id=str(d.relative_to(root))) for d in dirs]


def _cleanly_shut_down(partition_dir: Path) -> bool:
    return (partition_dir.parent / ".kafka_cleanshutdown").exists()


@pytest.mark.compat
@pytest.mark.parametrize("partition_dir", _partition_dirs())
def test_corpus_partition_dir_passes(partition_dir: Path | None, corpus_dir: Path) -> None:
    """Closed segments (and, after a clean shutdown, the active one) follow every rule.

    The active segment of a log dir without ``.kafka_cleanshutdown`` is judged as live: its
    files may have a zero tail and need no final time entry. ``missing_as_empty``: the corpus
    copied only non-empty files (PROVENANCE.md), so a dropped 0-byte index or a dropped
    10 MiB preallocated active index reads as empty. Every corpus broker ran with the default
    index.interval.bytes (4096), and every index entry maps a single-batch append, so
    kafka-dump-log's stricter position rule holds too.
    """
    assert partition_dir is not None
    rel = str(partition_dir.relative_to(corpus_dir))
    expected = KNOWN_DEVIATIONS.get(rel, [])
    options = {
        "active_trimmed": _cleanly_shut_down(partition_dir),
        "missing_as_empty": True,
        "index_interval_bytes": 4096,
    }
    assert check_partition_dir(partition_dir, **options) == expected
    assert check_partition_dir(partition_dir, dump_log_strict=True, **options) == expected


@pytest.mark.compat
def test_corpus_run_judges_real_entries(corpus_dir: Path) -> None:
    closed_offsets = closed_times = 0
    for partition_dir in {p.parent for p in corpus_dir.rglob("*.log")}:
        segments = sorted(partition_dir.glob("*.log"))
        closed = segments if _cleanly_shut_down(partition_dir) else segments[:-1]
        for log in closed:
            base = int(log.stem)
            if log.with_suffix(".index").exists():
                closed_offsets += len(
                    read_offset_index(log.with_suffix(".index"), base, trimmed=True)
                )
            if log.with_suffix(".timeindex").exists():
                closed_times += len(
                    read_time_index(log.with_suffix(".timeindex"), base, trimmed=True)
                )
    # The closed segments of the corpus hold real entries for every rule to bite on.
    assert closed_offsets >= 3 and closed_times >= 10, (closed_offsets, closed_times)


@pytest.mark.compat
@pytest.mark.parametrize("path", corpus_params((".log",)))
def test_struct_walk_matches_kafka_python_on_corpus_logs(
    path: Path | None, corpus_dir: Path
) -> None:
    assert path is not None
    assert_walk_matches_kafka_python(path)


CLOSED_SEGMENT = "broker/itumelengmogase-cp-kraft/__consumer_offsets-29"


@pytest.fixture
def corpus_segment(corpus_dir: Path, tmp_path: Path) -> Path:
    """A copy of a closed corpus segment with offset- and time-index entries."""
    source = corpus_dir / CLOSED_SEGMENT
    for name in (
        "00000000000000000000.log",
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
    ):
        shutil.copy(source / name, tmp_path / name)
    (tmp_path / "00000000000000000000.log").chmod(0o644)
    for name in ("00000000000000000000.index", "00000000000000000000.timeindex"):
        (tmp_path / name).chmod(0o644)
    assert check_partition_dir(tmp_path) == []
    return tmp_path / "00000000000000000000.log"


@pytest.mark.compat
def test_broken_copies_of_a_corpus_segment_are_caught(corpus_segment: Path) -> None:
    log = corpus_segment
    index, timeindex = log.with_suffix(".index"), log.with_suffix(".timeindex")
    offsets = read_offset_index(index, 0, trimmed=True)
    times = read_time_index(timeindex, 0, trimmed=True)
    assert len(offsets) >= 2 and len(times) >= 2

    write_offset_index(index, 0, [IndexEntry(offsets[0].offset, offsets[0].position + 12)])
    assert "not the start of a batch" in check_partition_dir(log.parent)[0]
    write_offset_index(index, 0, [offsets[1], offsets[0]])
    assert any("offset not above" in p for p in check_partition_dir(log.parent))
    write_offset_index(index, 0, offsets)
    index.write_bytes(index.read_bytes() + bytes(8))
    assert check_partition_dir(log.parent) == [
        f"{index.name}: zero tail from entry {len(offsets)} (file not trimmed)"
    ]
    write_offset_index(index, 0, offsets)

    write_time_index(timeindex, 0, times[:-1])
    assert "not the final max entry" in check_partition_dir(log.parent)[0]
    write_time_index(timeindex, 0, [times[1], times[0], *times[2:]])
    assert any("timestamp not above" in p for p in check_partition_dir(log.parent))
    timeindex.write_bytes(
        b"".join(struct.pack(">qi", t.timestamp, t.offset) for t in times) + b"\0"
    )
    assert any("not a multiple of 12" in p for p in check_partition_dir(log.parent))
