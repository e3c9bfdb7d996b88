"""The log cleaner end to end on real files: the seeds' examples and Kafka's rules (spec
``kafka-cleaner.md``), with an injected clock."""

from __future__ import annotations

import errno
import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from seglog.clock import ManualClock
from seglog.core.cleaning import LogToClean, group_segments_by_size
from seglog.core.offset_map import OffsetMap
from seglog.engine.cleaning.cleaner import Cleaner
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.builder import BatchBuilder
from seglog.format.compression import CompressionType
from seglog.format.reader import BatchReader
from seglog.format.topic_names import TopicPartition
from seglog.testing.crash import installed
from support.legacy_messages import legacy_message

DAY_MS = 24 * 3600 * 1000
Pair = tuple[bytes | None, bytes | None]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def manager(tmp_path: Path, clock: ManualClock) -> Iterator[LogManager]:
    m = open_log_dirs([tmp_path / "data"], clock=clock)
    yield m
    m.close()


def compacted(manager: LogManager, name: str = "t", **configs: str) -> Log:
    settings = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", **configs}
    manager.create_topic(name, 1, configs=settings)
    return manager.get_log(name, 0)


def produce(
    log: Log,
    clock: ManualClock,
    pairs: Sequence[Pair],
    *,
    per_batch: int = 1,
    compression: CompressionType = CompressionType.NONE,
) -> None:
    for i in range(0, len(pairs), per_batch):
        builder = BatchBuilder(compression=compression)
        for key, value in pairs[i : i + per_batch]:
            builder.append(clock.now_ms(), key, value)
        log.append(builder.build())


def contents(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for r in log.iter_records(log.log_start_offset)]


def batches_of(log: Log) -> list[tuple[int, int, int, int, int]]:
    """(base offset, last offset, attributes, base timestamp, record count) per batch."""
    out = []
    for segment in log.segments:
        data = segment.read_at(0, segment.size)
        for batch in BatchReader(data):
            out.append(
                (
                    batch.base_offset,
                    batch.last_offset,
                    batch.attributes,
                    batch.base_timestamp,
                    batch.records_count,
                )
            )
    return out


def test_seed_004_latest_offset_per_key_survives(manager: LogManager, clock: ManualClock) -> None:
    """Seed 004: K1 at offsets [0, 2, 3] keeps only 3; K2 at [1, 5, 9] keeps only 9."""
    log = compacted(manager)
    keys = [b"K1", b"K2", b"K1", b"K1", b"K3", b"K2", b"K4", b"K5", b"K6", b"K2"]
    produce(log, clock, [(k, b"v%d" % i) for i, k in enumerate(keys)])
    log.roll()
    [result] = manager.clean_once()
    assert result.error is None
    by_key: dict[bytes | None, list[int]] = {}
    for offset, key, _ in contents(log):
        by_key.setdefault(key, []).append(offset)
    assert by_key[b"K1"] == [3]
    assert by_key[b"K2"] == [9]
    assert [o for o, _, _ in contents(log)] == [3, 4, 6, 7, 8, 9]
    assert log.log_end_offset == 10


def test_seed_004_cleaner_point_moves_0_13_20_28(manager: LogManager, clock: ManualClock) -> None:
    """Seed 004's three rounds: the cleaner point is the active segment's base each time."""
    log = compacted(manager)
    tp = TopicPartition("t", 0)
    points = []
    for end in (13, 20, 28):
        start = log.log_end_offset
        produce(log, clock, [(b"k%d" % (o % 5), b"v%d" % o) for o in range(start, end)])
        log.roll()
        [result] = manager.clean_once()
        assert result.error is None and result.stats is not None
        assert result.stats.first_dirty_offset == (points[-1] if points else 0)
        points.append(manager.cleaner_checkpoints()[tp])
    assert points == [13, 20, 28]
    # Offsets stay sparse but ordered, and each key's latest value is there.
    offsets = [o for o, _, _ in contents(log)]
    assert offsets == sorted(offsets) and offsets[-5:] == [23, 24, 25, 26, 27]


