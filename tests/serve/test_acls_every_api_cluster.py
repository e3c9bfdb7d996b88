"""Every served API's authorization on the cluster resource, as one table.

There is one cluster, so a row variant's cluster ACL cannot be kept from the other rows of the
same server: the variants are grouped by the cluster operations they grant, and each group gets
a ``seglog serve`` of its own (started when first needed, shared by the module), holding that
one cluster ACL and the topic, group and transactional-id ACLs of its variants (each with its
own names, see :mod:`acl_matrix`). The "missing" variants share the server without any cluster
ACL. InitProducerId without a transactional id is allowed by WRITE on any topic, so the row
proving it has a server of its own. The operations and codes are those of Kafka's ``KafkaApis``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from acl_matrix import (
    ANONYMOUS,
    HIDDEN,
    LISTED,
    Need,
    Row,
    cases,
    commit_offset,
    epoch_request,
    fetch_request,
    first_partition_code,
    prepare_directory,
    run_case,
    start_server,
    topic_dir_exists,
)
from serve_harness import ServeProcess

from seglog.protocol import messages as m

TOPIC, CLUSTER = 29, 31
ANY = 1  # the ANY of resource types, pattern types, operations and permissions in ACL filters


def _ops(response: Any, _: Any) -> object:
    """DescribeCluster: the DESCRIBE bit of the cluster's authorized operations."""
    operations = response.cluster_authorized_operations
    return LISTED if operations & (1 << 8) else (HIDDEN if operations == 0 else operations)


def _marker(names: Any, _: Any) -> Any:
    marker = m.WriteTxnMarkersRequestWritableTxnMarker(
        producer_id=4242,
        producer_epoch=0,
        transaction_result=True,
        topics=[m.WriteTxnMarkersRequestWritableTxnMarkerTopic(names.topic, [0])],
        coordinator_epoch=0,
    )
    return m.WriteTxnMarkersRequest(markers=[marker])


def _broker_configs(api_key: int) -> Any:
    if api_key == 32:
        return m.DescribeConfigsRequest(
            resources=[m.DescribeConfigsRequestDescribeConfigsResource(4, "", None)]
        )
    if api_key == 33:
        return m.AlterConfigsRequest(
            resources=[
                m.AlterConfigsRequestAlterConfigsResource(
                    4, "", [m.AlterConfigsRequestAlterableConfig("log.cleaner.threads", "1")]
                )
            ],
            validate_only=True,
        )
    return m.IncrementalAlterConfigsRequest(
        resources=[
            m.IncrementalAlterConfigsRequestAlterConfigsResource(
                4,
                "",
                [m.IncrementalAlterConfigsRequestAlterableConfig("log.cleaner.threads", 0, "1")],
            )
        ],
        validate_only=True,
    )


def _new_topic(names: Any, _: Any) -> Any:
    return m.CreateTopicsRequest(
        topics=[
            m.CreateTopicsRequestCreatableTopic(
                name=names.topic, num_partitions=1, replication_factor=-1
            )
        ],
        timeout_ms=10_000,
    )


