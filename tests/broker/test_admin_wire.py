"""Admin requests the real clients cannot express, sent raw to a real ``seglog serve`` process.

Manual replica assignments, duplicate names, deletion by topic id, bad operations, unknown
resource types, the version edges of each range. confluent-kafka's and kafka-python's tests
are the oracles for the common paths; these pin the error codes of the rest.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest
from serve_process import ServeProcess, serve
from wire_client import WireClient

from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    AlterConfigsRequest,
    AlterConfigsRequestAlterableConfig,
    AlterConfigsRequestAlterConfigsResource,
    AlterConfigsResponse,
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreatePartitionsRequest,
    CreatePartitionsRequestCreatePartitionsAssignment,
    CreatePartitionsRequestCreatePartitionsTopic,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsRequestCreatableReplicaAssignment,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsRequestCreatableTopicConfig,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsRequestDeleteTopicState,
    DeleteTopicsResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeConfigsRequest,
    DescribeConfigsRequestDescribeConfigsResource,
    DescribeConfigsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsRequestDescribableLogDirTopic,
    DescribeLogDirsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsResponse,
)
from seglog.protocol.schema import ZERO_UUID

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with serve(tmp_path_factory.mktemp("admin-wire")) as running:
        yield running


@pytest.fixture
def wire(server: ServeProcess) -> Iterator[WireClient]:
    with WireClient(server.bootstrap) as client:
        yield client


def _topic(
    name: str, partitions: int = 1, replication_factor: int = 1, **kwargs: Any
) -> CreateTopicsRequestCreatableTopic:
    return CreateTopicsRequestCreatableTopic(
        name=name, num_partitions=partitions, replication_factor=replication_factor, **kwargs
    )


def _create(
    wire: WireClient,
    version: int,
    *topics: CreateTopicsRequestCreatableTopic,
    validate_only: bool = False,
) -> dict[str, tuple[int, str | None]]:
    response = wire.call(
        CreateTopicsRequest(topics=list(topics), validate_only=validate_only),
        version,
        CreateTopicsResponse,
    )
    return {t.name: (t.error_code, t.error_message) for t in response.topics}


def _describe(
    wire: WireClient,
    version: int,
    *resources: tuple[int, str, list[str] | None],
    synonyms: bool = False,
    docs: bool = False,
) -> DescribeConfigsResponse:
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequestDescribeConfigsResource(
                resource_type=kind, resource_name=name, configuration_keys=keys
            )
            for kind, name, keys in resources
        ],
        include_synonyms=synonyms,
        include_documentation=docs,
    )
    return wire.call(request, version, DescribeConfigsResponse)


def test_api_versions_advertise_the_admin_ranges(wire: WireClient) -> None:
    response = wire.call(ApiVersionsRequest(), 0, ApiVersionsResponse)
    ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert ranges[19] == (2, 7)  # CreateTopics
    assert ranges[20] == (1, 6)  # DeleteTopics
    assert ranges[32] == (1, 4)  # DescribeConfigs
    assert ranges[35] == (1, 4)  # DescribeLogDirs
    assert ranges[37] == (0, 3)  # CreatePartitions
    assert ranges[44] == (0, 1)  # IncrementalAlterConfigs
    assert ranges[60] == (0, 1)  # DescribeCluster
    assert ranges[33] == (0, 2)  # legacy AlterConfigs (aiokafka's only way to alter)


def test_create_topics_checks(wire: WireClient) -> None:
    assigned = CreateTopicsRequestCreatableTopic(
        name="assigned",
        num_partitions=-1,
        replication_factor=-1,
        assignments=[
            CreateTopicsRequestCreatableReplicaAssignment(partition_index=p, broker_ids=[1])
            for p in (1, 0)
        ],
    )
    foreign = CreateTopicsRequestCreatableTopic(
        name="foreign",
        num_partitions=-1,
        replication_factor=-1,
        assignments=[CreateTopicsRequestCreatableReplicaAssignment(0, [2])],
    )
    both = CreateTopicsRequestCreatableTopic(
        name="both",
        num_partitions=2,
        replication_factor=1,
        assignments=[CreateTopicsRequestCreatableReplicaAssignment(0, [1])],
    )
    results = _create(
        wire,
        2,
        assigned,
        foreign,
        both,
        _topic("twice"),
        _topic("twice"),
        _topic("rf0", replication_factor=0),
        _topic(
            "nullconfig", configs=[CreateTopicsRequestCreatableTopicConfig("retention.ms", None)]
        ),
        _topic("a" * 250),
    )
    assert results["assigned"] == (0, None)
    assert results["foreign"][0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert results["both"][0] == ErrorCode.INVALID_REQUEST
    assert results["twice"][0] == ErrorCode.INVALID_REQUEST
    assert results["rf0"][0] == ErrorCode.INVALID_REPLICATION_FACTOR
    assert results["nullconfig"][0] == ErrorCode.INVALID_CONFIG
    assert results["a" * 250][0] == ErrorCode.INVALID_TOPIC_EXCEPTION
    again = _create(wire, 7, _topic("assigned"), _topic("assigned_"))
    assert again["assigned"][0] == ErrorCode.TOPIC_ALREADY_EXISTS
    assert again["assigned_"] == (0, None)  # '_' and '.' collide, '_' alone does not
    collide = _create(wire, 7, _topic("assigned."))
    assert collide["assigned."][0] == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_create_topics_validate_only_v5_returns_configs(wire: WireClient) -> None:
    response = wire.call(
        CreateTopicsRequest(
            topics=[
                _topic(
                    "probe",
                    4,
                    configs=[CreateTopicsRequestCreatableTopicConfig("cleanup.policy", "compact")],
                )
            ],
            validate_only=True,
        ),
        5,
        CreateTopicsResponse,
    )
    [result] = response.topics
    assert (result.error_code, result.num_partitions, result.replication_factor) == (0, 4, 1)
    assert result.configs is not None
    configs = {c.name: (c.value, c.config_source) for c in result.configs}
    assert configs["cleanup.policy"] == ("compact", 1)
    assert configs["segment.bytes"] == (str(1 << 30), 5)
    described = _describe(wire, 4, (TOPIC, "probe", None))
    assert described.results[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_delete_topics_by_id_v6(wire: WireClient) -> None:
    response = wire.call(CreateTopicsRequest(topics=[_topic("byid")]), 7, CreateTopicsResponse)
    topic_id = response.topics[0].topic_id
    assert topic_id != ZERO_UUID
    wire.call(CreateTopicsRequest(topics=[_topic("byboth")]), 7, CreateTopicsResponse)
    unknown = UUID(int=12345)
    deleted = wire.call(
        DeleteTopicsRequest(
            topics=[
                DeleteTopicsRequestDeleteTopicState(name=None, topic_id=topic_id),
                DeleteTopicsRequestDeleteTopicState(name=None, topic_id=unknown),
                DeleteTopicsRequestDeleteTopicState(name="byboth", topic_id=unknown),
                DeleteTopicsRequestDeleteTopicState(name=None, topic_id=ZERO_UUID),
            ]
        ),
        6,
        DeleteTopicsResponse,
    )
    outcome = [(r.name, r.topic_id, r.error_code) for r in deleted.responses]
    assert outcome == [
        ("byid", topic_id, 0),
        (None, unknown, ErrorCode.UNKNOWN_TOPIC_ID),
        ("byboth", unknown, ErrorCode.INVALID_REQUEST),
        (None, ZERO_UUID, ErrorCode.INVALID_REQUEST),
    ]
    by_name = wire.call(
        DeleteTopicsRequest(topic_names=["byboth", "byid"]), 1, DeleteTopicsResponse
    )
    assert [(r.name, r.error_code) for r in by_name.responses] == [
        ("byboth", 0),
        ("byid", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]


def test_create_partitions_validate_only_and_assignments(wire: WireClient) -> None:
    wire.call(CreateTopicsRequest(topics=[_topic("parts", 1)]), 7, CreateTopicsResponse)

    def grow(count: int, assignments: list[list[int]] | None, validate_only: bool) -> int:
        request = CreatePartitionsRequest(
            topics=[
                CreatePartitionsRequestCreatePartitionsTopic(
                    name="parts",
                    count=count,
                    assignments=None
                    if assignments is None
                    else [
                        CreatePartitionsRequestCreatePartitionsAssignment(a) for a in assignments
                    ],
                )
            ],
            validate_only=validate_only,
        )
        [result] = wire.call(request, 3, CreatePartitionsResponse).results
        return result.error_code

    assert grow(3, None, validate_only=True) == 0
    assert grow(3, [[1]], validate_only=False) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert grow(3, [[1], [2]], validate_only=False) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert grow(3, [[1], [1]], validate_only=False) == 0
    assert grow(3, None, validate_only=False) == ErrorCode.INVALID_PARTITIONS
    logdirs = wire.call(
        DescribeLogDirsRequest(
            topics=[DescribeLogDirsRequestDescribableLogDirTopic("parts", [0, 2])]
        ),
        1,
        DescribeLogDirsResponse,
    )
    [root] = logdirs.results
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in root.topics] == [
        ("parts", [0, 2])
    ]


def test_describe_configs_filters_and_errors(wire: WireClient, server: ServeProcess) -> None:
    wire.call(CreateTopicsRequest(topics=[_topic("shown")]), 7, CreateTopicsResponse)
    response = _describe(
        wire,
        1,
        (TOPIC, "shown", ["retention.ms", "no.such.key"]),
        (BROKER, "7", None),
        (BROKER_LOGGER, "1", None),
        (TOPIC, "bad name!", None),
    )
    shown, other_broker, logger, bad = response.results
    assert [(c.name, c.synonyms) for c in shown.configs] == [("retention.ms", [])]
    assert other_broker.error_code == ErrorCode.INVALID_REQUEST
    assert logger.error_code == ErrorCode.INVALID_REQUEST
    assert bad.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    documented = _describe(wire, 4, (TOPIC, "shown", ["segment.bytes"]), docs=True)
    [entry] = documented.results[0].configs
    assert entry.config_type == 3  # INT
    assert entry.documentation and "segment" in entry.documentation
    default_broker = _describe(wire, 4, (BROKER, "", ["log.dirs"]))
    [log_dirs] = default_broker.results[0].configs
    assert (log_dirs.value, log_dirs.read_only) == (str(server.data_dir), True)


def test_incremental_alter_configs_bad_requests(wire: WireClient) -> None:
    wire.call(CreateTopicsRequest(topics=[_topic("guarded")]), 7, CreateTopicsResponse)

    def alter(*ops: tuple[str, int, str | None], validate_only: bool = False) -> int:
        request = IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequestAlterConfigsResource(
                    TOPIC,
                    "guarded",
                    [IncrementalAlterConfigsRequestAlterableConfig(*op) for op in ops],
                )
            ],
            validate_only=validate_only,
        )
        [result] = wire.call(request, 1, IncrementalAlterConfigsResponse).responses
        return result.error_code

    assert alter(("retention.ms", 0, "1"), ("retention.ms", 1, None)) == ErrorCode.INVALID_REQUEST
    assert alter(("retention.ms", 9, "1")) == ErrorCode.INVALID_REQUEST
    assert alter(("retention.ms", 0, None)) == ErrorCode.INVALID_REQUEST
    assert alter(("cleanup.policy", 2, "shred")) == ErrorCode.INVALID_CONFIG
    assert alter(("retention.ms", 0, "1"), validate_only=True) == 0
    [retention] = _describe(wire, 4, (TOPIC, "guarded", ["retention.ms"])).results[0].configs
    assert (retention.value, retention.config_source) == (str(7 * 24 * 3600 * 1000), 5)


def test_legacy_alter_configs_replaces_the_override_set(wire: WireClient) -> None:
    topic = _topic(
        "legacy",
        configs=[
            CreateTopicsRequestCreatableTopicConfig("retention.ms", "1000"),
            CreateTopicsRequestCreatableTopicConfig("segment.bytes", "4096"),
        ],
    )
    wire.call(CreateTopicsRequest(topics=[topic]), 7, CreateTopicsResponse)

    def alter(kind: int, name: str, *configs: tuple[str, str | None], dry: bool = False) -> int:
        request = AlterConfigsRequest(
            resources=[
                AlterConfigsRequestAlterConfigsResource(
                    kind, name, [AlterConfigsRequestAlterableConfig(k, v) for k, v in configs]
                )
            ],
            validate_only=dry,
        )
        [result] = wire.call(request, 2, AlterConfigsResponse).responses
        return result.error_code

    assert alter(TOPIC, "legacy", ("retention.ms", None)) == ErrorCode.INVALID_REQUEST
    assert alter(BROKER, "1", ("num.partitions", "4")) == ErrorCode.INVALID_REQUEST
    assert alter(TOPIC, "legacy", ("segment.bytes", "2048"), dry=True) == 0
    assert alter(TOPIC, "legacy", ("segment.bytes", "2048")) == 0
    described = _describe(wire, 4, (TOPIC, "legacy", ["retention.ms", "segment.bytes"]))
    values = {c.name: (c.value, c.config_source) for c in described.results[0].configs}
    assert values == {
        "retention.ms": (str(7 * 24 * 3600 * 1000), 5),
        "segment.bytes": ("2048", 1),
    }


def test_describe_cluster_endpoint_types(wire: WireClient, server: ServeProcess) -> None:
    brokers = wire.call(DescribeClusterRequest(endpoint_type=1), 1, DescribeClusterResponse)
    assert brokers.error_code == 0
    assert [(b.broker_id, f"{b.host}:{b.port}") for b in brokers.brokers] == [(1, server.bootstrap)]
    controllers = wire.call(DescribeClusterRequest(endpoint_type=2), 1, DescribeClusterResponse)
    assert controllers.error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
    v0 = wire.call(DescribeClusterRequest(), 0, DescribeClusterResponse)
    assert (v0.controller_id, v0.cluster_id) == (1, brokers.cluster_id)
