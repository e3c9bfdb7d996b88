"""Startup recovery (spec §11.2, §12): torn tails, bad CRCs, missing indexes, leftover files."""

from __future__ import annotations

from pathlib import Path

import pytest
from log_support import T0, batch, config, open_log, values

from seglog.clock import ManualClock
from seglog.engine.log import Log
from seglog.format.batch import encode_batch
from seglog.format.records import Record
from support.index_oracle import check_partition_dir


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


def build(
    tmp_path: Path, clock: ManualClock, count: int = 30, segment_bytes: int = 1000
) -> tuple[Log, list[tuple[int, bytes | None]]]:
    log = open_log(
        tmp_path, clock, config=config(segment_bytes=segment_bytes, index_interval_bytes=150)
    )
    for i in range(count):
        log.append(batch([b"value-%03d" % i], timestamp=T0 + i))
    expected = values(log)
    log.close()
    return log, expected


def reopen(tmp_path: Path, clock: ManualClock, **kwargs: object) -> Log:
    return open_log(
        tmp_path, clock, config=config(segment_bytes=1000, index_interval_bytes=150), **kwargs
    )


def segment_files(tmp_path: Path, suffix: str = ".log") -> list[Path]:
    return sorted((tmp_path / "events-0").glob("*" + suffix))


def test_torn_tail_is_cut_at_the_last_whole_batch(tmp_path: Path, clock: ManualClock) -> None:
    _, expected = build(tmp_path, clock)
    last = segment_files(tmp_path)[-1]
    size = last.stat().st_size
    with open(last, "ab") as handle:
        handle.write(batch([b"half written"])[:40])
    log = reopen(tmp_path, clock)
    assert log.load_report.truncated_bytes == 40
    assert last.stat().st_size == size
    assert values(log) == expected
    assert log.append(batch([b"next"])).first_offset == len(expected)


def test_zero_filled_tail_is_cut(tmp_path: Path, clock: ManualClock) -> None:
    _, expected = build(tmp_path, clock)
    last = segment_files(tmp_path)[-1]
    with open(last, "ab") as handle:
        handle.write(bytes(4096))
    log = reopen(tmp_path, clock)
    assert log.load_report.truncated_bytes == 4096
    assert values(log) == expected


def test_bad_crc_cuts_there_and_drops_later_segments(tmp_path: Path, clock: ManualClock) -> None:
    _, expected = build(tmp_path, clock, count=60)
    logs = segment_files(tmp_path)
    assert len(logs) >= 4
    victim = logs[1]
    data = bytearray(victim.read_bytes())
    one = len(batch([b"value-000"]))
    data[2 * one + 70] ^= 0x55  # inside the third batch's records
    victim.write_bytes(bytes(data))
    base = int(victim.name.split(".")[0])
    log = reopen(tmp_path, clock)
    report = log.load_report
    assert report.truncated_bytes == len(data) - 2 * one
    assert report.dropped_segments == [int(p.name.split(".")[0]) for p in logs[2:]]
    assert log.log_end_offset == base + 2
    assert values(log) == expected[: base + 2]
    assert [p.name for p in segment_files(tmp_path)] == [p.name for p in logs[:2]]
    log.close()
    assert check_partition_dir(tmp_path / "events-0") == []


def test_recovery_reads_only_segments_from_the_recovery_point(
    tmp_path: Path, clock: ManualClock
) -> None:
    _, expected = build(tmp_path, clock)
    logs = segment_files(tmp_path)
    point = int(logs[-2].name.split(".")[0]) + 1
    log = reopen(tmp_path, clock, recovery_point=point)
    read = log.load_report.bytes_read_for_recovery
    assert read == logs[-2].stat().st_size + logs[-1].stat().st_size
    assert [r.base_offset for r in log.load_report.recovered] == [
        int(p.name.split(".")[0]) for p in logs[-2:]
    ]
    assert values(log) == expected