def test_clean_section_is_recopied_and_later_updates_win(
    manager: LogManager, clock: ManualClock
) -> None:
    log = compacted(manager)
    produce(log, clock, [(b"a", b"1"), (b"b", b"1"), (b"c", b"1")])
    log.roll()
    manager.clean_once()
    produce(log, clock, [(b"a", b"2"), (b"d", b"1")])
    log.roll()
    manager.clean_once()
    assert [(k, v) for _, k, v in contents(log)] == [
        (b"b", b"1"),
        (b"c", b"1"),
        (b"a", b"2"),
        (b"d", b"1"),
    ]


def test_active_segment_and_dirty_ratio_gate(manager: LogManager, clock: ManualClock) -> None:
    log = compacted(manager, **{"min.cleanable.dirty.ratio": "0.5"})
    produce(log, clock, [(b"k", b"%d" % i) for i in range(10)])
    assert manager.clean_once() == []  # everything is in the active segment
    log.roll()
    [result] = manager.clean_once()  # ratio 1.0 > 0.5
    assert result.stats is not None and result.stats.messages_written == 1
    produce(log, clock, [(b"x", b"1")])
    log.roll()
    # Dirty bytes are now one small batch against a clean segment: below 0.5, not chosen.
    plan = manager.plan_cleaning()
    assert not plan[0].candidate.is_cleanable
    assert manager.clean_once() == []


def test_min_compaction_lag_keeps_young_segments(manager: LogManager, clock: ManualClock) -> None:
    log = compacted(manager, **{"min.compaction.lag.ms": str(60_000)})
    produce(log, clock, [(b"k", b"old")])
    log.roll()
    clock.advance(120_000)
    produce(log, clock, [(b"k", b"young")])
    log.roll()
    [result] = manager.clean_once()
    # Only the first segment is old enough: the young update is not in the map yet.
    assert result.stats is not None and result.stats.end_offset == 1
    assert [v for _, _, v in contents(log)] == [b"old", b"young"]
    clock.advance(120_000)
    manager.clean_once()
    assert [v for _, _, v in contents(log)] == [b"young"]


def test_max_compaction_lag_forces_a_low_ratio_log(manager: LogManager, clock: ManualClock) -> None:
    log = compacted(
        manager, **{"min.cleanable.dirty.ratio": "0.99", "max.compaction.lag.ms": "1000"}
    )
    produce(log, clock, [(b"k%d" % (i % 50), b"v" * 50) for i in range(200)], per_batch=50)
    log.roll()
    manager.clean_once()  # ratio 1.0: cleaned
    produce(log, clock, [(b"k1", b"new")])
    log.roll()
    assert manager.clean_once() == []  # tiny dirty share and not overdue yet
    clock.advance(5_000)
    [result] = manager.clean_once()
    assert result.stats is not None
    assert manager.log_cleaner.metrics()["max-compaction-delay-secs"] >= 3


def test_kip_534_tombstone_horizon(manager: LogManager, clock: ManualClock) -> None:
    """The first round keeps a tombstone and stamps now + delete.retention.ms into its batch;
    a round at or after that time removes it (spec §5.4's timeline)."""
    retention = 10_000
    log = compacted(manager, **{"delete.retention.ms": str(retention)})
    produce(log, clock, [(b"k", b"v"), (b"k", None), (b"other", b"x")])
    log.roll()
    t0 = clock.now_ms()
    manager.clean_once()
    assert [(o, k, v) for o, k, v in contents(log)] == [(1, b"k", None), (2, b"other", b"x")]
    tomb_batch = next(b for b in batches_of(log) if b[0] == 1)
    assert tomb_batch[2] & 0x40 and tomb_batch[3] == t0 + retention
    # Each later round needs dirty bytes to be chosen again.
    clock.advance(retention - 1)
    produce(log, clock, [(b"z", b"1")])
    log.roll()
    manager.clean_once()
    assert (1, b"k", None) in contents(log)
    clock.advance(1)
    produce(log, clock, [(b"z", b"2")])
    log.roll()
    manager.clean_once()
    assert all(k != b"k" for _, k, _ in contents(log))


