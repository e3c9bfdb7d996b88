"""KRaft control record values: SnapshotHeader, SnapshotFooter, KRaftVersion and Voters.

A control batch (attribute bit 5) of a ``__cluster_metadata`` log or of a KRaft snapshot
(``.checkpoint``) holds records whose key is the control key of :mod:`seglog.format.control`
(int16 version, int16 type). For types 3 to 6 the value is a Kafka generated message in its
**flexible** encoding (KIP-482). Each of the four schemas has ``validVersions: 0`` and
``flexibleVersions: 0+``; the leading ``Version`` field is an ordinary int16 field of the
message (0 today), not a header.

Primitives, all big-endian:

* ``int16`` / ``uint16`` / ``int32`` / ``int64``: 2 / 2 / 4 / 8 bytes (``uint16`` unsigned,
  the others two's complement);
* unsigned varint: 7 bits per byte, least significant group first, high bit set when more
  bytes follow; at most 5 bytes;
* compact string: unsigned varint ``length + 1`` (0 means null), then ``length`` UTF-8 bytes
  (invalid UTF-8 is replaced by U+FFFD, as Java's decoder does);
* compact array: unsigned varint ``count + 1``, then ``count`` elements; 0 (null) is invalid
  here, none of these arrays being nullable;
* uuid: 16 bytes;
* tagged fields, after every struct (the message itself and each nested struct): an unsigned
  varint count, then per field an unsigned varint tag, an unsigned varint size and ``size``
  bytes. None of these schemas defines a tagged field: every one is read and skipped.

Layouts, by control type id:

* 3, ``SnapshotHeaderRecord``: Version int16, LastContainedLogTimestamp int64, tagged fields.
* 4, ``SnapshotFooterRecord``: Version int16, tagged fields.
* 5, ``KRaftVersionRecord``: Version int16, KRaftVersion int16, tagged fields.
* 6, ``VotersRecord``: Version int16, Voters (compact array of Voter), tagged fields, where

  - Voter: VoterId int32, VoterDirectoryId uuid, Endpoints (compact array of Endpoint),
    KRaftVersionFeature, tagged fields;
  - Endpoint: Name compact string, Host compact string, Port uint16, tagged fields;
  - KRaftVersionFeature: MinSupportedVersion int16, MaxSupportedVersion int16, tagged fields.

Bytes after the message's own tagged fields are ignored. A value that ends before its layout
does, an unsigned varint longer than 5 bytes or a null array raises
:class:`~seglog.errors.CorruptRecordError` (never ``IndexError`` or ``struct.error``); its
``reason`` says what was missing. Decoding is pure: bytes in, frozen values out.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from seglog.errors import CorruptRecordError

_INT16 = struct.Struct(">h")
_UINT16 = struct.Struct(">H")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
UVARINT_MAX_BYTES = 5
UUID_BYTES = 16


@dataclass(frozen=True, slots=True)
class SnapshotHeaderRecord:
    """Control type 3: first record of a KRaft snapshot."""

    version: int
    last_contained_log_timestamp: int


@dataclass(frozen=True, slots=True)
class SnapshotFooterRecord:
    """Control type 4: last record of a KRaft snapshot."""

    version: int


@dataclass(frozen=True, slots=True)
class KRaftVersionRecord:
    """Control type 5: the finalized ``kraft.version`` feature level."""

    version: int
    kraft_version: int


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A listener of a voter (``name`` and ``host`` are None when encoded as null)."""

    name: str | None
    host: str | None
    port: int


@dataclass(frozen=True, slots=True)
class KRaftVersionFeature:
    """The range of KRaft protocol versions a voter supports."""

    min_supported_version: int
    max_supported_version: int


@dataclass(frozen=True, slots=True)
class Voter:
    """One voter of a :class:`VotersRecord`."""

    voter_id: int
    voter_directory_id: uuid.UUID
    endpoints: tuple[Endpoint, ...]
    kraft_version_feature: KRaftVersionFeature


