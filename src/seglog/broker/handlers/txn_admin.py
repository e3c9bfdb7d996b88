"""DescribeProducers (key 61, v0) and WriteTxnMarkers (key 27, v1-2): the transaction admin
APIs ``kafka-transactions.sh`` (and ``seglog transactions --bootstrap-server``) use.

**DescribeProducers** answers, per partition, every producer of the partition's producer state:
producer id and epoch, last sequence, last timestamp, the coordinator epoch of its last marker
(-1 when it never had one) and the first offset of its open transaction (-1 when none), as
Kafka's ``activeProducerState``. A partition not here gets UNKNOWN_TOPIC_OR_PARTITION; a
principal without READ on the topic TOPIC_AUTHORIZATION_FAILED (Kafka's checks).

**WriteTxnMarkers** writes, for each marker of the request, a COMMIT or ABORT control batch on
each named partition with :meth:`~seglog.engine.log.Log.append_marker` (the producer's open
transaction ends; an aborted one gets its ``.txnindex`` entry), and answers per partition with
Kafka's error codes:

======================================  ===================================
refusal                                 error code
======================================  ===================================
neither ALTER nor CLUSTER_ACTION on     CLUSTER_AUTHORIZATION_FAILED (31), every partition
the cluster (Kafka asks ALTER first)
partition not here                      UNKNOWN_TOPIC_OR_PARTITION (3)
epoch older than the producer's         INVALID_PRODUCER_EPOCH (47)
coordinator epoch older than the last   TRANSACTION_COORDINATOR_FENCED (52)
the disk refused the write              KAFKA_STORAGE_ERROR (56)
======================================  ===================================

After a marker on a ``__consumer_offsets`` partition, the group service applies (commit) or drops
(abort) the producer's pending transactional offsets, when it supports it
(``complete_transaction``), as Kafka's ``onTransactionCompleted``. Fetch long polls waiting on a
marked partition are woken: the marker moves its last stable offset.

Versions: v0 of WriteTxnMarkers was removed in Kafka 4.0 and is not served (no client sends it;
only brokers did). v2's ``transaction_version`` (KIP-890's epoch bump on every transaction) is
accepted and changes nothing here: the marker's epoch must still not be older than the
producer's.
"""

from __future__ import annotations

import logging

from seglog.broker.authorization import CLUSTER_NAME, Operation, ResourceType
from seglog.broker.handlers.produce import error_code_of
from seglog.broker.registry import ApiHandler
from seglog.broker.state import BrokerState, RequestContext
from seglog.errors import SeglogError
from seglog.format.topic_names import TopicPartition
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeProducersResponsePartitionResponse,
    DescribeProducersResponseProducerState,
    DescribeProducersResponseTopicResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersRequestWritableTxnMarker,
    WriteTxnMarkersResponse,
    WriteTxnMarkersResponseWritableTxnMarkerPartitionResult,
    WriteTxnMarkersResponseWritableTxnMarkerResult,
    WriteTxnMarkersResponseWritableTxnMarkerTopicResult,
)

DESCRIBE_PRODUCERS_KEY = 61
WRITE_TXN_MARKERS_KEY = 27
OFFSETS_TOPIC = "__consumer_offsets"
LOG = logging.getLogger("seglog.serve")


def _producers_of(
    state: BrokerState, context: RequestContext, topic: str, partition: int
) -> DescribeProducersResponsePartitionResponse:
    if not state.authorize(context, Operation.READ, ResourceType.TOPIC, topic):
        return DescribeProducersResponsePartitionResponse(
            partition_index=partition, error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        )
    log = state.log_of(topic, partition)
    if log is None:
        return DescribeProducersResponsePartitionResponse(
            partition_index=partition,
            error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            error_message="This server does not host this topic-partition.",
        )
    producers = []
    for pid, entry in sorted(log.producer_state.producers().items()):
        start = entry.current_txn_first_offset
        producers.append(
            DescribeProducersResponseProducerState(
                producer_id=pid,
                producer_epoch=entry.producer_epoch,
                last_sequence=entry.last_sequence,
                last_timestamp=entry.last_timestamp,
                coordinator_epoch=entry.coordinator_epoch,
                current_txn_start_offset=-1 if start is None else start,
            )
        )
    return DescribeProducersResponsePartitionResponse(
        partition_index=partition, active_producers=producers
    )


async def describe_producers(
    state: BrokerState, context: RequestContext, request: DescribeProducersRequest
) -> DescribeProducersResponse:
    return DescribeProducersResponse(
        topics=[
            DescribeProducersResponseTopicResponse(
                name=topic.name,
                partitions=[
                    _producers_of(state, context, topic.name, p) for p in topic.partition_indexes
                ],
            )
            for topic in request.topics
        ]
    )


def _complete_offsets(state: BrokerState, partition: int, producer_id: int, commit: bool) -> None:
    """Tell the group service a transaction ended on a ``__consumer_offsets`` partition."""
    complete = getattr(state.groups, "complete_transaction", None)
    if complete is not None:
        complete(partition, producer_id, commit=commit)


def _write_marker(
    state: BrokerState, marker: WriteTxnMarkersRequestWritableTxnMarker, topic: str, partition: int
) -> ErrorCode:
    log = state.log_of(topic, partition)
    if log is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    commit = marker.transaction_result
    try:
        log.append_marker(
            marker.producer_id,
            marker.producer_epoch,
            commit=commit,
            coordinator_epoch=marker.coordinator_epoch,
        )
    except SeglogError as error:
        code = error_code_of(error)
        LOG.info(
            "WriteTxnMarkers for producer %d on %s-%d refused (%s): %s",
            marker.producer_id,
            topic,
            partition,
            code.name,
            error,
        )
        return code
    tp = TopicPartition(topic, partition)
    if topic == OFFSETS_TOPIC:
        _complete_offsets(state, partition, marker.producer_id, commit)
    state.appends.notify(tp)
    return ErrorCode.NONE


async def write_txn_markers(
    state: BrokerState, context: RequestContext, request: WriteTxnMarkersRequest
) -> WriteTxnMarkersResponse:
    allowed = state.authorize(
        context, Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME
    ) or state.authorize(context, Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
    results = []
    for marker in request.markers:
        topics = []
        for topic in marker.topics:
            partitions = [
                WriteTxnMarkersResponseWritableTxnMarkerPartitionResult(
                    partition_index=p,
                    error_code=int(
                        _write_marker(state, marker, topic.name, p)
                        if allowed
                        else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                    ),
                )
                for p in topic.partition_indexes
            ]
            topics.append(
                WriteTxnMarkersResponseWritableTxnMarkerTopicResult(
                    name=topic.name, partitions=partitions
                )
            )
        results.append(
            WriteTxnMarkersResponseWritableTxnMarkerResult(
                producer_id=marker.producer_id, topics=topics
            )
        )
    return WriteTxnMarkersResponse(markers=results)


HANDLERS = [
    ApiHandler(DESCRIBE_PRODUCERS_KEY, 0, 0, describe_producers),
    ApiHandler(WRITE_TXN_MARKERS_KEY, 1, 2, write_txn_markers),
]
