"""Fetch (key 1, v4-12): record bytes from the segment files, never decoded, with long polls.

Kafka's rules (``UnifiedLog.read``, ``ReplicaManager.fetchMessages``), per partition in request
order:

* whole batches from the one holding ``fetch_offset`` (the client skips records below it);
  the first batch of the whole response comes whole even above ``partition_max_bytes`` or
  ``max_bytes`` (KIP-74), then batches while both limits hold; a partition reached after
  ``max_bytes`` is used up is listed with no records;
* ``read_committed`` (``isolation_level`` 1, librdkafka's default) stops at the last stable
  offset and lists the aborted transactions of the bytes returned; ``read_uncommitted`` stops
  at the high watermark (the log end offset: one node);
* a ``current_leader_epoch`` other than the log's (and not -1) gets UNKNOWN_LEADER_EPOCH
  (above) or FENCED_LEADER_EPOCH (below), as Kafka checks it;
* a fetch offset below the log start offset or above the high watermark gets
  OFFSET_OUT_OF_RANGE (the client resets through ListOffsets); at the high watermark, no
  records; an unknown partition, UNKNOWN_TOPIC_OR_PARTITION;
* a topic the principal may not READ (a consumer) gets TOPIC_AUTHORIZATION_FAILED, before its
  existence is looked at; a follower fetch (``replica_id >= 0``) needs CLUSTER_ACTION on the
  cluster, else every partition gets it (Kafka's ``handleFetchRequest``); such an error
  answers at once like the others;
* the response lists exactly the requested partitions, in order (clients reject a full
  response missing one).

Long polls: when fewer than ``min_bytes`` are available the request waits, up to
``max_wait_ms``, for an append to one of its partitions, then reads again. A request with a
partition in error (OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION, a storage error) is
answered at once, as Kafka's ``errorReadingData`` does: the client must learn of it now (to
reset its position, refresh metadata) rather than after ``max_wait_ms``. A server shutting down
wakes every long poll, which answers with what it has.

Fetch sessions (KIP-227) are refused: every response has ``session_id = 0``, which every client
takes as "send full fetches"; a request naming a session (``session_id`` not 0) gets
FETCH_SESSION_ID_NOT_FOUND.

The bytes leave as :class:`FileRangesRecords`: open-file ranges the network edge sends with
``sendfile``.
"""

from __future__ import annotations

import time

from seglog.broker.authorization import CLUSTER_NAME, Operation, ResourceType
from seglog.broker.file_records import FileRangesRecords
from seglog.broker.handlers.offsets import epoch_error
from seglog.broker.registry import ApiHandler
from seglog.broker.state import BrokerState, RequestContext
from seglog.core.isolation import IsolationLevel
from seglog.errors import OffsetOutOfRangeError, SeglogError
from seglog.format.topic_names import TopicPartition
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    FetchRequest,
    FetchRequestFetchPartition,
    FetchResponse,
    FetchResponseAbortedTransaction,
    FetchResponseFetchableTopicResponse,
    FetchResponsePartitionData,
)

API_KEY = 1
READ_COMMITTED = 1


class _Read:
    """One pass over the requested partitions: the response and the bytes it holds."""

    def __init__(self) -> None:
        self.topics: list[FetchResponseFetchableTopicResponse] = []
        self.bytes = 0
        self.records: list[FileRangesRecords] = []
        self.error = False  # a partition's read failed: answer without waiting

    def close(self) -> None:
        for records in self.records:
            records.close()


