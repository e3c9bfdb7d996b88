"""Record batch, magic v2: Kafka's one on-disk and wire format since 0.11.

Layout (big-endian; 61-byte header, then the records section)::

    pos width field                  notes
      0   8  baseOffset             first offset the batch was built with (kept by compaction)
      8   4  batchLength            bytes after this field = total size - 12
     12   4  partitionLeaderEpoch   not covered by the CRC
     16   1  magic                  2
     17   4  crc                    uint32 CRC-32C of bytes [21, end)
     21   2  attributes             bits 0-2 codec, 3 LogAppendTime, 4 transactional,
                                    5 control, 6 delete horizon in baseTimestamp
     23   4  lastOffsetDelta
     27   8  baseTimestamp          first record's timestamp, or the delete horizon (bit 6)
     35   8  maxTimestamp
     43   8  producerId
     51   2  producerEpoch
     53   4  baseSequence
     57   4  recordsCount
     61   .  records                uncompressed records, or one compressed stream of them

Each record (every integer a zig-zag varint unless said)::

    length, attributes (int8), timestampDelta (varlong), offsetDelta, keyLength (-1 null), key,
    valueLength (-1 null), value, headerCount, headers: {keyLength (>= 0), key, valueLength
    (-1 null), value} * headerCount

Invariants a valid batch keeps (checked on decode, raised as ``CorruptRecordError`` with the
batch's position): ``batchLength >= 49``; the CRC matches; the codec is 0-4; each record
consumes exactly its declared length; header counts are >= 0; after ``recordsCount`` records
the records section has no bytes left. The reader also requires ``baseOffset +
lastOffsetDelta`` to be an int64 (``baseOffset`` is outside the CRC, so a flipped bit near
2**63 would otherwise give offsets past int64). Offsets and timestamps are not rewritten on
decode: ``Record.offset`` is ``baseOffset + offsetDelta`` and ``Record.timestamp`` is
``baseTimestamp + timestampDelta``, both in int64 arithmetic that wraps as Java's long does
(what Kafka and the columnar kernels compute, for records a writer made inconsistent with
the CRC-covered header).

Why this module is longer than the house's ~500 lines: it is the whole v2 batch format (header
layout, attributes, encode, decode, in-place edits of the offset, epoch and CRC fields); each
part reads the same layout table above, so they stay together.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from seglog.errors import CorruptRecordError, InvalidRecordError
from seglog.format.compression import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    CompressionType,
    compress,
    decompress,
)
from seglog.format.crc import crc32c
from seglog.format.records import NO_TIMESTAMP, Header, Record, TimestampType
from seglog.format.varint import (
    INT32_MAX,
    INT32_MIN,
    MAX_VARINT_BYTES,
    VarintError,
    decode_varint,
    encode_varint,
)

Buffer = bytes | bytearray | memoryview

MAGIC_V2 = 2
LOG_OVERHEAD = 12
RECORD_BATCH_OVERHEAD = 61
HEADER_SIZE_UP_TO_MAGIC = 17
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MIN_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD  # 49

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
_CRC_AND_AFTER = struct.Struct(">I")
# attributes, timestampDelta, offsetDelta, keyLength, valueLength, headerCount: 1 byte at least
_MIN_RECORD_BODY_BYTES = 6


_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def _wrap64(value: int) -> int:
    """``value`` as Java's long arithmetic leaves it (two's complement, 64 bits)."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value > _INT64_MAX else value


