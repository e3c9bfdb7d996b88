"""Legacy message sets v0/v1, read only (spec §4), checked against kafka-python as an oracle."""

from __future__ import annotations

import struct
import warnings
from collections.abc import Sequence

import lz4.frame
import pytest

from seglog.errors import CorruptRecordError
from seglog.format.batch import RecordBatch, encode_batch
from seglog.format.compression import CompressionType, compress
from seglog.format.crc import crc32_ieee
from seglog.format.legacy import LegacyBatch
from seglog.format.reader import EndKind, read_batches
from seglog.format.records import Record, TimestampType

with warnings.catch_warnings():
    # kafka-python's protocol schemas use deprecated importlib.resources calls on import.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords

TS = 1_700_000_000_000
GZIP, SNAPPY, LZ4 = 1, 2, 3
LOG_APPEND_TIME_BIT = 0x08

Row = tuple[int, int, bytes | None, bytes | None]  # offset, timestamp, key, value


# --- kafka-python as the oracle ---------------------------------------------------------------
# It needs python-snappy (snappy) and xxhash (magic-0 lz4): both come with the test extra.


def kp_messages(magic: int, codec: int, rows: Sequence[Row]) -> bytes:
    """Entries built by kafka-python: plain messages, or one compressed wrapper at offset 0."""
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 24)
    for offset, timestamp, key, value in rows:
        assert builder.append(offset, timestamp=timestamp, key=key, value=value) is not None
    return bytes(builder.build())


def set_offset(entry: bytes, offset: int) -> bytes:
    """Assign the entry offset in place, as a broker does (outside the CRC)."""
    out = bytearray(entry)
    struct.pack_into(">q", out, 0, offset)
    return bytes(out)


def patch_wrapper(
    entry: bytes, *, attributes: int | None = None, timestamp: int | None = None
) -> bytes:
    """Change a v1 wrapper's attributes/timestamp and recompute its CRC-32."""
    out = bytearray(entry)
    if attributes is not None:
        out[17] = attributes
    if timestamp is not None:
        struct.pack_into(">q", out, 18, timestamp)
    struct.pack_into(">I", out, 12, crc32_ieee(memoryview(out)[16:]))
    return bytes(out)


def oracle_rows(buf: bytes) -> list[Row]:
    """What kafka-python decodes from ``buf``: (offset, timestamp, key, value) per record."""
    rows: list[Row] = []
    records = MemoryRecords(buf)
    while records.has_next():
        batch = records.next_batch()
        for r in batch:
            ts = -1 if r.timestamp is None else r.timestamp
            rows.append((r.offset, ts, r.key, r.value))
    return rows


def our_rows(buf: bytes) -> list[Row]:
    batches, end = read_batches(buf)
    assert end.kind is EndKind.CLEAN, end
    return [(r.offset, r.timestamp, r.key, r.value) for b in batches for r in b.records()]


def only_entry(buf: bytes) -> LegacyBatch:
    batches, end = read_batches(buf)
    assert end.kind is EndKind.CLEAN, end
    assert len(batches) == 1
    entry = batches[0]
    assert isinstance(entry, LegacyBatch)
    return entry


ROWS: list[Row] = [
    (0, TS, b"k0", b"v0"),
    (1, TS + 7, None, b"null key"),
    (2, TS - 3, b"tombstone", None),
    (3, TS + 1, None, None),
    (4, TS + 2, b"", b""),
]


# --- uncompressed ---------------------------------------------------------------------------


@pytest.mark.parametrize("magic", [0, 1])
def test_uncompressed_messages_match_kafka_python(magic: int) -> None:
    rows = [(100 + o, ts, k, v) for o, ts, k, v in ROWS]
    buf = kp_messages(magic, 0, rows)
    batches, end = read_batches(buf)
    assert end.kind is EndKind.CLEAN
    assert len(batches) == len(rows)
    position = 0
    for entry, (offset, timestamp, key, value) in zip(batches, rows, strict=True):
        assert isinstance(entry, LegacyBatch)
        assert entry.position == position
        assert entry.magic == magic
        assert entry.offset == entry.base_offset == entry.last_offset == offset
        assert entry.next_offset == offset + 1
        assert entry.compression is CompressionType.NONE
        assert entry.is_valid()
        assert entry.records_count == 1
        expected_ts = timestamp if magic == 1 else -1
        assert entry.timestamp == entry.max_timestamp == expected_ts
        assert entry.timestamp_type is (
            TimestampType.CREATE_TIME if magic == 1 else TimestampType.NO_TIMESTAMP_TYPE
        )
        assert entry.records() == [Record(offset, expected_ts, key, value)]
        assert entry.size_in_bytes == 12 + (14 if magic == 0 else 22) + len(key or b"") + len(
            value or b""
        )
        assert not entry.is_transactional
        assert not entry.is_control
        assert entry.producer_id == -1
        position += entry.size_in_bytes
    assert position == len(buf)
    assert our_rows(buf) == oracle_rows(buf)


