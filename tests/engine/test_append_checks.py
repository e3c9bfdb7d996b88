"""Log.append on large multi-batch chunks (a produce request's worth): every batch is
checked, a refusal names the batch's position and leaves nothing behind, and the log takes
the next append as if the refused one never came.

Chunks of at least ``PIPELINED_APPEND_MIN_BYTES`` (the default chunk here is 400 KB) take the
pipelined path: the CRCs are checked on a side thread while the bytes are written, and a bad
one cuts the file back; these tests hold it to the plain path's contract. Also: a segment
file cut short under an open log is reported, never read in a loop."""

from __future__ import annotations

import errno
import os
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from log_support import T0, TP, batch, config, open_log, values

from seglog.clock import ManualClock
from seglog.core.append_validation import check_batch_crcs, validate_append
from seglog.engine.log import PIPELINED_APPEND_MIN_BYTES, Log
from seglog.errors import (
    CorruptRecordError,
    InvalidRecordError,
    RecordTooLargeError,
    StorageWriteError,
)
from seglog.format.batch import ATTRIBUTES_OFFSET, CONTROL_FLAG_MASK
from seglog.storage import fault_points
from seglog.storage.side_threads import SideJob, SideThreads
from support.index_oracle import check_partition_dir
from support.kafka_oracle import read_partition_dir_with_kafka_python

T = TypeVar("T")

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
    chunk = b"".join(parts)
    assert len(chunk) >= PIPELINED_APPEND_MIN_BYTES
    return chunk, positions


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


def test_the_pipelined_path_is_taken_only_where_no_record_check_is_needed() -> None:
    chunk, _ = big_chunk()
    plain = validate_append(
        chunk, config=config(), log_end_offset=0, now_ms=T0, where="x", defer_crc=True
    )
    assert plain.crc_deferred
    for cfg in (
        config(cleanup_policy=("compact",)),  # keys are checked: everything before the write
        config(message_timestamp_type="LogAppendTime"),  # batches are rewritten
        config(message_timestamp_before_max_ms=10**12),  # timestamps are checked
    ):
        checked = validate_append(
            chunk, config=cfg, log_end_offset=0, now_ms=T0, where="x", defer_crc=True
        )
        assert not checked.crc_deferred


def test_check_batch_crcs_finds_the_first_bad_batch() -> None:
    chunk, positions = big_chunk()
    checked = validate_append(
        chunk, config=config(), log_end_offset=0, now_ms=T0, where="here", defer_crc=True
    )
    check_batch_crcs(chunk, checked.spans, "here")
    damaged = bytearray(chunk)
    damaged[positions[3] + 200] ^= 1
    damaged[positions[9] + 200] ^= 1
    with pytest.raises(CorruptRecordError, match="here: batch CRC mismatch") as caught:
        check_batch_crcs(damaged, checked.spans, "here")
    assert caught.value.position == positions[3]


def side_thread_names() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("seglog-side-")]


def test_a_log_opened_alone_makes_and_stops_its_own_side_thread(
    tmp_path: Path, clock: ManualClock
) -> None:
    before = side_thread_names()
    log = open_log(tmp_path, clock)
    log.append(batch([b"small"]))
    assert side_thread_names() == before  # a small append never wakes a thread
    log.append(big_chunk()[0])
    assert len(side_thread_names()) == len(before) + 1
    log.close()
    assert side_thread_names() == before


def test_shared_side_threads_serve_concurrent_logs_and_busy_ones_check_inline(
    tmp_path: Path, clock: ManualClock
) -> None:
    """Four logs appending at once through one side thread: whoever finds it busy checks
    before writing; every log ends with every record, and a bad chunk is refused either way."""
    side = SideThreads(max_threads=1)
    logs = [
        Log.open(tmp_path / f"events-{p}", TP, config(), clock=clock, side_threads=side)
        for p in range(4)
    ]
    chunk, positions = big_chunk()
    damaged = bytearray(chunk)
    damaged[positions[7] + 300] ^= 0x10
    refused: list[int] = []
    lock = threading.Lock()

    def produce(log: Log) -> None:
        for round_ in range(6):
            if round_ == 3:
                with pytest.raises(CorruptRecordError):
                    log.append(bytes(damaged))
                with lock:
                    refused.append(1)
            log.append(chunk)

    workers = [threading.Thread(target=produce, args=(log,)) for log in logs]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(refused) == 4
    for log in logs:
        assert log.log_end_offset == 6 * 400
        assert [offset for offset, _ in values(log)] == list(range(2400))
        log.close()
    side.close()
    for p in range(4):
        assert check_partition_dir(tmp_path / f"events-{p}") == []


