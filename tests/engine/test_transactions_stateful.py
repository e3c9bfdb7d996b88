"""A hypothesis state machine: several idempotent and transactional producers against a model.

Steps: appends by two transactional producers (1, 2), one idempotent producer (3) and
non-idempotent writes; a producer's retry of its last batch (a duplicate: nothing written);
COMMIT and ABORT markers; rolls; DeleteRecords; the cleaner (compact,delete topic); clean
reopens and crashes (file handles dropped, no close, no clean-shutdown marker). After every
step a ``read_committed`` reader must see exactly the committed records in offset order, each
once (the cleaner may drop superseded ones: never the latest committed value of a key, never
a record of another state), and the log's LSO and producer state must match the model.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from log_support import T0, config

from seglog.clock import ManualClock
from seglog.core.isolation import IsolationLevel
from seglog.core.offset_map import OffsetMap
from seglog.engine.cleaning.cleaner import Cleaner
from seglog.engine.cleaning.cleaner_manager import cleaning_candidate
from seglog.engine.log import Log
from seglog.format.topic_names import TopicPartition
from seglog.testing.transactions import producer_batch

TP = TopicPartition("txmodel", 0)
CONFIG = config(
    segment_bytes=600,
    index_interval_bytes=100,
    cleanup_policy=("compact", "delete"),
    retention_ms=-1,
)
CLEANING = os.environ.get("SEGLOG_TXMODEL_NO_CLEAN") != "1"
KEYS = st.sampled_from([b"a", b"b", b"c", b"d"])


@dataclass
class Rec:
    offset: int
    key: bytes
    value: bytes
    txn: int | None  # the transaction id in the model, None outside transactions


class TransactionsModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="seglog-txmodel-"))
        self.clock = ManualClock(T0)
        self.log = self._open(clean=True, recovery_point=0)
        self.records: list[Rec] = []
        self.status: dict[int, str] = {}  # txn id -> open / commit / abort
        self.open_txn: dict[int, int] = {}  # producer -> its open txn id
        self.txn_first: dict[int, int] = {}  # txn id -> first offset
        self.seq = {1: 0, 2: 0, 3: 0}
        self.last_batch: dict[int, bytes] = {}
        self.counter = 0
        self.start = 0
        self.cleaned = False
        self.checkpoint: int | None = None

    def _open(self, *, clean: bool, recovery_point: int) -> Log:
        return Log.open(
            self.root / "txmodel-0",
            TP,
            CONFIG,
            clock=self.clock,
            had_clean_shutdown=clean,
            recovery_point=recovery_point,
        )

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def _value(self) -> bytes:
        self.counter += 1
        return b"v%d" % self.counter

    # --- producers -------------------------------------------------------------------------
    @rule(pid=st.sampled_from([1, 2, 3]), keys=st.lists(KEYS, min_size=1, max_size=3))
    def produce(self, pid: int, keys: list[bytes]) -> None:
        transactional = pid != 3
        records = [(k, self._value()) for k in keys]
        data = producer_batch(
            records,
            producer_id=pid,
            producer_epoch=0,
            base_sequence=self.seq[pid],
            transactional=transactional,
            timestamp_ms=self.clock.now_ms(),
        )
        info = self.log.append(data)
        assert not info.duplicate and info.first_offset == self.log.log_end_offset - len(keys)
        self.seq[pid] += len(keys)
        self.last_batch[pid] = data
        txn = None
        if transactional:
            if pid not in self.open_txn:
                txn = len(self.status)
                self.status[txn] = "open"
                self.open_txn[pid] = txn
                self.txn_first[txn] = info.first_offset
            txn = self.open_txn[pid]
        for i, (key, value) in enumerate(records):
            self.records.append(Rec(info.first_offset + i, key, value, txn))

    @rule(keys=st.lists(KEYS, min_size=1, max_size=3))
    def produce_plain(self, keys: list[bytes]) -> None:
        records = [(k, self._value()) for k in keys]
        info = self.log.append_records(records)
        for i, (key, value) in enumerate(records):
            self.records.append(Rec(info.first_offset + i, key, value, None))

    @precondition(lambda self: self.last_batch)
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        pid = data.draw(st.sampled_from(sorted(self.last_batch)))
        end = self.log.log_end_offset
        info = self.log.append(self.last_batch[pid])
        assert info.duplicate and self.log.log_end_offset == end

    @rule(pid=st.sampled_from([1, 2]), commit=st.booleans())
    def marker(self, pid: int, commit: bool) -> None:
        self.log.append_marker(pid, 0, commit=commit, coordinator_epoch=0)
        txn = self.open_txn.pop(pid, None)
        if txn is not None:
            self.status[txn] = "commit" if commit else "abort"

    # --- the log ---------------------------------------------------------------------------
    @rule()
    def roll(self) -> None:
        self.log.roll()

    @precondition(lambda self: CLEANING)
    @rule()
    def clean(self) -> None:
        self.log.roll()
        now = self.clock.now_ms()
        candidate = cleaning_candidate(TP, self.log, self.checkpoint, now)
        if candidate.to_clean.first_uncleanable_offset <= candidate.to_clean.first_dirty_offset:
            return
        cleaner = Cleaner(OffsetMap(1 << 16, 0.9), clock=self.clock)
        self.checkpoint, _ = cleaner.clean(self.log, candidate.to_clean, now_ms=now)
        self.cleaned = True

    @precondition(lambda self: self.log.log_end_offset > self.start)
    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        target = data.draw(st.integers(self.start, self.log.log_end_offset))
        self.start = self.log.delete_records(target)
        self.log.apply_retention()

    @rule(crash=st.booleans())
    def reopen(self, crash: bool) -> None:
        if crash:
            point = self.log.recovery_point
            for segment in self.log.segments:
                segment.release_files()
            self.log = self._open(clean=False, recovery_point=point)
        else:
            self.log.close()
            self.log = self._open(clean=True, recovery_point=self.log.log_end_offset)

    # --- invariants ------------------------------------------------------------------------
    def _lso(self) -> int:
        firsts = [self.txn_first[t] for t in self.open_txn.values()]
        return min([*firsts, self.log.log_end_offset])

    @invariant()
    def lso_and_state_match(self) -> None:
        assert self.log.last_stable_offset == self._lso()
        open_by_pid = {txn.producer_id: txn.first_offset for txn in self.log.ongoing_transactions()}
        assert open_by_pid == {p: self.txn_first[t] for p, t in self.open_txn.items()}

    @invariant()
    def read_committed_sees_exactly_the_committed_records(self) -> None:
        lso = self._lso()
        start = self.log.log_start_offset
        expected = [
            r
            for r in self.records
            if start <= r.offset < lso and (r.txn is None or self.status[r.txn] == "commit")
        ]
        got = [
            (r.offset, r.key, r.value)
            for r in self.log.iter_records(start, isolation_level=IsolationLevel.READ_COMMITTED)
        ]
        want = [(r.offset, r.key, r.value) for r in expected]
        if not self.cleaned:
            assert got == want
            return
        # the cleaner keeps a subsequence holding every key's latest committed value
        it = iter(want)
        assert all(any(w == g for w in it) for g in got), "not a subsequence of the committed"
        latest = {}
        for offset, key, value in want:
            latest[key] = (offset, key, value)
        for record in latest.values():
            assert record in got or record[0] >= self.log.log_end_offset


TestTransactionsModel = TransactionsModel.TestCase
TestTransactionsModel.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
