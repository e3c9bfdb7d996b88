"""Compression codecs with Kafka's exact framing (spec §3.4)."""

from __future__ import annotations

import contextlib
import gzip
import os
import struct
import zlib

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog.errors import CorruptRecordError, UnsupportedCodecError
from seglog.format.compression import (
    CompressionType,
    compress,
    decompress,
    max_compressed_size,
)

CODECS = [c for c in CompressionType if c is not CompressionType.NONE]
# Text-like data that compresses, long enough to span several snappy (32 KiB) and lz4 (64 KiB)
# blocks, and random data that does not compress at all.
TEXTISH = b"".join(b"record-%06d:value=%s;" % (i, b"x" * (i % 37)) for i in range(6000))
RANDOM = os.urandom(150_000)


def xxh32(data: bytes) -> int:
    """xxHash32 (seed 0) from an independent source: an LZ4 frame's content checksum."""
    frame = lz4.frame.compress(data, content_checksum=True, store_size=False)
    (checksum,) = struct.unpack("<I", frame[-4:])
    return int(checksum)


def test_xxh32_oracle_matches_published_vectors() -> None:
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456


# --- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", list(CompressionType))
@pytest.mark.parametrize(
    "data",
    [b"", b"x", TEXTISH, RANDOM, bytes(200_000)],
    ids=["empty", "one-byte", "textish", "random", "zeros"],
)
def test_round_trip(codec: CompressionType, data: bytes) -> None:
    compressed = compress(codec, data)
    assert decompress(codec, compressed) == data
    assert decompress(codec, memoryview(compressed)) == data
    assert decompress(codec, bytearray(compressed)) == data


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(list(CompressionType)), st.binary(max_size=3000), st.integers(1, 9))
def test_round_trip_property(codec: CompressionType, data: bytes, level: int) -> None:
    assert decompress(codec, compress(codec, data)) == data
    assert decompress(codec, compress(codec, data, level)) == data


@pytest.mark.parametrize("codec", list(CompressionType))
def test_max_compressed_size_bounds_incompressible_input(codec: CompressionType) -> None:
    sizes = [*range(0, 70), 1000, 32767, 32768, 32769, 65536, 65537, 131071, 131072, 150_000]
    levels: list[int | None] = [None]
    if codec is CompressionType.GZIP:
        levels += [0, 1, 9]
    elif codec is CompressionType.LZ4:
        levels += [1, 16]
    elif codec is CompressionType.ZSTD:
        levels += [1, 19]
    for size in sizes:
        bound = max_compressed_size(codec, size)
        assert bound >= size
        for level in levels:
            assert len(compress(codec, RANDOM[:size], level)) <= bound, (size, level)
    assert max_compressed_size(CompressionType.NONE, 12345) == 12345


def test_compression_is_deterministic() -> None:
    # Re-encoding a decoded batch must give the same bytes, so output cannot depend on time.
    for codec in CompressionType:
        assert compress(codec, TEXTISH) == compress(codec, TEXTISH)


def test_codec_ids_and_names() -> None:
    assert [int(c) for c in CompressionType] == [0, 1, 2, 3, 4]
    assert [c.name_in_kafka for c in CompressionType] == ["none", "gzip", "snappy", "lz4", "zstd"]
    for codec in CompressionType:
        assert CompressionType.from_id(int(codec)) is codec
        assert CompressionType.from_name(codec.name_in_kafka) is codec
    assert CompressionType.from_name(" LZ4 ") is CompressionType.LZ4
    for bad_id in (5, 6, 7, -1):
        with pytest.raises(UnsupportedCodecError):
            CompressionType.from_id(bad_id)
    with pytest.raises(UnsupportedCodecError):
        CompressionType.from_name("producer")


# --- gzip ---------------------------------------------------------------------------------------


def test_gzip_is_rfc1952_and_reads_other_writers() -> None:
    compressed = compress(CompressionType.GZIP, TEXTISH)
    assert compressed[:3] == b"\x1f\x8b\x08"  # gzip magic + deflate
    assert gzip.decompress(compressed) == TEXTISH
    # What Java's GZIPOutputStream (or any gzip writer) produces decodes.
    for level in (1, 9):
        assert decompress(CompressionType.GZIP, gzip.compress(TEXTISH, level)) == TEXTISH
    assert compress(CompressionType.GZIP, TEXTISH, level=-1) == compress(
        CompressionType.GZIP, TEXTISH
    )


