"""Record batch v2: byte-exact encoding, every header field, and hostile input (spec §3)."""

from __future__ import annotations

import struct

import pytest

from seglog.errors import CorruptRecordError, InvalidRecordError
from seglog.format.batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    LOG_OVERHEAD,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    RecordBatch,
    encode_batch,
    encode_record,
    make_attributes,
    parse_batch_header,
    set_base_offset,
    set_partition_leader_epoch,
)
from seglog.format.compression import CompressionType, compress
from seglog.format.control import (
    ControlRecordType,
    decode_control_key,
    decode_end_txn_marker,
    encode_control_key,
    encode_end_txn_marker,
)
from seglog.format.crc import crc32c
from seglog.format.reader import EndKind, read_batches
from seglog.format.records import Header, Record, TimestampType
from seglog.format.varint import INT32_MAX, encode_varint

TS = 1_700_000_000_000

# --- spec §3.8, Example A ---------------------------------------------------------------------
EXAMPLE_A = bytes.fromhex(
    "0000000000000000"  # baseOffset 0
    "00000047"  # batchLength 71
    "00000000"  # partitionLeaderEpoch 0
    "02"  # magic
    "00be233d"  # crc32c
    "0000"  # attributes
    "00000001"  # lastOffsetDelta
    "0000018bcfe56800"  # baseTimestamp
    "0000018bcfe56805"  # maxTimestamp
    "ffffffffffffffff"  # producerId
    "ffff"  # producerEpoch
    "ffffffff"  # baseSequence
    "00000002"  # recordsCount
    "10000000026b027600"  # record 0
    "18000a02046b32010202680278"  # record 1
)
EXAMPLE_A_RECORDS = [
    Record(0, TS, b"k", b"v"),
    Record(1, TS + 5, b"k2", None, (Header("h", b"x"),)),
]

# --- spec §3.8, Example B (COMMIT marker) -----------------------------------------------------
EXAMPLE_B = bytes.fromhex(
    "000000000000000a 00000042 00000000 02 0e5f7535 0030 00000000"
    "0000018bcfe56800 0000018bcfe56800 00000000000003e8 0005 ffffffff 00000001"
    "20 00 00 00 08 0000 0001 0c 0000 00000003 00".replace(" ", "")
)


def only_batch(buf: bytes) -> RecordBatch:
    """Read ``buf`` with the full reader (CRC checked) and return its single v2 batch."""
    batches, end = read_batches(buf)
    assert end.kind is EndKind.CLEAN, end
    assert len(batches) == 1
    batch = batches[0]
    assert isinstance(batch, RecordBatch)
    return batch