def test_clean_shutdown_skips_recovery(tmp_path: Path, clock: ManualClock) -> None:
    _, expected = build(tmp_path, clock)
    log = reopen(tmp_path, clock, had_clean_shutdown=True, recovery_point=0)
    assert log.load_report.recovered == [] and log.load_report.bytes_read_for_recovery == 0
    assert log.recovery_point == log.log_end_offset == len(expected)


def test_missing_index_is_rebuilt_byte_for_byte(tmp_path: Path, clock: ManualClock) -> None:
    build(tmp_path, clock)
    indexes = segment_files(tmp_path, ".index")
    times = segment_files(tmp_path, ".timeindex")
    before = [p.read_bytes() for p in indexes], [p.read_bytes() for p in times]
    indexes[1].unlink()
    times[1].unlink()
    log = reopen(tmp_path, clock, had_clean_shutdown=True, recovery_point=10**6)
    assert [r.base_offset for r in log.load_report.recovered] == [int(indexes[1].name[:20])]
    log.close()
    # one batch per append: the rebuilt entries are exactly the ones the appends wrote
    assert [p.read_bytes() for p in indexes][1] == before[0][1]
    assert [p.read_bytes() for p in times][1] == before[1][1]


def test_leftover_deleted_cleaned_and_tmp_files_are_removed(
    tmp_path: Path, clock: ManualClock
) -> None:
    _, expected = build(tmp_path, clock)
    directory = tmp_path / "events-0"
    for name in (
        "00000000000000000003.log.deleted",
        "00000000000000000003.index.deleted",
        "00000000000000000000.log.cleaned",
        "00000000000000000000.timeindex.cleaned",
        "leader-epoch-checkpoint.tmp",
    ):
        (directory / name).write_bytes(b"junk")
    log = reopen(tmp_path, clock, had_clean_shutdown=True, recovery_point=10**6)
    leftovers = [
        p.name for p in directory.iterdir() if p.name.endswith((".deleted", ".cleaned", ".tmp"))
    ]
    assert leftovers == []
    assert len(log.load_report.removed_files) == 5
    assert values(log) == expected


def _write_swap(directory: Path, base: int, offsets: list[int]) -> None:
    records = [Record(o, T0 + o, b"k%d" % o, b"compacted-%d" % o) for o in offsets]
    (directory / f"{base:020d}.log.swap").write_bytes(
        encode_batch(records, partition_leader_epoch=0)
    )
    (directory / f"{base:020d}.index.swap").write_bytes(b"")


def test_swap_files_complete_an_interrupted_replace(tmp_path: Path, clock: ManualClock) -> None:
    _, expected = build(tmp_path, clock)
    directory = tmp_path / "events-0"
    bases = [int(p.name[:20]) for p in segment_files(tmp_path)]
    # a cleaner replaced the first two segments with one swap holding a few survivors
    survivors = [1, bases[1] - 1, bases[2] - 1]
    _write_swap(directory, 0, survivors)
    log = reopen(tmp_path, clock, had_clean_shutdown=True, recovery_point=10**6)
    assert log.load_report.completed_swaps == ["00000000000000000000.log.swap"]
    assert [s.base_offset for s in log.segments] == [0, *bases[2:]]
    got = values(log)
    assert [o for o, _ in got[:3]] == survivors
    assert got[3:] == expected[bases[2] :]
    assert not list(directory.glob("*.swap"))
    log.close()
    assert check_partition_dir(directory) == []


def test_swap_above_a_cleaned_file_is_an_unfinished_replace(
    tmp_path: Path, clock: ManualClock
) -> None:
    _, expected = build(tmp_path, clock)
    directory = tmp_path / "events-0"
    bases = [int(p.name[:20]) for p in segment_files(tmp_path)]
    _write_swap(directory, bases[1], [bases[1]])
    (directory / "00000000000000000000.log.cleaned").write_bytes(b"partial")
    log = reopen(tmp_path, clock, had_clean_shutdown=True, recovery_point=10**6)
    assert values(log) == expected  # originals kept, swap and cleaned discarded
    assert not list(directory.glob("*.swap")) and not list(directory.glob("*.cleaned"))


