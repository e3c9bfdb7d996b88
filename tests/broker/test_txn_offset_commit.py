"""TxnOffsetCommit (28) and OffsetFetch's ``require_stable``, in process over a real data
directory: the handlers as the server runs them, the COMMIT or ABORT marker written with
``Log.append_marker`` and ``GroupService.complete_transaction`` called as the transaction
coordinator does, then a restart of the server's state on the same files."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from seglog.broker.app import all_handlers, open_groups
from seglog.broker.authorization import Operation, ResourceType
from seglog.broker.groups.model import GroupSnapshot, MemberSnapshot
from seglog.broker.groups.offsets_store import OFFSETS_TOPIC
from seglog.broker.handlers.group_offsets import offset_commit, offset_fetch
from seglog.broker.handlers.txn_offsets import txn_offset_commit
from seglog.broker.server_config import ServerConfig
from seglog.broker.session import Session
from seglog.broker.state import BrokerState, RequestContext
from seglog.engine.log_manager import open_log_dirs
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    OffsetCommitRequest,
    OffsetCommitRequestOffsetCommitRequestPartition,
    OffsetCommitRequestOffsetCommitRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestOffsetFetchRequestGroup,
    OffsetFetchRequestOffsetFetchRequestTopic,
    OffsetFetchRequestOffsetFetchRequestTopics,
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestTxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTxnOffsetCommitRequestTopic,
)

PID, EPOCH = 7001, 2
GROUP = "etl"


@contextmanager
def broker(root: Path) -> Iterator[BrokerState]:
    """The server's state on ``root`` (topic ``in``, 2 partitions; 3 offsets partitions)."""
    with open_log_dirs([root], overrides={"offsets.topic.num.partitions": "3"}) as manager:
        if "in" not in manager.topic_names():
            manager.create_topic("in", 2)
        config = ServerConfig()
        yield BrokerState(manager, config, cluster_id="t", groups=open_groups(manager, config))


def ctx(api_key: int, version: int) -> RequestContext:
    return RequestContext(api_key, version, 1, "test", "127.0.0.1")


def txn_commit(
    state: BrokerState,
    offsets: dict[tuple[str, int], int],
    *,
    version: int = 3,
    group: str = GROUP,
    epoch: int = EPOCH,
    producer_id: int = PID,
    generation: int = -1,
    member: str = "",
    metadata: str = "",
) -> dict[tuple[str, int], int]:
    topics: dict[str, list[TxnOffsetCommitRequestTxnOffsetCommitRequestPartition]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            TxnOffsetCommitRequestTxnOffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, committed_metadata=metadata
            )
        )
    request = TxnOffsetCommitRequest(
        transactional_id="tx-1",
        group_id=group,
        producer_id=producer_id,
        producer_epoch=epoch,
        generation_id=generation,
        member_id=member,
        topics=[
            TxnOffsetCommitRequestTxnOffsetCommitRequestTopic(name=t, partitions=ps)
            for t, ps in topics.items()
        ],
    )
    response = asyncio.run(txn_offset_commit(state, ctx(28, version), request))
    return {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }


def fetch(
    state: BrokerState, version: int, *, stable: bool, all_partitions: bool = False
) -> dict[tuple[str, int], tuple[int, int]]:
    """(offset, error) per partition of ``in`` 0 and 1 (or every committed one)."""
    if version < 8:
        request = OffsetFetchRequest(
            group_id=GROUP,
            topics=None
            if all_partitions
            else [OffsetFetchRequestOffsetFetchRequestTopic(name="in", partition_indexes=[0, 1])],
            require_stable=stable,
        )
        response = asyncio.run(offset_fetch(state, ctx(9, version), request))
        topics_v7 = response.topics
        return {
            (t.name, p.partition_index): (p.committed_offset, p.error_code)
            for t in topics_v7
            for p in t.partitions
        }
    request = OffsetFetchRequest(
        groups=[
            OffsetFetchRequestOffsetFetchRequestGroup(
                group_id=GROUP,
                topics=None
                if all_partitions
                else [
                    OffsetFetchRequestOffsetFetchRequestTopics(name="in", partition_indexes=[0, 1])
                ],
            )
        ],
        require_stable=stable,
    )
    response = asyncio.run(offset_fetch(state, ctx(9, version), request))
    [group] = response.groups
    return {
        (t.name, p.partition_index): (p.committed_offset, p.error_code)
        for t in group.topics
        for p in t.partitions
    }


def end_txn(state: BrokerState, *, commit: bool, epoch: int = EPOCH) -> int:
    """The transaction coordinator's part: the marker, then the group service is told."""
    partition = state.groups.store.partition_for(GROUP)
    log = state.manager.get_log(OFFSETS_TOPIC, partition)
    log.append_marker(PID, epoch, commit=commit, coordinator_epoch=0)
    return state.groups.complete_transaction(partition, PID, commit=commit)


UNSTABLE = ErrorCode.UNSTABLE_OFFSET_COMMIT