def _read_partition(
    state: BrokerState,
    topic: str,
    request: FetchRequestFetchPartition,
    isolation: IsolationLevel,
    budget: int,
    read: _Read,
) -> FetchResponsePartitionData:
    index = request.partition
    answer = FetchResponsePartitionData(partition_index=index, records=b"")
    log = state.log_of(topic, index)
    if log is None:
        answer.error_code = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        answer.high_watermark = answer.last_stable_offset = answer.log_start_offset = -1
        return answer
    stale = epoch_error(log.leader_epoch, request.current_leader_epoch)
    if stale is not None:
        answer.error_code = int(stale)
        answer.high_watermark = answer.last_stable_offset = answer.log_start_offset = -1
        return answer
    committed = isolation is IsolationLevel.READ_COMMITTED
    max_bytes = min(request.partition_max_bytes, budget)
    if max_bytes <= 0 and read.bytes > 0:
        answer.high_watermark = log.high_watermark
        answer.last_stable_offset = log.last_stable_offset
        answer.log_start_offset = log.log_start_offset
        answer.aborted_transactions = [] if committed else None
        return answer
    try:
        ranges = log.fetch_file_ranges(
            request.fetch_offset,
            max(max_bytes, 0),
            isolation_level=isolation,
            min_one_batch=read.bytes == 0,
        )
    except OffsetOutOfRangeError:
        answer.error_code = int(ErrorCode.OFFSET_OUT_OF_RANGE)
        answer.high_watermark = log.high_watermark
        answer.last_stable_offset = log.last_stable_offset
        answer.log_start_offset = log.log_start_offset
        return answer
    except SeglogError:
        answer.error_code = int(ErrorCode.KAFKA_STORAGE_ERROR)
        answer.high_watermark = answer.last_stable_offset = answer.log_start_offset = -1
        return answer
    answer.high_watermark = ranges.high_watermark
    answer.last_stable_offset = ranges.last_stable_offset
    answer.log_start_offset = ranges.log_start_offset
    if ranges.aborted_transactions is None:
        answer.aborted_transactions = None
    else:
        answer.aborted_transactions = [
            FetchResponseAbortedTransaction(
                producer_id=txn.producer_id, first_offset=txn.first_offset
            )
            for txn in ranges.aborted_transactions
        ]
    if ranges.size_bytes:
        records = FileRangesRecords(ranges.ranges, ranges.close)
        read.records.append(records)
        read.bytes += ranges.size_bytes
        answer.records = records
    else:
        ranges.close()
    return answer


def _unauthorized(index: int) -> FetchResponsePartitionData:
    return FetchResponsePartitionData(
        partition_index=index,
        error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        high_watermark=-1,
        last_stable_offset=-1,
        log_start_offset=-1,
        records=b"",
    )


def readable_topics(state: BrokerState, context: RequestContext, request: FetchRequest) -> set[str]:
    """The requested topics the principal may fetch: a consumer needs READ on the topic; a
    follower (``replica_id >= 0``) CLUSTER_ACTION on the cluster, else nothing (Kafka)."""
    names = [topic.topic for topic in request.topics]
    if request.replica_id >= 0:
        allowed = state.authorize(
            context, Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME
        )
        return set(names) if allowed else set()
    return state.authorized_names(context, Operation.READ, ResourceType.TOPIC, names)


def _read_all(
    state: BrokerState, request: FetchRequest, isolation: IsolationLevel, readable: set[str]
) -> _Read:
    read = _Read()
    limit = request.max_bytes
    for topic in request.topics:
        if topic.topic not in readable:
            partitions = [_unauthorized(p.partition) for p in topic.partitions]
        else:
            partitions = [
                _read_partition(state, topic.topic, p, isolation, limit - read.bytes, read)
                for p in topic.partitions
            ]
        read.error = read.error or any(p.error_code != 0 for p in partitions)
        read.topics.append(
            FetchResponseFetchableTopicResponse(topic=topic.topic, partitions=partitions)
        )
    return read


async def handle(
    state: BrokerState, context: RequestContext, request: FetchRequest
) -> FetchResponse:
    if request.session_id != 0:
        return FetchResponse(error_code=int(ErrorCode.FETCH_SESSION_ID_NOT_FOUND), session_id=0)
    isolation = (
        IsolationLevel.READ_COMMITTED
        if request.isolation_level == READ_COMMITTED
        else IsolationLevel.READ_UNCOMMITTED
    )
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    partitions = [
        TopicPartition(topic.topic, p.partition)
        for topic in request.topics
        for p in topic.partitions
    ]
    readable = readable_topics(state, context, request)
    while True:
        read = _read_all(state, request, isolation, readable)
        remaining = deadline - time.monotonic()
        done = remaining <= 0 or not partitions or state.appends.closed  # closed: stopping
        if read.bytes >= request.min_bytes or read.error or done:
            return FetchResponse(error_code=0, session_id=0, responses=read.topics)
        read.close()
        await state.appends.wait(partitions, remaining)


HANDLERS = [ApiHandler(API_KEY, 4, 12, handle)]
