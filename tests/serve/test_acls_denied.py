"""ACLs enforced by a real ``seglog serve``: Kafka's error codes, and nothing written when denied.

The principal is PLAINTEXT's ``User:ANONYMOUS``; ACLs are written with ``seglog acls`` on the
data directory before the server starts (the server loads them at start-up). Exact codes are
checked with raw requests (:mod:`serve_wire`); confluent-kafka and kafka-python show that real
clients get the same refusals, and that an allowed principal produces and consumes.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from aiokafka import errors as aiokafka_errors
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from kafka import KafkaProducer
from kafka.errors import TopicAuthorizationFailedError
from serve_clients import create_topic, disk_records, seglog_cli
from serve_harness import ServeFactory, ServeProcess

from seglog.protocol import messages
from seglog.protocol.error_codes import ErrorCode
from serve_wire import WireClient, build_batch, metadata_request, produce_request

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
ANONYMOUS = "User:ANONYMOUS"


def add_acls(data_dir: Path, *options: str) -> None:
    result = seglog_cli(data_dir, "acls", "--add", *options)
    assert result.returncode == 0, result.stderr.decode()


def start(serve_factory: ServeFactory, tmp_path: Path, **extra: str) -> ServeProcess:
    """A server with the authorizer on a directory holding topics ``orders`` and ``hidden``,
    where ANONYMOUS may only DESCRIBE ``orders`` (and what ``prepare`` adds)."""
    data_dir = tmp_path / "data"
    create_topic(data_dir, "orders")
    create_topic(data_dir, "hidden")
    add_acls(
        data_dir, "--allow-principal", ANONYMOUS, "--operation", "Describe", "--topic", "orders"
    )
    return serve_factory(properties=AUTHORIZER | extra, data_dir=data_dir)


def fetch_request(topic: str) -> Any:
    return messages.FetchRequest(
        max_wait_ms=0,
        topics=[
            messages.FetchRequestFetchTopic(
                topic=topic,
                partitions=[
                    messages.FetchRequestFetchPartition(
                        partition=0, fetch_offset=0, partition_max_bytes=1 << 20
                    )
                ],
            )
        ],
    )


def test_denied_requests_get_kafkas_codes_and_change_nothing(
    serve_factory: ServeFactory, tmp_path: Path
) -> None:
    server = start(serve_factory, tmp_path)
    batch = build_batch([b"k"], [b"v"], int(time.time() * 1000))
    with WireClient(server.bootstrap) as wire:
        produced = wire.call(0, 9, produce_request("orders", 0, batch))
        assert produced.responses[0].partition_responses[0].error_code == 29
        # Authorization comes before existence: a missing topic is not disclosed.
        produced = wire.call(0, 9, produce_request("nowhere", 0, batch))
        assert produced.responses[0].partition_responses[0].error_code == 29
        fetched = wire.call(1, 12, fetch_request("orders"))
        partition = fetched.responses[0].partitions[0]
        assert (partition.error_code, partition.high_watermark) == (29, -1)

        # Metadata: every-topic lists only what may be described; named ones get 29; a topic
        # that would be auto-created needs CREATE.
        everything = wire.call(3, 12, messages.MetadataRequest(topics=None))
        assert [t.name for t in everything.topics] == ["orders"]
        named = wire.call(3, 12, metadata_request("hidden")).topics[0]
        assert (named.error_code, named.partitions) == (29, [])
        created = wire.call(3, 12, metadata_request("brand-new")).topics[0]
        assert created.error_code == 29
        asked = messages.MetadataRequest(
            topics=[messages.MetadataRequestMetadataRequestTopic(name="orders")],
            include_topic_authorized_operations=True,
        )
        described = wire.call(3, 12, asked).topics[0]
        assert (described.error_code, described.topic_authorized_operations) == (0, 1 << 8)
        cluster = wire.call(60, 1, messages.DescribeClusterRequest(
            include_cluster_authorized_operations=True, endpoint_type=1
        ))  # fmt: skip
        assert cluster.cluster_authorized_operations == 0  # no DESCRIBE on the cluster
        groups = wire.call(15, 5, messages.DescribeGroupsRequest(groups=["billing"]))
        assert groups.groups[0].error_code == 30

        # Groups: DESCRIBE for FindCoordinator, READ for JoinGroup and OffsetCommit.
        found = wire.call(10, 3, messages.FindCoordinatorRequest(key="billing", key_type=0))
        assert (found.error_code, found.node_id) == (30, -1)
        joined = wire.call(
            11,
            5,
            messages.JoinGroupRequest(
                group_id="billing",
                session_timeout_ms=10_000,
                rebalance_timeout_ms=10_000,
                protocol_type="consumer",
                protocols=[messages.JoinGroupRequestJoinGroupRequestProtocol(name="range")],
            ),
        )
        assert (joined.error_code, joined.generation_id) == (30, -1)
        commit = messages.OffsetCommitRequest(
            group_id="billing",
            topics=[
                messages.OffsetCommitRequestOffsetCommitRequestTopic(
                    name="orders",
                    partitions=[
                        messages.OffsetCommitRequestOffsetCommitRequestPartition(
                            partition_index=0, committed_offset=5
                        )
                    ],
                )
            ],
        )
        committed = wire.call(8, 8, commit)
        assert committed.topics[0].partitions[0].error_code == 30
        groups = wire.call(16, 4, messages.ListGroupsRequest())
        assert groups.error_code == 0

        # Cluster and topic administration.
        init = wire.call(22, 4, messages.InitProducerIdRequest(transactional_id=None))
        assert init.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        configs = wire.call(
            32,
            4,
            messages.DescribeConfigsRequest(
                resources=[
                    messages.DescribeConfigsRequestDescribeConfigsResource(2, "orders", None),
                    messages.DescribeConfigsRequestDescribeConfigsResource(4, "", None),
                ]
            ),
        )
        assert [r.error_code for r in configs.results] == [29, 31]
        deleted = wire.call(20, 5, messages.DeleteTopicsRequest(topic_names=["hidden"]))
        assert deleted.responses[0].error_code == 29
        acls = wire.call(
            30,
            2,
            messages.CreateAclsRequest(
                creations=[
                    messages.CreateAclsRequestAclCreation(2, "orders", 3, ANONYMOUS, "*", 2, 3)
                ]
            ),
        )
        assert acls.results[0].error_code == 31
        log_dirs = wire.call(35, 4, messages.DescribeLogDirsRequest(topics=None))
        assert (log_dirs.error_code, log_dirs.results) == (31, [])

    assert disk_records(server.data_dir, "orders") == []
    assert (server.data_dir / "hidden-0").is_dir()
    assert not (server.data_dir / "brand-new-0").exists()
    server.stop()
    found = seglog_cli(server.data_dir, "acls", "--list")
    assert found.stdout.decode().count("principal=") == 1  # the refused CreateAcls added none


def test_real_clients_are_refused_and_write_nothing(
    serve_factory: ServeFactory, tmp_path: Path
) -> None:
    server = start(serve_factory, tmp_path)
    producer = Producer({"bootstrap.servers": server.bootstrap, "message.timeout.ms": 10_000})
    errors: list[KafkaError] = []
    producer.produce("orders", b"v", on_delivery=lambda error, _msg: errors.append(error))
    producer.flush(20)
    assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]

    # Not idempotent: an idempotent one would first be refused InitProducerId (no
    # IdempotentWrite on the cluster, no Write on any topic), as Kafka refuses it.
    python_producer = KafkaProducer(
        bootstrap_servers=server.bootstrap, max_block_ms=10_000, enable_idempotence=False
    )
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            python_producer.send("orders", b"v").get(timeout=20)
    finally:
        python_producer.close(timeout=5)

    consumer = Consumer(
        {"bootstrap.servers": server.bootstrap, "group.id": "billing", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition("orders", 0, 0)])
        seen: set[int] = set()
        deadline = time.monotonic() + 20
        while KafkaError.TOPIC_AUTHORIZATION_FAILED not in seen and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                seen.add(message.error().code())
        assert KafkaError.TOPIC_AUTHORIZATION_FAILED in seen
    finally:
        consumer.close()
    assert disk_records(server.data_dir, "orders") == []


def test_allowed_principal_produces_and_consumes_and_deny_wins(
    serve_factory: ServeFactory, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    create_topic(data_dir, "orders")
    create_topic(data_dir, "orders-audit")
    add_acls(
        data_dir,
        "--allow-principal",
        ANONYMOUS,
        "--producer",
        "--idempotent",
        "--topic",
        "orders",
        "--topic",
        "orders-audit",
    )
    add_acls(
        data_dir,
        "--allow-principal",
        ANONYMOUS,
        "--consumer",
        "--topic",
        "orders",
        "--topic",
        "orders-audit",
        "--group",
        "billing",
    )
    # A DENY wins over every ALLOW: nobody reads the topics starting with orders-a.
    add_acls(
        data_dir,
        "--deny-principal",
        "User:*",
        "--operation",
        "Read",
        "--topic",
        "orders-a",
        "--resource-pattern-type",
        "prefixed",
    )
    server = serve_factory(properties=AUTHORIZER, data_dir=data_dir)

    producer = Producer({"bootstrap.servers": server.bootstrap, "enable.idempotence": True})
    errors: list[KafkaError | None] = []
    for topic in ("orders", "orders-audit"):
        for i in range(3):
            producer.produce(topic, f"v{i}".encode(), on_delivery=lambda e, _m: errors.append(e))
    producer.flush(30)
    assert errors == [None] * 6

    consumer = Consumer(
        {
            "bootstrap.servers": server.bootstrap,
            "group.id": "billing",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    values: list[bytes] = []
    try:
        consumer.subscribe(["orders"])
        deadline = time.monotonic() + 30
        while len(values) < 3 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    with WireClient(server.bootstrap) as wire:
        fetched = wire.call(1, 12, fetch_request("orders-audit"))
        refused = {fetched.responses[0].partitions[0].error_code}
        fetched = wire.call(1, 12, fetch_request("orders"))
        assert fetched.responses[0].partitions[0].error_code == 0
    assert values == [b"v0", b"v1", b"v2"]
    assert refused == {KafkaError.TOPIC_AUTHORIZATION_FAILED}
    assert len(disk_records(server.data_dir, "orders-audit")) == 3  # WRITE was allowed


def test_allow_everyone_if_no_acl_found_and_acls_added_on_the_wire(
    serve_factory: ServeFactory, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    create_topic(data_dir, "orders")
    create_topic(data_dir, "payments")
    server = serve_factory(
        properties=AUTHORIZER | {"allow.everyone.if.no.acl.found": "true"}, data_dir=data_dir
    )
    batch = build_batch([b"k"], [b"v"], int(time.time() * 1000))
    with WireClient(server.bootstrap) as wire:
        first = wire.call(0, 9, produce_request("orders", 0, batch))
        assert first.responses[0].partition_responses[0].error_code == 0
    # No ACL on the cluster: anyone may add ACLs; one for alice closes orders to everyone else.
    added = seglog_cli(
        data_dir, "acls", "--bootstrap-server", server.bootstrap, "--add",
        "--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr.decode()
    with WireClient(server.bootstrap) as wire:
        second = wire.call(0, 9, produce_request("orders", 0, batch))
        assert second.responses[0].partition_responses[0].error_code == 29
        other = wire.call(0, 9, produce_request("payments", 0, batch))
        assert other.responses[0].partition_responses[0].error_code == 0
    assert len(disk_records(data_dir, "orders")) == 1
    server.restart()  # the ACL was durable
    with WireClient(server.bootstrap) as wire:
        third = wire.call(0, 9, produce_request("orders", 0, batch))
        assert third.responses[0].partition_responses[0].error_code == 29


def test_super_users_pass_every_check(serve_factory: ServeFactory, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    create_topic(data_dir, "orders")
    add_acls(data_dir, "--deny-principal", ANONYMOUS, "--topic", "orders")  # ALL denied
    server = serve_factory(properties=AUTHORIZER | {"super.users": ANONYMOUS}, data_dir=data_dir)
    batch = build_batch([b"k"], [b"v"], int(time.time() * 1000))
    with WireClient(server.bootstrap) as wire:
        produced = wire.call(0, 9, produce_request("orders", 0, batch))
        assert produced.responses[0].partition_responses[0].error_code == 0
        created = wire.call(3, 12, metadata_request("auto-made")).topics[0]
        assert created.error_code == 0
        cluster = wire.call(60, 1, messages.DescribeClusterRequest(
            include_cluster_authorized_operations=True, endpoint_type=1
        ))  # fmt: skip
        # CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
        # IDEMPOTENT_WRITE: Kafka's supported operations of the cluster.
        assert cluster.cluster_authorized_operations == sum(
            1 << op for op in (5, 7, 8, 9, 10, 11, 12)
        )
        groups = wire.call(15, 5, messages.DescribeGroupsRequest(
            groups=["billing"], include_authorized_operations=True
        ))  # fmt: skip
        assert groups.groups[0].authorized_operations == sum(1 << op for op in (3, 6, 8, 10, 11))
    assert len(disk_records(data_dir, "orders")) == 1


def test_kcat_and_aiokafka_are_refused_and_write_nothing(
    serve_factory: ServeFactory, tmp_path: Path, kcat: str
) -> None:
    server = start(serve_factory, tmp_path)
    produced = subprocess.run(
        [
            kcat,
            "-b",
            server.bootstrap,
            "-P",
            "-t",
            "orders",
            "-p",
            "0",
            "-X",
            "message.timeout.ms=10000",
        ],
        input=b"v\n",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert produced.returncode != 0
    assert "authorization failed" in produced.stderr.decode().lower(), produced.stderr.decode()

    async def aiokafka_attempts() -> tuple[type[BaseException], type[BaseException]]:
        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

        producer = AIOKafkaProducer(bootstrap_servers=server.bootstrap, request_timeout_ms=10_000)
        await producer.start()
        try:
            with pytest.raises(Exception) as produce_error:
                await producer.send_and_wait("orders", b"v", partition=0)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            "orders", bootstrap_servers=server.bootstrap, group_id="billing"
        )
        try:
            with pytest.raises(Exception) as group_error:  # at start: the join is refused
                await consumer.start()
                await asyncio.wait_for(consumer.getone(), 20)
        finally:
            await consumer.stop()
        return produce_error.type, group_error.type

    produce_error, group_error = asyncio.run(aiokafka_attempts())
    assert produce_error is aiokafka_errors.TopicAuthorizationFailedError
    assert group_error is aiokafka_errors.GroupAuthorizationFailedError
    assert disk_records(server.data_dir, "orders") == []