def recrc(buf: bytes | bytearray) -> bytes:
    """Recompute the CRC-32C of a single batch after patching it."""
    out = bytearray(buf)
    struct.pack_into(">I", out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


def with_section(
    batch: bytes,
    section: bytes,
    *,
    records_count: int | None = None,
    attributes: int | None = None,
) -> bytes:
    """Replace a batch's records section (and optionally header fields), fix the length, re-CRC."""
    out = bytearray(batch[:RECORD_BATCH_OVERHEAD] + section)
    struct.pack_into(">i", out, 8, len(out) - LOG_OVERHEAD)
    if records_count is not None:
        struct.pack_into(">i", out, 57, records_count)
    if attributes is not None:
        struct.pack_into(">h", out, ATTRIBUTES_OFFSET, attributes)
    return recrc(out)


# --- worked examples --------------------------------------------------------------------------


def test_example_a_encodes_byte_for_byte() -> None:
    assert len(EXAMPLE_A) == 83
    assert encode_batch(EXAMPLE_A_RECORDS, partition_leader_epoch=0) == EXAMPLE_A


def test_example_a_decodes_every_field() -> None:
    batch = only_batch(EXAMPLE_A)
    assert batch.position == 0
    assert batch.base_offset == 0
    assert batch.batch_length == 71
    assert batch.size_in_bytes == 83
    assert batch.partition_leader_epoch == 0
    assert batch.magic == MAGIC_V2
    assert batch.crc == 12460861  # 0x00be233d
    assert batch.compute_crc() == batch.crc
    assert batch.is_valid()
    assert batch.attributes == 0
    assert batch.compression is CompressionType.NONE
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert not batch.is_transactional
    assert not batch.is_control
    assert not batch.has_delete_horizon
    assert batch.delete_horizon_ms is None
    assert batch.last_offset_delta == 1
    assert batch.last_offset == 1
    assert batch.next_offset == 2
    assert batch.base_timestamp == TS
    assert batch.max_timestamp == TS + 5
    assert batch.producer_id == -1
    assert batch.producer_epoch == -1
    assert batch.base_sequence == -1
    assert batch.last_sequence == -1
    assert batch.record_sequence(1) == -1
    assert batch.records_count == 2
    records = batch.records()
    assert records == EXAMPLE_A_RECORDS
    assert list(batch) == EXAMPLE_A_RECORDS
    assert [batch.reported_timestamp(r) for r in records] == [TS, TS + 5]
    assert records[1].is_tombstone
    assert not records[0].is_tombstone
    assert bytes(batch.raw) == EXAMPLE_A


def test_example_a_record_bytes() -> None:
    assert encode_record(0, 0, b"k", b"v") == bytes.fromhex("10000000026b027600")
    assert encode_record(1, 5, b"k2", None, [Header("h", b"x")]) == bytes.fromhex(
        "18000a02046b32010202680278"
    )


def test_example_b_encodes_byte_for_byte() -> None:
    marker = Record(
        10,
        TS,
        encode_control_key(ControlRecordType.COMMIT),
        encode_end_txn_marker(3),
    )
    encoded = encode_batch(
        [marker],
        is_control=True,
        is_transactional=True,
        producer_id=1000,
        producer_epoch=5,
        partition_leader_epoch=0,
    )
    assert len(EXAMPLE_B) == 78
    assert encoded == EXAMPLE_B


def test_example_b_decodes_every_field() -> None:
    batch = only_batch(EXAMPLE_B)
    assert batch.base_offset == 10
    assert batch.batch_length == 66
    assert batch.size_in_bytes == 78
    assert batch.partition_leader_epoch == 0
    assert batch.crc == 0x0E5F7535
    assert batch.attributes == 0x30
    assert batch.is_control
    assert batch.is_transactional
    assert batch.compression is CompressionType.NONE
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert not batch.has_delete_horizon
    assert batch.last_offset_delta == 0
    assert batch.last_offset == 10
    assert batch.next_offset == 11
    assert batch.base_timestamp == batch.max_timestamp == TS
    assert batch.producer_id == 1000
    assert batch.producer_epoch == 5
    assert batch.base_sequence == -1
    assert batch.last_sequence == -1
    assert batch.records_count == 1
    (record,) = batch.records()
    assert record.offset == 10
    assert record.timestamp == TS
    assert record.headers == ()
    key = decode_control_key(record.key)
    assert key.version == 0
    assert key.type is ControlRecordType.COMMIT
    marker = decode_end_txn_marker(record.value)
    assert marker.version == 0
    assert marker.coordinator_epoch == 3
    # The marker record is 17 bytes, its length byte 0x20 = 16.
    assert len(bytes(batch.raw)) - RECORD_BATCH_OVERHEAD == 17
    assert EXAMPLE_B[RECORD_BATCH_OVERHEAD] == 0x20


def test_parse_header_at_a_position_slices_the_raw_batch() -> None:
    buf = b"junk" + EXAMPLE_A + EXAMPLE_B
    batch = parse_batch_header(buf, 4 + len(EXAMPLE_A))
    assert batch.position == 4 + len(EXAMPLE_A)
    assert bytes(batch.raw) == EXAMPLE_B
    assert batch.is_valid()


# --- derived values ---------------------------------------------------------------------------


def test_last_sequence_wraps_around_int32() -> None:
    records = [Record(100 + i, TS, b"k", b"v") for i in range(4)]
    batch = only_batch(
        encode_batch(records, producer_id=7, producer_epoch=1, base_sequence=INT32_MAX - 1)
    )
    assert batch.base_sequence == INT32_MAX - 1
    assert batch.last_offset_delta == 3
    assert batch.last_sequence == 1  # MAX-1, MAX, 0, 1
    assert [batch.record_sequence(r.offset) for r in batch.records()] == [
        INT32_MAX - 1,
        INT32_MAX,
        0,
        1,
    ]


def test_last_sequence_without_wrap() -> None:
    records = [Record(5, TS, None, b"a"), Record(9, TS, None, b"b")]
    batch = only_batch(encode_batch(records, producer_id=1, producer_epoch=0, base_sequence=20))
    assert batch.last_offset_delta == 4
    assert batch.last_sequence == 24
    assert batch.record_sequence(9) == 24


def test_log_append_time_reports_max_timestamp_for_every_record() -> None:
    append_time = TS + 10_000
    records = [Record(0, TS + 3, b"a", b"1"), Record(1, TS - 7, b"b", b"2")]
    batch = only_batch(
        encode_batch(
            records, timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=append_time
        )
    )
    assert batch.attributes & 0x08
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == append_time
    assert batch.base_timestamp == TS + 3
    decoded = batch.records()
    # The written timestamps survive (lossless re-encode) ...
    assert [r.timestamp for r in decoded] == [TS + 3, TS - 7]
    # ... but Kafka reports the batch maxTimestamp for each record.
    assert [batch.reported_timestamp(r) for r in decoded] == [append_time, append_time]


def test_delete_horizon_flag_and_negative_deltas() -> None:
    horizon = TS + 86_400_000  # a future time replaces baseTimestamp
    records = [Record(0, TS, b"k", None), Record(1, TS + 1, b"j", b"v")]
    raw = encode_batch(records, delete_horizon_ms=horizon)
    batch = only_batch(raw)
    assert batch.attributes == 0x40
    assert batch.has_delete_horizon
    assert batch.delete_horizon_ms == horizon
    assert batch.base_timestamp == horizon
    assert batch.max_timestamp == TS + 1
    assert batch.records() == records
    # The first record's timestampDelta is negative on disk: TS - horizon.
    first_record = raw[RECORD_BATCH_OVERHEAD:]
    assert first_record[2 : 2 + len(encode_varint(TS - horizon))] == encode_varint(TS - horizon)


# --- attributes -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "attributes"),
    [
        ({"compression": CompressionType.GZIP}, 0x01),
        ({"compression": CompressionType.SNAPPY}, 0x02),
        ({"compression": CompressionType.LZ4}, 0x03),
        ({"compression": CompressionType.ZSTD}, 0x04),
        ({"timestamp_type": TimestampType.LOG_APPEND_TIME}, 0x08),
        ({"is_transactional": True}, 0x10),
        ({"is_control": True}, 0x20),
        ({"has_delete_horizon": True}, 0x40),
        (
            {
                "compression": CompressionType.ZSTD,
                "timestamp_type": TimestampType.LOG_APPEND_TIME,
                "is_transactional": True,
                "is_control": True,
                "has_delete_horizon": True,
            },
            0x7C,
        ),
        ({}, 0x00),
    ],
)
def test_attribute_bits(flags: dict[str, object], attributes: int) -> None:
    assert make_attributes(**flags) == attributes  # type: ignore[arg-type]