def test_gzip_concatenated_members() -> None:
    members = gzip.compress(b"first;") + gzip.compress(b"") + gzip.compress(b"second")
    assert decompress(CompressionType.GZIP, members) == b"first;second"


def test_gzip_trailing_garbage_after_a_member_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.GZIP, gzip.compress(b"data") + b"\x00garbage")


# --- snappy (xerial framing) ------------------------------------------------------------------

XERIAL_HEADER = bytes.fromhex("82534e41505059000000000100000001")


def xerial_blocks(stream: bytes) -> list[bytes]:
    """The raw snappy blocks of a xerial stream."""
    blocks = []
    pos = 16
    while pos < len(stream):
        (length,) = struct.unpack_from(">i", stream, pos)
        blocks.append(stream[pos + 4 : pos + 4 + length])
        pos += 4 + length
    assert pos == len(stream)
    return blocks


def test_snappy_xerial_header_and_block_sizes() -> None:
    stream = compress(CompressionType.SNAPPY, TEXTISH)
    assert stream[:16] == XERIAL_HEADER
    assert stream[:8] == b"\x82SNAPPY\x00"
    blocks = [bytes(cramjam.snappy.decompress_raw(b)) for b in xerial_blocks(stream)]
    assert b"".join(blocks) == TEXTISH
    assert len(blocks) == -(-len(TEXTISH) // 32768)
    assert all(len(b) == 32768 for b in blocks[:-1])
    assert 0 < len(blocks[-1]) <= 32768


def test_snappy_empty_input_is_the_header_alone() -> None:
    assert compress(CompressionType.SNAPPY, b"") == XERIAL_HEADER
    assert decompress(CompressionType.SNAPPY, XERIAL_HEADER) == b""


def test_snappy_raw_unframed_block_is_accepted() -> None:
    raw = bytes(cramjam.snappy.compress_raw(TEXTISH))
    assert decompress(CompressionType.SNAPPY, raw) == TEXTISH


def test_snappy_xerial_with_other_header_versions_is_accepted() -> None:
    # Old writers (and some non-Java producers) put other numbers in the version fields.
    body = compress(CompressionType.SNAPPY, TEXTISH)[16:]
    for versions in (struct.pack("<ii", 1, 1), struct.pack(">ii", 2, 1), bytes(8)):
        assert decompress(CompressionType.SNAPPY, b"\x82SNAPPY\x00" + versions + body) == TEXTISH


def test_snappy_block_length_past_the_end_is_corrupt() -> None:
    stream = bytearray(compress(CompressionType.SNAPPY, b"hello" * 100))
    struct.pack_into(">i", stream, 16, len(stream))
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.SNAPPY, bytes(stream))
    struct.pack_into(">i", stream, 16, -5)
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.SNAPPY, bytes(stream))


# --- lz4 (frame, Kafka's settings) ------------------------------------------------------------


def lz4_blocks(frame: bytes, header_size: int = 7) -> list[tuple[int, bool]]:
    """(stored size, is_uncompressed) of every block of a frame without block checksums."""
    blocks = []
    pos = header_size
    while True:
        (word,) = struct.unpack_from("<I", frame, pos)
        pos += 4
        if word == 0:
            break
        size = word & 0x7FFFFFFF
        blocks.append((size, bool(word & 0x80000000)))
        pos += size
    assert pos == len(frame), "no content checksum after the end mark"
    return blocks


@pytest.mark.parametrize("data", [TEXTISH, RANDOM, b""], ids=["textish", "random", "empty"])
def test_lz4_frame_is_exactly_kafkas(data: bytes) -> None:
    frame = compress(CompressionType.LZ4, data)
    assert frame[:4] == b"\x04\x22\x4d\x18"  # magic 0x184D2204, little-endian
    flg, bd, hc = frame[4], frame[5], frame[6]
    # FLG 0x60: version 01, independent blocks, no block checksum, no content size,
    # no content checksum, no dictionary id.
    assert flg == 0x60
    # BD 0x40: 64 KiB maximum block size.
    assert bd == 0x40
    assert hc == (xxh32(bytes((flg, bd))) >> 8) & 0xFF
    assert frame[-4:] == b"\x00\x00\x00\x00"  # end mark
    blocks = lz4_blocks(frame)
    assert all(size <= 65536 for size, _ in blocks)
    if data is RANDOM:
        assert any(stored_raw for _, stored_raw in blocks)  # incompressible blocks stored
    assert lz4.frame.decompress(frame) == data


