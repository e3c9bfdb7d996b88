"""BatchBuilder and build_batches: size limits, flags and contents."""

from __future__ import annotations

import itertools
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog.errors import InvalidRecordError, RecordTooLargeError
from seglog.format.batch import RECORD_BATCH_OVERHEAD, RecordBatch, encode_record
from seglog.format.builder import BatchBuilder, build_batches
from seglog.format.compression import CompressionType, max_compressed_size
from seglog.format.reader import EndKind, read_batches
from seglog.format.records import Header, Record, TimestampType

TS = 1_700_000_000_000


def fits_alone(record: Record, codec: CompressionType, limit: int) -> bool:
    """Whether ``record`` fits in an empty batch of at most ``limit`` bytes."""
    encoded = encode_record(0, 0, record.key, record.value, record.headers)
    return RECORD_BATCH_OVERHEAD + max_compressed_size(codec, len(encoded)) <= limit


def decode(buf: bytes) -> list[RecordBatch]:
    batches, end = read_batches(buf)
    assert end.kind is EndKind.CLEAN, end
    out = []
    for batch in batches:
        assert isinstance(batch, RecordBatch)
        out.append(batch)
    return out


# --- size accounting (uncompressed: exact) -----------------------------------------------------


def test_size_accounting_is_exact_at_every_step() -> None:
    builder = BatchBuilder(max_batch_bytes=10_000)
    assert len(builder) == 0
    assert builder.size_in_bytes == RECORD_BATCH_OVERHEAD
    for i in range(40):
        key = None if i % 3 == 0 else b"k%d" % i
        value = None if i % 5 == 0 else os.urandom(i * 3)
        headers = (Header("h", None), Header(f"n{i}", b"v")) if i % 2 else ()
        assert builder.try_append(TS + i * 1000 - (i % 7) * 3000, key, value, headers)
        assert builder.size_in_bytes == len(builder.build())
        assert builder.next_offset == i + 1
    assert len(builder) == 40


def test_try_append_returns_false_exactly_at_the_limit() -> None:
    record_bytes = len(encode_record(0, 0, b"key", b"value"))
    # Same timestamp and small offsets: every record encodes to the same size.
    limit = RECORD_BATCH_OVERHEAD + 5 * record_bytes
    builder = BatchBuilder(max_batch_bytes=limit, base_offset=100)
    for _ in range(5):
        assert builder.try_append(TS, b"key", b"value")
    assert builder.size_in_bytes == limit
    before = builder.build()
    assert len(before) == limit  # exactly at the limit is allowed
    assert not builder.try_append(TS, b"key", b"value")
    assert not builder.try_append(TS, None, None)  # even the smallest record
    # A refused append leaves the builder unchanged.
    assert len(builder) == 5
    assert builder.size_in_bytes == limit
    assert builder.next_offset == 105
    assert builder.build() == before
    with pytest.raises(RecordTooLargeError):
        builder.append(TS, b"key", b"value")
    assert builder.build() == before


def test_one_byte_less_holds_one_record_less() -> None:
    record_bytes = len(encode_record(0, 0, b"key", b"value"))
    builder = BatchBuilder(max_batch_bytes=RECORD_BATCH_OVERHEAD + 5 * record_bytes - 1)
    appended = 0
    while builder.try_append(TS, b"key", b"value"):
        appended += 1
    assert appended == 4


@pytest.mark.parametrize("codec", list(CompressionType))
def test_single_oversize_record_raises(codec: CompressionType) -> None:
    builder = BatchBuilder(max_batch_bytes=200, compression=codec)
    with pytest.raises(RecordTooLargeError):
        builder.try_append(TS, b"k", b"v" * 200)
    with pytest.raises(RecordTooLargeError):
        builder.append(TS, b"k", b"v" * 200)
    assert len(builder) == 0
    # A record that fits is still accepted afterwards.
    assert builder.try_append(TS, b"k", b"v")


def test_oversize_record_in_build_batches_raises() -> None:
    records = [Record(0, TS, b"a", b"1"), Record(0, TS, b"b", b"x" * 5000)]
    with pytest.raises(RecordTooLargeError):
        build_batches(records, max_batch_bytes=1000)


