"""A stateful model test of the log cleaner (spec ``kafka-cleaner.md`` §2-§5).

A compacted topic is driven through random steps: produce (keys from a small key space,
values or tombstones, one or several records per batch, any codec, headers, timestamps a bit
in the past), roll, advance the clock, clean (``LogManager.clean_once``), retention, and
close + reopen. The model is the list of every record ever appended.

Two oracles:

* **Per round, exactly** (Kafka's rules, computed from a snapshot of the batches taken just
  before the round): the dirty range ``[F, U)`` (F = the cleaner checkpoint, U = the active
  segment's base), the round's end ``E`` (U, or with a small offset map the offset after the
  last key put before the map filled, §3), the map (latest offset per key in ``[F, E)``), and
  per batch of every segment below E: which records stay (§5.3), whether the batch is copied
  byte for byte, rebuilt (same offsets, codec, record timestamps; KIP-534 horizon stamped as
  ``now + delete.retention.ms`` on the first round that keeps a tombstone, §5.4; base
  timestamp = horizon or first kept record's timestamp), kept as a 61-byte empty header (it
  ends at U, §5.6) or dropped. Segments at or above E are untouched. A pass that cleans
  nothing must have had nothing eligible (ratio rule, §2.5).
* **After every step** (invariants relative to the append model): records read from the log
  start have strictly increasing offsets and equal the appended record at that offset (key,
  value, timestamp, headers: cleaning never invents or changes records); every record at or
  above the cleaner checkpoint is present; below it each key has at most one record, its
  latest one below the checkpoint, which is present unless it is a tombstone; the log end
  and start offsets never move; every horizon stamp is some round's ``now + D``; every empty
  batch is the last batch of a closed segment.

Empty headers: Kafka 4 keeps an emptied batch only when it ends at U or is an active
producer's last batch (none here); seglog does exactly the same (a group may clean to an empty
segment; swap recovery finds the segments it replaced through the swap record).

A second variant shrinks the offset map to 4 keys (through ``LogCleaner._map_bytes``; the
broker config's minimum of 1 MiB cannot be filled by a small key space), so rounds end early
(partial cleaning, mid-segment and mid-batch end offsets, KAFKA-3894).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, currently_in_test_context, settings
from hypothesis import event as hypothesis_event
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from seglog.clock import ManualClock
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.batch import DELETE_HORIZON_FLAG_MASK, RECORD_BATCH_OVERHEAD
from seglog.format.builder import BatchBuilder
from seglog.format.compression import CompressionType
from seglog.format.reader import BatchReader
from seglog.format.records import Header
from seglog.format.topic_names import TopicPartition
from support.index_oracle import check_partition_dir

T0 = 1_700_000_000_000


def event(name: str) -> None:
    """A statistics event (``--hypothesis-show-statistics``); ignored outside hypothesis."""
    if currently_in_test_context():
        hypothesis_event(name)


TOPIC = "model"
TP = TopicPartition(TOPIC, 0)
KEYS = tuple(b"key-%d" % i for i in range(6))
DELETE_RETENTION_MS = 1_000
SMALL_MAP_BYTES = 24 * 5  # 5 slots (a prime) x load factor 0.9 -> 4 keys per round
CODEC_MASK = 0x07
HEADER_CHOICES: tuple[tuple[Header, ...], ...] = (
    (),
    (Header("h", b"x"),),
    (Header("trace", b"\x00\x01"), Header("null", None)),
)

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True, slots=True)
class Rec:
    """One record as a consumer sees it."""

    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers


@dataclass(frozen=True, slots=True)
class Snap:
    """One batch on disk."""

    segment_base: int
    base: int
    last: int
    attributes: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: tuple[Rec, ...]
    raw: bytes

    @property
    def horizon(self) -> int | None:
        return self.base_timestamp if self.attributes & DELETE_HORIZON_FLAG_MASK else None


def snapshot(log: Log) -> list[Snap]:
    """Every batch of every segment, oldest first, with its decoded records."""
    out = []
    for segment in log.segments:
        data = segment.read_at(0, segment.size)
        for batch in BatchReader(data):
            assert batch.is_valid(), f"bad CRC in segment {segment.base_offset}"
            records = tuple(
                Rec(
                    r.offset,
                    r.key,
                    r.value,
                    batch.reported_timestamp(r),
                    tuple((h.key, h.value) for h in r.headers),
                )
                for r in batch.records()
            )
            out.append(
                Snap(
                    segment.base_offset,
                    batch.base_offset,
                    batch.last_offset,
                    batch.attributes,
                    batch.base_timestamp,
                    batch.max_timestamp,
                    batch.producer_id,
                    batch.producer_epoch,
                    batch.base_sequence,
                    records,
                    bytes(batch.raw),
                )
            )
    return out


records_strategy = st.lists(
    st.tuples(
        st.integers(0, len(KEYS) - 1),
        st.one_of(st.none(), st.binary(min_size=0, max_size=32)),  # None: a tombstone
        st.integers(0, len(HEADER_CHOICES) - 1),
        st.integers(0, 400),  # how far in the past the record's timestamp is
    ),
    min_size=1,
    max_size=10,
)


class CleanerModel(RuleBasedStateMachine):
    """A compacted log against the list of appended records (module docstring)."""

    small_map = False

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="seglog-cleaner-model-"))
        # Durability is not under test here and fsync is most of the run time.
        self._no_fsync = mock.patch("os.fsync", lambda fd: None)
        self._no_fsync.start()
        self.clock = ManualClock(T0)
        self.manager: LogManager | None = None
        self.appended: list[Rec] = []
        self.round_times: list[int] = []
        self.configs: dict[str, str] = {}
        self.map_limit: int | None = None

    # --- setup / teardown ----------------------------------------------------------------
    def _open(self) -> None:
        self.manager = open_log_dirs(
            [self.root / "data"],
            clock=self.clock,
            # the smallest map Kafka allows: clearing it each round is cheap
            overrides={"log.cleaner.dedupe.buffer.size": str(2 * 1024 * 1024)},
        )
        if self.small_map:
            cleaner = self.manager.log_cleaner
            assert not cleaner._cleaners, "the map size must be set before the first round"
            cleaner._map_bytes = SMALL_MAP_BYTES
            self.map_limit = cleaner._cleaner(0).offset_map.limit
            assert self.map_limit < len(KEYS)

    @property
    def log(self) -> Log:
        assert self.manager is not None
        return self.manager.get_log(TOPIC, 0)

    def teardown(self) -> None:
        try:
            if self.manager is not None:
                self.manager.close()
        finally:
            self._no_fsync.stop()
            shutil.rmtree(self.root, ignore_errors=True)

    @initialize(
        segment_bytes=st.sampled_from([1024, 1536, 4096]),
        ratio=st.sampled_from(["0", "0.01", "0.2"]),
    )
    def create(self, segment_bytes: int, ratio: str) -> None:
        self._open()
        assert self.manager is not None
        self.configs = {
            "cleanup.policy": "compact",
            "segment.bytes": str(segment_bytes),
            "min.cleanable.dirty.ratio": ratio,
            "delete.retention.ms": str(DELETE_RETENTION_MS),
            "index.interval.bytes": "128",
        }
        self.manager.create_topic(TOPIC, 1, configs=self.configs)

    # --- rules ---------------------------------------------------------------------------
    @rule(
        items=records_strategy,
        per_batch=st.integers(1, 4),
        codec=st.sampled_from(list(CompressionType)),
    )
    def produce(
        self,
        items: list[tuple[int, bytes | None, int, int]],
        per_batch: int,
        codec: CompressionType,
    ) -> None:
        log = self.log
        now = self.clock.now_ms()
        batches = []
        for start in range(0, len(items), per_batch):
            builder = BatchBuilder(compression=codec)
            for key_index, value, header_index, back in items[start : start + per_batch]:
                builder.append(now - back, KEYS[key_index], value, HEADER_CHOICES[header_index])
            batches.append(builder.build())
        first = log.log_end_offset
        if sum(map(len, batches)) <= int(self.configs["segment.bytes"]):
            log.append(b"".join(batches))
        else:
            for data in batches:
                log.append(data)
        for i, (key_index, value, header_index, back) in enumerate(items):
            headers = tuple((h.key, h.value) for h in HEADER_CHOICES[header_index])
            self.appended.append(Rec(first + i, KEYS[key_index], value, now - back, headers))
        assert log.log_end_offset == len(self.appended)

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule(
        ms=st.one_of(
            st.sampled_from(
                [DELETE_RETENTION_MS - 1, DELETE_RETENTION_MS, DELETE_RETENTION_MS + 1]
            ),
            st.integers(0, 2 * DELETE_RETENTION_MS),
        )
    )
    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    @rule()
    def clean(self) -> None:
        assert self.manager is not None
        log = self.log
        before = snapshot(log)
        checkpoint = self.manager.cleaner_checkpoints().get(TP)
        first_dirty = log.log_start_offset if checkpoint is None else checkpoint
        upper = log.active_segment.base_offset
        sizes = [(s.base_offset, s.size) for s in log.segments]
        now = self.clock.now_ms()
        leo, start = log.log_end_offset, log.log_start_offset
        results = self.manager.clean_once()
        assert [r.error for r in results] == [None] * len(results), results
        assert log.log_end_offset == leo, "cleaning moved the log end offset"
        assert log.log_start_offset == start, "cleaning moved the log start offset"
        eligible = self._eligible(sizes, first_dirty, upper)
        if not results:
            assert not eligible, (
                f"nothing was cleaned although [{first_dirty}, {upper}) is eligible: {sizes}"
            )
            assert snapshot(log) == before, "a pass without a round changed the log"
            return
        [result] = results
        assert result.stats is not None
        assert eligible, f"a round ran although [{first_dirty}, {upper}) is not eligible"
        assert result.stats.first_dirty_offset == first_dirty
        end = self._expected_end(first_dirty, upper)
        assert result.stats.end_offset == end, (result.stats.end_offset, end)
        assert self.manager.cleaner_checkpoints().get(TP) == end
        self.round_times.append(now)
        bases_after = [s.base_offset for s in log.segments]
        bases_before = {b for b, _ in sizes}
        assert {b for b in bases_after if b < end} <= bases_before, (
            "a cleaned segment is not named after the first segment of its group"
        )
        assert [(b, size) for b, size in sizes if b >= end] == [
            (s.base_offset, s.size) for s in log.segments if s.base_offset >= end
        ], "segments past the round's end changed"
        expected = self._expected_batches(before, first_dirty, end, upper, now)
        event("round ends early (map full)" if end < upper else "round reaches the upper bound")
        for item in expected:
            if not isinstance(item, Snap):
                kind, old, kept, horizon = item
                codec = CompressionType(old.attributes & CODEC_MASK).name
                event(f"batch {kind}" + (f" ({codec})" if kind == "rebuild" else ""))
                if horizon is not None and old.horizon is None:
                    event("horizon stamped")
                if any(r.value is None for r in old.records) and not any(
                    r.value is None for r in kept
                ):
                    event("tombstone removed")
        after = snapshot(log)
        self._compare_batches(after, expected)
        leftovers = [
            p.name for p in log.directory.iterdir() if p.name.endswith((".cleaned", ".swap"))
        ]
        assert not leftovers, leftovers

    @rule()
    def roll_and_clean(self) -> None:
        """The common pair, as its own rule so that most runs have several rounds."""
        self.roll()
        self.clean()

    @rule()
    def retain(self) -> None:
        assert self.manager is not None
        before = snapshot(self.log)
        results = self.manager.run_retention()
        # compact only: just segments below the log start offset go, and it never moves here
        assert results == []
        assert snapshot(self.log) == before

    @precondition(lambda self: self.manager is not None)
    @rule()
    def reopen(self) -> None:
        assert self.manager is not None
        directory = self.log.directory
        checkpoints = self.manager.cleaner_checkpoints()
        self.manager.close()
        self.manager = None
        problems = [
            problem
            for problem in check_partition_dir(directory, index_interval_bytes=128)
            # The oracle's deep check wants a time-index entry's timestamp to be reached by
            # a record of its batch; a 61-byte empty header keeps the emptied batch's max
            # timestamp with no record (Kafka's filterTo does the same, spec §5.6 step 4-5).
            if not problem.endswith("that batch's records reach -1")
        ]
        assert not problems, problems
        self._open()
        assert self.manager.cleaner_checkpoints() == checkpoints  # type: ignore[union-attr]

    # --- the per-round oracle ------------------------------------------------------------
    def _eligible(self, sizes: list[tuple[int, int]], first_dirty: int, upper: int) -> bool:
        """§2.3/§2.5 for this log alone: total bytes > 0 and ratio above the minimum."""
        clean = sum(size for base, size in sizes if base < first_dirty)
        floor = max(i for i, (base, _) in enumerate(sizes) if base <= min(first_dirty, upper))
        cleanable = sum(size for base, size in sizes[floor:] if base < upper)
        total = clean + cleanable
        if total <= 0:
            return False
        return cleanable / total > float(self.configs["min.cleanable.dirty.ratio"])

    def _expected_end(self, first_dirty: int, upper: int) -> int:
        """U, or after a full map the offset after the last key put (§3)."""
        if self.map_limit is None:
            return upper
        keys: set[bytes | None] = set()
        last_put = first_dirty - 1
        for record in self.appended[first_dirty:upper]:  # all present: above the checkpoint
            if len(keys) >= self.map_limit:
                return last_put + 1
            keys.add(record.key)
            last_put = record.offset
        return upper

    def _expected_batches(
        self,
        before: list[Snap],
        first_dirty: int,
        end: int,
        upper: int,
        now: int,
    ) -> list[Snap | tuple[str, Snap, tuple[Rec, ...], int | None]]:
        latest: dict[bytes | None, int] = {}
        for record in self.appended[first_dirty:end]:
            latest[record.key] = record.offset
        out: list[Snap | tuple[str, Snap, tuple[Rec, ...], int | None]] = []
        for batch in before:
            if batch.segment_base >= end:
                out.append(batch)  # not part of the round: untouched
                continue
            kept = tuple(
                r
                for r in batch.records
                if r.offset >= end
                or (
                    r.offset >= latest.get(r.key, -1)
                    and (r.value is not None or batch.horizon is None or now < batch.horizon)
                )
            )
            tombstone_kept = any(r.value is None for r in kept)
            if not kept:
                # emptied now or already an empty header: kept as a header only when it ends
                # at U (Kafka 4, KAFKA-17076)
                if batch.last + 1 == upper:
                    out.append(("empty", batch, (), None))
            elif len(kept) == len(batch.records) and not (tombstone_kept and batch.horizon is None):
                out.append(("copy", batch, kept, batch.horizon))
            else:
                horizon = batch.horizon
                if horizon is None and tombstone_kept:
                    horizon = now + DELETE_RETENTION_MS
                out.append(("rebuild", batch, kept, horizon))
        return out

    def _compare_batches(
        self,
        after: list[Snap],
        expected: list[Snap | tuple[str, Snap, tuple[Rec, ...], int | None]],
    ) -> None:
        got = [(b.base, b.last, b.records) for b in after]
        want = [
            (e.base, e.last, e.records) if isinstance(e, Snap) else (e[1].base, e[1].last, e[2])
            for e in expected
        ]
        assert got == want, "the batches after the round are not what Kafka's rules keep"
        for batch, item in zip(after, expected, strict=True):
            if isinstance(item, Snap):
                assert batch.raw == item.raw, f"batch {batch.base} outside the round changed"
                continue
            kind, old, kept, horizon = item
            where = f"{kind} batch {old.base}-{old.last}"
            assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (
                old.producer_id,
                old.producer_epoch,
                old.base_sequence,
            ), where
            if kind == "copy":
                assert batch.raw == old.raw, f"{where}: not copied byte for byte"
            elif kind == "rebuild":
                assert batch.horizon == horizon, where
                assert batch.attributes & ~DELETE_HORIZON_FLAG_MASK == (
                    old.attributes & ~DELETE_HORIZON_FLAG_MASK
                ), f"{where}: codec or flags changed"
                first_timestamp = kept[0].timestamp
                assert batch.base_timestamp == (horizon if horizon is not None else first_timestamp)
                assert batch.max_timestamp == max(r.timestamp for r in kept), where
            else:  # empty header
                assert len(batch.raw) == RECORD_BATCH_OVERHEAD, where
                assert batch.attributes & (CODEC_MASK | DELETE_HORIZON_FLAG_MASK) == 0, where
                assert batch.base_timestamp == -1, where
                assert batch.max_timestamp == old.max_timestamp, where

    # --- invariants after every step -----------------------------------------------------
    @invariant()
    def log_matches_model(self) -> None:
        if self.manager is None:
            return
        log = self.log
        assert log.log_end_offset == len(self.appended)
        assert log.log_start_offset == 0
        found = [
            Rec(r.offset, r.key, r.value, r.timestamp, tuple((h.key, h.value) for h in r.headers))
            for r in log.iter_records(log.log_start_offset)
        ]
        offsets = [r.offset for r in found]
        assert offsets == sorted(set(offsets)), "offsets are not strictly increasing"
        for record in found:
            assert record == self.appended[record.offset], "cleaning changed a record"
        checkpoint = self.manager.cleaner_checkpoints().get(TP, 0)
        assert 0 <= checkpoint <= log.log_end_offset
        present = set(offsets)
        missing = [r.offset for r in self.appended[checkpoint:] if r.offset not in present]
        assert not missing, f"records at or above the checkpoint {checkpoint} are gone: {missing}"
        below: dict[bytes | None, list[int]] = {}
        for record in self.appended[:checkpoint]:
            below.setdefault(record.key, []).append(record.offset)
        in_log: dict[bytes | None, list[int]] = {}
        for record in found:
            if record.offset < checkpoint:
                in_log.setdefault(record.key, []).append(record.offset)
        for key, offsets_of_key in below.items():
            last = offsets_of_key[-1]
            kept = in_log.get(key, [])
            assert set(kept) <= {last}, f"{key!r}: older records {kept} survive below {checkpoint}"
            if self.appended[last].value is not None:
                assert kept == [last], f"{key!r}: its latest value at {last} is gone"
        batches = snapshot(log)
        stamps = {t + DELETE_RETENTION_MS for t in self.round_times}
        for i, batch in enumerate(batches):
            if batch.horizon is not None:
                assert batch.horizon in stamps, f"batch {batch.base}: horizon {batch.horizon}"
            if not batch.records:  # only the cleaner writes empty headers: see the round oracle
                segment_last = i + 1 == len(batches) or batches[i + 1].segment_base != (
                    batch.segment_base
                )
                assert segment_last, f"empty batch {batch.base} is not its segment's last"
                assert batch.segment_base != log.active_segment.base_offset


class SmallMapCleanerModel(CleanerModel):
    """The same with a 4-key offset map: rounds end early (partial cleaning)."""

    small_map = True


MODEL_SETTINGS = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


TestCleanerModel = CleanerModel.TestCase
TestCleanerModel.settings = MODEL_SETTINGS
TestSmallMapCleanerModel = SmallMapCleanerModel.TestCase
TestSmallMapCleanerModel.settings = MODEL_SETTINGS


def test_partial_round_then_expired_tombstone_leaves_an_empty_header() -> None:
    """The machine's oracle on a fixed path to a 61-byte header (§5.4 worked timeline, §5.6).

    With a 4-key map, round one ends after key-3 (offset 3): key-4 (4) and the tombstone of
    key-5 (5, the last batch before the active segment) lie past the map but in a recopied
    segment, so the tombstone's batch is kept and stamped. A delete.retention.ms later, round
    two covers [4, 6): the tombstone has expired and its batch, which ends at the round's
    upper bound, stays as an empty header.
    """
    machine = SmallMapCleanerModel()
    try:
        machine.create(segment_bytes=4096, ratio="0")
        values = [(i, b"v%d" % i, 0, 0) for i in range(5)]
        machine.produce(values, per_batch=1, codec=CompressionType.NONE)
        machine.produce([(5, None, 1, 0)], per_batch=1, codec=CompressionType.GZIP)
        machine.roll_and_clean()
        machine.log_matches_model()
        [stamped] = [b for b in snapshot(machine.log) if b.base == 5]
        assert stamped.horizon == T0 + DELETE_RETENTION_MS
        machine.advance(DELETE_RETENTION_MS)
        machine.clean()
        machine.log_matches_model()
        [empty] = [b for b in snapshot(machine.log) if b.base == 5]
        assert empty.records == () and len(empty.raw) == RECORD_BATCH_OVERHEAD
        machine.reopen()
        machine.log_matches_model()
    finally:
        machine.teardown()
