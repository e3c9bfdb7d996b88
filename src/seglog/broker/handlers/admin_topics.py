"""CreateTopics (key 19, v2-7), DeleteTopics (key 20, v1-6), CreatePartitions (key 37, v0-3).

Each works on one node synchronously: when the response is sent the topic's directories exist
(or are renamed ``-delete``), so ``timeout_ms`` is never waited on. Per topic, checks in Kafka's
order, each with Kafka's error code and a message naming the problem:

**CreateTopics.** A name given twice in one request: INVALID_REQUEST for each. An illegal name
(``[a-zA-Z0-9._-]``, at most 249 characters, not ``.``/``..``) or one colliding with an existing
topic through ``.``/``_``: INVALID_TOPIC_EXCEPTION. An existing topic: TOPIC_ALREADY_EXISTS.
An internal topic (``__consumer_offsets``, ``__transaction_state``) that does not exist yet:
INVALID_TOPIC_EXCEPTION, because the group coordinator creates it with its own partition
count and configs, never a client (decision: Kafka would create it with the client's settings,
which breaks the group-to-partition mapping when the count differs). Partition count -1 is
``num.partitions``; 0 or below -1: INVALID_PARTITIONS. Replication factor -1 is 1; 0 or below
-1, or above 1 (one node): INVALID_REPLICATION_FACTOR. Manual ``assignments`` exclude a count
or factor (INVALID_REQUEST), must number partitions 0..n-1 and name exactly this node
(INVALID_REPLICA_ASSIGNMENT otherwise). A config with a null value, an unknown name or a bad
value: INVALID_CONFIG. ``validate_only`` runs every check and creates nothing. From v5 the
result carries the partition count, the replication factor and every config of the topic
(:mod:`seglog.broker.handlers.config_entries`); v7 the topic id of ``partition.metadata``.

**DeleteTopics.** v1-5 name topics (``topic_names``); v6 gives ``topics[{name, topic_id}]``,
either key (both set: INVALID_REQUEST). ``delete.topic.enable=false``: TOPIC_DELETION_DISABLED
for every topic. Unknown: UNKNOWN_TOPIC_OR_PARTITION (by name) or UNKNOWN_TOPIC_ID (by id).
Internal topics are refused (INVALID_REQUEST): a client deleting ``__consumer_offsets`` would
lose every group's committed offsets. After a deletion, Fetch long polls waiting on the
topic's partitions are woken to read again and find the topic gone, and every
callback of ``BrokerState.on_topic_deleted`` runs with the topic's name (the group
coordinator writes tombstones for the topic's committed offsets there).

**CreatePartitions.** An increase only (INVALID_PARTITIONS for a count not above the current
one, or for a topic a Kafka broker wrote: its count belongs to its cluster); ``assignments``,
when given, must hold one entry per new partition naming exactly this node
(INVALID_REPLICA_ASSIGNMENT); ``validate_only`` creates nothing.

**Authorization** (Kafka's ``KafkaApis``/``ControllerApis``), TOPIC_AUTHORIZATION_FAILED when
refused, checked before the topic's existence: CreateTopics needs CREATE on the cluster or on
the topic (and without DESCRIBE_CONFIGS on the topic the result carries no configs and
``topic_config_error_code`` TOPIC_AUTHORIZATION_FAILED); DeleteTopics needs DELETE on the topic
(by id, a topic the principal may not DESCRIBE is UNKNOWN_TOPIC_ID); CreatePartitions ALTER.
"""

from __future__ import annotations

import logging
import resource
from collections import Counter
from uuid import UUID

from seglog.broker.authorization import CLUSTER_NAME, Operation, ResourceType
from seglog.broker.handlers.config_entries import topic_entries
from seglog.broker.registry import ApiHandler
from seglog.broker.state import INTERNAL_TOPICS, BrokerState, RequestContext, topic_uuid
from seglog.engine.topics import MAX_PARTITIONS_PER_TOPIC
from seglog.errors import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidTopicError,
    SeglogError,
    TopicExistsError,
    UnknownTopicError,
)
from seglog.format.topic_names import TopicPartition, check_new_topic_name
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    CreatePartitionsRequest,
    CreatePartitionsRequestCreatePartitionsTopic,
    CreatePartitionsResponse,
    CreatePartitionsResponseCreatePartitionsTopicResult,
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicConfigs,
    CreateTopicsResponseCreatableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseDeletableTopicResult,
)
from seglog.protocol.schema import ZERO_UUID

LOG = logging.getLogger("seglog.serve")

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37