@dataclass(frozen=True, slots=True)
class VotersRecord:
    """Control type 6 (``KRaftVoters``): the set of voters of the KRaft quorum."""

    version: int
    voters: tuple[Voter, ...]


KRaftRecord = SnapshotHeaderRecord | SnapshotFooterRecord | KRaftVersionRecord | VotersRecord


class _Cursor:
    """Sequential reader of one flexible-version value; overruns raise CorruptRecordError."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def _take(self, size: int) -> bytes:
        end = self._pos + size
        if size < 0 or end > len(self._data):
            raise CorruptRecordError(
                f"control record value ends at {len(self._data)} bytes, needs {end}"
            )
        chunk = self._data[self._pos : end]
        self._pos = end
        return chunk

    def int8(self) -> int:
        return int.from_bytes(self._take(1), "big", signed=True)

    def int16(self) -> int:
        return int(_INT16.unpack(self._take(_INT16.size))[0])

    def uint16(self) -> int:
        return int(_UINT16.unpack(self._take(_UINT16.size))[0])

    def int32(self) -> int:
        return int(_INT32.unpack(self._take(_INT32.size))[0])

    def int64(self) -> int:
        return int(_INT64.unpack(self._take(_INT64.size))[0])

    def uvarint(self) -> int:
        value = 0
        for shift in range(0, 7 * UVARINT_MAX_BYTES, 7):
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
        raise CorruptRecordError("malformed unsigned varint in a control record value")

    def compact_string(self) -> str | None:
        length = self.uvarint() - 1
        return None if length < 0 else self._take(length).decode("utf-8", "replace")

    def compact_array_length(self) -> int:
        length = self.uvarint() - 1
        if length < 0:
            raise CorruptRecordError("null array in a control record value")
        return length

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self._take(UUID_BYTES))

    def tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag: none is defined, so every field is skipped
            self._take(self.uvarint())


def decode_snapshot_header(value: bytes) -> SnapshotHeaderRecord:
    """Decode a SnapshotHeaderRecord value (control type 3)."""
    cursor = _Cursor(value)
    record = SnapshotHeaderRecord(
        version=cursor.int16(), last_contained_log_timestamp=cursor.int64()
    )
    cursor.tagged_fields()
    return record


def decode_snapshot_footer(value: bytes) -> SnapshotFooterRecord:
    """Decode a SnapshotFooterRecord value (control type 4)."""
    cursor = _Cursor(value)
    record = SnapshotFooterRecord(version=cursor.int16())
    cursor.tagged_fields()
    return record


def decode_kraft_version(value: bytes) -> KRaftVersionRecord:
    """Decode a KRaftVersionRecord value (control type 5)."""
    cursor = _Cursor(value)
    record = KRaftVersionRecord(version=cursor.int16(), kraft_version=cursor.int16())
    cursor.tagged_fields()
    return record


def _endpoint(cursor: _Cursor) -> Endpoint:
    endpoint = Endpoint(
        name=cursor.compact_string(), host=cursor.compact_string(), port=cursor.uint16()
    )
    cursor.tagged_fields()
    return endpoint


def _kraft_version_feature(cursor: _Cursor) -> KRaftVersionFeature:
    feature = KRaftVersionFeature(
        min_supported_version=cursor.int16(), max_supported_version=cursor.int16()
    )
    cursor.tagged_fields()
    return feature


def _voter(cursor: _Cursor) -> Voter:
    voter_id = cursor.int32()
    directory_id = cursor.uuid()
    endpoints = tuple(_endpoint(cursor) for _ in range(cursor.compact_array_length()))
    voter = Voter(voter_id, directory_id, endpoints, _kraft_version_feature(cursor))
    cursor.tagged_fields()
    return voter


def decode_voters(value: bytes) -> VotersRecord:
    """Decode a VotersRecord value (control type 6, ``KRaftVoters``)."""
    cursor = _Cursor(value)
    version = cursor.int16()
    voters = tuple(_voter(cursor) for _ in range(cursor.compact_array_length()))
    cursor.tagged_fields()
    return VotersRecord(version=version, voters=voters)