def test_orphan_index_without_log_is_removed(tmp_path: Path, clock: ManualClock) -> None:
    build(tmp_path, clock)
    orphan = tmp_path / "events-0" / "00000000000000099999.index"
    orphan.write_bytes(b"")
    reopen(tmp_path, clock, had_clean_shutdown=True, recovery_point=10**6)
    assert not orphan.exists()


def test_log_below_the_checkpointed_start_restarts_empty(
    tmp_path: Path, clock: ManualClock
) -> None:
    build(tmp_path, clock)
    log = reopen(tmp_path, clock, had_clean_shutdown=True, log_start_offset=500)
    assert (log.log_start_offset, log.log_end_offset) == (500, 500)
    assert [s.base_offset for s in log.segments] == [500]
    assert log.append(batch([b"x"])).first_offset == 500


@pytest.mark.parametrize(
    ("suffix", "damage", "problem"),
    [
        (".index", lambda raw: raw[:-4] + (10**8).to_bytes(4, "big"), "past the end"),
        (".index", lambda raw: raw[8:16] + raw[:8] + raw[16:], "not strictly increasing"),
        (".timeindex", lambda raw: raw[12:24] + raw[:12] + raw[24:], "not strictly increasing"),
        (".timeindex", lambda raw: raw[:-5], "not a multiple of the 12-byte entry"),
        (".index", lambda raw: raw[:-3], "not a multiple of the 8-byte entry"),
        (".index", lambda raw: raw[:4] + raw[12:16] + raw[8:], "positions are not strictly"),
    ],
)
def test_a_damaged_index_of_a_closed_segment_is_rebuilt(
    tmp_path: Path, clock: ManualClock, suffix: str, damage: object, problem: str
) -> None:
    """Kafka trusts an unrecovered segment's indexes; seglog checks them, so a damaged one
    never sends a lookup to a wrong position (which would skip records silently)."""
    _, expected = build(tmp_path, clock)
    victim = segment_files(tmp_path, suffix)[0]
    raw = victim.read_bytes()
    assert len(raw) >= 24
    victim.write_bytes(damage(raw))  # type: ignore[operator]
    log = reopen(tmp_path, clock, had_clean_shutdown=True, recovery_point=10**6)
    (reason,) = log.load_report.rebuilt_indexes
    assert problem in reason
    assert values(log) == expected
    for offset, value in expected:
        assert log.read_records(offset, 1)[0].value == value
    log.close()
    assert check_partition_dir(tmp_path / "events-0") == []


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
def test_an_index_entry_that_contradicts_the_log_is_not_used(
    tmp_path: Path, clock: ManualClock, suffix: str
) -> None:
    """Damage the load checks cannot see without reading the .log (an offset entry's position
    moved inside its batch; a time entry's timestamp lowered, still increasing): the segment
    checks each entry when it uses one and scans instead, so every read and timestamp lookup
    still finds its record, and the refused entries are counted."""
    _, expected = build(tmp_path, clock)
    victim = segment_files(tmp_path, suffix)[0]
    raw = bytearray(victim.read_bytes())
    if suffix == ".index":
        position = int.from_bytes(raw[4:8], "big")
        raw[4:8] = (position + 1).to_bytes(4, "big")
    else:
        timestamp = int.from_bytes(raw[0:8], "big")
        raw[0:8] = (timestamp - 1).to_bytes(8, "big")
    victim.write_bytes(bytes(raw))
    log = reopen(tmp_path, clock, had_clean_shutdown=True, recovery_point=10**6)
    assert log.load_report.rebuilt_indexes == []
    for offset, value in expected:
        assert log.read_records(offset, 1)[0].value == value
    for record in log.iter_records(log.log_start_offset):
        found = log.fetch_offset_by_timestamp(record.timestamp)
        assert found is not None and found.offset == record.offset  # timestamps increase
    assert sum(s.refused_index_entries for s in log.segments) >= 1
    log.close()
