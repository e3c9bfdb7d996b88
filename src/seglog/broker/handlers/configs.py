"""DescribeConfigs (key 32, v1-4), IncrementalAlterConfigs (key 44, v0-1), AlterConfigs (33, v0-2).

**DescribeConfigs** answers TOPIC (2) and BROKER (4) resources with every config (see
:mod:`seglog.broker.handlers.config_entries`), or the ones named in ``configuration_keys``
(``null``: all; a name seglog does not know is left out, as Kafka does). Synonyms are sent when
``include_synonyms`` is set, documentation (v3+) when ``include_documentation`` is set, the
config type from v3. An unknown topic gets UNKNOWN_TOPIC_OR_PARTITION, an illegal name
INVALID_TOPIC_EXCEPTION; a broker resource must name this node's id (or ``""``, the cluster
default, answered with the same static values), else INVALID_REQUEST; other resource types
(broker loggers, groups, client metrics) get INVALID_REQUEST.

**IncrementalAlterConfigs** changes topic overrides with SET (0), DELETE (1: back to the
default), APPEND (2) and SUBTRACT (3). APPEND and SUBTRACT act on list configs only
(``cleanup.policy`` and the replication-throttle lists), starting from the topic's effective
value (decision: from the value the client sees in DescribeConfigs, which with seglog's
broker-level defaults is what a user means); APPEND adds the values not present, SUBTRACT
removes every occurrence. A key twice in one resource, a null SET value or an unknown operation
is INVALID_REQUEST; an unknown key or a bad value (checked by seglog's config rules on the whole
resulting set, as ``seglog topics alter`` checks it) is INVALID_CONFIG with the reason;
``validate_only`` checks and changes nothing. Each resource succeeds or fails as a whole.

BROKER resources are refused with INVALID_REQUEST: seglog has no dynamic broker configs
(``server.properties`` is read at start, as Kafka's static configs are), so the message tells
the user to edit the file and restart.

**AlterConfigs** (key 33, v0-2, the legacy form) is served because aiokafka's admin client has
no other way to alter configs (kafka-python and librdkafka send IncrementalAlterConfigs when it
is advertised). With Kafka's semantics: the configs given become the topic's **whole** set of
overrides, so every override not named reverts to its default (a client must read them back
first, as kafka-python does). Checks and errors are those of IncrementalAlterConfigs (a null
value or a key twice: INVALID_REQUEST; bad or unknown: INVALID_CONFIG; BROKER refused).

**Authorization** (Kafka's ``ConfigHelper``/``KafkaApis``), before anything else: describing
needs DESCRIBE_CONFIGS, altering ALTER_CONFIGS, on the cluster for BROKER (and broker-logger,
client-metrics) resources (else CLUSTER_AUTHORIZATION_FAILED), on the topic for TOPIC
(TOPIC_AUTHORIZATION_FAILED), on the group for GROUP (GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from collections import Counter

from seglog.broker.authorization import CLUSTER_NAME, Operation, ResourceType
from seglog.broker.handlers.config_entries import (
    ConfigEntry,
    broker_entries,
    topic_entries,
)
from seglog.broker.registry import ApiHandler
from seglog.broker.state import BrokerState, RequestContext
from seglog.config import TOPIC_CONFIG_KEYS, ConfigType
from seglog.errors import InvalidConfigError, InvalidTopicError, SeglogError, UnknownTopicError
from seglog.format.topic_names import validate_topic_name
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterConfigsResponseAlterConfigsResourceResponse,
    DescribeConfigsRequest,
    DescribeConfigsRequestDescribeConfigsResource,
    DescribeConfigsResponse,
    DescribeConfigsResponseDescribeConfigsResourceResult,
    DescribeConfigsResponseDescribeConfigsResult,
    DescribeConfigsResponseDescribeConfigsSynonym,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsResponse,
    IncrementalAlterConfigsResponseAlterConfigsResourceResponse,
)

DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44
TOPIC, BROKER = 2, 4
BROKER_LOGGER, CLIENT_METRICS, GROUP = 8, 16, 32
_CLUSTER_TYPES = (BROKER, BROKER_LOGGER, CLIENT_METRICS)


def config_refusal(
    state: BrokerState, context: RequestContext, operation: Operation, kind: int, name: str
) -> ErrorCode | None:
    """Kafka's authorization of a config resource: the cluster for broker, broker-logger and
    client-metrics resources, else the topic or the group; the error code when refused."""
    if kind in _CLUSTER_TYPES:
        if state.authorize(context, operation, ResourceType.CLUSTER, CLUSTER_NAME):
            return None
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    if kind == TOPIC:
        if state.authorize(context, operation, ResourceType.TOPIC, name):
            return None
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if kind == GROUP:
        if state.authorize(context, operation, ResourceType.GROUP, name):
            return None
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    return None  # refused later as a resource type not served


SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
# List-valued topic configs APPEND and SUBTRACT act on (the throttle lists are ignored ones).
LIST_KEYS = frozenset(
    {name for name, key in TOPIC_CONFIG_KEYS.items() if key.kind is ConfigType.LIST}
    | {"follower.replication.throttled.replicas", "leader.replication.throttled.replicas"}
)


class ResourceError(Exception):
    """A refusal of a whole resource: Kafka's error code and the message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _check_topic(state: BrokerState, name: str) -> None:
    try:
        validate_topic_name(name)
    except InvalidTopicError as error:
        raise ResourceError(ErrorCode.INVALID_TOPIC_EXCEPTION, str(error)) from error
    if name not in state.manager.topic_names():
        raise ResourceError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")