def submit_soon(side: SideThreads, fn: Callable[[], T]) -> SideJob[T]:
    """Submit once the pool's thread is back (within 10 s)."""
    deadline = time.monotonic() + 10
    while (job := side.submit(fn)) is None:
        assert time.monotonic() < deadline, "the side thread never came back"
        time.sleep(0.0005)
    return job


def test_side_threads_hand_back_results_errors_and_refuse_when_busy() -> None:
    before = side_thread_names()
    side = SideThreads(max_threads=1)
    release = threading.Event()
    started = threading.Event()

    def slow() -> int:
        started.set()
        release.wait(10)
        return 7

    job = side.submit(slow)
    assert job is not None
    started.wait(10)
    assert side.submit(lambda: 1) is None  # the only thread is busy: run it yourself
    release.set()
    assert job.result() == 7
    failing = side.submit(lambda: 1 // 0)
    assert failing is not None
    with pytest.raises(ZeroDivisionError):
        failing.result()
    # The thread comes back to the pool once it is done with (or has skipped) the job: the
    # caller may have run a job itself when the thread had not started it yet.
    assert submit_soon(side, lambda: "ok").result() == "ok"
    # many short jobs: each value comes back, whichever thread ran it
    results = [submit_soon(side, lambda n=n: n * n).result() for n in range(200)]
    assert results == [n * n for n in range(200)]
    assert len(side_thread_names()) == len(before) + 1
    side.close()
    assert side.submit(lambda: 1) is None
    assert side_thread_names() == before  # stopped and joined
    with pytest.raises(ValueError, match="at least 1"):
        SideThreads(max_threads=0)


@pytest.mark.parametrize("damaged", [False, True])
def test_a_crash_between_the_write_and_the_crc_verdict_recovers_to_whole_batches(
    tmp_path: Path, clock: ManualClock, damaged: bool
) -> None:
    """The process dies right after a pipelined append's bytes reached the file, before the
    side thread's verdict: the reopened log keeps every batch before the append and, of the
    append, only whole CRC-valid batches (all of them when none was damaged: an append that
    was never acknowledged may survive a crash, as in Kafka; none from the damaged one on)."""
    from seglog.testing.crash import SimulatedCrash

    log = open_log(tmp_path, clock)
    log.append(batch([b"before"]))
    log.flush()
    chunk, positions = big_chunk()
    data = bytearray(chunk)
    if damaged:
        data[positions[20] + 500] ^= 0x01
    path = str(log.active_segment.log_path)

    def crash_after_the_log_write(operation: str, target: str, source: str | None) -> None:
        if operation == "write" and target == path:
            raise SimulatedCrash(1, operation, target)

    previous = fault_points.set_after_hook(crash_after_the_log_write)
    try:
        with pytest.raises(SimulatedCrash):
            log.append(bytes(data))
    finally:
        fault_points.set_after_hook(previous)
    for segment in log.segments:  # the process is gone: no close, nothing more written
        segment.release_files()
    reopened = open_log(tmp_path, clock, recovery_point=0)
    kept = [offset for offset, _ in values(reopened)]
    assert kept == list(range(1 + (20 * 10 if damaged else 400)))
    reopened.close()
    assert check_partition_dir(tmp_path / "events-0") == []


def test_a_job_no_thread_has_started_is_run_by_the_caller() -> None:
    """A side thread that has not woken yet (its core busy or taken by the host) never makes
    the caller wait: result() claims the job and runs it; the thread then skips it."""
    ran_in: list[str] = []
    job = SideJob(lambda: ran_in.append(threading.current_thread().name) or 42)
    assert job.result() == 42
    assert ran_in == [threading.current_thread().name]
    assert job._try_run() is False  # what the late thread finds: already claimed, skipped