def test_offsets_land_when_the_transaction_commits_and_survive_a_restart(tmp_path: Path) -> None:
    with broker(tmp_path) as state:
        assert txn_commit(state, {("in", 0): 10, ("in", 1): 20}) == {("in", 0): 0, ("in", 1): 0}
        assert fetch(state, 7, stable=True) == {
            ("in", 0): (-1, UNSTABLE),
            ("in", 1): (-1, UNSTABLE),
        }
        assert fetch(state, 9, stable=True) == {
            ("in", 0): (-1, UNSTABLE),
            ("in", 1): (-1, UNSTABLE),
        }
        assert fetch(state, 6, stable=False) == {("in", 0): (-1, 0), ("in", 1): (-1, 0)}
        assert fetch(state, 8, stable=True, all_partitions=True) == {}  # nothing committed yet
        assert end_txn(state, commit=True) == 2
        assert fetch(state, 7, stable=True) == {("in", 0): (10, 0), ("in", 1): (20, 0)}
        # the producer's next transaction: the committed offsets show until it ends
        assert txn_commit(state, {("in", 0): 15}) == {("in", 0): 0}
        assert fetch(state, 8, stable=False) == {("in", 0): (10, 0), ("in", 1): (20, 0)}
        assert fetch(state, 8, stable=True, all_partitions=True) == {
            ("in", 0): (-1, UNSTABLE),
            ("in", 1): (20, 0),
        }
    with broker(tmp_path) as state:  # restarted mid-transaction: still pending
        assert fetch(state, 7, stable=True) == {("in", 0): (-1, UNSTABLE), ("in", 1): (20, 0)}
        assert GROUP in state.groups.coordinator.group_ids()
        assert end_txn(state, commit=False) == 0
        assert fetch(state, 7, stable=True) == {("in", 0): (10, 0), ("in", 1): (20, 0)}
    with broker(tmp_path) as state:
        assert fetch(state, 7, stable=True) == {("in", 0): (10, 0), ("in", 1): (20, 0)}


def test_a_plain_offset_commit_during_the_transaction_is_kept_if_later(tmp_path: Path) -> None:
    with broker(tmp_path) as state:
        txn_commit(state, {("in", 0): 10})
        request = OffsetCommitRequest(
            group_id=GROUP,
            topics=[
                OffsetCommitRequestOffsetCommitRequestTopic(
                    name="in",
                    partitions=[
                        OffsetCommitRequestOffsetCommitRequestPartition(
                            partition_index=0, committed_offset=30
                        )
                    ],
                )
            ],
        )
        asyncio.run(offset_commit(state, ctx(8, 8), request))
        end_txn(state, commit=True)
        assert fetch(state, 7, stable=True)[("in", 0)] == (30, 0)


def test_per_partition_and_request_errors(tmp_path: Path) -> None:
    with broker(tmp_path) as state:
        assert txn_commit(state, {("in", 0): 1, ("in", 5): 1, ("nope", 0): 1}) == {
            ("in", 0): 0,
            ("in", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert txn_commit(state, {("in", 0): 1}, group="") == {
            ("in", 0): ErrorCode.INVALID_GROUP_ID
        }
        assert txn_commit(state, {("in", 0): 1}, producer_id=-1) == {
            ("in", 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING
        }
        assert txn_commit(state, {("in", 1): 1}, metadata="x" * 4097) == {
            ("in", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE
        }
        end_txn(state, commit=True, epoch=EPOCH + 1)  # the producer's epoch was bumped
        assert txn_commit(state, {("in", 0): 1}) == {("in", 0): ErrorCode.INVALID_PRODUCER_EPOCH}
        assert txn_commit(state, {("in", 0): 1}, version=0, epoch=EPOCH + 1) == {("in", 0): 0}


def test_v3_checks_the_member_and_generation_older_versions_need_none(tmp_path: Path) -> None:
    with broker(tmp_path) as state:
        member = MemberSnapshot("m-1", None, "c", "/127.0.0.1", 30000, 10000, b"", b"")
        snapshot = GroupSnapshot("consumer", 4, "range", "m-1", 0, (member,))
        state.groups.coordinator.restore(GROUP, snapshot, state.groups.now_ms())
        assert txn_commit(state, {("in", 0): 1}, generation=4, member="other") == {
            ("in", 0): ErrorCode.UNKNOWN_MEMBER_ID
        }
        assert txn_commit(state, {("in", 0): 1}, generation=3, member="m-1") == {
            ("in", 0): ErrorCode.ILLEGAL_GENERATION
        }
        assert txn_commit(state, {("in", 0): 1}, generation=4, member="m-1") == {("in", 0): 0}
        # v0-2 carry no member: accepted while the group has members (OffsetCommit is not)
        assert txn_commit(state, {("in", 1): 2}, version=2) == {("in", 1): 0}
        assert txn_commit(state, {("in", 0): 1}, group="new-group", generation=1, member="x") == {
            ("in", 0): ErrorCode.ILLEGAL_GENERATION
        }


class _DenyTransactionalIds:
    def authorize(
        self, session: Session, operation: Operation, resource_type: ResourceType, name: str
    ) -> bool:
        return resource_type is not ResourceType.TRANSACTIONAL_ID


def test_authorization_and_the_advertised_versions(tmp_path: Path) -> None:
    [handler] = [h for h in all_handlers() if h.api_key == 28]
    assert (handler.min_version, handler.max_version) == (0, 3)
    with broker(tmp_path) as state:
        state.authorizer = _DenyTransactionalIds()
        assert txn_commit(state, {("in", 0): 1}) == {
            ("in", 0): ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        }
        assert fetch(state, 7, stable=True) == {("in", 0): (-1, 0), ("in", 1): (-1, 0)}