def test_null_key_and_value_are_distinct_from_empty() -> None:
    buf = kp_messages(1, 0, ROWS)
    records = [r for b in read_batches(buf)[0] for r in b.records()]
    assert [(r.key, r.value) for r in records] == [(k, v) for _, _, k, v in ROWS]
    assert records[2].is_tombstone
    assert records[3].key is None
    assert records[4].key == b""


# --- compressed wrappers --------------------------------------------------------------------


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4], ids=["gzip", "snappy", "lz4"])
def test_v1_compressed_wrapper_uses_relative_inner_offsets(codec: int) -> None:
    # The producer writes relative offsets 0..n-1; the broker sets the wrapper offset to the
    # absolute offset of the last inner message.
    wrapper = set_offset(kp_messages(1, codec, ROWS), 504)
    entry = only_entry(wrapper)
    assert entry.magic == 1
    assert entry.compression is CompressionType(codec)
    assert entry.is_valid()
    assert entry.offset == entry.last_offset == 504
    assert entry.base_offset == 500
    assert entry.records_count == len(ROWS)
    assert entry.key is None
    records = entry.records()
    assert [r.offset for r in records] == [500, 501, 502, 503, 504]
    assert [(r.timestamp, r.key, r.value) for r in records] == [(t, k, v) for _, t, k, v in ROWS]
    assert our_rows(wrapper) == oracle_rows(wrapper)


def test_v1_relative_offsets_with_gaps() -> None:
    # absolute = wrapperOffset - lastInnerRelative + innerRelative
    rows = [(0, TS, b"a", b"1"), (2, TS, b"b", b"2"), (5, TS, b"c", b"3")]
    wrapper = set_offset(kp_messages(1, GZIP, rows), 1005)
    assert [r.offset for r in only_entry(wrapper).records()] == [1000, 1002, 1005]
    assert our_rows(wrapper) == oracle_rows(wrapper)


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4], ids=["gzip", "snappy", "lz4"])
def test_v0_compressed_wrapper_uses_absolute_inner_offsets(codec: int) -> None:
    # lz4 here carries Kafka's broken magic-0 header checksum (kafka-python writes it too).
    rows = [(700 + i, -1, k, v) for i, (_, _, k, v) in enumerate(ROWS)]
    wrapper = set_offset(kp_messages(0, codec, rows), 704)
    entry = only_entry(wrapper)
    assert entry.magic == 0
    assert entry.timestamp_type is TimestampType.NO_TIMESTAMP_TYPE
    assert entry.base_offset == 700
    assert entry.last_offset == 704
    assert [(r.offset, r.timestamp, r.key, r.value) for r in entry.records()] == rows
    assert our_rows(wrapper) == oracle_rows(wrapper)


def test_v0_lz4_wrapper_really_has_the_broken_header_checksum() -> None:
    wrapper = kp_messages(0, LZ4, [(0, -1, b"k", b"v" * 100)])
    value = only_entry(wrapper).value
    assert value is not None
    with pytest.raises(RuntimeError, match="headerChecksum"):
        lz4.frame.decompress(value)


def test_v1_create_time_wrapper_keeps_inner_timestamps() -> None:
    wrapper = patch_wrapper(set_offset(kp_messages(1, SNAPPY, ROWS), 4), timestamp=TS + 7)
    entry = only_entry(wrapper)
    assert entry.timestamp_type is TimestampType.CREATE_TIME
    assert entry.max_timestamp == TS + 7
    assert [r.timestamp for r in entry.records()] == [t for _, t, _, _ in ROWS]
    assert our_rows(wrapper) == oracle_rows(wrapper)


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4], ids=["gzip", "snappy", "lz4"])
def test_v1_log_append_time_wrapper_overrides_inner_timestamps(codec: int) -> None:
    append_time = TS + 99_999
    wrapper = patch_wrapper(
        set_offset(kp_messages(1, codec, ROWS), 4),
        attributes=codec | LOG_APPEND_TIME_BIT,
        timestamp=append_time,
    )
    entry = only_entry(wrapper)
    assert entry.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert entry.max_timestamp == append_time
    records = entry.records()
    assert [r.timestamp for r in records] == [append_time] * len(ROWS)
    assert [entry.reported_timestamp(r) for r in records] == [append_time] * len(ROWS)
    assert our_rows(wrapper) == oracle_rows(wrapper)


