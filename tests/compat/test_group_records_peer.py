"""seglog's ``__consumer_offsets`` codec against kafka-python's generic codec (``ApiData``) fed
Kafka's JSON definitions of the records: byte-identical encodings and equal decodings for every
version of every key and value, on hypothesis-drawn values."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.api_data import ApiData

from seglog.format import group_records as ours
from support import kafka_group_schemas

pytestmark = pytest.mark.compat


# kafka-python's ApiData loads the JSON file named after the class: Kafka's names.
class OffsetCommitKey(ApiData, load_json=kafka_group_schemas):  # type: ignore[misc,call-arg]
    pass


class GroupMetadataKey(ApiData, load_json=kafka_group_schemas):  # type: ignore[misc,call-arg]
    pass


class OffsetCommitValue(ApiData, load_json=kafka_group_schemas):  # type: ignore[misc,call-arg]
    pass


class GroupMetadataValue(ApiData, load_json=kafka_group_schemas):  # type: ignore[misc,call-arg]
    pass


# Java strings: no lone surrogates (they are not valid UTF-8 either way).
texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
nullable = st.none() | texts
int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)


@given(texts, texts, int32s)
def test_keys_match_the_peer(group: str, topic: str, partition: int) -> None:
    key = ours.OffsetCommitKey(group, topic, partition)
    peer = OffsetCommitKey(group=group, topic=topic, partition=partition)
    assert ours.encode_key(key) == peer.encode(version=1)
    decoded = OffsetCommitKey.decode(ours.encode_key(key))
    assert (decoded.group, decoded.topic, decoded.partition) == (group, topic, partition)
    assert ours.decode_key(peer.encode(version=0)) == key
    peer_group = GroupMetadataKey(group=group).encode(version=2)
    assert ours.encode_key(ours.GroupMetadataKey(group)) == peer_group
    assert ours.decode_key(peer_group) == ours.GroupMetadataKey(group)


@settings(max_examples=200)
@given(
    int64s, texts, int64s, int32s, int64s, st.none() | st.binary(min_size=16, max_size=16),
    st.integers(0, 4),
)  # fmt: skip
def test_offset_commit_values_match_the_peer(
    offset: int,
    metadata: str,
    commit_ts: int,
    epoch: int,
    expire_ts: int,
    topic_id: bytes | None,
    version: int,
) -> None:
    value = ours.OffsetCommitValue(
        offset,
        metadata,
        commit_ts,
        epoch if version >= 3 else -1,
        expire_ts if version == 1 else -1,
        topic_id if version == 4 else None,
    )
    peer = OffsetCommitValue(
        offset=offset,
        leader_epoch=value.leader_epoch,
        metadata=metadata,
        commit_timestamp=commit_ts,
        expire_timestamp=value.expire_timestamp,
        topic_id=None if value.topic_id is None else uuid.UUID(bytes=value.topic_id),
    )
    peer_bytes = peer.encode(version=version)
    assert ours.encode_offset_commit_value(value, version) == peer_bytes
    assert ours.decode_offset_commit_value(peer_bytes) == value


members = st.builds(
    ours.MemberMetadata, texts, texts, texts, int32s, int32s,
    st.binary(max_size=16), st.binary(max_size=16), nullable,
)  # fmt: skip


def _peer_member(member: ours.MemberMetadata) -> Any:
    return GroupMetadataValue.MemberMetadata(
        member_id=member.member_id,
        group_instance_id=member.group_instance_id,
        client_id=member.client_id,
        client_host=member.client_host,
        rebalance_timeout=member.rebalance_timeout,
        session_timeout=member.session_timeout,
        subscription=member.subscription,
        assignment=member.assignment,
    )


@settings(max_examples=200)
@given(texts, int32s, nullable, nullable, int64s, st.lists(members, max_size=3), st.integers(0, 4))
def test_group_metadata_values_match_the_peer(
    protocol_type: str,
    generation: int,
    protocol: str | None,
    leader: str | None,
    state_ts: int,
    group_members: list[ours.MemberMetadata],
    version: int,
) -> None:
    # what each version can hold: no state timestamp before v2, no instance id before v3,
    # v0 reads the rebalance timeout as the session timeout
    group_members = [
        ours.MemberMetadata(
            m.member_id,
            m.client_id,
            m.client_host,
            m.rebalance_timeout if version >= 1 else m.session_timeout,
            m.session_timeout,
            m.subscription,
            m.assignment,
            m.group_instance_id if version >= 3 else None,
        )
        for m in group_members
    ]
    value = ours.GroupMetadataValue(
        protocol_type,
        generation,
        protocol,
        leader,
        state_ts if version >= 2 else -1,
        tuple(group_members),
    )
    peer = GroupMetadataValue(
        protocol_type=protocol_type,
        generation=generation,
        protocol=protocol,
        leader=leader,
        current_state_timestamp=value.current_state_timestamp,
        members=[_peer_member(m) for m in group_members],
    )
    peer_bytes = peer.encode(version=version)
    assert ours.encode_group_metadata_value(value, version) == peer_bytes
    assert ours.decode_group_metadata_value(peer_bytes) == value