def test_lz4_frame_with_kafkas_legacy_broken_header_checksum_decodes() -> None:
    frame = bytearray(compress(CompressionType.LZ4, TEXTISH))
    # Kafka 0.8/0.9 (magic 0) computed HC over magic + FLG + BD instead of FLG + BD.
    broken = (xxh32(bytes(frame[0:6])) >> 8) & 0xFF
    assert broken != frame[6]
    frame[6] = broken
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(bytes(frame))  # a strict LZ4 reader refuses it ...
    assert decompress(CompressionType.LZ4, bytes(frame)) == TEXTISH  # ... Kafka and we do not


def test_lz4_tolerates_content_size_and_content_checksum() -> None:
    frame = lz4.frame.compress(
        TEXTISH,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        store_size=True,
        content_checksum=True,
    )
    assert decompress(CompressionType.LZ4, frame) == TEXTISH


def test_lz4_concatenated_frames() -> None:
    frames = compress(CompressionType.LZ4, b"one;") + compress(CompressionType.LZ4, b"two")
    assert decompress(CompressionType.LZ4, frames) == b"one;two"


def test_lz4_without_frame_magic_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="magic"):
        decompress(CompressionType.LZ4, b"\x00\x01\x02\x03\x04\x05\x06\x07")
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.LZ4, compress(CompressionType.LZ4, b"x") + b"junk")


# --- zstd -------------------------------------------------------------------------------------


def test_zstd_frames_carry_no_content_size() -> None:
    frame = compress(CompressionType.ZSTD, TEXTISH)
    assert frame[:4] == b"\x28\xb5\x2f\xfd"
    params = zstandard.get_frame_parameters(frame)
    assert params.content_size == zstandard.CONTENTSIZE_UNKNOWN
    # A one-shot decoder refuses such frames; ours streams them.
    with pytest.raises(zstandard.ZstdError):
        zstandard.ZstdDecompressor().decompress(frame)
    assert decompress(CompressionType.ZSTD, frame) == TEXTISH


def test_zstd_streaming_writer_output_and_concatenated_frames() -> None:
    # zstd-jni's streaming output: frames written without knowing the size up front, possibly
    # flushed into several frames.
    first = zstandard.ZstdCompressor(level=3, write_content_size=False).compress(b"a" * 70_000)
    chunker = zstandard.ZstdCompressor(level=1).chunker(chunk_size=4096)
    second = b"".join([*chunker.compress(RANDOM[:100_000]), *chunker.finish()])
    with_size = zstandard.ZstdCompressor(write_content_size=True).compress(b"tail")
    stream = first + second + with_size
    assert decompress(CompressionType.ZSTD, stream) == b"a" * 70_000 + RANDOM[:100_000] + b"tail"


