"""KRaft control record values (seglog.format.kraft): round trips, truncation, malformed input.

The encoders below are written from the layouts in the module docstring (Kafka's flexible
version 0 encoding), independently of the decoder, so a round trip checks both sides.
"""

from __future__ import annotations

import contextlib
import struct
import uuid
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seglog.errors import CorruptRecordError
from seglog.format.kraft import (
    Endpoint,
    KRaftRecord,
    KRaftVersionFeature,
    KRaftVersionRecord,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    Voter,
    VotersRecord,
    decode_kraft_version,
    decode_snapshot_footer,
    decode_snapshot_header,
    decode_voters,
)
from support.kraft_records import compact_string, uvarint

# --- test-side encoders (shared with the metadata-record tests) ---------------------------------


def tagged(fields: list[tuple[int, bytes]] | None = None) -> bytes:
    fields = fields or []
    return uvarint(len(fields)) + b"".join(
        uvarint(tag) + uvarint(len(data)) + data for tag, data in fields
    )


def encode_header(r: SnapshotHeaderRecord) -> bytes:
    return struct.pack(">hq", r.version, r.last_contained_log_timestamp) + tagged()


def encode_footer(r: SnapshotFooterRecord) -> bytes:
    return struct.pack(">h", r.version) + tagged()


def encode_kraft_version(r: KRaftVersionRecord) -> bytes:
    return struct.pack(">hh", r.version, r.kraft_version) + tagged()


def encode_voters(r: VotersRecord) -> bytes:
    out = struct.pack(">h", r.version) + uvarint(len(r.voters) + 1)
    for voter in r.voters:
        out += struct.pack(">i", voter.voter_id) + voter.voter_directory_id.bytes
        out += uvarint(len(voter.endpoints) + 1)
        for e in voter.endpoints:
            out += compact_string(e.name) + compact_string(e.host) + struct.pack(">H", e.port)
            out += tagged()
        feature = voter.kraft_version_feature
        out += struct.pack(">hh", feature.min_supported_version, feature.max_supported_version)
        out += tagged() + tagged()
    return out + tagged()


VOTERS = VotersRecord(
    version=0,
    voters=(
        Voter(
            voter_id=1,
            voter_directory_id=uuid.UUID(bytes=bytes(range(16))),
            endpoints=(Endpoint("CONTROLLER", "localhost", 9093),),
            kraft_version_feature=KRaftVersionFeature(0, 1),
        ),
        Voter(
            voter_id=2,
            voter_directory_id=uuid.UUID(int=0),
            endpoints=(
                Endpoint("CONTROLLER", "ctl-2.example", 19093),
                Endpoint("SSL", "ctl-2.example", 65535),
            ),
            kraft_version_feature=KRaftVersionFeature(0, 1),
        ),
    ),
)

HEADER = SnapshotHeaderRecord(version=0, last_contained_log_timestamp=1_728_565_330_138)
FOOTER = SnapshotFooterRecord(version=0)
KRAFT_VERSION = KRaftVersionRecord(version=0, kraft_version=1)

# (decoded value, its encoding, the decoder under test)
CASES: list[tuple[KRaftRecord, bytes, Callable[[bytes], KRaftRecord]]] = [
    (HEADER, encode_header(HEADER), decode_snapshot_header),
    (FOOTER, encode_footer(FOOTER), decode_snapshot_footer),
    (KRAFT_VERSION, encode_kraft_version(KRAFT_VERSION), decode_kraft_version),
    (VOTERS, encode_voters(VOTERS), decode_voters),
]
IDS = ["SnapshotHeader", "SnapshotFooter", "KRaftVersion", "KRaftVoters"]


# --- hand-built bytes ---------------------------------------------------------------------------


def test_hand_built_values_decode() -> None:
    assert decode_snapshot_header(bytes.fromhex("0000 00000000000004d2 00")) == (
        SnapshotHeaderRecord(version=0, last_contained_log_timestamp=1234)
    )
    assert decode_snapshot_footer(bytes.fromhex("0000 00")) == SnapshotFooterRecord(version=0)
    assert decode_kraft_version(bytes.fromhex("0000 0001 00")) == (
        KRaftVersionRecord(version=0, kraft_version=1)
    )
    voters = (
        bytes.fromhex("0000 02 00000001")
        + bytes(range(16))
        + b"\x02\x0bCONTROLLER\x0alocalhost"
        + bytes.fromhex("2385 00 0000 0001 00 00 00")
    )
    assert decode_voters(voters) == VotersRecord(
        version=0,
        voters=(
            Voter(
                voter_id=1,
                voter_directory_id=uuid.UUID("00010203-0405-0607-0809-0a0b0c0d0e0f"),
                endpoints=(Endpoint(name="CONTROLLER", host="localhost", port=9093),),
                kraft_version_feature=KRaftVersionFeature(
                    min_supported_version=0, max_supported_version=1
                ),
            ),
        ),
    )