def test_v1_uncompressed_log_append_time_message() -> None:
    message = patch_wrapper(kp_messages(1, 0, [(9, TS, b"k", b"v")]), attributes=0x08)
    entry = only_entry(message)
    assert entry.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert entry.records() == [Record(9, TS, b"k", b"v")]


def test_several_wrappers_and_plain_messages_in_one_buffer() -> None:
    first = set_offset(kp_messages(1, GZIP, ROWS[:3]), 2)
    plain = kp_messages(1, 0, [(3, TS, b"p", b"q")])
    second = set_offset(kp_messages(1, LZ4, ROWS[:2]), 5)
    buf = first + plain + second
    batches, end = read_batches(buf)
    assert end.kind is EndKind.CLEAN
    assert [b.position for b in batches] == [0, len(first), len(first) + len(plain)]
    assert [r.offset for b in batches for r in b.records()] == [0, 1, 2, 3, 4, 5]
    assert our_rows(buf) == oracle_rows(buf)


# --- v1 -> v2 in one buffer -------------------------------------------------------------------


def test_buffer_switching_from_legacy_to_v2_decodes_in_order() -> None:
    v0 = kp_messages(0, 0, [(0, -1, b"a", b"0")])
    v1 = set_offset(kp_messages(1, GZIP, [(0, TS, b"b", b"1"), (1, TS + 1, b"c", b"2")]), 2)
    v1_plain = kp_messages(1, 0, [(3, TS + 2, None, b"3")])
    v2 = encode_batch(
        [Record(4, TS + 3, b"d", b"4"), Record(5, TS + 4, b"e", None)],
        compression=CompressionType.ZSTD,
        partition_leader_epoch=0,
    )
    buf = v0 + v1 + v1_plain + v2
    batches, end = read_batches(buf, base_position=10)
    assert end.kind is EndKind.CLEAN
    assert end.position == 10 + len(buf)
    assert [type(b) for b in batches] == [LegacyBatch, LegacyBatch, LegacyBatch, RecordBatch]
    assert [b.magic for b in batches] == [0, 1, 1, 2]
    assert [b.position for b in batches] == [
        10,
        10 + len(v0),
        10 + len(v0) + len(v1),
        10 + len(v0) + len(v1) + len(v1_plain),
    ]
    rows = [(r.offset, r.timestamp, r.key, r.value) for b in batches for r in b.records()]
    assert rows == [
        (0, -1, b"a", b"0"),
        (1, TS, b"b", b"1"),
        (2, TS + 1, b"c", b"2"),
        (3, TS + 2, None, b"3"),
        (4, TS + 3, b"d", b"4"),
        (5, TS + 4, b"e", None),
    ]
    assert rows == oracle_rows(buf)


def test_every_prefix_of_a_mixed_buffer_is_whole_entries_then_torn() -> None:
    parts = [
        kp_messages(0, 0, [(0, -1, b"a", b"0")]),
        set_offset(kp_messages(1, SNAPPY, [(0, TS, b"b", b"1"), (1, TS, b"c", b"2")]), 2),
        encode_batch([Record(3, TS, b"d", b"4")]),
    ]
    buf = b"".join(parts)
    ends = [sum(len(p) for p in parts[: i + 1]) for i in range(len(parts))]
    for cut in range(len(buf) + 1):
        batches, end = read_batches(buf[:cut])
        whole = [e for e in ends if e <= cut]
        assert len(batches) == len(whole)
        if cut == 0 or cut in ends:
            assert end.kind is EndKind.CLEAN
        else:
            assert end.kind is EndKind.TORN_TAIL
            assert end.position == (whole[-1] if whole else 0)


# --- damage -----------------------------------------------------------------------------------


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [0, GZIP], ids=["plain", "gzip"])
def test_bad_crc32_is_corrupt_at_its_position(magic: int, codec: int) -> None:
    good = kp_messages(magic, 0, [(0, TS, b"k", b"v")])
    rows: list[Row] = [(0, TS, b"x", b"y"), (1, TS, b"z", b"w")] if codec else [(5, TS, b"x", b"y")]
    victim = set_offset(kp_messages(magic, codec, rows), 5)
    damaged = bytearray(good + victim)
    damaged[-1] ^= 0x01
    batches, end = read_batches(bytes(damaged), base_position=50)
    assert len(batches) == 1
    assert end.kind is EndKind.CORRUPT
    assert end.position == 50 + len(good)
    assert "CRC" in end.reason
    unchecked, end = read_batches(bytes(damaged), verify_crc=False)
    assert end.kind is EndKind.CLEAN
    assert not unchecked[1].is_valid()
    with pytest.raises(CorruptRecordError) as info:
        unchecked[1].ensure_valid()
    assert info.value.position == len(good)


