"""Control records: transaction markers and KRaft control types.

A control batch has attribute bit 5 set. Its records carry:

* key (at least 4 bytes): int16 version (0) + int16 type. Unknown higher versions are read
  as version 0, as Kafka does.
* for COMMIT and ABORT markers, value (at least 6 bytes): int16 version (0) + int32
  coordinatorEpoch.

A transaction marker batch is transactional, has one 17-byte record (attributes 0,
timestampDelta 0, offsetDelta 0, 4-byte key, 6-byte value, no headers), baseSequence -1,
CreateTime, no compression: 78 bytes in all.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from seglog.errors import CorruptRecordError
from seglog.format.batch import assemble_batch, encode_record, make_attributes

_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")


class ControlRecordType(enum.IntEnum):
    """Kafka's control record types (``UNKNOWN`` for any id Kafka does not define)."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6

    @classmethod
    def from_id(cls, type_id: int) -> ControlRecordType:
        """The type for an id; ids Kafka does not know map to ``UNKNOWN``."""
        try:
            return cls(type_id)
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True, slots=True)
class ControlKey:
    """A parsed control record key; ``type_id`` is the raw id (kept for unknown types)."""

    version: int
    type_id: int

    @property
    def type(self) -> ControlRecordType:
        """The control type (``UNKNOWN`` when Kafka does not define ``type_id``)."""
        return ControlRecordType.from_id(self.type_id)


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    """The value of a COMMIT or ABORT record."""

    version: int
    coordinator_epoch: int


def encode_control_key(control_type: ControlRecordType, version: int = 0) -> bytes:
    """The 4-byte key of a control record."""
    return _KEY.pack(version, int(control_type))


def decode_control_key(key: bytes | None) -> ControlKey:
    """Parse a control record key; raise ``CorruptRecordError`` if it is too short."""
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError(
            f"control record key must be at least 4 bytes, got {None if key is None else len(key)}"
        )
    version, type_id = _KEY.unpack_from(key)
    if version < 0:
        raise CorruptRecordError(f"control record key has negative version {version}")
    return ControlKey(version, type_id)


def encode_end_txn_marker(coordinator_epoch: int, version: int = 0) -> bytes:
    """The 6-byte value of a COMMIT or ABORT record."""
    return _MARKER_VALUE.pack(version, coordinator_epoch)


def decode_end_txn_marker(value: bytes | None) -> EndTxnMarker:
    """Parse a COMMIT/ABORT record value; raise ``CorruptRecordError`` if it is too short."""
    if value is None or len(value) < _MARKER_VALUE.size:
        raise CorruptRecordError("end transaction marker value must be at least 6 bytes")
    version, coordinator_epoch = _MARKER_VALUE.unpack_from(value)
    if version < 0:
        raise CorruptRecordError(f"end transaction marker has negative version {version}")
    return EndTxnMarker(version, coordinator_epoch)


def build_end_txn_marker_batch(
    producer_id: int,
    producer_epoch: int,
    *,
    commit: bool,
    coordinator_epoch: int,
    timestamp_ms: int,
    base_offset: int = 0,
    partition_leader_epoch: int = 0,
) -> bytes:
    """The 78-byte COMMIT or ABORT marker batch a transaction coordinator's WriteTxnMarkers
    has the partition leader write: transactional + control, one record (key: version 0 and
    the type; value: version 0 and ``coordinator_epoch``), baseSequence -1, CreateTime."""
    control_type = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    record = encode_record(
        0, 0, encode_control_key(control_type), encode_end_txn_marker(coordinator_epoch)
    )
    return assemble_batch(
        record,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=make_attributes(is_transactional=True, is_control=True),
        last_offset_delta=0,
        base_timestamp=timestamp_ms,
        max_timestamp=timestamp_ms,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
        records_count=1,
    )