def test_limit_too_small_for_any_record_is_refused() -> None:
    with pytest.raises(InvalidRecordError):
        BatchBuilder(max_batch_bytes=RECORD_BATCH_OVERHEAD + 6)
    BatchBuilder(max_batch_bytes=RECORD_BATCH_OVERHEAD + 7)


def test_smallest_record_fits_the_smallest_limit() -> None:
    builder = BatchBuilder(max_batch_bytes=RECORD_BATCH_OVERHEAD + 7)
    assert builder.try_append(TS, None, None)
    assert len(builder.build()) == RECORD_BATCH_OVERHEAD + 7


def test_empty_builder_cannot_build() -> None:
    with pytest.raises(InvalidRecordError):
        BatchBuilder().build()


# --- compressed batches never exceed the limit -------------------------------------------------


@pytest.mark.parametrize("codec", [c for c in CompressionType if c is not CompressionType.NONE])
@pytest.mark.parametrize("limit", [300, 1000, 40_000, 200_000])
def test_incompressible_batches_never_exceed_the_limit(codec: CompressionType, limit: int) -> None:
    builder = BatchBuilder(max_batch_bytes=limit, compression=codec)
    while builder.try_append(TS, None, os.urandom(37)):
        pass
    assert len(builder) > 0
    built = builder.build()
    assert len(built) <= limit
    assert decode(built)[0].records_count == len(builder)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(list(CompressionType)),
    st.integers(RECORD_BATCH_OVERHEAD + 7, 5000),
    st.lists(st.tuples(st.binary(max_size=300), st.booleans()), min_size=1, max_size=60),
    st.randoms(use_true_random=False),
)
def test_built_batches_never_exceed_the_limit(
    codec: CompressionType,
    limit: int,
    values: list[tuple[bytes, bool]],
    rng: random.Random,
) -> None:
    # Mix pseudo-random (incompressible) and drawn, often repetitive, values.
    records = [
        Record(0, TS + i, None, rng.randbytes(len(v)) if incompressible else v)
        for i, (v, incompressible) in enumerate(values)
    ]
    if not all(fits_alone(r, codec, limit) for r in records):
        with pytest.raises(RecordTooLargeError):
            build_batches(records, max_batch_bytes=limit, compression=codec)
        return
    batches = build_batches(records, max_batch_bytes=limit, compression=codec)
    assert all(len(b) <= limit for b in batches)
    decoded = decode(b"".join(batches))
    assert [r.value for b in decoded for r in b.records()] == [r.value for r in records]


# --- flags ------------------------------------------------------------------------------------


def test_log_append_time_needs_an_append_time() -> None:
    with pytest.raises(InvalidRecordError):
        BatchBuilder(timestamp_type=TimestampType.LOG_APPEND_TIME)
    builder = BatchBuilder(
        timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time_ms=TS + 12345
    )
    builder.append(TS, b"k", b"v")
    builder.append(TS + 9, b"k", b"v")
    (batch,) = decode(builder.build())
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == TS + 12345
    assert batch.base_timestamp == TS
    assert [batch.reported_timestamp(r) for r in batch.records()] == [TS + 12345] * 2
    assert [r.timestamp for r in batch.records()] == [TS, TS + 9]


def test_transactional_needs_a_producer_id() -> None:
    with pytest.raises(InvalidRecordError):
        BatchBuilder(is_transactional=True)
    with pytest.raises(InvalidRecordError):
        BatchBuilder(is_transactional=True, producer_id=-1, producer_epoch=0)
    builder = BatchBuilder(
        is_transactional=True,
        producer_id=4242,
        producer_epoch=7,
        base_sequence=90,
        partition_leader_epoch=3,
        base_offset=1000,
    )
    builder.append(TS, b"k", b"v")
    builder.append(TS, b"k2", b"v2")
    (batch,) = decode(builder.build())
    assert batch.is_transactional
    assert not batch.is_control
    assert batch.producer_id == 4242
    assert batch.producer_epoch == 7
    assert batch.base_sequence == 90
    assert batch.last_sequence == 91
    assert batch.partition_leader_epoch == 3
    assert batch.base_offset == 1000
    assert batch.last_offset == 1001