def hand_message(
    magic: int,
    *,
    offset: int = 0,
    attributes: int = 0,
    timestamp: int = TS,
    key: bytes | None = b"k",
    value: bytes | None = b"v",
    size_delta: int = 0,
    body: bytes | None = None,
) -> bytes:
    """A legacy entry written by hand (CRC correct), for shapes no writer produces."""
    if body is None:
        body = bytes((magic, attributes))
        if magic == 1:
            body += struct.pack(">q", timestamp)
        for field in (key, value):
            if field is None:
                body += struct.pack(">i", -1)
            else:
                body += struct.pack(">i", len(field)) + field
    message = struct.pack(">I", crc32_ieee(body)) + body
    return struct.pack(">qi", offset, len(message) + size_delta) + message


def test_hand_built_messages_match_kafka_python() -> None:
    for magic in (0, 1):
        rows = [(3, TS if magic else -1, b"key", None)]
        assert hand_message(magic, offset=3, key=b"key", value=None) == kp_messages(magic, 0, rows)


def test_compressed_wrapper_built_by_hand() -> None:
    # v1 wrapper over hand-built inner messages with relative offsets 0, 1, 2.
    inner = b"".join(
        hand_message(1, offset=i, timestamp=TS + i, key=None, value=b"%d" % i) for i in range(3)
    )
    wrapper = hand_message(
        1,
        offset=42,
        attributes=GZIP,
        timestamp=TS + 2,
        key=None,
        value=compress(CompressionType.GZIP, inner),
    )
    records = only_entry(wrapper).records()
    assert [(r.offset, r.timestamp, r.value) for r in records] == [
        (40, TS, b"0"),
        (41, TS + 1, b"1"),
        (42, TS + 2, b"2"),
    ]
    assert our_rows(wrapper) == oracle_rows(wrapper)


@pytest.mark.parametrize(
    ("name", "entry"),
    [
        (
            "key length -2",
            hand_message(1, body=b"\x01\x00" + bytes(8) + b"\xff\xff\xff\xfe" + bytes(4)),
        ),
        (
            "key past message",
            hand_message(1, body=b"\x01\x00" + bytes(8) + b"\x00\x00\x00\x09k" + bytes(4)),
        ),
        ("bytes after value", hand_message(0, body=b"\x00\x00" + b"\xff" * 8 + b"extra")),
        ("v1 shorter than its minimum", hand_message(1, body=b"\x01\x00" + b"\xff" * 10)),
    ],
)
def test_malformed_message_is_corrupt_at_its_position(name: str, entry: bytes) -> None:
    good = kp_messages(1, 0, [(0, TS, b"k", b"v")])
    batches, end = read_batches(good + set_offset(entry, 1))
    assert len(batches) == 1, name
    assert end.kind is EndKind.CORRUPT, name
    assert end.position == len(good), name


@pytest.mark.parametrize(
    ("name", "wrapper"),
    [
        ("null wrapper value", hand_message(1, attributes=GZIP, key=None, value=None)),
        ("codec 4 is not a legacy codec", hand_message(1, attributes=4, key=None, value=b"x")),
        ("codec 7", hand_message(0, attributes=7, key=None, value=b"x")),
        (
            "garbage compressed value",
            hand_message(1, attributes=SNAPPY, key=None, value=b"\x82SNAPPY\x00" + bytes(9)),
        ),
        (
            "nested compression",
            hand_message(
                1,
                attributes=GZIP,
                key=None,
                value=compress(
                    CompressionType.GZIP,
                    hand_message(
                        1, attributes=GZIP, key=None, value=compress(CompressionType.GZIP, b"")
                    ),
                ),
            ),
        ),
        (
            "truncated inner message",
            hand_message(
                1,
                attributes=GZIP,
                key=None,
                value=compress(CompressionType.GZIP, hand_message(1)[:-1]),
            ),
        ),
    ],
)
def test_broken_wrapper_raises_corrupt_with_position(name: str, wrapper: bytes) -> None:
    good = kp_messages(1, 0, [(0, TS, b"k", b"v")])
    batches, end = read_batches(good + set_offset(wrapper, 1), base_position=7)
    assert end.kind is EndKind.CLEAN, name  # frame and CRC are fine: shallow iteration passes
    assert len(batches) == 2
    with pytest.raises(CorruptRecordError) as info:
        batches[1].records()
    assert info.value.position == 7 + len(good), name