@pytest.mark.parametrize("codec", list(CompressionType))
@pytest.mark.parametrize("log_append", [False, True])
@pytest.mark.parametrize("transactional", [False, True])
@pytest.mark.parametrize("horizon", [None, TS + 99])
def test_every_attribute_bit_round_trips(
    codec: CompressionType, log_append: bool, transactional: bool, horizon: int | None
) -> None:
    records = [Record(3, TS, b"k", b"v" * 40), Record(4, TS + 1, None, None)]
    raw = encode_batch(
        records,
        compression=codec,
        timestamp_type=(TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME),
        max_timestamp=TS + 500 if log_append else None,
        is_transactional=transactional,
        producer_id=11 if transactional else -1,
        producer_epoch=2 if transactional else -1,
        base_sequence=0 if transactional else -1,
        delete_horizon_ms=horizon,
    )
    batch = only_batch(raw)
    assert batch.attributes == make_attributes(
        codec,
        TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME,
        transactional,
        False,
        horizon is not None,
    )
    assert batch.compression is codec
    assert (batch.timestamp_type is TimestampType.LOG_APPEND_TIME) == log_append
    assert batch.is_transactional == transactional
    assert not batch.is_control
    assert batch.has_delete_horizon == (horizon is not None)
    assert batch.records() == records


