"""DescribeProducers and WriteTxnMarkers in process over a real data directory: the ACL checks
Kafka makes, and a marker on ``__consumer_offsets`` reaching the group service."""

from __future__ import annotations

import asyncio
from pathlib import Path

from seglog.broker.app import open_groups
from seglog.broker.authorization import Operation, ResourceType
from seglog.broker.handlers.txn_admin import describe_producers, write_txn_markers
from seglog.broker.server_config import ServerConfig
from seglog.broker.session import Session
from seglog.broker.state import BrokerState, RequestContext
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    DescribeProducersRequest,
    DescribeProducersRequestTopicRequest,
    WriteTxnMarkersRequest,
    WriteTxnMarkersRequestWritableTxnMarker,
    WriteTxnMarkersRequestWritableTxnMarkerTopic,
)
from seglog.testing.transactions import append_transactional


class Deny:
    """Refuses the (operation, resource type) pairs given, allows the rest."""

    def __init__(self, *refused: tuple[Operation, ResourceType]) -> None:
        self.refused = set(refused)
        self.asked: list[tuple[Operation, ResourceType, str]] = []

    def authorize(
        self, session: Session, operation: Operation, resource_type: ResourceType, name: str
    ) -> bool:
        self.asked.append((operation, resource_type, name))
        return (operation, resource_type) not in self.refused


def _state(manager: LogManager) -> BrokerState:
    config = ServerConfig()
    return BrokerState(manager, config, cluster_id="test", groups=open_groups(manager, config))


def _markers(topic: str, *, commit: bool) -> WriteTxnMarkersRequest:
    return WriteTxnMarkersRequest(
        markers=[
            WriteTxnMarkersRequestWritableTxnMarker(
                producer_id=9,
                producer_epoch=0,
                transaction_result=commit,
                topics=[WriteTxnMarkersRequestWritableTxnMarkerTopic(topic, [0])],
                coordinator_epoch=0,
            )
        ]
    )


def test_acls_are_checked_where_kafka_checks_them(tmp_path: Path) -> None:
    with open_log_dirs([tmp_path]) as manager:
        manager.create_topic("t", 1)
        log = manager.get_log("t", 0)
        append_transactional(log, 9, 0, 0, [(b"k", b"v")])
        state = _state(manager)
        context = RequestContext(27, 1, 1, "test", "127.0.0.1")
        # Kafka asks ALTER on the cluster first, then CLUSTER_ACTION: either allows markers.
        state.authorizer = Deny(
            (Operation.ALTER, ResourceType.CLUSTER),
            (Operation.CLUSTER_ACTION, ResourceType.CLUSTER),
        )
        answer = asyncio.run(write_txn_markers(state, context, _markers("t", commit=False)))
        code = answer.markers[0].topics[0].partitions[0].error_code
        assert code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert log.log_end_offset == 1  # nothing written
        assert state.authorizer.asked == [
            (Operation.ALTER, ResourceType.CLUSTER, "kafka-cluster"),
            (Operation.CLUSTER_ACTION, ResourceType.CLUSTER, "kafka-cluster"),
        ]

        state.authorizer = Deny((Operation.READ, ResourceType.TOPIC))
        request = DescribeProducersRequest(topics=[DescribeProducersRequestTopicRequest("t", [0])])
        described = asyncio.run(describe_producers(state, context, request))
        partition = described.topics[0].partitions[0]
        assert partition.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert partition.active_producers == []


def test_a_marker_on_consumer_offsets_completes_the_groups_transaction(tmp_path: Path) -> None:
    with open_log_dirs([tmp_path]) as manager:
        state = _state(manager)
        state.groups.ensure_offsets_topic()
        calls: list[tuple[int, int, bool]] = []

        def complete_transaction(partition: int, producer_id: int, *, commit: bool) -> None:
            calls.append((partition, producer_id, commit))

        # the group service's hook (its own tests cover what it does with the offsets)
        state.groups.complete_transaction = complete_transaction  # type: ignore[attr-defined]
        context = RequestContext(27, 1, 1, "test", "127.0.0.1")
        answer = asyncio.run(
            write_txn_markers(state, context, _markers("__consumer_offsets", commit=True))
        )
        assert answer.markers[0].topics[0].partitions[0].error_code == 0
        assert calls == [(0, 9, True)]
        assert manager.get_log("__consumer_offsets", 0).log_end_offset == 1  # the marker
