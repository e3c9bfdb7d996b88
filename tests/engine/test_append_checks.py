"""Log.append on large multi-batch chunks (a produce request's worth): every batch is
checked, a refusal names the batch's position and leaves nothing behind, and the log takes
the next append as if the refused one never came. Also: a segment file cut short under an
open log is reported, never read in a loop."""

from __future__ import annotations

import errno
import os
import struct
from pathlib import Path

import pytest
from log_support import T0, TP, batch, config, open_log, values

from seglog.clock import ManualClock
from seglog.engine.log import Log
from seglog.errors import (
    CorruptRecordError,
    InvalidRecordError,
    RecordTooLargeError,
    StorageWriteError,
)
from seglog.format.batch import ATTRIBUTES_OFFSET, CONTROL_FLAG_MASK
from seglog.storage import fault_points
from support.index_oracle import check_partition_dir
from support.kafka_oracle import read_partition_dir_with_kafka_python

VALUE = b"v" * 1000


def big_chunk(batches: int = 40, per_batch: int = 10, first: int = 0) -> tuple[bytes, list[int]]:
    """``batches`` producer batches of ``per_batch`` 1000-byte values (400 KB in all by
    default), and each batch's position in the chunk."""
    parts, positions, at = [], [], 0
    for b in range(batches):
        n = first + b * per_batch
        data = batch(
            [VALUE + b"%d" % (n + i) for i in range(per_batch)],
            keys=[b"k%d" % (n + i) for i in range(per_batch)],
        )
        positions.append(at)
        parts.append(data)
        at += len(data)
    return b"".join(parts), positions


def log_bytes(log: Log) -> bytes:
    return b"".join(s.log_path.read_bytes() for s in log.segments)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


def test_multi_batch_appends_write_the_same_bytes_as_single_batch_ones(
    tmp_path: Path, clock: ManualClock
) -> None:
    chunks = [big_chunk(first=i * 400)[0] for i in range(3)]
    whole = open_log(tmp_path / "a", clock)
    plain = open_log(tmp_path / "b", clock)
    for chunk in chunks:
        info = whole.append(chunk)
        for data in _split(chunk):
            plain.append(data)
        assert info.batch_count == 40
    assert log_bytes(whole) == log_bytes(plain)
    assert values(whole) == values(plain)
    assert whole.log_end_offset == 1200
    whole.close()
    plain.close()
    assert check_partition_dir(tmp_path / "a" / "events-0") == []
    decoded = read_partition_dir_with_kafka_python(tmp_path / "a" / "events-0")
    assert [r[0] for r in decoded] == list(range(1200))


def _split(chunk: bytes) -> list[bytes]:
    out, at = [], 0
    while at < len(chunk):
        (length,) = struct.unpack_from(">i", chunk, at + 8)
        out.append(chunk[at : at + 12 + length])
        at += 12 + length
    return out


@pytest.mark.parametrize("victim", [0, 17, 39])
def test_a_bad_crc_refuses_the_whole_append_and_cuts_the_file_back(
    tmp_path: Path, clock: ManualClock, victim: int
) -> None:
    log = open_log(tmp_path, clock)
    log.append(batch([b"before"]))
    size_before = log.active_segment.log_path.stat().st_size
    chunk, positions = big_chunk()
    damaged = bytearray(chunk)
    damaged[positions[victim] + 100] ^= 0x55  # inside the records: only the CRC notices
    with pytest.raises(CorruptRecordError, match="CRC mismatch") as caught:
        log.append(bytes(damaged))
    assert caught.value.position == positions[victim]
    assert f"append to {TP}" in str(caught.value)
    # nothing of the refused append is left: not in the file, not in the offsets
    assert log.active_segment.log_path.stat().st_size == size_before
    assert log.log_end_offset == 1
    assert values(log) == [(0, b"before")]
    # the log takes the good chunk afterwards, at the offsets the refused one would have had
    info = log.append(chunk)
    assert (info.first_offset, info.last_offset) == (1, 400)
    log.close()
    reopened = open_log(tmp_path, clock)
    assert len(values(reopened)) == 401
    reopened.close()
    assert check_partition_dir(tmp_path / "events-0") == []


