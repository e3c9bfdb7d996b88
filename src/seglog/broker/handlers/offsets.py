"""ListOffsets (key 2, v1-7), OffsetForLeaderEpoch (key 23, v2-4), DeleteRecords (key 21, v0-2).

ListOffsets (like Fetch) first checks the request's ``current_leader_epoch`` against the log's
(:func:`epoch_error`), then answers per partition with Kafka's special timestamps: -1 latest
(the high watermark, or the last stable offset for ``read_committed``), -2 earliest (the log
start offset), -3 the record with the largest timestamp (KIP-734, v7), and a real timestamp: the
first offset whose timestamp is at least it, through the time index (no such record: offset -1).
As in Kafka, -3 and timestamp answers are limited to offsets the client may fetch: one at or
above the last stable offset (``read_committed``) or the high watermark is "no offset" (-1). The
tiered-storage sentinels (-4, -5) belong to versions not served. Latest and earliest answer
``timestamp = -1``, as Kafka does. A partition named twice in one request gets INVALID_REQUEST
at each mention (Kafka's ``duplicatePartitions``): the client could not tell the answers apart.

OffsetForLeaderEpoch answers from the leader-epoch cache: for the latest epoch the log end
offset; for an older epoch, the largest epoch at or below it and the start offset of the epoch
after it; for an epoch older than the first, -1/-1. A ``current_leader_epoch`` above the log's
is UNKNOWN_LEADER_EPOCH, below it FENCED_LEADER_EPOCH (one node never changes leader, so these
only meet a client holding stale or foreign metadata).

DeleteRecords moves log start offsets (offset -1: the high watermark); an offset above the high
watermark is OFFSET_OUT_OF_RANGE and a topic without ``delete`` in its cleanup.policy gets
POLICY_VIOLATION, as Kafka answers.

Authorization (Kafka's ``KafkaApis``), asked before anything else, TOPIC_AUTHORIZATION_FAILED
per partition when refused: ListOffsets needs DESCRIBE on the topic; OffsetForLeaderEpoch
DESCRIBE on the topic, or CLUSTER_ACTION on the cluster (a follower); DeleteRecords DELETE.
"""

from __future__ import annotations

from seglog.broker.authorization import CLUSTER_NAME, Operation, ResourceType
from seglog.broker.registry import ApiHandler
from seglog.broker.state import BrokerState, RequestContext
from seglog.errors import InvalidConfigError, InvalidRecordError, OffsetOutOfRangeError, SeglogError
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsResponseDeleteRecordsPartitionResult,
    DeleteRecordsResponseDeleteRecordsTopicResult,
    ListOffsetsRequest,
    ListOffsetsRequestListOffsetsPartition,
    ListOffsetsResponse,
    ListOffsetsResponseListOffsetsPartitionResponse,
    ListOffsetsResponseListOffsetsTopicResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestOffsetForLeaderPartition,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResponseEpochEndOffset,
    OffsetForLeaderEpochResponseOffsetForLeaderTopicResult,
)

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
READ_COMMITTED = 1  # the wire's isolation_level


def epoch_error(log_epoch: int, current_leader_epoch: int) -> ErrorCode | None:
    """Kafka's check of a request's ``current_leader_epoch`` (Fetch, ListOffsets,
    OffsetForLeaderEpoch): -1 skips it; above the log's epoch the client knows a leader this
    node has not heard of (UNKNOWN_LEADER_EPOCH), below it the client's metadata is stale
    (FENCED_LEADER_EPOCH). Either way the client refreshes its metadata and retries."""
    if current_leader_epoch < 0 or current_leader_epoch == log_epoch:
        return None
    if current_leader_epoch > log_epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    return ErrorCode.FENCED_LEADER_EPOCH


def _list_one(
    state: BrokerState, topic: str, request: ListOffsetsRequestListOffsetsPartition, committed: bool
) -> ListOffsetsResponseListOffsetsPartitionResponse:
    index = request.partition_index
    log = state.log_of(topic, index)
    answer = ListOffsetsResponseListOffsetsPartitionResponse(partition_index=index)
    if log is None:
        answer.error_code = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return answer
    stale = epoch_error(log.leader_epoch, request.current_leader_epoch)
    if stale is not None:
        answer.error_code = int(stale)
        return answer
    timestamp = request.timestamp
    answer.leader_epoch = log.leader_epoch
    if timestamp == LATEST:
        answer.offset = log.last_stable_offset if committed else log.high_watermark
        answer.timestamp = -1
        return answer
    if timestamp == EARLIEST:
        answer.offset = log.log_start_offset
        answer.timestamp = -1
        return answer
    try:
        found = log.fetch_offset_by_timestamp(timestamp)
    except InvalidRecordError:
        answer.error_code = int(ErrorCode.INVALID_REQUEST)
        return answer
    # Kafka answers only offsets a consumer of this isolation level may fetch: below the last
    # stable offset (read_committed) or the high watermark (read_uncommitted).
    fetchable = log.last_stable_offset if committed else log.high_watermark
    if found is None or found.offset >= fetchable:
        answer.offset, answer.timestamp = -1, -1
    else:
        answer.offset, answer.timestamp = found.offset, found.timestamp
        if found.leader_epoch >= 0:
            answer.leader_epoch = found.leader_epoch
    return answer