class AdminError(Exception):
    """A per-topic refusal: Kafka's error code and the message the client shows."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# --- CreateTopics -----------------------------------------------------------------------------


def _check_assignments(state: BrokerState, topic: CreateTopicsRequestCreatableTopic) -> int:
    """The partition count of manual assignments (each must name exactly this node)."""
    if topic.num_partitions != -1 or topic.replication_factor != -1:
        raise AdminError(
            ErrorCode.INVALID_REQUEST,
            "Both numPartitions or replicationFactor and replicasAssignments were set. "
            "Both cannot be used at the same time.",
        )
    indexes = sorted(a.partition_index for a in topic.assignments)
    if indexes != list(range(len(indexes))):
        raise AdminError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Partitions should be numbered consecutively from 0, got {indexes}.",
        )
    for assignment in topic.assignments:
        if assignment.broker_ids != [state.node_id]:
            raise AdminError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Partition {assignment.partition_index}: replicas {assignment.broker_ids} "
                f"are not [{state.node_id}]; this is a single node (id {state.node_id}).",
            )
    return len(indexes)


# What one partition costs in open descriptors (its active segment's .log, .index and
# .timeindex), and the descriptors kept free for client connections and everything else.
DESCRIPTORS_PER_PARTITION = 3
RESERVED_DESCRIPTORS = 1024


def check_partition_budget(state: BrokerState, added: int) -> None:
    """Refuse partitions this process could not keep open (POLICY_VIOLATION).

    Decision: Kafka has no such check and fails later, in every request, with "Too many open
    files"; seglog refuses the creation instead, naming the limit, so a hostile or mistaken
    CreateTopics/CreatePartitions cannot take the server's descriptors (and its clients) away.
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return
    total = len(state.manager.logs()) + added
    needed = total * DESCRIPTORS_PER_PARTITION + RESERVED_DESCRIPTORS
    if needed > soft:
        raise AdminError(
            ErrorCode.POLICY_VIOLATION,
            f"{total} partitions on this node would need about {needed} open files, above "
            f"this process's limit of {soft} (raise `ulimit -n` and restart seglog serve).",
        )


def _partition_count(state: BrokerState, topic: CreateTopicsRequestCreatableTopic) -> int:
    if topic.assignments:
        return _check_assignments(state, topic)
    count = topic.num_partitions
    if count == -1:
        count = state.manager.broker.num_partitions
    if count <= 0:
        raise AdminError(
            ErrorCode.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        )
    if count > MAX_PARTITIONS_PER_TOPIC:
        raise AdminError(
            ErrorCode.INVALID_PARTITIONS,
            f"Number of partitions {count} is above seglog's limit {MAX_PARTITIONS_PER_TOPIC}.",
        )
    check_partition_budget(state, count)
    factor = topic.replication_factor
    if factor == 0 or factor < -1:
        raise AdminError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    if factor > 1:
        raise AdminError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {factor} time(s): The target replication "
            f"factor of {factor} cannot be reached because only 1 broker(s) are registered.",
        )
    return count


def _configs(topic: CreateTopicsRequestCreatableTopic) -> dict[str, str]:
    configs: dict[str, str] = {}
    for entry in topic.configs:
        if entry.value is None:
            raise AdminError(
                ErrorCode.INVALID_CONFIG,
                f"Null value not supported for topic configs: {entry.name}",
            )
        configs[entry.name] = entry.value
    return configs


def _create_one(
    state: BrokerState, topic: CreateTopicsRequestCreatableTopic, validate_only: bool
) -> CreateTopicsResponseCreatableTopicResult:
    manager, name = state.manager, topic.name
    existing = manager.topic_names()
    try:
        if name in existing:
            raise AdminError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        check_new_topic_name(name, existing)
        count = _partition_count(state, topic)
        configs = _configs(topic)
        resolved = manager.resolve_topic(name, configs)  # validates the configs
        if not validate_only:
            manager.create_topic(name, count, configs)
            resolved = manager.resolve_topic(name)
    except AdminError as error:
        return _create_error(name, error.code, error.message)
    except TopicExistsError as error:
        return _create_error(name, ErrorCode.TOPIC_ALREADY_EXISTS, str(error))
    except InvalidTopicError as error:
        return _create_error(name, ErrorCode.INVALID_TOPIC_EXCEPTION, str(error))
    except InvalidConfigError as error:
        return _create_error(name, ErrorCode.INVALID_CONFIG, str(error))
    except SeglogError as error:
        LOG.warning("CreateTopics %r failed: %s", name, error)
        return _create_error(name, ErrorCode.UNKNOWN_SERVER_ERROR, str(error))
    configs_out = [
        CreateTopicsResponseCreatableTopicConfigs(
            name=entry.name,
            value=entry.value,
            read_only=entry.read_only,
            config_source=entry.source,
            is_sensitive=False,
        )
        for entry in topic_entries(state, resolved)
    ]
    return CreateTopicsResponseCreatableTopicResult(
        name=name,
        topic_id=topic_uuid(resolved.topic_id),
        error_code=0,
        error_message=None,
        num_partitions=count,
        replication_factor=1,
        configs=configs_out,
    )