def test_seed_002_legacy_tombstone_horizon_by_mtime() -> None:
    """Seed 002's pre-KIP-534 rule (kept for legacy data): horizon = mtime of the last clean
    segment minus delete.retention.ms; tombstones of segments modified at or before it go."""
    from seglog.core.cleaning import legacy_delete_horizon_ms, retains_legacy_tombstone

    def at(h: int, m: int) -> int:
        return (h * 60 + m) * 60_000

    hour = 3_600_000
    horizon = legacy_delete_horizon_ms(at(7, 40), hour)
    assert horizon == at(6, 40)
    mtimes = [at(6, 0), at(6, 20), at(6, 30), at(6, 35), at(7, 0), at(7, 40)]
    assert [retains_legacy_tombstone(m, horizon) for m in mtimes] == [
        False,
        False,
        False,
        False,
        True,
        True,
    ]
    horizon = legacy_delete_horizon_ms(at(8, 10), hour)
    mtimes = [at(6, 30), at(7, 0), at(7, 40), at(8, 0), at(8, 10)]
    assert [retains_legacy_tombstone(m, horizon) for m in mtimes] == [
        False,
        False,
        True,
        True,
        True,
    ]


def test_keyless_records_are_dropped_after_a_policy_switch(
    manager: LogManager, clock: ManualClock
) -> None:
    manager.create_topic("t", 1, configs={"min.cleanable.dirty.ratio": "0.01"})
    log = manager.get_log("t", 0)
    produce(log, clock, [(None, b"no key"), (b"k", b"1"), (None, b"again")])
    log.roll()
    manager.alter_topic("t", {"cleanup.policy": "compact"})
    [result] = manager.clean_once()
    assert result.stats is not None and result.stats.invalid_messages_read == 2
    assert contents(log) == [(1, b"k", b"1")]


def test_last_batch_of_the_round_is_kept_empty(manager: LogManager, clock: ManualClock) -> None:
    """Kafka 4.x (KAFKA-17076): the batch ending at the round's upper bound stays, emptied."""
    log = compacted(manager, **{"delete.retention.ms": "0"})
    produce(log, clock, [(b"k", b"v"), (b"k", None)])
    log.roll()
    manager.clean_once()  # the tombstone's horizon is stamped (now + 0)
    clock.advance(1)
    produce(log, clock, [(b"q", b"1")])
    log.roll()
    manager.clean_once()
    produce(log, clock, [(b"q", b"2")])
    log.roll()
    manager.clean_once()
    batches = batches_of(log)
    empties = [b for b in batches if b[4] == 0]
    assert all(b[3] == -1 for b in empties)  # empty headers carry base timestamp -1
    assert log.log_end_offset == 4
    assert [(k, v) for _, k, v in contents(log)] == [(b"q", b"2")]


@pytest.mark.parametrize("codec", list(CompressionType))
def test_compressed_batches_are_rebuilt_with_their_codec(
    manager: LogManager, clock: ManualClock, codec: CompressionType
) -> None:
    log = compacted(manager)
    pairs: list[Pair] = [(b"k%d" % (i % 7), b"value-%d" % i) for i in range(60)]
    produce(log, clock, pairs, per_batch=12, compression=codec)
    log.roll()
    manager.clean_once()
    latest = {k: (i, v) for i, (k, v) in enumerate(pairs)}
    assert contents(log) == sorted((i, k, v) for k, (i, v) in latest.items())
    assert {b[2] & 0x07 for b in batches_of(log)} == {int(codec)}


def test_legacy_entries_make_the_partition_uncleanable(
    tmp_path: Path, manager: LogManager, clock: ManualClock
) -> None:
    """A legacy (v1) message set in a compacted log is refused with its reason (seglog's
    cleaner rewrites v2 batches only); the partition is then skipped."""
    log = compacted(manager)
    produce(log, clock, [(b"k", b"1"), (b"k", b"2")])
    segment = log.active_segment.log_path
    manager.close()
    with open(segment, "ab") as handle:
        handle.write(legacy_message(2, 1, b"k", b"3", timestamp=clock.now_ms()))
    with open_log_dirs([tmp_path / "data"], clock=clock) as reopened:
        log = reopened.get_log("t", 0)
        log.roll()
        before = contents(log)
        [result] = reopened.clean_once()
        assert result.stats is None and result.error is not None
        assert "legacy (v0/v1) message set at position" in result.error
        assert contents(log) == before
        reasons = reopened.cleaner_manager.uncleanable()
        assert "legacy (v0/v1)" in reasons[TopicPartition("t", 0)].reason
        assert reopened.clean_once() == []  # skipped from now on
        assert reopened.log_cleaner.metrics()["uncleanable-partitions-count"] == 1


