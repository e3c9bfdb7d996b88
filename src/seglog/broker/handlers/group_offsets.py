"""OffsetCommit (8, v2-9), OffsetFetch (9, v1-9), OffsetDelete (47, v0): committed offsets.

OffsetCommit: the group coordinator first decides whether the commit may be written
(generation, member, group state: one error for every partition when not); then per partition
an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION and metadata longer than
``offset.metadata.max.bytes`` is OFFSET_METADATA_TOO_LARGE (counted as Kafka counts a Java
string's length, in UTF-16 code units: 4096 ``é`` pass, 2049 emoji do not); the rest are
appended as one batch (all of a commit or none) and only then answered. A null metadata is
stored as ``""``. v2-4's ``retention_time_ms`` other than -1 becomes the offset's expire
timestamp (OffsetCommitValue v1), as Kafka 3.x writes it.

OffsetFetch: v1-7 one group, v8+ a batch of groups; ``topics`` null (v2+) means every
partition the group has committed; a partition without a commit answers offset -1, metadata
``""``, leader epoch -1 and no error, as Kafka does. ``require_stable`` (v7+, sent by
``read_committed`` consumers): a partition with a transactional offset awaiting its
transaction's marker (TxnOffsetCommit) answers UNSTABLE_OFFSET_COMMIT with offset -1, and the
client asks again; without it the offset committed before the transaction is answered, as
Kafka does. "Every partition" (null topics) lists the committed partitions only, as Kafka does.
"""

from __future__ import annotations

import logging

from seglog.broker.groups.offsets_store import OffsetAndMetadata
from seglog.broker.registry import ApiHandler
from seglog.broker.state import BrokerState, RequestContext
from seglog.errors import SeglogError
from seglog.format.consumer_protocol import subscription_topics
from seglog.format.group_records import OffsetCommitValue
from seglog.format.topic_names import TopicPartition
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponseOffsetCommitResponsePartition,
    OffsetCommitResponseOffsetCommitResponseTopic,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponseOffsetDeleteResponsePartition,
    OffsetDeleteResponseOffsetDeleteResponseTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseOffsetFetchResponseGroup,
    OffsetFetchResponseOffsetFetchResponsePartition,
    OffsetFetchResponseOffsetFetchResponsePartitions,
    OffsetFetchResponseOffsetFetchResponseTopic,
    OffsetFetchResponseOffsetFetchResponseTopics,
)

NO_OFFSET = -1
CONSUMER_PROTOCOL = "consumer"
INT64_MAX = 2**63 - 1
LOG = logging.getLogger("seglog.serve.groups")


def _commit_answer(
    request: OffsetCommitRequest, error_of: dict[tuple[str, int], ErrorCode]
) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        topics=[
            OffsetCommitResponseOffsetCommitResponseTopic(
                name=topic.name,
                partitions=[
                    OffsetCommitResponseOffsetCommitResponsePartition(
                        partition_index=p.partition_index,
                        error_code=int(error_of[(topic.name, p.partition_index)]),
                    )
                    for p in topic.partitions
                ],
            )
            for topic in request.topics
        ]
    )


