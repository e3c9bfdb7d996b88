"""Segments the log cleaner wrote decode in kafka-python and aiokafka as seglog reads them.

A compacted log is built so that two cleaning rounds produce every kind of batch the cleaner
writes (spec ``kafka-cleaner.md`` §5.6):

* batches copied byte for byte (nothing removed);
* batches **rebuilt** because records went (older versions of a key, un-keyed records),
  in every codec (none, gzip, snappy, lz4, zstd): recompressed with the same codec, same base
  and last offset, new CRC;
* batches rebuilt to **stamp a delete horizon** (KIP-534: attribute bit 0x40, base timestamp
  := now + delete.retention.ms, record timestamp deltas recomputed and partly negative);
* in round two, horizon batches that lose their expired tombstone but keep other records
  (rebuilt with the inherited horizon);
* **61-byte empty headers**: the emptied batch ending exactly at the round's upper bound
  (the un-keyed batch written before the topic became compacted) and an active idempotent
  producer's emptied last batch (and, seglog only, a cleaning group's emptied last batch).

Every cleaned segment file is then read by both peers: kafka-python
(``support.kafka_oracle``: ``MemoryRecords`` + ``validate_crc``) and aiokafka's Cython codec
(``compat_support.aiokafka_view``), whose CRC-32C is independent of the ``crc32c`` package
seglog uses. Per batch, position, size, CRC validity and every header field the peer
exposes must equal seglog's reading; per record offset, timestamp, timestamp type, key,
value and headers. The partition directory read by kafka-python must equal what
``Log.iter_records`` returns, record for record.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest

pytest.importorskip("kafka", reason="kafka-python (the test extra) is not installed")
pytest.importorskip("aiokafka", reason="aiokafka (the test extra) is not installed")

from compat_support import aiokafka_crc32c, aiokafka_view, assert_same_reading, seglog_view

from seglog.clock import ManualClock
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.batch import DELETE_HORIZON_FLAG_MASK, RECORD_BATCH_OVERHEAD, RecordBatch
from seglog.format.builder import BatchBuilder
from seglog.format.compression import CompressionType
from seglog.format.reader import BatchReader, read_batches
from seglog.format.records import Header
from support.kafka_oracle import kafka_python_view, read_partition_dir_with_kafka_python

pytestmark = pytest.mark.compat

T0 = 1_700_000_000_000
TOPIC = "peers"
D = 5_000  # delete.retention.ms
CODECS = list(CompressionType)
PRODUCER_ID = 4242

BatchKey = tuple[int, int]  # (base offset, last offset)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def manager(tmp_path: Path, clock: ManualClock) -> Iterator[LogManager]:
    with mock.patch("os.fsync", lambda fd: None):  # durability is not under test
        m = open_log_dirs(
            [tmp_path / "data"],
            clock=clock,
            overrides={"log.cleaner.dedupe.buffer.size": str(2 * 1024 * 1024)},
        )
        yield m
        m.close()


def append(
    log: Log,
    clock: ManualClock,
    records: list[tuple[bytes | None, bytes | None, tuple[Header, ...]]],
    codec: CompressionType,
    *,
    producer_id: int = -1,
    base_sequence: int = -1,
    spread_ms: int = 0,
) -> None:
    """One batch; record timestamps step back from now by ``spread_ms`` each (varied deltas)."""
    builder = BatchBuilder(
        compression=codec,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=base_sequence,
    )
    now = clock.now_ms()
    for i, (key, value, headers) in enumerate(records):
        builder.append(now - spread_ms * ((i * 7) % 5), key, value, headers)
    log.append(builder.build())


def batches(log: Log) -> dict[BatchKey, RecordBatch]:
    """Every batch of the log by (base offset, last offset); raw bytes copied."""
    out: dict[BatchKey, RecordBatch] = {}
    for segment in log.segments:
        for batch in BatchReader(segment.read_at(0, segment.size)):
            assert isinstance(batch, RecordBatch)
            out[(batch.base_offset, batch.last_offset)] = batch
    return out


def segment_last_batches(log: Log) -> set[BatchKey]:
    """(base offset, last offset) of the last batch of every non-empty segment."""
    out = set()
    for segment in log.segments:
        found = list(BatchReader(segment.read_at(0, segment.size)))
        if found:
            out.add((found[-1].base_offset, found[-1].last_offset))
    return out


def check_with_peers(log: Log) -> dict[str, int]:
    """Both peers read every segment file as seglog does; returns what was compared."""
    compared = {"segments": 0, "batches": 0, "records": 0}
    for path in sorted(log.directory.glob("*.log")):
        data = path.read_bytes()
        ours, end = seglog_view(data)
        assert end.is_clean, (path.name, end)
        assert all(b.crc_ok for b in ours.batches), path.name
        for peer, view in (
            ("kafka-python", kafka_python_view(data)),
            ("aiokafka", aiokafka_view(data)),
        ):
            assert all(b.crc_ok for b in view.batches), f"{peer} rejects a CRC in {path.name}"
            assert view.stop == len(data), f"{peer} stops early in {path.name}"
            batch_count, record_count = assert_same_reading(data, ours, end, view, peer)
            assert batch_count == len(ours.batches)
        for batch in read_batches(data)[0]:
            assert isinstance(batch, RecordBatch)
            assert aiokafka_crc32c(memoryview(batch.raw)[21:]) == batch.crc, (path.name, batch)
        compared["segments"] += 1
        compared["batches"] += len(ours.batches)
        compared["records"] += record_count
    ours_records = [
        (r.offset, r.timestamp, r.key, r.value, [(h.key, h.value) for h in r.headers])
        for r in log.iter_records(log.log_start_offset)
    ]
    assert read_partition_dir_with_kafka_python(log.directory) == ours_records
    return compared


def test_cleaned_segments_decode_in_kafka_python_and_aiokafka(
    manager: LogManager, clock: ManualClock
) -> None:
    rng = random.Random(20260101)
    manager.create_topic(
        TOPIC,
        1,
        configs={
            "cleanup.policy": "delete",  # compacted below, after an un-keyed batch
            "segment.bytes": "2048",
            "index.interval.bytes": "256",
            "delete.retention.ms": str(D),
            "min.cleanable.dirty.ratio": "0.01",
        },
    )
    log = manager.get_log(TOPIC, 0)
    keys = [b"key-%d" % i for i in range(10)]
    headers = (Header("trace", b"\x01\x02"), Header("empty", None))

    def value() -> bytes:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 60)))

    # An idempotent producer's only batch: emptied by round one (key-9 is overwritten
    # later) but kept as a 61-byte header, as the producer's last batch (KAFKA-5490).
    append(
        log,
        clock,
        [(b"key-9", value(), ())],
        CompressionType.LZ4,
        producer_id=PRODUCER_ID,
        base_sequence=0,
    )
    for _ in range(3):
        for codec in CODECS:
            records = []
            for _ in range(5):
                key = rng.choice(keys[:9])
                tombstone = rng.random() < 0.2
                records.append(
                    (key, None if tombstone else value(), headers if rng.random() < 0.5 else ())
                )
            append(log, clock, records, codec, spread_ms=37)
            clock.advance(3)
    for i, codec in enumerate(CODECS):
        # a tombstone next to a value, in every codec: kept and stamped in round one (so
        # rebuilt), the value outlives the tombstone in round two (rebuilt again)
        append(
            log,
            clock,
            [(b"tomb-%d" % i, None, headers), (b"keep-%d" % i, value(), ())],
            codec,
            spread_ms=50,
        )
    append(log, clock, [(b"key-9", b"newest", ())], CompressionType.NONE)
    # un-keyed records (allowed while the policy is delete); the last batch before the roll
    append(log, clock, [(None, value(), ()), (None, value(), headers)], CompressionType.ZSTD)
    log.roll()
    upper = log.log_end_offset
    manager.alter_topic(TOPIC, {"cleanup.policy": "compact"})
    before = batches(log)

    round_one = clock.now_ms()
    [first] = manager.clean_once()
    assert first.error is None and first.stats is not None
    assert first.stats.end_offset == upper
    after = batches(log)
    assert log.log_end_offset == upper

    empty = {k: b for k, b in after.items() if b.records_count == 0}
    assert (upper - 2, upper - 1) in empty, "the emptied batch at the upper bound is gone"
    assert (0, 0) in empty, "the producer's emptied last batch is gone"
    for (base, last), batch in empty.items():
        assert batch.size_in_bytes == RECORD_BATCH_OVERHEAD
        assert (batch.base_offset, batch.last_offset) == (base, last)
    assert empty[(0, 0)].producer_id == PRODUCER_ID
    stamped = [b for b in after.values() if b.attributes & DELETE_HORIZON_FLAG_MASK]
    assert stamped and all(b.base_timestamp == round_one + D for b in stamped)
    rebuilt = {
        CompressionType(b.attributes & 0x07)
        for k, b in after.items()
        if b.records_count and bytes(b.raw) != bytes(before[k].raw)
    }
    assert rebuilt == set(CODECS), f"rebuilt batches only in {rebuilt}"
    assert any(bytes(b.raw) == bytes(before[k].raw) for k, b in after.items() if b.records_count), (
        "no batch was copied unchanged"
    )
    for key, batch in after.items():  # rebuilt batches keep their records' timestamps
        old = {r.offset: r for r in before[key].records()}
        for record in batch.records():
            assert record == old[record.offset], (key, record)
    first_reading = check_with_peers(log)
    assert first_reading["batches"] == len(after)

    # Round two, after the horizons: the tombstones go; their batches that keep a value are
    # rebuilt with the inherited horizon; the round-one empty header is no longer at the
    # upper bound.
    clock.advance(D)
    for codec in CODECS:
        append(
            log,
            clock,
            [(rng.choice(keys[:9]), value(), headers) for _ in range(3)],
            codec,
            spread_ms=11,
        )
    log.roll()
    [second] = manager.clean_once()
    assert second.error is None and second.stats is not None
    final = batches(log)
    if (upper - 2, upper - 1) in final:
        # Kafka drops it (no longer at the upper bound); seglog keeps the last batch of each
        # cleaning group, emptied if need be (a documented difference, Cleaner._clean_group)
        assert (upper - 2, upper - 1) in segment_last_batches(log)
    assert (0, 0) in final, "the producer's last batch must stay while the producer is active"
    assert not any(r.value is None for b in final.values() for r in b.records()), (
        "a tombstone outlived its delete horizon"
    )
    inherited = [
        b for k, b in final.items() if k in before and b.attributes & DELETE_HORIZON_FLAG_MASK
    ]
    assert inherited, "no horizon batch kept a record into round two"
    assert all(b.base_timestamp == round_one + D for b in inherited), "horizon not inherited"
    second_reading = check_with_peers(log)
    assert second_reading["records"] == len(list(log.iter_records(0)))