def test_partial_round_when_the_map_fills(manager: LogManager, clock: ManualClock) -> None:
    """A map holding 9 keys (11 slots x 0.9): a round stops at the 10th distinct key and the
    next round goes on from there (spec §3)."""
    log = compacted(manager)
    produce(log, clock, [(b"k%02d" % i, b"a") for i in range(25)], per_batch=5)
    produce(log, clock, [(b"k%02d" % i, b"b") for i in range(25)], per_batch=5)
    log.roll()
    small = Cleaner(OffsetMap(24 * 11, 0.9, hash_key=bytes(16)), clock=clock)
    manager.log_cleaner._cleaners = [small]
    tp = TopicPartition("t", 0)
    [first] = manager.clean_once()
    assert first.stats is not None and first.stats.is_partial
    assert manager.cleaner_checkpoints()[tp] == 9  # offsets 0..8 were mapped
    ends = [9]
    while manager.cleaner_checkpoints()[tp] < 50:
        manager.clean_once()
        ends.append(manager.cleaner_checkpoints()[tp])
    assert ends == sorted(ends) and len(ends) >= 5
    assert [(k, v) for _, k, v in contents(log)] == [(b"k%02d" % i, b"b") for i in range(25)]


def test_group_keeps_offsets_and_merges_small_segments(
    manager: LogManager, clock: ManualClock
) -> None:
    log = compacted(manager, **{"segment.bytes": "1200"})
    for _ in range(6):
        produce(log, clock, [(b"k%d" % i, b"x" * 40) for i in range(8)], per_batch=8)
        log.roll()
    manager.clean_once()
    produce(log, clock, [(b"n", b"1")])
    log.roll()
    manager.clean_once()
    bases = [s.base_offset for s in log.segments]
    assert len(bases) < 8  # small cleaned segments were merged
    assert [k for _, k, _ in contents(log)][-9:] == [b"k%d" % i for i in range(8)] + [b"n"]


def test_compact_delete_applies_retention_after_cleaning(
    manager: LogManager, clock: ManualClock
) -> None:
    # segment.bytes below two segments' size: the groups do not merge the old segment into a
    # young one (merging would give it the young max timestamp, Kafka's known trap).
    log = compacted(
        manager,
        **{"cleanup.policy": "compact,delete", "retention.ms": str(DAY_MS), "segment.bytes": "100"},
    )
    produce(log, clock, [(b"old", b"1")])
    log.roll()
    clock.advance(2 * DAY_MS)
    produce(log, clock, [(b"new", b"1")])
    log.roll()
    manager.clean_once()
    assert [k for _, k, _ in contents(log)] == [b"new"]
    assert log.log_start_offset == 1


def test_numba_and_python_paths_write_identical_segments(
    tmp_path: Path, clock: ManualClock
) -> None:
    def run(use_numba: bool) -> list[bytes]:
        m = open_log_dirs([tmp_path / ("nb" if use_numba else "py")], clock=ManualClock())
        try:
            log = compacted(m, **{"delete.retention.ms": "100"})
            local = m.clock
            assert isinstance(local, ManualClock)
            pairs: list[Pair] = [
                (b"k%d" % (i % 11), None if i % 13 == 0 else b"v%d" % i) for i in range(300)
            ]
            produce(log, local, pairs, per_batch=7)
            produce(log, local, pairs[:40], per_batch=7, compression=CompressionType.LZ4)
            log.roll()
            m.log_cleaner._cleaners = [
                Cleaner(OffsetMap(1 << 20, 0.9), clock=local, use_numba=use_numba)
            ]
            m.clean_once()
            return [s.read_at(0, s.size) for s in log.segments]
        finally:
            m.close()

    assert run(True) == run(False)


def test_cleaned_batches_keep_producer_fields(manager: LogManager, clock: ManualClock) -> None:
    log = compacted(manager)
    builder = BatchBuilder(producer_id=42, producer_epoch=3, base_sequence=0)
    for i in range(4):
        builder.append(clock.now_ms(), b"k%d" % (i % 2), b"v%d" % i)
    log.append(builder.build())
    log.roll()
    manager.clean_once()
    data = log.segments[0].read_at(0, log.segments[0].size)
    [batch] = list(BatchReader(data))
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 3, 0)
    assert (batch.base_offset, batch.last_offset, batch.records_count) == (0, 3, 2)
    assert struct.unpack_from(">i", data, 57)[0] == 2


