"""Every served API's authorization on topics and groups, as one table.

One ``seglog serve`` (PLAINTEXT, principal ``User:ANONYMOUS``, the authorizer on, no ACL on the
cluster) serves the whole module; each row variant has its own topic, group and transactional id
(see :mod:`acl_matrix`), so the rows cannot see each other's ACLs. Per row: the request with
every ACL it needs (and nothing more, apart from what its own setup needs) is not refused (its
success is checked where cheap); without any one of them the answer is Kafka's code (or Kafka's
filtering) and the data directory is unchanged. The operations and codes are those of Kafka's
``KafkaApis``. Transactional requests are in ``test_acls_every_api_txn.py``, cluster-level
checks in ``test_acls_every_api_cluster.py``; :func:`test_every_served_api_has_a_row` holds
the three tables to every API the server serves.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from acl_matrix import (
    HIDDEN,
    LISTED,
    Need,
    Row,
    cases,
    commit_offset,
    commit_request,
    epoch_request,
    fetch_request,
    first_partition_code,
    listed,
    partition_1_exists,
    records_written,
    run_case,
    serve_rows,
    set_config,
    topic_dir_exists,
)
from serve_harness import ServeProcess

from seglog.protocol import messages as m
from serve_wire import build_batch, produce_request

TOPIC, GROUP, TXN = 29, 30, 53


def _batch() -> bytes:
    return build_batch([b"k"], [b"v"], 1_700_000_000_000)


def _offset_fetch(group: str, topic: str | None) -> Any:
    topics = (
        None
        if topic is None
        else [m.OffsetFetchRequestOffsetFetchRequestTopics(name=topic, partition_indexes=[0])]
    )
    return m.OffsetFetchRequest(
        groups=[m.OffsetFetchRequestOffsetFetchRequestGroup(group_id=group, topics=topics)]
    )


def _offset_fetch_code(response: Any, names: Any) -> object:
    group = response.groups[0]
    return group.error_code or first_partition_code(group.topics)


ROWS = [
    Row(
        "produce",
        0,
        9,
        (Need("topic", "Write", TOPIC),),
        lambda n, _: produce_request(n.topic, 0, _batch()),
        lambda r, _: r.responses[0].partition_responses[0].error_code,
        allowed=0,
        check_ok=records_written,
    ),
    Row(
        "fetch",
        1,
        12,
        (Need("topic", "Read", TOPIC),),
        lambda n, _: fetch_request(n.topic),
        lambda r, _: r.responses[0].partitions[0].error_code,
        allowed=0,
    ),
    Row(
        "list-offsets",
        2,
        7,
        (Need("topic", "Describe", TOPIC),),
        lambda n, _: m.ListOffsetsRequest(
            replica_id=-1,
            topics=[
                m.ListOffsetsRequestListOffsetsTopic(
                    n.topic,
                    [m.ListOffsetsRequestListOffsetsPartition(partition_index=0, timestamp=-1)],
                )
            ],
        ),
        lambda r, _: first_partition_code(r.topics),
        allowed=0,
    ),
    Row(
        "metadata",
        3,
        12,
        (Need("topic", "Describe", TOPIC),),
        lambda n, _: m.MetadataRequest(
            topics=[m.MetadataRequestMetadataRequestTopic(name=n.topic)]
        ),
        lambda r, _: r.topics[0].error_code,
        allowed=0,
    ),
    Row(
        "metadata-all",
        3,
        12,
        (Need("topic", "Describe", HIDDEN),),
        lambda n, _: m.MetadataRequest(topics=None),
        lambda r, n: listed({t.name for t in r.topics}, n.topic),
        allowed=LISTED,
    ),
    Row(
        "metadata-create",
        3,
        12,
        (Need("topic", "Describe", TOPIC), Need("topic", "Create", TOPIC)),
        lambda n, _: m.MetadataRequest(
            topics=[m.MetadataRequestMetadataRequestTopic(name=n.topic)],
            allow_auto_topic_creation=True,
        ),
        lambda r, _: r.topics[0].error_code,
        topics=(),
        check_ok=topic_dir_exists,
    ),
    Row(
        "offset-commit",
        8,
        8,
        (Need("group", "Read", GROUP), Need("topic", "Read", TOPIC)),
        lambda n, _: commit_request(n.group, n.topic),
        lambda r, _: first_partition_code(r.topics),
        allowed=0,
    ),
    Row(
        "offset-fetch",
        9,
        8,
        (Need("group", "Describe", GROUP), Need("topic", "Describe", TOPIC)),
        lambda n, _: _offset_fetch(n.group, n.topic),
        _offset_fetch_code,
        allowed=0,
    ),
    Row(
        "offset-fetch-all",
        9,
        8,
        (Need("topic", "Describe", HIDDEN, deny=True),),
        lambda n, _: _offset_fetch(n.group, None),
        lambda r, n: listed({t.name for t in r.groups[0].topics}, n.topic),
        allowed=LISTED,
        setup=(("group", "Read"), ("topic", "Read")),
        prepare=lambda w, n: commit_offset(w, n.group, n.topic),
    ),
    # The single-group OffsetFetch (v1-7) and single-key FindCoordinator (v0-3) forms.
    Row(
        "offset-fetch-v7",
        9,
        7,
        (Need("group", "Describe", GROUP), Need("topic", "Describe", TOPIC)),
        lambda n, _: m.OffsetFetchRequest(
            group_id=n.group,
            topics=[
                m.OffsetFetchRequestOffsetFetchRequestTopic(name=n.topic, partition_indexes=[0])
            ],
        ),
        lambda r, _: r.error_code or first_partition_code(r.topics),
        allowed=0,
    ),
    Row(
        "find-coordinator-v3",
        10,
        3,
        (Need("group", "Describe", GROUP),),
        lambda n, _: m.FindCoordinatorRequest(key=n.group, key_type=0),
        lambda r, _: r.error_code,
        allowed=0,
        topics=(),
    ),
    Row(
        "find-coordinator",
        10,
        4,
        (Need("group", "Describe", GROUP),),
        lambda n, _: m.FindCoordinatorRequest(key_type=0, coordinator_keys=[n.group]),
        lambda r, _: r.coordinators[0].error_code,
        allowed=0,
        topics=(),
    ),
    Row(
        "join-group",
        11,
        5,
        (Need("group", "Read", GROUP),),
        lambda n, _: m.JoinGroupRequest(
            group_id=n.group,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            member_id="",
            protocol_type="consumer",
            protocols=[m.JoinGroupRequestJoinGroupRequestProtocol(name="range", metadata=b"")],
        ),
        lambda r, _: r.error_code,
        topics=(),
    ),
    Row(
        "heartbeat",
        12,
        4,
        (Need("group", "Read", GROUP),),
        lambda n, _: m.HeartbeatRequest(group_id=n.group, generation_id=1, member_id="m"),
        lambda r, _: r.error_code,
        topics=(),
    ),
    Row(
        "leave-group",
        13,
        5,
        (Need("group", "Read", GROUP),),
        lambda n, _: m.LeaveGroupRequest(
            group_id=n.group, members=[m.LeaveGroupRequestMemberIdentity(member_id="m")]
        ),
        lambda r, _: r.error_code,
        topics=(),
    ),
    Row(
        "sync-group",
        14,
        5,
        (Need("group", "Read", GROUP),),
        lambda n, _: m.SyncGroupRequest(
            group_id=n.group,
            generation_id=1,
            member_id="m",
            protocol_type="consumer",
            protocol_name="range",
            assignments=[],
        ),
        lambda r, _: r.error_code,
        topics=(),
    ),
    Row(
        "describe-groups",
        15,
        5,
        (Need("group", "Describe", GROUP),),
        lambda n, _: m.DescribeGroupsRequest(groups=[n.group]),
        lambda r, _: r.groups[0].error_code,
        allowed=0,
        topics=(),
    ),
    Row(
        "list-groups",
        16,
        4,
        (Need("group", "Describe", HIDDEN, deny=True),),
        lambda n, _: m.ListGroupsRequest(),
        lambda r, n: listed({g.group_id for g in r.groups}, n.group),
        allowed=LISTED,
        setup=(("group", "Read"), ("topic", "Read")),
        prepare=lambda w, n: commit_offset(w, n.group, n.topic),
    ),
    Row(
        "create-topics",
        19,
        7,
        (Need("topic", "Create", TOPIC),),
        lambda n, _: m.CreateTopicsRequest(
            topics=[
                m.CreateTopicsRequestCreatableTopic(
                    name=n.topic, num_partitions=1, replication_factor=-1
                )
            ],
            timeout_ms=10_000,
        ),
        lambda r, _: r.topics[0].error_code,
        allowed=0,
        topics=(),
        check_ok=topic_dir_exists,
    ),
    Row(
        "create-topics-configs",
        19,
        7,
        (Need("topic", "DescribeConfigs", TOPIC, changes_nothing=False),),
        lambda n, _: m.CreateTopicsRequest(
            topics=[
                m.CreateTopicsRequestCreatableTopic(
                    name=n.topic, num_partitions=1, replication_factor=-1
                )
            ],
            timeout_ms=10_000,
        ),
        lambda r, _: r.topics[0].topic_config_error_code,
        allowed=0,
        topics=(),
        setup=(("topic", "Create"),),
    ),
    Row(
        "delete-topics",
        20,
        6,
        (Need("topic", "Delete", TOPIC),),
        lambda n, _: m.DeleteTopicsRequest(
            topics=[m.DeleteTopicsRequestDeleteTopicState(name=n.topic)], timeout_ms=10_000
        ),
        lambda r, _: r.responses[0].error_code,
        allowed=0,
    ),
    Row(
        "delete-records",
        21,
        2,
        (Need("topic", "Delete", TOPIC),),
        lambda n, _: m.DeleteRecordsRequest(
            topics=[
                m.DeleteRecordsRequestDeleteRecordsTopic(
                    n.topic, [m.DeleteRecordsRequestDeleteRecordsPartition(0, 0)]
                )
            ],
            timeout_ms=10_000,
        ),
        lambda r, _: first_partition_code(r.topics),
        allowed=0,
    ),
    Row(
        "offset-for-leader-epoch",
        23,
        4,
        (Need("topic", "Describe", TOPIC),),
        lambda n, _: epoch_request(n.topic),
        lambda r, _: first_partition_code(r.topics),
        allowed=0,
    ),
    Row(
        "describe-configs",
        32,
        4,
        (Need("topic", "DescribeConfigs", TOPIC),),
        lambda n, _: m.DescribeConfigsRequest(
            resources=[m.DescribeConfigsRequestDescribeConfigsResource(2, n.topic, None)]
        ),
        lambda r, _: r.results[0].error_code,
        allowed=0,
    ),
    Row(
        "describe-configs-group",
        32,
        4,
        (Need("group", "DescribeConfigs", GROUP),),
        lambda n, _: m.DescribeConfigsRequest(
            resources=[m.DescribeConfigsRequestDescribeConfigsResource(32, n.group, None)]
        ),
        lambda r, _: r.results[0].error_code,
        topics=(),
    ),
    Row(
        "alter-configs",
        33,
        2,
        (Need("topic", "AlterConfigs", TOPIC),),
        lambda n, _: m.AlterConfigsRequest(
            resources=[
                m.AlterConfigsRequestAlterConfigsResource(
                    2, n.topic, [m.AlterConfigsRequestAlterableConfig("retention.ms", "123456")]
                )
            ]
        ),
        lambda r, _: r.responses[0].error_code,
        allowed=0,
    ),
    Row(
        "incremental-alter-configs",
        44,
        1,
        (Need("topic", "AlterConfigs", TOPIC),),
        lambda n, _: m.IncrementalAlterConfigsRequest(
            resources=[set_config(2, n.topic, "retention.ms", "123456")]
        ),
        lambda r, _: r.responses[0].error_code,
        allowed=0,
    ),
    Row(
        "incremental-alter-configs-group",
        44,
        1,
        (Need("group", "AlterConfigs", GROUP),),
        lambda n, _: m.IncrementalAlterConfigsRequest(
            resources=[set_config(32, n.group, "session.timeout.ms", "50000")]
        ),
        lambda r, _: r.responses[0].error_code,
        topics=(),
    ),
    Row(
        "create-partitions",
        37,
        3,
        (Need("topic", "Alter", TOPIC),),
        lambda n, _: m.CreatePartitionsRequest(
            topics=[m.CreatePartitionsRequestCreatePartitionsTopic(n.topic, 2, None)],
            timeout_ms=10_000,
        ),
        lambda r, _: r.results[0].error_code,
        allowed=0,
        check_ok=partition_1_exists,
    ),
    Row(
        "delete-groups",
        42,
        2,
        (Need("group", "Delete", GROUP),),
        lambda n, _: m.DeleteGroupsRequest(groups_names=[n.group]),
        lambda r, _: r.results[0].error_code,
        topics=(),
    ),
    Row(
        "offset-delete",
        47,
        0,
        (Need("group", "Delete", GROUP), Need("topic", "Read", TOPIC)),
        lambda n, _: m.OffsetDeleteRequest(
            group_id=n.group,
            topics=[
                m.OffsetDeleteRequestOffsetDeleteRequestTopic(
                    n.topic, [m.OffsetDeleteRequestOffsetDeleteRequestPartition(0)]
                )
            ],
        ),
        lambda r, _: r.error_code or first_partition_code(r.topics),
        allowed=0,
        topics=("topic", "extra"),
        setup=(("group", "Read"), ("extra", "Read")),
        prepare=lambda w, n: commit_offset(w, n.group, n.extra),
    ),
    Row(
        "describe-producers",
        61,
        0,
        (Need("topic", "Read", TOPIC),),
        lambda n, _: m.DescribeProducersRequest(
            topics=[m.DescribeProducersRequestTopicRequest(n.topic, [0])]
        ),
        lambda r, _: first_partition_code(r.topics),
        allowed=0,
    ),
    # A DENY beats an ALLOW: the same binding granted and denied is refused.
    Row(
        "deny-beats-allow-produce",
        0,
        9,
        (Need("topic", "Write", TOPIC, deny=True),),
        lambda n, _: produce_request(n.topic, 0, _batch()),
        lambda r, _: r.responses[0].partition_responses[0].error_code,
        allowed=0,
        setup=(("topic", "Write"),),
    ),
    Row(
        "deny-beats-allow-join",
        11,
        5,
        (Need("group", "Read", GROUP, deny=True),),
        lambda n, _: m.JoinGroupRequest(
            group_id=n.group,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            member_id="",
            protocol_type="consumer",
            protocols=[m.JoinGroupRequestJoinGroupRequestProtocol(name="range", metadata=b"")],
        ),
        lambda r, _: r.error_code,
        topics=(),
        setup=(("group", "Read"),),
    ),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    yield from serve_rows(tmp_path_factory.mktemp("acl-matrix") / "data", ROWS)


@pytest.mark.parametrize(
    ("row", "variant"), cases(ROWS), ids=[f"{r.id}-{v}" for r, v in cases(ROWS)]
)
def test_authorization(server: ServeProcess, row: Row, variant: str) -> None:
    run_case(server, row, variant)


def test_every_served_api_has_a_row() -> None:
    from test_acls_every_api_cluster import ROWS as CLUSTER_ROWS
    from test_acls_every_api_txn import ROWS as TXN_ROWS

    from seglog.broker.app import all_handlers

    served = {h.api_key for h in all_handlers()} - {17, 18, 36}  # need no authorization
    assert served == {row.api_key for row in [*ROWS, *CLUSTER_ROWS, *TXN_ROWS]}
