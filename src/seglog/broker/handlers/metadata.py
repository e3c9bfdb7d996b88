"""Metadata (key 3, v0-12): the one broker, the topics, and auto-creation.

* Which topics: v0 ``[]`` and v1+ ``null`` mean every topic; v1+ ``[]`` means none (librdkafka
  asks that way for the broker list alone).
* An unknown topic is created at once (one node creates synchronously, so no
  LEADER_NOT_AVAILABLE round trip) when ``auto.create.topics.enable`` is on and the request
  allows it (``allow_auto_topic_creation``, v4+; always for older versions), with
  ``num.partitions`` partitions and the broker's topic defaults. Internal topics are never
  auto-created with defaults: ``__consumer_offsets`` comes from the group coordinator with its
  own settings, as Kafka's ``AutoTopicCreationManager`` does. Otherwise UNKNOWN_TOPIC_OR_PARTITION;
  an illegal name gets INVALID_TOPIC_EXCEPTION.
* Every partition is led by this node at its log's leader epoch, with itself as the only
  replica and ISR member; topic ids (v10+) are those of ``partition.metadata``.
* A topic lists partitions ``0 .. highest``. A directory copied from one broker of a cluster
  may hold only some of a topic's partitions (say ``orders-1`` without ``orders-0``); the ones
  not here are listed as Kafka lists an offline partition: LEADER_NOT_AVAILABLE, leader -1, no
  replicas. Clients index partitions by number and take the list's length as the partition
  count, so listing only the present ones would leave ``orders-1`` unreachable (librdkafka
  calls it an unknown partition); listed as offline, the present partitions serve normally.
"""

from __future__ import annotations

from seglog.broker.registry import ApiHandler
from seglog.broker.state import INT32_MIN, INTERNAL_TOPICS, BrokerState, RequestContext, topic_uuid
from seglog.errors import InvalidTopicError, SeglogError, TopicExistsError
from seglog.format.topic_names import validate_topic_name
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseMetadataResponseBroker,
    MetadataResponseMetadataResponsePartition,
    MetadataResponseMetadataResponseTopic,
)

API_KEY = 3


def broker_entry(
    state: BrokerState, context: RequestContext
) -> MetadataResponseMetadataResponseBroker:
    endpoint = state.endpoint_for(context)
    return MetadataResponseMetadataResponseBroker(
        node_id=state.node_id, host=endpoint.host, port=endpoint.port, rack=None
    )


def topic_entry(state: BrokerState, name: str) -> MetadataResponseMetadataResponseTopic:
    """The metadata of one existing topic (its partitions in order)."""
    manager = state.manager
    description = manager.describe_topic(name)
    partitions = []
    present = set(manager.partitions_of(name))
    for partition in range(max(present, default=-1) + 1):
        if partition not in present:
            partitions.append(_offline_partition(partition))
            continue
        log = manager.get_log(name, partition)
        partitions.append(
            MetadataResponseMetadataResponsePartition(
                error_code=0,
                partition_index=partition,
                leader_id=state.node_id,
                leader_epoch=log.leader_epoch,
                replica_nodes=[state.node_id],
                isr_nodes=[state.node_id],
                offline_replicas=[],
            )
        )
    return MetadataResponseMetadataResponseTopic(
        error_code=0,
        name=name,
        topic_id=topic_uuid(description.topic_id),
        is_internal=name in INTERNAL_TOPICS,
        partitions=partitions,
        topic_authorized_operations=INT32_MIN,
    )


def _offline_partition(index: int) -> MetadataResponseMetadataResponsePartition:
    return MetadataResponseMetadataResponsePartition(
        error_code=int(ErrorCode.LEADER_NOT_AVAILABLE),
        partition_index=index,
        leader_id=-1,
        leader_epoch=-1,
        replica_nodes=[],
        isr_nodes=[],
        offline_replicas=[],
    )


def _error_topic(name: str, error: ErrorCode) -> MetadataResponseMetadataResponseTopic:
    return MetadataResponseMetadataResponseTopic(
        error_code=int(error), name=name, is_internal=name in INTERNAL_TOPICS
    )


def _requested_or_created(
    state: BrokerState, name: str, allow_create: bool
) -> MetadataResponseMetadataResponseTopic:
    manager = state.manager
    if name in manager.topic_names():
        return topic_entry(state, name)
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return _error_topic(name, ErrorCode.INVALID_TOPIC_EXCEPTION)
    if name in INTERNAL_TOPICS:
        if allow_create and state.create_internal_topic(name):
            return topic_entry(state, name)
        return _error_topic(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if not (allow_create and state.config.auto_create_topics_enable):
        return _error_topic(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    try:
        manager.create_topic(name, manager.broker.num_partitions)
    except TopicExistsError:
        pass  # created meanwhile (or a name colliding with an existing one: reported below)
    except InvalidTopicError:
        return _error_topic(name, ErrorCode.INVALID_TOPIC_EXCEPTION)
    except SeglogError:
        return _error_topic(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if name not in manager.topic_names():
        return _error_topic(name, ErrorCode.INVALID_TOPIC_EXCEPTION)
    return topic_entry(state, name)


async def handle(
    state: BrokerState, context: RequestContext, request: MetadataRequest
) -> MetadataResponse:
    version = context.api_version
    requested = request.topics
    if requested is None or (version == 0 and not requested):
        names = sorted(state.manager.topic_names())
        topics = [topic_entry(state, name) for name in names]
    else:
        allow = request.allow_auto_topic_creation if version >= 4 else True
        topics = [_requested_or_created(state, t.name or "", allow) for t in requested]
    return MetadataResponse(
        brokers=[broker_entry(state, context)],
        cluster_id=state.cluster_id,
        controller_id=state.node_id,
        topics=topics,
        cluster_authorized_operations=INT32_MIN,
    )


HANDLERS = [ApiHandler(API_KEY, 0, 12, handle)]
