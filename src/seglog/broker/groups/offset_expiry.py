"""Which committed offsets of a group have expired: Kafka's rule, as a pure function.

Kafka's ``GroupMetadata.removeExpiredOffsets``, with ``retention_ms`` =
``offsets.retention.minutes`` x 60 000. An offset committed with an explicit expire timestamp
(OffsetCommit v2-4 with ``retention_time_ms`` set, stored as value v1) expires once ``now_ms >=
expire_timestamp``, whatever the group does. Otherwise it expires when ``now_ms - base >=
retention_ms``, where ``base`` depends on the group:

* a group with a protocol type and no members (Empty): ``base`` is the time it became Empty
  (its metadata's ``currentStateTimestamp``), or the commit time when the metadata is too old
  to carry one; every offset is a candidate;
* a ``consumer`` group that is Stable: ``base`` is the commit time, and only offsets of topics
  no member subscribes to are candidates;
* a group without protocol type (only simple commits; Kafka stores ``""`` for none):
  ``base`` is the commit time;
* any other group (rebalancing, or a non-consumer protocol with members): nothing expires.

The group's state is its live state when the caller knows it (the coordinator), else what the
stored metadata says: members -> ``Stable``, none -> ``Empty``. A group that is Empty and
has no offsets left after expiry is removed (Kafka moves it to Dead and writes a tombstone
for its metadata): :func:`group_is_removable`.
"""

from __future__ import annotations

from collections.abc import Mapping

from seglog.errors import CorruptGroupRecordError
from seglog.format.consumer_protocol import subscription_topics
from seglog.format.group_records import NO_TIMESTAMP, GroupMetadataValue, OffsetCommitValue
from seglog.format.topic_names import TopicPartition

CONSUMER_PROTOCOL_TYPE = "consumer"
EMPTY = "Empty"
STABLE = "Stable"


def stored_state(metadata: GroupMetadataValue | None) -> str:
    """The state a group's stored metadata implies: ``Stable`` with members, else ``Empty``."""
    return STABLE if metadata is not None and metadata.members else EMPTY


def subscribed_topics(metadata: GroupMetadataValue) -> frozenset[str] | None:
    """Every topic a member of a ``consumer`` group subscribes to; None when unknown (another
    protocol, or subscription bytes that do not parse: then nothing is expired for them)."""
    if metadata.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    topics: set[str] = set()
    for member in metadata.members:
        try:
            topics.update(subscription_topics(member.subscription))
        except CorruptGroupRecordError:
            return None
    return frozenset(topics)


def expired_offsets(
    offsets: Mapping[TopicPartition, OffsetCommitValue],
    metadata: GroupMetadataValue | None,
    *,
    now_ms: int,
    retention_ms: int,
    state: str | None = None,
) -> list[TopicPartition]:
    """The partitions of ``offsets`` whose commit has expired (see the module docstring);
    ``state`` is the group's live state, when known."""
    state = state or stored_state(metadata)
    protocol_type = metadata.protocol_type if metadata is not None else ""
    subscribed: frozenset[str] = frozenset()
    from_state_timestamp = False
    if not protocol_type:
        pass  # simple commits only: the commit time
    elif state == EMPTY:
        from_state_timestamp = True
    elif protocol_type == CONSUMER_PROTOCOL_TYPE and state == STABLE and metadata is not None:
        topics = subscribed_topics(metadata)
        if topics is None:
            return []
        subscribed = topics
    else:
        return []
    state_timestamp = metadata.current_state_timestamp if metadata is not None else NO_TIMESTAMP
    expired = []
    for tp, value in offsets.items():
        if tp.topic in subscribed:
            continue
        if value.expire_timestamp != NO_TIMESTAMP:
            if now_ms >= value.expire_timestamp:
                expired.append(tp)
            continue
        base = value.commit_timestamp
        if from_state_timestamp and state_timestamp != NO_TIMESTAMP:
            base = state_timestamp
        if now_ms - base >= retention_ms:
            expired.append(tp)
    return expired


def group_is_removable(
    metadata: GroupMetadataValue | None, offsets_left: int, *, state: str | None = None
) -> bool:
    """A group with stored metadata that is Empty and has no offsets left is removed."""
    return metadata is not None and offsets_left == 0 and (state or stored_state(metadata)) == EMPTY
