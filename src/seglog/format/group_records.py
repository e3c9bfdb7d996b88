"""The records of ``__consumer_offsets`` (classic consumer groups): bytes <-> values.

A record's **key** is an int16 record type followed by the key struct; its **value** is an
int16 value version followed by the value struct, or null (a tombstone: the key is deleted).
Kafka 3.x calls the key's int16 the "key version", 4.x the record's ``apiKey``; the bytes are
the same. Every integer is big-endian two's complement. Non-flexible encodings use
``string`` = int16 length + UTF-8 (length -1 = null, only where nullable), ``bytes`` = int32
length + bytes, arrays = int32 count; flexible ones (KIP-482) use an unsigned varint
``length + 1`` for strings, bytes and arrays (0 = null), and end every struct with a tagged
field buffer (unsigned varint count, then per field unsigned varint tag, size, bytes).

Keys, by type:

* 0 (legacy) and 1: :class:`OffsetCommitKey` = ``group`` string, ``topic`` string,
  ``partition`` int32 (seglog writes type 1);
* 2: :class:`GroupMetadataKey` = ``group`` string;
* any other type (3-15 are KIP-848 and share-group records): :class:`UnknownGroupRecordKey`,
  which loaders skip, as Kafka's loader does.

:class:`OffsetCommitValue`, by version:

* 0 and 2: ``offset`` int64, ``metadata`` string, ``commitTimestamp`` int64;
* 1: v0 then ``expireTimestamp`` int64;
* 3: ``offset`` int64, ``leaderEpoch`` int32 (-1 none), ``metadata`` string,
  ``commitTimestamp`` int64;
* 4 (flexible): v3 with a compact ``metadata``, then tagged fields (tag 0: ``topicId`` uuid;
  other tags are skipped).

seglog writes v3, or v1 when the commit carries an explicit expire timestamp, as Kafka 3.x
does (every Kafka from 2.1 on reads both; 3.x tools cannot read v4).

:class:`GroupMetadataValue` (versions 0-4; seglog writes 3, as every Kafka does):
``protocolType`` string, ``generation`` int32, ``protocol`` nullable string, ``leader``
nullable string, ``currentStateTimestamp`` int64 (v2+, else -1), ``members`` array of
:class:`MemberMetadata`: ``memberId`` string, ``groupInstanceId`` nullable string (v3+),
``clientId`` string, ``clientHost`` string, ``rebalanceTimeout`` int32 (v1+; v0 reads it as the
session timeout, as Kafka does), ``sessionTimeout`` int32, ``subscription`` bytes,
``assignment`` bytes. v4 is the flexible encoding of the same fields.

Bytes after a value's last field are ignored (Kafka's generated readers ignore them too).
Anything else that breaks a layout raises :class:`~seglog.errors.CorruptGroupRecordError`
naming the byte position inside the key or value.

:func:`group_partition` is Kafka's ``partitionFor``: ``Utils.abs(groupId.hashCode()) % n``
with Java's ``String.hashCode`` over UTF-16 code units and ``Utils.abs(Integer.MIN_VALUE) = 0``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from seglog.errors import CorruptGroupRecordError, InvalidRecordError
from seglog.format.message_fields import (
    FieldReader,
    write_bytes,
    write_string,
    write_uvarint,
)

OFFSET_COMMIT_KEY_LEGACY_TYPE = 0
OFFSET_COMMIT_KEY_TYPE = 1
GROUP_METADATA_KEY_TYPE = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_EXPIRE_VERSION = 1
OFFSET_COMMIT_VALUE_MAX_VERSION = 4
GROUP_METADATA_VALUE_VERSION = 3
GROUP_METADATA_VALUE_MAX_VERSION = 4
FLEXIBLE_VERSION = 4  # first flexible version of both values
TOPIC_ID_TAG = 0
NO_LEADER_EPOCH = -1
NO_TIMESTAMP = -1
DEFAULT_OFFSETS_PARTITIONS = 50
UUID_BYTES = 16

_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    """Key types 0 and 1: one committed offset of ``group`` for ``topic``-``partition``."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    """Key type 2: the metadata (generation, protocol, members) of ``group``."""

    group: str


@dataclass(frozen=True, slots=True)
class UnknownGroupRecordKey:
    """A key type seglog does not read (KIP-848, share groups, ...): skipped by loaders."""

    record_type: int


GroupRecordKey = OffsetCommitKey | GroupMetadataKey | UnknownGroupRecordKey


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    """A committed offset; ``expire_timestamp`` -1 unless the commit gave one (value v1)."""

    offset: int
    metadata: str = ""
    commit_timestamp: int = NO_TIMESTAMP
    leader_epoch: int = NO_LEADER_EPOCH
    expire_timestamp: int = NO_TIMESTAMP
    topic_id: bytes | None = None  # v4's tag 0 (16 bytes), when set


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """One member of a group as stored: its protocol's subscription and assignment bytes."""

    member_id: str
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    """A group's generation, protocol and members; an empty group has no members."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = NO_TIMESTAMP
    members: tuple[MemberMetadata, ...] = ()


# --- partitioning ----------------------------------------------------------------------------


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``h = 31*h + unit`` over UTF-16 code units, as int32."""
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def group_partition(group_id: str, partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` (Kafka's ``partitionFor``)."""
    if partitions < 1:
        raise InvalidRecordError(f"partition count {partitions} must be at least 1")
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


# --- writing ---------------------------------------------------------------------------------


def encode_key(key: OffsetCommitKey | GroupMetadataKey) -> bytes:
    """A record key: type 1 for an offset commit, 2 for group metadata."""
    if isinstance(key, OffsetCommitKey):
        return (
            _I16.pack(OFFSET_COMMIT_KEY_TYPE)
            + write_string(key.group)
            + write_string(key.topic)
            + _I32.pack(key.partition)
        )
    return _I16.pack(GROUP_METADATA_KEY_TYPE) + write_string(key.group)


def offset_commit_value_version(value: OffsetCommitValue) -> int:
    """The version Kafka 3.x writes: 1 with an explicit expire timestamp, else 3."""
    if value.expire_timestamp != NO_TIMESTAMP:
        return OFFSET_COMMIT_VALUE_EXPIRE_VERSION
    return OFFSET_COMMIT_VALUE_VERSION


def encode_offset_commit_value(value: OffsetCommitValue, version: int | None = None) -> bytes:
    """A committed offset's value bytes, in ``version`` (default: Kafka's choice)."""
    v = offset_commit_value_version(value) if version is None else version
    head = _I16.pack(v) + _I64.pack(value.offset)
    if v in (0, 1, 2):
        out = head + write_string(value.metadata) + _I64.pack(value.commit_timestamp)
        return out + _I64.pack(value.expire_timestamp) if v == 1 else out
    if v not in (3, 4):
        raise InvalidRecordError(f"OffsetCommitValue version {v} is outside 0..4")
    flexible = v == FLEXIBLE_VERSION
    out = head + _I32.pack(value.leader_epoch) + write_string(value.metadata, flexible=flexible)
    out += _I64.pack(value.commit_timestamp)
    if not flexible:
        return out
    if value.topic_id is None:
        return out + b"\x00"
    return out + b"\x01" + write_uvarint(TOPIC_ID_TAG) + write_uvarint(UUID_BYTES) + value.topic_id


def encode_group_metadata_value(
    value: GroupMetadataValue, version: int = GROUP_METADATA_VALUE_VERSION
) -> bytes:
    """A group's metadata value bytes (version 3 unless told)."""
    if not 0 <= version <= GROUP_METADATA_VALUE_MAX_VERSION:
        raise InvalidRecordError(f"GroupMetadataValue version {version} is outside 0..4")
    fx = version >= FLEXIBLE_VERSION
    parts = [
        _I16.pack(version),
        write_string(value.protocol_type, flexible=fx),
        _I32.pack(value.generation),
        write_string(value.protocol, flexible=fx),
        write_string(value.leader, flexible=fx),
    ]
    if version >= 2:
        parts.append(_I64.pack(value.current_state_timestamp))
    members = value.members
    parts.append(write_uvarint(len(members) + 1) if fx else _I32.pack(len(members)))
    for m in members:
        parts.append(write_string(m.member_id, flexible=fx))
        if version >= 3:
            parts.append(write_string(m.group_instance_id, flexible=fx))
        parts += [write_string(m.client_id, flexible=fx), write_string(m.client_host, flexible=fx)]
        if version >= 1:
            parts.append(_I32.pack(m.rebalance_timeout))
        parts.append(_I32.pack(m.session_timeout))
        parts += [write_bytes(m.subscription, flexible=fx), write_bytes(m.assignment, flexible=fx)]
        if fx:
            parts.append(b"\x00")
    if fx:
        parts.append(b"\x00")
    return b"".join(parts)


# --- reading ---------------------------------------------------------------------------------


def decode_key(data: bytes) -> GroupRecordKey:
    """A record key; types other than 0, 1 and 2 give :class:`UnknownGroupRecordKey`."""
    reader = FieldReader(bytes(data), "key")
    record_type = reader.int16("type")
    if record_type in (OFFSET_COMMIT_KEY_LEGACY_TYPE, OFFSET_COMMIT_KEY_TYPE):
        reader.what = f"OffsetCommitKey (type {record_type})"
        group = reader.required("group")
        topic = reader.required("topic")
        return OffsetCommitKey(group, topic, reader.int32("partition"))
    if record_type == GROUP_METADATA_KEY_TYPE:
        reader.what = "GroupMetadataKey (type 2)"
        return GroupMetadataKey(reader.required("group"))
    return UnknownGroupRecordKey(record_type)


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    """An OffsetCommitValue of version 0 to 4 (unknown v4 tags are skipped)."""
    reader = FieldReader(bytes(data), "OffsetCommitValue")
    version = reader.int16("version")
    reader.what = f"OffsetCommitValue v{version}"
    if not 0 <= version <= OFFSET_COMMIT_VALUE_MAX_VERSION:
        raise reader.fail(f"version {version} is outside 0..4", 0)
    offset = reader.int64("offset")
    if version < 3:
        metadata = reader.required("metadata")
        commit_timestamp = reader.int64("commitTimestamp")
        expire = reader.int64("expireTimestamp") if version == 1 else NO_TIMESTAMP
        return OffsetCommitValue(offset, metadata, commit_timestamp, NO_LEADER_EPOCH, expire)
    flexible = version == FLEXIBLE_VERSION
    epoch = reader.int32("leaderEpoch")
    metadata = reader.required("metadata", flexible=flexible)
    commit_timestamp = reader.int64("commitTimestamp")
    topic_id = None
    if flexible:
        start = reader.pos
        topic_id = reader.tagged_fields().get(TOPIC_ID_TAG)
        if topic_id is not None and len(topic_id) != UUID_BYTES:
            raise reader.fail(f"topicId tag holds {len(topic_id)} bytes, not 16", start)
    return OffsetCommitValue(offset, metadata, commit_timestamp, epoch, NO_TIMESTAMP, topic_id)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    """A GroupMetadataValue of version 0 to 4."""
    reader = FieldReader(bytes(data), "GroupMetadataValue")
    version = reader.int16("version")
    reader.what = f"GroupMetadataValue v{version}"
    if not 0 <= version <= GROUP_METADATA_VALUE_MAX_VERSION:
        raise reader.fail(f"version {version} is outside 0..4", 0)
    fx = version >= FLEXIBLE_VERSION
    protocol_type = reader.required("protocolType", flexible=fx)
    generation = reader.int32("generation")
    protocol = reader.string("protocol", flexible=fx, nullable=True)
    leader = reader.string("leader", flexible=fx, nullable=True)
    state_timestamp = reader.int64("currentStateTimestamp") if version >= 2 else NO_TIMESTAMP
    members = []
    for _ in range(reader.array_length("members", flexible=fx)):
        member_id = reader.required("memberId", flexible=fx)
        instance_id = (
            reader.string("groupInstanceId", flexible=fx, nullable=True) if version >= 3 else None
        )
        client_id = reader.required("clientId", flexible=fx)
        client_host = reader.required("clientHost", flexible=fx)
        rebalance_timeout = reader.int32("rebalanceTimeout") if version >= 1 else None
        session_timeout = reader.int32("sessionTimeout")
        subscription = reader.bytes_("subscription", flexible=fx)
        assignment = reader.bytes_("assignment", flexible=fx)
        if fx:
            reader.tagged_fields()
        members.append(
            MemberMetadata(
                member_id,
                client_id,
                client_host,
                session_timeout if rebalance_timeout is None else rebalance_timeout,
                session_timeout,
                subscription,
                assignment,
                instance_id,
            )
        )
    if fx:
        reader.tagged_fields()
    return GroupMetadataValue(
        protocol_type, generation, protocol, leader, state_timestamp, tuple(members)
    )


GroupRecordValue = OffsetCommitValue | GroupMetadataValue


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """One decoded record: ``value`` None is a tombstone (or an unknown key, not decoded)."""

    key: GroupRecordKey
    value: GroupRecordValue | None


def decode_record(key: bytes | None, value: bytes | None) -> GroupRecord:
    """A whole ``__consumer_offsets`` record; a null key is corrupt (Kafka refuses it)."""
    if key is None:
        raise CorruptGroupRecordError("key: null (every __consumer_offsets record has a key)")
    decoded = decode_key(key)
    if value is None or isinstance(decoded, UnknownGroupRecordKey):
        return GroupRecord(decoded, None)
    if isinstance(decoded, OffsetCommitKey):
        return GroupRecord(decoded, decode_offset_commit_value(value))
    return GroupRecord(decoded, decode_group_metadata_value(value))