def test_control_bit_alone() -> None:
    record = Record(0, TS, encode_control_key(ControlRecordType.LEADER_CHANGE), b"\x00\x00")
    batch = only_batch(encode_batch([record], is_control=True))
    assert batch.is_control
    assert not batch.is_transactional
    assert batch.attributes == 0x20


def test_attribute_bits_8_to_15_are_ignored() -> None:
    # Kafka reads `(byte) getShort(21)`: the high byte carries nothing.
    base = encode_batch([Record(0, TS, b"k", b"v")], compression=CompressionType.GZIP)
    patched = bytearray(base)
    struct.pack_into(">H", patched, ATTRIBUTES_OFFSET, 0xFF00 | 0x19)  # gzip, txn, LAT
    struct.pack_into(">qhi", patched, 43, 5, 0, 0)  # give it producer fields
    batch = only_batch(recrc(patched))
    assert batch.compression is CompressionType.GZIP
    assert batch.is_transactional
    assert not batch.is_control
    assert not batch.has_delete_horizon
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.records() == [Record(0, TS, b"k", b"v")]


# --- empty batches, gaps, nulls, headers ------------------------------------------------------


def test_empty_batch_as_the_cleaner_writes_it() -> None:
    raw = encode_batch(
        [],
        base_offset=500,
        last_offset_delta=9,
        max_timestamp=TS + 42,
        producer_id=77,
        producer_epoch=3,
        base_sequence=100,
        partition_leader_epoch=4,
        is_transactional=True,
    )
    assert len(raw) == RECORD_BATCH_OVERHEAD
    batch = only_batch(raw)
    assert batch.batch_length == 49
    assert batch.records_count == 0
    assert batch.records() == []
    assert batch.base_timestamp == -1
    assert batch.max_timestamp == TS + 42
    assert batch.base_offset == 500
    assert batch.last_offset == 509
    assert batch.next_offset == 510
    assert batch.last_sequence == 109
    assert batch.producer_id == 77
    assert batch.producer_epoch == 3
    assert batch.partition_leader_epoch == 4
    assert batch.is_transactional
    assert not batch.has_delete_horizon
    assert batch.compression is CompressionType.NONE


def test_empty_batch_needs_base_offset_and_last_offset_delta() -> None:
    with pytest.raises(InvalidRecordError):
        encode_batch([], last_offset_delta=0)
    with pytest.raises(InvalidRecordError):
        encode_batch([], base_offset=0)


def test_offset_gaps_and_base_offset_below_first_record() -> None:
    # Compaction keeps baseOffset, so the first surviving record may have offsetDelta > 0.
    records = [Record(12, TS, b"a", b"1"), Record(15, TS, b"b", b"2"), Record(40, TS, b"c", b"3")]
    raw = encode_batch(records, base_offset=10, last_offset_delta=35)
    batch = only_batch(raw)
    assert batch.base_offset == 10
    assert batch.last_offset == 45
    assert batch.records_count == 3
    assert batch.records() == records
    # offsetDelta of the first record on disk is 2 (zig-zag 0x04).
    assert raw[RECORD_BATCH_OVERHEAD + 3] == 0x04


def test_default_last_offset_delta_is_the_last_records() -> None:
    records = [Record(7, TS, b"a", b"1"), Record(9, TS, b"b", b"2")]
    batch = only_batch(encode_batch(records))
    assert batch.base_offset == 7
    assert batch.last_offset_delta == 2


@pytest.mark.parametrize(
    "offsets",
    [[3, 3], [5, 4], [0, 1 << 31]],
    ids=["duplicate", "backwards", "delta-over-int32"],
)
def test_encode_rejects_bad_offsets(offsets: list[int]) -> None:
    with pytest.raises(InvalidRecordError):
        encode_batch([Record(o, TS, None, b"") for o in offsets])