async def offset_commit(
    state: BrokerState, context: RequestContext, request: OffsetCommitRequest
) -> OffsetCommitResponse:
    service = state.groups
    now = service.now_ms()
    keys = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    if not request.group_id:
        return _commit_answer(request, dict.fromkeys(keys, ErrorCode.INVALID_GROUP_ID))
    if not service.ensure_offsets_topic():
        return _commit_answer(request, dict.fromkeys(keys, ErrorCode.COORDINATOR_NOT_AVAILABLE))
    error = service.coordinator.validate_offset_commit(
        request.group_id,
        request.generation_id_or_member_epoch,
        request.member_id,
        request.group_instance_id,
        now,
    )
    if error is not ErrorCode.NONE:
        return _commit_answer(request, dict.fromkeys(keys, error))
    retention = request.retention_time_ms if 2 <= context.api_version <= 4 else -1
    errors: dict[tuple[str, int], ErrorCode] = {}
    values: dict[TopicPartition, OffsetAndMetadata] = {}
    for topic in request.topics:
        for p in topic.partitions:
            key = TopicPartition(topic.name, p.partition_index)
            metadata = p.committed_metadata or ""
            if state.log_of(topic.name, p.partition_index) is None:
                errors[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif service.store.is_metadata_too_large(metadata):
                errors[key] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                values[key] = OffsetAndMetadata(
                    p.committed_offset, p.committed_leader_epoch, metadata
                )
    if values:
        try:
            service.store.commit(
                request.group_id,
                values,
                now_ms=now,
                expire_timestamp_ms=min(now + retention, INT64_MAX) if retention >= 0 else None,
            )
            outcome = ErrorCode.NONE
        except SeglogError as failure:
            LOG.error("commit of group %s failed: %s", request.group_id, failure)
            outcome = ErrorCode.COORDINATOR_NOT_AVAILABLE
        errors.update(dict.fromkeys(values, outcome))
    return _commit_answer(request, errors)


#: (partition, committed value or None, error code) of one partition of an OffsetFetch answer
Fetched = tuple[int, OffsetCommitValue | None, ErrorCode]


def _fetch_group(
    state: BrokerState,
    group_id: str,
    wanted: list[tuple[str, list[int]]] | None,
    require_stable: bool,
) -> list[tuple[str, list[Fetched]]]:
    store = state.groups.store
    committed = store.committed(group_id)

    def one(tp: TopicPartition) -> Fetched:
        if require_stable and store.has_pending(group_id, tp):
            return tp.partition, None, ErrorCode.UNSTABLE_OFFSET_COMMIT
        return tp.partition, committed.get(tp), ErrorCode.NONE

    if wanted is None:
        by_topic: dict[str, list[Fetched]] = {}
        for tp in sorted(committed):
            by_topic.setdefault(tp.topic, []).append(one(tp))
        return list(by_topic.items())
    return [
        (topic, [one(TopicPartition(topic, p)) for p in partitions]) for topic, partitions in wanted
    ]


async def offset_fetch(
    state: BrokerState, context: RequestContext, request: OffsetFetchRequest
) -> OffsetFetchResponse:
    version = context.api_version
    available = state.groups.ensure_offsets_topic()
    stable = version >= 7 and request.require_stable
    if version < 8:
        wanted = (
            None
            if request.topics is None
            else [(t.name, list(t.partition_indexes)) for t in request.topics]
        )
        found = _fetch_group(state, request.group_id, wanted, stable) if available else []
        return OffsetFetchResponse(
            error_code=int(ErrorCode.NONE if available else ErrorCode.COORDINATOR_NOT_AVAILABLE),
            topics=[
                OffsetFetchResponseOffsetFetchResponseTopic(
                    name=topic,
                    partitions=[
                        OffsetFetchResponseOffsetFetchResponsePartition(
                            partition_index=p,
                            committed_offset=NO_OFFSET if v is None else v.offset,
                            committed_leader_epoch=-1 if v is None else v.leader_epoch,
                            metadata="" if v is None else v.metadata,
                            error_code=int(error),
                        )
                        for p, v, error in partitions
                    ],
                )
                for topic, partitions in found
            ],
        )
    groups = []
    for group in request.groups:
        wanted = (
            None
            if group.topics is None
            else [(t.name, list(t.partition_indexes)) for t in group.topics]
        )
        found = _fetch_group(state, group.group_id, wanted, stable) if available else []
        groups.append(
            OffsetFetchResponseOffsetFetchResponseGroup(
                group_id=group.group_id,
                error_code=int(
                    ErrorCode.NONE if available else ErrorCode.COORDINATOR_NOT_AVAILABLE
                ),
                topics=[
                    OffsetFetchResponseOffsetFetchResponseTopics(
                        name=topic,
                        partitions=[
                            OffsetFetchResponseOffsetFetchResponsePartitions(
                                partition_index=p,
                                committed_offset=NO_OFFSET if v is None else v.offset,
                                committed_leader_epoch=-1 if v is None else v.leader_epoch,
                                metadata="" if v is None else v.metadata,
                                error_code=int(error),
                            )
                            for p, v, error in partitions
                        ],
                    )
                    for topic, partitions in found
                ],
            )
        )
    return OffsetFetchResponse(groups=groups)


def _subscribed_topics(state: BrokerState, group_id: str) -> set[str] | None:
    """Topics a live consumer group's members subscribe to; None when it cannot be known (a
    group with members whose protocol is not Kafka's consumer protocol)."""
    group = state.groups.coordinator.group(group_id)
    if group is None or not group.members:
        return set()
    if group.protocol_type != CONSUMER_PROTOCOL or group.protocol_name is None:
        return None
    topics: set[str] = set()
    for member in group.members.values():
        try:
            topics.update(subscription_topics(member.metadata(group.protocol_name)))
        except SeglogError:
            return None  # metadata that is not a subscription: treat as subscribed to all
    return topics


async def offset_delete(
    state: BrokerState, context: RequestContext, request: OffsetDeleteRequest
) -> OffsetDeleteResponse:
    """OffsetDelete (key 47, v0): Kafka's rules (``GroupCoordinator.handleDeleteOffsets``).

    An unknown group (no members, no offsets) is GROUP_ID_NOT_FOUND; a group with members
    that is not a consumer group is NON_EMPTY_GROUP; the offsets of topics a live member
    subscribes to are GROUP_SUBSCRIBED_TO_TOPIC; the others are deleted with tombstones
    before the answer (a partition without a commit deletes nothing and answers NONE).
    """
    service = state.groups
    if not request.group_id:
        return OffsetDeleteResponse(error_code=int(ErrorCode.INVALID_GROUP_ID))
    group = service.coordinator.group(request.group_id)
    committed = service.store.committed(request.group_id)
    if group is None and not committed:
        return OffsetDeleteResponse(error_code=int(ErrorCode.GROUP_ID_NOT_FOUND))
    subscribed = _subscribed_topics(state, request.group_id)
    if subscribed is None:
        return OffsetDeleteResponse(error_code=int(ErrorCode.NON_EMPTY_GROUP))
    deletable = [
        TopicPartition(t.name, p.partition_index)
        for t in request.topics
        if t.name not in subscribed
        for p in t.partitions
    ]
    try:
        service.store.delete_offsets(request.group_id, deletable, now_ms=service.now_ms())
    except SeglogError as failure:
        LOG.error("OffsetDelete of group %s failed: %s", request.group_id, failure)
        return OffsetDeleteResponse(error_code=int(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    return OffsetDeleteResponse(
        topics=[
            OffsetDeleteResponseOffsetDeleteResponseTopic(
                name=t.name,
                partitions=[
                    OffsetDeleteResponseOffsetDeleteResponsePartition(
                        partition_index=p.partition_index,
                        error_code=int(
                            ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                            if t.name in subscribed
                            else ErrorCode.NONE
                        ),
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )


HANDLERS = [
    ApiHandler(8, 2, 9, offset_commit),
    ApiHandler(9, 1, 9, offset_fetch),
    ApiHandler(47, 0, 0, offset_delete),
]