def _create_error(
    name: str, code: ErrorCode, message: str
) -> CreateTopicsResponseCreatableTopicResult:
    return CreateTopicsResponseCreatableTopicResult(
        name=name, error_code=int(code), error_message=message, configs=None
    )


async def create_topics(
    state: BrokerState, context: RequestContext, request: CreateTopicsRequest
) -> CreateTopicsResponse:
    counts = Counter(topic.name for topic in request.topics)
    results = []
    reported: set[str] = set()
    names = list(counts)
    if state.authorize(context, Operation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME):
        creatable = set(names)
    else:
        creatable = state.authorized_names(context, Operation.CREATE, ResourceType.TOPIC, names)
    describable = state.authorized_names(
        context, Operation.DESCRIBE_CONFIGS, ResourceType.TOPIC, names
    )
    for topic in request.topics:
        if counts[topic.name] > 1:
            if topic.name not in reported:
                reported.add(topic.name)
                results.append(
                    _create_error(
                        topic.name,
                        ErrorCode.INVALID_REQUEST,
                        f"Create topics request from client `{context.client_id}` contains "
                        f"multiple entries for the following topics: {topic.name}",
                    )
                )
            continue
        if topic.name not in creatable:
            refused = _create_error(
                topic.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."
            )
            results.append(refused)
        else:
            results.append(_create_one(state, topic, request.validate_only))
        if topic.name not in describable:
            results[-1].topic_config_error_code = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            results[-1].configs = None if results[-1].error_code else []
    return CreateTopicsResponse(topics=results)


# --- DeleteTopics -----------------------------------------------------------------------------


def _name_of_id(state: BrokerState, topic_id: UUID) -> str | None:
    manager = state.manager
    for name in manager.topic_names():  # a topic without an id (ZERO_UUID) never matches
        if topic_id != ZERO_UUID and topic_uuid(manager.resolve_topic(name).topic_id) == topic_id:
            return name
    return None


def _delete_one(state: BrokerState, name: str) -> None:
    """Delete one topic by name or raise :class:`AdminError`."""
    if not state.config.delete_topic_enable:
        raise AdminError(
            ErrorCode.TOPIC_DELETION_DISABLED,
            "Topic deletion is disabled (delete.topic.enable=false).",
        )
    if name in INTERNAL_TOPICS:
        raise AdminError(
            ErrorCode.INVALID_REQUEST,
            f"{name} is an internal topic (consumer groups' or transactions' state); it "
            "cannot be deleted through the Kafka protocol.",
        )
    if name not in state.manager.topic_names():
        raise AdminError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            "This server does not host this topic-partition.",
        )
    partitions = state.manager.partitions_of(name)
    try:
        state.manager.delete_topic(name)
    except UnknownTopicError as error:
        raise AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, str(error)) from error
    except InvalidTopicError as error:
        raise AdminError(ErrorCode.INVALID_REQUEST, str(error)) from error
    except SeglogError as error:
        LOG.warning("DeleteTopics %r failed: %s", name, error)
        raise AdminError(ErrorCode.UNKNOWN_SERVER_ERROR, str(error)) from error
    for partition in partitions:  # Fetch long polls on the topic answer now, not at timeout
        state.appends.notify(TopicPartition(name, partition))
    for callback in list(state.on_topic_deleted):
        try:
            callback(name)
        except Exception:
            LOG.exception("a topic-deleted callback failed for %r", name)


def _delete_result(
    state: BrokerState, name: str | None, topic_id: UUID
) -> DeleteTopicsResponseDeletableTopicResult:
    """Delete one topic named by name or id; the result with its error, if any."""
    result = DeleteTopicsResponseDeletableTopicResult(name=name, topic_id=topic_id)
    try:
        if name is not None and topic_id != ZERO_UUID:
            raise AdminError(ErrorCode.INVALID_REQUEST, "Give a topic's name or its id, not both.")
        if name is None and topic_id == ZERO_UUID:
            raise AdminError(ErrorCode.INVALID_REQUEST, "Give a topic's name or its id.")
        if name is None:
            found = _name_of_id(state, topic_id)
            if found is None:
                raise AdminError(ErrorCode.UNKNOWN_TOPIC_ID, f"No topic has id {topic_id}.")
            result.name = found
        elif name in state.manager.topic_names():
            result.topic_id = topic_uuid(state.manager.resolve_topic(name).topic_id)
        _delete_one(state, result.name or "")
    except AdminError as error:
        result.error_code = int(error.code)
        result.error_message = error.message
    return result


