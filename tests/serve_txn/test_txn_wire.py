"""The transaction APIs' wire answers, request by request, against a real ``seglog serve``.

Requests no client sends on purpose (a fenced epoch, an unknown topic, a bad timeout, an old
version) are sent raw, and each answer must carry Kafka's error code in Kafka's field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from serve_harness import ServeProcess

from seglog.protocol import messages as m
from seglog.protocol.error_codes import ErrorCode as E
from serve_wire import WireClient, build_batch, produce_request

TS = 1_700_000_000_000


@pytest.fixture
def wire(txn_server: ServeProcess) -> Iterator[WireClient]:
    with WireClient(txn_server.bootstrap) as client:
        yield client


def _init(wire: WireClient, txn_id: str, timeout_ms: int = 60_000, version: int = 4) -> Any:
    return wire.call(
        22,
        version,
        m.InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=timeout_ms),
    )


def _add(
    wire: WireClient,
    txn_id: str,
    pid: int,
    epoch: int,
    topics: dict[str, list[int]],
    version: int = 3,
) -> dict[tuple[str, int], int]:
    answer = wire.call(
        24,
        version,
        m.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=txn_id,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[
                m.AddPartitionsToTxnRequestAddPartitionsToTxnTopic(name=t, partitions=p)
                for t, p in topics.items()
            ],
        ),
    )
    return {
        (topic.name, r.partition_index): r.partition_error_code
        for topic in answer.results_by_topic_v3_and_below
        for r in topic.results_by_partition
    }


def _end(
    wire: WireClient, txn_id: str, pid: int, epoch: int, commit: bool, version: int = 3
) -> int:
    request = m.EndTxnRequest(
        transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=commit
    )
    code: int = wire.call(26, version, request).error_code
    return code


def test_find_coordinator_for_a_transactional_id(wire: WireClient) -> None:
    old = wire.call(10, 3, m.FindCoordinatorRequest(key="app", key_type=1))
    assert old.error_code == 0 and old.host == "127.0.0.1"
    batched = wire.call(10, 4, m.FindCoordinatorRequest(key_type=1, coordinator_keys=["a", "b"]))
    assert [(c.key, c.error_code) for c in batched.coordinators] == [("a", 0), ("b", 0)]
    assert batched.coordinators[0].port == old.port
    unknown = wire.call(10, 3, m.FindCoordinatorRequest(key="x", key_type=7))
    assert unknown.error_code == E.INVALID_REQUEST


def test_init_producer_id_error_codes(wire: WireClient) -> None:
    assert _init(wire, "app", timeout_ms=900_001).error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert _init(wire, "").error_code == E.INVALID_REQUEST
    first = _init(wire, "app")
    assert (first.error_code, first.producer_epoch) == (0, 0)
    second = _init(wire, "app")
    assert (second.producer_id, second.producer_epoch) == (first.producer_id, 1)
    named_one = wire.call(
        22,
        4,
        m.InitProducerIdRequest(
            transactional_id="app",
            transaction_timeout_ms=1000,
            producer_id=first.producer_id,
            producer_epoch=-1,
        ),
    )
    assert named_one.error_code == E.INVALID_REQUEST
    stale = m.InitProducerIdRequest(
        transactional_id="app",
        transaction_timeout_ms=1000,
        producer_id=first.producer_id,
        producer_epoch=0,
    )
    assert wire.call(22, 4, stale).error_code == E.PRODUCER_FENCED
    assert wire.call(22, 3, stale).error_code == E.INVALID_PRODUCER_EPOCH  # before v4


def test_add_partitions_and_end_txn_error_codes(wire: WireClient) -> None:
    wire.call(3, 9, m.MetadataRequest(topics=[m.MetadataRequestMetadataRequestTopic(name="out")]))
    init = _init(wire, "app")
    pid = init.producer_id
    # a missing partition fails the whole request; the others are not attempted
    assert _add(wire, "app", pid, 0, {"out": [0, 7]}) == {
        ("out", 0): E.OPERATION_NOT_ATTEMPTED,
        ("out", 7): E.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert _add(wire, "app", pid, 0, {"__consumer_offsets": [0]}) == {
        ("__consumer_offsets", 0): E.TOPIC_AUTHORIZATION_FAILED
    }
    assert _add(wire, "app", pid + 1, 0, {"out": [0]}) == {
        ("out", 0): E.INVALID_PRODUCER_ID_MAPPING
    }
    assert _add(wire, "app", pid, 5, {"out": [0]}) == {("out", 0): E.PRODUCER_FENCED}
    assert _add(wire, "app", pid, 5, {"out": [0]}, version=1) == {
        ("out", 0): E.INVALID_PRODUCER_EPOCH
    }
    assert _end(wire, "app", pid, 0, commit=True) == E.INVALID_TXN_STATE  # nothing added yet
    # a transactional batch to a partition not in the transaction is refused
    batch = build_batch(
        [b"k"], [b"v"], TS, producer_id=pid, epoch=0, base_sequence=0, transactional=True
    )
    refused = wire.call(0, 9, produce_request("out", 1, batch, transactional_id="app"))
    assert refused.responses[0].partition_responses[0].error_code == E.INVALID_TXN_STATE
    assert _add(wire, "app", pid, 0, {"out": [0, 1]}) == {("out", 0): 0, ("out", 1): 0}
    accepted = wire.call(0, 9, produce_request("out", 1, batch, transactional_id="app"))
    assert accepted.responses[0].partition_responses[0].error_code == 0
    added = wire.call(
        25,
        3,
        m.AddOffsetsToTxnRequest(
            transactional_id="app", producer_id=pid, producer_epoch=0, group_id="readers"
        ),
    )
    assert added.error_code == 0
    described = wire.call(65, 0, m.DescribeTransactionsRequest(transactional_ids=["app", "no"]))
    app, missing = described.transaction_states
    assert (app.error_code, app.transaction_state, app.producer_id) == (0, "Ongoing", pid)
    assert sorted(t.topic for t in app.topics) == ["__consumer_offsets", "out"]
    assert missing.error_code == E.TRANSACTIONAL_ID_NOT_FOUND
    assert _end(wire, "app", pid, 1, commit=True) == E.PRODUCER_FENCED
    assert _end(wire, "app", pid, 1, commit=True, version=1) == E.INVALID_PRODUCER_EPOCH
    assert _end(wire, "app", pid, 0, commit=True) == 0
    assert _end(wire, "app", pid, 0, commit=True) == 0  # a retry
    assert _end(wire, "app", pid, 0, commit=False) == E.INVALID_TXN_STATE
    listed = wire.call(66, 1, m.ListTransactionsRequest(state_filters=["CompleteCommit", "Nope"]))
    assert listed.unknown_state_filters == ["Nope"]
    assert [(t.transactional_id, t.producer_id) for t in listed.transaction_states] == [
        ("app", pid)
    ]