def _wrap_sequence(sequence: int) -> int:
    """Kafka's sequence wrap-around from Integer.MAX_VALUE to 0."""
    return sequence - (INT32_MAX + 1) if sequence > INT32_MAX else sequence


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A decoded v2 batch header plus a view of the batch's bytes.

    ``position`` is the byte position of the batch inside the buffer it was read from;
    ``raw`` is the whole batch (header included). Records are decoded on demand by
    :meth:`records`, so iterating batches costs one header unpack each.
    """

    position: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    raw: Buffer

    # --- derived values (Kafka's names) -----------------------------------------------------
    @property
    def last_offset(self) -> int:
        """``baseOffset + lastOffsetDelta``."""
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """The offset after this batch."""
        return self.last_offset + 1

    @property
    def size_in_bytes(self) -> int:
        """Total size on disk: ``batchLength + 12``."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def compression(self) -> CompressionType:
        """The codec of the records section."""
        return CompressionType.from_id(self.attributes & COMPRESSION_CODEC_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        """CreateTime or LogAppendTime (attribute bit 3)."""
        if self.attributes & TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        """Attribute bit 4."""
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        """Attribute bit 5."""
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        """Attribute bit 6 (KIP-534): baseTimestamp holds the delete horizon."""
        return bool(self.attributes & DELETE_HORIZON_FLAG_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """The tombstone delete horizon stamped by the cleaner, if any."""
        return self.base_timestamp if self.has_delete_horizon else None

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record, or -1 without a producer sequence."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return _wrap_sequence(self.base_sequence + self.last_offset_delta)

    def record_sequence(self, record_offset: int) -> int:
        """Sequence number of the record at ``record_offset`` (-1 without sequences)."""
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return _wrap_sequence(self.base_sequence + record_offset - self.base_offset)

    def reported_timestamp(self, record: Record) -> int:
        """The timestamp Kafka reports for ``record``: maxTimestamp in LogAppendTime batches."""
        if self.attributes & TIMESTAMP_TYPE_MASK:
            return self.max_timestamp
        return record.timestamp

    # --- checks ----------------------------------------------------------------------------
    def compute_crc(self) -> int:
        """CRC-32C over bytes [21, end) of the batch."""
        return crc32c(memoryview(self.raw)[ATTRIBUTES_OFFSET:])

    def is_valid(self) -> bool:
        """Kafka's ``isValid``: size >= 61 and stored CRC == computed CRC."""
        return self.size_in_bytes >= RECORD_BATCH_OVERHEAD and self.crc == self.compute_crc()

    def ensure_valid(self) -> None:
        """Raise ``CorruptRecordError`` (with this batch's position) unless :meth:`is_valid`."""
        if self.size_in_bytes < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"record batch size {self.size_in_bytes} is below the minimum "
                f"{RECORD_BATCH_OVERHEAD}",
                position=self.position,
            )
        computed = self.compute_crc()
        if computed != self.crc:
            raise CorruptRecordError(
                f"record batch CRC mismatch: stored {self.crc}, computed {computed}",
                position=self.position,
            )

    # --- records ---------------------------------------------------------------------------
    def records_section(self, max_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes:
        """The uncompressed records section (decompressed when the batch is compressed)."""
        body = memoryview(self.raw)[RECORD_BATCH_OVERHEAD:]
        try:
            codec = self.compression
            if codec is CompressionType.NONE:
                return bytes(body)
            return decompress(codec, body, max_bytes)
        except CorruptRecordError as exc:
            raise CorruptRecordError(exc.reason, position=self.position) from exc
        except Exception as exc:  # UnsupportedCodecError and friends
            raise CorruptRecordError(str(exc), position=self.position) from exc

    def records(self) -> list[Record]:
        """Decode every record; raise ``CorruptRecordError`` on any broken invariant."""
        section = self.records_section()
        try:
            return decode_records(
                section, self.records_count, self.base_offset, self.base_timestamp
            )
        except CorruptRecordError as exc:
            raise CorruptRecordError(
                f"record batch at offset {self.base_offset}: {exc.reason}", position=self.position
            ) from exc

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())


def parse_batch_header(buf: Buffer, position: int) -> RecordBatch:
    """Unpack the 61-byte header at ``position`` of a buffer holding the whole batch.

    The caller has checked the frame (at least 61 bytes and ``12 + batchLength`` present);
    this only unpacks and slices, it verifies nothing.
    """
    fields = HEADER_STRUCT.unpack_from(buf, position)
    size = fields[1] + LOG_OVERHEAD
    # One star-argument tuple: mypy cannot count a struct tuple's fields, so passing `raw`
    # separately reads to it as a duplicate or an extra argument.
    arguments: tuple[Any, ...] = (position, *fields, memoryview(buf)[position : position + size])
    return RecordBatch(*arguments)


def decode_records(
    section: Buffer, records_count: int, base_offset: int, base_timestamp: int
) -> list[Record]:
    """Decode ``records_count`` v2 records that must fill ``section`` exactly."""
    if records_count < 0:
        raise CorruptRecordError(f"negative record count {records_count}")
    buf = section
    end = len(buf)
    if records_count > end:  # every record takes at least 1 byte... in fact at least 7
        raise CorruptRecordError(
            f"record count {records_count} cannot fit in a {end}-byte records section"
        )
    out: list[Record] = []
    append = out.append
    pos = 0
    try:
        for _ in range(records_count):
            length, pos = decode_varint(buf, pos, end, MAX_VARINT_BYTES)
            if length < _MIN_RECORD_BODY_BYTES:
                # Checked before reading the attributes byte, which would otherwise lie
                # past the end of the section for a final record of length 0.
                raise CorruptRecordError(
                    f"record length {length} is below the minimum {_MIN_RECORD_BODY_BYTES}"
                )
            if pos + length > end:
                raise CorruptRecordError(
                    f"record length {length} runs past the records section ({end - pos} left)"
                )
            record_end = pos + length
            attributes = buf[pos]
            pos += 1
            timestamp_delta, pos = decode_varint(buf, pos, record_end)
            offset_delta, pos = decode_varint(buf, pos, record_end, MAX_VARINT_BYTES)
            key_length, pos = decode_varint(buf, pos, record_end, MAX_VARINT_BYTES)
            if key_length < 0:
                if key_length != -1:
                    raise CorruptRecordError(f"invalid key length {key_length}")
                key = None
            else:
                if pos + key_length > record_end:
                    raise CorruptRecordError(f"key length {key_length} runs past the record")
                key = bytes(buf[pos : pos + key_length])
                pos += key_length
            value_length, pos = decode_varint(buf, pos, record_end, MAX_VARINT_BYTES)
            if value_length < 0:
                if value_length != -1:
                    raise CorruptRecordError(f"invalid value length {value_length}")
                value = None
            else:
                if pos + value_length > record_end:
                    raise CorruptRecordError(f"value length {value_length} runs past the record")
                value = bytes(buf[pos : pos + value_length])
                pos += value_length
            header_count, pos = decode_varint(buf, pos, record_end, MAX_VARINT_BYTES)
            if header_count < 0 or header_count > record_end - pos:
                raise CorruptRecordError(f"invalid header count {header_count}")
            headers: tuple[Header, ...] = ()
            if header_count:
                headers, pos = _decode_headers(buf, pos, record_end, header_count)
            if pos != record_end:
                used = length - (record_end - pos)
                raise CorruptRecordError(
                    f"record declares {length} bytes but its fields use {used}"
                )
            offset = base_offset + offset_delta
            timestamp = base_timestamp + timestamp_delta
            if not _INT64_MIN <= offset <= _INT64_MAX:
                offset = _wrap64(offset)
            if not _INT64_MIN <= timestamp <= _INT64_MAX:
                timestamp = _wrap64(timestamp)
            append(
                Record(
                    offset,
                    timestamp,
                    key,
                    value,
                    headers,
                    attributes,
                )
            )
    except VarintError as exc:
        raise CorruptRecordError(f"malformed varint in record {len(out)}: {exc}") from exc
    if pos != end:
        raise CorruptRecordError(
            f"{end - pos} bytes left in the records section after {records_count} records"
        )
    return out


def _decode_headers(buf: Buffer, pos: int, end: int, count: int) -> tuple[tuple[Header, ...], int]:
    headers = []
    for _ in range(count):
        key_length, pos = decode_varint(buf, pos, end, MAX_VARINT_BYTES)
        if key_length < 0 or pos + key_length > end:
            raise CorruptRecordError(f"invalid header key length {key_length}")
        key = bytes(buf[pos : pos + key_length]).decode("utf-8", "surrogateescape")
        pos += key_length
        value_length, pos = decode_varint(buf, pos, end, MAX_VARINT_BYTES)
        if value_length < 0:
            if value_length != -1:
                raise CorruptRecordError(f"invalid header value length {value_length}")
            value = None
        else:
            if pos + value_length > end:
                raise CorruptRecordError(f"header value length {value_length} runs past the record")
            value = bytes(buf[pos : pos + value_length])
            pos += value_length
        headers.append(Header(key, value))
    return tuple(headers), pos


# --- encoding ----------------------------------------------------------------------------------


# Every one- and two-byte zig-zag varint (values -8192..8191), precomputed (~0.5 MB): record
# lengths, deltas and key/value lengths are nearly always in this range, and a table lookup is
# several times cheaper than building the bytes.
_SHORT_VARINTS = tuple(
    bytes((zigzag,)) if zigzag < 0x80 else bytes(((zigzag & 0x7F) | 0x80, zigzag >> 7))
    for zigzag in range(0x4000)
)
_ONE_BYTE_VARINTS = _SHORT_VARINTS[:0x80]
_NULL_LENGTH = b"\x01"  # zig-zag varint of -1


def _varint(value: int) -> bytes:
    """Zig-zag varint; values of one or two bytes come from a table."""
    zigzag = (value << 1) ^ (value >> 63)
    if 0 <= zigzag < 0x4000:
        return _SHORT_VARINTS[zigzag]
    return encode_varint(value)


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header] = (),
    attributes: int = 0,
) -> bytes:
    """One v2 record, length prefix included."""
    # Parts are collected and joined once, with the length prefix computed from their sizes,
    # so the record's bytes are copied exactly once.
    parts: list[bytes] = [
        b"",  # the length prefix, filled in below
        _ONE_BYTE_VARINTS[attributes] if 0 <= attributes < 0x80 else bytes((attributes & 0xFF,)),
        _varint(timestamp_delta),
        _varint(offset_delta),
    ]
    if key is None:
        parts.append(_NULL_LENGTH)
    else:
        parts.append(_varint(len(key)))
        parts.append(key)
    if value is None:
        parts.append(_NULL_LENGTH)
    else:
        parts.append(_varint(len(value)))
        parts.append(value)
    parts.append(_varint(len(headers)))
    for header in headers:
        header_key = header.key_bytes()
        parts.append(_varint(len(header_key)))
        parts.append(header_key)
        if header.value is None:
            parts.append(_NULL_LENGTH)
        else:
            parts.append(_varint(len(header.value)))
            parts.append(header.value)
    parts[0] = _varint(sum(map(len, parts)))
    return b"".join(parts)