def _duplicates(request: ListOffsetsRequest) -> set[tuple[str, int]]:
    seen: set[tuple[str, int]] = set()
    twice: set[tuple[str, int]] = set()
    for topic in request.topics:
        for partition in topic.partitions:
            key = (topic.name, partition.partition_index)
            (twice if key in seen else seen).add(key)
    return twice


async def list_offsets(
    state: BrokerState, context: RequestContext, request: ListOffsetsRequest
) -> ListOffsetsResponse:
    committed = request.isolation_level == READ_COMMITTED
    duplicates = _duplicates(request)
    describable = state.authorized_names(
        context, Operation.DESCRIBE, ResourceType.TOPIC, (t.name for t in request.topics)
    )

    def answer(
        topic: str, p: ListOffsetsRequestListOffsetsPartition
    ) -> ListOffsetsResponseListOffsetsPartitionResponse:
        if topic not in describable:
            return ListOffsetsResponseListOffsetsPartitionResponse(
                partition_index=p.partition_index,
                error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
            )
        if (topic, p.partition_index) in duplicates:
            return ListOffsetsResponseListOffsetsPartitionResponse(
                partition_index=p.partition_index, error_code=int(ErrorCode.INVALID_REQUEST)
            )
        return _list_one(state, topic, p, committed)

    return ListOffsetsResponse(
        topics=[
            ListOffsetsResponseListOffsetsTopicResponse(
                name=topic.name, partitions=[answer(topic.name, p) for p in topic.partitions]
            )
            for topic in request.topics
        ]
    )


def _epoch_end(
    state: BrokerState,
    topic: str,
    request: OffsetForLeaderEpochRequestOffsetForLeaderPartition,
    authorized: bool,
) -> OffsetForLeaderEpochResponseEpochEndOffset:
    index = request.partition
    answer = OffsetForLeaderEpochResponseEpochEndOffset(partition=index)
    if not authorized:
        answer.error_code = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        return answer
    log = state.log_of(topic, index)
    if log is None:
        answer.error_code = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return answer
    current = log.leader_epoch
    stale = epoch_error(current, request.current_leader_epoch)
    if stale is not None:
        answer.error_code = int(stale)
        return answer
    wanted = request.leader_epoch
    entries = log.epoch_entries()
    if wanted >= current or not entries:
        answer.leader_epoch, answer.end_offset = current, log.log_end_offset
        return answer
    if wanted < entries[0].epoch:
        answer.leader_epoch, answer.end_offset = -1, -1
        return answer
    floor = max(e.epoch for e in entries if e.epoch <= wanted)
    following = next(e for e in entries if e.epoch > wanted)
    answer.leader_epoch, answer.end_offset = floor, following.start_offset
    return answer


async def offset_for_leader_epoch(
    state: BrokerState, context: RequestContext, request: OffsetForLeaderEpochRequest
) -> OffsetForLeaderEpochResponse:
    names = [topic.topic for topic in request.topics]
    if state.authorize(context, Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        describable = set(names)
    else:
        describable = state.authorized_names(context, Operation.DESCRIBE, ResourceType.TOPIC, names)
    return OffsetForLeaderEpochResponse(
        topics=[
            OffsetForLeaderEpochResponseOffsetForLeaderTopicResult(
                topic=topic.topic,
                partitions=[
                    _epoch_end(state, topic.topic, p, topic.topic in describable)
                    for p in topic.partitions
                ],
            )
            for topic in request.topics
        ]
    )


def _delete_one(
    state: BrokerState, topic: str, partition: int, offset: int, authorized: bool
) -> DeleteRecordsResponseDeleteRecordsPartitionResult:
    answer = DeleteRecordsResponseDeleteRecordsPartitionResult(
        partition_index=partition, low_watermark=-1
    )
    if not authorized:
        answer.error_code = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        return answer
    log = state.log_of(topic, partition)
    if log is None:
        answer.error_code = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return answer
    try:
        answer.low_watermark = log.delete_records(offset)
    except OffsetOutOfRangeError:
        answer.error_code = int(ErrorCode.OFFSET_OUT_OF_RANGE)
    except InvalidConfigError:
        answer.error_code = int(ErrorCode.POLICY_VIOLATION)
    except SeglogError:
        answer.error_code = int(ErrorCode.KAFKA_STORAGE_ERROR)
    return answer


async def delete_records(
    state: BrokerState, context: RequestContext, request: DeleteRecordsRequest
) -> DeleteRecordsResponse:
    deletable = state.authorized_names(
        context, Operation.DELETE, ResourceType.TOPIC, (t.name for t in request.topics)
    )
    topics = [
        DeleteRecordsResponseDeleteRecordsTopicResult(
            name=topic.name,
            partitions=[
                _delete_one(state, topic.name, p.partition_index, p.offset, topic.name in deletable)
                for p in topic.partitions
            ],
        )
        for topic in request.topics
    ]
    if any(p.error_code == 0 for t in topics for p in t.partitions):
        state.manager.checkpoint_log_start_offsets()
    return DeleteRecordsResponse(topics=topics)


HANDLERS = [
    ApiHandler(2, 1, 7, list_offsets),
    ApiHandler(23, 2, 4, offset_for_leader_epoch),
    ApiHandler(21, 0, 2, delete_records),
]