@pytest.mark.parametrize(("record", "value", "decode"), CASES, ids=IDS)
def test_round_trip(
    record: KRaftRecord, value: bytes, decode: Callable[[bytes], KRaftRecord]
) -> None:
    assert decode(value) == record


@pytest.mark.parametrize(("record", "value", "decode"), CASES, ids=IDS)
def test_every_truncation_is_a_corrupt_record_error(
    record: KRaftRecord, value: bytes, decode: Callable[[bytes], KRaftRecord]
) -> None:
    del record  # every strict prefix of a whole value is short of its layout
    for cut in range(len(value)):
        with pytest.raises(CorruptRecordError, match="control record value ends at"):
            decode(value[:cut])


def test_trailing_bytes_after_the_tagged_fields_are_ignored() -> None:
    assert decode_kraft_version(bytes.fromhex("0000 0001 00 ffff")) == KRaftVersionRecord(0, 1)


def test_unknown_tagged_fields_are_skipped() -> None:
    value = struct.pack(">hq", 0, 7) + tagged([(300, b""), (0, b"abc")])
    assert decode_snapshot_header(value) == SnapshotHeaderRecord(0, 7)
    # The last field's size says 3 bytes; only 1 remains.
    with pytest.raises(CorruptRecordError, match="ends at 17 bytes, needs 19"):
        decode_snapshot_header(value[:-2])


def test_null_strings_and_invalid_utf8() -> None:
    feature = KRaftVersionFeature(0, 1)
    voter = Voter(3, uuid.UUID(int=3), (Endpoint(None, None, 1),), feature)
    assert decode_voters(encode_voters(VotersRecord(0, (voter,)))).voters == (voter,)
    # One endpoint: name 0xff (not UTF-8), host "", then port, tags, feature, tags, tags, tags.
    bad = bytes.fromhex("0000 02 00000003") + bytes(16) + b"\x02\x02\xff\x01" + bytes(10)
    (endpoint,) = decode_voters(bad).voters[0].endpoints
    assert (endpoint.name, endpoint.host) == ("\ufffd", "")


def test_null_array_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="null array"):
        decode_voters(bytes.fromhex("0000 00 00"))


def test_varint_longer_than_five_bytes_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="malformed unsigned varint"):
        decode_voters(bytes.fromhex("0000 ffffffffff01"))


def test_huge_lengths_are_corrupt_not_memory() -> None:
    # A string length of 2**35 - 2 against a few bytes of value.
    value = bytes.fromhex("0000 02 00000001") + bytes(16) + b"\x02" + b"\xff\xff\xff\xff\x7f"
    with pytest.raises(CorruptRecordError, match="control record value ends at"):
        decode_voters(value)


# --- property: round trip and "any bytes decode or raise CorruptRecordError" --------------------

int16s = st.integers(-(2**15), 2**15 - 1)
names = st.none() | st.text(max_size=20)
endpoints = st.builds(Endpoint, names, names, st.integers(0, 2**16 - 1))
voters = st.builds(
    Voter,
    st.integers(-(2**31), 2**31 - 1),
    st.uuids(),
    st.lists(endpoints, max_size=3).map(tuple),
    st.builds(KRaftVersionFeature, int16s, int16s),
)


@given(st.builds(VotersRecord, int16s, st.lists(voters, max_size=4).map(tuple)))
def test_voters_round_trip(record: VotersRecord) -> None:
    assert decode_voters(encode_voters(record)) == record


@given(st.binary(max_size=80))
def test_any_bytes_decode_or_raise_corrupt_record_error(value: bytes) -> None:
    decoders: tuple[Callable[[bytes], KRaftRecord], ...] = (
        decode_snapshot_header,
        decode_snapshot_footer,
        decode_kraft_version,
        decode_voters,
    )
    for decode in decoders:
        with contextlib.suppress(CorruptRecordError):  # anything else fails the test
            decode(value)