def test_encode_rejects_record_below_base_offset_and_short_last_delta() -> None:
    with pytest.raises(InvalidRecordError):
        encode_batch([Record(3, TS, None, b"")], base_offset=4)
    with pytest.raises(InvalidRecordError):
        encode_batch([Record(3, TS, None, b""), Record(6, TS, None, b"")], last_offset_delta=2)


def test_negative_timestamp_deltas() -> None:
    records = [Record(0, TS, b"a", b""), Record(1, TS - 5_000, b"b", b""), Record(2, -1, None, b"")]
    batch = only_batch(encode_batch(records))
    assert batch.base_timestamp == TS
    assert batch.max_timestamp == TS
    assert batch.records() == records


def test_null_and_empty_keys_and_values_are_distinct() -> None:
    records = [
        Record(0, TS, None, None),
        Record(1, TS, b"", b""),
        Record(2, TS, None, b""),
        Record(3, TS, b"", None),
    ]
    decoded = only_batch(encode_batch(records)).records()
    assert decoded == records
    assert [(r.key is None, r.value is None) for r in decoded] == [
        (True, True),
        (False, False),
        (True, False),
        (False, True),
    ]


def test_headers_with_null_values_and_non_utf8_keys() -> None:
    raw_key = b"\xff\xfe-h\x80"
    key = raw_key.decode("utf-8", "surrogateescape")
    headers = (Header(key, None), Header("ünïcode", b""), Header("", b"\x00v"))
    record = Record(0, TS, b"k", b"v", headers)
    raw = encode_batch([record])
    assert raw_key in raw  # the key bytes are written as they were read
    assert "ünïcode".encode() in raw
    batch = only_batch(raw)
    (decoded,) = batch.records()
    assert decoded.headers == headers
    assert decoded.headers[0].value is None
    assert decoded.headers[0].key_bytes() == raw_key
    assert decoded.headers[2].value == b"\x00v"
    # Decode then encode is lossless.
    assert encode_batch(batch.records()) == raw


def test_record_attribute_byte_is_kept() -> None:
    record = Record(0, TS, b"k", b"v", attributes=0x5A)
    raw = encode_batch([record])
    assert raw[RECORD_BATCH_OVERHEAD + 1] == 0x5A
    assert only_batch(raw).records() == [record]


def test_offsets_and_leader_epoch_are_assigned_in_place_without_recrc() -> None:
    raw = bytearray(EXAMPLE_A)
    set_base_offset(raw, 1234)
    set_partition_leader_epoch(raw, 17)
    batch = only_batch(bytes(raw))
    assert batch.crc == 0x00BE233D
    assert batch.base_offset == 1234
    assert batch.partition_leader_epoch == 17
    assert [r.offset for r in batch.records()] == [1234, 1235]


# --- hostile input: structure broken, CRC recomputed so it is valid ---------------------------

PREFIX = encode_batch([Record(0, TS, b"p", b"q")])
TEMPLATE = encode_batch([Record(1, TS, b"k", b"v")])  # one record: 10 00 00 00 02 6b 02 76 00
GOOD_RECORD = encode_record(0, 0, b"k", b"v")
assert bytes.fromhex("10000000026b027600") == GOOD_RECORD


