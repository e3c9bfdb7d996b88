"""``LogSegment.batch_headers``: bounded-memory header walk, whatever the buffer size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from seglog.clock import ManualClock
from seglog.engine.log_manager import open_log_dirs
from seglog.errors import CorruptRecordError
from seglog.format.builder import BatchBuilder
from seglog.kernels import walk_batches


def test_headers_match_a_whole_file_walk_for_any_buffer(tmp_path: Path) -> None:
    clock = ManualClock()
    with open_log_dirs([tmp_path / "d"], clock=clock) as manager:
        manager.create_topic("t", 1)
        log = manager.get_log("t", 0)
        for i in range(200):
            builder = BatchBuilder()
            for _ in range(i % 5 + 1):
                builder.append(clock.now_ms(), b"k", b"x" * (i * 37 % 700))
            log.append(builder.build())
        segment = log.segments[0]
        whole = np.frombuffer(segment.read_at(0, segment.size), dtype=np.uint8).copy()
        expected = walk_batches(whole, check_offsets=False).frames
        for size in (16, 61, 500, 4096, 1 << 20):
            frames = segment.batch_headers(size)
            assert np.array_equal(frames, expected), size


def test_damaged_framing_names_the_file(tmp_path: Path) -> None:
    clock = ManualClock()
    with open_log_dirs([tmp_path / "d"], clock=clock) as manager:
        manager.create_topic("t", 1)
        log = manager.get_log("t", 0)
        for _ in range(10):
            builder = BatchBuilder()
            builder.append(clock.now_ms(), b"k", b"v" * 100)
            log.append(builder.build())
        segment = log.segments[0]
        with open(segment.log_path, "r+b") as handle:
            handle.seek(0)
            handle.write(b"\xff" * 12)  # offset and size fields of the first batch
        with pytest.raises(CorruptRecordError) as info:
            segment.batch_headers(4096)
        assert str(segment.log_path) in str(info.value)