def test_a_damaged_header_is_reported_as_corrupt_not_as_a_broken_rule(
    tmp_path: Path, clock: ManualClock
) -> None:
    """A bit flip that sets the control flag fails the CRC first, as on the plain path."""
    log = open_log(tmp_path, clock)
    chunk, positions = big_chunk()
    damaged = bytearray(chunk)
    damaged[positions[5] + ATTRIBUTES_OFFSET + 1] |= CONTROL_FLAG_MASK
    with pytest.raises(CorruptRecordError, match="CRC mismatch") as caught:
        log.append(bytes(damaged))
    assert caught.value.position == positions[5]
    assert log.log_end_offset == 0
    assert log.active_segment.log_path.stat().st_size == 0


def test_rule_errors_name_the_batch_in_a_multi_batch_append(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock, config=config(max_message_bytes=12000))
    chunk, _ = big_chunk()
    big = batch([b"x" * 13000])
    with pytest.raises(RecordTooLargeError, match=f"batch at position {len(chunk)} is"):
        log.append(chunk + big)
    assert log.log_end_offset == 0
    assert log.active_segment.log_path.stat().st_size == 0


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
def test_a_failed_write_is_cut_back_and_the_log_resumes(
    tmp_path: Path, clock: ManualClock, code: int
) -> None:
    log = open_log(tmp_path, clock)
    log.append(batch([b"before"]))
    chunk, _ = big_chunk()
    path = str(log.active_segment.log_path)
    torn = b"\x00" * 5000

    def fail_log_write(operation: str, target: str) -> None:
        if operation == "write" and target == path:
            with open(target, "ab") as handle:  # what a short write leaves behind
                handle.write(torn)
            raise OSError(code, os.strerror(code))

    previous = fault_points.set_hook(fail_log_write)
    try:
        with pytest.raises(StorageWriteError) as caught:
            log.append(chunk)
    finally:
        fault_points.set_hook(previous)
    assert path in str(caught.value)
    assert log.log_end_offset == 1
    assert log.active_segment.log_path.stat().st_size == log.active_segment.size
    assert values(log) == [(0, b"before")]
    info = log.append(chunk)  # space is back
    assert info.first_offset == 1
    log.close()
    assert check_partition_dir(tmp_path / "events-0") == []


def test_a_keyless_record_on_a_compacted_topic_is_refused_before_anything_is_written(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock, config=config(cleanup_policy=("compact",)))
    chunk, _ = big_chunk()
    keyless = batch([VALUE] * 10, keys=[None] * 10)
    with pytest.raises(InvalidRecordError, match="requires a key"):
        log.append(chunk + keyless)
    assert log.active_segment.log_path.stat().st_size == 0
    assert log.append(chunk).last_offset == 399


def test_a_log_file_cut_short_under_an_open_log_raises_instead_of_looping(
    tmp_path: Path, clock: ManualClock
) -> None:
    """A scan of a segment whose file is shorter than its size (cut by another program)
    once read the same short tail for ever; it now names the file and position."""
    log = open_log(tmp_path, clock)
    chunk, positions = big_chunk()
    log.append(chunk)
    segment = log.active_segment
    os.truncate(segment.log_path, 100_000)  # inside a batch
    with pytest.raises(CorruptRecordError, match="torn") as caught:
        list(segment.iter_batches(0, segment.size))
    assert str(segment.log_path) in str(caught.value)
    os.truncate(segment.log_path, positions[5])  # at a batch boundary
    with pytest.raises(CorruptRecordError, match="ends before the segment's size") as caught:
        list(segment.iter_batches(0, segment.size))
    assert caught.value.position == positions[5]
