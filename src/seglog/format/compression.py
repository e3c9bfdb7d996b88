"""Compression codecs of Kafka record batches, with Kafka's framing rules.

Codec ids (attribute bits 0-2): 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; 5-7 are invalid.
In a v2 batch the 61-byte header is never compressed: bytes ``[61, end)`` are one compressed
stream of the concatenated records. In legacy v0/v1, the compressed stream is the value of a
wrapper message.

Framing written (what Kafka's Java client and broker write, so Kafka reads ours):

* gzip: an RFC 1952 stream (mtime 0 so output is deterministic), level 6 unless told.
* snappy: snappy-java's "xerial" stream: 16-byte header ``0x82 'SNAPPY' 0x00`` + int32 BE
  version 1 + int32 BE min-compatible version 1, then blocks of int32 BE compressed length +
  a raw snappy block of at most 32 KiB of input. Reading accepts that framing (any header
  version numbers, as old brokers wrote) and a bare raw snappy block.
* lz4: an LZ4 frame with Kafka's settings: version 01, independent blocks, 64 KiB maximum
  block size, no block checksum, no content size, no content checksum. Level 9 by default
  (Kafka's ``compression.lz4.level``). Legacy magic 0 frames carry a header checksum computed
  by Kafka's historic bug (over magic + FLG + BD); Kafka never verifies it, and neither do we.
* zstd: standard zstd frames without content size (zstd-jni's streaming output), level 3.
  Reading walks every frame with a streaming decoder (one-shot decoders refuse frames with no
  content size).

Every decompression is bounded by ``max_bytes`` (default 1 GiB), so a hostile batch cannot
make the reader allocate without limit: exceeding it raises ``CorruptRecordError``.
"""

from __future__ import annotations

import enum
import struct
import sys
import zlib

# The codec libraries (gzip, cramjam, lz4, zstandard) are imported by the function that needs
# them: a command reading uncompressed batches never pays their import.
from seglog.errors import CorruptRecordError, UnsupportedCodecError

Buffer = bytes | bytearray | memoryview

DEFAULT_MAX_DECOMPRESSED_BYTES = 1 << 30

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_BYTES = 32 * 1024

LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"
LZ4_KAFKA_LEVEL = 9
_LZ4_BLOCK_BYTES = 64 * 1024
GZIP_DEFAULT_LEVEL = 6  # Java's Deflater.DEFAULT_COMPRESSION (-1) means level 6
ZSTD_DEFAULT_LEVEL = 3


class CompressionType(enum.IntEnum):
    """Kafka's codec ids; ``name_in_kafka`` is the name Kafka's tools print."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def name_in_kafka(self) -> str:
        """Lower-case name as in ``compression.type`` and kafka-dump-log's ``compresscodec``."""
        return self.name.lower()

    @classmethod
    def from_id(cls, codec_id: int) -> CompressionType:
        """The codec for an attribute id, or ``UnsupportedCodecError`` for 5-7."""
        try:
            return cls(codec_id)
        except ValueError:
            raise UnsupportedCodecError(f"unknown compression codec id {codec_id}") from None

    @classmethod
    def from_name(cls, name: str) -> CompressionType:
        """The codec for a Kafka ``compression.type`` name (``none``, ``gzip``, ...)."""
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise UnsupportedCodecError(
                f"unknown compression type {name!r}; expected none, gzip, snappy, lz4 or zstd"
            ) from None


def compress(codec: CompressionType, data: Buffer, level: int | None = None) -> bytes:
    """Compress ``data`` with ``codec`` in Kafka's framing."""
    if codec is CompressionType.NONE:
        return bytes(data)
    if codec is CompressionType.GZIP:
        import gzip

        gzip_level = GZIP_DEFAULT_LEVEL if level is None or level == -1 else level
        return gzip.compress(bytes(data), compresslevel=gzip_level, mtime=0)
    if codec is CompressionType.SNAPPY:
        return _xerial_snappy_compress(data)
    if codec is CompressionType.LZ4:
        import lz4.frame

        return bytes(
            lz4.frame.compress(
                bytes(data),
                compression_level=LZ4_KAFKA_LEVEL if level is None else level,
                block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                block_linked=False,
                content_checksum=False,
                block_checksum=False,
                store_size=False,
            )
        )
    if codec is CompressionType.ZSTD:
        import zstandard

        compressor = zstandard.ZstdCompressor(
            level=ZSTD_DEFAULT_LEVEL if level is None else level, write_content_size=False
        )
        return compressor.compress(data)
    raise UnsupportedCodecError(f"cannot compress with codec {codec!r}")


