"""Values of Kafka's ``__remote_log_metadata`` topic (KIP-405 tiered storage), bytes <-> values.

Every record of that topic has a null key and a value framed as Kafka's
``AbstractApiMessageSerde`` writes it::

    uvarint frameVersion (always 1; 0 is rejected) | uvarint apiKey | uvarint version | message

Leftover bytes after the message are an error. Every message is "flexible": strings and
arrays are compact (uvarint length + 1), nullable bytes are uvarint length + 1 (0 = null), a
uuid is 16 raw bytes, ints are big-endian, and **every struct, nested ones included, ends
with a tagged-field section** (uvarint count, then uvarint tag, uvarint size, bytes).

=======  ==========================================  ========  ==================================
apiKey   record                                      versions  tagged fields (top level)
=======  ==========================================  ========  ==================================
0        RemoteLogSegmentMetadataRecord              0-1       0 TxnIndexEmpty bool,
                                                               1 BrokerLeaderEpoch int32 (v1+)
1        RemoteLogSegmentMetadataUpdateRecord        0-1       0 BrokerLeaderEpoch int32,
                                                               1 EndOffset int64 (v1+)
2        RemotePartitionDeleteMetadataRecord         0-1       0 BrokerLeaderEpoch int32,
                                                               1 EndOffset int64 (v1+)
3        RemoteLogSegmentMetadataSnapshotRecord      0         (none)
=======  ==========================================  ========  ==================================

Field orders are in each dataclass's docstring. Unknown tags are skipped (Kafka's rule for
tagged fields); a known tag whose size disagrees with its type is an error. Uuids are kept
as Kafka's text form (URL-safe base64 of the 16 bytes, no padding, 22 characters), the form
object names use. Segment states (``RemoteLogSegmentState``): COPY_SEGMENT_STARTED=0,
COPY_SEGMENT_FINISHED=1, DELETE_SEGMENT_STARTED=2, DELETE_SEGMENT_FINISHED=3; partition
delete states: DELETE_PARTITION_MARKED=0, STARTED=1, FINISHED=2.

Errors: :class:`~seglog.errors.CorruptRemoteObjectError` naming the record (``where``, e.g.
``__remote_log_metadata-3 offset 17``) and the byte position in the value.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from seglog.errors import CorruptRemoteObjectError
from seglog.format.checkpoint import kafka_uuid_from_bytes, kafka_uuid_to_bytes

FRAME_VERSION = 1
COPY_SEGMENT_STARTED = 0
COPY_SEGMENT_FINISHED = 1
DELETE_SEGMENT_STARTED = 2
DELETE_SEGMENT_FINISHED = 3
SEGMENT_STATES = frozenset({0, 1, 2, 3})
PARTITION_DELETE_STATES = frozenset({0, 1, 2})
_MAX_VERSION = {0: 1, 1: 1, 2: 1, 3: 0}
_UVARINT_MAX_BYTES = 5


@dataclass(frozen=True, slots=True)
class TopicIdPartition:
    """``TopicIdPartition{Name, Id, Partition}``."""

    topic: str
    topic_id: str
    partition: int


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentId:
    """``RemoteLogSegmentId{TopicIdPartition, Id}``: one upload attempt of one segment."""

    topic_id_partition: TopicIdPartition
    id: str


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentMetadataRecord:
    """apiKey 0: segment id, start offset, end offset, broker id, max timestamp ms, event
    timestamp ms, segment leader epochs [(epoch, start offset)], segment size in bytes,
    custom metadata (nullable bytes), state; tags txn_index_empty, broker_leader_epoch."""

    version: int
    segment_id: RemoteLogSegmentId
    start_offset: int
    end_offset: int
    broker_id: int
    max_timestamp_ms: int
    event_timestamp_ms: int
    segment_leader_epochs: tuple[tuple[int, int], ...]
    segment_size_in_bytes: int
    custom_metadata: bytes | None
    state: int
    txn_index_empty: bool = False
    broker_leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentMetadataUpdateRecord:
    """apiKey 1: segment id, broker id, event timestamp ms, custom metadata, state; tags
    broker_leader_epoch, end_offset (-1 when absent)."""

    version: int
    segment_id: RemoteLogSegmentId
    broker_id: int
    event_timestamp_ms: int
    custom_metadata: bytes | None
    state: int
    broker_leader_epoch: int = -1
    end_offset: int = -1


@dataclass(frozen=True, slots=True)
class RemotePartitionDeleteMetadataRecord:
    """apiKey 2: topic-id-partition, broker id, event timestamp ms, state; tags
    broker_leader_epoch, end_offset."""

    version: int
    topic_id_partition: TopicIdPartition
    broker_id: int
    event_timestamp_ms: int
    state: int
    broker_leader_epoch: int = -1
    end_offset: int = -1


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentMetadataSnapshotRecord:
    """apiKey 3 (the removed snapshot file's record): segment uuid, start and end offsets,
    broker id, max timestamp ms, event timestamp ms, leader epochs, size, custom metadata,
    state."""

    version: int
    segment_id: str
    start_offset: int
    end_offset: int
    broker_id: int
    max_timestamp_ms: int
    event_timestamp_ms: int
    segment_leader_epochs: tuple[tuple[int, int], ...]
    segment_size_in_bytes: int
    custom_metadata: bytes | None
    state: int


RemoteLogMetadata = (
    RemoteLogSegmentMetadataRecord
    | RemoteLogSegmentMetadataUpdateRecord
    | RemotePartitionDeleteMetadataRecord
    | RemoteLogSegmentMetadataSnapshotRecord
)


class _Cursor:
    def __init__(self, data: bytes, where: str) -> None:
        self.data = data
        self.pos = 0
        self.where = where

    def fail(self, reason: str, position: int | None = None) -> CorruptRemoteObjectError:
        return CorruptRemoteObjectError(
            reason, position=self.pos if position is None else position, path=self.where
        )

    def take(self, size: int) -> bytes:
        end = self.pos + size
        if size < 0 or end > len(self.data):
            raise self.fail(f"value ends at byte {len(self.data)}, needs {end}")
        out = self.data[self.pos : end]
        self.pos = end
        return out

    def int8(self) -> int:
        return int.from_bytes(self.take(1), "big", signed=True)

    def int32(self) -> int:
        return int.from_bytes(self.take(4), "big", signed=True)

    def int64(self) -> int:
        return int.from_bytes(self.take(8), "big", signed=True)

    def uvarint(self) -> int:
        start = self.pos
        value = 0
        for shift in range(0, 7 * _UVARINT_MAX_BYTES, 7):
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
        raise self.fail("unsigned varint longer than 5 bytes", start)

    def string(self) -> str:
        start = self.pos
        length = self.uvarint() - 1
        if length < 0:
            raise self.fail("null string where a string is required", start)
        raw = self.take(length)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(f"string is not UTF-8: {exc}", start) from exc

    def nullable_bytes(self) -> bytes | None:
        length = self.uvarint() - 1
        return None if length < 0 else self.take(length)

    def uuid(self) -> str:
        return kafka_uuid_from_bytes(self.take(16))

    def tags(self) -> dict[int, bytes]:
        out: dict[int, bytes] = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            out[tag] = self.take(self.uvarint())
        return out

    def array_length(self) -> int:
        start = self.pos
        length = self.uvarint() - 1
        if length < 0:
            raise self.fail("null array where an array is required", start)
        if length > len(self.data) - self.pos:
            raise self.fail(f"array of {length} entries cannot fit the value", start)
        return length


def _tag_int(cursor: _Cursor, tags: dict[int, bytes], tag: int, size: int, default: int) -> int:
    raw = tags.get(tag)
    if raw is None:
        return default
    if len(raw) != size:
        raise cursor.fail(f"tagged field {tag} has {len(raw)} bytes, expected {size}")
    return int.from_bytes(raw, "big", signed=True)


def _topic_id_partition(cursor: _Cursor) -> TopicIdPartition:
    name = cursor.string()
    topic_id = cursor.uuid()
    partition = cursor.int32()
    cursor.tags()
    return TopicIdPartition(name, topic_id, partition)


def _segment_id(cursor: _Cursor) -> RemoteLogSegmentId:
    tip = _topic_id_partition(cursor)
    segment = cursor.uuid()
    cursor.tags()
    return RemoteLogSegmentId(tip, segment)


def _epochs(cursor: _Cursor) -> tuple[tuple[int, int], ...]:
    out = []
    for _ in range(cursor.array_length()):
        epoch = cursor.int32()
        offset = cursor.int64()
        cursor.tags()
        out.append((epoch, offset))
    return tuple(out)


def _state(cursor: _Cursor, allowed: frozenset[int], what: str) -> int:
    position = cursor.pos
    state = cursor.int8()
    if state not in allowed:
        raise cursor.fail(f"{what} {state} is not one of {sorted(allowed)}", position)
    return state


def decode_remote_log_metadata(value: bytes, *, where: str = "record") -> RemoteLogMetadata:
    """One ``__remote_log_metadata`` record value (module docstring)."""
    cursor = _Cursor(bytes(value), where)
    frame = cursor.uvarint()
    if frame != FRAME_VERSION:
        raise cursor.fail(f"frame version {frame}, expected {FRAME_VERSION}", 0)
    api_key_at = cursor.pos
    api_key = cursor.uvarint()
    if api_key not in _MAX_VERSION:
        raise cursor.fail(f"apiKey {api_key} is not a remote log metadata record", api_key_at)
    version_at = cursor.pos
    version = cursor.uvarint()
    if version > _MAX_VERSION[api_key]:
        raise cursor.fail(
            f"apiKey {api_key} version {version} is newer than {_MAX_VERSION[api_key]}",
            version_at,
        )
    record: RemoteLogMetadata
    if api_key == 0:
        segment_id = _segment_id(cursor)
        start, end, broker = cursor.int64(), cursor.int64(), cursor.int32()
        max_ts, event_ts = cursor.int64(), cursor.int64()
        epochs = _epochs(cursor)
        size = cursor.int32()
        custom = cursor.nullable_bytes()
        state = _state(cursor, SEGMENT_STATES, "RemoteLogSegmentState")
        tags = cursor.tags()
        record = RemoteLogSegmentMetadataRecord(
            version,
            segment_id,
            start,
            end,
            broker,
            max_ts,
            event_ts,
            epochs,
            size,
            custom,
            state,
            txn_index_empty=_tag_int(cursor, tags, 0, 1, 0) != 0,
            broker_leader_epoch=_tag_int(cursor, tags, 1, 4, -1),
        )
    elif api_key == 1:
        segment_id = _segment_id(cursor)
        broker, event_ts = cursor.int32(), cursor.int64()
        custom = cursor.nullable_bytes()
        state = _state(cursor, SEGMENT_STATES, "RemoteLogSegmentState")
        tags = cursor.tags()
        record = RemoteLogSegmentMetadataUpdateRecord(
            version,
            segment_id,
            broker,
            event_ts,
            custom,
            state,
            broker_leader_epoch=_tag_int(cursor, tags, 0, 4, -1),
            end_offset=_tag_int(cursor, tags, 1, 8, -1),
        )
    elif api_key == 2:
        tip = _topic_id_partition(cursor)
        broker, event_ts = cursor.int32(), cursor.int64()
        state = _state(cursor, PARTITION_DELETE_STATES, "RemotePartitionDeleteState")
        tags = cursor.tags()
        record = RemotePartitionDeleteMetadataRecord(
            version,
            tip,
            broker,
            event_ts,
            state,
            broker_leader_epoch=_tag_int(cursor, tags, 0, 4, -1),
            end_offset=_tag_int(cursor, tags, 1, 8, -1),
        )
    else:
        segment = cursor.uuid()
        start, end, broker = cursor.int64(), cursor.int64(), cursor.int32()
        max_ts, event_ts = cursor.int64(), cursor.int64()
        epochs = _epochs(cursor)
        size = cursor.int32()
        custom = cursor.nullable_bytes()
        state = _state(cursor, SEGMENT_STATES, "RemoteLogSegmentState")
        cursor.tags()
        record = RemoteLogSegmentMetadataSnapshotRecord(
            version, segment, start, end, broker, max_ts, event_ts, epochs, size, custom, state
        )
    if cursor.pos != len(cursor.data):
        raise cursor.fail(f"{len(cursor.data) - cursor.pos} bytes left after the record")
    return record


# --- encoding (seglog never writes into a Kafka bucket; tests build metadata logs with it) ---
def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _string(text: str) -> bytes:
    raw = text.encode()
    return _uvarint(len(raw) + 1) + raw


def _nullable_bytes(raw: bytes | None) -> bytes:
    return b"\x00" if raw is None else _uvarint(len(raw) + 1) + raw


def _tags(fields: list[tuple[int, bytes]]) -> bytes:
    out = _uvarint(len(fields))
    for tag, raw in fields:
        out += _uvarint(tag) + _uvarint(len(raw)) + raw
    return out


def _encode_tip(tip: TopicIdPartition) -> bytes:
    return (
        _string(tip.topic)
        + kafka_uuid_to_bytes(tip.topic_id)
        + struct.pack(">i", tip.partition)
        + _tags([])
    )


def _encode_segment_id(segment: RemoteLogSegmentId) -> bytes:
    return _encode_tip(segment.topic_id_partition) + kafka_uuid_to_bytes(segment.id) + _tags([])


def _encode_epochs(epochs: tuple[tuple[int, int], ...]) -> bytes:
    out = _uvarint(len(epochs) + 1)
    for epoch, offset in epochs:
        out += struct.pack(">iq", epoch, offset) + _tags([])
    return out


def encode_remote_log_metadata(record: RemoteLogMetadata) -> bytes:
    """The framed value of ``record`` (inverse of :func:`decode_remote_log_metadata`)."""
    if isinstance(record, RemoteLogSegmentMetadataRecord):
        tags: list[tuple[int, bytes]] = []
        if record.txn_index_empty:
            tags.append((0, b"\x01"))
        if record.version >= 1 and record.broker_leader_epoch != -1:
            tags.append((1, struct.pack(">i", record.broker_leader_epoch)))
        body = (
            _encode_segment_id(record.segment_id)
            + struct.pack(">qqiqq", record.start_offset, record.end_offset, record.broker_id,
                          record.max_timestamp_ms, record.event_timestamp_ms)
            + _encode_epochs(record.segment_leader_epochs)
            + struct.pack(">i", record.segment_size_in_bytes)
            + _nullable_bytes(record.custom_metadata)
            + struct.pack(">b", record.state)
            + _tags(tags)
        )  # fmt: skip
        api_key = 0
    elif isinstance(
        record, RemoteLogSegmentMetadataUpdateRecord | RemotePartitionDeleteMetadataRecord
    ):
        tags = []
        if record.version >= 1 and record.broker_leader_epoch != -1:
            tags.append((0, struct.pack(">i", record.broker_leader_epoch)))
        if record.version >= 1 and record.end_offset != -1:
            tags.append((1, struct.pack(">q", record.end_offset)))
        if isinstance(record, RemoteLogSegmentMetadataUpdateRecord):
            api_key = 1
            body = (
                _encode_segment_id(record.segment_id)
                + struct.pack(">iq", record.broker_id, record.event_timestamp_ms)
                + _nullable_bytes(record.custom_metadata)
            )
        else:
            api_key = 2
            body = _encode_tip(record.topic_id_partition) + struct.pack(
                ">iq", record.broker_id, record.event_timestamp_ms
            )
        body += struct.pack(">b", record.state) + _tags(tags)
    else:
        api_key = 3
        body = (
            kafka_uuid_to_bytes(record.segment_id)
            + struct.pack(">qqiqq", record.start_offset, record.end_offset, record.broker_id,
                          record.max_timestamp_ms, record.event_timestamp_ms)
            + _encode_epochs(record.segment_leader_epochs)
            + struct.pack(">i", record.segment_size_in_bytes)
            + _nullable_bytes(record.custom_metadata)
            + struct.pack(">b", record.state)
            + _tags([])
        )  # fmt: skip
    return _uvarint(FRAME_VERSION) + _uvarint(api_key) + _uvarint(record.version) + body