# --- damaged streams ----------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_every_truncation_of_a_single_frame_is_corrupt(codec: CompressionType) -> None:
    data = TEXTISH[:20_000]  # one snappy block, one lz4 block, one zstd frame, one gzip member
    stream = compress(codec, data)
    # A xerial stream has no end mark: a cut right after its header reads as empty data.
    skip = {16} if codec is CompressionType.SNAPPY else set()
    cuts = [c for c in range(len(stream)) if c not in skip]
    for cut in cuts:
        with pytest.raises(CorruptRecordError):
            decompress(codec, stream[:cut])


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize(
    "garbage",
    [b"\xff" * 64, b"garbage, not compressed at all", bytes(range(256))],
    ids=["ff", "text", "range"],
)
def test_garbage_is_corrupt(codec: CompressionType, garbage: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decompress(codec, garbage)


@pytest.mark.parametrize("codec", CODECS)
def test_flipped_byte_in_compressed_data_is_corrupt_or_different(codec: CompressionType) -> None:
    # Codecs without checksums may decode damaged data to other bytes; they must never raise
    # anything but CorruptRecordError.
    stream = compress(codec, TEXTISH[:5000])
    for at in range(0, len(stream), max(1, len(stream) // 200)):
        damaged = bytearray(stream)
        damaged[at] ^= 0x41
        with contextlib.suppress(CorruptRecordError):
            decompress(codec, bytes(damaged))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(CODECS), st.binary(max_size=200))
def test_arbitrary_bytes_raise_only_corrupt_record_error(
    codec: CompressionType, data: bytes
) -> None:
    try:
        out = decompress(codec, data, max_bytes=1 << 20)
    except CorruptRecordError:
        return
    assert len(out) <= 1 << 20


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(CODECS),
    st.binary(min_size=1, max_size=300),
    st.sampled_from([b"\x1f\x8b", b"\x82SNAPPY\x00", b"\x04\x22\x4d\x18", b"\x28\xb5\x2f\xfd"]),
)
def test_arbitrary_bytes_after_a_codec_magic_raise_only_corrupt_record_error(
    codec: CompressionType, data: bytes, magic: bytes
) -> None:
    with contextlib.suppress(CorruptRecordError):
        decompress(codec, magic + data, max_bytes=1 << 20)


# --- decompression bombs -------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_max_bytes_bounds_decompression(codec: CompressionType) -> None:
    data = bytes(4 << 20)  # 4 MiB of zeros: a few KiB compressed
    stream = compress(codec, data)
    assert len(stream) < len(data) // 20
    assert decompress(codec, stream, max_bytes=len(data)) == data
    with pytest.raises(CorruptRecordError, match=r"more than|over"):
        decompress(codec, stream, max_bytes=len(data) - 1)
    with pytest.raises(CorruptRecordError):
        decompress(codec, stream, max_bytes=1000)


def test_snappy_raw_block_declaring_a_huge_length_is_refused_before_allocating() -> None:
    # A raw snappy block starts with its uncompressed length as a varint: claim 2 GiB.
    bomb = b"\x80\x80\x80\x80\x08" + b"\x00" * 10
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.SNAPPY, bomb, max_bytes=1 << 20)


def test_gzip_bomb_is_stopped_at_the_bound() -> None:
    # 64 MiB of zeros deflates to ~64 KiB; the bound stops inflation right after 1 MiB.
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = bytes(1 << 20)
    bomb = b"".join(compressor.compress(chunk) for _ in range(64)) + compressor.flush()
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.GZIP, bomb, max_bytes=1 << 20)


def _zstd_rle_frame(blocks: int, block_bytes: int = 128 * 1024) -> bytes:
    """A zstd frame of ``blocks`` RLE blocks (4 bytes in, ``block_bytes`` out each)."""
    out = bytearray(b"\x28\xb5\x2f\xfd\x00\x58")  # magic, no content size, 2 MiB window
    for index in range(blocks):
        last = 1 if index == blocks - 1 else 0
        out += (last | (1 << 1) | (block_bytes << 3)).to_bytes(3, "little") + b"\x00"
    return bytes(out)


@pytest.mark.parametrize("max_bytes", [1, 1000, (1 << 20) - 1, 1 << 20, 3 << 20])
def test_zstd_rle_bomb_is_stopped_within_one_block_of_the_bound(max_bytes: int) -> None:
    # 1 KiB of RLE blocks is 32 MiB of output: the feed is sized so at most one 128 KiB
    # block past the bound is ever held, and exactly max_bytes is still accepted.
    frame = _zstd_rle_frame(256)
    total = 256 * 128 * 1024
    with pytest.raises(CorruptRecordError, match="more than"):
        decompress(CompressionType.ZSTD, frame, max_bytes=max_bytes)
    assert decompress(CompressionType.ZSTD, frame, max_bytes=total) == bytes(total)
    with pytest.raises(CorruptRecordError, match="more than"):
        decompress(CompressionType.ZSTD, frame, max_bytes=total - 1)


def test_zstd_bound_exact_across_frames_with_small_budget() -> None:
    # Several frames fed a byte at a time near the bound still decode exactly.
    stream = compress(CompressionType.ZSTD, TEXTISH[:5000]) + compress(
        CompressionType.ZSTD, RANDOM[:3000]
    )
    want = TEXTISH[:5000] + RANDOM[:3000]
    assert decompress(CompressionType.ZSTD, stream, max_bytes=len(want)) == want
    with pytest.raises(CorruptRecordError, match="more than"):
        decompress(CompressionType.ZSTD, stream, max_bytes=len(want) - 1)
    with pytest.raises(CorruptRecordError, match="truncated"):
        decompress(CompressionType.ZSTD, stream[:-3], max_bytes=len(want))