def max_compressed_size(codec: CompressionType, size: int) -> int:
    """Worst-case length of ``compress(codec, data)`` for ``size`` bytes of input.

    Incompressible input grows by each codec's framing; a size limit on compressed output
    must be checked against this bound, never against the input size alone.
    """
    blocks = -(-size // _LZ4_BLOCK_BYTES)
    if codec is CompressionType.NONE:
        return size
    if codec is CompressionType.GZIP:
        # zlib's deflateBound for the default window and memory level, + 18 bytes of gzip
        # header and trailer (no file name).
        return size + (size >> 12) + (size >> 14) + (size >> 25) + 7 + 18
    if codec is CompressionType.SNAPPY:
        # Per block: int32 length + snappy's MaxCompressedLength (32 + n + n / 6).
        full, last = divmod(size, XERIAL_BLOCK_BYTES)
        per_block = [XERIAL_BLOCK_BYTES] * full + ([last] if last else [])
        return len(XERIAL_HEADER) + sum(4 + 32 + n + n // 6 for n in per_block)
    if codec is CompressionType.LZ4:
        # 7-byte frame header, a 4-byte size per (at worst stored) block, 4-byte end mark.
        return 7 + size + 4 * blocks + 4
    if codec is CompressionType.ZSTD:
        # ZSTD_COMPRESSBOUND (frame header included).
        margin = ((128 << 10) - size) >> 11 if size < (128 << 10) else 0
        return size + (size >> 8) + margin
    raise UnsupportedCodecError(f"no size bound for codec {codec!r}")


def decompress(
    codec: CompressionType, data: Buffer, max_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
) -> bytes:
    """Decompress a Kafka-framed stream; raise ``CorruptRecordError`` when it is damaged."""
    if codec is not CompressionType.NONE and len(data) == 0:
        # Every codec's framing has at least a header: zero bytes is a stream cut at its start.
        raise CorruptRecordError(f"{codec.name_in_kafka} stream is empty")
    try:
        if codec is CompressionType.NONE:
            out = bytes(data)
        elif codec is CompressionType.GZIP:
            out = _gzip_decompress(data, max_bytes)
        elif codec is CompressionType.SNAPPY:
            out = _snappy_decompress(data, max_bytes)
        elif codec is CompressionType.LZ4:
            out = _lz4_decompress(data, max_bytes)
        elif codec is CompressionType.ZSTD:
            out = _zstd_decompress(data, max_bytes)
        else:  # pragma: no cover - the enum is closed
            raise UnsupportedCodecError(f"cannot decompress codec {codec!r}")
    except CorruptRecordError:
        raise
    except Exception as exc:
        if not isinstance(exc, _decoder_errors()):
            raise
        raise CorruptRecordError(
            f"{codec.name_in_kafka} stream cannot be decompressed: {exc}"
        ) from exc
    if len(out) > max_bytes:
        raise CorruptRecordError(
            f"{codec.name_in_kafka} stream decompresses to more than {max_bytes} bytes"
        )
    return out


def _decoder_errors() -> tuple[type[BaseException], ...]:
    """What the decoders raise on damaged input: the stdlib's, and those of the codec
    libraries imported so far (a library not imported yet cannot have raised)."""
    errors: list[type[BaseException]] = [zlib.error, OSError, EOFError, RuntimeError, ValueError]
    if "zstandard" in sys.modules:
        errors.append(sys.modules["zstandard"].ZstdError)
    if "cramjam" in sys.modules:
        errors.append(sys.modules["cramjam"].DecompressionError)
    if "lz4.block" in sys.modules:
        errors.append(sys.modules["lz4.block"].LZ4BlockError)
    return tuple(errors)


def _gzip_decompress(data: Buffer, max_bytes: int) -> bytes:
    # wbits 16+MAX_WBITS: gzip wrapper. Concatenated gzip members are legal; walk them all.
    out = bytearray()
    remaining = bytes(data)
    while remaining:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out += inflater.decompress(remaining, max_bytes + 1 - len(out))
        if len(out) > max_bytes:
            raise CorruptRecordError(f"gzip stream decompresses to more than {max_bytes} bytes")
        if not inflater.eof:
            raise CorruptRecordError("gzip stream is truncated")
        remaining = inflater.unused_data
    return bytes(out)


def _xerial_snappy_compress(data: Buffer) -> bytes:
    import cramjam

    view = memoryview(data)
    parts = [XERIAL_HEADER]
    for start in range(0, len(view), XERIAL_BLOCK_BYTES):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + XERIAL_BLOCK_BYTES]))
        parts.append(struct.pack(">i", len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_raw_decompress(block: Buffer, max_bytes: int) -> bytes:
    import cramjam

    declared = int(cramjam.snappy.decompress_raw_len(block))
    if declared > max_bytes:
        raise CorruptRecordError(f"snappy block declares {declared} bytes, over {max_bytes}")
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy_decompress(data: Buffer, max_bytes: int) -> bytes:
    view = memoryview(data)
    if bytes(view[:8]) != XERIAL_MAGIC:
        return _snappy_raw_decompress(view, max_bytes)
    if len(view) < 16:
        raise CorruptRecordError("xerial snappy header is truncated")
    out = bytearray()
    pos = 16
    while pos < len(view):
        if pos + 4 > len(view):
            raise CorruptRecordError("xerial snappy block length is truncated")
        (block_len,) = struct.unpack_from(">i", view, pos)
        pos += 4
        if block_len < 0 or pos + block_len > len(view):
            raise CorruptRecordError(f"xerial snappy block length {block_len} is impossible")
        out += _snappy_raw_decompress(view[pos : pos + block_len], max_bytes - len(out))
        pos += block_len
    return bytes(out)


def _lz4_decompress(data: Buffer, max_bytes: int) -> bytes:
    raw = bytes(data)
    if raw[:4] != LZ4_FRAME_MAGIC:
        raise CorruptRecordError("lz4 stream does not start with the LZ4 frame magic")
    parts: list[bytes] = []
    total = 0
    while raw:
        try:
            frame, raw = _lz4_frame(raw, max_bytes - total)
        except RuntimeError as exc:
            # liblz4 reports "ERROR_headerChecksum_invalid"; compare without case or separators.
            if "headerchecksum" not in str(exc).lower().replace("_", "").replace(" ", ""):
                raise
            # Legacy magic 0 lz4: Kafka's broken header checksum. Repair it and retry.
            frame, raw = _lz4_frame(_lz4_fix_header_checksum(raw), max_bytes - total)
        parts.append(frame)
        total += len(frame)
        if raw and raw[:4] != LZ4_FRAME_MAGIC:
            raise CorruptRecordError("bytes after the lz4 frame are not another frame")
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _lz4_frame(raw: bytes, max_bytes: int) -> tuple[bytes, bytes]:
    """Decompress the first frame of ``raw``; return it and the bytes after it.

    The decompressor allocates its whole ``max_length`` up front, so output is asked for in
    steps that start near the expected size (4x the input) and double, never a 1 GiB buffer
    per batch; the total is still bounded by ``max_bytes``.
    """
    import lz4.block  # its LZ4BlockError is one of the decoder errors
    import lz4.frame

    decompressor = lz4.frame.LZ4FrameDecompressor()
    parts: list[bytes] = []
    total = 0
    step = max(4 * len(raw), _LZ4_FIRST_STEP_BYTES)
    pending = raw
    while True:
        chunk = decompressor.decompress(pending, max_length=min(step, max_bytes + 1 - total))
        pending = b""
        parts.append(chunk)
        total += len(chunk)
        if total > max_bytes:
            raise CorruptRecordError(f"lz4 stream decompresses to more than {max_bytes} bytes")
        if decompressor.eof:
            break
        if decompressor.needs_input:
            raise CorruptRecordError("lz4 frame is truncated (no end mark)")
        step *= 2
    out = parts[0] if len(parts) == 1 else b"".join(parts)
    return out, decompressor.unused_data


_LZ4_FIRST_STEP_BYTES = 64 * 1024


def _lz4_fix_header_checksum(raw: bytes) -> bytes:
    """Return ``raw`` with the frame-descriptor checksum byte recomputed correctly."""
    flg = raw[4]
    descriptor_end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(raw) <= descriptor_end:
        raise CorruptRecordError("lz4 frame header is truncated")
    checksum = (_xxh32(raw[4:descriptor_end]) >> 8) & 0xFF
    return raw[:descriptor_end] + bytes((checksum,)) + raw[descriptor_end + 1 :]


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl32(value: int, count: int) -> int:
    return ((value << count) | (value >> (32 - count))) & _M32


def _xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of a short input (< 16 bytes: the LZ4 frame descriptor only)."""
    assert len(data) < 16, "only used for the few bytes of an LZ4 frame descriptor"
    acc = (seed + _P5 + len(data)) & _M32
    pos = 0
    while pos + 4 <= len(data):
        (lane,) = struct.unpack_from("<I", data, pos)
        acc = (_rotl32((acc + lane * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < len(data):
        acc = (_rotl32((acc + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    acc ^= acc >> 15
    acc = (acc * _P2) & _M32
    acc ^= acc >> 13
    acc = (acc * _P3) & _M32
    acc ^= acc >> 16
    return acc


def _zstd_decompress(data: Buffer, max_bytes: int) -> bytes:
    """Decompress every zstd frame of ``data``; the output never grows far past ``max_bytes``.

    zstd's streaming decoder emits a block only once its whole input is in, and then emits
    all of it: at most ``ZSTD_BLOCKSIZE_MAX`` (128 KiB) per block, and a block that emits
    anything takes at least 4 bytes of input (3-byte header + 1 byte of an RLE block). So
    a feed of ``n`` bytes emits at most ``128 KiB * (1 + n // 4)`` (the ``1``: a block begun
    by the previous feed). Each feed is sized so that this is within what is left of
    ``max_bytes`` plus one block: the memory held is at most ``max_bytes + 128 KiB`` whatever
    the ratio of the stream (RLE blocks expand 4 bytes to 128 KiB), and the error is raised
    as soon as the output passes ``max_bytes``. An ordinary batch with a large bound is fed
    in one piece (the feed is ``4 * remaining // 128 KiB`` bytes: 32 KiB of input per MiB
    of budget, 32 MiB for the default 1 GiB), so the normal path makes one call per frame.
    """
    import zstandard

    view = memoryview(data)
    decompressor = zstandard.ZstdDecompressor()
    out = bytearray()
    pos = 0
    while pos < len(view):
        frame = decompressor.decompressobj()
        while not frame.eof:
            if pos >= len(view):
                raise CorruptRecordError("zstd frame is truncated")
            remaining = max_bytes - len(out)
            feed = max(1, (remaining // _ZSTD_BLOCK_MAX_BYTES) * _ZSTD_MIN_BLOCK_INPUT_BYTES)
            chunk = view[pos : pos + feed]
            pos += len(chunk)
            out += frame.decompress(chunk)
            if len(out) > max_bytes:
                raise CorruptRecordError(f"zstd stream decompresses to more than {max_bytes} bytes")
        pos -= len(frame.unused_data)
    return bytes(out)


_ZSTD_BLOCK_MAX_BYTES = 128 * 1024  # ZSTD_BLOCKSIZE_MAX: the most one block can emit
_ZSTD_MIN_BLOCK_INPUT_BYTES = 4  # block header (3) + one byte: the smallest block that emits
