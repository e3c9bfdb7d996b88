"""``__consumer_offsets`` record formats: Kafka's hex vectors, Java's hashCode, round trips."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seglog.errors import CorruptGroupRecordError, InvalidRecordError
from seglog.format.consumer_protocol import (
    assignment_partitions,
    encode_assignment,
    encode_subscription,
    subscription_topics,
)
from seglog.format.group_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    GroupRecord,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownGroupRecordKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    decode_record,
    encode_group_metadata_value,
    encode_key,
    encode_offset_commit_value,
    group_partition,
    java_string_hash,
)


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


TS = 1700000000000
OFFSET_42 = OffsetCommitValue(42, "", TS, leader_epoch=0)
MEMBER = MemberMetadata("m1", "c", "/127.0.0.1", 300000, 45000, b"\x00\x01", b"\x00\x02")
GROUP = GroupMetadataValue("consumer", 1, "range", "m1", TS, (MEMBER,))
GROUP_V3_HEX = (
    "0003 0008636f6e73756d6572 00000001 000572616e6765 00026d31 0000018bcfe56800 00000001 "
    "00026d31 ffff 000163 000a2f3132372e302e302e31 000493e0 0000afc8 00000002 0001 00000002 0002"
)


# --- Kafka's hex vectors ----------------------------------------------------------------------


def test_offset_commit_key_vector() -> None:
    key = OffsetCommitKey("g1", "t", 0)
    assert encode_key(key) == h("0001 0002 6731 0001 74 00000000")
    assert decode_key(h("0001 0002 6731 0001 74 00000000")) == key


def test_group_metadata_key_vector() -> None:
    assert encode_key(GroupMetadataKey("g1")) == h("0002 0002 6731")
    assert decode_key(h("0002 0002 6731")) == GroupMetadataKey("g1")


def test_offset_commit_value_v3_vector_is_what_seglog_writes() -> None:
    vector = h("0003 000000000000002a 00000000 0000 0000018bcfe56800")
    assert encode_offset_commit_value(OFFSET_42) == vector
    assert decode_offset_commit_value(vector) == OFFSET_42


def test_offset_commit_value_v1_vector() -> None:
    vector = h("0001 000000000000002a 0000 0000018bcfe56800 ffffffffffffffff")
    assert encode_offset_commit_value(OFFSET_42, version=1) == vector
    # v1 has no leader epoch: it reads back as -1
    assert decode_offset_commit_value(vector) == OffsetCommitValue(42, "", TS)


def test_an_explicit_expire_timestamp_is_written_as_v1() -> None:
    value = OffsetCommitValue(42, "m", TS, leader_epoch=3, expire_timestamp=TS + 1000)
    data = encode_offset_commit_value(value)
    assert data[:2] == h("0001")
    assert decode_offset_commit_value(data) == OffsetCommitValue(42, "m", TS, -1, TS + 1000)


def test_offset_commit_value_v4_vector() -> None:
    vector = h("0004 000000000000002a 00000000 01 0000018bcfe56800 00")
    assert encode_offset_commit_value(OFFSET_42, version=4) == vector
    assert decode_offset_commit_value(vector) == OFFSET_42


def test_v4_reads_the_topic_id_tag_and_skips_unknown_tags() -> None:
    topic_id = bytes(range(16))
    base = h("0004 000000000000002a 00000000 01 0000018bcfe56800")
    tags = h("03") + h("00 10") + topic_id + h("05 02 abcd") + h("7f 00")
    value = decode_offset_commit_value(base + tags)
    assert value == OffsetCommitValue(42, "", TS, 0, -1, topic_id)
    written = encode_offset_commit_value(value, version=4)
    assert decode_offset_commit_value(written) == value


def test_offset_commit_value_v0_and_v2_read() -> None:
    body = h("000000000000002a 0002 6d64 0000018bcfe56800")
    for version in (b"\x00\x00", b"\x00\x02"):
        assert decode_offset_commit_value(version + body) == OffsetCommitValue(42, "md", TS)


def test_group_metadata_value_v3_vector() -> None:
    assert encode_group_metadata_value(GROUP) == h(GROUP_V3_HEX)
    assert decode_group_metadata_value(h(GROUP_V3_HEX)) == GROUP


def test_group_metadata_v0_reads_rebalance_timeout_as_session_timeout() -> None:
    data = encode_group_metadata_value(GROUP, version=0)
    decoded = decode_group_metadata_value(data)
    assert decoded.current_state_timestamp == -1
    assert decoded.members[0].rebalance_timeout == 45000
    assert decoded.members[0].group_instance_id is None


def test_empty_group_as_kafka_writes_it_at_creation() -> None:
    empty = GroupMetadataValue("", 0, None, None, TS, ())
    data = encode_group_metadata_value(empty)
    assert data == h("0003 0000 00000000 ffff ffff 0000018bcfe56800 00000000")
    assert decode_group_metadata_value(data) == empty


# --- partitioning: Java's String.hashCode, checked against Java 17 ------------------------------


@pytest.mark.parametrize(
    ("group", "hash_code", "partition"),
    [
        ("foo", 101574, 24),
        ("g1", 3242, 42),
        ("my-group", -1906497762, 12),
        ("console-consumer-12345", 158455506, 6),
        ("grüppe", -1233264812, 12),
        ("\U0001f600grp", 1276929186, 36),
        ("polygenelubricants", -2147483648, 0),
        ("GydZG_", -2147483648, 0),
    ],
)
def test_group_partition_vectors(group: str, hash_code: int, partition: int) -> None:
    assert java_string_hash(group) == hash_code
    assert group_partition(group) == partition
    assert group_partition(group, 50) == partition


def test_group_partition_other_counts() -> None:
    assert group_partition("foo", 1) == 0
    assert group_partition("foo", 7) == 101574 % 7
    with pytest.raises(InvalidRecordError):
        group_partition("foo", 0)


# --- unknown types, tombstones, damage ---------------------------------------------------------


@pytest.mark.parametrize("record_type", [3, 4, 15, 99, -1])
def test_unknown_key_types_decode_to_a_value_loaders_skip(record_type: int) -> None:
    key = struct.pack(">h", record_type) + b"\xff\xfe anything"
    assert decode_key(key) == UnknownGroupRecordKey(record_type)
    assert decode_record(key, b"\x00\x07 whatever") == GroupRecord(
        UnknownGroupRecordKey(record_type), None
    )


def test_legacy_type_0_key_reads_as_offset_commit() -> None:
    assert decode_key(h("0000 0002 6731 0001 74 00000005")) == OffsetCommitKey("g1", "t", 5)


def test_tombstones_decode_with_no_value() -> None:
    key = encode_key(OffsetCommitKey("g", "t", 1))
    assert decode_record(key, None) == GroupRecord(OffsetCommitKey("g", "t", 1), None)


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        (None, b"", "null"),
        (h("0001 0005 6731"), None, "group"),
        (h("0001 ffff 0001 74 00000000"), None, "length -1"),
        (h("0002"), None, "needs 2 bytes"),
        (encode_key(OffsetCommitKey("g", "t", 0)), h("0005 00"), "version 5"),
        (encode_key(OffsetCommitKey("g", "t", 0)), h("0003 0000"), "OffsetCommitValue v3"),
        (encode_key(GroupMetadataKey("g")), h("0003 0000 00000001 ffff ffff"), "v3"),
        (encode_key(GroupMetadataKey("g")), h("0001 0000 00000001 ffff ffff 7fffffff"), "count"),
        (encode_key(GroupMetadataKey("g")), h("0004 00"), "protocolType"),
        (
            encode_key(OffsetCommitKey("g", "t", 0)),
            h("0004") + bytes(12) + h("ffffffffff"),
            "varint",
        ),
    ],
)
def test_damaged_records_raise_typed_errors(
    key: bytes | None, value: bytes | None, words: str
) -> None:
    with pytest.raises(CorruptGroupRecordError) as info:
        decode_record(key, value)
    assert words in str(info.value)


def test_a_too_long_string_cannot_be_written() -> None:
    with pytest.raises(InvalidRecordError, match="longer than 32767"):
        encode_key(GroupMetadataKey("g" * 40000))


# --- round trips --------------------------------------------------------------------------------

texts = st.text(max_size=20)
int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)


@given(texts, texts, int32s)
def test_keys_round_trip(group: str, topic: str, partition: int) -> None:
    group, topic = (t.encode("utf-8", "replace").decode() for t in (group, topic))
    for key in (OffsetCommitKey(group, topic, partition), GroupMetadataKey(group)):
        assert decode_key(encode_key(key)) == key


@given(
    int64s,
    texts,
    int64s,
    int32s,
    st.sampled_from([3, 4]),
    st.none() | st.binary(min_size=16, max_size=16),
)
def test_offset_commit_values_round_trip(
    offset: int, metadata: str, ts: int, epoch: int, version: int, topic_id: bytes | None
) -> None:
    metadata = metadata.encode("utf-8", "replace").decode()
    value = OffsetCommitValue(offset, metadata, ts, epoch, -1, topic_id if version == 4 else None)
    assert decode_offset_commit_value(encode_offset_commit_value(value, version)) == value


members = st.builds(
    MemberMetadata,
    st.text(max_size=8),
    st.text(max_size=8),
    st.text(max_size=8),
    int32s,
    int32s,
    st.binary(max_size=20),
    st.binary(max_size=20),
    st.none() | st.text(max_size=8),
)
group_values = st.builds(
    GroupMetadataValue,
    st.text(max_size=8),
    int32s,
    st.none() | st.text(max_size=8),
    st.none() | st.text(max_size=8),
    int64s,
    st.lists(members, max_size=3).map(tuple),
)


def _clean(value: GroupMetadataValue) -> GroupMetadataValue:
    def fix(text: str | None) -> str | None:
        return None if text is None else text.encode("utf-8", "replace").decode()

    return GroupMetadataValue(
        fix(value.protocol_type) or "",
        value.generation,
        fix(value.protocol),
        fix(value.leader),
        value.current_state_timestamp,
        tuple(
            MemberMetadata(
                fix(m.member_id) or "",
                fix(m.client_id) or "",
                fix(m.client_host) or "",
                m.rebalance_timeout,
                m.session_timeout,
                m.subscription,
                m.assignment,
                fix(m.group_instance_id),
            )
            for m in value.members
        ),
    )


@given(group_values, st.sampled_from([3, 4]))
def test_group_metadata_values_round_trip(value: GroupMetadataValue, version: int) -> None:
    value = _clean(value)
    assert decode_group_metadata_value(encode_group_metadata_value(value, version)) == value


@given(st.binary(max_size=64))
def test_any_bytes_decode_or_raise_the_typed_error(data: bytes) -> None:
    for decode in (decode_key, decode_offset_commit_value, decode_group_metadata_value):
        with contextlib.suppress(CorruptGroupRecordError):
            decode(data)


# --- the consumer protocol ------------------------------------------------------------------------


def test_subscription_and_assignment_bytes() -> None:
    assert subscription_topics(encode_subscription(["a", "b"])) == ("a", "b")
    assignment = encode_assignment({"a": [0, 2], "b": [1]})
    assert assignment_partitions(assignment) == (("a", 0), ("a", 2), ("b", 1))
    assert assignment_partitions(b"") == ()
    with pytest.raises(CorruptGroupRecordError):
        subscription_topics(b"\x00\x00\x00\x00\x00\x05")
