"""The buffer reader: clean end vs torn tail vs corruption (spec §3.9), by property and example."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog.errors import CorruptRecordError
from seglog.format.batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    RecordBatch,
    encode_batch,
)
from seglog.format.crc import crc32c
from seglog.format.reader import BatchReader, EndKind, iter_batches_strict, read_batches
from seglog.format.records import Record, TimestampType
from seglog.testing.strategies import BatchSpec, log_buffers

TS = 1_700_000_000_000

PROPERTY = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@dataclass(frozen=True)
class Span:
    """Where one batch of a generated buffer lies."""

    start: int
    end: int


def spans_of(buf: bytes, specs: list[BatchSpec]) -> list[Span]:
    """Batch boundaries computed from the encoder, independently of the reader under test."""
    spans = []
    pos = 0
    for spec in specs:
        size = len(spec.encode())
        spans.append(Span(pos, pos + size))
        pos += size
    assert pos == len(buf)
    return spans


def reencode(batch: RecordBatch) -> bytes:
    """Encode a decoded batch again from its decoded values only."""
    return encode_batch(
        batch.records(),
        base_offset=batch.base_offset,
        compression=batch.compression,
        timestamp_type=batch.timestamp_type,
        is_transactional=batch.is_transactional,
        is_control=batch.is_control,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        partition_leader_epoch=batch.partition_leader_epoch,
        delete_horizon_ms=batch.delete_horizon_ms,
        base_timestamp=batch.base_timestamp,
        max_timestamp=batch.max_timestamp,
        last_offset_delta=batch.last_offset_delta,
    )


# --- (a) encode then decode is the identity ---------------------------------------------------


@PROPERTY
@given(log_buffers())
def test_decode_is_the_inverse_of_encode(drawn: tuple[bytes, list[BatchSpec]]) -> None:
    buf, specs = drawn
    spans = spans_of(buf, specs)
    batches, end = read_batches(buf)
    assert end.kind is EndKind.CLEAN
    assert end.position == len(buf)
    assert len(batches) == len(specs)
    for batch, spec, span in zip(batches, specs, spans, strict=True):
        assert isinstance(batch, RecordBatch)
        assert batch.position == span.start
        assert bytes(batch.raw) == buf[span.start : span.end]
        assert batch.records() == list(spec.records)
        options = spec.options
        assert batch.compression is options.get("compression", batch.compression)
        assert batch.is_control == options.get("is_control", False)
        assert batch.is_transactional == options.get("is_transactional", False)
        assert batch.producer_id == options.get("producer_id", -1)
        assert batch.producer_epoch == options.get("producer_epoch", -1)
        assert batch.base_sequence == options.get("base_sequence", -1)
        assert batch.partition_leader_epoch == options["partition_leader_epoch"]
        assert batch.delete_horizon_ms == options.get("delete_horizon_ms")
        log_append = options.get("timestamp_type") is TimestampType.LOG_APPEND_TIME
        assert (batch.timestamp_type is TimestampType.LOG_APPEND_TIME) == log_append
        if log_append:
            assert all(
                batch.reported_timestamp(r) == options["max_timestamp"] for r in batch.records()
            )
        else:
            assert batch.max_timestamp == max(r.timestamp for r in spec.records)
        assert batch.records_count == len(spec.records)
        assert batch.last_offset == spec.records[-1].offset
        # Decode then encode is lossless too.
        assert reencode(batch) == bytes(batch.raw)


# --- (b) any prefix decodes to its whole batches, then "need more bytes" ----------------------


@PROPERTY
@given(log_buffers())
def test_every_prefix_yields_whole_batches_then_needs_more(
    drawn: tuple[bytes, list[BatchSpec]],
) -> None:
    buf, specs = drawn
    spans = spans_of(buf, specs)
    boundaries = {0} | {s.end for s in spans}
    for cut in range(len(buf) + 1):
        batches, end = read_batches(buf[:cut])
        whole = [s for s in spans if s.end <= cut]
        assert [b.position for b in batches] == [s.start for s in whole]
        assert [bytes(b.raw) for b in batches] == [buf[s.start : s.end] for s in whole]
        if cut in boundaries:
            assert end.kind is EndKind.CLEAN, (cut, end)
            assert end.position == cut
            assert end.bytes_needed is None
        else:
            torn = spans[len(whole)]
            assert end.kind is EndKind.TORN_TAIL, (cut, end)
            assert end.position == torn.start
            # "need more bytes": at least the rest of the torn batch's header, at most all of it.
            assert end.bytes_needed is not None
            assert 0 < end.bytes_needed <= torn.end - cut


@PROPERTY
@given(log_buffers(max_batches=3), st.data())
def test_prefix_with_base_position_and_window(
    drawn: tuple[bytes, list[BatchSpec]], data: st.DataObject
) -> None:
    buf, specs = drawn
    spans = spans_of(buf, specs)
    lead = data.draw(st.binary(max_size=20), label="bytes before the window")
    cut = data.draw(st.integers(0, len(buf)), label="cut")
    base_position = data.draw(st.integers(0, 1 << 40), label="base_position")
    padded = lead + buf + b"\xff" * 7  # bytes outside [start, end) must never be read
    reader = BatchReader(padded, start=len(lead), end=len(lead) + cut, base_position=base_position)
    batches = reader.batches()
    whole = [s for s in spans if s.end <= cut]
    assert [b.position for b in batches] == [base_position + s.start for s in whole]
    assert reader.valid_bytes == (whole[-1].end if whole else 0)
    assert reader.end is not None
    if cut == 0 or (whole and whole[-1].end == cut):
        assert reader.end.kind is EndKind.CLEAN
        assert reader.end.position == base_position + cut
    else:
        assert reader.end.kind is EndKind.TORN_TAIL
        assert reader.end.position == base_position + spans[len(whole)].start


# --- (c) a single flipped byte is reported as corruption, never returned as data --------------

# Regions of a v2 batch header. Kafka's CRC-32C covers [21, end) only. baseOffset [0, 8) and
# partitionLeaderEpoch [12, 16) are outside it (a broker assigns them in place without a new
# CRC), so a flip there cannot be detected by the checksum: it is only caught when offsets
# stop increasing (see the tests after this one). batchLength [8, 12), magic (16) and the CRC
# itself [17, 21) are not covered either, but damaging them breaks the frame or the CRC match.
DETECTED_REGIONS = {
    "crc-covered": None,  # [21, end)
    "crc-field": (17, 21),
    "magic": (16, 17),
    "batch-length": (8, 12),
}


@PROPERTY
@given(
    log_buffers(),
    st.data(),
    st.sampled_from(sorted(DETECTED_REGIONS)),
    st.integers(1, 255),
)
def test_single_flipped_byte_is_corruption_at_that_batch(
    drawn: tuple[bytes, list[BatchSpec]], data: st.DataObject, region: str, mask: int
) -> None:
    buf, specs = drawn
    spans = spans_of(buf, specs)
    victim = data.draw(st.integers(0, len(spans) - 1), label="victim batch")
    span = spans[victim]
    low, high = DETECTED_REGIONS[region] or (ATTRIBUTES_OFFSET, span.end - span.start)
    at = span.start + data.draw(st.integers(low, high - 1), label="at")
    damaged = bytearray(buf)
    damaged[at] ^= mask

    batches, end = read_batches(bytes(damaged))

    assert end.kind is not EndKind.CLEAN, (region, end)
    assert end.position == span.start, (region, end)
    if end.kind is EndKind.TORN_TAIL:
        # Only a length that now runs past the end of the buffer reads as "need more bytes".
        assert region == "batch-length"
        (size,) = struct.unpack_from(">i", damaged, span.start + 8)
        assert span.start + 12 + size > len(buf)
    # Everything before the damaged batch is returned intact, and nothing from it or after.
    assert len(batches) == victim
    for batch, good, spec in zip(batches, spans[:victim], specs[:victim], strict=True):
        assert bytes(batch.raw) == buf[good.start : good.end]
        assert batch.records() == list(spec.records)


@PROPERTY
@given(log_buffers(), st.data(), st.integers(1, 255))
def test_flip_in_partition_leader_epoch_is_not_detected(
    drawn: tuple[bytes, list[BatchSpec]], data: st.DataObject, mask: int
) -> None:
    # Documented limitation shared with Kafka: the leader epoch lies outside the CRC.
    buf, specs = drawn
    spans = spans_of(buf, specs)
    victim = data.draw(st.integers(0, len(spans) - 1))
    at = spans[victim].start + data.draw(st.integers(12, 15))
    damaged = bytearray(buf)
    damaged[at] ^= mask
    batches, end = read_batches(bytes(damaged))
    assert end.kind is EndKind.CLEAN
    assert len(batches) == len(specs)
    changed = batches[victim]
    assert isinstance(changed, RecordBatch)
    assert changed.partition_leader_epoch != specs[victim].options["partition_leader_epoch"]
    assert changed.records() == list(specs[victim].records)


@PROPERTY
@given(log_buffers(), st.data(), st.integers(1, 255))
def test_flip_in_base_offset_is_caught_only_by_offset_order(
    drawn: tuple[bytes, list[BatchSpec]], data: st.DataObject, mask: int
) -> None:
    # baseOffset is outside the CRC too: a flip passes unless offsets stop increasing.
    buf, specs = drawn
    spans = spans_of(buf, specs)
    victim = data.draw(st.integers(0, len(spans) - 1))
    at = spans[victim].start + data.draw(st.integers(0, 7))
    damaged = bytearray(buf)
    damaged[at] ^= mask
    (new_base,) = struct.unpack_from(">q", damaged, spans[victim].start)
    shift = new_base - specs[victim].records[0].offset
    last_offsets = [spec.records[-1].offset for spec in specs]
    last_offsets[victim] += shift
    first_offsets = [spec.records[0].offset for spec in specs]
    first_offsets[victim] += shift
    # The first batch that does not start above its predecessor's last offset.
    bad = next((i for i in range(1, len(specs)) if first_offsets[i] <= last_offsets[i - 1]), None)

    batches, end = read_batches(bytes(damaged))

    if bad is None:
        assert end.kind is EndKind.CLEAN
        assert len(batches) == len(specs)
        assert [r.offset for r in batches[victim].records()] == [
            r.offset + shift for r in specs[victim].records
        ]
    else:
        assert end.kind is EndKind.CORRUPT
        assert end.position == spans[bad].start
        assert "offset" in end.reason
        assert len(batches) == bad
    # With the offset check off, nothing at all notices.
    unchecked, unchecked_end = read_batches(bytes(damaged), check_offsets=False)
    assert unchecked_end.kind is EndKind.CLEAN
    assert len(unchecked) == len(specs)


def test_crc_check_can_be_turned_off() -> None:
    batch = encode_batch([Record(0, TS, b"k", b"v")])
    damaged = bytearray(batch)
    damaged[-1] ^= 0x10
    _, end = read_batches(bytes(damaged))
    assert end.kind is EndKind.CORRUPT
    assert "CRC" in end.reason
    batches, end = read_batches(bytes(damaged), verify_crc=False)
    assert end.kind is EndKind.CLEAN
    assert len(batches) == 1
    assert not batches[0].is_valid()


# --- (d) examples: zero-filled tails, impossible sizes, unknown magic, offsets, positions ------

A = encode_batch([Record(0, TS, b"a", b"1"), Record(1, TS, b"b", b"2")])
B = encode_batch([Record(2, TS, b"c", b"3")])
C = encode_batch([Record(5, TS, None, b"4")])
LOG = A + B + C


@pytest.mark.parametrize("zeros", [12, 13, 17, 61, 4096])
def test_zero_filled_tail_is_corrupt_at_its_start(zeros: int) -> None:
    batches, end = read_batches(LOG + bytes(zeros))
    assert [b.position for b in batches] == [0, len(A), len(A) + len(B)]
    assert end.kind is EndKind.CORRUPT
    assert end.position == len(LOG)
    assert "zero-filled" in end.reason


@pytest.mark.parametrize("zeros", [1, 11])
def test_fewer_zero_bytes_than_an_entry_header_is_a_torn_tail(zeros: int) -> None:
    # Too short to read a size from: indistinguishable from a torn write.
    batches, end = read_batches(LOG + bytes(zeros))
    assert len(batches) == 3
    assert end.kind is EndKind.TORN_TAIL
    assert end.position == len(LOG)
    assert end.bytes_needed == 12 - zeros


def test_zero_size_followed_by_data_is_an_impossible_size_not_a_zero_tail() -> None:
    tail = bytes(12) + b"\x01" + bytes(50)
    batches, end = read_batches(LOG + tail)
    assert len(batches) == 3
    assert end.kind is EndKind.CORRUPT
    assert end.position == len(LOG)
    assert "zero-filled" not in end.reason
    assert "impossible" in end.reason


def test_zero_filled_tail_with_base_position() -> None:
    _, end = read_batches(LOG + bytes(100), base_position=1000)
    assert end.kind is EndKind.CORRUPT
    assert end.position == 1000 + len(LOG)


def with_size(batch: bytes, size: int) -> bytes:
    out = bytearray(batch)
    struct.pack_into(">i", out, 8, size)
    return bytes(out)


@pytest.mark.parametrize("size", [-1, -(1 << 31), 0, 13], ids=["-1", "int32-min", "0", "13"])
def test_size_below_legacy_minimum_is_corrupt(size: int) -> None:
    batches, end = read_batches(A + with_size(B, size))
    assert len(batches) == 1
    assert end.kind is EndKind.CORRUPT
    assert end.position == len(A)
    assert "impossible" in end.reason


@pytest.mark.parametrize("size", [14, 48])
def test_v2_size_below_batch_minimum_is_corrupt(size: int) -> None:
    batches, end = read_batches(A + with_size(B, size) + bytes(100))
    assert len(batches) == 1
    assert end.kind is EndKind.CORRUPT
    assert end.position == len(A)


def test_size_above_the_configured_limit_is_corrupt() -> None:
    big = encode_batch([Record(10, TS, b"big", b"v" * 200)])
    log = LOG + big
    batches, end = read_batches(log, max_batch_bytes=len(big) - 12)  # at the limit: fine
    assert end.kind is EndKind.CLEAN
    assert len(batches) == 4
    batches, end = read_batches(log, max_batch_bytes=len(big) - 13)
    assert end.kind is EndKind.CORRUPT
    assert end.position == len(LOG)
    assert "limit" in end.reason
    assert len(batches) == 3


def test_size_past_the_end_of_the_buffer_is_a_torn_tail() -> None:
    batches, end = read_batches(A + with_size(B, 1 << 30))
    assert len(batches) == 1
    assert end.kind is EndKind.TORN_TAIL
    assert end.position == len(A)
    assert end.bytes_needed == 12 + (1 << 30) - len(B)


@pytest.mark.parametrize("magic", [3, 7, 0x7F, 0x80, 0xFF])
def test_unknown_magic_is_corrupt(magic: int) -> None:
    damaged = bytearray(LOG)
    damaged[len(A) + 16] = magic
    batches, end = read_batches(bytes(damaged))
    assert len(batches) == 1
    assert end.kind is EndKind.CORRUPT
    assert end.position == len(A)
    assert "magic" in end.reason


def test_unknown_magic_is_reported_even_before_the_whole_batch_arrived() -> None:
    damaged = bytearray(A + B)
    damaged[len(A) + 16] = 9
    _, end = read_batches(bytes(damaged[: len(A) + 20]))
    assert end.kind is EndKind.CORRUPT
    assert end.position == len(A)


@pytest.mark.parametrize("second_base", [0, 1])
def test_offsets_going_backwards_are_corrupt(second_base: int) -> None:
    again = encode_batch([Record(second_base, TS, b"x", b"y")])
    batches, end = read_batches(A + again + C)
    assert [b.position for b in batches] == [0]
    assert end.kind is EndKind.CORRUPT
    assert end.position == len(A)
    assert "offset" in end.reason
    unchecked, end = read_batches(A + again + C, check_offsets=False)
    assert end.kind is EndKind.CLEAN
    assert len(unchecked) == 3


def test_offset_gaps_between_batches_are_fine() -> None:
    far = encode_batch([Record(1_000_000, TS, b"x", b"y")])
    batches, end = read_batches(LOG + far)
    assert end.kind is EndKind.CLEAN
    assert len(batches) == 4


def test_base_position_shifts_batches_end_and_errors() -> None:
    damaged = bytearray(LOG)
    damaged[len(A) + len(B) + 30] ^= 0x01  # inside C's CRC-covered range
    batches, end = read_batches(bytes(damaged), base_position=8192)
    assert [b.position for b in batches] == [8192, 8192 + len(A)]
    assert end.kind is EndKind.CORRUPT
    assert end.position == 8192 + len(A) + len(B)
    error = end.to_error("00000000000000000000.log")
    assert isinstance(error, CorruptRecordError)
    assert error.position == end.position
    assert error.path == "00000000000000000000.log"
    assert "00000000000000000000.log" in str(error)
    # Errors raised while decoding a batch's records carry the shifted position too.
    bad_records = bytearray(B)
    bad_records[-1] = 0x02  # header count 1 with nothing after it
    struct.pack_into(">I", bad_records, CRC_OFFSET, crc32c(bad_records[ATTRIBUTES_OFFSET:]))
    batches, end = read_batches(A + bytes(bad_records), base_position=100)
    assert end.kind is EndKind.CLEAN
    with pytest.raises(CorruptRecordError) as info:
        batches[1].records()
    assert info.value.position == 100 + len(A)


def test_clean_end_and_valid_bytes() -> None:
    reader = BatchReader(LOG)
    assert [b.position for b in reader] == [0, len(A), len(A) + len(B)]
    assert reader.end is not None
    assert reader.end.is_clean
    assert reader.end.position == len(LOG)
    assert reader.valid_bytes == len(LOG)
    empty_batches, empty_end = read_batches(b"")
    assert empty_batches == []
    assert empty_end.kind is EndKind.CLEAN
    assert empty_end.position == 0


def test_reader_accepts_memoryview_and_bytearray() -> None:
    for buf in (memoryview(LOG), bytearray(LOG)):
        batches, end = read_batches(buf)
        assert end.is_clean
        assert [r.offset for b in batches for r in b.records()] == [0, 1, 2, 5]


def test_strict_iteration_raises_on_anything_but_a_clean_end() -> None:
    assert len(list(iter_batches_strict(LOG))) == 3
    with pytest.raises(CorruptRecordError) as info:
        list(iter_batches_strict(LOG[:-1], path="x.log"))
    assert info.value.position == len(A) + len(B)
    assert info.value.path == "x.log"
    with pytest.raises(CorruptRecordError) as info:
        list(iter_batches_strict(LOG + bytes(64)))
    assert info.value.position == len(LOG)
