"""Legacy message formats v0 and v1 ("message sets"), read only.

Each log entry (big-endian)::

    pos width field
      0   8  offset              absolute; for a compressed wrapper, its last inner offset
      8   4  messageSize         bytes after this field
     12   4  crc                 uint32 CRC-32 (IEEE) of bytes [16, end of message)
     16   1  magic               0 or 1
     17   1  attributes          bits 0-2 codec (0-3, no zstd); bit 3 LogAppendTime (v1 only)
     18   8  timestamp           v1 only
      .   4  keyLength           -1 = null
      .   .  key
      .   4  valueLength         -1 = null
      .   .  value

A compressed entry is a wrapper whose value is the compressed concatenation of inner entries
(same layout, uncompressed). Inner offsets are absolute in v0 and relative (0..n-1) in v1,
where ``absolute = wrapperOffset - lastInnerRelative + innerRelative`` (Kafka applies this only
when ``wrapperOffset - lastInnerRelative >= 0``; an unassigned producer-side wrapper keeps its
inner offsets as written). A wrapper with no inner message is corrupt. In v1 a LogAppendTime
wrapper's timestamp overrides the inner timestamps. v0 has no timestamps (-1). Nothing here
writes these formats: seglog only ever writes v2.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cached_property

from seglog.errors import CorruptRecordError
from seglog.format.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, CompressionType, decompress
from seglog.format.crc import crc32_ieee
from seglog.format.records import NO_TIMESTAMP, Record, TimestampType

Buffer = bytes | bytearray | memoryview

LOG_OVERHEAD = 12
RECORD_OVERHEAD_V0 = 14  # crc 4 + magic 1 + attributes 1 + key length 4 + value length 4
RECORD_OVERHEAD_V1 = 22  # v0 + timestamp 8
LEGACY_CODEC_MASK = 0x07
LEGACY_TIMESTAMP_TYPE_MASK = 0x08
MAX_LEGACY_CODEC = 3

_ENTRY_HEAD = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class _Message:
    offset: int
    crc: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None


def _parse_message(buf: Buffer, position: int, end: int) -> _Message:
    """Parse the legacy entry at ``position``; the frame must lie within ``end``."""
    if position + LOG_OVERHEAD + RECORD_OVERHEAD_V0 > end:
        raise CorruptRecordError("legacy message is shorter than its minimum size")
    offset, size, crc, magic, attributes = _ENTRY_HEAD.unpack_from(buf, position)
    message_end = position + LOG_OVERHEAD + size
    if magic not in (0, 1):
        raise CorruptRecordError(f"legacy message has magic {magic}")
    minimum = RECORD_OVERHEAD_V0 if magic == 0 else RECORD_OVERHEAD_V1
    if size < minimum or message_end > end:
        raise CorruptRecordError(f"legacy message size {size} is impossible")
    pos = position + 18
    timestamp = NO_TIMESTAMP
    if magic == 1:
        (timestamp,) = _INT64.unpack_from(buf, pos)
        pos += 8
    key, pos = _read_bytes(buf, pos, message_end, "key")
    value, pos = _read_bytes(buf, pos, message_end, "value")
    if pos != message_end:
        raise CorruptRecordError(
            f"legacy message declares {size} bytes but its fields end {message_end - pos} early"
        )
    return _Message(offset, crc, magic, attributes, timestamp, key, value)


def _read_bytes(buf: Buffer, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise CorruptRecordError(f"legacy message {what} length runs past the message")
    (length,) = _INT32.unpack_from(buf, pos)
    pos += 4
    if length < 0:
        if length != -1:
            raise CorruptRecordError(f"legacy message has invalid {what} length {length}")
        return None, pos
    if pos + length > end:
        raise CorruptRecordError(f"legacy message {what} length {length} runs past the message")
    return bytes(buf[pos : pos + length]), pos + length


@dataclass(frozen=True)
class LegacyBatch:
    """One shallow v0/v1 entry: a single message, or a compressed wrapper of many.

    Mirrors Kafka's ``AbstractLegacyRecordBatch``: ``last_offset`` is the entry's offset, and
    ``base_offset`` the first inner offset (decompressing a wrapper to find it).
    """

    position: int
    offset: int
    message_size: int
    crc: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    raw: Buffer

    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    partition_leader_epoch = -1
    is_transactional = False
    is_control = False
    has_delete_horizon = False
    delete_horizon_ms = None

    @property
    def last_offset(self) -> int:
        """The entry's own offset (a wrapper carries its last inner offset)."""
        return self.offset

    @property
    def next_offset(self) -> int:
        """The offset after this entry."""
        return self.offset + 1

    @property
    def base_offset(self) -> int:
        """First offset in the entry (the first inner offset of a compressed wrapper)."""
        if self.compression is CompressionType.NONE:
            return self.offset
        records = self.records()
        return records[0].offset if records else self.offset

    @property
    def size_in_bytes(self) -> int:
        """Total size on disk: ``messageSize + 12``."""
        return self.message_size + LOG_OVERHEAD

    @property
    def compression(self) -> CompressionType:
        """The wrapper's codec (none for a plain message)."""
        codec = self.attributes & LEGACY_CODEC_MASK
        if codec > MAX_LEGACY_CODEC:
            raise CorruptRecordError(
                f"legacy message has invalid codec {codec}", position=self.position
            )
        return CompressionType(codec)

    @property
    def timestamp_type(self) -> TimestampType:
        """NoTimestampType for v0; CreateTime or LogAppendTime (bit 3) for v1."""
        if self.magic == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        if self.attributes & LEGACY_TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def max_timestamp(self) -> int:
        """The entry's timestamp (a v1 wrapper carries its inner maximum or the append time)."""
        return self.timestamp

    @property
    def records_count(self) -> int:
        """Number of records in the entry."""
        return len(self.records())

    def reported_timestamp(self, record: Record) -> int:
        """The timestamp Kafka reports for a record of this entry."""
        return record.timestamp

    def compute_crc(self) -> int:
        """CRC-32 (IEEE) over the message from its magic byte to its end."""
        return crc32_ieee(memoryview(self.raw)[16:])

    def is_valid(self) -> bool:
        """Stored CRC equals the computed one."""
        return self.crc == self.compute_crc()

    def ensure_valid(self) -> None:
        """Raise ``CorruptRecordError`` unless the CRC matches."""
        computed = self.compute_crc()
        if computed != self.crc:
            raise CorruptRecordError(
                f"legacy message CRC mismatch: stored {self.crc}, computed {computed}",
                position=self.position,
            )

    def records(self) -> list[Record]:
        """The entry's records with absolute offsets (inner records of a wrapper)."""
        return self._records

    def record_checksums(self) -> list[tuple[int, bool]]:
        """``(stored CRC, is valid)`` of each record in :meth:`records` order (inner messages
        of a compressed wrapper carry their own CRC-32), as kafka-dump-log prints them."""
        if self.compression is CompressionType.NONE:
            return [(self.crc, self.is_valid())]
        self.records()  # raises CorruptRecordError, positioned, if the wrapper is damaged
        assert self.value is not None
        inner = decompress(self.compression, self.value, DEFAULT_MAX_DECOMPRESSED_BYTES)
        checksums = []
        pos = 0
        while pos < len(inner):
            (size,) = _INT32.unpack_from(inner, pos + 8)
            (crc,) = struct.unpack_from(">I", inner, pos + 12)
            message_end = pos + LOG_OVERHEAD + size
            checksums.append((crc, crc == crc32_ieee(memoryview(inner)[pos + 16 : message_end])))
            pos = message_end
        return checksums

    @cached_property
    def _records(self) -> list[Record]:
        codec = self.compression
        if codec is CompressionType.NONE:
            return [Record(self.offset, self.timestamp, self.key, self.value)]
        if self.value is None:
            raise CorruptRecordError(
                "compressed legacy wrapper has a null value", position=self.position
            )
        try:
            inner = decompress(codec, self.value, DEFAULT_MAX_DECOMPRESSED_BYTES)
            messages = _parse_inner(inner)
        except CorruptRecordError as exc:
            raise CorruptRecordError(
                f"compressed legacy wrapper at offset {self.offset}: {exc.reason}",
                position=self.position,
            ) from exc
        if not messages:
            # Kafka: "Found invalid compressed record set with no inner records".
            raise CorruptRecordError(
                f"compressed legacy wrapper at offset {self.offset} has no inner messages",
                position=self.position,
            )
        if self.magic == 0:
            return [Record(m.offset, NO_TIMESTAMP, m.key, m.value) for m in messages]
        # As Kafka's DeepRecordsIterator: inner offsets are made absolute only when
        # wrapperOffset - lastInnerOffset >= 0; otherwise (a wrapper whose offset was never
        # assigned, as a producer sends it) they are kept as written.
        absolute_base = self.offset - messages[-1].offset
        shift = absolute_base if absolute_base >= 0 else 0
        log_append = bool(self.attributes & LEGACY_TIMESTAMP_TYPE_MASK)
        return [
            Record(
                shift + m.offset,
                self.timestamp if log_append else m.timestamp,
                m.key,
                m.value,
            )
            for m in messages
        ]


def _parse_inner(buf: bytes) -> list[_Message]:
    messages = []
    pos = 0
    end = len(buf)
    while pos < end:
        if pos + LOG_OVERHEAD > end:
            raise CorruptRecordError(f"truncated inner message at {pos}")
        (size,) = _INT32.unpack_from(buf, pos + 8)
        message = _parse_message(buf, pos, end)
        if message.attributes & LEGACY_CODEC_MASK:
            raise CorruptRecordError(f"nested compressed message at inner position {pos}")
        messages.append(message)
        pos += LOG_OVERHEAD + size
    return messages


def parse_legacy_entry(buf: Buffer, position: int, end: int) -> LegacyBatch:
    """Parse the framed legacy entry at ``position`` (frame checked by the caller)."""
    message = _parse_message(buf, position, end)
    (size,) = _INT32.unpack_from(buf, position + 8)
    return LegacyBatch(
        position=position,
        offset=message.offset,
        message_size=size,
        crc=message.crc,
        magic=message.magic,
        attributes=message.attributes,
        timestamp=message.timestamp,
        key=message.key,
        value=message.value,
        raw=memoryview(buf)[position : position + LOG_OVERHEAD + size],
    )
