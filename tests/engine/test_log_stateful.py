"""A stateful model test: a Log against a plain list of records.

Steps: append (one or more batches per call), roll, truncate, flush, close and reopen, crash
and reopen (the process dies: file handles dropped, no trimming, no clean-shutdown marker),
and power loss (the active segment loses an arbitrary tail of bytes written after the last
flush, possibly mid-batch). After every step the log must read exactly the model; after a
reopen the independent index checker must accept every closed segment.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from log_support import T0, config

from seglog.clock import ManualClock
from seglog.engine.log import Log
from seglog.errors import InvalidRecordError
from seglog.format.batch import encode_batch
from seglog.format.records import Record
from seglog.format.topic_names import TopicPartition
from support.index_oracle import check_partition_dir

TP = TopicPartition("model", 0)
CONFIG = config(segment_bytes=700, index_interval_bytes=90, segment_index_bytes=64)

values_strategy = st.lists(st.binary(min_size=0, max_size=60), min_size=1, max_size=4)


class LogModel(RuleBasedStateMachine):
    """The Log must always read back exactly ``self.model``."""

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="seglog-model-"))
        self.clock = ManualClock(T0)
        self.model: list[tuple[int, bytes]] = []
        self.batch_starts: set[int] = set()  # first offset of every batch in the log
        self.counter = 0
        self.log = self._open(clean=True, recovery_point=0)

    def _open(self, *, clean: bool, recovery_point: int) -> Log:
        return Log.open(
            self.root / "model-0",
            TP,
            CONFIG,
            clock=self.clock,
            had_clean_shutdown=clean,
            recovery_point=recovery_point,
        )

    def teardown(self) -> None:
        for segment in self.log.segments:
            segment.close()
        shutil.rmtree(self.root, ignore_errors=True)

    @initialize()
    def start(self) -> None:
        assert self.log.log_end_offset == 0

    @rule(chunks=st.lists(values_strategy, min_size=1, max_size=3), tick=st.integers(0, 50))
    def append(self, chunks: list[list[bytes]], tick: int) -> None:
        self.clock.advance(tick)
        data = b""
        for chunk in chunks:
            records = [
                Record(i, self.clock.now_ms() + i, b"k%d" % (self.counter + i), v)
                for i, v in enumerate(chunk)
            ]
            data += encode_batch(records)
            self.counter += len(chunk)
        info = self.log.append(data)
        flat = [v for chunk in chunks for v in chunk]
        assert info.first_offset == self.log.log_end_offset - len(flat)
        self.model.extend((info.first_offset + i, v) for i, v in enumerate(flat))
        start = info.first_offset
        for chunk in chunks:
            self.batch_starts.add(start)
            start += len(chunk)

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule()
    def flush(self) -> None:
        self.log.flush()
        assert self.log.recovery_point == self.log.log_end_offset

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        boundaries = sorted(b for b in self.batch_starts if b >= self.log.log_start_offset)
        target = data.draw(st.sampled_from([*boundaries, self.log.log_end_offset]))
        self.log.truncate_to(target)
        self.model = [(o, v) for o, v in self.model if o < target]
        self.batch_starts = {b for b in self.batch_starts if b < target}
        assert self.log.log_end_offset == target

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def truncate_inside_a_batch_is_refused(self, data: st.DataObject) -> None:
        inside = [o for o, _ in self.model if o not in self.batch_starts]
        if not inside:
            return
        target = data.draw(st.sampled_from(inside))
        end = self.log.log_end_offset
        with pytest.raises(InvalidRecordError, match="inside the batch"):
            self.log.truncate_to(target)
        assert self.log.log_end_offset == end

    @rule()
    def close_and_reopen(self) -> None:
        end = self.log.log_end_offset
        self.log.close()
        self._check_indexes(active_trimmed=True)  # a closed log: every index trimmed
        self.log = self._open(clean=True, recovery_point=end)
        assert self.log.load_report.recovered == []

    @rule()
    def crash_and_reopen(self) -> None:
        point = self.log.recovery_point
        for segment in self.log.segments:
            segment.close()  # no trim, no final time entry, no flush
        self.log = self._open(clean=False, recovery_point=point)
        self._check_indexes(active_trimmed=False)

    @rule(data=st.data())
    def power_loss(self, data: st.DataObject) -> None:
        """Bytes written after the last flush may be lost: cut the active .log anywhere after
        the flushed position (never before it)."""
        point = self.log.recovery_point
        active = self.log.active_segment
        flushed_position = 0
        if active.base_offset < point:
            location = active.translate_offset(point)
            flushed_position = active.size if location is None else location.position
        cut = data.draw(st.integers(flushed_position, active.size))
        path = active.log_path
        for segment in self.log.segments:
            segment.close()
        with open(path, "r+b") as handle:
            handle.truncate(cut)
        self.log = self._open(clean=False, recovery_point=point)
        survivors = self._read()
        assert survivors == self.model[: len(survivors)], "recovery kept a non-prefix"
        assert all(o in {s[0] for s in survivors} for o, _ in self.model if o < point), (
            "a flushed record was lost"
        )
        self.model = survivors
        self.batch_starts = {b for b in self.batch_starts if b < self.log.log_end_offset}
        self._check_indexes(active_trimmed=False)

    def _read(self) -> list[tuple[int, bytes]]:
        records = self.log.read_records(self.log.log_start_offset, 10**9, max_bytes=4096)
        return [(r.offset, r.value or b"") for r in records]

    def _check_indexes(self, *, active_trimmed: bool) -> None:
        problems = check_partition_dir(
            self.root / "model-0", index_interval_bytes=90, active_trimmed=active_trimmed
        )
        assert problems == []

    @invariant()
    def reads_match_the_model(self) -> None:
        assert self._read() == self.model
        expected_end = self.model[-1][0] + 1 if self.model else None
        if expected_end is not None:
            assert self.log.log_end_offset >= expected_end
        bases = [s.base_offset for s in self.log.segments]
        assert bases == sorted(set(bases))
        assert all(s.size <= CONFIG.segment_bytes for s in self.log.segments)


TestLogModel = LogModel.TestCase
TestLogModel.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)