def _check_broker(state: BrokerState, name: str) -> None:
    if name not in ("", str(state.node_id)):
        raise ResourceError(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {state.node_id} or empty string, but received {name}",
        )


# --- DescribeConfigs --------------------------------------------------------------------------


def _entries(
    state: BrokerState, resource: DescribeConfigsRequestDescribeConfigsResource
) -> list[ConfigEntry]:
    name = resource.resource_name
    if resource.resource_type == TOPIC:
        _check_topic(state, name)
        try:
            return topic_entries(state, state.manager.resolve_topic(name))
        except SeglogError as error:
            raise ResourceError(ErrorCode.UNKNOWN_SERVER_ERROR, str(error)) from error
    if resource.resource_type == BROKER:
        _check_broker(state, name)
        return broker_entries(state)
    raise ResourceError(
        ErrorCode.INVALID_REQUEST,
        f"Resource type {resource.resource_type} is not served: seglog describes topics (2) "
        "and its broker (4)",
    )


def _describe_entry(
    entry: ConfigEntry, synonyms: bool, documentation: bool
) -> DescribeConfigsResponseDescribeConfigsResourceResult:
    return DescribeConfigsResponseDescribeConfigsResourceResult(
        name=entry.name,
        value=entry.value,
        read_only=entry.read_only,
        config_source=entry.source,
        is_default=entry.is_default,
        is_sensitive=False,
        synonyms=[
            DescribeConfigsResponseDescribeConfigsSynonym(name=n, value=v, source=s)
            for n, v, s in entry.synonyms
        ]
        if synonyms
        else [],
        config_type=entry.config_type,
        documentation=entry.documentation if documentation else None,
    )


async def describe_configs(
    state: BrokerState, context: RequestContext, request: DescribeConfigsRequest
) -> DescribeConfigsResponse:
    results = []
    for resource in request.resources:
        result = DescribeConfigsResponseDescribeConfigsResult(
            error_code=0,
            error_message=None,
            resource_type=resource.resource_type,
            resource_name=resource.resource_name,
        )
        refusal = config_refusal(
            state,
            context,
            Operation.DESCRIBE_CONFIGS,
            resource.resource_type,
            resource.resource_name,
        )
        try:
            if refusal is not None:
                raise ResourceError(refusal, "")
            entries = _entries(state, resource)
        except ResourceError as error:
            result.error_code = int(error.code)
            result.error_message = error.message
            results.append(result)
            continue
        keys = resource.configuration_keys
        if keys is not None:
            wanted = set(keys)
            entries = [entry for entry in entries if entry.name in wanted]
        result.configs = [
            _describe_entry(entry, request.include_synonyms, request.include_documentation)
            for entry in entries
        ]
        results.append(result)
    return DescribeConfigsResponse(results=results)


# --- IncrementalAlterConfigs ------------------------------------------------------------------


def _split_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _new_overrides(
    state: BrokerState, resource: IncrementalAlterConfigsRequestAlterConfigsResource
) -> tuple[dict[str, str], list[str]]:
    """The topic's overrides after the operations, and the keys removed."""
    name = resource.resource_name
    duplicates = sorted(k for k, n in Counter(c.name for c in resource.configs).items() if n > 1)
    if duplicates:
        raise ResourceError(
            ErrorCode.INVALID_REQUEST, f"Error due to duplicate config keys: {duplicates}"
        )
    description = state.manager.describe_topic(name)
    overrides = dict(description.overrides)
    effective = {entry.name: entry.value for entry in _topic_values(state, name)}
    removed: list[str] = []
    for config in resource.configs:
        key, op, value = config.name, config.config_operation, config.value
        if op == DELETE:
            overrides.pop(key, None)
            removed.append(key)
            continue
        if op not in (SET, APPEND, SUBTRACT):
            raise ResourceError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op}.")
        if value is None:
            raise ResourceError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {key}")
        if op == SET:
            overrides[key] = value
            continue
        if key not in LIST_KEYS:
            verb = "append" if op == APPEND else "subtract"
            raise ResourceError(
                ErrorCode.INVALID_CONFIG,
                f"Config value {verb} is not allowed for config key: {key}",
            )
        current = _split_list(overrides.get(key, effective.get(key) or ""))
        items = _split_list(value)
        if op == APPEND:
            current += [item for item in items if item not in current]
        else:
            current = [item for item in current if item not in items]
        overrides[key] = ",".join(current)
    return overrides, removed


