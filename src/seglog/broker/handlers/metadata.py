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
* Authorization (Kafka's ``handleTopicMetadataRequest``): "every topic" lists only those the
  principal may DESCRIBE; a named topic it may not DESCRIBE gets TOPIC_AUTHORIZATION_FAILED
  whether or not it exists (its existence is not disclosed); a missing topic that would be
  auto-created needs CREATE on the cluster or on the topic, else TOPIC_AUTHORIZATION_FAILED.
  ``topic_authorized_operations`` (v8+) and ``cluster_authorized_operations`` (v8-10) are
  filled when the request asks for them.
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

from seglog.broker.authorization import CLUSTER_NAME, Operation, ResourceType
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


def _error_topic(
    name: str, error: ErrorCode, disclose: bool = True
) -> MetadataResponseMetadataResponseTopic:
    """A topic answered with an error; ``disclose`` False (not describable) says nothing of
    it, not even whether it is internal."""
    return MetadataResponseMetadataResponseTopic(
        error_code=int(error), name=name, is_internal=disclose and name in INTERNAL_TOPICS
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
        names = sorted(
            state.authorized_names(
                context, Operation.DESCRIBE, ResourceType.TOPIC, state.manager.topic_names()
            )
        )
        topics = [topic_entry(state, name) for name in names]
    else:
        allow = request.allow_auto_topic_creation if version >= 4 else True
        wanted = [t.name or "" for t in requested]
        describable = state.authorized_names(
            context, Operation.DESCRIBE, ResourceType.TOPIC, wanted
        )
        creatable = _creatable(state, context, [n for n in wanted if n in describable], allow)
        topics = [
            _requested_or_created(state, name, allow)
            if name in creatable
            else _error_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, name in describable)
            for name in wanted
        ]
    if request.include_topic_authorized_operations and version >= 8:
        for topic in topics:
            if topic.error_code == 0:
                topic.topic_authorized_operations = state.authorized_operations(
                    context, ResourceType.TOPIC, topic.name or ""
                )
    return MetadataResponse(
        brokers=[broker_entry(state, context)],
        cluster_id=state.cluster_id,
        controller_id=state.node_id,
        topics=topics,
        cluster_authorized_operations=_cluster_operations(state, context, request, version),
    )


def _creatable(
    state: BrokerState, context: RequestContext, describable: list[str], allow: bool
) -> set[str]:
    """The describable topics that may be answered: existing ones, and missing ones when
    auto-creation is off or the principal may CREATE them (on the cluster or the topic)."""
    existing = state.manager.topic_names()
    missing = [name for name in describable if name not in existing]
    if not (missing and allow and state.config.auto_create_topics_enable):
        return set(describable)
    if state.authorize(context, Operation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME):
        return set(describable)
    may_create = state.authorized_names(context, Operation.CREATE, ResourceType.TOPIC, missing)
    return {name for name in describable if name in existing or name in may_create}


def _cluster_operations(
    state: BrokerState, context: RequestContext, request: MetadataRequest, version: int
) -> int:
    """``cluster_authorized_operations`` (v8-10, when asked): 0 without DESCRIBE on the
    cluster, as Kafka answers."""
    if not (8 <= version <= 10 and request.include_cluster_authorized_operations):
        return INT32_MIN
    if not state.authorize(context, Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return 0
    return state.authorized_operations(context, ResourceType.CLUSTER, CLUSTER_NAME)


HANDLERS = [ApiHandler(API_KEY, 0, 12, handle)]