def make_attributes(
    compression: CompressionType = CompressionType.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    is_transactional: bool = False,
    is_control: bool = False,
    has_delete_horizon: bool = False,
) -> int:
    """The attributes int16 for these flags."""
    attributes = int(compression) & COMPRESSION_CODEC_MASK
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if is_control:
        attributes |= CONTROL_FLAG_MASK
    if has_delete_horizon:
        attributes |= DELETE_HORIZON_FLAG_MASK
    return attributes


def encode_batch(
    records: Sequence[Record],
    *,
    base_offset: int | None = None,
    compression: CompressionType = CompressionType.NONE,
    compression_level: int | None = None,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    is_transactional: bool = False,
    is_control: bool = False,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    delete_horizon_ms: int | None = None,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    last_offset_delta: int | None = None,
) -> bytes:
    """Encode records (with absolute offsets) as one v2 batch; the CRC is computed here.

    Defaults follow Kafka's builder: ``base_offset`` is the first record's offset,
    ``base_timestamp`` the first record's timestamp (or the delete horizon when one is given),
    ``max_timestamp`` the largest record timestamp (pass the append time for LogAppendTime),
    ``last_offset_delta`` the last record's delta. An empty batch (what the cleaner leaves to
    keep producer state) needs ``base_offset`` and ``last_offset_delta`` and gets base
    timestamp -1.
    """
    if base_offset is None:
        if not records:
            raise InvalidRecordError("an empty batch needs an explicit base_offset")
        base_offset = records[0].offset
    if delete_horizon_ms is not None:
        base_timestamp = delete_horizon_ms
    if base_timestamp is None:
        base_timestamp = records[0].timestamp if records else NO_TIMESTAMP
    if max_timestamp is None:
        max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    if last_offset_delta is None:
        if not records:
            raise InvalidRecordError("an empty batch needs an explicit last_offset_delta")
        last_offset_delta = records[-1].offset - base_offset
    parts = []
    previous_delta = -1
    for record in records:
        offset_delta = record.offset - base_offset
        if not 0 <= offset_delta <= INT32_MAX or offset_delta <= previous_delta:
            raise InvalidRecordError(
                f"record offset {record.offset} is not above the previous one and within "
                f"int32 of base offset {base_offset}"
            )
        previous_delta = offset_delta
        parts.append(
            encode_record(
                offset_delta,
                record.timestamp - base_timestamp,
                record.key,
                record.value,
                record.headers,
                record.attributes,
            )
        )
    if records and last_offset_delta < previous_delta:
        raise InvalidRecordError("last_offset_delta is below the last record's offset delta")
    if not INT32_MIN <= last_offset_delta <= INT32_MAX:
        raise InvalidRecordError(f"last_offset_delta {last_offset_delta} is outside int32")
    section = b"".join(parts)
    if compression is not CompressionType.NONE:
        section = compress(compression, section, compression_level)
    attributes = make_attributes(
        compression, timestamp_type, is_transactional, is_control, delete_horizon_ms is not None
    )
    return assemble_batch(
        section,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=attributes,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        records_count=len(records),
    )


def assemble_batch(
    section: Buffer,
    *,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    records_count: int,
) -> bytes:
    """Frame an already encoded (and compressed) records section as a v2 batch with its CRC."""
    out = bytearray(RECORD_BATCH_OVERHEAD + len(section))
    HEADER_STRUCT.pack_into(
        out,
        0,
        base_offset,
        len(out) - LOG_OVERHEAD,
        partition_leader_epoch,
        MAGIC_V2,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        records_count,
    )
    out[RECORD_BATCH_OVERHEAD:] = section
    _CRC_AND_AFTER.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


def set_base_offset(batch: bytearray | memoryview, base_offset: int) -> None:
    """Assign offsets in place, as a broker does on append (baseOffset is outside the CRC)."""
    struct.pack_into(">q", batch, 0, base_offset)


def set_partition_leader_epoch(batch: bytearray | memoryview, epoch: int) -> None:
    """Stamp the leader epoch in place (outside the CRC)."""
    struct.pack_into(">i", batch, 12, epoch)