@pytest.mark.parametrize(
    ("policy", "kept"),
    [("delete", [6, 7, 8]), ("compact", [4, 5, 6, 8]), ("compact,delete", [6, 8])],
)
def test_seed_003_one_queue_under_three_policies_with_the_cleaner(
    manager: LogManager, clock: ManualClock, policy: str, kept: list[int]
) -> None:
    """Seed 003 whole: offset 5 (key2's latest, past retention) survives only under
    ``compact``; ``compact`` also drops every older value of each key; ``compact,delete``
    does both. The cleaner and the retention task each run once, as a broker would.

    The first six records were written 30 days ago, files included (their mtimes say so):
    the first group (offsets 0-2) cleans to an *empty* segment (Kafka keeps no emptied batch
    there), whose largest timestamp is its file's mtime (Kafka's ``largestTimestamp``), so
    time retention reaches the segments after it only once that mtime is old too."""
    keys = [b"key1", b"key2", b"key1", b"key3", b"key1", b"key2", b"key3", b"key4", b"key4"]
    probe = BatchBuilder()
    probe.append(clock.now_ms(), b"key0", b"v0")
    manager.create_topic(
        "q",
        1,
        configs={
            "cleanup.policy": policy,
            "retention.ms": str(7 * DAY_MS),
            "segment.bytes": str(3 * len(probe.build())),
            "min.cleanable.dirty.ratio": "0",
        },
    )
    log = manager.get_log("q", 0)
    now = clock.now_ms()
    for i, key in enumerate(keys):
        builder = BatchBuilder()
        builder.append(now - 30 * DAY_MS if i < 6 else now, key, b"v%d" % i)
        log.append(builder.build())
        log.roll()
    for segment in log.segments:
        if segment.size and segment.base_offset < 6:
            written_ns = (now - 30 * DAY_MS) * 1_000_000
            os.utime(segment.log_path, ns=(written_ns, written_ns))
    manager.clean_once()
    manager.run_retention()
    assert [o for o, _, _ in contents(log)] == kept


def test_an_io_failure_marks_the_partition_for_a_retry_after_the_backoff(
    manager: LogManager, clock: ManualClock
) -> None:
    """A round that fails with ENOSPC marks the partition uncleanable with a retry time
    (``log.cleaner.backoff.ms`` later): the cleaner loop's maintenance lifts it then, and an
    explicit ``clean_once`` retries it at once; the retried round cleans as if nothing had
    happened. A data error's mark stays (KIP-346) whatever the clock says."""
    log = compacted(manager)
    produce(log, clock, [(b"k", b"1"), (b"j", b"1"), (b"k", b"2")])
    log.roll()
    tp = TopicPartition("t", 0)

    def disk_full(operation: str, where: str) -> None:
        if operation == "write" and ".cleaned" in where:
            raise OSError(errno.ENOSPC, "No space left on device", where)

    with installed(disk_full):
        [failed] = manager.clean_once()
    assert failed.error is not None and "[Errno 28]" in failed.error
    mark = manager.cleaner_manager.uncleanable()[tp]
    backoff = manager.cleaner_manager.backoff_ms
    assert mark.is_transient and mark.retry_after_ms == clock.now_ms() + backoff
    manager.cleaner_manager.maintain_uncleanable()  # the loop's maintenance: too early
    assert tp in manager.cleaner_manager.uncleanable()
    clock.advance(backoff)
    manager.cleaner_manager.maintain_uncleanable()
    assert manager.cleaner_manager.uncleanable() == {}
    manager.cleaner_manager.mark_failed(tp, "again", 0, OSError(errno.EIO, "I/O error"))
    [result] = manager.clean_once()  # asked for: retried at once
    assert result.error is None and result.stats is not None
    assert [(k, v) for _, k, v in contents(log)] == [(b"j", b"1"), (b"k", b"2")]
    manager.cleaner_manager.mark_failed(tp, "corrupt", 0, ValueError("bad batch"))
    clock.advance(10 * backoff)
    manager.cleaner_manager.maintain_uncleanable(retry_io_failures=True)
    assert not manager.cleaner_manager.uncleanable()[tp].is_transient


