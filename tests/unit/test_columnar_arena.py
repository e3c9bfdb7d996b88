"""``scan_columns`` over compressed batches: the arena of decompressed sections.

The arena holds a copy of the input only when some returned batch is uncompressed, then each
decompressed records section in buffer order; it reserves 4x the compressed bytes and grows
by blocks past that. Planning (decompressing, checking record counts) stops at the first
batch that cannot be planned, and errors are still raised in buffer order.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import pytest

from seglog.errors import CorruptRecordError
from seglog.format.batch import assemble_batch, encode_batch, encode_record
from seglog.format.columnar import RecordColumns, scan_columns
from seglog.format.compression import CompressionType, decompress
from seglog.format.reader import read_batches
from seglog.format.records import Record

TS = 1_700_000_000_000
CODECS = [
    CompressionType.GZIP,
    CompressionType.SNAPPY,
    CompressionType.LZ4,
    CompressionType.ZSTD,
]
BOTH = pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "twin"])


def rows(columns: RecordColumns) -> list[tuple[Any, ...]]:
    return [
        (int(columns.offset[i]), int(columns.timestamp[i]), columns.key(i), columns.value(i))
        for i in range(len(columns))
    ]


def reference(data: bytes) -> list[tuple[Any, ...]]:
    batches, _ = read_batches(data)
    return [(r.offset, r.timestamp, r.key, r.value) for b in batches for r in b.records()]


def batch(first_offset: int, values: list[bytes | None], codec: CompressionType) -> bytes:
    records = [
        Record(first_offset + i, TS + i, b"key-%d" % (first_offset + i), value)
        for i, value in enumerate(values)
    ]
    return encode_batch(records, compression=codec)


def section_of(encoded: bytes, codec: CompressionType) -> bytes:
    """The decompressed records section of one encoded batch."""
    return decompress(codec, encoded[61:])


def raw_batch(section: bytes, *, base_offset: int, codec: CompressionType, count: int) -> bytes:
    """A CRC-valid batch around any section bytes and record count."""
    return assemble_batch(
        section,
        base_offset=base_offset,
        partition_leader_epoch=0,
        attributes=int(codec),
        last_offset_delta=max(count - 1, 0),
        base_timestamp=TS,
        max_timestamp=TS,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        records_count=count,
    )


@BOTH
@pytest.mark.parametrize("codec", CODECS)
def test_all_compressed_batches_need_no_copy_of_the_input(
    codec: CompressionType, use_numba: bool
) -> None:
    batches = [batch(3 * i, [b"value %d" % i, None, b"x" * 40], codec) for i in range(3)]
    data = b"".join(batches)
    columns = scan_columns(data, use_numba=use_numba)
    assert not columns.is_zero_copy
    assert columns.data.tobytes() == b"".join(section_of(b, codec) for b in batches)
    assert rows(columns) == reference(data)
    assert columns.batches.record_start.tolist() == [0, 3, 6, 9]


@BOTH
@pytest.mark.parametrize("codec", CODECS)
def test_arena_grows_past_its_first_guess(codec: CompressionType, use_numba: bool) -> None:
    # Zero-filled values compress 50-1000x: far above the 4x reserved, so blocks are added.
    plain = batch(0, [b"plain", None], CompressionType.NONE)
    packed = [batch(2 + 2 * i, [bytes(30_000), bytes(i)], codec) for i in range(5)]
    data = plain + b"".join(packed)
    columns = scan_columns(data, use_numba=use_numba)
    sections = [section_of(b, codec) for b in packed]
    assert sum(map(len, sections)) > 4 * sum(len(b) - 61 for b in packed)
    # The input first (an uncompressed batch is returned), then each section in order.
    assert columns.data.tobytes() == data + b"".join(sections)
    assert rows(columns) == reference(data)
    assert columns.key_position[0] == plain.index(b"key-0")


def test_legacy_only_arena_holds_keys_and_values() -> None:
    def legacy(offset: int, key: bytes, value: bytes) -> bytes:
        body = bytes([1, 0]) + struct.pack(">q", TS)
        body += struct.pack(">i", len(key)) + key + struct.pack(">i", len(value)) + value
        message = struct.pack(">I", zlib.crc32(body)) + body
        return struct.pack(">qi", offset, len(message)) + message

    data = b"".join(legacy(i, b"k%d" % i, b"v" * i) for i in range(40))
    columns = scan_columns(data)
    assert [columns.key(i) for i in range(40)] == [b"k%d" % i for i in range(40)]
    assert [columns.value(i) for i in range(40)] == [b"v" * i for i in range(40)]
    assert columns.data.tobytes() == b"".join(b"k%d" % i + b"v" * i for i in range(40))


def impossible_count_batch(base_offset: int) -> bytes:
    return raw_batch(
        encode_record(0, 0, b"k", b"v"),
        base_offset=base_offset,
        codec=CompressionType.NONE,
        count=1000,
    )


@BOTH
def test_an_undecodable_stream_before_an_impossible_count_is_named(use_numba: bool) -> None:
    good = batch(0, [b"a"], CompressionType.ZSTD)
    broken = raw_batch(b"\x00not zstd", base_offset=1, codec=CompressionType.ZSTD, count=1)
    data = good + broken + impossible_count_batch(2000)
    with pytest.raises(CorruptRecordError, match="zstd") as caught:
        scan_columns(data, base_position=7, use_numba=use_numba)
    assert caught.value.position == 7 + len(good)


@BOTH
def test_an_impossible_count_before_an_undecodable_stream_is_named(use_numba: bool) -> None:
    good = batch(0, [b"a"], CompressionType.ZSTD)
    broken = raw_batch(b"\x00not zstd", base_offset=3000, codec=CompressionType.ZSTD, count=1)
    data = good + impossible_count_batch(1) + broken
    with pytest.raises(CorruptRecordError, match="cannot fit") as caught:
        scan_columns(data, use_numba=use_numba)
    assert caught.value.position == len(good)


@BOTH
def test_a_malformed_record_before_a_failed_plan_is_named(use_numba: bool) -> None:
    good = batch(0, [b"a"], CompressionType.LZ4)
    # An uncompressed batch whose one record leaves a byte over, then an lz4 batch whose
    # decompressed section cannot hold its record count: the earlier batch is named.
    malformed = raw_batch(
        encode_record(0, 0, b"k", b"v") + b"\x00",
        base_offset=1,
        codec=CompressionType.NONE,
        count=1,
    )
    packed = batch(2, [b"b"], CompressionType.LZ4)
    too_many = raw_batch(packed[61:], base_offset=2, codec=CompressionType.LZ4, count=1000)
    data = good + malformed + too_many
    with pytest.raises(CorruptRecordError, match="bytes left") as caught:
        scan_columns(data, use_numba=use_numba)
    assert caught.value.position == len(good)
    with pytest.raises(CorruptRecordError, match="cannot fit") as caught:
        scan_columns(good + too_many, use_numba=use_numba)
    assert caught.value.position == len(good)


def test_a_bad_crc_stops_before_any_decompression() -> None:
    good = batch(0, [b"a"], CompressionType.GZIP)
    damaged = bytearray(batch(1, [b"b"], CompressionType.GZIP))
    damaged[-3] ^= 0xFF  # inside the compressed stream: the CRC no longer matches
    after = raw_batch(b"\x00not gzip", base_offset=2, codec=CompressionType.GZIP, count=1)
    data = good + bytes(damaged) + after
    columns = scan_columns(data)
    assert rows(columns) == [(0, TS, b"key-0", b"a")]
    assert columns.end == read_batches(data)[1]
    assert columns.data.tobytes() == section_of(good, CompressionType.GZIP)