ROWS = [
    Row(
        "fetch-follower",
        1,
        12,
        (Need("cluster", "ClusterAction", TOPIC),),
        lambda n, _: fetch_request(n.topic, replica_id=1),
        lambda r, _: r.responses[0].partitions[0].error_code,
    ),
    Row(
        "epoch-replica",
        23,
        4,
        (Need("cluster", "ClusterAction", TOPIC),),
        lambda n, _: epoch_request(n.topic, replica_id=1),
        lambda r, _: first_partition_code(r.topics),
        allowed=0,
    ),
    Row(
        "metadata-create-cluster",
        3,
        12,
        (Need("cluster", "Create", TOPIC),),
        lambda n, _: m.MetadataRequest(
            topics=[m.MetadataRequestMetadataRequestTopic(name=n.topic)],
            allow_auto_topic_creation=True,
        ),
        lambda r, _: r.topics[0].error_code,
        topics=(),
        setup=(("topic", "Describe"),),
        check_ok=topic_dir_exists,
    ),
    Row(
        "create-topics-cluster",
        19,
        7,
        (Need("cluster", "Create", TOPIC),),
        _new_topic,
        lambda r, _: r.topics[0].error_code,
        allowed=0,
        topics=(),
        check_ok=topic_dir_exists,
    ),
    Row(
        "idempotent-producer",
        22,
        4,
        (Need("cluster", "IdempotentWrite", CLUSTER),),
        lambda n, _: m.InitProducerIdRequest(transactional_id=None),
        lambda r, _: r.error_code,
        allowed=0,
        topics=(),
    ),
    Row(
        "idempotent-producer-topic-write",
        22,
        4,
        (Need("topic", "Write", CLUSTER),),
        lambda n, _: m.InitProducerIdRequest(transactional_id=None),
        lambda r, _: r.error_code,
        allowed=0,
        isolated=True,
    ),
    Row(
        "write-txn-markers",
        27,
        1,
        (Need("cluster", "ClusterAction", CLUSTER),),
        _marker,
        lambda r, _: r.markers[0].topics[0].partitions[0].error_code,
    ),
    Row(
        "write-txn-markers-alter",
        27,
        1,
        (Need("cluster", "Alter", CLUSTER),),
        _marker,
        lambda r, _: r.markers[0].topics[0].partitions[0].error_code,
    ),
    Row(
        "describe-acls",
        29,
        3,
        (Need("cluster", "Describe", CLUSTER),),
        lambda n, _: m.DescribeAclsRequest(ANY, None, ANY, None, None, ANY, ANY),
        lambda r, _: r.error_code,
        allowed=0,
        topics=(),
    ),
    Row(
        "create-acls",
        30,
        3,
        (Need("cluster", "Alter", CLUSTER),),
        lambda n, _: m.CreateAclsRequest(
            creations=[m.CreateAclsRequestAclCreation(2, n.topic, 3, ANONYMOUS, "*", 3, 3)]
        ),
        lambda r, _: r.results[0].error_code,
        allowed=0,
        topics=(),
    ),
    Row(
        "delete-acls",
        31,
        3,
        (Need("cluster", "Alter", CLUSTER),),
        lambda n, _: m.DeleteAclsRequest(
            filters=[m.DeleteAclsRequestDeleteAclsFilter(2, n.topic, 3, None, None, ANY, ANY)]
        ),
        lambda r, _: r.filter_results[0].error_code,
        allowed=0,
        topics=(),
    ),
    Row(
        "describe-configs-broker",
        32,
        4,
        (Need("cluster", "DescribeConfigs", CLUSTER),),
        lambda n, _: _broker_configs(32),
        lambda r, _: r.results[0].error_code,
        allowed=0,
        topics=(),
    ),
    Row(
        "alter-configs-broker",
        33,
        2,
        (Need("cluster", "AlterConfigs", CLUSTER),),
        lambda n, _: _broker_configs(33),
        lambda r, _: r.responses[0].error_code,
        topics=(),
    ),
    Row(
        "incremental-alter-configs-broker",
        44,
        1,
        (Need("cluster", "AlterConfigs", CLUSTER),),
        lambda n, _: _broker_configs(44),
        lambda r, _: r.responses[0].error_code,
        topics=(),
    ),
    Row(
        "describe-log-dirs",
        35,
        4,
        (Need("cluster", "Describe", CLUSTER),),
        lambda n, _: m.DescribeLogDirsRequest(topics=None),
        lambda r, _: r.error_code,
        allowed=0,
        topics=(),
    ),
    Row(
        "describe-cluster",
        60,
        1,
        (Need("cluster", "Describe", HIDDEN),),
        lambda n, _: m.DescribeClusterRequest(include_cluster_authorized_operations=True),
        _ops,
        allowed=LISTED,
        topics=(),
    ),
    # With DESCRIBE on the cluster ListGroups lists every group, even one whose DESCRIBE is
    # denied; without it, only the groups the principal may DESCRIBE.
    Row(
        "list-groups-cluster",
        16,
        4,
        (Need("cluster", "Describe", HIDDEN),),
        lambda n, _: m.ListGroupsRequest(),
        lambda r, n: LISTED if n.group in {g.group_id for g in r.groups} else HIDDEN,
        allowed=LISTED,
        setup=(("group", "Read"), ("group", "!Describe"), ("topic", "Read")),
        prepare=lambda w, n: commit_offset(w, n.group, n.topic),
    ),
]


def _key(row: Row, variant: str) -> str:
    """Which server a variant runs on: its cluster operations (or its own, if isolated)."""
    if row.isolated and variant == "ok":
        return f"{row.id}-{variant}"
    cluster = sorted(op for _, kind, _, op in row.grants(variant) if kind == "cluster")
    return "+".join(cluster) or "no-cluster-acl"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ServeProcess]]:
    """A server per :func:`_key`, started on first use, stopped at the module's end."""
    root = tmp_path_factory.mktemp("acl-matrix-cluster")
    started: dict[str, ServeProcess] = {}

    class Servers(dict[str, ServeProcess]):
        def __missing__(self, key: str) -> ServeProcess:
            group = [(r, v) for r, v in cases(ROWS) if _key(r, v) == key]
            data_dir = root / key / "data"
            topics = [r.names(v).of(kind) for r, v in group for kind in r.topics]
            prepare_directory(data_dir, topics, [g for r, v in group for g in r.grants(v)])
            started[key] = self[key] = start_server(data_dir)
            return started[key]

    try:
        yield Servers()
        for process in started.values():
            process.stop()
    finally:
        for process in started.values():
            process.kill()


@pytest.mark.parametrize(
    ("row", "variant"), cases(ROWS), ids=[f"{r.id}-{v}" for r, v in cases(ROWS)]
)
def test_cluster_authorization(servers: dict[str, ServeProcess], row: Row, variant: str) -> None:
    run_case(servers[_key(row, variant)], row, variant)