def test_rebuilding_a_well_compressed_batch_whole_fits_the_output_buffer(
    manager: LogManager, clock: ManualClock
) -> None:
    """A compressed batch rebuilt with every record kept (a kept tombstone gets its delete
    horizon stamped) is written uncompressed before it is compressed again: the output
    buffer must hold the decompressed records, far more than the chunk's bytes (a bug found
    by the demo: the kernel overran the buffer)."""
    log = compacted(manager)
    pairs: list[Pair] = [(b"key-%05d" % i, b"v" * 200) for i in range(3000)]
    pairs[1500] = (b"key-01500", None)
    produce(log, clock, pairs, per_batch=3000, compression=CompressionType.LZ4)
    log.roll()
    before = contents(log)
    (result,) = manager.clean_once()
    assert result.error is None and result.stats is not None
    assert contents(log) == before  # every key is unique: all kept, the tombstone too
    assert batches_of(log)[0][2] & 0x40  # the horizon is stamped


def test_segment_grouping_with_sparse_offsets_and_empty_segments(
    tmp_path: Path, clock: ManualClock
) -> None:
    """Kafka's ``LogCleanerTest.testSegmentGroupingWithSparseOffsetsAndEmptySegments``
    (KAFKA-12889): three segments each spanning an int32 of offsets (a record at the base and
    one at base + 2^31 - 1) cannot group; the first clean empties the first two (no emptied
    batch kept: neither ends at the round's upper bound), the next grouping puts the two
    empty segments together and the second clean merges them: 4 segments, then 3."""
    span = 1 << 31
    data = tmp_path / "data"
    manager = open_log_dirs([data], clock=clock)
    compacted(manager)
    manager.close()
    directory = data / "t-0"
    for path in directory.iterdir():
        if path.name.startswith("0000"):
            path.unlink()

    def batch(offset: int) -> bytes:
        builder = BatchBuilder(base_offset=offset)
        builder.append(clock.now_ms(), b"key", b"val")
        return builder.build()

    for i in range(3):  # segment i: offsets i * 2^31 and (i + 1) * 2^31 - 1
        name = directory / f"{i * span:020d}.log"
        name.write_bytes(batch(i * span) + batch((i + 1) * span - 1))
    (directory / f"{3 * span:020d}.log").write_bytes(batch(3 * span))  # active, not clean

    manager = open_log_dirs([data], clock=clock)
    try:
        log = manager.get_log("t", 0)
        first_uncleanable = log.log_end_offset - 1
        assert first_uncleanable == 3 * span == log.active_segment.base_offset

        def groups() -> list[list[int]]:
            facts = [f for f in log.cleaner_segment_facts() if f.base_offset < first_uncleanable]
            grouped = group_segments_by_size(
                facts,
                max_size_bytes=(1 << 31) - 1,
                max_index_bytes=(1 << 31) - 1,
                first_uncleanable_offset=first_uncleanable,
            )
            return [[f.base_offset for f in group] for group in grouped]

        def clean() -> None:
            to_clean = LogToClean(
                first_dirty_offset=0,
                first_uncleanable_offset=first_uncleanable,
                clean_bytes=0,
                cleanable_bytes=sum(s.size for s in log.segments[:-1]),
                max_compaction_delay_ms=0,
                min_cleanable_dirty_ratio=0.0,
            )
            Cleaner(OffsetMap(1 << 20, 0.9), clock=clock).clean(log, to_clean)

        assert len(log.segments) == 4
        assert groups() == [[0], [span], [2 * span]]  # no two non-empty segments group
        clean()
        assert len(log.segments) == 4
        assert log.segments[0].size == 0 and log.segments[1].size == 0
        # the key's latest record (3 * 2^31 - 1) ends the round: kept, nothing else before it
        assert contents(log) == [(3 * span - 1, b"key", b"val"), (3 * span, b"key", b"val")]
        assert groups() == [[0, span], [2 * span]]  # the two empty segments group together
        clean()
        assert [s.base_offset for s in log.segments] == [0, 2 * span, 3 * span]
        assert log.segments[0].size == 0
        assert contents(log) == [(3 * span - 1, b"key", b"val"), (3 * span, b"key", b"val")]
    finally:
        manager.close()