def _topic_values(state: BrokerState, name: str) -> list[ConfigEntry]:
    return topic_entries(state, state.manager.resolve_topic(name))


def _replacement_overrides(
    state: BrokerState, name: str, configs: list[tuple[str, str | None]]
) -> tuple[dict[str, str], list[str]]:
    """AlterConfigs: the given configs as the topic's whole override set, and the keys
    dropped from the current one."""
    duplicates = sorted(k for k, n in Counter(key for key, _ in configs).items() if n > 1)
    if duplicates:
        raise ResourceError(
            ErrorCode.INVALID_REQUEST, f"Error due to duplicate config keys: {duplicates}"
        )
    overrides: dict[str, str] = {}
    for key, value in configs:
        if value is None:
            raise ResourceError(
                ErrorCode.INVALID_REQUEST, f"Null value not supported for topic configs: {key}"
            )
        overrides[key] = value
    current = state.manager.describe_topic(name).overrides
    return overrides, [key for key in current if key not in overrides]


def _alter_topic(
    state: BrokerState,
    resource: IncrementalAlterConfigsRequestAlterConfigsResource,
    validate_only: bool,
    *,
    replace: list[tuple[str, str | None]] | None = None,
) -> None:
    """Alter a topic's overrides: by the resource's operations, or (``replace``, legacy
    AlterConfigs) to exactly the configs given."""
    name = resource.resource_name
    _check_topic(state, name)
    manager = state.manager
    try:
        if replace is None:
            overrides, removed = _new_overrides(state, resource)
        else:
            overrides, removed = _replacement_overrides(state, name, replace)
        manager.resolve_topic(name, overrides)  # raises InvalidConfigError
        if not validate_only:
            manager.alter_topic(name, overrides, remove=removed)
    except InvalidConfigError as error:
        raise ResourceError(ErrorCode.INVALID_CONFIG, str(error)) from error
    except (UnknownTopicError, InvalidTopicError) as error:
        raise ResourceError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, str(error)) from error
    except SeglogError as error:
        raise ResourceError(ErrorCode.UNKNOWN_SERVER_ERROR, str(error)) from error


def _alter_resource(
    state: BrokerState,
    resource: IncrementalAlterConfigsRequestAlterConfigsResource,
    validate_only: bool,
    replace: list[tuple[str, str | None]] | None,
) -> tuple[int, str | None]:
    """Alter one resource: ``(error code, message)``, ``(0, None)`` when done."""
    try:
        if resource.resource_type == TOPIC:
            _alter_topic(state, resource, validate_only, replace=replace)
        elif resource.resource_type == BROKER:
            _check_broker(state, resource.resource_name)
            keys = ", ".join(c.name for c in resource.configs) or "(none)"
            raise ResourceError(
                ErrorCode.INVALID_REQUEST,
                f"Cannot update these configs dynamically: {keys}. seglog has no dynamic "
                "broker configs: set them in server.properties (--config) and restart "
                "seglog serve.",
            )
        else:
            raise ResourceError(
                ErrorCode.INVALID_REQUEST,
                f"Resource type {resource.resource_type} is not served: seglog alters "
                "topic configs (2) only",
            )
    except ResourceError as error:
        return int(error.code), error.message
    return 0, None


async def incremental_alter_configs(
    state: BrokerState, context: RequestContext, request: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    responses = []
    for resource in request.resources:
        refusal = config_refusal(
            state, context, Operation.ALTER_CONFIGS, resource.resource_type, resource.resource_name
        )
        if refusal is None:
            code, message = _alter_resource(state, resource, request.validate_only, None)
        else:
            code, message = int(refusal), None
        responses.append(
            IncrementalAlterConfigsResponseAlterConfigsResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
        )
    return IncrementalAlterConfigsResponse(responses=responses)


async def alter_configs(
    state: BrokerState, context: RequestContext, request: AlterConfigsRequest
) -> AlterConfigsResponse:
    responses = []
    for legacy in request.resources:
        configs = [(c.name, c.value) for c in legacy.configs]
        resource = IncrementalAlterConfigsRequestAlterConfigsResource(
            legacy.resource_type,
            legacy.resource_name,
            [IncrementalAlterConfigsRequestAlterableConfig(k, SET, v) for k, v in configs],
        )
        refusal = config_refusal(
            state, context, Operation.ALTER_CONFIGS, legacy.resource_type, legacy.resource_name
        )
        if refusal is None:
            code, message = _alter_resource(state, resource, request.validate_only, configs)
        else:
            code, message = int(refusal), None
        responses.append(
            AlterConfigsResponseAlterConfigsResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=legacy.resource_type,
                resource_name=legacy.resource_name,
            )
        )
    return AlterConfigsResponse(responses=responses)


HANDLERS = [
    ApiHandler(DESCRIBE_CONFIGS, 1, 4, describe_configs),
    ApiHandler(ALTER_CONFIGS, 0, 2, alter_configs),
    ApiHandler(INCREMENTAL_ALTER_CONFIGS, 0, 1, incremental_alter_configs),
]
