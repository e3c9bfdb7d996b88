"""Every served API's authorization on topics, groups and transactional ids, as one table.

One ``seglog serve`` (PLAINTEXT, principal ``User:ANONYMOUS``, the authorizer on, no ACL on the
cluster) serves the whole module; each row variant has its own topic, group and transactional id
(see :mod:`acl_matrix`), so the rows cannot see each other's ACLs. Per row: the request with
every ACL it needs (and nothing more, apart from what its own setup needs) is not refused (its
success is checked where cheap); without any one of them the answer is Kafka's code (or Kafka's
filtering) and the data directory is unchanged. The operations and codes are those of Kafka's
``KafkaApis``. Cluster-level checks are in ``test_acls_every_api_cluster.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
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
    first_partition_code,
    init_producer,
    prepare_directory,
    run_case,
    start_server,
)
from serve_harness import ServeProcess

from seglog.protocol import messages as m
from serve_wire import build_batch, produce_request

TOPIC, GROUP, TXN = 29, 30, 53


def _batch(transactional: bool = False) -> bytes:
    if transactional:
        return build_batch(
            [b"k"],
            [b"v"],
            1_700_000_000_000,
            producer_id=4242,
            epoch=0,
            base_sequence=0,
            transactional=True,
        )
    return build_batch([b"k"], [b"v"], 1_700_000_000_000)


def _fetch(topic: str, replica_id: int = -1) -> Any:
    partition = m.FetchRequestFetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024)
    return m.FetchRequest(
        replica_id=replica_id,
        max_wait_ms=0,
        topics=[m.FetchRequestFetchTopic(topic=topic, partitions=[partition])],
    )


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


def _listed(found: set[str], name: str) -> str:
    return LISTED if name in found else HIDDEN


def _txn_offset_commit(names: Any, producer: tuple[int, int]) -> Any:
    partition = m.TxnOffsetCommitRequestTxnOffsetCommitRequestPartition(
        partition_index=0, committed_offset=0
    )
    return m.TxnOffsetCommitRequest(
        transactional_id=names.txn,
        group_id=names.group,
        producer_id=producer[0],
        producer_epoch=producer[1],
        topics=[m.TxnOffsetCommitRequestTxnOffsetCommitRequestTopic(names.topic, [partition])],
    )


def _prepare_txn_offsets(wire: Any, names: Any) -> tuple[int, int]:
    producer = init_producer(wire, names.txn)
    wire.call(25, 3, m.AddOffsetsToTxnRequest(names.txn, producer[0], producer[1], names.group))
    return producer


def _prepare_txn_with_topic(wire: Any, names: Any) -> tuple[int, int]:
    producer = init_producer(wire, names.txn)
    topic = m.AddPartitionsToTxnRequestAddPartitionsToTxnTopic(name=names.topic, partitions=[0])
    wire.call(
        24,
        3,
        m.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=names.txn,
            v3_and_below_producer_id=producer[0],
            v3_and_below_producer_epoch=producer[1],
            v3_and_below_topics=[topic],
        ),
    )
    return producer


def _described_topics(response: Any, names: Any) -> str:
    return _listed({t.topic for t in response.transaction_states[0].topics}, names.topic)


def _config(resource_type: int, name: str) -> Any:
    return m.IncrementalAlterConfigsRequestAlterConfigsResource(
        resource_type=resource_type,
        resource_name=name,
        configs=[
            m.IncrementalAlterConfigsRequestAlterableConfig(
                name="retention.ms" if resource_type == 2 else "session.timeout.ms",
                config_operation=0,
                value="123456" if resource_type == 2 else "50000",
            )
        ],
    )


def _topic_dir_exists(data_dir: Path, names: Any) -> None:
    assert (data_dir / f"{names.topic}-0").is_dir()


def _records_written(data_dir: Path, names: Any) -> None:
    assert (data_dir / f"{names.topic}-0" / "00000000000000000000.log").stat().st_size > 0


ROWS = [
    Row(
        "produce",
        0,
        9,
        (Need("topic", "Write", TOPIC),),
        lambda n, _: produce_request(n.topic, 0, _batch()),
        lambda r, _: r.responses[0].partition_responses[0].error_code,
        allowed=0,
        check_ok=_records_written,
    ),
    Row(
        "produce-txn",
        0,
        9,
        (Need("txn", "Write", TXN), Need("topic", "Write", TOPIC)),
        lambda n, _: produce_request(n.topic, 0, _batch(True), transactional_id=n.txn),
        lambda r, _: r.responses[0].partition_responses[0].error_code,
    ),
    Row(
        "fetch",
        1,
        12,
        (Need("topic", "Read", TOPIC),),
        lambda n, _: _fetch(n.topic),
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
        lambda r, n: _listed({t.name for t in r.topics}, n.topic),
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
        check_ok=_topic_dir_exists,
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
        lambda r, n: _listed({t.name for t in r.groups[0].topics}, n.topic),
        allowed=LISTED,
        setup=(("group", "Read"), ("topic", "Read")),
        prepare=lambda w, n: commit_offset(w, n.group, n.topic),
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
        "find-coordinator-txn",
        10,
        4,
        (Need("txn", "Describe", TXN),),
        lambda n, _: m.FindCoordinatorRequest(key_type=1, coordinator_keys=[n.txn]),
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
        lambda r, n: _listed({g.group_id for g in r.groups}, n.group),
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
        check_ok=_topic_dir_exists,
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
        "init-producer-id",
        22,
        4,
        (Need("txn", "Write", TXN),),
        lambda n, _: m.InitProducerIdRequest(transactional_id=n.txn, transaction_timeout_ms=60_000),
        lambda r, _: r.error_code,
        allowed=0,
        topics=(),
    ),
    Row(
        "offset-for-leader-epoch",
        23,
        4,
        (Need("topic", "Describe", TOPIC),),
        lambda n, _: m.OffsetForLeaderEpochRequest(
            replica_id=-1,
            topics=[
                m.OffsetForLeaderEpochRequestOffsetForLeaderTopic(
                    n.topic, [m.OffsetForLeaderEpochRequestOffsetForLeaderPartition(0, -1, 0)]
                )
            ],
        ),
        lambda r, _: first_partition_code(r.topics),
        allowed=0,
    ),
    Row(
        "add-partitions-to-txn",
        24,
        3,
        (Need("txn", "Write", TXN), Need("topic", "Write", TOPIC)),
        lambda n, p: m.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=n.txn,
            v3_and_below_producer_id=p[0],
            v3_and_below_producer_epoch=p[1],
            v3_and_below_topics=[m.AddPartitionsToTxnRequestAddPartitionsToTxnTopic(n.topic, [0])],
        ),
        lambda r, _: (
            r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
        ),
        allowed=0,
        prepare=lambda w, n: init_producer(w, n.txn),
    ),
    Row(
        "add-offsets-to-txn",
        25,
        3,
        (Need("txn", "Write", TXN), Need("group", "Read", GROUP)),
        lambda n, p: m.AddOffsetsToTxnRequest(n.txn, p[0], p[1], n.group),
        lambda r, _: r.error_code,
        allowed=0,
        topics=(),
        prepare=lambda w, n: init_producer(w, n.txn),
    ),
    Row(
        "end-txn",
        26,
        3,
        (Need("txn", "Write", TXN),),
        lambda n, p: m.EndTxnRequest(n.txn, p[0], p[1], committed=True),
        lambda r, _: r.error_code,
        allowed=0,
        setup=(("topic", "Write"),),
        prepare=_prepare_txn_with_topic,
    ),
    Row(
        "txn-offset-commit",
        28,
        3,
        (Need("txn", "Write", TXN), Need("group", "Read", GROUP), Need("topic", "Read", TOPIC)),
        _txn_offset_commit,
        lambda r, _: first_partition_code(r.topics),
        allowed=0,
        prepare=_prepare_txn_offsets,
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
        lambda n, _: m.IncrementalAlterConfigsRequest(resources=[_config(2, n.topic)]),
        lambda r, _: r.responses[0].error_code,
        allowed=0,
    ),
    Row(
        "incremental-alter-configs-group",
        44,
        1,
        (Need("group", "AlterConfigs", GROUP),),
        lambda n, _: m.IncrementalAlterConfigsRequest(resources=[_config(32, n.group)]),
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
        check_ok=lambda d, n: (d / f"{n.topic}-1").is_dir() or pytest.fail("no partition 1"),
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
    Row(
        "describe-transactions",
        65,
        0,
        (Need("txn", "Describe", TXN),),
        lambda n, _: m.DescribeTransactionsRequest(transactional_ids=[n.txn]),
        lambda r, _: r.transaction_states[0].error_code,
        topics=(),
    ),
    Row(
        "describe-transactions-topics",
        65,
        0,
        (Need("topic", "Describe", HIDDEN, deny=True),),
        lambda n, _: m.DescribeTransactionsRequest(transactional_ids=[n.txn]),
        _described_topics,
        allowed=LISTED,
        setup=(("txn", "Write"), ("topic", "Write")),
        prepare=_prepare_txn_with_topic,
    ),
    Row(
        "list-transactions",
        66,
        1,
        (Need("txn", "Describe", HIDDEN, deny=True),),
        lambda n, _: m.ListTransactionsRequest(),
        lambda r, n: _listed({t.transactional_id for t in r.transaction_states}, n.txn),
        allowed=LISTED,
        setup=(("txn", "Write"),),
        topics=(),
        prepare=lambda w, n: init_producer(w, n.txn),
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
    data_dir = tmp_path_factory.mktemp("acl-matrix") / "data"
    topics = [row.names(v).of(kind) for row, v in cases(ROWS) for kind in row.topics]
    grants = [grant for row, v in cases(ROWS) for grant in row.grants(v)]
    prepare_directory(data_dir, topics, grants)
    process = start_server(data_dir)
    try:
        yield process
        process.stop()
    finally:
        process.kill()


@pytest.mark.parametrize(
    ("row", "variant"), cases(ROWS), ids=[f"{r.id}-{v}" for r, v in cases(ROWS)]
)
def test_authorization(server: ServeProcess, row: Row, variant: str) -> None:
    run_case(server, row, variant)


def test_every_served_api_has_a_row() -> None:
    from test_acls_every_api_cluster import ROWS as CLUSTER_ROWS

    from seglog.broker.app import all_handlers

    served = {h.api_key for h in all_handlers()} - {17, 18, 36}  # need no authorization
    assert served == {row.api_key for row in [*ROWS, *CLUSTER_ROWS]}