def test_defaults_are_a_plain_producer_batch() -> None:
    builder = BatchBuilder()
    builder.append(TS + 5, b"a", b"1")
    builder.append(TS - 5, b"b", b"2")
    builder.append(TS + 2, b"c", b"3")
    (batch,) = decode(builder.build())
    assert batch.base_offset == 0
    assert batch.last_offset_delta == 2
    assert batch.records_count == 3
    assert batch.base_timestamp == TS + 5
    assert batch.max_timestamp == TS + 5
    assert batch.producer_id == -1
    assert batch.producer_epoch == -1
    assert batch.base_sequence == -1
    assert batch.partition_leader_epoch == -1
    assert batch.attributes == 0


@pytest.mark.parametrize("codec", list(CompressionType))
def test_codec_is_applied(codec: CompressionType) -> None:
    builder = BatchBuilder(compression=codec)
    for i in range(50):
        builder.append(TS, b"key-%d" % i, b"value " * 20)
    built = builder.build()
    (batch,) = decode(built)
    assert batch.compression is codec
    if codec is not CompressionType.NONE:
        assert len(built) < builder.size_in_bytes  # repetitive values compress
    assert [r.key for r in batch.records()] == [b"key-%d" % i for i in range(50)]


# --- build_batches ------------------------------------------------------------------------------


def test_build_batches_splits_and_assigns_consecutive_offsets() -> None:
    records = [
        Record(999, TS + i, b"k%d" % i, b"v" * (i % 50), (Header("i", b"%d" % i),))
        for i in range(300)
    ]
    batches = build_batches(records, max_batch_bytes=2000, base_offset=5000)
    assert len(batches) > 5
    assert all(len(b) <= 2000 for b in batches)
    decoded = decode(b"".join(batches))
    offsets = [r.offset for b in decoded for r in b.records()]
    assert offsets == list(range(5000, 5300))  # the records' own offsets are ignored
    # Each batch starts where the previous one ended.
    for previous, batch in itertools.pairwise(decoded):
        assert batch.base_offset == previous.next_offset
        assert batch.last_offset_delta == batch.records_count - 1
    contents = [(r.timestamp, r.key, r.value, r.headers) for b in decoded for r in b.records()]
    assert contents == [(r.timestamp, r.key, r.value, r.headers) for r in records]


def test_build_batches_packs_greedily() -> None:
    # Each batch is full: the first record of the next one would not have fitted.
    records = [Record(0, TS, b"k", os.urandom(100)) for _ in range(50)]
    batches = build_batches(records, max_batch_bytes=1000)
    record_bytes = len(encode_record(0, 0, b"k", records[0].value))
    for batch in batches[:-1]:
        assert len(batch) + record_bytes > 1000


def test_build_batches_of_nothing_is_nothing() -> None:
    assert build_batches([]) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.builds(
            Record,
            st.just(0),
            st.integers(-1, 1 << 42),
            st.none() | st.binary(max_size=40),
            st.none() | st.binary(max_size=200),
            st.lists(
                st.builds(Header, st.text(max_size=8), st.none() | st.binary(max_size=8)),
                max_size=2,
            ).map(tuple),
        ),
        max_size=40,
    ),
    st.sampled_from(list(CompressionType)),
    st.integers(300, 3000),
    st.integers(0, 1 << 40),
)
def test_build_batches_contents_equal_input(
    records: list[Record], codec: CompressionType, limit: int, base_offset: int
) -> None:
    if not all(fits_alone(r, codec, limit) for r in records):
        with pytest.raises(RecordTooLargeError):
            build_batches(records, max_batch_bytes=limit, compression=codec)
        return
    batches = build_batches(
        records, max_batch_bytes=limit, compression=codec, base_offset=base_offset
    )
    assert all(len(b) <= limit for b in batches)
    decoded = decode(b"".join(batches))
    assert all(b.compression is codec for b in decoded)
    got = [r for b in decoded for r in b.records()]
    assert [r.offset for r in got] == list(range(base_offset, base_offset + len(records)))
    assert [(r.timestamp, r.key, r.value, r.headers) for r in got] == [
        (r.timestamp, r.key, r.value, r.headers) for r in records
    ]
