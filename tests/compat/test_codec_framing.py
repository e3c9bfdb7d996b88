"""seglog's compressed streams are framed as Kafka's Java client frames them, and peers read them.

* lz4: an LZ4 frame with FLG 0x60 (version 01, independent blocks, no block checksum, no
  content size, no content checksum), BD 0x40 (64 KiB blocks) and header checksum 0x82: the
  same 7 bytes that open the Java-written lz4 batches of the corpus. Each block decompresses
  on its own (block independence) to at most 64 KiB; the frame ends with the 0 end mark.
* snappy: snappy-java's xerial stream: the 16-byte header ``82 'SNAPPY' 00``, version 1,
  compatible version 1 (the bytes that open the Java-written snappy batches of the corpus),
  then int32 big-endian length + raw snappy block, each block at most 32 KiB uncompressed.
* gzip: an RFC 1952 member. zstd: frames without a content size (as zstd-jni streams them).
* Large batches (several blocks) cross both ways with kafka-python and aiokafka.
"""

from __future__ import annotations

import gzip
import struct
from typing import Any

import aiokafka.codec
import kafka.codec
import lz4.block
import lz4.frame
import pytest
import zstandard
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AiokafkaBuilder
from compat_support import (
    aiokafka_view,
    assert_same_reading,
    seglog_view,
)
from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaPythonBuilder

from corpus_location import corpus_files
from seglog.format.batch import RECORD_BATCH_OVERHEAD, RecordBatch, encode_batch
from seglog.format.compression import CompressionType, compress
from seglog.format.reader import read_batches
from seglog.format.records import Header, Record
from support.kafka_oracle import kafka_python_view

pytestmark = pytest.mark.compat

KAFKA_LZ4_FRAME_HEADER = bytes.fromhex("04224d18604082")  # magic, FLG, BD, HC
XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
COMPRESSED = [c for c in CompressionType if c is not CompressionType.NONE]


def large_section() -> bytes:
    """~300 KiB of records section: several lz4 (64 KiB) and snappy (32 KiB) blocks."""
    return b"".join(
        b"record %06d " % i + bytes(range(i % 200)) + b"padding" * (i % 13) for i in range(3000)
    )


def large_records() -> list[Record]:
    return [
        Record(
            5000 + i,
            1_700_000_000_000 + i,
            b"key-%d" % (i % 50),
            b"value %06d " % i + bytes(range(i % 256)) * 2,
            (Header("i", b"%d" % i),) if i % 3 else (),
        )
        for i in range(1500)
    ]


def java_written_streams(codec: CompressionType) -> list[bytes]:
    """Compressed streams of the corpus's v2 ``.log`` batches of ``codec``."""
    streams = []
    for path in corpus_files((".log",)):
        batches, _ = read_batches(path.read_bytes())
        streams += [
            bytes(b.raw[RECORD_BATCH_OVERHEAD:])
            for b in batches
            if isinstance(b, RecordBatch) and b.compression is codec
        ]
    return streams


# --- lz4 ---------------------------------------------------------------------------------------


def lz4_blocks(frame: bytes) -> list[tuple[bool, bytes]]:
    """The (is_compressed, data) blocks of a Kafka-style LZ4 frame (no checksums, no size)."""
    pos = len(KAFKA_LZ4_FRAME_HEADER)
    blocks = []
    while True:
        (word,) = struct.unpack_from("<I", frame, pos)
        pos += 4
        if word == 0:
            break
        size = word & 0x7FFFFFFF
        blocks.append((not word & 0x80000000, frame[pos : pos + size]))
        pos += size
    assert pos == len(frame), "bytes after the end mark: a content checksum or junk"
    return blocks


def test_lz4_frame_has_kafka_flags_and_independent_64k_blocks() -> None:
    section = large_section()
    frame = compress(CompressionType.LZ4, section)
    assert frame[:7] == KAFKA_LZ4_FRAME_HEADER
    info = lz4.frame.get_frame_info(frame)
    assert info["block_size_id"] == 4  # 64 KiB
    assert not info["block_linked"]
    assert not info["block_checksum"]
    assert not info["content_checksum"]
    assert info["content_size"] == 0  # not stored
    blocks = lz4_blocks(frame)
    assert len(blocks) > 1
    out = b""
    for is_compressed, data in blocks:
        # Independent blocks: each one decompresses without the previous block's window.
        chunk = lz4.block.decompress(data, uncompressed_size=65536) if is_compressed else data
        assert len(chunk) <= 65536
        out += chunk
    assert out == section
    assert kafka.codec.lz4_decode(frame) == section
    assert aiokafka.codec.lz4_decode(frame) == section