def hostile_cases() -> list[tuple[str, bytes]]:
    """Batches whose CRC is right but whose records section breaks an invariant."""
    gzip_attr = int(CompressionType.GZIP)
    body_no_headers = b"\x00\x00\x00\x01\x01"  # attr, tsDelta 0, offDelta 0, key null, value null
    return [
        ("record length past end", with_section(TEMPLATE, b"\x40" + GOOD_RECORD[1:])),
        ("negative record length", with_section(TEMPLATE, b"\x03" + GOOD_RECORD[1:])),
        ("zero record length", with_section(TEMPLATE, b"\x00")),
        (
            "negative header count",
            with_section(TEMPLATE, b"\x0c" + body_no_headers + b"\x01"),
        ),
        (
            "header count past record",
            with_section(TEMPLATE, b"\x0c" + body_no_headers + b"\x14"),
        ),
        (
            "negative header key length",
            with_section(TEMPLATE, b"\x10" + body_no_headers + b"\x02\x01\x00"),
        ),
        ("leftover bytes after recordsCount", with_section(TEMPLATE, GOOD_RECORD + b"\x00")),
        (
            "second whole record beyond recordsCount",
            with_section(TEMPLATE, GOOD_RECORD + GOOD_RECORD),
        ),
        ("recordsCount above the records", with_section(TEMPLATE, GOOD_RECORD, records_count=2)),
        ("recordsCount absurd", with_section(TEMPLATE, GOOD_RECORD, records_count=INT32_MAX)),
        *(
            (f"codec id {codec}", with_section(TEMPLATE, GOOD_RECORD, attributes=codec))
            for codec in (5, 6, 7)
        ),
        (
            "over-long length varint",
            with_section(TEMPLATE, b"\x90\x80\x80\x80\x80\x00" + GOOD_RECORD[1:]),
        ),
        (
            "over-long timestamp varlong",
            with_section(TEMPLATE, b"\x24\x00" + b"\x80" * 10 + b"\x00" + GOOD_RECORD[3:]),
        ),
        (
            "truncated varint at the end of the record",
            with_section(TEMPLATE, b"\x08\x00\x00\x00\x80"),
        ),
        (
            "record length longer than its fields",
            with_section(TEMPLATE, b"\x12" + GOOD_RECORD[1:] + b"\x00"),
        ),
        (
            "key length past record",
            with_section(TEMPLATE, b"\x10\x00\x00\x00\x0a" + GOOD_RECORD[5:]),
        ),
        (
            "key length -2",
            with_section(TEMPLATE, b"\x10\x00\x00\x00\x03" + GOOD_RECORD[5:]),
        ),
        (
            "value length -3",
            with_section(TEMPLATE, b"\x10\x00\x00\x00\x02k\x05v\x00"),
        ),
        ("gzip garbage", with_section(TEMPLATE, b"not a gzip stream", attributes=gzip_attr)),
        (
            "gzip stream truncated",
            with_section(TEMPLATE, compress(CompressionType.GZIP, GOOD_RECORD)[:-3], attributes=1),
        ),
        (
            "leftover bytes inside a compressed section",
            with_section(
                TEMPLATE,
                compress(CompressionType.ZSTD, GOOD_RECORD + b"\x00"),
                attributes=int(CompressionType.ZSTD),
            ),
        ),
    ]


@pytest.mark.parametrize(("name", "hostile"), hostile_cases(), ids=[c[0] for c in hostile_cases()])
@pytest.mark.parametrize("base_position", [0, 4096])
def test_hostile_records_raise_corrupt_with_batch_position(
    name: str, hostile: bytes, base_position: int
) -> None:
    buf = PREFIX + hostile
    batches, end = read_batches(buf, base_position=base_position)
    # The frame and CRC are fine, so shallow iteration (as Kafka's) accepts the batch ...
    assert end.kind is EndKind.CLEAN, (name, end)
    assert len(batches) == 2
    assert batches[1].is_valid()
    assert batches[0].records() == [Record(0, TS, b"p", b"q")]
    # ... and decoding its records reports corruption at the batch's position.
    with pytest.raises(CorruptRecordError) as info:
        batches[1].records()
    assert info.value.position == base_position + len(PREFIX), name


def test_negative_records_count_is_caught_by_the_reader() -> None:
    hostile = with_section(TEMPLATE, GOOD_RECORD, records_count=-1)
    batches, end = read_batches(PREFIX + hostile)
    assert len(batches) == 1
    assert end.kind is EndKind.CORRUPT
    assert end.position == len(PREFIX)


def test_negative_last_offset_delta_is_caught_by_the_reader() -> None:
    hostile = bytearray(TEMPLATE)
    struct.pack_into(">i", hostile, 23, -1)
    batches, end = read_batches(PREFIX + recrc(hostile))
    assert len(batches) == 1
    assert end.kind is EndKind.CORRUPT
    assert end.position == len(PREFIX)


def test_ensure_valid_names_position_on_crc_mismatch() -> None:
    damaged = bytearray(PREFIX + TEMPLATE)
    damaged[-1] ^= 0x01
    batch = parse_batch_header(damaged, len(PREFIX))
    assert not batch.is_valid()
    with pytest.raises(CorruptRecordError, match="CRC") as info:
        batch.ensure_valid()
    assert info.value.position == len(PREFIX)