async def delete_topics(
    state: BrokerState, context: RequestContext, request: DeleteTopicsRequest
) -> DeleteTopicsResponse:
    wanted: list[tuple[str | None, UUID]] = [(name, ZERO_UUID) for name in request.topic_names]
    if context.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    results = []
    for name, topic_id in wanted:
        refusal = None
        if state.config.delete_topic_enable:  # else TOPIC_DELETION_DISABLED first, as Kafka
            refusal = _delete_refusal(state, context, name, topic_id)
        results.append(refusal or _delete_result(state, name, topic_id))
    return DeleteTopicsResponse(responses=results)


def _delete_refusal(
    state: BrokerState, context: RequestContext, name: str | None, topic_id: UUID
) -> DeleteTopicsResponseDeletableTopicResult | None:
    """Kafka's authorization of one deletion: by id, a topic the principal may not DESCRIBE is
    UNKNOWN_TOPIC_ID (its existence is not disclosed); then DELETE on the topic is needed."""
    if name is None and topic_id != ZERO_UUID:
        found = _name_of_id(state, topic_id)
        if found is None:
            return None  # UNKNOWN_TOPIC_ID from the deletion itself
        if not state.authorize(context, Operation.DESCRIBE, ResourceType.TOPIC, found):
            return DeleteTopicsResponseDeletableTopicResult(
                name=None,
                topic_id=topic_id,
                error_code=int(ErrorCode.UNKNOWN_TOPIC_ID),
                error_message=f"No topic has id {topic_id}.",
            )
        name = found
    if name is None or state.authorize(context, Operation.DELETE, ResourceType.TOPIC, name):
        return None
    return DeleteTopicsResponseDeletableTopicResult(
        name=name,
        topic_id=topic_id,
        error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        error_message="Authorization failed.",
    )


# --- CreatePartitions -------------------------------------------------------------------------


def _increase_one(
    state: BrokerState, topic: CreatePartitionsRequestCreatePartitionsTopic, validate_only: bool
) -> None:
    manager, name = state.manager, topic.name
    if name not in manager.topic_names():
        raise AdminError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
        )
    current = len(manager.partitions_of(name))
    if topic.assignments is not None and topic.assignments:
        if len(topic.assignments) != topic.count - current:
            raise AdminError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Increasing the number of partitions by {topic.count - current} but "
                f"{len(topic.assignments)} assignments provided.",
            )
        for assignment in topic.assignments:
            if assignment.broker_ids != [state.node_id]:
                raise AdminError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Replicas {assignment.broker_ids} are not [{state.node_id}]; this is a "
                    f"single node (id {state.node_id}).",
                )
    if topic.count <= current:
        raise AdminError(
            ErrorCode.INVALID_PARTITIONS,
            f"Topic currently has {current} partitions, which is higher than the requested "
            f"{topic.count}."
            if topic.count < current
            else f"Topic already has {current} partitions.",
        )
    check_partition_budget(state, topic.count - current)
    if validate_only:
        if topic.count > MAX_PARTITIONS_PER_TOPIC:
            raise AdminError(
                ErrorCode.INVALID_PARTITIONS,
                f"Number of partitions {topic.count} is above {MAX_PARTITIONS_PER_TOPIC}.",
            )
        return
    try:
        manager.increase_partitions(name, topic.count)
    except InvalidPartitionsError as error:
        raise AdminError(ErrorCode.INVALID_PARTITIONS, str(error)) from error
    except (UnknownTopicError, InvalidTopicError) as error:
        raise AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, str(error)) from error
    except SeglogError as error:
        LOG.warning("CreatePartitions %r failed: %s", name, error)
        raise AdminError(ErrorCode.UNKNOWN_SERVER_ERROR, str(error)) from error


async def create_partitions(
    state: BrokerState, context: RequestContext, request: CreatePartitionsRequest
) -> CreatePartitionsResponse:
    counts = Counter(topic.name for topic in request.topics)
    alterable = state.authorized_names(context, Operation.ALTER, ResourceType.TOPIC, counts)
    results = []
    for topic in request.topics:
        result = CreatePartitionsResponseCreatePartitionsTopicResult(name=topic.name)
        try:
            if counts[topic.name] > 1:
                raise AdminError(ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")
            if topic.name not in alterable:
                raise AdminError(
                    ErrorCode.TOPIC_AUTHORIZATION_FAILED, "The topic authorization is failed."
                )
            _increase_one(state, topic, request.validate_only)
        except AdminError as error:
            result.error_code = int(error.code)
            result.error_message = error.message
        results.append(result)
    return CreatePartitionsResponse(results=results)


HANDLERS = [
    ApiHandler(CREATE_TOPICS, 2, 7, create_topics),
    ApiHandler(DELETE_TOPICS, 1, 6, delete_topics),
    ApiHandler(CREATE_PARTITIONS, 0, 3, create_partitions),
]