def test_lz4_frame_header_is_the_one_java_clients_write() -> None:
    streams = java_written_streams(CompressionType.LZ4)
    if not streams:
        pytest.skip("no lz4 v2 batch in the corpus (or no corpus)")
    assert {s[:7] for s in streams} == {KAFKA_LZ4_FRAME_HEADER}


# --- snappy ------------------------------------------------------------------------------------


def test_snappy_stream_is_xerial_framed_with_32k_blocks() -> None:
    import cramjam

    section = large_section()
    stream = compress(CompressionType.SNAPPY, section)
    assert stream[:16] == XERIAL_HEADER
    pos = 16
    out = b""
    blocks = 0
    while pos < len(stream):
        (length,) = struct.unpack_from(">i", stream, pos)
        block = bytes(cramjam.snappy.decompress_raw(stream[pos + 4 : pos + 4 + length]))
        assert len(block) <= 32 * 1024
        out += block
        pos += 4 + length
        blocks += 1
    assert pos == len(stream)
    assert blocks > 1
    assert out == section
    assert kafka.codec.snappy_decode(stream) == section
    assert aiokafka.codec.snappy_decode(stream) == section


def test_snappy_header_is_the_one_java_clients_write() -> None:
    # Non-Java producers (kafkajs, and the producer of the arthurarutunyan-snappy segment)
    # send a bare raw snappy block; the broker keeps producer bytes, and Java's xerial
    # SnappyInputStream reads a stream without the header as one raw block. seglog reads both
    # (the corpus tests decode them); it writes the xerial framing Java clients write.
    streams = java_written_streams(CompressionType.SNAPPY)
    xerial = [s for s in streams if s[:8] == XERIAL_HEADER[:8]]
    if not xerial:
        pytest.skip("no xerial-framed snappy v2 batch in the corpus (or no corpus)")
    assert {s[:16] for s in xerial} == {XERIAL_HEADER}


# --- gzip and zstd -----------------------------------------------------------------------------


def test_gzip_stream_is_an_rfc1952_member() -> None:
    section = large_section()
    stream = compress(CompressionType.GZIP, section)
    assert stream[:3] == b"\x1f\x8b\x08"  # gzip magic, deflate
    assert gzip.decompress(stream) == section
    assert kafka.codec.gzip_decode(stream) == section
    assert aiokafka.codec.gzip_decode(stream) == section


def test_zstd_frame_has_no_content_size() -> None:
    section = large_section()
    stream = compress(CompressionType.ZSTD, section)
    assert stream[:4] == b"\x28\xb5\x2f\xfd"
    assert zstandard.get_frame_parameters(stream).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert kafka.codec.zstd_decode(stream) == section
    assert aiokafka.codec.zstd_decode(stream) == section


# --- large batches, both ways --------------------------------------------------------------------


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.name_in_kafka)
def test_large_seglog_batch_decodes_in_peers(codec: CompressionType) -> None:
    data = encode_batch(large_records(), compression=codec, partition_leader_epoch=1)
    ours, end = seglog_view(data)
    assert end.is_clean
    for peer, theirs in (
        ("kafka-python", kafka_python_view(data)),
        ("aiokafka", aiokafka_view(data)),
    ):
        assert [b.crc_ok for b in theirs.batches] == [True], peer
        assert_same_reading(data, ours, end, theirs, peer)


@pytest.mark.parametrize(
    "builder", [KafkaPythonBuilder, AiokafkaBuilder], ids=["kafka-python", "aiokafka"]
)
@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.name_in_kafka)
def test_large_peer_batch_decodes_in_seglog(codec: CompressionType, builder: Any) -> None:
    peer_builder = builder(
        magic=2,
        compression_type=int(codec),
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 24,
    )
    records = large_records()
    for index, record in enumerate(records):
        headers = [(h.key, h.value) for h in record.headers]
        peer_builder.append(index, record.timestamp, record.key, record.value, headers)
    data = bytes(peer_builder.build())
    (batch,), end = read_batches(data)
    assert end.is_clean
    assert isinstance(batch, RecordBatch)
    assert batch.compression is codec
    decoded = batch.records()
    assert [(r.timestamp, r.key, r.value, r.headers) for r in decoded] == [
        (r.timestamp, r.key, r.value, r.headers) for r in records
    ]
    assert [r.offset for r in decoded] == list(range(len(records)))
