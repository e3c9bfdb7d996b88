"""Fetch ranges planned and read while other threads append, apply retention and run the
cleaner (segments renamed, swapped and unlinked at once, ``file.delete.delay.ms=0``): every
answer is whole, CRC-valid batches holding the fetch offset, in offset order, below the high
watermark it reports; or ``OffsetOutOfRangeError`` for an offset retention took meanwhile."""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from seglog.clock import ManualClock
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.errors import OffsetOutOfRangeError
from seglog.format.builder import BatchBuilder
from seglog.format.compression import CompressionType
from seglog.format.reader import BatchReader

T0 = 1_700_000_000_000
APPENDS = 600
CODECS = [CompressionType.NONE, CompressionType.LZ4, CompressionType.ZSTD]


def check_answer(log: Log, fetch_offset: int, *, contiguous: bool) -> int:
    """One fetch, checked; returns the batches it held (0 when out of range or empty)."""
    try:
        result = log.fetch_file_ranges(fetch_offset, random.choice([1, 900, 8000, 1 << 20]))
    except OffsetOutOfRangeError:
        assert fetch_offset < log.log_start_offset  # retention moved the start past it
        return 0
    with result:
        data = result.read_bytes()
    reader = BatchReader(data, verify_crc=True)
    batches = list(reader)
    assert reader.end is not None and reader.end.is_clean and reader.end.position == len(data)
    if not batches:
        assert fetch_offset >= result.log_start_offset
        return 0
    assert batches[0].last_offset >= fetch_offset
    if contiguous:
        assert batches[0].base_offset <= fetch_offset
    for before, after in itertools.pairwise(batches):
        assert after.base_offset > before.last_offset
        if contiguous:
            assert after.base_offset == before.last_offset + 1
    assert batches[-1].last_offset < result.high_watermark
    assert result.next_offset == batches[-1].last_offset + 1
    return len(batches)


def run_with(
    manager: LogManager, log: Log, background: Callable[[], None], *, contiguous: bool
) -> int:
    """Append in one thread, run ``background`` in a loop in another, fetch in this one."""
    done = threading.Event()
    errors: list[BaseException] = []

    def appender() -> None:
        try:
            for i in range(APPENDS):
                builder = BatchBuilder(compression=CODECS[i % 3])
                for j in range(1 + i % 6):
                    builder.append(T0 + i, b"key%d" % ((i * 7 + j) % 23), b"value-%d" % i)
                log.append(builder.build())
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    def churn() -> None:
        try:
            while not done.is_set():
                background()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=appender), threading.Thread(target=churn)]
    for thread in threads:
        thread.start()
    rng = random.Random(5)
    seen = 0
    while not done.is_set() or seen == 0:
        start, end = log.log_start_offset, log.log_end_offset
        seen += check_answer(log, rng.randint(start, end), contiguous=contiguous)
    for thread in threads:
        thread.join()
    assert not errors, errors
    return seen


@pytest.mark.parametrize("policy", ["delete", "compact"])
def test_fetches_beside_appends_retention_and_the_cleaner(tmp_path: Path, policy: str) -> None:
    clock = ManualClock(T0)
    manager = open_log_dirs([tmp_path / "data"], clock=clock)
    try:
        configs = {
            "segment.bytes": "2048",
            "index.interval.bytes": "256",
            "file.delete.delay.ms": "0",
            "cleanup.policy": policy,
        }
        if policy == "delete":
            configs["retention.bytes"] = "8192"
        else:
            configs["min.cleanable.dirty.ratio"] = "0.01"
        manager.create_topic("t", 1, configs=configs)
        log = manager.get_log("t", 0)

        cleaned: list[int] = []

        def background() -> None:
            if policy == "delete":
                manager.run_retention()
            else:
                for result in manager.clean_once():
                    assert result.error is None, result.error
                    cleaned.append(1)

        seen = run_with(manager, log, background, contiguous=policy == "delete")
        assert seen > 0
        if policy == "delete":
            assert log.log_start_offset > 0  # retention did run under the fetches
        else:
            assert cleaned  # cleaner rounds swapped segments under the fetches
    finally:
        manager.close()
